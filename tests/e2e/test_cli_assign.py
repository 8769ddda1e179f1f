"""``replica-assignor assign`` as an operator runs it: a subprocess against a real server.
Results are Kafka reassignment JSON on stdout only; errors are one line on stderr."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from kafka.errors import KafkaError

from kafka_replica_assignor.cli.common import DEFAULT_TIMEOUT_MS
from kafka_replica_assignor.protocol.client import (
    AsyncReplicaAssignorAdminClient,
    CreateReplicaAssignmentOptions,
    ReplicaAssignorAdminClient,
)
from tests.servers import ServerThread

ROOT = Path(__file__).resolve().parents[2]
# 6 brokers in 3 racks, ids deliberately not in rack order
RACK_OF = {0: "r-a", 1: "r-a", 2: "r-b", 3: "r-b", 4: "r-c", 5: "r-c"}


@pytest.fixture(scope="module")
def racked_server(tmp_path_factory):
    path = tmp_path_factory.mktemp("cluster") / "cluster.json"
    path.write_text(json.dumps({"brokers": [{"id": b, "rack": r} for b, r in RACK_OF.items()]}))
    with ServerThread({"cluster.metadata.file": str(path), "replica.assignor.random.seed": "7"}) as server:
        yield server


def _assign(server, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-m", "kafka_replica_assignor.cli.main", "assign", "--bootstrap-server", server.bootstrap,
                           *args], capture_output=True, text=True, timeout=60, cwd=ROOT)
    if check:
        assert proc.returncode == 0, proc.stderr
        assert proc.stderr == ""
    return proc


def _plan(proc: subprocess.CompletedProcess, topic: str = "new-topic") -> dict[int, list[int]]:
    assert proc.stdout.count("\n") == 1  # one JSON document, nothing else on stdout
    data = json.loads(proc.stdout)
    assert set(data) == {"version", "partitions"} and data["version"] == 1
    plan = {}
    for entry in data["partitions"]:
        assert set(entry) == {"topic", "partition", "replicas"}
        assert entry["topic"] == topic
        plan[entry["partition"]] = entry["replicas"]
    assert [e["partition"] for e in data["partitions"]] == sorted(plan)
    return plan


def _kafka_rack_unaware(brokers: list[int], n: int, rf: int, start: int, shift: int) -> dict[int, list[int]]:
    """Kafka's rack-unaware round robin (AdminUtils) for given start index and shift."""
    size = len(brokers)
    out = {}
    for p in range(n):
        if p > 0 and p % size == 0:
            shift += 1
        first = (p + start) % size
        out[p] = [brokers[first]] + [brokers[(first + 1 + (shift + j) % (size - 1)) % size]
                                     for j in range(rf - 1)]
    return out


def test_prints_reassignment_json_only(racked_server) -> None:
    plan = _plan(_assign(racked_server, "--partitions", "12", "--replication-factor", "3"))
    assert sorted(plan) == list(range(12))
    for replicas in plan.values():
        assert len(set(replicas)) == 3 and set(replicas) <= set(RACK_OF)
        assert len({RACK_OF[b] for b in replicas}) == 3  # rack-aware: one replica per rack
    assert Counter(b for r in plan.values() for b in r) == {b: 6 for b in RACK_OF}
    assert Counter(r[0] for r in plan.values()) == {b: 2 for b in RACK_OF}


def test_deterministic_mode_repeats_the_answer(racked_server) -> None:
    """Under replica.assignor.random.seed the same request gets the same answer: the CLI and
    the admin client send the same bytes, so they print the same plan."""
    plan = _plan(_assign(racked_server, "--partitions", "10", "--replication-factor", "2"))
    assert plan == _admin_plan(racked_server, 10, 2)


def _admin_plan(server, n: int, rf: int) -> dict[int, list[int]]:
    # the CLI's --timeout-ms default is the request's timeoutMs, part of the bytes sent
    options = CreateReplicaAssignmentOptions(timeout_ms=DEFAULT_TIMEOUT_MS)
    with ReplicaAssignorAdminClient(server.bootstrap) as admin:
        return admin.create_replica_assignment(n, rf, options=options).assignments()


def _reassignment_file(path: Path, topic: str, plan: dict[int, list[int]]) -> Path:
    path.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": topic, "partition": p, "replicas": r} for p, r in sorted(plan.items())]}))
    return path


def test_topic_name_is_written_in_the_output(racked_server) -> None:
    plan = _plan(_assign(racked_server, "--partitions", "2", "--replication-factor", "1", "--topic", "orders"),
                 topic="orders")
    assert sorted(plan) == [0, 1]


def test_broker_list_limits_the_brokers(racked_server) -> None:
    plan = _plan(_assign(racked_server, "--partitions", "8", "--replication-factor", "2", "--broker-list", "1,2,4"))
    assert {b for r in plan.values() for b in r} == {1, 2, 4}
    assert all(len(set(r)) == 2 for r in plan.values())


def test_disable_rack_aware_is_kafkas_rack_unaware_assignment(racked_server) -> None:
    """forceSimpleAssignment: Kafka's rack-unaware round robin over the id-sorted brokers,
    for one (start index, shift) pair; with 3 racks some partition then has two replicas in
    one rack, which the rack-aware default never does."""
    plan = _plan(_assign(racked_server, "--partitions", "12", "--replication-factor", "3",
                         "--disable-rack-aware"))
    brokers = sorted(RACK_OF)
    # the shift only matters modulo (brokers - 1): 5 distinct shifts
    matches = [(s, h) for s in range(6) for h in range(5) if _kafka_rack_unaware(brokers, 12, 3, s, h) == plan]
    assert len(matches) == 1, plan
    assert any(len({RACK_OF[b] for b in r}) < 3 for r in plan.values())


def test_unknown_broker_is_one_line_error(racked_server) -> None:
    proc = _assign(racked_server, "--partitions", "3", "--replication-factor", "2", "--broker-list", "1,99",
                   check=False)
    assert proc.returncode != 0
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "99" in lines[0]
    assert "BrokerNotAvailable" in lines[0] or "BROKER_NOT_AVAILABLE" in lines[0]


@pytest.mark.parametrize(("args", "words"), [
    (("--partitions", "0", "--replication-factor", "1"), ["--partitions: must be >= 1, got 0"]),
    (("--partitions", "3", "--replication-factor", "7"), ["Replication factor: 7 larger than available brokers"]),
    (("--partitions", "3", "--replication-factor", "2", "--broker-list", "1,x"), ["--broker-list"]),
])
def test_refusals_are_one_line_errors(racked_server, args, words) -> None:
    proc = _assign(racked_server, *args, check=False)
    assert proc.returncode != 0
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    for word in words:
        assert word in lines[0]


def _unused_port() -> int:
    with socket.socket() as s:  # bound, never listening: connecting is refused
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_unreachable_server_is_one_line_error() -> None:
    port = _unused_port()
    proc = subprocess.run([sys.executable, "-m", "kafka_replica_assignor.cli.main", "assign", "--bootstrap-server", f"127.0.0.1:{port}",
                           "--partitions", "1", "--replication-factor", "1"],
                          capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert proc.returncode != 0 and proc.stdout == ""
    assert len(proc.stderr.strip().splitlines()) == 1 and str(port) in proc.stderr


def test_admin_clients_report_an_unreachable_server_as_a_kafka_error() -> None:
    port = _unused_port()
    with pytest.raises(KafkaError, match=str(port)):
        with ReplicaAssignorAdminClient(f"127.0.0.1:{port}") as admin:
            admin.create_replica_assignment(1, 1)

    async def use_async() -> None:
        async with AsyncReplicaAssignorAdminClient(f"127.0.0.1:{port}") as admin:
            await admin.create_replica_assignment(1, 1)

    with pytest.raises(KafkaError, match=str(port)):
        asyncio.run(use_async())


def test_current_assignment_adds_partitions(racked_server, tmp_path) -> None:
    existing = _admin_plan(racked_server, 4, 3)
    current = _reassignment_file(tmp_path / "current.json", "orders", existing)
    plan = _plan(_assign(racked_server, "--partitions", "7", "--replication-factor", "3",
                         "--current-assignment", str(current), "--topic", "orders"), topic="orders")
    assert sorted(plan) == [4, 5, 6]  # only the new partitions
    for replicas in plan.values():
        assert len({RACK_OF[b] for b in replicas}) == 3
    # the new leaders continue the round robin instead of piling onto partition 0's leader
    leaders = Counter(r[0] for r in {**existing, **plan}.values())
    assert max(leaders.values()) <= 2


def test_current_assignment_raises_the_replication_factor(racked_server, tmp_path) -> None:
    existing = _admin_plan(racked_server, 6, 2)
    current = _reassignment_file(tmp_path / "current.json", "orders", existing)
    plan = _plan(_assign(racked_server, "--partitions", "6", "--replication-factor", "3",
                         "--current-assignment", str(current)), topic="orders")
    assert sorted(plan) == list(range(6))
    for p, replicas in plan.items():
        assert replicas[:2] == existing[p]  # current replicas kept, leader first
        assert len(set(replicas)) == 3
        assert len({RACK_OF[b] for b in replicas}) == 3


def test_current_assignment_with_several_topics_needs_topic(racked_server, tmp_path) -> None:
    current = tmp_path / "current.json"
    current.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": "a", "partition": 0, "replicas": [0, 2]},
        {"topic": "b", "partition": 0, "replicas": [1, 3]},
    ]}))
    proc = _assign(racked_server, "--partitions", "2", "--replication-factor", "2",
                   "--current-assignment", str(current), check=False)
    assert proc.returncode == 2 and proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "--topic" in lines[0]
    plan = _plan(_assign(racked_server, "--partitions", "2", "--replication-factor", "2",
                         "--current-assignment", str(current), "--topic", "b"), topic="b")
    assert sorted(plan) == [1]
