"""Shared by the tests of our server following the session's Kafka cluster: the server, Kafka's
own ClusterTool, a topic read back, a bounded wait."""

from __future__ import annotations

import gc
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from kafka_replica_assignor.protocol.cluster_reader import read_live_cluster
from scripts.kafka_cluster import KafkaCluster
from tests.servers import ServerThread

ROOT = Path(__file__).resolve().parents[2]
REFRESH_MS = 300


@pytest.fixture(autouse=True)
def refused_sockets() -> Any:
    """kafka-python 3.0.12 leaves the socket of a refused connection open (see the ``kafka``
    conftest); our server's live source, in this process, connects to stopped brokers on
    purpose. What is left is collected at the end of each test, under that test's warning
    filters, rather than at the end of the session, where no filter applies. Import it into a
    test module to use it."""
    yield
    gc.collect()


def follower(kafka: KafkaCluster, tmp_path: Path, bootstrap: str | None = None,
             **overrides: str) -> ServerThread:
    """Our server following ``bootstrap`` (the whole cluster by default), refreshing every
    :data:`REFRESH_MS`, with its own observed-broker store."""
    props = {"bootstrap.servers": bootstrap or kafka.bootstrap,
             "metadata.refresh.interval.ms": str(REFRESH_MS),
             "observed.brokers.path": str(tmp_path / f"observed-{time.monotonic_ns()}.db"),
             **{k.replace("_", "."): v for k, v in overrides.items()}}
    return ServerThread(props)


def source(server: ServerThread) -> Any:
    assert server.server.state is not None
    return server.server.state.source


def wait_for(predicate: Callable[[], Any], timeout: float = 60.0, what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout:.0f} s")
        time.sleep(0.05)


def others(kafka: KafkaCluster, *down: int) -> str:
    """The bootstrap address of the brokers not in ``down``."""
    return ",".join(n.address for n in kafka.nodes if n.node_id not in down)


def unregister(kafka: KafkaCluster, broker: int, *down: int) -> None:
    """Kafka's own ClusterTool: a stopped (fenced) broker is no longer registered."""
    out = kafka.tool("org.apache.kafka.tools.ClusterTool", "unregister", "--bootstrap-server",
                     others(kafka, broker, *down), "--id", str(broker))
    assert out.returncode == 0 and f"Broker {broker} is no longer registered" in out.stdout, out.stderr
    # the brokers answer DescribeCluster from their copy of the metadata: wait until it shows
    wait_for(lambda: broker not in {b.id for b in read_live_cluster(
        others(kafka, broker, *down), request_timeout_ms=20000).snapshot.brokers},
        what=f"broker {broker} gone from DescribeCluster")


def topic_state(kafka: KafkaCluster, topic: str, *down: int) -> dict[int, tuple[tuple[int, ...], int | None,
                                                                           tuple[int, ...]]]:
    """``{partition: (replicas, leader, isr)}`` as the cluster describes ``topic`` now."""
    read = read_live_cluster(others(kafka, *down), request_timeout_ms=20000)
    return {p.partition: (p.replicas, p.leader, p.isr or ()) for p in read.snapshot.partitions if p.topic == topic}


def cli(*args: str, timeout: float = 180.0) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kafka_replica_assignor.cli.main", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT)


def by_partition(reassignment: Mapping[str, Any]) -> dict[int, list[int]]:
    return {p["partition"]: p["replicas"] for p in reassignment["partitions"]}


def stop_watcher(process: subprocess.Popen[str]) -> str:
    """Stop a `replica-assignor watch` process as an operator does (SIGTERM): it exits 0."""
    process.terminate()
    try:
        _, err = process.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        process.kill()
        _, err = process.communicate()
    assert process.returncode == 0, err
    return err
