"""Repair: fill KIP-409 placeholders, and replace replicas on brokers that will not return.

Goals
    When brokers are back (or new ones joined), give every partition its full replication
    factor again on alive brokers, with the rack spread the assignor meant, moving as little
    as possible: only the slots that need it change.

Constraints
    - A slot needs repair when it holds a placeholder (a negative id), a broker the snapshot
      does not know, or a broker that is forgotten (decommissioned). A broker listed as not
      alive and not forgotten is expected back: its replicas stay.
    - A replacement is an alive broker not already in the partition (never a duplicate).
    - A partition is only in the plan when every slot that needed repair was filled: Kafka's
      reassignment cannot hold placeholders. The others are reported as unrepaired.
    - Pure: the answer depends only on the snapshot and ``forgotten``.

Algorithm
    Partitions are visited by (topic, partition); within a partition, the slots needing repair
    are filled left to right. For each slot the candidate alive brokers are ranked by:

    1. the rack of the broker being replaced, when it is known (a forgotten broker's rack);
    2. the racks the partition uses least (a placeholder stood for a rack the partition's
       other replicas do not cover: the assignor spread the racks over the observed brokers);
    3. the fewest replicas already on the broker (counting the repairs made so far);
    4. the lowest broker id.

    The replacement takes the slot's position, so a repaired slot keeps its place in the
    preferred-leader order.

Example
    Brokers 0 (a), 1 (b), 2 (c) and 3 (c) are alive; broker 5 (b) is forgotten.

    ========= ============ ======================================================== ============
    partition replicas     choice                                                   repaired
    ========= ============ ======================================================== ============
    t-0       [0, 1, -1]   rack c is unused; 3 holds fewer replicas than 2          [0, 1, 3]
    t-1       [5, 0, 2]    broker 5 was on rack b; 1 is the alive broker on rack b  [1, 0, 2]
    ========= ============ ======================================================== ============
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from .snapshot import ClusterSnapshot

TopicPartition = tuple[str, int]


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
    """The repaired partitions (new replica lists), the slots changed, and what could not be repaired."""

    assignments: Mapping[TopicPartition, tuple[int, ...]]
    replacements: tuple[Replacement, ...]
    unrepaired: tuple[TopicPartition, ...]

    def to_reassignment(self) -> dict[str, Any]:
        """Kafka's partition reassignment JSON (version 1), sorted by topic and partition."""
        return {
            "version": 1,
            "partitions": [
                {"topic": t, "partition": p, "replicas": list(r)}
                for (t, p), r in sorted(self.assignments.items())
            ],
        }


def repair(snapshot: ClusterSnapshot, forgotten: Iterable[int] = frozenset()) -> RepairPlan:
    """Fill placeholders and replace replicas on forgotten or unknown brokers (see the module doc)."""
    forgotten = frozenset(forgotten)
    rack_of = {b.id: b.rack for b in snapshot.brokers}
    alive = sorted(b.id for b in snapshot.brokers if b.alive and b.id not in forgotten)
    expected_back = {b.id for b in snapshot.brokers if not b.alive and b.id not in forgotten}
    load = Counter(r for p in snapshot.partitions for r in p.replicas)

    def needs_repair(b: int) -> bool:
        return b < 0 or b in forgotten or (b not in alive_set and b not in expected_back)

    alive_set = set(alive)
    assignments: dict[TopicPartition, tuple[int, ...]] = {}
    replacements: list[Replacement] = []
    unrepaired: list[TopicPartition] = []
    for part in sorted(snapshot.partitions, key=lambda p: (p.topic, p.partition)):
        replicas = list(part.replicas)
        slots = [i for i, b in enumerate(replicas) if needs_repair(b)]
        if not slots:
            continue
        changed: list[Replacement] = []
        for i in slots:
            old = replicas[i]
            present = {b for j, b in enumerate(replicas) if j not in slots or j < i}
            candidates = [b for b in alive if b not in present]
            if not candidates:
                break
            racks_used = Counter(rack_of.get(b) for b in present if b in rack_of)
            wanted = rack_of.get(old) if old >= 0 else None
            new = min(candidates, key=lambda b: (
                wanted is not None and rack_of[b] != wanted,
                racks_used[rack_of[b]],
                load[b],
                b,
            ))
            replicas[i] = new
            load[new] += 1
            changed.append(Replacement(part.topic, part.partition, i, old, new))
        if len(changed) < len(slots):
            # undo the load of a partial repair: the partition stays as it is
            for r in changed:
                load[r.new] -= 1
            unrepaired.append((part.topic, part.partition))
            continue
        assignments[(part.topic, part.partition)] = tuple(replicas)
        replacements.extend(changed)
    return RepairPlan(MappingProxyType(assignments), tuple(replacements), tuple(unrepaired))


__all__ = ["RepairPlan", "Replacement", "repair"]
