"""The one live-cluster reader (:mod:`kafka_replica_assignor.protocol.cluster_reader`): its rules for fenced brokers,
metadata errors and partition sizes, on kafka-python's answer dicts and a stand-in admin client
(the reader against a real broker runs in ``tests/e2e/test_live_source_tansu.py``)."""

from __future__ import annotations

import gc
import logging
import threading
import time

import kafka.errors as kafka_errors
import pytest
from kafka.protocol.admin import DescribeLogDirsResponse

from kafka_replica_assignor.assignors import BrokerMetadata, ClusterView
from kafka_replica_assignor.planner.replica_repair import expected_back, repair
from kafka_replica_assignor.protocol.cluster_reader import (
    ClusterRead,
    ClusterReadError,
    read_cluster,
    read_live_cluster,
    sizes_from_log_dirs,
    snapshot_from_metadata,
    snapshot_with_sizes,
)
from kafka_replica_assignor.server.cluster_source import merge_observed
from tests.tansu import free_port

B = BrokerMetadata

CLUSTER = {"cluster_id": "c", "controller_id": 1, "brokers": [
    {"broker_id": 3, "host": "h3", "port": 9094, "rack": ""},
    {"broker_id": 1, "host": "h1", "port": 9092, "rack": None},
    {"broker_id": 2, "host": "h2", "port": 9093, "rack": "r2", "is_fenced": True},
]}


def partition(index: int, replicas: list[int], leader: int = -1, error: int = 0) -> dict:
    return {"partition_index": index, "leader_id": leader, "replica_nodes": replicas,
            "isr_nodes": [r for r in replicas if r == leader], "error_code": error}


def test_snapshot_from_metadata():
    topics = [
        {"name": "t", "error_code": 0, "partitions": [
            {"partition_index": 1, "leader_id": -1, "replica_nodes": [2, 5], "isr_nodes": [],
             "error_code": 0},
            {"partition_index": 0, "leader_id": 1, "replica_nodes": [1, 2], "isr_nodes": [1, 2],
             "error_code": 0},
            {"partition_index": 2, "leader_id": 1, "replica_nodes": [], "isr_nodes": [], "error_code": 0},
        ]},
        {"name": "denied", "error_code": 29, "partitions": []},
    ]
    read = snapshot_from_metadata(CLUSTER, topics)
    assert read.fenced == frozenset({2})
    assert [(b.id, b.rack, b.alive, b.host, b.port) for b in read.snapshot.brokers] == [
        (1, None, True, "h1", 9092), (2, "r2", True, "h2", 9093), (3, None, True, "h3", 9094)]
    # sorted by (topic, partition), whatever order the broker answered in
    assert [(p.topic, p.partition, p.replicas, p.leader, p.isr) for p in read.snapshot.partitions] == [
        ("t", 0, (1, 2), 1, (1, 2)), ("t", 1, (2, 5), None, ())]
    assert read.left_out == ("t-2: no replicas", "topic 'denied': TopicAuthorizationFailedError (29)")
    assert read.sizes_note is None


# -- the one rule for fenced brokers ---------------------------------------------------------
def test_a_fenced_broker_is_registered_alive_and_reported_fenced():
    read = snapshot_from_metadata(CLUSTER, [{"name": "t", "error_code": 0,
                                             "partitions": [partition(0, [2, 1, 3], leader=1)]}])
    assert {b.id: b.alive for b in read.snapshot.brokers} == {1: True, 2: True, 3: True}
    assert read.fenced == frozenset({2})
    assert read.notes() == (
        "fenced broker(s) [2]: registered, listed alive, not to lead or take new replicas",)


def test_the_server_view_of_a_fenced_broker_is_unchanged():
    """A follower if needed, never a leader: the fenced broker is among the view's brokers and
    in ``fenced`` (what :class:`kafka_replica_assignor.assignors.model.ClusterView` and the assignors act on)."""
    read = snapshot_from_metadata(CLUSTER)
    assert merge_observed(read.snapshot, (), read.fenced) == ClusterView(
        brokers=(B(1), B(2, "r2"), B(3)), fenced=frozenset({2}))


def test_repair_keeps_the_replicas_of_a_fenced_broker():
    """Fenced is not dead: nothing on it is replaced (the planner and ``repair`` agree)."""
    read = snapshot_from_metadata(CLUSTER, [{"name": "t", "error_code": 0, "partitions": [
        partition(0, [2, 1], leader=1), partition(1, [1, 2], leader=1), partition(2, [3, 9])]}])
    plan = repair(read.snapshot, frozenset(), keep=expected_back(read.snapshot, frozenset()))
    assert plan.to_reassignment() == {"version": 1, "partitions": [
        {"topic": "t", "partition": 2, "replicas": [3, 2]}]}  # only the unknown broker 9 is replaced


def test_without_fenced_brokers_nothing_is_noted():
    cluster = {"brokers": [{"broker_id": 1, "host": "h", "port": 1, "rack": None, "is_fenced": False}]}
    read = snapshot_from_metadata(cluster)
    assert read.fenced == frozenset() and read.notes() == ()


# -- the one rule for errors -----------------------------------------------------------------
def test_availability_errors_keep_the_partition_with_its_replicas():
    topics = [{"name": "t", "error_code": 0, "partitions": [
        partition(0, [1, 2], error=kafka_errors.LeaderNotAvailableError.errno),
        partition(1, [2, 3], leader=2, error=kafka_errors.ReplicaNotAvailableError.errno),
        partition(2, [3, 1], leader=3, error=kafka_errors.ListenerNotFoundError.errno),
    ]}]
    read = snapshot_from_metadata(CLUSTER, topics)
    assert [(p.partition, p.replicas, p.leader) for p in read.snapshot.partitions] == [
        (0, (1, 2), None), (1, (2, 3), 2), (2, (3, 1), 3)]
    assert read.left_out == ()


def test_other_errors_leave_the_topic_or_partition_out_and_name_it():
    topics = [
        {"name": "t", "error_code": 0, "partitions": [
            partition(0, [1, 2], leader=1),
            partition(1, [1], error=kafka_errors.UnknownTopicOrPartitionError.errno),
            partition(2, [1, 1], leader=1),
        ]},
        {"name": "new", "error_code": kafka_errors.LeaderNotAvailableError.errno,
         "partitions": [partition(0, [1], leader=1)]},
        {"name": None, "error_code": kafka_errors.InvalidTopicError.errno, "partitions": []},
    ]
    read = snapshot_from_metadata(CLUSTER, topics)
    assert [(p.topic, p.partition) for p in read.snapshot.partitions] == [("t", 0)]
    assert read.left_out == (
        "t-1: UnknownTopicOrPartitionError (3)",
        "t-2: lists a broker twice: [1, 1]",
        "topic 'new': LeaderNotAvailableError (5)",
        "a topic without a name: InvalidTopicError (17)",
    )
    assert read.notes()[:2] == ("left out of the snapshot: t-1: UnknownTopicOrPartitionError (3)",
                                "left out of the snapshot: t-2: lists a broker twice: [1, 1]")


def test_a_broker_listed_twice_makes_the_read_fail():
    with pytest.raises(ClusterReadError, match=r"cluster metadata: duplicate broker ids: \[1\]"):
        snapshot_from_metadata({"brokers": [{"broker_id": 1}, {"node_id": 1}]})


# -- sizes -----------------------------------------------------------------------------------
def log_dirs(broker: int, *dirs: tuple[str, int, dict[tuple[str, int], int]], future: bool = False) -> dict:
    """kafka-python's ``describe_log_dirs()`` entry for one broker, decoded from real bytes."""
    result = DescribeLogDirsResponse.DescribeLogDirsResult
    topic = result.DescribeLogDirsTopic
    part = topic.DescribeLogDirsPartition
    results = []
    for path, error, sizes in dirs:
        by_topic: dict[str, list] = {}
        for (name, index), size in sizes.items():
            by_topic.setdefault(name, []).append(
                part(partition_index=index, partition_size=size, offset_lag=0, is_future_key=future))
        results.append(result(error_code=error, log_dir=path, total_bytes=-1, usable_bytes=-1,
                              topics=[topic(name=n, partitions=ps) for n, ps in by_topic.items()]))
    wire = DescribeLogDirsResponse(throttle_time_ms=0, error_code=0, results=results).encode(version=4)
    decoded = DescribeLogDirsResponse.decode(wire, version=4)
    return {"broker": broker, "log_dirs": [r.to_dict() for r in decoded.results]}


def test_a_partition_size_is_the_largest_over_replicas_and_log_dirs():
    answers = [
        log_dirs(1, ("/d1", 0, {("t", 0): 100, ("t", 1): 7}), ("/d2", 0, {("u", 0): 5})),
        log_dirs(2, ("/d1", 0, {("t", 0): 90, ("t", 1): 30})),
        log_dirs(3, ("/d1", kafka_errors.KafkaStorageError.errno, {("t", 0): 999})),  # skipped
        log_dirs(3, ("/d9", 0, {("u", 0): 6}), future=True),  # a future log counts like any copy
    ]
    assert sizes_from_log_dirs(answers) == {("t", 0): 100, ("t", 1): 30, ("u", 0): 6}


class Admin:
    """A stand-in for kafka-python's admin client: canned answers, calls recorded."""

    def __init__(self, log_dirs: list[dict] | Exception | None = None) -> None:
        self.log_dirs = log_dirs
        self.calls: list[tuple] = []

    def describe_cluster(self) -> dict:
        self.calls.append(("describe_cluster",))
        return CLUSTER

    def describe_topics(self) -> list[dict]:
        self.calls.append(("describe_topics",))
        return [{"name": "t", "error_code": 0, "partitions": [
            partition(1, [1, 2], leader=1), partition(0, [2, 3], leader=3)]}]

    def describe_log_dirs(self, topic_partitions: dict) -> list[dict]:
        self.calls.append(("describe_log_dirs", topic_partitions))
        if isinstance(self.log_dirs, Exception):
            raise self.log_dirs
        return self.log_dirs or []


def test_read_cluster_without_sizes_sends_no_describe_log_dirs():
    admin = Admin()
    read = read_cluster(admin)
    assert admin.calls == [("describe_cluster",), ("describe_topics",)]
    assert [p.size_bytes for p in read.snapshot.partitions] == [None, None]
    assert read.sizes_note is None
    admin = Admin()
    assert read_cluster(admin, include_topics=False, with_sizes=True).snapshot.partitions == ()
    assert admin.calls == [("describe_cluster",)]


def test_read_cluster_with_sizes():
    admin = Admin([log_dirs(1, ("/d", 0, {("t", 1): 40})), log_dirs(2, ("/d", 0, {("t", 1): 50, ("t", 0): 8}))])
    read = read_cluster(admin, with_sizes=True)
    assert admin.calls[-1] == ("describe_log_dirs", {"t": [0, 1]})  # the partitions Metadata described
    assert [(p.partition, p.size_bytes) for p in read.snapshot.partitions] == [(0, 8), (1, 50)]
    assert read.sizes_note is None


def test_partitions_no_log_dir_reports_keep_no_size_and_are_noted():
    read = read_cluster(Admin([log_dirs(2, ("/d", 0, {("t", 1): 50}))]), with_sizes=True)
    assert [(p.partition, p.size_bytes) for p in read.snapshot.partitions] == [(0, None), (1, 50)]
    assert read.sizes_note == ("partition sizes unknown for 1 of 2 partition(s): "
                               "no log directory reported them")


@pytest.mark.parametrize(("error", "note"), [
    (kafka_errors.IncompatibleBrokerVersion("no DescribeLogDirs"),
     "partition sizes unknown: the cluster does not support DescribeLogDirs"),
    (kafka_errors.KafkaTimeoutError("slow"),
     "partition sizes unknown: DescribeLogDirs failed: KafkaTimeoutError: KafkaTimeoutError: slow"),
])
def test_sizes_degrade_to_none_when_describe_log_dirs_fails(error, note):
    read = read_cluster(Admin(error), with_sizes=True)
    assert [p.size_bytes for p in read.snapshot.partitions] == [None, None]
    assert read.sizes_note == note
    assert read.notes()[-1] == note
    assert [(p.topic, p.partition, p.replicas) for p in read.snapshot.partitions] == [
        ("t", 0, (2, 3)), ("t", 1, (1, 2))]  # the topology is read all the same


def test_snapshot_with_sizes_sets_and_clears():
    read = snapshot_from_metadata(CLUSTER, [{"name": "t", "error_code": 0, "partitions": [
        partition(0, [1]), partition(1, [2])]}])
    sized = snapshot_with_sizes(read.snapshot, {("t", 0): 12, ("x", 0): 1})
    assert [p.size_bytes for p in sized.partitions] == [12, None]
    assert [p.size_bytes for p in snapshot_with_sizes(sized, {}).partitions] == [None, None]
    assert isinstance(read, ClusterRead)


# kafka-python 3.0.12 leaves the socket of a refused connection open (kafka/net/inet.py,
# sock_connect): the garbage collector closes it with a ResourceWarning, collected in the test
@pytest.mark.filterwarnings("ignore:unclosed <socket.socket:ResourceWarning")
def test_an_unreachable_cluster_is_one_read_error(caplog):
    caplog.set_level(logging.CRITICAL, logger="kafka")
    before = {t.ident for t in threading.enumerate()}
    port = free_port()
    with pytest.raises(ClusterReadError, match=rf"^cannot connect to 127\.0\.0\.1:{port}: \w+: .*bootstrap"):
        read_live_cluster(f"127.0.0.1:{port}", request_timeout_ms=200)
    time.sleep(0.2)
    assert {t.name for t in threading.enumerate() if t.ident not in before} == set()
    gc.collect()  # the refused socket is closed here, under this test's warning filter
