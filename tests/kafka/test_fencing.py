"""Fenced brokers on Apache Kafka 4.3.1 (assignors/fencing.py): brokers 3 and 4 stop; broker 4 is
unregistered with Kafka's own ClusterTool, broker 3 stays registered and fenced. That is the
scenario of the report: three unfenced brokers (0, 1, 2) and one fenced (3).

Every assignor, built-in or plug-in, through our server following the cluster and the ``assign``
command as an operator runs it: with a replication factor of 3 broker 3 takes nothing; with 4 it
is in every partition, never first. Kafka accepts such a topic, led by the brokers we named first.
The server's ``/metrics`` shows the cluster it follows: 4 alive brokers, 1 fenced, 1 offline."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from scripts.kafka_cluster import KafkaCluster
from tests.kafka.conftest import Topics
from tests.kafka.following import (
    by_partition,
    cli,
    follower,
    refused_sockets,  # noqa: F401 - autouse fixture
    source,
    topic_state,
    unregister,
    wait_for,
)

FENCED, GONE = 3, 4
ASSIGNORS = ("default", "striped", "multi-level", "multi-level-ring", "examples.least_loaded.LeastLoadedAssignor")


def cluster_samples(metrics_port: int) -> dict[str, float]:
    with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=10) as response:
        text = response.read().decode()
    return {s.name: s.value for family in text_string_to_metric_families(text) for s in family.samples
            if s.name.startswith("replica_assignor_cluster_")}


def assign(bootstrap: str, rf: int) -> dict[int, list[int]]:
    done = cli("assign", "--bootstrap-server", bootstrap, "--partitions", "8", "--replication-factor", str(rf))
    assert done.returncode == 0, done.stderr
    return by_partition(json.loads(done.stdout))


def test_a_fenced_broker_is_used_only_where_no_unfenced_one_can_and_never_first(
        kafka: KafkaCluster, topics: Topics, restarted: list[int], tmp_path: Path) -> None:
    topic = topics.name("fenced-rf4")
    with follower(kafka, tmp_path, metrics_listener="http://127.0.0.1:0") as watcher:
        assert source(watcher).view().broker_ids == (0, 1, 2, 3, 4)
        for broker in (FENCED, GONE):
            kafka.stop_node(broker)
            restarted.append(broker)
        for broker in (FENCED, GONE):
            kafka.wait_fenced(broker)
        unregister(kafka, GONE, FENCED, GONE)
        wait_for(lambda: (v := source(watcher).view()).fenced == {FENCED} and [b.id for b in v.offline] == [GONE],
                 what="broker 3 fenced, broker 4 offline")
        assert source(watcher).view().broker_ids == (0, 1, 2, 3)
        assert source(watcher).describe()["fenced"] == [FENCED]
        figures = cluster_samples(watcher.metrics_port)
        assert {k: figures[k] for k in ("replica_assignor_cluster_alive_brokers",
                                        "replica_assignor_cluster_fenced_brokers",
                                        "replica_assignor_cluster_offline_brokers")} == {
            "replica_assignor_cluster_alive_brokers": 4, "replica_assignor_cluster_fenced_brokers": 1,
            "replica_assignor_cluster_offline_brokers": 1}
        assert figures["replica_assignor_cluster_refreshes_total"] >= 2
        assert 0 <= figures["replica_assignor_cluster_view_age_seconds"] < 30

        for name in ASSIGNORS:
            with follower(kafka, tmp_path, replica_assignor_class_name=name) as server:
                wait_for(lambda server=server: source(server).view().fenced == {FENCED}, what="broker 3 fenced")
                rf3 = assign(server.bootstrap, 3)
                assert sorted(rf3) == list(range(8)), (name, rf3)
                for p, replicas in rf3.items():  # the three unfenced brokers are enough: 3 takes nothing
                    assert sorted(replicas) == [0, 1, 2], (name, p, replicas)
                rf4 = assign(server.bootstrap, 4)
                for p, replicas in rf4.items():  # needed by every partition, never first
                    assert sorted(replicas) == [0, 1, 2, FENCED] and replicas[0] != FENCED, (name, p, replicas)

        # Kafka accepts the RF 4 answer: a replica on the fenced broker, led by the first named
        with follower(kafka, tmp_path) as server:
            created = cli("create-topic", "--bootstrap-server", kafka.bootstrap, "--assignor", server.bootstrap,
                          "--topic", topic, "--partitions", "8", "--replication-factor", "4")
            assert created.returncode == 0, created.stderr
            placed = by_partition(json.loads(created.stdout))
        state = wait_for(lambda: (s := topic_state(kafka, topic, FENCED, GONE)) and len(s) == 8 and all(
            s[p][1] == placed[p][0] for p in s) and s, what="the topic led by the first replicas")
        for p, (replicas, leader, isr) in state.items():
            assert list(replicas) == placed[p] and leader != FENCED and FENCED not in isr, (p, replicas, leader)
