"""One Apache Kafka cluster for every ``kafka`` test of a session: node 0 a combined KRaft
controller and broker, brokers 1-4, racks on three multi-level paths, two log directories each,
all on 127.0.0.1 (scripts/kafka_cluster.py). A cluster that cannot be resolved or started fails
the tests with the one-line reason; a broker that dies during a test fails that test with its
last log lines. Every test removes the topics it creates (``topics`` fixture)."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator

import pytest

from scripts.kafka_cluster import ClusterError, KafkaCluster

#: node i gets RACKS[i % 3]: /dc1/zone-a holds nodes 0 and 3, /dc1/zone-b 1 and 4, /dc2/zone-a 2
RACKS = ("/dc1/zone-a", "/dc1/zone-b", "/dc2/zone-a")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "kafka" in item.path.parts:
            item.add_marker(pytest.mark.kafka)
            # kafka-python 3.0.12 leaves the socket of a failed connect open (kafka/net/inet.py);
            # these tests stop brokers on purpose, so clients fail to connect to them
            item.add_marker(pytest.mark.filterwarnings(
                "ignore:Exception ignored in.*socket.socket:pytest.PytestUnraisableExceptionWarning"))


@pytest.fixture(scope="session")
def kafka_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaCluster]:
    cluster = KafkaCluster(directory=tmp_path_factory.mktemp("kafka-cluster"), brokers=4, racks=RACKS)
    try:
        cluster.up(timeout=180)
    except ClusterError as exc:
        pytest.fail(f"Apache Kafka could not be started: {exc}", pytrace=False)
    try:
        yield cluster
    finally:
        cluster.down()


@pytest.fixture
def kafka(kafka_cluster: KafkaCluster, caplog: pytest.LogCaptureFixture) -> Iterator[KafkaCluster]:
    """The session's cluster, checked after the test: a broker that died is named with its log.
    A test that stops a broker restarts it itself (``restarted`` below)."""
    caplog.set_level(logging.CRITICAL, logger="kafka")
    yield kafka_cluster
    try:
        kafka_cluster.check()
    except ClusterError as exc:
        pytest.fail(str(exc), pytrace=False)


class Topics:
    """Unique topic names for one test, deleted at its end."""

    def __init__(self, cluster: KafkaCluster) -> None:
        self.cluster = cluster
        self.names: list[str] = []

    def name(self, stem: str = "t") -> str:
        name = f"{stem}-{uuid.uuid4().hex[:8]}"
        self.names.append(name)
        return name

    def delete(self) -> None:
        from kafka.admin import KafkaAdminClient

        if not self.names:
            return
        admin = KafkaAdminClient(bootstrap_servers=self.cluster.bootstrap, request_timeout_ms=30000)
        try:
            existing = set(admin.list_topics())
            doomed = [n for n in self.names if n in existing]
            if doomed:
                admin.delete_topics(doomed, timeout_ms=30000)
        finally:
            admin.close()


@pytest.fixture
def topics(kafka: KafkaCluster) -> Iterator[Topics]:
    made = Topics(kafka)
    yield made
    made.delete()


@pytest.fixture
def restarted(kafka: KafkaCluster) -> Iterator[list[int]]:
    """Broker ids a test stopped; started again and waited for after the test."""
    stopped: list[int] = []
    yield stopped
    for node_id in stopped:
        kafka.start_node(node_id)
    if stopped:
        kafka.wait_ready(timeout=120)
