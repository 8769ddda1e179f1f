"""``num.worker.processes=2``: the real command as a supervisor and two worker processes
sharing one port (SO_REUSEPORT). One ``server_started`` line; connections spread over both
workers (read from /proc: which worker process holds each accepted socket) and answered
right by each; SIGTERM stops everything with exit 0; a killed worker is replaced; workers
do not outlive a killed supervisor; SASL over TLS works in each worker; bad values and
start-up failures fail as without workers."""

from __future__ import annotations

import json
import os
import signal
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kafka_replica_assignor.protocol.messages import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    CreateReplicaAssignmentRequest,
    CreateReplicaAssignmentResponse,
)
from kafka_replica_assignor.protocol.secure_client import SecureReplicaAssignorAdminClient, SecurityOptions
from kafka_replica_assignor.server.dispatch import supported_versions
from kafka_replica_assignor.server.security.users import scram_credential, write_users_file
from tests.e2e.pki import Pki
from tests.servers import ServerProcess, read_frame

ROOT = Path(__file__).resolve().parents[2]
SERVER = [sys.executable, "-m", "kafka_replica_assignor.server.main"]
BROKERS = list(range(10, 19))
CONNECTIONS = 32


@pytest.fixture
def cluster_file(tmp_path) -> Path:
    path = tmp_path / "cluster.json"
    path.write_text(json.dumps({"brokers": [{"id": b, "rack": f"r{b % 3}"} for b in BROKERS]}))
    return path


def _workers(cluster_file: Path, *args: str, count: int = 2) -> ServerProcess:
    return ServerProcess("--override", f"num.worker.processes={count}",
                         "--override", f"cluster.metadata.file={cluster_file}", *args)


def _events(proc: ServerProcess, name: str, count: int = 1, wait: float = 10.0) -> list[dict]:
    """Log records named ``name`` once there are at least ``count`` (the output is read by a thread)."""
    deadline = time.monotonic() + wait
    while True:
        found = [r for r in list(proc.lines) if r.get("event") == name]
        if len(found) >= count or time.monotonic() > deadline:
            return found
        time.sleep(0.02)


def _frame(request, correlation_id: int) -> bytes:
    request.with_header(correlation_id=correlation_id, client_id="e2e-workers")
    return request.encode(header=True, framed=True)




def _round_trip(sock: socket.socket, correlation_id: int) -> bytes:
    """ApiVersions v3 and CreateReplicaAssignment (12 partitions, RF 3) pipelined; both
    answers checked; the assignment answer's body (after the correlation id) returned."""
    sock.sendall(_frame(ApiVersionsRequest(version=3, client_software_name="e2e", client_software_version="1"),
                        correlation_id)
                 + _frame(CreateReplicaAssignmentRequest(version=0, num_partitions=12, replication_factor=3,
                                                         node_id=[], timeout_ms=10_000), correlation_id + 1))
    versions = read_frame(sock)
    assert struct.unpack_from(">i", versions) == (correlation_id,)
    api_versions = ApiVersionsResponse.decode(versions[4:], version=3)
    assert api_versions.error_code == 0
    assert {k.api_key: (k.min_version, k.max_version) for k in api_versions.api_keys} == supported_versions()
    assignment = read_frame(sock)
    assert struct.unpack_from(">i", assignment) == (correlation_id + 1,)
    response = CreateReplicaAssignmentResponse.decode(assignment[5:], version=0)
    assert response.error_code == 0, response.error_message
    assert sorted(e.partition_id for e in response.replica_assignment) == list(range(12))
    for entry in response.replica_assignment:
        assert len(set(entry.replicas)) == 3 and set(entry.replicas) <= set(BROKERS)
    return assignment[4:]


def _server_sockets(port: int) -> dict[int, int]:
    """Accepted sockets of the server on ``port``: socket inode -> the client's port."""
    found = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table, encoding="ascii") as f:
            next(f)
            for line in f:
                fields = line.split()
                local_port = int(fields[1].rsplit(":", 1)[1], 16)
                remote_port = int(fields[2].rsplit(":", 1)[1], 16)
                inode = int(fields[9])
                if local_port == port and remote_port and inode:
                    found[inode] = remote_port
    return found


def _holders(port: int, pids: list[int]) -> dict[int, int]:
    """client port -> the pid (among ``pids``) whose process holds the accepted socket."""
    sockets = _server_sockets(port)
    holders = {}
    for pid in pids:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if target.startswith("socket:[") and int(target[8:-1]) in sockets:
                holders[sockets[int(target[8:-1])]] = pid
    return holders


def _gone(pid: int) -> bool:
    """The process has exited (a zombie nobody reaped yet counts as exited)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def _all_gone(pids: list[int], within: float) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if all(_gone(p) for p in pids):
            return True
        time.sleep(0.05)
    return False


def _pids(proc: ServerProcess) -> dict[int, int]:
    """worker index -> pid of its latest start."""
    return {r["worker"]: r["pid"] for r in list(proc.lines) if r.get("event") == "worker_started"}


def test_connections_spread_over_two_workers_and_sigterm_stops_all(cluster_file) -> None:
    proc = _workers(cluster_file, "--override", "replica.assignor.random.seed=7").start()
    try:
        started = _events(proc, "server_started")
        assert len(started) == 1
        assert started[0]["workers"] == 2 and started[0]["port"] == proc.port > 0
        assert (started[0]["brokers"], started[0]["host"]) == (len(BROKERS), "127.0.0.1")
        workers = _events(proc, "worker_started", count=2)
        assert sorted(r["worker"] for r in workers) == [0, 1]
        assert all(r["port"] == proc.port for r in workers)
        pids = sorted(_pids(proc).values())
        assert len(set(pids)) == 2 and proc.proc.pid not in pids

        socks = [socket.create_connection(("127.0.0.1", proc.port), timeout=10) for _ in range(CONNECTIONS)]
        try:
            answers = [_round_trip(s, 100 * i) for i, s in enumerate(socks)]
            holders = _holders(proc.port, pids)
            clients = [s.getsockname()[1] for s in socks]
        finally:
            for s in socks:
                s.close()
        # every connection lives in exactly one worker, and both workers have some
        assert sorted(holders) == sorted(clients)
        assert set(holders.values()) == set(pids)
        # replica.assignor.random.seed: the same request gets the same answer, whichever worker
        assert len(set(answers)) == 1
        handled = _events(proc, "request_handled", count=CONNECTIONS)
        assert len([r for r in handled if r["api_key"] == 68]) == CONNECTIONS
        assert {r["worker"] for r in handled} == {0, 1}  # each worker's lines name it

        # the container's health check (ApiVersions to the fixed port) works with workers
        check = subprocess.run([*SERVER, "--health-check", "--override", "num.worker.processes=2",
                                "--override", f"listeners=PLAINTEXT://127.0.0.1:{proc.port}"],
                               capture_output=True, text=True, timeout=30, cwd=ROOT)
        assert check.returncode == 0, check.stderr
    finally:
        code = proc.stop(signal.SIGTERM)
    assert code == 0
    assert _all_gone(pids, within=1.0)
    assert len(_events(proc, "server_stopped")) == 1
    assert sorted(r["worker"] for r in _events(proc, "worker_stopped", count=2)) == [0, 1]


def test_a_killed_worker_is_replaced(cluster_file) -> None:
    with _workers(cluster_file) as proc:
        _events(proc, "worker_started", count=2)
        victim = _pids(proc)[1]
        os.kill(victim, signal.SIGKILL)
        exited = _events(proc, "worker_exited")
        assert [(r["worker"], r["pid"], r["returncode"]) for r in exited] == [(1, victim, -signal.SIGKILL)]
        restarted = _events(proc, "worker_started", count=3)
        assert len(restarted) == 3
        pids = _pids(proc)
        assert pids[1] != victim and _gone(victim)
        socks = [socket.create_connection(("127.0.0.1", proc.port), timeout=10) for _ in range(CONNECTIONS)]
        try:
            for i, s in enumerate(socks):
                _round_trip(s, 10 * i)
            assert set(_holders(proc.port, list(pids.values())).values()) == set(pids.values())
        finally:
            for s in socks:
                s.close()
        assert len(_events(proc, "server_started")) == 1  # a restart is not a new start
    assert proc.proc.returncode == 0


def test_each_worker_serves_sasl_over_tls(cluster_file, tmp_path) -> None:
    """Every worker builds its own TLS context and reads the users file: clients
    authenticate with SCRAM over TLS whichever worker their connection lands on."""
    pki = Pki.create(tmp_path / "pki")
    users = tmp_path / "users.json"
    write_users_file(users, {"alice": {"SCRAM-SHA-256": scram_credential("SCRAM-SHA-256", "alice-secret",
                                                                         iterations=4096)}})
    options = SecurityOptions(security_protocol="SASL_SSL", sasl_mechanism="SCRAM-SHA-256",
                              sasl_username="alice", sasl_password="alice-secret", ssl_cafile=str(pki.ca.path))
    with _workers(cluster_file, "--override", "listeners=SASL_SSL://127.0.0.1:0",
                  "--override", f"ssl.keystore.location={pki.server_keystore}",
                  "--override", f"sasl.users.file={users}") as proc:
        assert _events(proc, "server_started")[0]["security_protocol"] == "SASL_SSL"
        pids = list(_pids(proc).values())
        admins = [SecureReplicaAssignorAdminClient(proc.bootstrap, options, request_timeout_ms=10_000)
                  for _ in range(16)]
        try:
            for admin in admins:
                assignment = admin.create_replica_assignment(6, 3).assignments()
                assert sorted(assignment) == list(range(6))
                assert all(len(set(r)) == 3 and set(r) <= set(BROKERS) for r in assignment.values())
            assert set(_holders(proc.port, pids).values()) == set(pids)
        finally:
            for admin in admins:
                admin.close()
        succeeded = _events(proc, "authentication_succeeded", count=16)
        assert {r["worker"] for r in succeeded} == {0, 1}


def test_workers_do_not_outlive_a_killed_supervisor(cluster_file) -> None:
    proc = _workers(cluster_file).start()
    pids: list[int] = []
    try:
        _events(proc, "worker_started", count=2)
        pids = list(_pids(proc).values())
        proc.proc.kill()
        assert proc.proc.wait(10) == -signal.SIGKILL
        assert _all_gone(pids, within=5.0)
        assert sorted(r["worker"] for r in _events(proc, "supervisor_exited", count=2)) == [0, 1]
    finally:
        for pid in pids:  # if the test failed: leave nothing behind
            if not _gone(pid):
                os.kill(pid, signal.SIGKILL)
        proc.stop()


def test_workers_that_keep_failing_to_start_stop_the_server(cluster_file) -> None:
    """Once serving, the cluster file goes away: a worker killed now cannot start again
    (start-up reads the file); after three tries the supervisor stops everything, exit 1."""
    proc = _workers(cluster_file).start()
    try:
        _events(proc, "worker_started", count=2)
        cluster_file.unlink()
        os.kill(_pids(proc)[0], signal.SIGKILL)
        assert proc.proc.wait(30) == 1
    finally:
        proc.stop()
    exited = _events(proc, "worker_exited", count=4)
    assert [r["returncode"] for r in exited] == [-signal.SIGKILL, 2, 2, 2]
    assert _events(proc, "worker_failed")[0]["worker"] == 0
    assert sorted(r["worker"] for r in _events(proc, "worker_stopped")) == [1]


def _start_fails(*args: str, code: int = 2) -> str:
    """Run the server expecting a start-up failure; return its one stderr line."""
    proc = subprocess.run([*SERVER, "--override", "listeners=PLAINTEXT://127.0.0.1:0",
                           "--override", "log.format=json", *args],
                          capture_output=True, text=True, timeout=30, cwd=ROOT)
    assert proc.returncode == code, (proc.returncode, proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "server_started" not in proc.stdout
    return lines[0]


@pytest.mark.parametrize(("value", "fragment"), [
    ("0", ">= 1"), ("two", "expected an integer"), ("-3", ">= 1"), ("100000", "<= 256")])
def test_bad_worker_counts_fail_start_up(value: str, fragment: str) -> None:
    line = _start_fails("--override", f"num.worker.processes={value}")
    assert "num.worker.processes" in line and fragment in line


def test_metrics_listener_is_refused_with_workers() -> None:
    line = _start_fails("--override", "num.worker.processes=2", "--override", "metrics.listener=http://127.0.0.1:0")
    assert "metrics.listener" in line and "num.worker.processes" in line


def test_an_error_found_at_start_up_is_one_line_with_workers(tmp_path) -> None:
    missing = tmp_path / "nope.json"
    line = _start_fails("--override", "num.worker.processes=3", "--override", f"cluster.metadata.file={missing}")
    assert "cluster.metadata.file" in line and str(missing) in line


def test_a_port_in_use_fails_start_up_even_by_another_set_of_workers(cluster_file) -> None:
    """SO_REUSEPORT would let a second server join the first one's port: it must fail instead."""
    with _workers(cluster_file) as first:
        line = _start_fails("--override", "num.worker.processes=2",
                            "--override", f"listeners=PLAINTEXT://127.0.0.1:{first.port}", code=1)
        assert line.startswith("replica-assignor-server: cannot listen on") and str(first.port) in line
        assert len(_events(first, "worker_started", count=2)) == 2
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        line = _start_fails("--override", "num.worker.processes=2",
                            "--override", f"listeners=PLAINTEXT://127.0.0.1:{port}", code=1)
        assert "cannot listen on" in line and str(port) in line
