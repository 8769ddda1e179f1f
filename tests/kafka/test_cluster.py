"""The cluster itself, as scripts/kafka-cluster.sh starts it: every node registered and
unfenced on loopback with its rack and two log directories; Kafka's own tools run on it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

from kafka.admin import KafkaAdminClient

from scripts.kafka_cluster import POM, REPO, KafkaCluster, kafka_version
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


def test_a_corrupt_jar_cache_is_one_line_and_exit_1(kafka: KafkaCluster, tmp_path) -> None:
    """`kafka-cluster.sh up` on a cache whose stamp names a jar that is gone: one line, exit 1,
    nothing started."""
    assert kafka.lib is not None
    cache = tmp_path / "cache"
    shutil.copytree(kafka.lib.parent, cache / kafka_version(POM))
    next((cache / kafka_version(POM) / "lib").glob("kafka-clients-*.jar")).unlink()
    proc = subprocess.run([sys.executable, str(REPO / "scripts" / "kafka_cluster.py"), "up", "--dir",
                           str(tmp_path / "cluster")], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "KAFKA_CACHE_DIR": str(cache)})
    assert proc.returncode == 1
    [line] = proc.stderr.splitlines()
    assert line.startswith("kafka-cluster: cannot resolve Apache Kafka from Maven Central: the Kafka jar cache")
    assert "corrupt (missing kafka-clients-" in line
    assert not (tmp_path / "cluster" / "cluster.json").exists()
