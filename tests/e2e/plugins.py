"""Misbehaving assignors for the plug-in end-to-end tests, loaded by dotted class path
(``replica.assignor.class.name=tests.e2e.plugins.<Class>``).

Each one misbehaves only when asked for exactly :data:`TRIGGER_PARTITIONS` partitions and
otherwise places like Kafka's default, so a test can show that the request after a bad
one is served normally by the same server over the same connection.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Sequence

from kafka_replica_assignor.assignors import (
    ANONYMOUS,
    ClusterView,
    InvalidReplicationFactorError,
    ReplicaAssignor,
    ReplicaAssignorError,
)
from kafka_replica_assignor.assignors.default import DefaultReplicaAssignor

TRIGGER_PARTITIONS = 7
"""The partition count that makes every assignor here misbehave."""

_DEFAULT = DefaultReplicaAssignor()


class _Misbehaving(ReplicaAssignor):
    """Kafka's default placement, except for the trigger request."""

    def assign_replicas_to_brokers(self, topic_name: str | None, partitions: Sequence[int],
                                   replication_factor: int, cluster: ClusterView,
                                   principal: str = ANONYMOUS, *, rng: random.Random):
        good = _DEFAULT.assign_replicas_to_brokers(topic_name, partitions, replication_factor, cluster,
                                                   principal, rng=rng)
        if len(partitions) != TRIGGER_PARTITIONS:
            return good
        return self.misbehave({p: list(r) for p, r in good.items()}, cluster)

    def misbehave(self, good: dict[int, list[int]], cluster: ClusterView):
        raise NotImplementedError


class RaisingAssignor(_Misbehaving):
    """A plug-in bug: an unexpected exception."""

    def misbehave(self, good, cluster):
        raise KeyError("rack table is empty")


class RefusingAssignor(_Misbehaving):
    """A deliberate refusal (KIP-660's ReplicaAssignorException) with its own message."""

    def misbehave(self, good, cluster):
        raise ReplicaAssignorError("no power domain left for partition 3")


class RefusingRfAssignor(_Misbehaving):
    """A refusal with one of Kafka's own errors: it keeps Kafka's error code."""

    def misbehave(self, good, cluster):
        raise InvalidReplicationFactorError("this assignor only places replication factor 2")


class HangingAssignor(_Misbehaving):
    """Never answers in time. The wait is bounded (``release`` or 10 s) so that no executor
    thread outlives the test session."""

    release = threading.Event()

    def misbehave(self, good, cluster):
        self.release.wait(10)
        return good


class SlowAssignor(ReplicaAssignor):
    """Correct, but takes ``DELAY_S`` for every request (graceful-shutdown tests)."""

    DELAY_S = 1.0

    def assign_replicas_to_brokers(self, topic_name, partitions, replication_factor, cluster,
                                   principal=ANONYMOUS, *, rng):
        time.sleep(self.DELAY_S)
        return _DEFAULT.assign_replicas_to_brokers(topic_name, partitions, replication_factor, cluster,
                                                   principal, rng=rng)


class SlowerAssignor(SlowAssignor):
    """Correct, but takes 2 s (bounded-shutdown tests)."""

    DELAY_S = 2.0


class DuplicateBrokerAssignor(_Misbehaving):
    """Partition 3 gets its leader twice."""

    def misbehave(self, good, cluster):
        good[3][1] = good[3][0]
        return good


class UnknownBrokerAssignor(_Misbehaving):
    """Partition 4 gets a broker the cluster view does not have."""

    def misbehave(self, good, cluster):
        good[4][-1] = max(cluster.broker_ids) + 100
        return good


class WrongPartitionsAssignor(_Misbehaving):
    """Answers for partitions 1..7 instead of 0..6."""

    def misbehave(self, good, cluster):
        return {p + 1: r for p, r in good.items()}


class WrongReplicationFactorAssignor(_Misbehaving):
    """Partition 2 is one replica short."""

    def misbehave(self, good, cluster):
        good[2] = good[2][:-1]
        return good


class GarbageAssignor(_Misbehaving):
    """Not a partition map at all."""

    def misbehave(self, good, cluster):
        return "0:1,2,3"


class GarbageReplicasAssignor(_Misbehaving):
    """A map, but partition 5's replicas are a string."""

    def misbehave(self, good, cluster):
        good[5] = "1,2,3"
        return good
