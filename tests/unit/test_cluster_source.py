"""Metadata sources: the snapshot file source, the merge with observed brokers, and the live
source over a stand-in admin client (the mapping of kafka-python's describe answers is tested in
``tests/unit/test_cluster_reader.py``; the live source itself runs against Tansu in
``tests/e2e/test_live_source_tansu.py``)."""

from __future__ import annotations

import asyncio
import gc
import json
import logging
import threading
import time

import pytest
from structlog.testing import capture_logs

from kafka_replica_assignor.assignors import BrokerMetadata, ClusterView
from kafka_replica_assignor.cluster.snapshot import ClusterSnapshot, SnapshotError
from kafka_replica_assignor.protocol.cluster_reader import open_admin_client
from kafka_replica_assignor.server.cluster_source import (
    ClusterFigures,
    LiveClusterSource,
    SnapshotSource,
    create_cluster_source,
    merge_observed,
    observed_offline,
)
from kafka_replica_assignor.server.observed import ObservedBroker, ObservedBrokerStore
from tests.tansu import free_port

B = BrokerMetadata

ROLLING = {
    "brokers": [
        {"id": 0, "rack": "a", "host": "h0", "port": 9092},
        {"id": 1, "rack": "b", "host": "h1", "port": 9092},
        {"id": 2, "rack": "c", "host": "h2", "port": 9092, "alive": False},
    ],
    "partitions": [{"topic": "t", "partition": 0, "replicas": [0, 1, 2]}],
}


class Clock:
    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def store(tmp_path):
    with ObservedBrokerStore(tmp_path / "observed.db") as store:
        yield store


def write(path, data) -> None:
    path.write_text(json.dumps(data))


async def test_snapshot_source_alive_and_offline(tmp_path):
    snap = tmp_path / "cluster.json"
    write(snap, ROLLING)
    source = SnapshotSource(snap)
    await source.start()
    view = source.view()
    assert view.brokers == (B(0, "a"), B(1, "b"))
    assert view.offline == (B(2, "c"),)
    assert dict(view.topic_assignment("t")) == {0: (0, 1, 2)}
    assert source.describe()["path"] == str(snap)
    await source.stop()


async def test_snapshot_source_records_alive_brokers_and_adds_stored_ones_as_offline(tmp_path, store):
    store.record([B(7, "d"), B(1, "old-rack")], now=5.0)
    snap = tmp_path / "cluster.json"
    write(snap, ROLLING)
    source = SnapshotSource(snap, store, clock=Clock(1000.0))
    await source.start()
    assert source.view().broker_ids == (0, 1)
    assert source.view().offline == (B(2, "c"), B(7, "d"))  # from the snapshot, from the store
    assert store.list() == [
        ObservedBroker(0, "a", "h0", 9092, 1000.0, 1000.0),
        ObservedBroker(1, "b", "h1", 9092, 5.0, 1000.0),  # seen before: first_seen kept
        ObservedBroker(7, "d", None, None, 5.0, 5.0),  # the not-alive broker 2 is not recorded
    ]
    store.forget(7)
    assert await source.refresh()
    assert source.view().offline == (B(2, "c"),)
    await source.stop()


async def test_snapshot_source_follows_the_file_and_keeps_the_last_good_view(tmp_path):
    snap = tmp_path / "cluster.json"
    write(snap, ROLLING)
    source = SnapshotSource(snap)
    await source.start()
    restarted = json.loads(json.dumps(ROLLING))
    restarted["brokers"][0]["alive"] = False  # rolling restart: broker 0 goes down...
    restarted["brokers"][2]["alive"] = True  # ...after broker 2 came back
    write(snap, restarted)
    with capture_logs() as logs:
        assert await source.refresh() is True
        snap.write_text("{not json")
        assert await source.refresh() is False
    assert source.view().broker_ids == (1, 2)
    assert source.view().offline == (B(0, "a"),)
    assert [e["event"] for e in logs] == ["cluster_view_changed", "metadata_refresh_failed"]
    assert logs[0]["alive"] == [1, 2] and logs[0]["offline"] == [0]
    assert logs[1]["source"] == "snapshot" and "not valid JSON" in logs[1]["error"]
    assert source.describe()["consecutive_failures"] == 1
    await source.stop()


async def test_snapshot_source_refuses_to_start_on_a_bad_file(tmp_path):
    with pytest.raises(FileNotFoundError):
        await SnapshotSource(tmp_path / "missing.json").start()
    bad = tmp_path / "bad.json"
    write(bad, {"brokers": [{"id": "zero"}]})
    with pytest.raises(SnapshotError, match=r"brokers\[0\]\.id must be an integer"):
        await SnapshotSource(bad).start()


async def test_snapshot_source_refreshes_on_its_interval(tmp_path):
    snap = tmp_path / "cluster.json"
    write(snap, ROLLING)
    source = SnapshotSource(snap, refresh_interval_ms=20)
    await source.start()
    grown = json.loads(json.dumps(ROLLING))
    grown["brokers"].append({"id": 3, "rack": "a"})
    write(snap, grown)
    deadline = time.monotonic() + 10
    while source.view().broker_ids != (0, 1, 3):
        assert time.monotonic() < deadline, "the periodic refresh did not pick up the change"
        await asyncio.sleep(0.01)
    await source.stop()
    refreshes = source.describe()["refreshes"]
    await asyncio.sleep(0.1)
    assert source.describe()["refreshes"] == refreshes  # stopped means stopped


def test_merge_observed_prefers_the_snapshot_and_keeps_fenced_alive_only():
    snapshot = ClusterSnapshot.from_dict(ROLLING)
    observed = [ObservedBroker(2, "zzz", None, None, 0, 0), ObservedBroker(9, None, None, None, 0, 0)]
    view = merge_observed(snapshot, observed, fenced={1, 2, 9})
    assert view == ClusterView(brokers=(B(0, "a"), B(1, "b")), fenced=frozenset({1}),
                               offline=(B(2, "c"), B(9)), topics={"t": {0: (0, 1, 2)}})
    extended = observed_offline(snapshot, observed)
    assert [(b.id, b.rack, b.alive) for b in extended.brokers] == [
        (0, "a", True), (1, "b", True), (2, "c", False), (9, None, False)]


class Admin:
    """A stand-in for kafka-python's admin client, answering what ``topics`` holds."""

    def __init__(self, topics: list[dict]) -> None:
        self.topics = topics

    def describe_cluster(self) -> dict:
        return {"brokers": [{"broker_id": 1, "host": "h1", "port": 9092, "rack": "a"},
                            {"broker_id": 2, "host": "h2", "port": 9092, "rack": "b", "is_fenced": True}]}

    def describe_topics(self) -> list[dict]:
        return self.topics

    def close(self) -> None:
        return None


async def test_live_source_keeps_fenced_brokers_and_logs_what_is_left_out():
    bad = {"name": "new", "error_code": 5, "partitions": []}
    good = {"name": "t", "error_code": 0, "partitions": [
        {"partition_index": 0, "leader_id": 1, "replica_nodes": [1, 2], "isr_nodes": [1], "error_code": 0}]}
    admin = Admin([good, bad])
    source = LiveClusterSource("127.0.0.1:9092", 3_600_000, None)
    source._admin = admin  # already connected
    with capture_logs() as logs:
        await source.start()
        assert await source.refresh() is True  # the same entries left out: logged once
        admin.topics = [good]
        assert await source.refresh() is True
        admin.topics = [good, bad]
        assert await source.refresh() is True
    view = source.view()
    assert view == ClusterView(brokers=(B(1, "a"), B(2, "b")), fenced=frozenset({2}),
                               topics={"t": {0: (1, 2)}})
    assert [e for e in logs if e["event"] == "metadata_entries_left_out"] == 2 * [
        {"event": "metadata_entries_left_out", "log_level": "warning", "source": "live",
         "left_out": ["topic 'new': LeaderNotAvailableError (5)"]}]
    await source.stop()


# kafka-python 3.0.12 leaves the socket of a refused connection open (kafka/net/inet.py,
# sock_connect): the garbage collector closes it with a ResourceWarning, collected in the test
@pytest.mark.filterwarnings("ignore:unclosed <socket.socket:ResourceWarning")
def test_a_failed_bootstrap_leaves_no_thread_behind(caplog):
    caplog.set_level(logging.CRITICAL, logger="kafka")  # its records would keep the sockets alive
    before = {t.ident for t in threading.enumerate()}
    for _ in range(3):
        with pytest.raises(Exception, match="bootstrap"):
            open_admin_client(f"127.0.0.1:{free_port()}", 200)
    time.sleep(0.2)
    assert {t.name for t in threading.enumerate() if t.ident not in before} == set()
    gc.collect()


def test_interval_must_be_positive(store):
    with pytest.raises(ValueError, match="refresh interval"):
        LiveClusterSource("127.0.0.1:9092", 0, store)


async def test_create_cluster_source_by_configuration(tmp_path):
    snap = tmp_path / "cluster.json"
    write(snap, ROLLING)
    observed = tmp_path / "observed.db"
    source = create_cluster_source(cluster_metadata_file=str(snap), bootstrap_servers=None,
                                   refresh_interval_ms=30_000, observed_brokers_path=str(observed))
    assert isinstance(source, SnapshotSource)
    await source.start()
    assert source.describe()["observed_store"] == str(observed)
    assert observed.with_name("observed.db-wal").exists()
    await source.stop()
    assert not observed.with_name("observed.db-wal").exists()  # the last connection closed
    with ObservedBrokerStore(observed, create=False) as store:  # written, and closed by stop()
        assert [b.id for b in store.list()] == [0, 1]

    live = create_cluster_source(cluster_metadata_file=str(snap), bootstrap_servers="127.0.0.1:9092",
                                 refresh_interval_ms=30_000, observed_brokers_path=None)
    assert isinstance(live, LiveClusterSource)
    assert live.describe()["bootstrap_servers"] == "127.0.0.1:9092"
    await live.stop()  # never started: nothing to do


class FailingAdmin(Admin):
    """The stand-in admin client while the cluster does not answer."""

    def describe_cluster(self) -> dict:
        raise ConnectionError("no broker answered")


async def test_figures_count_the_brokers_the_failures_and_the_view_age():
    clock = Clock(1000.0)
    source = LiveClusterSource("127.0.0.1:9092", 3_600_000, None, clock=clock)
    assert source.figures().view_age_seconds is None  # no good view yet
    source._admin = Admin([])  # already connected: broker 1 unfenced, broker 2 fenced
    await source.start()
    assert source.figures() == ClusterFigures(alive=2, fenced=1, offline=0, refreshes=1, refresh_failures=0,
                                              view_age_seconds=0.0)
    clock.now += 7.5
    with capture_logs():
        for _ in range(2):
            source._admin = FailingAdmin([])  # a failed client is dropped: put the stand-in back
            assert await source.refresh() is False
    # the last good view is kept, and its age grows
    assert source.figures() == ClusterFigures(alive=2, fenced=1, offline=0, refreshes=3, refresh_failures=2,
                                              view_age_seconds=7.5)
    source._admin = Admin([])
    clock.now += 1.0
    assert await source.refresh() is True
    assert source.figures().view_age_seconds == 0.0 and source.figures().refresh_failures == 2
    await source.stop()


async def test_figures_of_a_snapshot_source_count_offline_brokers(tmp_path):
    snap = tmp_path / "cluster.json"
    write(snap, ROLLING)
    clock = Clock(50.0)
    source = SnapshotSource(snap, clock=clock)
    await source.start()
    clock.now += 2.0
    assert source.figures() == ClusterFigures(alive=2, fenced=0, offline=1, refreshes=1, refresh_failures=0,
                                              view_age_seconds=2.0)
    await source.stop()
