"""Each limit on a real socket, with the log line that says why and Kafka's way of
enforcing it: oversized frames and too many connections close the connection, idle
connections are closed, too many partitions get INVALID_PARTITIONS, and pipelined
requests beyond ``max.inflight.requests.per.connection`` (or responses the peer does not
read) stop the server reading, so its memory stays bounded."""

from __future__ import annotations

import json
import socket
import struct
import time

import kafka.errors as kafka_errors
import pytest
from kafka.protocol.metadata import ApiVersionsRequest, ApiVersionsResponse

from kafka_replica_assignor.protocol.client import ReplicaAssignorAdminClient
from kafka_replica_assignor.protocol.messages import CreateReplicaAssignmentRequest, CreateReplicaAssignmentResponse
from tests.servers import ServerProcess, ServerThread, read_frame

_LEN = struct.Struct(">i")


def _api_versions(cid: int) -> bytes:
    request = ApiVersionsRequest(version=0)
    request.with_header(correlation_id=cid, client_id="limits")
    return request.encode(header=True, framed=True)




def _answers(sock: socket.socket, cid: int = 7) -> bool:
    sock.sendall(_api_versions(cid))
    response = read_frame(sock)
    return _LEN.unpack_from(response)[0] == cid and ApiVersionsResponse.decode(response[4:], version=0).error_code == 0


def _closed_by_server(sock: socket.socket, within: float = 5.0) -> bool:
    sock.settimeout(within)
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


def _closed_lines(server, reason: str) -> list[dict]:
    return [r for r in server.lines if r.get("event") in ("connection_closed", "connection_refused")
            and r.get("reason") == reason]


@pytest.fixture(scope="module")
def limited():
    with ServerProcess("--override", "socket.request.max.bytes=4096",
                              "--override", "max.partitions.per.request=100",
                              "--override", "connections.max.idle.ms=700") as server:
        yield server


def test_frame_over_socket_request_max_bytes_closes_only_that_connection(limited):
    with socket.create_connection(("127.0.0.1", limited.port)) as bystander, \
            socket.create_connection(("127.0.0.1", limited.port)) as offender:
        assert _answers(bystander)
        # only the size prefix: the server refuses before reading (or waiting for) the body
        offender.sendall(_LEN.pack(4097))
        assert _closed_by_server(offender)
        assert _answers(bystander, 8)
    line = limited.wait_for_line(lambda r: r.get("reason") == "invalid frame size" and r.get("size") == 4097)
    assert line["event"] == "connection_closed"
    assert line["limit"] == "socket.request.max.bytes" and line["limit_bytes"] == 4096


def test_frame_at_the_limit_is_read(limited):
    with socket.create_connection(("127.0.0.1", limited.port)) as sock:
        header = struct.pack(">hhih", 18, 0, 9, 4000) + b"c" * 4000  # ApiVersions v0, a 4000-byte client id
        frame = _LEN.pack(len(header)) + header
        assert len(frame) - 4 <= 4096
        sock.sendall(frame)
        assert _LEN.unpack_from(read_frame(sock))[0] == 9


def test_negative_frame_size_closes_the_connection(limited):
    with socket.create_connection(("127.0.0.1", limited.port)) as sock:
        sock.sendall(_LEN.pack(-5))
        assert _closed_by_server(sock)
    limited.wait_for_line(lambda r: r.get("reason") == "invalid frame size" and r.get("size") == -5)


def test_more_partitions_than_max_partitions_per_request_get_invalid_partitions(limited):
    with ReplicaAssignorAdminClient(limited.bootstrap) as admin:
        assert sorted(admin.create_replica_assignment(100, 2).assignments()) == list(range(100))
        with pytest.raises(kafka_errors.InvalidPartitionsError) as refused:
            admin.create_replica_assignment(101, 2)
        assert refused.value.errno == 37 and "limit of 100" in str(refused.value)
        # the same connection goes on
        assert sorted(admin.create_replica_assignment(3, 3).assignments()) == [0, 1, 2]
    line = limited.wait_for_line(lambda r: r.get("event") == "request_handled" and r.get("error_code") == 37)
    assert "limit of 100" in line["error_message"]


def test_idle_connections_are_closed_and_busy_ones_are_not(limited):
    with socket.create_connection(("127.0.0.1", limited.port)) as idle, \
            socket.create_connection(("127.0.0.1", limited.port)) as busy:
        assert _answers(idle) and _answers(busy)
        started = time.monotonic()
        for i in range(12):  # 1.2 s of one request every 100 ms
            time.sleep(0.1)
            assert _answers(busy, 100 + i)
        assert _closed_by_server(idle, within=0.1)
        assert time.monotonic() - started >= 0.65
    line = limited.wait_for_line(lambda r: r.get("reason") == "idle timeout")
    assert line["event"] == "connection_closed" and line["connections_max_idle_ms"] == 700


def test_connection_limits_total_and_per_ip():
    with ServerProcess("--override", "max.connections=3", "--override", "max.connections.per.ip=2") as server:
        def connect(source: str) -> socket.socket:
            return socket.create_connection(("127.0.0.1", server.port), source_address=(source, 0), timeout=5)

        first, second = connect("127.0.0.1"), connect("127.0.0.1")
        assert _answers(first) and _answers(second)
        third = connect("127.0.0.1")  # a third from the same address
        assert _closed_by_server(third)
        other = connect("127.0.0.2")  # another address may still connect...
        assert _answers(other)
        fourth = connect("127.0.0.2")  # ...until the total is reached
        assert _closed_by_server(fourth)
        assert _answers(first, 11)  # the others are untouched
        first.close()
        time.sleep(0.2)
        again = connect("127.0.0.1")  # a freed slot is usable again
        assert _answers(again)
        for sock in (second, third, other, fourth, again):
            sock.close()
        per_ip = server.wait_for_line(lambda r: r.get("reason") == "max.connections.per.ip reached")
        total = server.wait_for_line(lambda r: r.get("reason") == "max.connections reached")
        assert per_ip["event"] == total["event"] == "connection_refused"
        assert per_ip["connections_from_ip"] == 2 and total["connections"] == 3


def _assignment_request(cid: int) -> bytes:
    request = CreateReplicaAssignmentRequest(version=0, num_partitions=3, replication_factor=2,
                                             force_simple_assignment=False, node_id=[], timeout_ms=10_000)
    request.with_header(correlation_id=cid, client_id="limits")
    return request.encode(header=True, framed=True)


def _six_pipelined_assignments(inflight: int) -> float:
    """Seconds for six pipelined assignments of 0.25 s each (four workers); answers in order."""
    with ServerThread({"replica.assignor.class.name": "tests.e2e.security_plugins.SlowAssignor",
                       "max.inflight.requests.per.connection": str(inflight),
                       "replica.assignor.max.workers": "4"}) as server, \
            socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        started = time.monotonic()
        sock.sendall(b"".join(_assignment_request(cid) for cid in range(1, 7)))
        cids = []
        for _ in range(6):
            response = read_frame(sock)
            cids.append(_LEN.unpack_from(response)[0])
            decoded = CreateReplicaAssignmentResponse.decode(response[5:], version=0)
            assert decoded.error_code == 0 and len(decoded.replica_assignment) == 3
        elapsed = time.monotonic() - started
        assert cids == [1, 2, 3, 4, 5, 6]
        return elapsed


def test_max_inflight_requests_per_connection_bounds_the_work_in_progress():
    """One in flight: the six run one after another (at least 6 x 0.25 s); 64 in flight: in
    parallel on four workers, clearly faster than the serial run of the same test."""
    serial = _six_pipelined_assignments(1)
    parallel = _six_pipelined_assignments(64)
    assert serial >= 6 * 0.25 * 0.97
    assert parallel < 0.8 * serial, (parallel, serial)


def test_a_peer_that_does_not_read_cannot_make_the_server_buffer_without_bound():
    """Pipeline ApiVersions without ever reading the answers: once the socket buffers are
    full the server stops reading, so sending stalls and the server's memory stays flat."""
    with ServerProcess() as server, socket.create_connection(("127.0.0.1", server.port)) as sock:
        before = server.rss_kib()
        frames = b"".join(_api_versions(cid) for cid in range(1, 5001))  # ~ 85 KB per batch
        sock.setblocking(False)
        sent, stalled_since = 0, None
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                sent += sock.send(frames)
                stalled_since = None
            except BlockingIOError:
                stalled_since = stalled_since or time.monotonic()
                if time.monotonic() - stalled_since > 1.0:
                    break
                time.sleep(0.01)
        assert stalled_since is not None, "the server kept reading from a peer that never reads"
        growth = server.rss_kib() - before
        # every request answered in memory would be ~10x what was sent; kernel buffers hold some MB
        assert sent < 64 * 1024 * 1024 and growth < 32 * 1024, (sent, growth)
        # and the server still serves others
        with socket.create_connection(("127.0.0.1", server.port)) as other:
            assert _answers(other)


def test_the_server_keeps_serving_and_stops_cleanly_when_its_log_reader_goes_away():
    """stdout is a pipe whose reader died: log lines are dropped, requests still answered,
    and SIGTERM still stops the server with exit code 0."""
    import signal
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-m", "kafka_replica_assignor.server.main", "--override", "listeners=PLAINTEXT://127.0.0.1:0",
                             "--override", "log.format=json"], stdout=subprocess.PIPE, text=True)
    try:
        port = json.loads(proc.stdout.readline())["port"]
        proc.stdout.close()
        for cid in range(3):
            with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
                sock.sendall(_LEN.pack(-1) if cid == 1 else _api_versions(cid))  # one warning line, dropped
                if cid == 1:
                    assert _closed_by_server(sock)
                else:
                    assert _LEN.unpack_from(read_frame(sock))[0] == cid
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
