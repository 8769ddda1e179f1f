"""Plug-in isolation on a real server process: an assignor that spins (holding its GIL),
hangs, returns ten million partitions, allocates without bound, crashes its process or
raises gets an error response within ``timeoutMs``; meanwhile other connections are
served with bounded latency, the server's own memory does not move, and the next request
is served by a fresh worker."""

from __future__ import annotations

import socket
import statistics
import threading
import time
import urllib.request

import kafka.errors as kafka_errors
import pytest
from kafka.protocol.metadata import ApiVersionsRequest

from kafka_replica_assignor.protocol.client import CreateReplicaAssignmentOptions, ReplicaAssignorAdminClient
from kafka_replica_assignor.protocol.errors import ReplicaAssignorFailedError
from tests.e2e.forking_plugins import FORK
from tests.e2e.forking_plugins import PID_FILE_VARIABLE as FORKING_PID_FILE
from tests.e2e.security_plugins import CRASH, HUGE_OUTPUT, MEMORY_HOG, RAISE, SLEEP, SPIN
from tests.servers import ServerProcess, ServerThread, read_frame

MEMORY_LIMIT = 256 * 1024 * 1024
MISBEHAVING = "tests.e2e.security_plugins.MisbehavingAssignor"


@pytest.fixture(scope="module")
def server():
    with ServerProcess("--override", f"replica.assignor.class.name={MISBEHAVING}",
                              "--override", "replica.assignor.max.workers=2",
                              "--override", f"replica.assignor.worker.max.memory.bytes={MEMORY_LIMIT}",
                              "--override", "replica.assignor.random.seed=42",
                              "--override", "metrics.listener=http://127.0.0.1:0") as running:
        yield running


def _valid(assignment: dict[int, list[int]], n: int, rf: int) -> None:
    assert sorted(assignment) == list(range(n))
    assert all(len(set(r)) == rf and set(r) <= set(range(6)) for r in assignment.values())


class _ApiVersionsProbe:
    """One connection asking ApiVersions in a loop: the event loop's latency."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        self.latencies: list[float] = []
        request = ApiVersionsRequest(version=0)
        request.with_header(correlation_id=1, client_id="probe")
        self.frame = request.encode(header=True, framed=True)

    def once(self) -> None:
        started = time.perf_counter()
        self.sock.sendall(self.frame)
        read_frame(self.sock)
        self.latencies.append(time.perf_counter() - started)


@pytest.mark.parametrize("misbehaviour", [SPIN, SLEEP], ids=["cpu-bound-loop", "blocking-hang"])
def test_hung_assignor_times_out_while_other_connections_are_served(server, misbehaviour):
    timeout_ms = 1500
    outcome: dict = {}

    def hang() -> None:
        with ReplicaAssignorAdminClient(server.bootstrap) as admin:
            started = time.monotonic()
            try:
                admin.create_replica_assignment(misbehaviour, 3, None,
                                                CreateReplicaAssignmentOptions(timeout_ms=timeout_ms))
            except kafka_errors.KafkaError as exc:
                outcome["error"] = exc
            outcome["elapsed"] = time.monotonic() - started
            # the same connection, straight after: a fresh worker answers
            outcome["after"] = admin.create_replica_assignment(6, 3).assignments()

    hung = threading.Thread(target=hang)
    hung.start()
    probe = _ApiVersionsProbe(server.port)
    assignment_latencies = []
    with ReplicaAssignorAdminClient(server.bootstrap) as other:
        while hung.is_alive():
            probe.once()
            started = time.perf_counter()
            _valid(other.create_replica_assignment(5, 3).assignments(), 5, 3)  # served by the other worker
            assignment_latencies.append(time.perf_counter() - started)
            time.sleep(0.01)
    hung.join()
    probe.sock.close()
    assert isinstance(outcome["error"], kafka_errors.RequestTimedOutError), outcome
    assert f"timeoutMs={timeout_ms}" in str(outcome["error"])
    hang = timeout_ms / 1000
    assert hang <= outcome["elapsed"] < 1.5 * hang
    _valid(outcome["after"], 6, 3)
    assert len(probe.latencies) >= 20
    # nobody waits for the hung assignor: every other answer comes in a small part of the hang
    # (a server blocked by it would answer after the whole of it)
    assert max(probe.latencies) < hang / 6 and statistics.median(probe.latencies) < hang / 60, probe.latencies
    assert max(assignment_latencies) < hang / 3 and statistics.median(assignment_latencies) < hang / 30
    killed = server.wait_for_line(lambda r: r.get("event") == "assignor_worker_killed")
    assert killed["reason"] == "deadline passed"


def test_huge_output_is_refused_and_the_server_memory_does_not_move(server):
    before = server.rss_kib()
    with ReplicaAssignorAdminClient(server.bootstrap) as admin:
        started = time.monotonic()
        with pytest.raises(ReplicaAssignorFailedError) as refused:
            admin.create_replica_assignment(HUGE_OUTPUT, 3, None, CreateReplicaAssignmentOptions(timeout_ms=20_000))
        assert time.monotonic() - started < 20
        # either the worker's memory ceiling or the output check stops it, never the server
        message = str(refused.value)
        assert "ran out of memory" in message or "wrong partition ids" in message, message
        _valid(admin.create_replica_assignment(12, 2).assignments(), 12, 2)
    assert server.rss_kib() - before < 30 * 1024


def test_unbounded_allocation_hits_the_worker_memory_ceiling(server):
    with ReplicaAssignorAdminClient(server.bootstrap) as admin:
        with pytest.raises(ReplicaAssignorFailedError) as refused:
            admin.create_replica_assignment(MEMORY_HOG, 3, None, CreateReplicaAssignmentOptions(timeout_ms=20_000))
        assert "ran out of memory" in str(refused.value)
        assert "replica.assignor.worker.max.memory.bytes" in str(refused.value)
        _valid(admin.create_replica_assignment(3, 3).assignments(), 3, 3)


@pytest.mark.parametrize(("misbehaviour", "fragment"), [
    (CRASH, "worker process died"),
    (RAISE, "ZeroDivisionError: a bug in the plug-in"),
])
def test_crash_or_exception_is_an_error_response_and_the_next_request_is_served(server, misbehaviour, fragment):
    with ReplicaAssignorAdminClient(server.bootstrap) as admin:
        for _ in range(2):  # twice: the replacement worker is as good as the first
            with pytest.raises(ReplicaAssignorFailedError) as refused:
                admin.create_replica_assignment(misbehaviour, 3)
            assert refused.value.errno == 1000 and fragment in str(refused.value)
            _valid(admin.create_replica_assignment(4, 2).assignments(), 4, 2)


def test_seeded_answers_are_reproducible_across_the_process_boundary(server):
    """replica.assignor.random.seed: the request's random state crosses into the worker."""
    with ReplicaAssignorAdminClient(server.bootstrap) as one, ReplicaAssignorAdminClient(server.bootstrap) as two:
        answers = {repr(sorted(c.create_replica_assignment(12, 3).assignments().items())) for c in (one, two, one)}
    assert len(answers) == 1


def test_worker_replacements_are_counted(server):
    with urllib.request.urlopen(f"http://127.0.0.1:{server.metrics_port}/metrics", timeout=5) as response:
        text = response.read().decode()
    restarts = {line.split("reason=\"")[1].split("\"")[0]: float(line.rsplit(" ", 1)[1])
                for line in text.splitlines() if line.startswith("replica_assignor_worker_restarts_total{")}
    assert restarts.get("timeout", 0) >= 2 and restarts.get("died", 0) >= 2


def test_unseeded_answers_still_vary_across_the_process_boundary():
    """Without a seed every request draws fresh numbers, as Kafka does, also in a worker."""
    with ServerThread({"replica.assignor.class.name": MISBEHAVING, "replica.assignor.max.workers": "1"}) as running, \
            ReplicaAssignorAdminClient(running.bootstrap) as admin:
        answers = {repr(sorted(admin.create_replica_assignment(12, 3).assignments().items())) for _ in range(20)}
    assert len(answers) > 1


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, dead but not yet reaped by its new parent, does not)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_a_plugin_that_forks_keeps_no_worker_slot(tmp_path):
    """A plug-in forks a child that holds the worker's socket and sleeps, then hangs.
    At timeoutMs the whole process group is killed: the child too, and no slot waits for it.
    Four such requests on two workers, then plug-in requests are answered as usual."""
    pid_file = tmp_path / "children"
    with ServerProcess("--override", "replica.assignor.class.name=tests.e2e.forking_plugins.ForkingAssignor",
                       "--override", "replica.assignor.max.workers=2",
                       env={FORKING_PID_FILE: str(pid_file)}) as running:
        with ReplicaAssignorAdminClient(running.bootstrap) as admin:
            for _ in range(4):
                with pytest.raises(kafka_errors.RequestTimedOutError):
                    admin.create_replica_assignment(FORK, 3, None, CreateReplicaAssignmentOptions(timeout_ms=500))
            children = [int(line) for line in pid_file.read_text().split()]
            assert len(children) == 4
            for _ in range(4):  # both workers answer, each within the usual time
                _valid(admin.create_replica_assignment(6, 3, None,
                                                       CreateReplicaAssignmentOptions(timeout_ms=5_000)).assignments(),
                       6, 3)
        deadline = time.monotonic() + 10
        while any(_alive(pid) for pid in children) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not [pid for pid in children if _alive(pid)]
