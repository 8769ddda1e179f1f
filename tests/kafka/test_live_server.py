"""Our server following Apache Kafka 4.3.1 (``bootstrap.servers``): racks from ``broker.rack``,
a stopped broker seen within the refresh interval, placeholders once it is unregistered, and
health that follows the cluster.

On KRaft a stopped broker stays registered, fenced: the server sees it fenced at the next
refresh (never a leader; new replicas only where no unfenced broker can), and Kafka accepts
replicas on a fenced broker in CreateTopics, which catch up when it returns. Once Kafka's own
ClusterTool unregisters it, the broker is gone from DescribeCluster: the server's observed store
keeps it as offline, and with ``enable.under.replicated.topic.creation=true`` its replicas are
answered as placeholders (test_under_replicated.py applies such an answer).

"Within the refresh interval" is counted in refreshes, not seconds: once Kafka itself stops
listing a broker as unfenced, the server's view shows it by the second refresh that starts after
(one may be in flight when Kafka changes)."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from kafka_replica_assignor.protocol.client import ReplicaAssignorAdminClient
from scripts.kafka_cluster import KafkaCluster
from tests.kafka.conftest import RACKS, Topics
from tests.kafka.following import (
    REFRESH_MS,
    cli,
    follower,
    refused_sockets,  # noqa: F401 - autouse fixture
    source,
    topic_state,
    unregister,
    wait_for,
)

STOPPED = 4  # /dc1/zone-b, beside broker 1


def refreshes(server: Any) -> int:
    return int(source(server).describe()["refreshes"])


def seen_within_two_refreshes(server: Any, condition: Any, what: str) -> None:
    before = refreshes(server)
    wait_for(lambda: condition(source(server).view()), timeout=30, what=what)
    assert refreshes(server) - before <= 2, f"{what}: seen after {refreshes(server) - before} refreshes"


def health(server: Any) -> tuple[int, dict]:
    url = f"http://127.0.0.1:{server.metrics_port}/health"
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def health_check(*overrides: str) -> subprocess.CompletedProcess[str]:
    args = [sys.executable, "-m", "kafka_replica_assignor.server.main", "--health-check"]
    for item in overrides:
        args += ["--override", item]
    return subprocess.run(args, capture_output=True, text=True, timeout=60)


def test_racks_come_from_broker_rack(kafka: KafkaCluster, tmp_path: Path) -> None:
    with follower(kafka, tmp_path, replica_assignor_class_name="multi-level",
                  metrics_listener="http://127.0.0.1:0") as server:
        view = source(server).view()
        assert {b.id: b.rack for b in view.brokers} == {i: RACKS[i % 3] for i in range(5)}
        assert view.offline == () and view.fenced == frozenset()
        assert server.server.started_fields["racks"] == 3
        status, body = health(server)
        assert status == 200 and body["cluster"] == "5 alive broker(s) in the live cluster view"
        with ReplicaAssignorAdminClient(server.bootstrap) as admin:
            placed = admin.create_replica_assignment(12, 3).assignments()
    for p, replicas in placed.items():  # multi-level: both data centres, then both zones of dc1
        assert {RACKS[b % 3] for b in replicas} == set(RACKS), (p, replicas)


def test_stopped_broker_fenced_then_unregistered_then_back(
        kafka: KafkaCluster, topics: Topics, restarted: list[int], tmp_path: Path) -> None:
    address = kafka.node(STOPPED).address
    rf5 = topics.name("fenced-follower")
    with follower(kafka, tmp_path, enable_under_replicated_topic_creation="true",
                  min_insync_replicas="2", metrics_listener="http://127.0.0.1:0") as server:
        assert source(server).view().broker_ids == (0, 1, 2, 3, 4)
        kafka.stop_node(STOPPED)
        restarted.append(STOPPED)
        kafka.wait_fenced(STOPPED)
        seen_within_two_refreshes(server, lambda v: STOPPED in v.fenced, "broker 4 fenced")
        assert health(server)[0] == 200  # four unfenced brokers answer

        # a server following only the stopped broker: unreachable, so not healthy, and says why
        with follower(kafka, tmp_path, bootstrap=address, metrics_listener="http://127.0.0.1:0") as lonely:
            status, body = health(lonely)
            assert status == 503 and "did not answer" in body["cluster"]
            check = health_check(f"metrics.listener=http://127.0.0.1:{lonely.metrics_port}")
            assert check.returncode == 1 and "answered 503" in check.stderr and "did not answer" in check.stderr
            over_kafka = health_check(f"listeners=PLAINTEXT://127.0.0.1:{lonely.port}", f"bootstrap.servers={address}")
            assert over_kafka.returncode == 1 and f"the live cluster {address} is unreachable" in over_kafka.stderr

            # fenced: never a leader; with RF 5 it takes the fifth replica, and Kafka accepts it
            created = cli("create-topic", "--bootstrap-server", kafka.bootstrap, "--assignor", server.bootstrap,
                          "--topic", rf5, "--partitions", "3", "--replication-factor", "5")
            assert created.returncode == 0, created.stderr
            for p, (replicas, leader, isr) in topic_state(kafka, rf5, STOPPED).items():
                assert sorted(replicas) == [0, 1, 2, 3, 4] and leader != STOPPED and STOPPED not in isr, p

            # unregistered: gone from DescribeCluster, offline in the view (the store remembers it)
            unregister(kafka, STOPPED)
            seen_within_two_refreshes(server, lambda v: [b.id for b in v.offline] == [STOPPED],
                                      "broker 4 offline")
            with ReplicaAssignorAdminClient(server.bootstrap) as admin:
                placed = admin.create_replica_assignment(6, 5).assignments()
            for p, replicas in placed.items():  # one placeholder where broker 4 would be
                assert sorted(replicas) == [-1, 0, 1, 2, 3] and replicas[0] >= 0, (p, replicas)

            kafka.start_node(STOPPED)
            kafka.wait_ready(timeout=120)
            restarted.clear()
            seen_within_two_refreshes(server, lambda v: STOPPED in v.broker_ids and not v.fenced
                                      and not v.offline, "broker 4 back")
            wait_for(lambda: health(lonely)[0] == 200, timeout=60, what="healthy once broker 4 answers")
            assert health(lonely)[1]["cluster"] == "5 alive broker(s) in the live cluster view"
            assert health_check(f"listeners=PLAINTEXT://127.0.0.1:{lonely.port}",
                                f"bootstrap.servers={address}").returncode == 0
    # the replicas Kafka accepted on the fenced broker caught up once it was back
    wait_for(lambda: all(sorted(isr) == [0, 1, 2, 3, 4] for _, _, isr in topic_state(kafka, rf5).values()),
             timeout=60, what="the RF 5 topic's ISR full")
    assert REFRESH_MS < 1000
