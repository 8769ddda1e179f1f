"""Repair: give every partition its replicas back on brokers that are alive.

Goals
    Replace every replica that cannot serve (a KIP-409 placeholder, a replica on a broker marked
    dead, on a broker the snapshot does not know, or on a broker being forgotten, i.e.
    decommissioned) by a replica on an alive broker, keeping the rack spread the partition was
    meant to have and filling the least-loaded brokers first. Only the slots that need it change.

Constraints
    - Never a broker twice in a partition; replacements are alive, non-forgotten brokers.
    - Rack diversity of the alive replicas is never reduced (a replacement only adds one).
    - All or nothing per partition: Kafka's reassignment cannot hold a placeholder or an unknown
      broker, so a partition with a slot that cannot be filled (fewer alive brokers than its
      replication factor) is left as it is and reported.
    - ``max_moves`` caps the number of replacements; the rest are reported.
    - Pure and deterministic: the answer depends only on the snapshot and ``forgotten``.

Algorithm
    Partitions are visited by (topic, partition), slots left to right. For each slot, every rack
    (leaf of the rack tree) offers its least-loaded alive broker that is not in the partition, and
    the offers are ranked by

    1. the levels of the rack tree, from the top, at which the rack is new to the partition
       (a placeholder stands for a rack the partition does not use yet);
    2. the rack the replaced broker was on, when it is known (a dead or forgotten broker);
    3. the fewest replicas on the broker, counting the repairs made so far;
    4. the lowest broker id.

    Ranking diversity before the old rack matters only when the old rack is already used by the
    partition (a rack violation is not carried over). The replacement takes the slot's position,
    so the preferred-leader order is kept. Each slot costs O(racks + RF log B).

Example
    Brokers 0 (a), 1 (b), 2 (c), 3 (c) alive, 4 (b) dead, 9 unknown.

    ========= ============ ====================================================== ===========
    partition replicas     choice                                                 repaired
    ========= ============ ====================================================== ===========
    t-0       [0, 1, -1]   rack c is new; broker 3 holds no replica, 2 holds one  [0, 1, 3]
    t-1       [4, 0, 2]    broker 4 was on rack b, new to the partition: 1        [1, 0, 2]
    t-2       [9, 0, 1]    unknown rack; c is new; 2 and 3 hold one each: 2       [2, 0, 1]
    ========= ============ ====================================================== ===========
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable

from assignors.snapshot import ClusterSnapshot

from .plan import MoveKind, Plan, Working, gc_paused


class LoadIndex:
    """The least-loaded eligible broker of each leaf rack, with lazy heaps (counts only grow
    or shrink by one at a time; stale heap entries are skipped)."""

    __slots__ = ("heaps", "load", "leaf_keys", "leaves")

    def __init__(self, work: Working, load: dict[int, int]) -> None:
        tree = work.tree
        self.load = load
        by_leaf: dict[int, list[tuple[int, int]]] = {}
        self.leaf_keys: dict[int, tuple[int, ...]] = {}
        for b in work.eligible:
            keys = tree.keys_of(b) or ()
            leaf = keys[-1] if keys else -1
            self.leaf_keys[leaf] = keys
            by_leaf.setdefault(leaf, []).append((load[b], b))
        for entries in by_leaf.values():
            heapq.heapify(entries)
        self.heaps = by_leaf
        self.leaves = sorted(by_leaf)

    def add(self, broker: int, leaf: int, delta: int) -> None:
        self.load[broker] += delta
        heapq.heappush(self.heaps[leaf], (self.load[broker], broker))

    def best(self, leaf: int, exclude: set[int]) -> tuple[int, int] | None:
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


def choose_replacement(work: Working, index: LoadIndex, present: list[int], old: int) -> tuple[int, int] | None:
    """The best broker for a slot of a partition whose other usable replicas are ``present``.
    Returns ``(broker, leaf)`` or ``None`` when every eligible broker is already in it."""
    tree = work.tree
    used = [set() for _ in range(tree.depth)]
    for b in present:
        keys = tree.keys_of(b)
        if keys:
            for level, key in enumerate(keys):
                used[level].add(key)
    old_keys = tree.keys_of(old) if old >= 0 else None
    old_leaf = old_keys[-1] if old_keys else None
    exclude = set(present)
    best_rank = None
    best = None
    for leaf in index.leaves:
        offer = index.best(leaf, exclude)
        if offer is None:
            continue
        keys = index.leaf_keys[leaf]
        gain = tuple(0 if keys[level] in used[level] else -1 for level in range(len(keys)))
        rank = (gain, leaf != old_leaf, offer[0], offer[1])
        if best_rank is None or rank < best_rank:
            best_rank, best = rank, (offer[1], leaf)
    return best


def repair(snapshot: ClusterSnapshot, forgotten: Iterable[int] = frozenset(), *,
           max_moves: int | None = None) -> Plan:
    """Replace placeholders and replicas on dead, unknown or forgotten brokers (see module doc)."""
    with gc_paused():
        work = Working(snapshot, forgotten)
        repair_working(work, max_moves=max_moves)
        return work.plan()


def repair_working(work: Working, *, max_moves: int | None = None,
                   load: dict[int, int] | None = None) -> int:
    """Repair ``work`` (a rule's own scratch copy) and return the number of replacements.
    ``load`` (replicas per eligible broker, from :meth:`Working.counts`) is kept up to date."""
    eligible = work.eligible_set
    if load is None:
        load = work.counts()
    index = LoadIndex(work, load) if work.eligible else None
    notes = work.notes
    needed = 0
    done = 0
    unrepaired: list[str] = []
    budget_left = max_moves
    skipped_budget = 0
    for i in work.order:
        reps = work.replicas[i]
        if eligible.issuperset(reps):
            continue
        slots = [j for j, b in enumerate(reps) if b not in eligible]
        needed += len(slots)
        if budget_left is not None and budget_left < len(slots):
            skipped_budget += len(slots)
            continue
        present = [b for b in reps if b in eligible]
        chosen: list[tuple[int, int, int, int]] = []  # slot, old, new, leaf
        for j in slots:
            pick = choose_replacement(work, index, present, reps[j]) if index else None
            if pick is None:
                break
            broker, leaf = pick
            index.add(broker, leaf, +1)
            present.append(broker)
            chosen.append((j, reps[j], broker, leaf))
        if len(chosen) < len(slots):
            for _, _, broker, leaf in chosen:
                index.add(broker, leaf, -1)
            part = work.snapshot.partitions[i]
            unrepaired.append(f"{part.topic}-{part.partition}")
            continue
        for j, old, new, _ in chosen:
            reps[j] = new
            work.record(i, old, new, MoveKind.REPAIR)
        done += len(chosen)
        if budget_left is not None:
            budget_left -= len(chosen)
    if unrepaired:
        shown = ", ".join(unrepaired[:10]) + (", ..." if len(unrepaired) > 10 else "")
        notes.append(
            f"{len(unrepaired)} partition(s) cannot be repaired: fewer alive brokers "
            f"({len(work.eligible)}) than replicas to place ({shown})"
        )
    if skipped_budget:
        notes.append(f"move budget reached: {skipped_budget} replica(s) left to repair")
    work.bounds["repairs_needed"] = needed
    return done
