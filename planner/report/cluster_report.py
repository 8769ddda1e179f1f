"""Cluster state (KIP-166's show-cluster-state): what a balance plan would start from.

``describe(snapshot)`` is pure and returns a :class:`ClusterState` value: per broker replicas,
preferred leaders and rack; per rack (every node of the rack tree) totals; skew of replicas and
leaders; partitions lacking rack diversity at some level of the rack tree; replicas on dead
(``alive: false``) or unknown brokers; KIP-409 placeholders (negative ids); per topic spread.
``render(state)`` is the terminal table, ``state.to_dict()`` the JSON.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from typing import Any

from kafka_replica_assignor.cluster.snapshot import ClusterSnapshot
from kafka_replica_assignor.planner.racks import RackTree


@dataclass(frozen=True, slots=True)
class BrokerState:
    id: int
    rack: str | None
    alive: bool
    replicas: int
    leaders: int
    bytes: int = 0                       # sum of size_bytes of its replicas (unsized count 0)
    capacity_bytes: int | None = None


@dataclass(frozen=True, slots=True)
class RackState:
    """A node of the rack tree: ``level`` 1 is the top; ``brokers`` counts alive brokers."""

    rack: str
    level: int
    brokers: int
    replicas: int
    leaders: int


@dataclass(frozen=True, slots=True)
class Spread:
    """Counts per alive broker: min, max, mean, and the ideal band ``[floor, ceil]``."""

    min: int
    max: int
    mean: float
    floor: int
    ceil: int

    @property
    def excess(self) -> int:
        return self.max - self.ceil

    def to_dict(self) -> dict[str, Any]:
        return {"min": self.min, "max": self.max, "mean": round(self.mean, 3),
                "ideal": [self.floor, self.ceil]}


@dataclass(frozen=True, slots=True)
class Diversity:
    """A partition whose alive replicas span fewer groups at ``level`` than they could."""

    topic: str
    partition: int
    level: int
    groups: int
    expected: int


@dataclass(frozen=True, slots=True)
class Misplaced:
    """A replica that cannot serve: on a dead or unknown broker, or a placeholder."""

    topic: str
    partition: int
    broker: int


@dataclass(frozen=True, slots=True)
class TopicState:
    topic: str
    partitions: int
    replicas: int
    broker_min: int      # replicas of this topic on the least-loaded alive broker
    broker_max: int


@dataclass(frozen=True, slots=True)
class ClusterState:
    brokers: tuple[BrokerState, ...]
    unknown_brokers: tuple[BrokerState, ...]
    racks: tuple[RackState, ...]
    topics: tuple[TopicState, ...]
    partitions: int
    replicas: int
    replicas_spread: Spread
    leaders_spread: Spread
    replica_moves_lower_bound: int
    leader_changes_lower_bound: int
    not_diverse: tuple[Diversity, ...]
    on_dead: tuple[Misplaced, ...]
    on_unknown: tuple[Misplaced, ...]
    placeholders: tuple[Misplaced, ...]

    def to_dict(self) -> dict[str, Any]:
        def misplaced(items: tuple[Misplaced, ...]) -> list[dict[str, Any]]:
            return [{"topic": m.topic, "partition": m.partition, "broker": m.broker} for m in items]

        return {
            "partitions": self.partitions,
            "replicas": self.replicas,
            "brokers": [
                {"id": b.id, "rack": b.rack, "alive": b.alive, "replicas": b.replicas,
                 "leaders": b.leaders}
                for b in self.brokers
            ],
            "unknown_brokers": [{"id": b.id, "replicas": b.replicas, "leaders": b.leaders}
                                for b in self.unknown_brokers],
            "racks": [
                {"rack": r.rack, "level": r.level, "brokers": r.brokers, "replicas": r.replicas,
                 "leaders": r.leaders}
                for r in self.racks
            ],
            "skew": {"replicas": self.replicas_spread.to_dict(),
                     "leaders": self.leaders_spread.to_dict()},
            "lower_bounds": {"replica_moves": self.replica_moves_lower_bound,
                             "leader_changes": self.leader_changes_lower_bound},
            "not_rack_diverse": [
                {"topic": d.topic, "partition": d.partition, "level": d.level,
                 "racks": d.groups, "expected": d.expected}
                for d in self.not_diverse
            ],
            "replicas_on_dead_brokers": misplaced(self.on_dead),
            "replicas_on_unknown_brokers": misplaced(self.on_unknown),
            "placeholders": misplaced(self.placeholders),
            "topics": [
                {"topic": t.topic, "partitions": t.partitions, "replicas": t.replicas,
                 "per_broker": [t.broker_min, t.broker_max]}
                for t in self.topics
            ],
        }


def spread(values: list[int], total: int, brokers: int) -> Spread:
    if not values or brokers == 0:
        return Spread(0, 0, 0.0, 0, 0)
    return Spread(min(values), max(values), total / brokers, total // brokers, -(-total // brokers))



def rack_totals(tree: RackTree, brokers: tuple[BrokerState, ...]) -> tuple[RackState, ...]:
    """Alive brokers, replicas and preferred leaders under every node of the rack tree, by
    (level, name)."""
    racks: dict[tuple[int, str], list[int]] = {}
    for state in brokers:
        keys = tree.keys_of(state.id)
        if not state.alive or not keys:
            continue
        for level, key in enumerate(keys):
            entry = racks.setdefault((level + 1, tree.names[key]), [0, 0, 0])
            entry[0] += 1
            entry[1] += state.replicas
            entry[2] += state.leaders
    return tuple(RackState(name, level, n, r, lead) for (level, name), (n, r, lead) in sorted(racks.items()))

def describe(snapshot: ClusterSnapshot, *, topics: bool = True) -> ClusterState:
    """The state of a cluster snapshot (see module doc); ``topics=False`` skips the per-topic
    spread (the report does not show it)."""
    known = {b.id: b for b in snapshot.brokers}
    alive = sorted(b.id for b in snapshot.brokers if b.alive)
    alive_set = set(alive)
    replicas: Counter[int] = Counter()
    leaders: Counter[int] = Counter()
    sizes: Counter[int] = Counter()
    per_topic: dict[str, Counter[int]] = {}
    topic_parts: Counter[str] = Counter()
    on_dead: list[Misplaced] = []
    on_unknown: list[Misplaced] = []
    placeholders: list[Misplaced] = []
    not_diverse: list[Diversity] = []
    tree = RackTree.of({b.id: b.rack for b in snapshot.brokers if b.alive})
    groups = tree.groups(alive)
    depth, tree_keys = tree.depth, tree.keys
    parts = sorted(snapshot.partitions, key=lambda p: (p.topic, p.partition))
    leadable = 0
    total_replicas = 0
    for p in parts:
        total_replicas += len(p.replicas)
        replicas.update(p.replicas)
        if p.size_bytes:
            for b in p.replicas:
                sizes[b] += p.size_bytes
        if topics:
            per_topic.setdefault(p.topic, Counter()).update(p.replicas)
            topic_parts[p.topic] += 1
        if not alive_set.issuperset(p.replicas):
            for b in p.replicas:
                if b < 0:
                    placeholders.append(Misplaced(p.topic, p.partition, b))
                elif b not in known:
                    on_unknown.append(Misplaced(p.topic, p.partition, b))
                elif b not in alive_set:
                    on_dead.append(Misplaced(p.topic, p.partition, b))
        leaders[p.replicas[0]] += 1
        if any(b in alive_set for b in p.replicas):
            leadable += 1
        if depth:
            keys = [tree_keys[b] for b in p.replicas if b in tree_keys]
            for level in range(depth):
                expected = min(len(p.replicas), groups[level])
                have = len({k[level] for k in keys})
                if have < expected:
                    not_diverse.append(Diversity(p.topic, p.partition, level + 1, have, expected))
                    break
    brokers = tuple(
        BrokerState(b.id, b.rack, b.alive, replicas[b.id], leaders[b.id], sizes[b.id], b.capacity_bytes)
        for b in sorted(snapshot.brokers, key=lambda b: b.id)
    )
    unknown = tuple(
        BrokerState(b, None, False, replicas[b], leaders[b])
        for b in sorted(x for x in replicas if x >= 0 and x not in known)
    )
    # the replicas the alive brokers will hold once repaired: every slot of every partition
    n_alive = len(alive)
    rep_counts = [replicas[b] for b in alive]
    lead_counts = [leaders[b] for b in alive]
    rep_spread = spread(rep_counts, total_replicas, n_alive)
    lead_spread = spread(lead_counts, leadable, n_alive)
    repairs = len(on_dead) + len(on_unknown) + len(placeholders)
    topic_states = []
    for name in sorted(per_topic):
        counts = [per_topic[name][b] for b in alive] or [0]
        topic_states.append(TopicState(name, topic_parts[name], sum(per_topic[name].values()),
                                 min(counts), max(counts)))
    return ClusterState(
        brokers=brokers,
        unknown_brokers=unknown,
        racks=rack_totals(tree, brokers),
        topics=tuple(topic_states),
        partitions=len(parts),
        replicas=total_replicas,
        replicas_spread=rep_spread,
        leaders_spread=lead_spread,
        replica_moves_lower_bound=repairs + sum(max(0, c - rep_spread.ceil) for c in rep_counts),
        leader_changes_lower_bound=sum(max(0, c - lead_spread.ceil) for c in lead_counts),
        not_diverse=tuple(not_diverse),
        on_dead=tuple(on_dead),
        on_unknown=tuple(on_unknown),
        placeholders=tuple(placeholders),
    )


def _table(header: list[str], rows: list[list[Any]]) -> list[str]:
    cells = [header] + [[("-" if v is None else str(v)) for v in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    out = []
    for k, row in enumerate(cells):
        out.append("  ".join(v.rjust(w) if v.lstrip("-").isdigit() else v.ljust(w)
                             for v, w in zip(row, widths, strict=True)).rstrip())
        if k == 0:
            out.append("  ".join("-" * w for w in widths))
    return out


def _bar(value: int, top: int, width: int = 20) -> str:
    return "#" * (math.ceil(width * value / top) if top else 0)


def render(state: ClusterState, examples: int = 5) -> str:
    """The state as text for a terminal."""
    rs, ls = state.replicas_spread, state.leaders_spread
    top = max((b.replicas for b in state.brokers), default=0)
    lines = [f"{len(state.brokers)} brokers ({sum(b.alive for b in state.brokers)} alive), "
             f"{len(state.topics)} topics, {state.partitions} partitions, {state.replicas} replicas", ""]
    lines += _table(
        ["broker", "rack", "alive", "replicas", "leaders", ""],
        [[b.id, b.rack, "yes" if b.alive else "NO", b.replicas, b.leaders, _bar(b.replicas, top)]
         for b in state.brokers]
        + [[b.id, "?", "unknown", b.replicas, b.leaders, ""] for b in state.unknown_brokers],
    )
    if state.racks:
        lines += [""] + _table(
            ["rack", "level", "brokers", "replicas", "leaders", "replicas/broker"],
            [[r.rack, r.level, r.brokers, r.replicas, r.leaders,
              f"{r.replicas / r.brokers:.1f}" if r.brokers else "-"] for r in state.racks],
        )
    lines += [
        "",
        f"replicas per alive broker: {rs.min}-{rs.max} (mean {rs.mean:.2f} once repaired, ideal {rs.floor}-{rs.ceil}); "
        f"at least {state.replica_moves_lower_bound} replica move(s) to reach the ideal band (threshold 0%)",
        f"preferred leaders per alive broker: {ls.min}-{ls.max} (mean {ls.mean:.2f}, ideal "
        f"{ls.floor}-{ls.ceil}); at least {state.leader_changes_lower_bound} leader change(s)",
    ]
    for title, items in (
        ("partitions lacking rack diversity", state.not_diverse),
        ("replicas on dead brokers", state.on_dead),
        ("replicas on unknown brokers", state.on_unknown),
        ("placeholders (KIP-409)", state.placeholders),
    ):
        shown = []
        for item in items[:examples]:
            if isinstance(item, Diversity):
                shown.append(f"{item.topic}-{item.partition} (level {item.level}: "
                             f"{item.groups} of {item.expected})")
            else:
                shown.append(f"{item.topic}-{item.partition} on {item.broker}")
        more = f", ... ({len(items) - examples} more)" if len(items) > examples else ""
        lines.append(f"{title}: {len(items)}" + (f": {', '.join(shown)}{more}" if items else ""))
    return "\n".join(lines) + "\n"
