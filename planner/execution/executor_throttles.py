"""The replication throttles of the reassignments in flight, in Kafka's own format.

Kafka's ``kafka-reassign-partitions.sh --execute --throttle RATE`` sets, for the partitions it
moves (``ReassignPartitionsCommand``):

- on each topic, ``leader.replication.throttled.replicas``: ``partition:broker`` for every
  *source* (a replica the partition has before the move, the leader among them), and
  ``follower.replication.throttled.replicas``: ``partition:broker`` for every *destination*
  (a target replica that is not a source); each list sorted as strings and comma-joined;
- on each broker that is a source or a destination, ``leader.replication.throttled.rate`` and
  ``follower.replication.throttled.rate`` set to RATE.

Its ``--verify`` removes all three broker-level throttles (those two and
``replica.alter.log.dirs.io.max.bytes.per.second``, the intra-broker one of
``--replica-alter-log-dirs-throttle``) and both topic-level lists; :func:`clear_throttles`
removes the same.

Replicas moving between the directories of one broker (AlterReplicaLogDirs, a plan's
``log_dirs``) are throttled by the same rate: ``replica.alter.log.dirs.io.max.bytes.per.second``
on the brokers where they move, set before the moves are asked (:meth:`ThrottleKeeper.sync_log_dirs`).

Only the moving replicas are throttled: the other partitions of those brokers replicate at full
speed. :class:`ThrottleKeeper` recomputes these values whenever the reassignments in flight
change (a finished move stops being throttled; a new rate reaches every broker already set),
sends only what changed, and writes the brokers and topics it touches to the state file
*before* sending, so that ``--cleanup-throttles`` finds them after a ``kill -9``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from kafka_replica_assignor.planner.execution.executor_schedule import Reassignment
from kafka_replica_assignor.planner.execution.executor_state import ExecutionState

__all__ = ["BROKER_RATES", "BROKER_THROTTLES", "LOG_DIR_RATE", "TOPIC_REPLICAS", "ConfigAdmin", "ThrottleKeeper", "Throttles", "clear_throttles",
           "throttles"]

LEADER_RATE = "leader.replication.throttled.rate"
FOLLOWER_RATE = "follower.replication.throttled.rate"
LEADER_REPLICAS = "leader.replication.throttled.replicas"
FOLLOWER_REPLICAS = "follower.replication.throttled.replicas"
LOG_DIR_RATE = "replica.alter.log.dirs.io.max.bytes.per.second"
BROKER_RATES = (LEADER_RATE, FOLLOWER_RATE)
#: what Kafka's tool removes from a broker (its BROKER_LEVEL_THROTTLES)
BROKER_THROTTLES = (*BROKER_RATES, LOG_DIR_RATE)
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


class ConfigAdmin(Protocol):
    def alter_configs(self, brokers: Mapping[int, Mapping[str, str | None]] = ...,
                      topics: Mapping[str, Mapping[str, str | None]] = ...) -> Mapping[str, str]: ...


class ThrottleKeeper:
    """The throttle configs one execution has set, kept equal to what its moves in flight need."""

    def __init__(self, cluster: ConfigAdmin, state: ExecutionState,
                 emit: Callable[[str, dict[str, Any]], None]) -> None:
        self.cluster = cluster
        self.state = state
        self.emit = emit
        self.topics: dict[str, tuple[str, str]] = {}    # topic -> (leader, follower) as set
        self.brokers: dict[int, int] = {}                # broker -> rate as set
        self.log_dirs: dict[int, int] = {}               # broker -> intra-broker rate as set

    def sync(self, in_flight: Iterable[Reassignment]) -> None:
        """Set what changed (nothing without a rate in the state); raise when Kafka refuses."""
        rate = self.state.throttle
        if rate is None:
            return
        self.sync_log_dirs(self.log_dirs)                # a new rate reaches them too
        wanted = throttles(in_flight)
        topics: dict[str, dict[str, str | None]] = {}
        for topic, configs in wanted.topic_configs().items():
            if self.topics.get(topic) != (configs[LEADER_REPLICAS], configs[FOLLOWER_REPLICAS]):
                topics[topic] = dict(configs)
        for topic in [t for t in self.topics if t not in wanted.leader]:
            topics[topic] = dict.fromkeys(TOPIC_REPLICAS)
        brokers = {b: dict.fromkeys(BROKER_RATES, str(rate))
                   for b in sorted(set(wanted.brokers) | set(self.brokers)) if self.brokers.get(b) != rate}
        if not topics and not brokers:
            return
        self.state.note_throttles(rate, brokers, topics)
        refused = self.cluster.alter_configs(brokers=brokers, topics=topics)
        if refused:
            raise RuntimeError("throttle configs refused: " + "; ".join(f"{k}: {v}" for k, v in sorted(refused.items())))
        for topic, change in topics.items():
            if change[LEADER_REPLICAS] is None:
                self.topics.pop(topic, None)
            else:
                self.topics[topic] = (str(change[LEADER_REPLICAS]), str(change[FOLLOWER_REPLICAS]))
        for b in brokers:
            self.brokers[b] = rate
        self.emit("throttles_set", {"rate": rate, "brokers": sorted(self.brokers), "topics": sorted(self.topics)})

    def sync_log_dirs(self, brokers: Iterable[int]) -> None:
        """``replica.alter.log.dirs.io.max.bytes.per.second`` at the rate on ``brokers`` (those
        with replicas moving between their own directories), as Kafka's tool sets it for
        ``--replica-alter-log-dirs-throttle``; nothing without a rate; raise when Kafka refuses."""
        rate = self.state.throttle
        if rate is None:
            return
        changes: dict[int, dict[str, str | None]] = {
            b: {LOG_DIR_RATE: str(rate)} for b in sorted(set(brokers)) if self.log_dirs.get(b) != rate}
        if not changes:
            return
        self.state.note_throttles(rate, changes, ())
        refused = self.cluster.alter_configs(brokers=changes)
        if refused:
            raise RuntimeError("throttle configs refused: " + "; ".join(f"{k}: {v}" for k, v in sorted(refused.items())))
        self.log_dirs.update(dict.fromkeys(changes, rate))
        self.emit("log_dir_throttles_set", {"rate": rate, "brokers": sorted(self.log_dirs)})

    def remove(self) -> None:
        clear_throttles(self.cluster, self.state)
        self.topics.clear()
        self.brokers.clear()
        self.log_dirs.clear()


def clear_throttles(cluster: ConfigAdmin, state: ExecutionState, brokers: Sequence[int] = (),
                    topics: Sequence[str] = ()) -> None:
    """Delete the replication throttles on the brokers and topics the state file names (and
    those given); the state file forgets them once Kafka accepted."""
    all_brokers = sorted(state.throttled_brokers | set(brokers))
    all_topics = sorted(state.throttled_topics | set(topics))
    if not all_brokers and not all_topics:
        return
    refused = cluster.alter_configs(brokers={b: dict.fromkeys(BROKER_THROTTLES) for b in all_brokers},
                                    topics={t: dict.fromkeys(TOPIC_REPLICAS) for t in all_topics})
    if refused:
        raise RuntimeError("removing throttles refused: " + "; ".join(f"{k}: {v}" for k, v in sorted(refused.items())))
    state.throttles_cleared()
