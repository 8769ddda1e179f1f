"""The watcher's decisions: a view of the cluster and the ledger in, decisions out (pure).

Goals
    Keep the cluster where the assignor wants it without an operator: a topic created by any
    client, or partitions added to one, end on the assignor's placement while they are small;
    a broker fenced or gone for longer than the grace period has its replicas re-placed. Each
    decision says what was seen and why, so that the audit log explains it.

Constraints
    - Never on a stale view: a view older than two refresh intervals decides nothing
      (:func:`stale`).
    - Placement: only topics in scope (``--topics`` / ``--exclude-topics``, never Kafka's
      internal ``__`` topics), new since the watcher last settled them, not recorded by our own
      ``create-topic`` (the intent record), and only the partitions to move, at most
      ``max_bytes_per_topic`` of them (unknown sizes wait for the next view). A topic whose
      placement is equivalent to the assignor's answer (:mod:`.profile`) is left alone.
    - Dead brokers: down (fenced, or named by replicas but no longer registered) for longer than
      ``grace_s`` and still holding replicas; healed only when no reassignment is in progress
      and no more than ``max_lost_share`` of the brokers are down, at most ``max_heal_brokers``
      at once (the longest down first). A healed broker is not healed again until it returns.

Algorithm
    :func:`placement_work` lists the topics to judge; the caller asks the assignor for each
    (I/O) and :func:`judge_placement` compares. :func:`track_down` keeps when each broker went
    down; :func:`judge_heal` applies the cluster-wide check; :func:`heal_targets` asks the
    planner (repair mode, the brokers removed) for the moves.

Example
    Grace 30 min, ``max_heal_brokers`` 1, ``max_lost_share`` 0.34, six brokers. Broker 4 fenced
    at 10:00: at 10:31 ``heal`` broker 4. Brokers 3 and 4 down since 10:00: ``heal`` broker 3 (the
    longest down, then the lower id), broker 4 on a later round. Brokers 2, 3 and 4 down: half
    the cluster lost, ``refuse``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kafka_replica_assignor.assignors.model import BrokerMetadata
from kafka_replica_assignor.cluster.snapshot import ClusterSnapshot
from kafka_replica_assignor.planner.request import check_topic_patterns

from .profile import equivalent, levels

Key = tuple[str, int]
Assignment = dict[int, tuple[int, ...]]

KINDS = ("placement", "placeholders", "dead_brokers", "cluster")
ACTIONS = ("place", "fill", "heal", "leave", "wait", "refuse")
MIB = 1024 * 1024


@dataclass(frozen=True, slots=True)
class Rules:
    """What the decisions depend on (the command line's options, checked there)."""

    refresh_s: float = 2.0
    grace_s: float = 1800.0
    max_bytes_per_topic: int = 4 * MIB
    topics: str | None = None            # a regular expression matching whole topic names
    exclude_topics: str | None = None
    max_heal_brokers: int = 1
    max_lost_share: float = 0.34

    def __post_init__(self) -> None:
        if not self.refresh_s > 0:
            raise ValueError(f"the refresh interval must be > 0 seconds, got {self.refresh_s}")
        if self.grace_s < 0:
            raise ValueError(f"the grace period must be >= 0 seconds, got {self.grace_s}")
        if self.max_bytes_per_topic < 0:
            raise ValueError(f"the bytes per topic must be >= 0, got {self.max_bytes_per_topic}")
        if self.max_heal_brokers < 1:
            raise ValueError(f"the brokers healed at once must be >= 1, got {self.max_heal_brokers}")
        if not 0 < self.max_lost_share <= 1:
            raise ValueError(f"the lost share must be in (0, 1], got {self.max_lost_share}")
        check_topic_patterns(self.topics, self.exclude_topics)   # a RequestError is a ValueError

    def in_scope(self, topic: str) -> bool:
        if topic.startswith("__"):
            return False
        if self.topics is not None and re.fullmatch(self.topics, topic) is None:
            return False
        return self.exclude_topics is None or re.fullmatch(self.exclude_topics, topic) is None


@dataclass(frozen=True, slots=True)
class View:
    """One refresh of the cluster: the snapshot (with sizes where known, when ``sized``), the
    fenced brokers, the reassignments in progress, and when it was read (seconds since the
    epoch). A view at rest is read without sizes (DescribeLogDirs to every broker is most of
    a read's cost); one is read with them when there is something to judge."""

    snapshot: ClusterSnapshot
    fenced: frozenset[int] = frozenset()
    ongoing: frozenset[Key] = frozenset()
    read_at: float = 0.0
    sized: bool = True

    def topics(self) -> dict[str, Assignment]:
        out: dict[str, Assignment] = {}
        for p in self.snapshot.partitions:
            out.setdefault(p.topic, {})[p.partition] = tuple(p.replicas)
        return out

    def registered(self) -> frozenset[int]:
        return frozenset(b.id for b in self.snapshot.brokers)

    def named(self) -> frozenset[int]:
        """Every broker a replica list names."""
        return frozenset(b for p in self.snapshot.partitions for b in p.replicas if b >= 0)

    def down(self) -> frozenset[int]:
        """Fenced brokers, and brokers replicas name that are no longer registered."""
        registered = self.registered()
        gone = self.named() - registered
        not_alive = {b.id for b in self.snapshot.brokers if not b.alive}
        return frozenset(self.fenced | gone | not_alive)

    def sizes(self, topic: str, partitions: Iterable[int]) -> int | None:
        """Bytes of ``partitions`` of ``topic`` (None when a size is unknown)."""
        wanted = set(partitions)
        total = 0
        for p in self.snapshot.partitions:
            if p.topic == topic and p.partition in wanted:
                if p.size_bytes is None:
                    return None
                total += p.size_bytes
        return total


@dataclass(frozen=True, slots=True)
class Decision:
    """What the watcher decided about one subject. ``targets`` and ``starting`` are the
    partitions to reassign (place, fill, heal), ``brokers`` the brokers concerned."""

    kind: str
    action: str
    subject: str
    reason: str
    targets: Mapping[Key, tuple[int, ...]] = field(default_factory=dict)
    starting: Mapping[Key, tuple[int, ...]] = field(default_factory=dict)
    brokers: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if self.kind not in KINDS or self.action not in ACTIONS:
            raise ValueError(f"unknown decision {self.kind}/{self.action}")
        if set(self.targets) != set(self.starting):
            raise ValueError("targets and starting replicas must name the same partitions")

    @property
    def acts(self) -> bool:
        return self.action in ("place", "fill", "heal") and bool(self.targets)

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "action": self.action, "subject": self.subject, "reason": self.reason,
                "brokers": list(self.brokers),
                "moves": [{"topic": t, "partition": p, "from": list(self.starting[(t, p)]), "to": list(r)}
                          for (t, p), r in sorted(self.targets.items())]}


def stale(view: View, rules: Rules, now: float) -> bool:
    """A view older than two refresh intervals decides nothing."""
    return now - view.read_at > 2 * rules.refresh_s


# ---- placement -------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Candidate:
    """A topic to judge: its replicas now and how many of its partitions were settled before
    (0: a new topic; fewer than now: partitions were added)."""

    topic: str
    current: Assignment
    settled: int


MISSING_S = 300.0   # a topic missing from the views this long is forgotten (one missing view proves nothing)


def placement_work(view: View, settled: Mapping[str, int], rules: Rules, ours: Iterable[str] = (), *,
                   missing: Mapping[str, float] | None = None, now: float = 0.0,
                   ) -> tuple[list[Candidate], dict[str, int], dict[str, float]]:
    """The topics to judge, the ledger's topics as they are to be after this view (topics out of
    scope or recorded by our own create-topic settled at once), and since when each settled topic
    has been missing from the views (``missing`` as it was; ``now`` in the same clock). A settled
    topic missing from the view (a broker's Metadata behind the controller's, or deleted) is kept
    until it has been missing for :data:`MISSING_S`, then forgotten; seen again before, it is
    settled as it was, not judged as new. A topic the watcher has not judged yet keeps its old
    count until it is."""
    ours = set(ours)
    present = view.topics()
    after: dict[str, int] = {}
    missing_after: dict[str, float] = {}
    for topic, count in settled.items():
        if topic in present:
            after[topic] = count
            continue
        since = (missing or {}).get(topic, now)
        if now - since < MISSING_S:
            after[topic] = count
            missing_after[topic] = since
    work = []
    for topic, current in sorted(present.items()):
        count = len(current)
        known = settled.get(topic, 0)
        if known >= count:
            continue
        if not rules.in_scope(topic) or topic in ours:
            after[topic] = count
            continue
        work.append(Candidate(topic, current, known))
    return work, after, missing_after


def judge_placement(candidate: Candidate, desired: Mapping[int, Sequence[int]], view: View,
                    rules: Rules) -> Decision:
    """``place`` the partitions that differ from the assignor's answer ``desired`` (whose
    settled partitions it kept), ``leave`` the topic when equivalent or too big, ``wait``
    when a size is still unknown."""
    topic, current = candidate.topic, candidate.current
    new = sorted(p for p in current if p >= candidate.settled)
    subject = topic if candidate.settled == 0 else f"{topic} partitions {new[0]}..{new[-1]}"
    if sorted(desired) != sorted(current) or any(len(desired[p]) != len(current[p]) for p in current):
        return Decision("placement", "leave", subject, "the assignor's answer does not fit the topic "
                        f"({len(desired)} partitions, replicas {sorted({len(r) for r in desired.values()})})")
    tree = levels([BrokerMetadata(b.id, b.rack) for b in view.snapshot.brokers])
    if equivalent(current, desired, tree):
        return Decision("placement", "leave", subject, "already on a placement equivalent to the assignor's")
    targets = {(topic, p): tuple(desired[p]) for p in new if tuple(desired[p]) != tuple(current[p])}
    if not targets:
        return Decision("placement", "leave", subject, "the added partitions are where the assignor puts them")
    size = view.sizes(topic, [p for _, p in targets])
    if size is None:
        return Decision("placement", "wait", subject, "partition sizes not known yet")
    if size > rules.max_bytes_per_topic:
        return Decision("placement", "leave", subject, f"{size} bytes to move, more than --max-bytes-per-topic "
                        f"{rules.max_bytes_per_topic}: too big to move for free")
    return Decision("placement", "place", subject, f"not on the assignor's placement ({size} bytes to move)",
                    targets, {k: tuple(current[k[1]]) for k in targets})


# ---- dead brokers ----------------------------------------------------------------------------

def track_down(view: View, down_since: Mapping[int, float], now: float) -> dict[int, float]:
    """When each broker down in ``view`` went down (kept from before, else ``now``); brokers
    back are dropped."""
    return {b: down_since.get(b, now) for b in sorted(view.down())}


def judge_heal(view: View, down_since: Mapping[int, float], healed: Iterable[int], rules: Rules,
               now: float) -> Decision | None:
    """``heal`` the brokers down past the grace period (module doc), ``refuse`` with the check
    that failed, or None when no broker is due."""
    holding = view.named()
    done = set(healed)
    due = sorted((since, b) for b, since in down_since.items()
                 if now - since >= rules.grace_s and b in holding and b not in done)
    if not due:
        return None
    brokers = tuple(sorted(b for _, b in due[:rules.max_heal_brokers]))
    subject = "brokers " + ",".join(map(str, brokers))
    cluster = view.registered() | holding
    down = view.down() & cluster
    if view.ongoing:
        return Decision("dead_brokers", "refuse", subject, f"{len(view.ongoing)} reassignment(s) in progress: "
                        "another plan runs", brokers=brokers)
    share = len(down) / max(len(cluster), 1)
    if share > rules.max_lost_share:
        return Decision("dead_brokers", "refuse", subject, f"{len(down)} of {len(cluster)} brokers down "
                        f"({sorted(down)}), more than --max-lost-share {rules.max_lost_share}: not healing "
                        "a cluster in trouble", brokers=brokers)
    if not (view.registered() - down):
        return Decision("dead_brokers", "refuse", subject, "no broker is up to take the replicas", brokers=brokers)
    waited = ", ".join(f"{b} for {now - down_since[b]:.0f} s" for b in brokers)
    return Decision("dead_brokers", "heal", subject, f"down past the grace period of {rules.grace_s:.0f} s "
                    f"({waited})", brokers=brokers)


def offline(view: View) -> tuple[Key, ...]:
    """Partitions whose every replica is on a down broker: no replica to copy from, so no
    reassignment of theirs can finish until one returns (Kafka would wait for ever)."""
    down = view.down()
    return tuple((p.topic, p.partition) for p in view.snapshot.partitions
                 if all(b in down for b in p.replicas if b >= 0))


def heal_targets(view: View, brokers: Sequence[int]) -> tuple[dict[Key, tuple[int, ...]], dict[Key, tuple[int, ...]],
                                                               Any, tuple[Key, ...]]:
    """The planner's repair-mode plan removing ``brokers`` (their replicas re-placed, nothing
    else moved): targets, starting replicas, the plan itself (for the report) and the offline
    partitions left out of it (:func:`offline`: planned on the snapshot without them)."""
    from kafka_replica_assignor.cluster.snapshot import ClusterSnapshot
    from kafka_replica_assignor.planner.request import PlanRequest, Scope
    from kafka_replica_assignor.planner.solving.planning import make_plan

    request = PlanRequest(mode="repair", scope=Scope(remove_brokers=tuple(sorted(brokers))),
                          source="replica-assignor watch")
    left_out = offline(view)
    snapshot = view.snapshot
    if left_out:
        skip = set(left_out)
        snapshot = ClusterSnapshot(snapshot.brokers, tuple(p for p in snapshot.partitions
                                                           if (p.topic, p.partition) not in skip))
    plan = make_plan(snapshot, request)
    starting = {(p.topic, p.partition): tuple(p.replicas) for p in view.snapshot.partitions}
    targets = {(p.topic, p.partition): tuple(p.replicas) for p in plan.changed()}
    return targets, {k: starting[k] for k in targets}, (plan, request), left_out
