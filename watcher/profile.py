"""What a placement is for, without the names: the profile two placements are compared by.

Goals
    Tell whether a topic sits where the assignor would have put it. An assignor's answer is one
    of many equally good ones (its random draws pick rings and offsets), so asking again and
    comparing replica lists would move every topic, ours included. Two placements are
    *equivalent* when they have the same profile: the same spread of each partition over the
    rack tree, the same evenness of the topic at every level and the same leader counts, and
    the same brokers left empty.

Constraints
    - Racks are read as the multi-level assignor reads them (:func:`kafka_replica_assignor.assignors.multi_level.rack_paths`):
      ``/dc1/zone-a`` is two levels above its brokers. A cluster the multi-level rule refuses
      (some brokers without a rack) is read flat: one level of racks (``None`` one rack).
    - Relabelling is free: which rack or broker holds the counts does not matter, except for
      brokers the placement leaves empty while it holds at least one replica per broker
      (an assignor that keeps away from a broker says so there).

Algorithm
    For each level of the tree (brokers last): the sorted replica counts of the topic's
    subtrees (zeros included), the sorted leader counts, and for each partition the sorted
    counts of its replicas per subtree, as a sorted multiset.

Example
    Brokers 0-4 on ``/dc1/a /dc1/b /dc2/a /dc1/a /dc1/b``; RF 2. The multi-level assignor puts
    one replica of each partition in each data centre: partition signature at level 1
    ``(1, 1)``. Kafka's striped placer, seeing three flat racks, puts some partitions on
    ``/dc1/a`` and ``/dc1/b``: signature ``(2,)`` at level 1. The profiles differ: the topic is moved.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from kafka_replica_assignor.assignors.errors import ReplicaAssignorError
from kafka_replica_assignor.assignors.model import BrokerMetadata
from kafka_replica_assignor.assignors.multi_level import rack_paths

Assignment = Mapping[int, Sequence[int]]
Level = Mapping[int, tuple[str, ...]]   # broker -> its subtree at one level


@dataclass(frozen=True, slots=True)
class Profile:
    """The profile of one topic's placement (module doc); equal profiles: equivalent placements."""

    replicas: tuple[tuple[int, ...], ...]     # per level: sorted replica counts of the subtrees
    leaders: tuple[tuple[int, ...], ...]      # per level: sorted leader counts of the subtrees
    partitions: tuple[tuple[tuple[tuple[int, ...], int], ...], ...]   # per level: (signature, how many)
    empty: frozenset[int]                     # brokers left empty (only when every broker could hold one)


def levels(brokers: Sequence[BrokerMetadata]) -> list[Level]:
    """Each broker's subtree at every level of the rack tree, the brokers themselves last."""
    try:
        paths = rack_paths(brokers)
    except ReplicaAssignorError:
        paths = {b.id: (b.rack or "",) for b in brokers}
    depth = max((len(p) for p in paths.values()), default=0)
    out: list[Level] = [{b: path[:cut] for b, path in paths.items()} for cut in range(1, depth + 1)]
    out.append({b: (str(b),) for b in paths})
    return out


def profile(assignment: Assignment, tree: Sequence[Level]) -> Profile:
    """The profile of ``assignment`` over ``tree`` (:func:`levels`)."""
    replicas, leaders, partitions = [], [], []
    for level in tree:
        subtrees = set(level.values())
        held = Counter({s: 0 for s in subtrees})
        led = Counter({s: 0 for s in subtrees})
        signatures: Counter[tuple[int, ...]] = Counter()
        for reps in assignment.values():
            mine = Counter(level.get(b, ("?", str(b))) for b in reps)
            held.update(mine)
            if reps:
                led[level.get(reps[0], ("?", str(reps[0])))] += 1
            signatures[tuple(sorted(mine.values(), reverse=True))] += 1
        replicas.append(tuple(sorted(held.values())))
        leaders.append(tuple(sorted(led.values())))
        partitions.append(tuple(sorted(signatures.items())))
    brokers = set(tree[-1]) if tree else set()
    total = sum(len(r) for r in assignment.values())
    used = {b for reps in assignment.values() for b in reps}
    empty = frozenset(brokers - used) if total >= len(brokers) else frozenset()
    return Profile(tuple(replicas), tuple(leaders), tuple(partitions), empty)


def equivalent(current: Assignment, desired: Assignment, tree: Sequence[Level]) -> bool:
    """Whether ``current`` serves the goals ``desired`` (the assignor's answer) serves, as well."""
    return profile(current, tree) == profile(desired, tree)
