"""Assignors for the security and isolation tests, loaded by dotted class path
(``replica.assignor.class.name=tests.e2e.security_plugins.<Class>``).

Each places like Kafka's default except for a few partition counts, where it misbehaves
in its own way. They run in the server's worker processes, so they can only report
through their answers.
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Sequence

from kafka_replica_assignor.assignors import ANONYMOUS, ClusterView, ReplicaAssignor, ReplicaAssignorError
from kafka_replica_assignor.assignors.default import DefaultReplicaAssignor

TRIGGER_PARTITIONS = 7
_DEFAULT = DefaultReplicaAssignor()


class _Triggered(ReplicaAssignor):
    def assign_replicas_to_brokers(self, topic_name: str | None, partitions: Sequence[int],
                                   replication_factor: int, cluster: ClusterView,
                                   principal: str = ANONYMOUS, *, rng: random.Random):
        if len(partitions) == TRIGGER_PARTITIONS:
            return self.misbehave(partitions, replication_factor, cluster, principal)
        return _DEFAULT.assign_replicas_to_brokers(topic_name, partitions, replication_factor, cluster,
                                                   principal, rng=rng)

    def misbehave(self, partitions, replication_factor, cluster, principal):
        raise NotImplementedError


class PrincipalEchoAssignor(_Triggered):
    """Refuses the trigger request with a message naming the principal it was given."""

    def misbehave(self, partitions, replication_factor, cluster, principal):
        raise ReplicaAssignorError(f"principal=<{principal}>")


# MisbehavingAssignor: the partition count of a request picks what goes wrong
SPIN, SLEEP, HUGE_OUTPUT, MEMORY_HOG, CRASH, RAISE = 8, 9, 10, 11, 13, 14


class MisbehavingAssignor(ReplicaAssignor):
    """Kafka's default placement, except for these partition counts:

    - ``SPIN``: a pure-Python infinite loop (holds its interpreter's GIL forever);
    - ``SLEEP``: hangs in a blocking call;
    - ``HUGE_OUTPUT``: answers with ten million partitions;
    - ``MEMORY_HOG``: allocates without bound;
    - ``CRASH``: takes its whole process down, as a crashing native extension would;
    - ``RAISE``: an ordinary bug (an exception).
    """

    def assign_replicas_to_brokers(self, topic_name, partitions, replication_factor, cluster,
                                   principal=ANONYMOUS, *, rng):
        n = len(partitions)
        if n == SPIN:
            count = 0
            while True:
                count += 1
        if n == SLEEP:
            time.sleep(3600)
        if n == HUGE_OUTPUT:
            brokers = list(cluster.broker_ids)[:replication_factor]
            return {p: list(brokers) for p in range(10_000_000)}
        if n == MEMORY_HOG:
            hoard = []
            while True:
                hoard.append(bytearray(64 * 1024 * 1024))
        if n == CRASH:
            os._exit(3)
        if n == RAISE:
            raise ZeroDivisionError("a bug in the plug-in")
        return _DEFAULT.assign_replicas_to_brokers(topic_name, partitions, replication_factor, cluster,
                                                   principal, rng=rng)


class SlowAssignor(ReplicaAssignor):
    """Correct, but takes :attr:`DELAY_S` for every request."""

    DELAY_S = 0.25

    def assign_replicas_to_brokers(self, topic_name, partitions, replication_factor, cluster,
                                   principal=ANONYMOUS, *, rng):
        time.sleep(self.DELAY_S)
        return _DEFAULT.assign_replicas_to_brokers(topic_name, partitions, replication_factor, cluster,
                                                   principal, rng=rng)
