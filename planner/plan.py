"""Plans as plain values: moves, the cluster after them, and what the planner had to say.

Every balancing rule (``repair``, ``leader_balance``, ``replica_balance``) is a pure function
``snapshot -> Plan``. A plan never mutates its input: ``after`` is a new snapshot that shares the
unchanged partition entries with ``before``. Plans compose with :meth:`Plan.then`.

Inside a rule, :class:`Working` is the rule's private scratch copy of the replica lists: it is
created by the rule, never handed to another rule, and dropped once the plan is built.
"""

from __future__ import annotations

import enum
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import chain

from assignors.snapshot import ClusterSnapshot, PartitionEntry

from .racks import RackTree


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

    @classmethod
    def empty(cls, snapshot: ClusterSnapshot, notes: Iterable[str] = ()) -> Plan:
        return cls(snapshot, snapshot, (), tuple(notes))

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

    def then(self, other: Plan) -> Plan:
        """This plan followed by ``other`` (which must start where this one ends)."""
        if other.before is not self.after and other.before != self.after:
            raise ValueError("plans do not chain: the second does not start where the first ends")
        return Plan(
            self.before, other.after, self.moves + other.moves, self.notes + other.notes,
            self.bounds + other.bounds,
        )


class Working:
    """A rule's private scratch copy of a snapshot's replica lists, indexed by position.

    ``order`` visits partitions by (topic, partition) whatever the input order, so plans do not
    depend on how the snapshot was listed. ``eligible`` are the brokers replicas may live on:
    alive and not forgotten.
    """

    __slots__ = (
        "added", "bounds", "eligible", "eligible_set", "forgotten", "moves", "notes", "order",
        "original", "rack_of", "replicas", "snapshot", "touched", "tree",
    )

    def __init__(self, snapshot: ClusterSnapshot, forgotten: Iterable[int] = frozenset()) -> None:
        self.snapshot = snapshot
        self.forgotten = frozenset(forgotten)
        parts = snapshot.partitions
        keys = [(p.topic, p.partition) for p in parts]
        self.order = sorted(range(len(parts)), key=keys.__getitem__)  # linear when sorted
        self.original = [p.replicas for p in parts]
        self.replicas = list(map(list, self.original))
        self.rack_of = {b.id: b.rack for b in snapshot.brokers}
        self.eligible = sorted(b.id for b in snapshot.brokers if b.alive and b.id not in self.forgotten)
        self.eligible_set = frozenset(self.eligible)
        self.tree = RackTree.of(self.rack_of)
        self.moves: list[tuple[int, int, int, MoveKind]] = []
        self.touched: set[int] = set()
        self.added: dict[int, set[int]] = {}   # partition -> brokers a move brought in
        self.notes: list[str] = []
        self.bounds: dict[str, int] = {}

    def record(self, index: int, source: int, destination: int, kind: MoveKind) -> None:
        self.moves.append((index, source, destination, kind))
        self.touched.add(index)
        if kind is not MoveKind.LEADER:
            self.added.setdefault(index, set()).add(destination)

    def held(self, index: int, broker: int) -> bool:
        """Has ``broker`` held a replica of the partition at any point of this plan? A rule never
        brings a replica back to a broker it left: every move is then a real data move, and
        chains of moves of one replica merge into one (:meth:`_collapsed`)."""
        return (broker in self.replicas[index] or broker in self.original[index]
                or broker in self.added.get(index, ()))

    def counts(self) -> dict[int, int]:
        """Replicas per eligible broker in the current working lists."""
        every = Counter(chain.from_iterable(self.replicas))
        return {b: every.get(b, 0) for b in self.eligible}

    def _collapsed(self) -> list[tuple[int, int, int, MoveKind]]:
        """The moves with chains merged: a replica repaired onto ``b`` and then moved from ``b``
        to ``c`` is one move to ``c`` (of the first kind); moved back, it is no move at all."""
        out: list[tuple[int, int, int, MoveKind] | None] = []
        placed: dict[int, dict[int, int]] = {}   # partition -> broker -> index in out
        for i, src, dst, kind in self.moves:
            if kind is MoveKind.LEADER:
                placed.pop(i, None)     # a reorder in between: later moves stay separate
                out.append((i, src, dst, kind))
                continue
            here = placed.setdefault(i, {})
            k = here.pop(src, None)
            if k is None:
                here[dst] = len(out)
                out.append((i, src, dst, kind))
                continue
            _, first, _, first_kind = out[k]
            if first == dst:
                out[k] = None
            else:
                out[k] = (i, first, dst, first_kind)
                here[dst] = k
        return [m for m in out if m is not None]

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
                new_parts[i] = PartitionEntry(p.topic, p.partition, reps, None, None, p.size_bytes)
        after = ClusterSnapshot(snap.brokers, tuple(new_parts)) if changed else snap
        moves = tuple(
            Move(parts[i].topic, parts[i].partition, s, d, k) for i, s, d, k in self._collapsed()
        )
        return Plan(snap, after, moves, tuple(self.notes), tuple(self.bounds.items()))
