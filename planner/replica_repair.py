"""Repair: give every partition its replicas back on alive brokers (KIP-409 placeholders too).

The one repair algorithm of the project: ``replica-assignor repair`` calls :func:`repair`, the
balance planner (:mod:`kafka_replica_assignor.planner.solving.repair_rule`) calls :func:`repair_lists` on its working copy.

Goals
    Replace every replica that cannot serve (a KIP-409 placeholder, a replica on a broker that
    is not alive, on a broker the snapshot does not know, or on a forgotten, i.e. decommissioned,
    broker) by a replica on an alive broker, keeping the rack spread the partition was meant to
    have and filling the least-loaded brokers first. Only the slots that need it change.

Constraints
    - A slot needs repair when its broker is not *eligible* (alive and not forgotten), unless
      the broker is in ``keep``: brokers expected back (KIP-409 observed brokers that are offline
      but not forgotten) keep their replicas. The CLI keeps the not-alive, not-forgotten
      brokers; the planner keeps none. A forgotten broker is never kept.
    - A replacement is an eligible broker not already in the partition (never a duplicate).
    - Rack diversity is never reduced at any level of the rack tree (a replacement only adds).
    - All or nothing per partition: Kafka's reassignment cannot hold a placeholder or an unknown
      broker, so a partition with a slot that cannot be filled (fewer eligible brokers than
      replicas to place) is left as it is and reported as unrepaired.
    - ``max_moves`` caps the number of replacements; a partition that does not fit in what is
      left of the budget is deferred whole (a later, smaller one may still fit).
    - Pure and deterministic: the answer depends only on the inputs.

Algorithm
    Racks are read as a tree (:func:`rack_levels`): ``/dc1/r1`` has the levels ``/dc1`` and
    ``/dc1/r1``; shorter paths are padded with their last component; when only some brokers have
    a rack, the others share the pseudo rack ``NO_RACK``; with no rack at all there are no levels.

    Partitions are visited by (topic, partition), slots left to right. For each slot, every rack
    (leaf of the tree) offers its least-loaded eligible broker that is not in the partition, and
    the offers are ranked by

    1. the levels of the rack tree, from the top, at which the rack is new to the partition
       (replicas on kept brokers count: their racks are used);
    2. the fewest replicas on the broker, counting the repairs made so far;
    3. the rack the replaced broker was on, when it is known (a dead or forgotten broker;
       a placeholder or an unknown broker has none);
    4. the lowest broker id.

    Ranking diversity before the old rack matters only when the old rack is already used by the
    partition (a rack violation is not carried over); a placeholder stands for a rack the
    partition does not use yet. Ranking the load before the old rack keeps the replicas of a
    dead broker from piling onto the fullest broker of its rack when another rack that the
    partition may use has emptier brokers; the old rack only breaks ties. The replacement takes the slot's position, so the
    preferred-leader order is kept. Each rack keeps a lazy heap of its brokers by load, so a
    slot costs O(racks + RF log B).

Example
    Brokers 0 (a), 1 (b), 2 (c) and 3 (c) are alive; 4 (b) is offline and kept (expected back);
    5 (b) is offline or forgotten and not kept; 9 is unknown.

    ========= ============ ======================================================= ============
    partition replicas     choice                                                  repaired
    ========= ============ ======================================================= ============
    t-0       [0, 1, -1]   rack c is new; 3 holds no replica, 2 holds one          [0, 1, 3]
    t-1       [5, 0, 2]    5 was on rack b, new to the partition: 1                [1, 0, 2]
    t-2       [9, 0, 1]    unknown rack; c is new; 2 and 3 hold one each: 2        [2, 0, 1]
    t-3       [4, 0, -1]   4 stays; c is new (b is 4's); 3 holds one, 2 holds two  [4, 0, 3]
    ========= ============ ======================================================= ============
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Hashable, Iterable, Mapping, Sequence, Set
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from kafka_replica_assignor.cluster.snapshot import ClusterSnapshot

TopicPartition = tuple[str, int]

NO_RACK = "(no rack)"
"""The level key shared by brokers without a rack when other brokers have one."""

Levels = Mapping[int, tuple[Hashable, ...]]
"""Per broker, one key per level of the rack tree (equal keys: same subtree at that level)."""


def rack_levels(racks: Mapping[int, str | None]) -> dict[int, tuple[Hashable, ...]]:
    """The rack-tree keys of ``{broker id: rack}``: at level ``k`` a broker's key is the first
    ``k`` components of its rack path (padded with its last component); :data:`NO_RACK` for a
    broker without a rack when others have one; ``()`` for every broker when none has a rack."""
    paths = {b: tuple(part for part in r.split("/") if part) if r else () for b, r in racks.items()}
    depth = max(map(len, paths.values()), default=0)
    levels: dict[int, tuple[Hashable, ...]] = {}
    for b, path in paths.items():
        if depth == 0:
            levels[b] = ()
        elif path:
            padded = path + (path[-1],) * (depth - len(path))
            levels[b] = tuple(padded[:k] for k in range(1, depth + 1))
        else:
            levels[b] = (NO_RACK,) * depth
    return levels


@dataclass(frozen=True, slots=True)
class RepairOutcome:
    """What :func:`repair_lists` did, by index into the replica lists it was given.

    ``changes`` are ``(index, position, old, new)`` in the order made; ``unrepaired`` the
    partitions left whole for want of eligible brokers; ``deferred`` the partitions left for the
    budget, ``deferred_slots`` their slots; ``needed`` every slot that needed repair."""

    changes: tuple[tuple[int, int, int, int], ...]
    unrepaired: tuple[int, ...]
    deferred: tuple[int, ...]
    deferred_slots: int
    needed: int


class _LoadIndex:
    """The least-loaded eligible broker of each leaf rack, with lazy heaps (a count changes by
    one at a time and pushes a fresh entry; stale entries are skipped when met)."""

    __slots__ = ("heaps", "leaf_keys", "load")

    def __init__(self, eligible: Iterable[int], levels: Levels, load: dict[int, int]) -> None:
        self.load = load
        self.heaps: dict[Hashable, list[tuple[int, int]]] = {}
        self.leaf_keys: dict[Hashable, tuple[Hashable, ...]] = {}
        for b in eligible:
            keys = levels.get(b) or ()
            leaf = keys[-1] if keys else None
            self.leaf_keys[leaf] = keys
            self.heaps.setdefault(leaf, []).append((load[b], b))
        for entries in self.heaps.values():
            heapq.heapify(entries)

    def add(self, broker: int, leaf: Hashable, delta: int) -> None:
        self.load[broker] += delta
        heapq.heappush(self.heaps[leaf], (self.load[broker], broker))

    def best(self, leaf: Hashable, exclude: Set[int]) -> tuple[int, int] | None:
        """``(load, broker)`` of the least-loaded broker of ``leaf`` not in ``exclude``."""
        heap = self.heaps[leaf]
        held: list[tuple[int, int]] = []
        found = None
        while heap:
            load, b = heap[0]
            if load != self.load[b]:
                heapq.heappop(heap)
                continue
            if b in exclude:
                held.append(heapq.heappop(heap))
                continue
            found = (load, b)
            break
        for entry in held:
            heapq.heappush(heap, entry)
        return found


def _choose(index: _LoadIndex, levels: Levels, depth: int, present: list[int],
            old: int) -> tuple[int, Hashable] | None:
    """``(broker, leaf)`` for a slot of a partition whose other replicas are ``present``, or
    ``None`` when every eligible broker is already in it (ranking: see the module doc)."""
    used: list[set[Hashable]] = [set() for _ in range(depth)]
    for b in present:
        keys = levels.get(b)
        if keys:
            for level, key in enumerate(keys):
                used[level].add(key)
    old_keys = levels.get(old) if old >= 0 else None
    old_leaf = old_keys[-1] if old_keys else None
    exclude = set(present)
    best_rank = None
    best = None
    for leaf, keys in index.leaf_keys.items():
        offer = index.best(leaf, exclude)
        if offer is None:
            continue
        gain = tuple(0 if key in used[level] else -1 for level, key in enumerate(keys))
        rank = (gain, offer[0], old_leaf is None or leaf != old_leaf, offer[1])
        if best_rank is None or rank < best_rank:
            best_rank, best = rank, (offer[1], leaf)
    return best


def repair_lists(replicas: Sequence[list[int]], order: Iterable[int], eligible: Sequence[int],
                 levels: Levels, load: dict[int, int], *, keep: Set[int] = frozenset(),
                 max_moves: int | None = None) -> RepairOutcome:
    """Repair ``replicas`` in place (see the module doc), visiting them in ``order``.

    ``eligible`` are the brokers replicas may live on (alive, not forgotten), ``levels`` their
    rack-tree keys (and those of gone brokers, for the old rack), ``load`` the replicas per
    eligible broker, kept up to date. A replica on a broker in ``keep`` stays."""
    eligible_set = frozenset(eligible)
    keep = frozenset(keep) - eligible_set
    depth = max(map(len, levels.values()), default=0)
    index = _LoadIndex(eligible, levels, load) if eligible else None
    changes: list[tuple[int, int, int, int]] = []
    unrepaired: list[int] = []
    deferred: list[int] = []
    deferred_slots = 0
    needed = 0
    budget_left = max_moves
    for i in order:
        reps = replicas[i]
        if eligible_set.issuperset(reps):
            continue
        slots = [j for j, b in enumerate(reps) if b not in eligible_set and b not in keep]
        if not slots:
            continue
        needed += len(slots)
        if budget_left is not None and budget_left < len(slots):
            deferred.append(i)
            deferred_slots += len(slots)
            continue
        present = [b for j, b in enumerate(reps) if j not in slots]
        chosen: list[tuple[int, int, Hashable]] = []  # slot, new, leaf
        for j in slots:
            pick = _choose(index, levels, depth, present, reps[j]) if index else None
            if pick is None:
                break
            assert index is not None  # a pick comes from the index
            broker, leaf = pick
            index.add(broker, leaf, +1)
            present.append(broker)
            chosen.append((j, broker, leaf))
        if len(chosen) < len(slots):
            for _, broker, leaf in chosen:
                assert index is not None  # chosen is empty without one
                index.add(broker, leaf, -1)
            unrepaired.append(i)
            continue
        for j, new, _ in chosen:
            changes.append((i, j, reps[j], new))
            reps[j] = new
        if budget_left is not None:
            budget_left -= len(chosen)
    return RepairOutcome(tuple(changes), tuple(unrepaired), tuple(deferred), deferred_slots, needed)


@dataclass(frozen=True, slots=True)
class Replacement:
    """One slot repaired: ``old`` (a placeholder or a gone broker) became ``new``."""

    topic: str
    partition: int
    position: int
    old: int
    new: int


@dataclass(frozen=True, slots=True)
class RepairPlan:
    """The repaired partitions (new replica lists), the slots changed, what could not be
    repaired, and what was left for the move budget."""

    assignments: Mapping[TopicPartition, tuple[int, ...]]
    replacements: tuple[Replacement, ...]
    unrepaired: tuple[TopicPartition, ...]
    deferred: tuple[TopicPartition, ...] = ()

    def to_reassignment(self) -> dict[str, Any]:
        """Kafka's partition reassignment JSON (version 1), sorted by topic and partition."""
        return {
            "version": 1,
            "partitions": [
                {"topic": t, "partition": p, "replicas": list(r)}
                for (t, p), r in sorted(self.assignments.items())
            ],
        }


def expected_back(snapshot: ClusterSnapshot, forgotten: Iterable[int] = frozenset()) -> frozenset[int]:
    """The brokers the snapshot lists as not alive and that are not forgotten: the ``keep`` of
    ``replica-assignor repair`` (KIP-409 observed brokers, expected back)."""
    forgotten = frozenset(forgotten)
    return frozenset(b.id for b in snapshot.brokers if not b.alive and b.id not in forgotten)


def repair(snapshot: ClusterSnapshot, forgotten: Iterable[int] = frozenset(), *,
           keep: Iterable[int] = frozenset(), max_moves: int | None = None) -> RepairPlan:
    """Replace placeholders and replicas on brokers that are not alive (unless in ``keep``),
    unknown or forgotten, in a snapshot (see the module doc)."""
    forgotten = frozenset(forgotten)
    parts = snapshot.partitions
    order = sorted(range(len(parts)), key=lambda i: (parts[i].topic, parts[i].partition))
    lists = [list(p.replicas) for p in parts]
    eligible = sorted(b.id for b in snapshot.brokers if b.alive and b.id not in forgotten)
    every = Counter(b for p in parts for b in p.replicas)
    load = {b: every.get(b, 0) for b in eligible}
    levels = rack_levels({b.id: b.rack for b in snapshot.brokers})
    outcome = repair_lists(lists, order, eligible, levels, load,
                           keep=frozenset(keep) - forgotten, max_moves=max_moves)

    def key(i: int) -> TopicPartition:
        return parts[i].topic, parts[i].partition

    replacements = tuple(Replacement(*key(i), j, old, new) for i, j, old, new in outcome.changes)
    assignments = {key(i): tuple(lists[i]) for i in dict.fromkeys(i for i, *_ in outcome.changes)}
    return RepairPlan(MappingProxyType(assignments), replacements,
                      tuple(map(key, outcome.unrepaired)), tuple(map(key, outcome.deferred)))


__all__ = ["NO_RACK", "RepairOutcome", "RepairPlan", "Replacement", "expected_back", "rack_levels",
           "repair", "repair_lists"]
