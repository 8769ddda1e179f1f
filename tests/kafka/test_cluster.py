"""The cluster itself, as scripts/kafka-cluster.sh starts it: every node registered and
unfenced on loopback with its rack and two log directories; Kafka's own tools run on it."""

from __future__ import annotations

import json

from kafka.admin import KafkaAdminClient

from scripts.kafka_cluster import KafkaCluster
from tests.kafka.conftest import RACKS


def test_every_broker_registered_with_its_rack_on_loopback(kafka: KafkaCluster) -> None:
    admin = KafkaAdminClient(bootstrap_servers=kafka.bootstrap, request_timeout_ms=10000)
    try:
        brokers = admin.describe_cluster()["brokers"]
    finally:
        admin.close()
    got = {b["broker_id"]: (b["host"], b["rack"], b["is_fenced"]) for b in brokers}
    assert got == {i: ("127.0.0.1", RACKS[i % 3], False) for i in range(5)}


def test_kafka_log_dirs_tool_sees_two_directories_per_broker(kafka: KafkaCluster) -> None:
    out = kafka.tool("org.apache.kafka.tools.LogDirsCommand", "--bootstrap-server", kafka.bootstrap,
                     "--describe", "--broker-list", "0,1,2,3,4")
    assert out.returncode == 0, out.stderr
    answer = json.loads(out.stdout.strip().splitlines()[-1])
    dirs = {b["broker"]: sorted(d["logDir"] for d in b["logDirs"]) for b in answer["brokers"]}
    assert dirs == {i: sorted(str(d) for d in kafka.log_dirs(i)) for i in range(5)}
