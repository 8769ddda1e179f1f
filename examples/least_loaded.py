"""An example third-party assignor: prefer the least-loaded brokers, one replica per rack.

Goals
    New replicas go to the brokers holding the fewest replicas across every topic of the
    cluster view (``cluster.topics``), so new brokers fill up first; new leaders go to the
    brokers leading the fewest partitions.

Constraints
    - Never two replicas of a partition in one rack while a rack without one has a broker
      left.
    - Fenced brokers are the framework's, not this plug-in's: they are never in the view it is
      given (``kafka_replica_assignor.assignors.fencing`` keeps them out, and adds them as
      followers only where the unfenced brokers are too few). A current replica may be on one.
    - Partitions that already exist keep their replicas as a prefix (raised replication
      factor).
    - Pure: the only randomness is the injected ``rng``, used once to break ties.

Algorithm
    Count replicas and leaders per broker over all topics. Break ties by one random order of
    the brokers drawn from ``rng``. For each partition in id order: the leader (when the
    partition is new) is the broker with the fewest leaders, then fewest replicas;
    each follower is the broker not yet in the partition whose rack is unused (when
    possible) and that holds the fewest replicas. Counts are updated after every choice, so
    the partitions of one request spread too.

Example
    Brokers 0-3 with no racks, where topic ``old`` already has ``{0: [0, 1], 1: [1, 0]}``:
    two new partitions with replication factor 2 land on brokers 2 and 3 only.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Sequence

from kafka_replica_assignor.assignors import ANONYMOUS, ClusterView, ReplicaAssignor, ReplicaAssignorError
from kafka_replica_assignor.assignors.model import Assignment


class LeastLoadedAssignor(ReplicaAssignor):
    """Least-loaded brokers first, racks spread (see the module docstring)."""

    name = "least-loaded"

    def assign_replicas_to_brokers(
        self,
        topic_name: str | None,
        partitions: Sequence[int],
        replication_factor: int,
        cluster: ClusterView,
        principal: str = ANONYMOUS,
        *,
        rng: random.Random,
    ) -> Assignment:
        rack_of = cluster.rack_by_broker
        replicas: Counter[int] = Counter()
        leaders: Counter[int] = Counter()
        for assignment in cluster.topics.values():
            for current in assignment.values():
                replicas.update(current)
                if current:
                    leaders[current[0]] += 1
        order = list(cluster.broker_ids)
        rng.shuffle(order)
        tie = {b: i for i, b in enumerate(order)}
        existing = cluster.topic_assignment(topic_name)
        out: Assignment = {}
        for p in sorted(set(partitions)):
            chosen = list(existing.get(p, ()))
            if len(chosen) > replication_factor:
                raise ReplicaAssignorError(
                    f"partition {p} already has {len(chosen)} replicas, more than {replication_factor}"
                )
            if not chosen:
                leader = min(order, key=lambda b: (leaders[b], replicas[b], tie[b]))
                chosen.append(leader)
                leaders[leader] += 1
                replicas[leader] += 1
            while len(chosen) < replication_factor:
                used_racks = {rack_of.get(b) for b in chosen}
                candidates = [b for b in order if b not in chosen]
                if not candidates:
                    raise ReplicaAssignorError(f"partition {p}: not enough brokers")
                follower = min(candidates, key=lambda b: (
                    rack_of[b] is not None and rack_of[b] in used_racks, replicas[b], tie[b]))
                chosen.append(follower)
                replicas[follower] += 1
            out[p] = chosen
        return out
