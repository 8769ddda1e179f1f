"""``create-topic`` and ``add-partitions`` end to end: our assignor server (its cluster snapshot
holds broker 111, so its placements fit) places, and the Tansu broker (node 111) is the Kafka
cluster the placement is applied to.

Tansu answers CreateTopics but, as it stands, ignores an explicit replica assignment and creates
its default partition count (3) when the request says -1, as Kafka's protocol requires alongside
an assignment: so a 3-partition topic is created as assigned, and any other count is caught by
the command (the answer's partition count differs from the assignment) rather than reported as
done. Placements on other brokers than 111 are caught by the read-back after creation. The same
workflows against Apache Kafka itself, which applies assignments: tests/kafka. Tansu does not offer CreatePartitions: add-partitions says so in one line.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kafka_replica_assignor.protocol.cluster_reader import open_admin_client
from tests.servers import ServerThread
from tests.tansu import TansuBroker

pytestmark = pytest.mark.tansu
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def tansu() -> Iterator[TansuBroker]:
    with TansuBroker() as broker:
        yield broker


@pytest.fixture(scope="module")
def assignor(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerThread]:
    path = tmp_path_factory.mktemp("cluster") / "cluster.json"
    path.write_text(json.dumps({"brokers": [{"id": 111, "rack": None}]}))
    with ServerThread({"cluster.metadata.file": str(path)}) as server:
        yield server


@pytest.fixture
def quiet_kafka(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.CRITICAL, logger="kafka")


def cli(tansu: TansuBroker, assignor: ServerThread, command: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kafka_replica_assignor.cli.main", command, "--bootstrap-server", tansu.bootstrap,
                           "--assignor", assignor.bootstrap, "--timeout-ms", "10000", *args],
                          capture_output=True, text=True, timeout=60, cwd=ROOT)


def describe(tansu: TansuBroker, topic: str) -> dict[str, Any] | None:
    admin = open_admin_client(tansu.bootstrap, 10_000)
    try:
        topics = [t for t in admin.describe_topics() if t["name"] == topic]
    finally:
        admin.close()
    return topics[0] if topics else None


def plan(proc: subprocess.CompletedProcess[str], topic: str) -> dict[int, list[int]]:
    data = json.loads(proc.stdout)
    assert data["version"] == 1 and {p["topic"] for p in data["partitions"]} == {topic}
    return {p["partition"]: p["replicas"] for p in data["partitions"]}


def test_create_topic_with_the_assignors_placement(tansu: TansuBroker, assignor: ServerThread,
                                                   quiet_kafka: None) -> None:
    proc = cli(tansu, assignor, "create-topic", "--topic", "orders", "--partitions", "3",
               "--replication-factor", "1", "--config", "retention.ms=3600000")
    assert proc.returncode == 0, proc.stderr
    assert plan(proc, "orders") == {0: [111], 1: [111], 2: [111]}
    assert proc.stderr.strip() == f"created topic orders: 3 partition(s), replication factor 1, on {tansu.bootstrap}"
    topic = describe(tansu, "orders")
    assert topic is not None
    assert {p["partition_index"]: p["replica_nodes"] for p in topic["partitions"]} == {0: [111], 1: [111], 2: [111]}


def test_an_existing_topic_is_one_line_with_the_brokers_error(tansu: TansuBroker, assignor: ServerThread) -> None:
    first = cli(tansu, assignor, "create-topic", "--topic", "twice", "--partitions", "3", "--replication-factor", "1")
    assert first.returncode == 0, first.stderr
    again = cli(tansu, assignor, "create-topic", "--topic", "twice", "--partitions", "3", "--replication-factor", "1")
    assert again.returncode == 1
    assert again.stdout == ""
    assert again.stderr.splitlines() == [
        "replica-assignor create-topic: error: the cluster refused to create topic twice: "
        "TopicAlreadyExistsError (36): Topic with this name already exists."]


def test_dry_run_prints_the_placement_and_creates_nothing(tansu: TansuBroker, assignor: ServerThread) -> None:
    proc = cli(tansu, assignor, "create-topic", "--topic", "dry", "--partitions", "5", "--replication-factor", "1",
               "--dry-run")
    assert proc.returncode == 0, proc.stderr
    assert plan(proc, "dry") == {p: [111] for p in range(5)}
    assert describe(tansu, "dry") is None


def test_a_broker_that_ignores_the_assignment_is_caught(tansu: TansuBroker, assignor: ServerThread) -> None:
    proc = cli(tansu, assignor, "create-topic", "--topic", "ignored", "--partitions", "2",
               "--replication-factor", "1")
    assert proc.returncode == 1
    assert proc.stderr.splitlines() == [
        "replica-assignor create-topic: error: the cluster created topic ignored with 3 partition(s) and "
        "replication factor 1, not the 2 partition(s) and replication factor 1 assigned: it ignored the "
        "replica assignment"]


def test_the_assignors_refusal_is_one_line(tansu: TansuBroker, assignor: ServerThread) -> None:
    proc = cli(tansu, assignor, "create-topic", "--topic", "big", "--partitions", "3", "--replication-factor", "2")
    assert proc.returncode == 1
    assert len(proc.stderr.splitlines()) == 1
    assert proc.stderr.startswith(f"replica-assignor create-topic: error: the assignor at {assignor.bootstrap} "
                                  "refused: InvalidReplicationFactorError (38): Replication factor: 2 larger than "
                                  "available brokers: 1.")
    assert describe(tansu, "big") is None


def test_add_partitions_dry_run_continues_the_topic(tansu: TansuBroker, assignor: ServerThread) -> None:
    created = cli(tansu, assignor, "create-topic", "--topic", "grow", "--partitions", "3",
                  "--replication-factor", "1")
    assert created.returncode == 0, created.stderr
    proc = cli(tansu, assignor, "add-partitions", "--topic", "grow", "--partitions", "5", "--dry-run")
    assert proc.returncode == 0, proc.stderr
    assert plan(proc, "grow") == {3: [111], 4: [111]}  # only the new partitions


def test_add_partitions_where_create_partitions_is_unsupported(tansu: TansuBroker, assignor: ServerThread) -> None:
    created = cli(tansu, assignor, "create-topic", "--topic", "fixed", "--partitions", "3",
                  "--replication-factor", "1")
    assert created.returncode == 0, created.stderr
    proc = cli(tansu, assignor, "add-partitions", "--topic", "fixed", "--partitions", "4")
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert proc.stderr.splitlines() == [
        f"replica-assignor add-partitions: error: the cluster at {tansu.bootstrap} does not support "
        "CreatePartitions (apiKey 37): partitions cannot be added there"]
    topic = describe(tansu, "fixed")
    assert topic is not None and len(topic["partitions"]) == 3


@pytest.mark.parametrize("args, code, message", [
    (("--topic", "absent", "--partitions", "4"), 1, "topic absent does not exist on"),
    (("--topic", "orders", "--partitions", "2"), 2, "--partitions 2 must be more than topic orders's 3 partition(s)"),
])
def test_add_partitions_bad_requests(tansu: TansuBroker, assignor: ServerThread, args: tuple[str, ...], code: int,
                                     message: str) -> None:
    if describe(tansu, "orders") is None:
        assert cli(tansu, assignor, "create-topic", "--topic", "orders", "--partitions", "3",
                   "--replication-factor", "1").returncode == 0
    proc = cli(tansu, assignor, "add-partitions", *args)
    assert proc.returncode == code
    assert len(proc.stderr.splitlines()) == 1 and message in proc.stderr


def test_a_placement_the_broker_did_not_apply_is_named_per_partition(tansu: TansuBroker, tmp_path: Path) -> None:
    """The assignor's view has brokers 0, 1 and 5; Tansu places every partition on its node 111:
    the partition count matches, the replicas do not, and the read-back says so."""
    path = tmp_path / "cluster.json"
    path.write_text(json.dumps({"brokers": [{"id": 0}, {"id": 1}, {"id": 5}]}))
    with ServerThread({"cluster.metadata.file": str(path), "replica.assignor.random.seed": "7"}) as elsewhere:
        proc = cli(tansu, elsewhere, "create-topic", "--topic", "misplaced", "--partitions", "3",
                   "--replication-factor", "1")
    assert proc.returncode == 1
    assigned = plan(proc, "misplaced")
    [line] = proc.stderr.splitlines()
    assert line.startswith("replica-assignor create-topic: error: the cluster created topic misplaced but did "
                           "not apply the assignment: ")
    for p, replicas in assigned.items():
        assert f"partition {p} on [111] (assigned {replicas})" in line
    assert "delete the topic, or move them with kafka-reassign-partitions.sh" in line
