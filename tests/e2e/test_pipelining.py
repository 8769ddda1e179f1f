"""Pipelining on one raw socket: requests written back to back, before any answer is
read, come back strictly in request order even when a later one finishes first.

``replica.assignor.inline.max.replicas=0`` sends every assignment to the executor, so a
big assignment (slow) and a small one behind it (fast) run at the same time on
different threads; the small one is done first and must wait for the big one.
"""

from __future__ import annotations

import socket
import struct
import time

import pytest

from kafka_replica_assignor.protocol.messages import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    CreateReplicaAssignmentRequest,
    CreateReplicaAssignmentResponse,
    MetadataRequest,
    MetadataResponse,
)
from kafka_replica_assignor.server.dispatch import supported_versions
from tests.servers import ServerThread, read_frame

BIG = 40_000  # partitions: a few tenths of a second of assignment and encoding


def _frame(request, correlation_id: int) -> bytes:
    request.with_header(correlation_id=correlation_id, client_id="e2e-pipelining")
    return request.encode(header=True, framed=True)




def _assignment_request(n: int, rf: int = 3) -> CreateReplicaAssignmentRequest:
    return CreateReplicaAssignmentRequest(version=0, num_partitions=n, replication_factor=rf, node_id=[],
                                          timeout_ms=30_000)


# (correlation id, what, request factory); correlation ids are deliberately not monotonic
PIPELINE = [
    (9001, "big", lambda: _assignment_request(BIG)),
    (17, "api_versions", lambda: ApiVersionsRequest(version=3, client_software_name="e2e",
                                                    client_software_version="1")),
    (5, "small", lambda: _assignment_request(4)),
    (-3, "api_versions_v0", lambda: ApiVersionsRequest(version=0)),
    (123456, "metadata", lambda: MetadataRequest(version=12, topics=None)),
    (42, "big2", lambda: _assignment_request(BIG // 2, rf=2)),
    (0, "small2", lambda: _assignment_request(1, rf=1)),
    (7, "api_versions_v2", lambda: ApiVersionsRequest(version=2)),
]


def _check(what: str, body: bytes, request) -> None:
    if what.startswith("api_versions"):
        version = request.API_VERSION
        response = ApiVersionsResponse.decode(body, version=version)
        assert response.error_code == 0
        assert {k.api_key: (k.min_version, k.max_version) for k in response.api_keys} == supported_versions()
    elif what == "metadata":
        response = MetadataResponse.decode(body[1:], version=12)  # flexible header: one tag byte
        assert [b.node_id for b in response.brokers] == [0]
    else:
        response = CreateReplicaAssignmentResponse.decode(body[1:], version=0)
        assert response.error_code == 0, response.error_message
        assert len(response.replica_assignment) == request.num_partitions
        assert all(len(set(e.replicas)) == request.replication_factor for e in response.replica_assignment)


@pytest.mark.parametrize("loop", ["uvloop", "asyncio"])
def test_eight_in_flight_come_back_in_request_order(loop: str) -> None:
    overrides = {"replica.assignor.inline.max.replicas": "0", "max.partitions.per.request": str(BIG)}
    with ServerThread(overrides, loop=loop) as server, \
            socket.create_connection(("127.0.0.1", server.port), timeout=30) as sock:
        requests = [(cid, what, make()) for cid, what, make in PIPELINE]
        sock.sendall(b"".join(_frame(request, cid) for cid, _, request in requests))
        arrivals = []
        for cid, what, request in requests:
            payload = read_frame(sock)
            (got,) = struct.unpack_from(">i", payload)
            arrivals.append((got, time.monotonic()))
            assert got == cid, f"expected the answer to {what} (correlation id {cid}), got {got}"
            _check(what, payload[4:], request)
        assert [c for c, _ in arrivals] == [cid for cid, _, _ in PIPELINE]
        # the connection is still in sync: one more round trip
        sock.sendall(_frame(ApiVersionsRequest(version=1), 99))
        assert struct.unpack_from(">i", read_frame(sock)) == (99,)


def test_answers_wait_for_a_slow_head_even_when_ready_first() -> None:
    """The small assignment behind the big one is computed long before the big one ends
    (they run on different executor threads), and is still written after it."""
    overrides = {"replica.assignor.inline.max.replicas": "0", "max.partitions.per.request": str(BIG)}
    with ServerThread(overrides) as server, \
            socket.create_connection(("127.0.0.1", server.port), timeout=30) as sock, \
            socket.create_connection(("127.0.0.1", server.port), timeout=30) as probe:
        sock.sendall(_frame(_assignment_request(BIG), 1) + _frame(_assignment_request(3), 2))
        # meanwhile another connection is answered at once: the loop is not blocked
        started = time.monotonic()
        probe.sendall(_frame(ApiVersionsRequest(version=3, client_software_name="e2e",
                                                client_software_version="1"), 77))
        assert struct.unpack_from(">i", read_frame(probe)) == (77,)
        probe_latency = time.monotonic() - started
        first = read_frame(sock)
        big_done = time.monotonic() - started
        second = read_frame(sock)
        assert struct.unpack_from(">i", first) == (1,)
        assert struct.unpack_from(">i", second) == (2,)
        assert probe_latency < big_done, (probe_latency, big_done)
        assert len(CreateReplicaAssignmentResponse.decode(first[5:], version=0).replica_assignment) == BIG
        assert len(CreateReplicaAssignmentResponse.decode(second[5:], version=0).replica_assignment) == 3
