"""Plans as plain values: moves, the cluster after them, and what the planner had to say.

Every balancing rule (``repair``, ``leader_balance``, ``replica_balance``) is a pure function
``snapshot -> Plan``. A plan never mutates its input: ``after`` is a new snapshot that shares the
unchanged partition entries with ``before``.

Inside a rule, :class:`Working` is the rule's private scratch copy of the replica lists: it is
created by the rule, never handed to another rule, and dropped once the plan is built.
"""

from __future__ import annotations

import enum
from collections import Counter
from dataclasses import dataclass, replace
from itertools import chain

from kafka_replica_assignor.cluster.snapshot import ClusterSnapshot, PartitionEntry
from kafka_replica_assignor.planner.racks import RackTree
from kafka_replica_assignor.planner.request import Scope


class MoveKind(enum.StrEnum):
    REPAIR = "repair"    # a placeholder or a replica on a dead/unknown/forgotten broker replaced
    REPLICA = "replica"  # a replica moved from one alive broker to another (data moves)
    LEADER = "leader"    # the preferred leader changed by reordering the replica list only


@dataclass(frozen=True, slots=True)
class Move:
    """One step of a plan. For ``LEADER`` moves, source and destination are the old and new
    preferred leaders; for the others, the broker (or placeholder id) losing the replica and
    the broker receiving it."""

    topic: str
    partition: int
    source: int
    destination: int
    kind: MoveKind


@dataclass(frozen=True, slots=True)
class Plan:
    """What a rule decided. ``bounds`` are named lower bounds or optima, as ``(name, value)``."""

    before: ClusterSnapshot
    after: ClusterSnapshot
    moves: tuple[Move, ...] = ()
    notes: tuple[str, ...] = ()
    bounds: tuple[tuple[str, int], ...] = ()

    @property
    def replica_moves(self) -> int:
        return sum(1 for m in self.moves if m.kind is not MoveKind.LEADER)

    @property
    def repairs(self) -> int:
        return sum(1 for m in self.moves if m.kind is MoveKind.REPAIR)

    @property
    def leader_changes(self) -> int:
        """Partitions whose preferred leader (first replica) differs between before and after."""
        return sum(
            1 for a, b in zip(self.before.partitions, self.after.partitions, strict=True)
            if a is not b and a.replicas[0] != b.replicas[0]
        )

    def bound(self, name: str) -> int | None:
        for key, value in self.bounds:
            if key == name:
                return value
        return None

    def changed(self) -> tuple[PartitionEntry, ...]:
        """The partitions whose replica list changed, in the order of their first move."""
        by_key = {
            (a.topic, a.partition): a
            for b, a in zip(self.before.partitions, self.after.partitions, strict=True)
            if a is not b and a.replicas != b.replicas
        }
        out: list[PartitionEntry] = []
        for m in self.moves:
            entry = by_key.pop((m.topic, m.partition), None)
            if entry is not None:
                out.append(entry)
        out.extend(by_key[k] for k in sorted(by_key))  # moved and moved back: none expected
        return tuple(out)

    def leader_changed(self) -> tuple[PartitionEntry, ...]:
        """Changed partitions whose preferred leader differs, in plan order."""
        first = {(p.topic, p.partition): p.replicas[0] for p in self.before.partitions}
        return tuple(p for p in self.changed() if first[(p.topic, p.partition)] != p.replicas[0])


class Working:
    """A rule's private scratch copy of a snapshot's replica lists, indexed by position.

    ``order`` visits partitions by (topic, partition) whatever the input order, so plans do not
    depend on how the snapshot was listed. ``eligible`` are the brokers replicas may live on:
    alive and not removed. The scope's sets: ``frozen`` partitions (out of scope), ``excluded``
    brokers (eligible ones only: a dead or removed broker's replicas are repaired anyway),
    ``takers`` (the added brokers; empty: every broker may take), ``demoted``.
    """

    __slots__ = (
        "bounds", "demoted", "eligible", "eligible_set", "excluded", "frozen", "layout", "memo", "moves", "notes", "order",
        "original", "rack_of", "removed", "replicas", "scope", "snapshot", "takers", "touched", "tree",
    )

    def __init__(self, snapshot: ClusterSnapshot, scope: Scope | None = None) -> None:
        self.snapshot = snapshot
        scope = scope or Scope()
        self.scope = scope
        self.removed = scope.removed
        self.frozen = scope.frozen(snapshot)
        self.excluded = frozenset(scope.exclude_brokers)     # restricted to eligible brokers below
        self.takers = frozenset(scope.add_brokers)     # empty: every broker may take
        self.demoted = frozenset(scope.demote_brokers)
        parts = snapshot.partitions
        keys = [(p.topic, p.partition) for p in parts]
        self.order = sorted(range(len(parts)), key=keys.__getitem__)  # linear when sorted
        self.original = [p.replicas for p in parts]
        self.replicas = list(map(list, self.original))
        self.rack_of = {b.id: b.rack for b in snapshot.brokers}
        self.eligible = sorted(b.id for b in snapshot.brokers if b.alive and b.id not in self.removed)
        self.eligible_set = frozenset(self.eligible)
        self.excluded &= self.eligible_set      # a dead or forgotten broker's replicas are repaired anyway
        self.tree = RackTree.of(self.rack_of)
        self.moves: list[tuple[int, int, int, MoveKind]] = []
        self.touched: set[int] = set()
        self.notes: list[str] = []
        self.bounds: dict[str, int] = {}
        self.layout: object = None     # the goals' numbering of nodes and topics, made when first asked
        self.memo: dict[str, object] = {}   # figures of the input a goal computes once per working copy

    def record(self, index: int, source: int, destination: int, kind: MoveKind) -> None:
        self.moves.append((index, source, destination, kind))
        self.touched.add(index)

    def counts(self) -> dict[int, int]:
        """Replicas per eligible broker in the current working lists."""
        every = Counter(chain.from_iterable(self.replicas))
        return {b: every.get(b, 0) for b in self.eligible}

    def byte_counts(self) -> dict[int, int]:
        """Bytes per eligible broker in the current working lists (unsized partitions weigh 0)."""
        sizes = [p.size_bytes or 0 for p in self.snapshot.partitions]
        out = dict.fromkeys(self.eligible, 0)
        for i, reps in enumerate(self.replicas):
            w = sizes[i]
            if w:
                for b in reps:
                    if b in out:
                        out[b] += w
        return out

    def _collapsed(self) -> list[tuple[int, int, int, MoveKind]]:
        """The net moves, partition by partition at the place of its first move: the replicas
        that left the list, each paired with one that came in (a ``repair`` when the broker left
        is not eligible), then the reorders that turn the result into the working list (a
        replica moved from ``b`` to ``c`` and back is no move; one repaired onto ``b`` and moved
        on to ``c`` is one repair to ``c``), then the rule's own reorders (``leader`` moves)."""
        data: dict[int, list[tuple[int, int]]] = {}
        leader: dict[int, list[tuple[int, int]]] = {}
        first: list[int] = []
        for i, src, dst, kind in self.moves:
            if i not in data:
                first.append(i)
                data[i] = []
                leader[i] = []
            (leader if kind is MoveKind.LEADER else data)[i].append((src, dst))
        out: list[tuple[int, int, int, MoveKind]] = []
        for i in first:
            middle = list(self.original[i])
            for src, dst in data[i]:
                middle[middle.index(src)] = dst
            current = list(self.original[i])
            came = [b for b in middle if b not in current]
            went = [b for b in current if b not in middle]
            for src, dst in zip(went, came, strict=True):
                kind = MoveKind.REPLICA if src in self.eligible_set else MoveKind.REPAIR
                out.append((i, src, dst, kind))
                current[current.index(src)] = dst
            if current != middle:
                for b in reversed(middle):     # move-to-front, last one first
                    if current[0] != b:
                        out.append((i, current[0], b, MoveKind.LEADER))
                        current.remove(b)
                        current.insert(0, b)
            out.extend((i, src, dst, MoveKind.LEADER) for src, dst in leader[i])
        return out

    def plan(self) -> Plan:
        snap = self.snapshot
        parts = snap.partitions
        new_parts = list(parts)
        changed = False
        for i in sorted(self.touched):
            p = parts[i]
            reps = tuple(self.replicas[i])
            if reps != p.replicas:
                changed = True
                new_parts[i] = replace(p, replicas=reps, leader=None, isr=None, log_dirs=None)   # traffic stays
        after = ClusterSnapshot(snap.brokers, tuple(new_parts)) if changed else snap
        moves = tuple(
            Move(parts[i].topic, parts[i].partition, s, d, k) for i, s, d, k in self._collapsed()
        )
        return Plan(snap, after, moves, tuple(self.notes), tuple(self.bounds.items()))
