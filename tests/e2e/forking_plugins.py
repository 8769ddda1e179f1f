"""A plug-in that forks (``replica.assignor.class.name=tests.e2e.forking_plugins.ForkingAssignor``).

For ``FORK`` partitions it forks a child that holds every file descriptor of the worker
(the worker's socket included) and sleeps; the child writes its pid to the file named by
``FORKING_PLUGIN_PID_FILE``. The plug-in itself then hangs, so the request runs into its
``timeoutMs``. Any other request is placed like Kafka's default.
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Mapping, Sequence

from kafka_replica_assignor.assignors import ANONYMOUS, ClusterView, ReplicaAssignor
from kafka_replica_assignor.assignors.default import DefaultReplicaAssignor

FORK = 15
PID_FILE_VARIABLE = "FORKING_PLUGIN_PID_FILE"


class ForkingAssignor(ReplicaAssignor):
    def assign_replicas_to_brokers(self, topic_name: str | None, partitions: Sequence[int],
                                   replication_factor: int, cluster: ClusterView,
                                   principal: str = ANONYMOUS, *,
                                   rng: random.Random) -> Mapping[int, Sequence[int]]:
        if len(partitions) == FORK:
            pid = os.fork()
            if pid == 0:  # the child: keeps the worker's descriptors open and sleeps
                try:
                    with open(os.environ[PID_FILE_VARIABLE], "a") as out:
                        out.write(f"{os.getpid()}\n")
                    time.sleep(3600)
                finally:
                    os._exit(0)
            time.sleep(3600)
        return DefaultReplicaAssignor().assign_replicas_to_brokers(
            topic_name, partitions, replication_factor, cluster, principal, rng=rng)
