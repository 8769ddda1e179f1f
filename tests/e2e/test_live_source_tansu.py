"""The live cluster reader and the server's live metadata source against a real Kafka-protocol
broker (Tansu: node 111, no rack).

The reader (``kafka_replica_assignor.protocol.cluster_reader``) reads Tansu's topics for the planner and the CLI; Tansu
does not support DescribeLogDirs, so a read with sizes degrades: every size None, and a note
saying so (``balance --bootstrap-server`` prints it and plans all the same).

The rules of the server's source shown here (see ``kafka_replica_assignor.server.cluster_source``):

- a successful DescribeCluster gives the alive brokers; brokers observed before (in the store)
  but absent from it are offline;
- while the cluster is unreachable, each refresh fails, is logged as ``metadata_refresh_failed``
  and the last good view is kept (broker 111 stays alive in the view: an unreachable cluster is
  not evidence that its brokers are down);
- when the broker is back on the same port, the next refresh succeeds and the view follows.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import threading
import time
import warnings

import pytest
from structlog.testing import capture_logs

from kafka_replica_assignor.assignors import BrokerMetadata
from kafka_replica_assignor.server.cluster_source import LiveClusterSource
from kafka_replica_assignor.server.observed import ObservedBrokerStore
from tests.tansu import TansuBroker, free_port

pytestmark = [
    pytest.mark.tansu,
    pytest.mark.filterwarnings("ignore:unclosed <socket.socket:ResourceWarning"),  # see below
]


@pytest.fixture(autouse=True)
def refused_sockets(caplog):
    """kafka-python 3.0.12 leaves the socket of a refused connection open (kafka/net/inet.py,
    ``sock_connect``); the garbage collector closes it with a ResourceWarning, ignored in this
    module. Its error log records would keep the socket alive (through the exception's
    traceback) past the end of the test, so kafka-python is quieted, and what is left is
    collected here rather than in whatever test runs next."""
    caplog.set_level(logging.CRITICAL, logger="kafka")
    yield
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "unclosed <socket.socket", ResourceWarning)
        gc.collect()


def kafka_io_threads() -> int:
    return sum(t.name.startswith("kafka-io") for t in threading.enumerate())


@pytest.fixture
def store(tmp_path):
    with ObservedBrokerStore(tmp_path / "observed.db") as store:
        yield store


async def wait_until(condition, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not reached in time"
        await asyncio.sleep(0.02)


async def test_view_follows_tansu_stopping_and_starting(tansu, store):
    store.record([BrokerMetadata(7, None)], now=1.0)  # seen in an earlier life of the cluster
    threads_before = kafka_io_threads()
    source = LiveClusterSource(tansu.bootstrap, 3_600_000, store, request_timeout_ms=1000)
    with capture_logs() as logs:
        await source.start()
    view = source.view()
    assert view.brokers == (BrokerMetadata(111, None),)
    assert view.offline == (BrokerMetadata(7, None),)  # observed before, not in the describe
    seen = {b.id: b for b in store.list()}
    assert (seen[111].host, seen[111].port) == ("127.0.0.1", tansu.port)
    first_seen = seen[111].last_seen
    assert [e for e in logs if e["event"] == "cluster_view_changed"] == [
        {"event": "cluster_view_changed", "log_level": "info", "source": "live",
         "alive": [111], "offline": [7], "fenced": []},
    ]

    await asyncio.to_thread(tansu.stop)
    with capture_logs() as logs:
        assert await source.refresh() is False  # the client's connection is gone
        assert await source.refresh() is False  # a fresh client cannot bootstrap
    failures = [e for e in logs if e["event"] == "metadata_refresh_failed"]
    assert [(e["log_level"], e["source"], e["consecutive_failures"]) for e in failures] == [
        ("warning", "live", 1), ("warning", "live", 2)]
    assert all(e["error"] for e in failures)
    assert source.view() is view  # the last good view is kept
    state = source.describe()
    assert state["consecutive_failures"] == 2 and state["last_error"] == failures[-1]["error"]
    assert state["alive"] == [111] and state["offline"] == [7]

    await asyncio.to_thread(tansu.start)  # the same port again
    assert await source.refresh() is True
    assert source.view().brokers == (BrokerMetadata(111, None),)
    assert source.describe()["consecutive_failures"] == 0
    assert {b.id: b for b in store.list()}[111].last_seen > first_seen

    assert store.forget(7)  # decommissioned: placeholders stop standing for it
    assert await source.refresh() is True
    assert source.view().offline == ()

    await source.stop()
    assert kafka_io_threads() == threads_before


async def test_periodic_refresh_never_blocks_the_loop(tansu, store):
    source = LiveClusterSource(tansu.bootstrap, 50, store, request_timeout_ms=1000)
    await source.start()
    gaps: list[float] = []

    async def ticker() -> None:
        last = time.monotonic()
        while True:
            await asyncio.sleep(0.01)
            now = time.monotonic()
            gaps.append(now - last)
            last = now

    ticking = asyncio.create_task(ticker())
    try:
        await wait_until(lambda: source.describe()["refreshes"] >= 3)
        await asyncio.to_thread(tansu.stop)
        await wait_until(lambda: source.describe()["consecutive_failures"] >= 2)  # incl. a bootstrap timeout
        assert source.view().broker_ids == (111,)
        await asyncio.to_thread(tansu.start)
        await wait_until(lambda: source.describe()["consecutive_failures"] == 0)
        assert source.view().broker_ids == (111,)
    finally:
        ticking.cancel()
        await source.stop()
    assert max(gaps) < 0.5, f"the event loop stalled for {max(gaps):.3f} s"


async def test_cluster_down_at_start_then_up(store):
    store.record([BrokerMetadata(111, None), BrokerMetadata(5, "r1")], now=1.0)
    broker = TansuBroker(port=free_port())
    source = LiveClusterSource(broker.bootstrap, 3_600_000, store, request_timeout_ms=1000)
    with capture_logs() as logs:
        await source.start()  # does not raise: the server can start before the cluster
    assert [e["event"] for e in logs] == ["metadata_refresh_failed", "cluster_health_changed"]
    assert logs[1]["healthy"] is False and source.health()[0] is False
    assert source.view().brokers == ()
    try:
        await asyncio.to_thread(broker.start)
        assert await source.refresh() is True
        assert source.view().broker_ids == (111,)
        assert source.view().offline == (BrokerMetadata(5, "r1"),)
    finally:
        await source.stop()
        await asyncio.to_thread(broker.stop)


def test_repair_command_reads_the_live_cluster(tansu, capsys):
    from kafka.admin import KafkaAdminClient

    from kafka_replica_assignor.cli.main import main as cli_main
    from kafka_replica_assignor.protocol.cluster_reader import read_live_cluster

    with KafkaAdminClient(bootstrap_servers=tansu.bootstrap, request_timeout_ms=5000) as admin:
        admin.create_topics({"orders": {"num_partitions": 2, "replication_factor": 1}})
    read = read_live_cluster(tansu.bootstrap, request_timeout_ms=5000)
    snapshot, fenced = read.snapshot, read.fenced
    assert fenced == frozenset()
    assert sorted((p.topic, p.partition, p.replicas, p.leader) for p in snapshot.partitions) == [
        ("orders", 0, (111,), 111), ("orders", 1, (111,), 111)]
    assert cli_main(["repair", "--bootstrap-server", tansu.bootstrap]) == 0
    out, err = capsys.readouterr()
    assert out == '{"version":1,"partitions":[]}\n'
    assert err.startswith("replica-assignor repair: 0 partition(s) repaired")

    tansu.stop()
    assert cli_main(["repair", "--bootstrap-server", tansu.bootstrap, "--timeout-ms", "500"]) == 1
    out, err = capsys.readouterr()
    assert out == "" and len(err.splitlines()) == 1
    assert err.startswith("replica-assignor repair: error:") and "bootstrap" in err


def test_sizes_degrade_on_a_cluster_without_describe_log_dirs(tansu, tmp_path, capsys):
    """Tansu answers ApiVersions without DescribeLogDirs (api key 35): the read with sizes keeps
    the topology, leaves every size None and says why; ``balance`` prints that as a note."""
    from kafka.admin import KafkaAdminClient, NewTopic

    from kafka_replica_assignor.cli.main import main as cli_main
    from kafka_replica_assignor.protocol.cluster_reader import read_live_cluster

    with KafkaAdminClient(bootstrap_servers=tansu.bootstrap, request_timeout_ms=5000) as admin:
        admin.create_topics([NewTopic("orders", 2, 1)])
    read = read_live_cluster(tansu.bootstrap, request_timeout_ms=5000, with_sizes=True)
    assert [(p.topic, p.partition, p.replicas, p.size_bytes) for p in read.snapshot.partitions] == [
        ("orders", 0, (111,), None), ("orders", 1, (111,), None)]
    assert read.sizes_note == "partition sizes unknown: the cluster does not support DescribeLogDirs"
    assert read.left_out == () and read.fenced == frozenset()

    out = tmp_path / "plan"
    assert cli_main(["balance", "--bootstrap-server", tansu.bootstrap, "--mode", "replica",
                     "--no-charts", "--out", str(out)]) == 0
    stdout, stderr = capsys.readouterr()
    note, reminder = stderr.splitlines()
    assert note == "note: partition sizes unknown: the cluster does not support DescribeLogDirs"
    assert reminder.startswith("before executing, check that nothing moved since: replica-assignor verify-plan")
    assert stdout.startswith("0 replica move(s)")
    assert (out / "reassignment.json").exists()
