"""Plug-in assignors end to end (issue 3): whatever an assignor does wrong becomes an error
response with the right code and a message, the server stays healthy, and the next
request is answered normally. Assignors are loaded by dotted class path, like an
operator's own would be.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import kafka.errors as kafka_errors
import pytest

from kafka_replica_assignor.protocol.client import CreateReplicaAssignmentOptions, ReplicaAssignorAdminClient
from kafka_replica_assignor.protocol.errors import ReplicaAssignorFailedError
from tests.e2e.plugins import TRIGGER_PARTITIONS, HangingAssignor
from tests.servers import ServerThread

DEFAULT_BROKERS = set(range(6))


def _assert_valid(assignment: dict[int, list[int]], n: int, rf: int, brokers: set[int]) -> None:
    assert sorted(assignment) == list(range(n))
    for p, replicas in assignment.items():
        assert len(replicas) == rf, (p, replicas)
        assert len(set(replicas)) == rf, (p, replicas)
        assert set(replicas) <= brokers, (p, replicas)


@pytest.mark.parametrize(("plugin", "error", "message_parts"), [
    ("RaisingAssignor", ReplicaAssignorFailedError, ["RaisingAssignor", "KeyError", "rack table is empty"]),
    ("RefusingAssignor", ReplicaAssignorFailedError, ["no power domain left for partition 3"]),
    ("RefusingRfAssignor", kafka_errors.InvalidReplicationFactorError, ["only places replication factor 2"]),
    ("DuplicateBrokerAssignor", ReplicaAssignorFailedError, ["partition 3", "duplicate"]),
    ("UnknownBrokerAssignor", ReplicaAssignorFailedError, ["partition 4", "broker 105", "not in the cluster"]),
    ("WrongPartitionsAssignor", ReplicaAssignorFailedError, ["missing [0]", "unexpected [7]"]),
    ("WrongReplicationFactorAssignor", ReplicaAssignorFailedError, ["partition 2", "2 replicas",
                                                                    "replication factor is 3"]),
    ("GarbageAssignor", ReplicaAssignorFailedError, ["str", "not a partition map"]),
    ("GarbageReplicasAssignor", ReplicaAssignorFailedError, ["partition 5", "list of broker ids"]),
])
def test_misbehaving_assignor_gets_an_error_response_and_the_next_request_is_served(
        plugin: str, error: type, message_parts: list[str]) -> None:
    with ServerThread({"replica.assignor.class.name": f"tests.e2e.plugins.{plugin}"}) as server, \
            ReplicaAssignorAdminClient(server.bootstrap) as admin:
        with pytest.raises(error) as raised:
            admin.create_replica_assignment(TRIGGER_PARTITIONS, 3)
        assert raised.value.errno == error.errno
        if error is ReplicaAssignorFailedError:
            assert raised.value.errno == 1000
        for part in message_parts:
            assert part in str(raised.value)
        # same connection, same server: the next request is answered normally
        _assert_valid(admin.create_replica_assignment(6, 3).assignments(), 6, 3, DEFAULT_BROKERS)
        # and a fresh connection too
        with ReplicaAssignorAdminClient(server.bootstrap) as other:
            _assert_valid(other.create_replica_assignment(12, 2).assignments(), 12, 2, DEFAULT_BROKERS)


def test_hanging_assignor_times_out_and_other_connections_are_served_meanwhile() -> None:
    HangingAssignor.release.clear()
    timeout_ms = 1_000
    with ServerThread({"replica.assignor.class.name": "tests.e2e.plugins.HangingAssignor"}) as server:
        try:
            with ThreadPoolExecutor(1) as pool, ReplicaAssignorAdminClient(server.bootstrap) as admin:
                started = time.monotonic()
                hung = pool.submit(admin.create_replica_assignment, TRIGGER_PARTITIONS, 3, None,
                                   CreateReplicaAssignmentOptions(timeout_ms=timeout_ms))
                # while the assignor hangs, other connections get answers, quickly
                served = 0
                while not hung.done():
                    t0 = time.monotonic()
                    with ReplicaAssignorAdminClient(server.bootstrap) as other:
                        _assert_valid(other.create_replica_assignment(5, 3).assignments(), 5, 3,
                                      DEFAULT_BROKERS)
                    assert time.monotonic() - t0 < timeout_ms / 1000 / 2
                    served += 1
                with pytest.raises(kafka_errors.RequestTimedOutError) as raised:
                    hung.result()
                elapsed = time.monotonic() - started
                assert raised.value.errno == 7
                assert f"timeoutMs={timeout_ms}" in str(raised.value)
                assert timeout_ms / 1000 <= elapsed < timeout_ms / 1000 + 1.0
                assert served >= 1
                # the connection that timed out is still usable
                _assert_valid(admin.create_replica_assignment(6, 3).assignments(), 6, 3, DEFAULT_BROKERS)
        finally:
            HangingAssignor.release.set()


def test_example_least_loaded_assignor_plugged_in_by_class_name(tmp_path) -> None:
    """examples.least_loaded fills the empty brokers first: with brokers 0-3 loaded by an
    existing topic and 4-7 empty, six new partitions at RF 2 land on 4-7 only, evenly."""
    cluster = {
        "brokers": [{"id": b, "rack": f"rack-{b % 2}"} for b in range(8)],
        "partitions": [{"topic": "old", "partition": p, "replicas": [p % 4, (p + 1) % 4]} for p in range(8)],
    }
    path = tmp_path / "cluster.json"
    path.write_text(json.dumps(cluster))
    overrides = {"replica.assignor.class.name": "examples.least_loaded.LeastLoadedAssignor",
                 "cluster.metadata.file": str(path)}
    with ServerThread(overrides) as server, ReplicaAssignorAdminClient(server.bootstrap) as admin:
        assignment = admin.create_replica_assignment(6, 2).assignments()
    _assert_valid(assignment, 6, 2, set(range(8)))
    load = Counter(b for replicas in assignment.values() for b in replicas)
    assert set(load) == {4, 5, 6, 7}
    assert max(load.values()) - min(load.values()) <= 1
    for replicas in assignment.values():  # one replica per rack
        assert len({b % 2 for b in replicas}) == 2


@pytest.mark.parametrize("name", ["tests.e2e.plugins.NoSuchAssignor", "no_such_module.Assignor",
                                  "tests.e2e.plugins.TRIGGER_PARTITIONS"])
def test_unknown_assignor_class_fails_start_up_with_one_line(name: str) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "kafka_replica_assignor.server.main", "--override", "listeners=PLAINTEXT://127.0.0.1:0",
         "--override", f"replica.assignor.class.name={name}"],
        capture_output=True, text=True, timeout=30)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert name in lines[0]
    assert "server_started" not in proc.stdout
