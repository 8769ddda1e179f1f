"""The replication throttles of the reassignments in flight, in Kafka's own format.

Kafka's ``kafka-reassign-partitions.sh --execute --throttle RATE`` sets, for the partitions it
moves (``ReassignPartitionsCommand``):

- on each topic, ``leader.replication.throttled.replicas``: ``partition:broker`` for every
  *source* (a replica the partition has before the move, the leader among them), and
  ``follower.replication.throttled.replicas``: ``partition:broker`` for every *destination*
  (a target replica that is not a source); each list sorted as strings and comma-joined;
- on each broker that is a source or a destination, ``leader.replication.throttled.rate`` and
  ``follower.replication.throttled.rate`` set to RATE.

Only the moving replicas are throttled: the other partitions of those brokers replicate at full
speed. The executor recomputes these values whenever the reassignments in flight change, so a
finished move stops being throttled.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from .executor_schedule import Reassignment

__all__ = ["BROKER_RATES", "TOPIC_REPLICAS", "Throttles", "throttles"]

LEADER_RATE = "leader.replication.throttled.rate"
FOLLOWER_RATE = "follower.replication.throttled.rate"
LEADER_REPLICAS = "leader.replication.throttled.replicas"
FOLLOWER_REPLICAS = "follower.replication.throttled.replicas"
BROKER_RATES = (LEADER_RATE, FOLLOWER_RATE)
TOPIC_REPLICAS = (LEADER_REPLICAS, FOLLOWER_REPLICAS)


@dataclass(frozen=True, slots=True)
class Throttles:
    """Per topic, the two replica lists; the brokers that get the rate."""

    leader: dict[str, str]
    follower: dict[str, str]
    brokers: frozenset[int]

    def topic_configs(self) -> dict[str, dict[str, str]]:
        return {t: {LEADER_REPLICAS: self.leader[t], FOLLOWER_REPLICAS: self.follower[t]}
                for t in sorted(self.leader)}


def throttles(in_flight: Iterable[Reassignment]) -> Throttles:
    leader: dict[str, set[str]] = {}
    follower: dict[str, set[str]] = {}
    brokers: set[int] = set()
    for r in in_flight:
        sources = set(r.start)
        lead = leader.setdefault(r.topic, set())
        follow = follower.setdefault(r.topic, set())
        lead.update(f"{r.partition}:{b}" for b in sources)
        follow.update(f"{r.partition}:{b}" for b in r.target if b not in sources)
        brokers.update(sources, r.target)
    return Throttles({t: ",".join(sorted(v)) for t, v in leader.items()},
                     {t: ",".join(sorted(v)) for t, v in follower.items()}, frozenset(brokers))
