"""No client can stall or starve the others, over real sockets: each finding of the hardening issue
(docs/security.md, "Fair scheduling and bounded memory") as it was sent, and what the server does now.

Nothing here compares against a clock: the evidence is what the server logs, answers and
holds (its public state is read from the test thread, as the other e2e tests do)."""

from __future__ import annotations

import signal
import socket
import ssl
import struct
import time
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families
from structlog.testing import capture_logs

from kafka_replica_assignor.protocol.frame import uvarint_bytes
from kafka_replica_assignor.protocol.messages import (
    ApiVersionsRequest,
    CreateReplicaAssignmentRequest,
    CreateReplicaAssignmentResponse,
)
from kafka_replica_assignor.server.security.users import scram_credential, write_users_file
from tests.e2e.pki import Pki
from tests.servers import ServerProcess, ServerThread, read_frame, wait_until


def _framed(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


def _header(api_key: int, api_version: int, correlation_id: int, flexible: bool) -> bytes:
    return struct.pack(">hhih", api_key, api_version, correlation_id, 4) + b"hard" + (b"\x00" if flexible else b"")


def _frame(request, correlation_id: int) -> bytes:
    request.with_header(correlation_id=correlation_id, client_id="hard")
    return bytes(request.encode(header=True, framed=True))


def _api_versions(sock: socket.socket, correlation_id: int) -> None:
    sock.sendall(_frame(ApiVersionsRequest(version=3, client_software_name="bystander",
                                           client_software_version="1"), correlation_id))
    assert struct.unpack_from(">i", read_frame(sock)) == (correlation_id,)


def _closed_by_server(sock: socket.socket, timeout: float = 10.0) -> bytes:
    sock.settimeout(timeout)
    received = b""
    while True:
        try:
            chunk = sock.recv(1 << 16)
        except ConnectionResetError:
            return received
        if not chunk:
            return received
        received += chunk


V0_HEAD = struct.pack(">ih?", 6, 3, False)  # NumPartitions, ReplicationFactor, ForceSimpleAssignment
V0_BODY = V0_HEAD + b"\x01" + struct.pack(">i", 5_000)  # NodeId: empty; timeoutMs; then the tags

# finding 2 and 9: what a Kafka broker refuses -> the reason the server gives
REFUSED = {
    "an array length of 200 KB of varint": (
        _header(68, 0, 1, True) + V0_HEAD + b"\x80" * 200_000 + b"\x01", "varint longer than 5 bytes"),
    "a tag declaring 2^28 bytes with 2 present": (
        _header(68, 0, 2, True) + V0_BODY + b"\x01\x07" + uvarint_bytes(1 << 28) + b"ab",
        "tagged field 7 declares 268435456 bytes with 2 left"),
    "a duplicate tag": (_header(68, 0, 4, True) + V0_BODY + b"\x02\x07\x01a\x07\x01b", "tagged field 7 appears twice"),
}


@pytest.fixture(scope="module")
def server():
    with ServerThread({"replica.assignor.isolation": "thread"}) as running:
        yield running


@pytest.mark.parametrize("name", list(REFUSED))
def test_malformed_bodies_are_refused_with_the_reason(server, name: str) -> None:
    payload, reason = REFUSED[name]
    with capture_logs() as logs, socket.create_connection(("127.0.0.1", server.port), timeout=10) as bystander:
        with socket.create_connection(("127.0.0.1", server.port), timeout=10) as bad:
            bad.sendall(_framed(payload))
            assert _closed_by_server(bad) == b""
        _api_versions(bystander, 9)
    (rejected,) = [line for line in logs if line["event"] == "frame_rejected"]
    assert rejected["reason"] == reason and rejected["api_key"] == 68
    assert [line["reason"] for line in logs if line["event"] == "connection_closed" and "reason" in line] == [
        "malformed request"]


def test_overlong_varint_before_sasl_authentication_is_refused(tmp_path) -> None:
    """ApiVersions v3 is read before authentication on SASL listeners: 293 KiB of varint there."""
    users = tmp_path / "users.json"
    write_users_file(users, {"alice": {"SCRAM-SHA-256": scram_credential("SCRAM-SHA-256", "secret", iterations=4096)}})
    body = b"\x80" * (293 * 1024) + b"\x01"  # ClientSoftwareName's length
    with ServerThread({"listeners": "SASL_PLAINTEXT://127.0.0.1:0", "sasl.users.file": str(users),
                       "sasl.enabled.mechanisms": "SCRAM-SHA-256"}) as sasl_server:
        with capture_logs() as logs, socket.create_connection(("127.0.0.1", sasl_server.port), timeout=10) as bad:
            bad.sendall(_framed(_header(18, 3, 1, True) + body))
            assert _closed_by_server(bad) == b""
    (rejected,) = [line for line in logs if line["event"] == "frame_rejected"]
    assert (rejected["api_key"], rejected["reason"]) == (18, "varint longer than 5 bytes")


def test_a_tagged_field_in_every_entry_is_answered(server) -> None:
    """40,000 CurrentAssignment entries, each with an unknown tagged field."""
    n = 40_000
    entry = b"".join(struct.pack(">i", p) + b"\x02" + struct.pack(">i", p % 6) + b"\x01\x05\x02ab" for p in range(n))
    body = (struct.pack(">ih?", n + 1, 1, False) + b"\x01" + struct.pack(">i", 30_000) + b"\x02t"
            + uvarint_bytes(n + 1) + entry + b"\x00")
    with socket.create_connection(("127.0.0.1", server.port), timeout=60) as sock:
        sock.sendall(_framed(_header(68, 1, 5, True) + body))
        payload = read_frame(sock)
    assert struct.unpack_from(">i", payload) == (5,)
    response = CreateReplicaAssignmentResponse.decode(payload[5:], version=1)
    assert response.error_code == 0, response.error_message
    assert [entry.partition_id for entry in response.replica_assignment] == [n]


def _placements_answered(server: ServerThread) -> float:
    """CreateReplicaAssignment requests the server has answered (its metrics endpoint)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{server.metrics_port}/metrics", timeout=5) as response:
        text = response.read().decode()
    return sum(sample.value for family in text_string_to_metric_families(text) for sample in family.samples
               if sample.name == "replica_assignor_requests_total"
               and sample.labels.get("api") == "CreateReplicaAssignment")


def test_a_client_that_pipelines_and_never_reads_stops_being_served() -> None:
    """5,000 pipelined 1,000-partition requests, never read back. The server stops reading
    that connection once its answers back up, and the bystander is answered meanwhile."""
    request = _frame(CreateReplicaAssignmentRequest(version=0, num_partitions=1_000, replication_factor=3, node_id=[],
                                                    timeout_ms=30_000), 1)
    with ServerThread({"replica.assignor.isolation": "thread", "metrics.listener": "http://127.0.0.1:0"}) as server, \
            socket.create_connection(("127.0.0.1", server.port), timeout=10) as bystander, \
            socket.create_connection(("127.0.0.1", server.port), timeout=10) as attacker:
        attacker.setblocking(False)
        pending = memoryview(request * 5_000)
        while pending:  # as much as the kernel takes, without ever reading
            try:
                pending = pending[attacker.send(pending):]
            except BlockingIOError:
                break
        _api_versions(bystander, 1)

        def attacker_paused() -> bool:
            conns = [c for c in server.server.state.connections if c.peer.endswith(f":{attacker.getsockname()[1]}")]
            return bool(conns) and conns[0].flow.reading_paused and conns[0].flow.writing_paused

        wait_until(attacker_paused, 60)
        answered = _placements_answered(server)
        for cid in range(2, 7):
            _api_versions(bystander, cid)
        time.sleep(0.2)
        assert _placements_answered(server) == answered  # nothing more is computed for it while it does not read


def test_sigterm_delivers_the_answer_being_written_whole() -> None:
    """SIGTERM while a multi-megabyte answer is being written; the client reads it only
    after the signal. It gets the whole frame, then EOF, and the server exits 0."""
    proc = ServerProcess("--override", "replica.assignor.isolation=thread").start()
    try:
        with socket.create_connection(("127.0.0.1", proc.port), timeout=120) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 128 * 1024)
            sock.sendall(_frame(CreateReplicaAssignmentRequest(version=0, num_partitions=300_000, replication_factor=3,
                                                               node_id=[], timeout_ms=120_000), 77))
            head = sock.recv(8, socket.MSG_PEEK | socket.MSG_WAITALL)  # the answer has started
            size = struct.unpack_from(">i", head)[0]
            assert size > 5_000_000  # more than the kernel buffers of both ends hold
            proc.proc.send_signal(signal.SIGTERM)
            proc.wait_for_line(lambda line: line.get("event") == "signal_received")
            time.sleep(0.5)
            payload = read_frame(sock)
            assert len(payload) == size and sock.recv(1) == b""
        response = CreateReplicaAssignmentResponse.decode(payload[5:], version=0)
        assert response.error_code == 0 and len(response.replica_assignment) == 300_000
        assert proc.proc.wait(30) == 0
    finally:
        proc.stop()


def test_buffered_request_bytes_are_capped_across_connections() -> None:
    """With queued.max.request.bytes=2 MiB: six connections each send 900 KiB of a 1 MiB
    frame. The server holds about the cap, the others wait unread; once frames complete they are all
    answered (SaslAuthenticate on a PLAINTEXT listener: ILLEGAL_SASL_STATE), nobody is stuck."""
    cap, frame_max = 2 << 20, 1 << 20
    with ServerThread({"queued.max.request.bytes": str(cap), "socket.request.max.bytes": str(frame_max)}) as small:
        token = b"x" * (frame_max - 64)
        payloads = [_header(36, 0, cid, False) + struct.pack(">i", len(token)) + token for cid in range(6)]
        socks = [socket.create_connection(("127.0.0.1", small.port), timeout=30) for _ in payloads]
        try:
            for sock, payload in zip(socks, payloads, strict=True):
                sock.sendall(_framed(payload)[:900 * 1024])
            memory = small.server.state.request_memory
            wait_until(lambda: memory.waiting >= 3)
            assert memory.used <= cap + 6 * 256 * 1024  # the cap, and at most one socket read of each waiter
            for sock, payload in zip(socks, payloads, strict=True):
                sock.sendall(_framed(payload)[900 * 1024:])
            for cid, sock in enumerate(socks):
                assert struct.unpack_from(">i", read_frame(sock)) == (cid,)
            wait_until(lambda: memory.used == 0 and memory.waiting == 0)
        finally:
            for sock in socks:
                sock.close()


def test_failed_tls_handshake_is_logged(tmp_path) -> None:
    """A client without a certificate under ssl.client.auth=required."""
    pki = Pki.create(tmp_path)
    with ServerThread({"listeners": "SSL://127.0.0.1:0", "ssl.keystore.location": str(pki.server_keystore),
                       "ssl.truststore.location": str(pki.ca.path), "ssl.client.auth": "required"}) as tls:
        context = ssl.create_default_context(cafile=str(pki.ca.path))
        context.check_hostname = False
        with capture_logs() as logs:
            with socket.create_connection(("127.0.0.1", tls.port), timeout=10) as raw:
                port = raw.getsockname()[1]
                try:
                    with context.wrap_socket(raw) as sock:
                        sock.sendall(b"\x00\x00\x00\x01x")
                        sock.recv(1)
                except (ssl.SSLError, ConnectionError):
                    pass
            wait_until(lambda: any(line["event"] == "tls_handshake_failed" for line in logs))
            wait_until(lambda: not tls.server.state.connections)
    (failed,) = [line for line in logs if line["event"] == "tls_handshake_failed"]
    assert failed["peer"] == f"127.0.0.1:{port}"
    assert failed["reason"] == "PEER_DID_NOT_RETURN_A_CERTIFICATE"
