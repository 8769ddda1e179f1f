"""The real ``replica-assignor-server`` command as a process: start-up line, signals,
graceful shutdown, and start-up failures as one line on stderr with exit code 2."""

from __future__ import annotations

import json
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from kafka_replica_assignor.protocol.client import ReplicaAssignorAdminClient
from kafka_replica_assignor.protocol.messages import CreateReplicaAssignmentRequest, CreateReplicaAssignmentResponse
from tests.servers import ServerProcess, read_frame

ROOT = Path(__file__).resolve().parents[2]
SERVER = [sys.executable, "-m", "kafka_replica_assignor.server.main"]


Server = ServerProcess


def _events(proc: Server, name: str, wait: float = 3.0) -> list[dict]:
    """Log records named ``name``; the output is read by a thread, so allow it to catch up."""
    deadline = time.monotonic() + wait
    while True:
        found = [r for r in list(proc.lines) if r.get("event") == name]
        if found or time.monotonic() > deadline:
            return found
        time.sleep(0.02)


def _assign(bootstrap: str, n: int = 12, rf: int = 3) -> dict[int, list[int]]:
    with ReplicaAssignorAdminClient(bootstrap, request_timeout_ms=10_000) as admin:
        return admin.create_replica_assignment(n, rf).assignments()


def _frame(correlation_id: int, n: int = 6, rf: int = 3) -> bytes:
    request = CreateReplicaAssignmentRequest(version=0, num_partitions=n, replication_factor=rf, node_id=[],
                                             timeout_ms=10_000)
    request.with_header(correlation_id=correlation_id, client_id="e2e-process")
    return request.encode(header=True, framed=True)




def _refuses_connections(port: int, within: float = 3.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
        except OSError:
            return True
        time.sleep(0.02)
    return False


def test_server_started_line_names_the_bound_port() -> None:
    with Server() as proc:
        started = _events(proc, "server_started")
        assert len(started) == 1
        record = started[0]
        assert record["host"] == "127.0.0.1"
        assert isinstance(record["port"], int) and record["port"] > 0
        assert record["loop"] == "uvloop"
        assert record["level"] == "info" and "timestamp" in record
        assignment = _assign(f"127.0.0.1:{record['port']}")
        assert sorted(assignment) == list(range(12))
        handled = _events(proc, "request_handled")
        assert handled and handled[-1]["api_key"] == 68 and handled[-1]["error_code"] == 0
        assert {"api_version", "correlation_id", "duration_ms"} <= set(handled[-1])


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_signal_stops_the_server_with_exit_code_zero(sig: signal.Signals) -> None:
    proc = Server().start()
    try:
        _assign(proc.bootstrap, 3, 1)
    finally:
        code = proc.stop(sig)
    assert code == 0
    assert [r["signal"] for r in _events(proc, "signal_received")] == [sig.name]
    stopped = _events(proc, "server_stopped")
    assert len(stopped) == 1 and stopped[0]["unfinished"] == 0


def test_in_flight_request_is_finished_during_graceful_shutdown() -> None:
    """SlowAssignor takes 1 s; SIGTERM arrives while it runs. The server stops accepting at
    once, still answers the request, then exits 0."""
    proc = Server("--override", "replica.assignor.class.name=tests.e2e.plugins.SlowAssignor").start()
    try:
        with socket.create_connection(("127.0.0.1", proc.port), timeout=10) as sock:
            sock.sendall(_frame(31))
            time.sleep(0.3)
            proc.proc.send_signal(signal.SIGTERM)
            assert _refuses_connections(proc.port)  # stops accepting at once...
            payload = read_frame(sock)  # ...and still answers the request in flight
        assert struct.unpack_from(">i", payload) == (31,)
        response = CreateReplicaAssignmentResponse.decode(payload[5:], version=0)
        assert response.error_code == 0
        assert len(response.replica_assignment) == 6
        assert proc.proc.wait(10) == 0
    finally:
        proc.stop()
    assert _events(proc, "server_stopped")[0]["unfinished"] == 0


def test_shutdown_is_bounded_when_a_request_outlives_the_bound() -> None:
    """With shutdown.timeout.ms=200 and a 2 s assignment in flight, the server gives up on
    the request after the bound: the connection is closed unanswered and ``server_stopped``
    is logged well before the assignor would have finished.

    (The process itself still exits only once the assignor thread returns: see the report
    on issue 2; when that is fixed, assert ``proc.proc.wait()`` within the same bound.)"""
    proc = Server("--override", "replica.assignor.class.name=tests.e2e.plugins.SlowerAssignor",
                  "--override", "shutdown.timeout.ms=200").start()
    try:
        with socket.create_connection(("127.0.0.1", proc.port), timeout=10) as sock:
            sock.sendall(_frame(32))
            time.sleep(0.2)
            started = time.monotonic()
            proc.proc.send_signal(signal.SIGTERM)
            sock.settimeout(5)
            assert sock.recv(100) == b""  # closed without an answer
            assert _events(proc, "server_stopped", wait=5)
            assert time.monotonic() - started < 1.4  # the assignor needs 1.8 s more
        assert proc.proc.wait(10) == 0
    finally:
        proc.stop()


def test_loop_asyncio_works() -> None:
    with Server("--loop", "asyncio") as proc:
        assert _events(proc, "server_started")[0]["loop"] == "asyncio"
        assert sorted(_assign(proc.bootstrap, 5, 2)) == list(range(5))
    assert proc.proc.returncode == 0


def test_config_file_from_the_repository_works() -> None:
    with Server("--config", str(ROOT / "config" / "server.properties")) as proc:
        record = _events(proc, "server_started")[0]
        assert record["assignor"] == "default"
        assert record["brokers"] == 6
        assert sorted(_assign(proc.bootstrap)) == list(range(12))


def test_cluster_file_override_is_used(tmp_path) -> None:
    cluster = tmp_path / "cluster.json"
    cluster.write_text(json.dumps({"brokers": [{"id": 10 + i, "rack": f"r{i % 3}"} for i in range(9)]}))
    with Server("--override", f"cluster.metadata.file={cluster}") as proc:
        record = _events(proc, "server_started")[0]
        assert (record["brokers"], record["racks"]) == (9, 3)
        assignment = _assign(proc.bootstrap, 9, 3)
        assert {b for r in assignment.values() for b in r} == set(range(10, 19))


def _start_fails(*args: str) -> str:
    """Run the server expecting a start-up failure; return its one stderr line."""
    proc = subprocess.run([*SERVER, "--override", "listeners=PLAINTEXT://127.0.0.1:0", *args],
                          capture_output=True, text=True, timeout=30, cwd=ROOT)
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "server_started" not in proc.stdout
    return lines[0]


def test_unknown_config_key_fails_start_up() -> None:
    line = _start_fails("--override", "replica.asignor.class.name=default")
    assert "replica.asignor.class.name" in line


def test_unknown_config_key_in_the_file_fails_start_up(tmp_path) -> None:
    config = tmp_path / "server.properties"
    config.write_text("listeners=PLAINTEXT://127.0.0.1:0\nsocket.request.max.bytez=10\n")
    assert "socket.request.max.bytez" in _start_fails("--config", str(config))


def test_bad_config_value_fails_start_up() -> None:
    line = _start_fails("--override", "socket.request.max.bytes=lots")
    assert "socket.request.max.bytes" in line and "lots" in line


def test_missing_config_file_fails_start_up(tmp_path) -> None:
    missing = tmp_path / "nope.properties"
    assert str(missing) in _start_fails("--config", str(missing))


def test_unknown_assignor_fails_start_up() -> None:
    line = _start_fails("--override", "replica.assignor.class.name=rack-magic")
    assert "rack-magic" in line


@pytest.mark.parametrize("kind", ["missing", "directory", "not json", "bad shape"])
def test_unreadable_cluster_file_fails_start_up(tmp_path, kind: str) -> None:
    path = tmp_path / "cluster.json"
    if kind == "directory":
        path.mkdir()
    elif kind == "not json":
        path.write_text("{brokers: [")
    elif kind == "bad shape":
        path.write_text(json.dumps({"brokers": [{"id": "zero"}]}))
    line = _start_fails("--override", f"cluster.metadata.file={path}")
    assert "cluster.metadata.file" in line and str(path) in line


def test_port_in_use_fails_start_up_with_one_line() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = subprocess.run([*SERVER, "--override", f"listeners=PLAINTEXT://127.0.0.1:{port}"],
                              capture_output=True, text=True, timeout=30, cwd=ROOT)
    assert proc.returncode != 0
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and str(port) in lines[0], proc.stderr


def test_many_connections_at_once_are_all_served() -> None:
    with Server() as proc:
        results: list[int] = []
        errors: list[BaseException] = []

        def client() -> None:
            try:
                results.append(len(_assign(proc.bootstrap, 6, 3)))
            except BaseException as exc:  # collected and asserted below
                errors.append(exc)

        threads = [threading.Thread(target=client) for _ in range(20)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        assert errors == []
        assert results == [6] * 20
