"""Bad frames close only the connection that sent them, with a log line saying why;
every other connection keeps being served. ApiVersions newer than the server's gets
Kafka's fallback answer instead (UNSUPPORTED_VERSION with a version 0 body).

The bad bytes are written by hand on purpose: no codec would produce them.
"""

from __future__ import annotations

import random
import socket
import struct

import kafka.errors as kafka_errors
import pytest
from kafka.protocol.metadata import ApiVersionsResponse as KafkaPythonApiVersionsResponse
from structlog.testing import capture_logs

from kafka_replica_assignor.protocol.client import ReplicaAssignorAdminClient
from kafka_replica_assignor.protocol.messages import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    CreateReplicaAssignmentRequest,
)
from kafka_replica_assignor.server.dispatch import supported_versions
from tests.servers import ServerThread, read_frame

MAX_BYTES = 4096


def _frame(request, correlation_id: int) -> bytes:
    request.with_header(correlation_id=correlation_id, client_id="e2e-bad-frames")
    return request.encode(header=True, framed=True)


def _assignment_body() -> bytes:
    return CreateReplicaAssignmentRequest(version=0, num_partitions=6, replication_factor=3, node_id=[],
                                          timeout_ms=5_000).encode(version=0)


def _assignment_frame(correlation_id: int = 1) -> bytes:
    """A well-formed CreateReplicaAssignment v0 request (header v2: empty tagged fields)."""
    return _framed(_header(68, 0, correlation_id) + b"\x00" + _assignment_body())


def _header(api_key: int, api_version: int, correlation_id: int, client_id: bytes = b"bad") -> bytes:
    return struct.pack(">hhih", api_key, api_version, correlation_id, len(client_id)) + client_id


def _framed(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


def _garbage_assignment() -> bytes:
    rng = random.Random(20240611)
    return _framed(_header(68, 0, 5) + b"\x00" + bytes(rng.randrange(256) for _ in range(40)))


# name -> (bytes sent, reason the server logs)
BAD_FRAMES = {
    "negative length": (struct.pack(">i", -2) + b"\x00" * 16, "invalid frame size"),
    "length over socket.request.max.bytes": (struct.pack(">i", MAX_BYTES + 1), "invalid frame size"),
    "shorter than a header": (_framed(b"\x00\x12\x00"), "malformed request header"),
    "client id past the end": (_framed(struct.pack(">hhih", 18, 0, 1, 50) + b"abc"), "malformed request header"),
    "unknown api key (Fetch)": (_framed(_header(1, 4, 3)), "unknown api key"),
    "unknown api key (32767)": (_framed(_header(32767, 0, 3)), "unknown api key"),
    "CreateReplicaAssignment v9": (_framed(_header(68, 9, 4) + b"\x00" + _assignment_body()),
                                   "unsupported api version"),
    "Metadata v13": (_framed(_header(3, 13, 4) + b"\x00\x01\x00"), "unsupported api version"),
    "truncated body": (_framed(_header(68, 0, 4) + b"\x00" + _assignment_body()[:-3]), "malformed request"),
    "garbage body": (_garbage_assignment(), "malformed request"),
}


def _closed_by_server(sock: socket.socket, timeout: float = 5.0) -> bytes:
    """Read until the server closes; returns what came before the close."""
    sock.settimeout(timeout)
    received = b""
    while True:
        try:
            chunk = sock.recv(65536)
        except ConnectionResetError:
            return received
        if not chunk:
            return received
        received += chunk




@pytest.fixture(scope="module")
def small_server():
    with ServerThread({"socket.request.max.bytes": str(MAX_BYTES)}) as server:
        yield server


def _assert_served(server: ServerThread) -> None:
    with ReplicaAssignorAdminClient(server.bootstrap, request_timeout_ms=5_000) as admin:
        assignment = admin.create_replica_assignment(6, 3).assignments()
    assert sorted(assignment) == list(range(6))
    assert all(len(set(r)) == 3 for r in assignment.values())


@pytest.mark.parametrize("name", list(BAD_FRAMES))
def test_bad_frame_closes_only_its_own_connection(small_server, name: str) -> None:
    data, reason = BAD_FRAMES[name]
    with socket.create_connection(("127.0.0.1", small_server.port), timeout=5) as bystander:
        # a connection opened before, with a request half-written, is not disturbed
        half = _assignment_frame(11)
        bystander.sendall(half[:9])
        with capture_logs() as logs:
            with socket.create_connection(("127.0.0.1", small_server.port), timeout=5) as bad:
                bad.sendall(data)
                assert _closed_by_server(bad) == b""
            _assert_served(small_server)
        bystander.sendall(half[9:])
        assert struct.unpack_from(">i", read_frame(bystander)) == (11,)
    closes = [e for e in logs if e["event"] == "connection_closed" and e.get("reason")]
    assert [e["reason"] for e in closes] == [reason], logs


def test_answers_before_the_bad_frame_are_still_delivered(small_server) -> None:
    with socket.create_connection(("127.0.0.1", small_server.port), timeout=5) as sock:
        sock.sendall(_frame(ApiVersionsRequest(version=0), 1) + _framed(_header(32767, 0, 2)))
        received = _closed_by_server(sock)
    (size, correlation_id) = struct.unpack_from(">ii", received)
    assert correlation_id == 1
    assert len(received) == 4 + size
    assert ApiVersionsResponse.decode(received[8:], version=0).error_code == 0


def test_frame_at_the_size_limit_is_accepted(small_server) -> None:
    body = b"\x00" + _assignment_body()
    padding = b"x" * (MAX_BYTES - len(_header(68, 0, 3, b"")) - len(body))
    payload = _header(68, 0, 3, padding) + body
    assert len(payload) == MAX_BYTES
    with socket.create_connection(("127.0.0.1", small_server.port), timeout=5) as sock:
        sock.sendall(_framed(payload))
        assert struct.unpack_from(">i", read_frame(sock)) == (3,)


NEWER = supported_versions()[18][1] + 1  # the first ApiVersions version the server does not speak


@pytest.mark.parametrize("version", [NEWER, NEWER + 1, 127])
def test_api_versions_too_new_gets_the_v0_fallback(small_server, version: int) -> None:
    if version <= ApiVersionsRequest.max_version:  # a real request, as a newer client sends it
        data = _frame(ApiVersionsRequest(version=version, client_software_name="future-client",
                                         client_software_version="9.9"), 21)
    else:  # a version no codec knows: header v2 and an opaque body
        data = _framed(_header(18, version, 21) + b"\x00" + b"\x0efuture-client\x049.9\x00")
    with socket.create_connection(("127.0.0.1", small_server.port), timeout=5) as sock:
        sock.sendall(data)
        payload = read_frame(sock)
        assert struct.unpack_from(">i", payload) == (21,)
        body = payload[4:]  # ApiVersions responses always use header v0: no tagged fields
        for cls in (ApiVersionsResponse, KafkaPythonApiVersionsResponse):
            response = cls.decode(body, version=0)
            assert response.error_code == kafka_errors.UnsupportedVersionError.errno == 35
            assert [(k.api_key, k.min_version, k.max_version) for k in response.api_keys] == \
                [(18, *supported_versions()[18])]
        # the connection stays open and the client falls back
        sock.sendall(_frame(ApiVersionsRequest(version=3, client_software_name="future-client",
                                               client_software_version="9.9"), 22))
        payload = read_frame(sock)
        assert struct.unpack_from(">i", payload) == (22,)
        response = ApiVersionsResponse.decode(payload[4:], version=3)
        assert response.error_code == 0
        assert {k.api_key: (k.min_version, k.max_version) for k in response.api_keys} == supported_versions()
