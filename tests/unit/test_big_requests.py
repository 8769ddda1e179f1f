"""Requests whose size would hold the event loop: checked without decoding (ApiVersions), and
large CreateReplicaAssignment bodies decoded, interpreted, placed and encoded off the loop
(``run`` of a job carrying the raw body). Each fast path is checked against the plain one."""

from __future__ import annotations

import random
import socket
import struct

import pytest
from structlog.testing import capture_logs

from kafka_replica_assignor.assignors import ANONYMOUS, ClusterView, create_assignor, place
from kafka_replica_assignor.protocol.fast import encode_assignment_body
from kafka_replica_assignor.protocol.messages import (
    ApiVersionsRequest,
    CreateReplicaAssignmentRequest,
    check_body,
    decode_body,
)
from kafka_replica_assignor.protocol.structure import StructureError, peek_field
from kafka_replica_assignor.server.handlers import create_replica_assignment as handler
from kafka_replica_assignor.server.handlers.create_replica_assignment import (
    Outcome,
    PlacementJob,
    hand_over,
    interpret,
    request_rng,
    run,
)
from kafka_replica_assignor.server.shared_state import PlacementSettings
from tests.servers import ServerThread, read_frame

CRA = CreateReplicaAssignmentRequest
VIEW = ClusterView.of([(b, f"rack-{b % 3}") for b in range(6)])


def _cra(version: int, entries: int = 0, timeout_ms: int = 5_000) -> bytes:
    fields: dict = dict(num_partitions=entries + 5, replication_factor=3, node_id=[0, 1, 2, 3, 4, 5],
                        timeout_ms=timeout_ms)
    if version >= 1:
        fields.update(topic_name="orders", current_assignment=[
            CRA.CurrentPartition(partition_id=p, replicas=[p % 6, (p + 1) % 6, (p + 2) % 6]) for p in range(entries)])
    return bytes(CRA(version=version, **fields).encode(version=version))


def _outcome(fn, *args) -> str:
    try:
        fn(*args)
    except Exception:  # noqa: BLE001 - the kind of refusal is what is compared
        return "refused"
    return "accepted"


@pytest.mark.parametrize("version", range(0, 4))
def test_api_versions_check_refuses_exactly_what_decoding_refuses(version: int) -> None:
    """Mutated bodies (bytes flipped, cut, inserted; invalid UTF-8 among them): check_body and
    decode_body accept and refuse the same ones."""
    kwargs = dict(client_software_name="client-é", client_software_version="1.0") if version >= 3 else {}
    good = bytes(ApiVersionsRequest(version=version, **kwargs).encode(version=version))
    rng = random.Random(version)
    refused = 0
    for _ in range(3_000):
        body = bytearray(good)
        for _ in range(rng.randint(1, 3)):
            kind = rng.randrange(3)
            at = rng.randrange(len(body) + 1)
            if kind == 0 and body:
                body[min(at, len(body) - 1)] = rng.randrange(256)
            elif kind == 1:
                del body[at:]
            else:
                body[at:at] = bytes([rng.choice((0x00, 0x80, 0xC3, 0xFF, rng.randrange(256)))])
        view = memoryview(bytes(body))
        expected = _outcome(decode_body, ApiVersionsRequest, view, version)
        assert _outcome(check_body, ApiVersionsRequest, view, version) == expected, bytes(body)
        refused += expected == "refused"
    assert version < 3 or refused > 100  # the mutations do reach the refusals


@pytest.mark.parametrize("version", [0, 1])
def test_timeout_is_read_without_decoding(version: int) -> None:
    body = _cra(version, entries=3, timeout_ms=4_321)
    assert peek_field(CRA, version, memoryview(body), "timeout_ms") == 4_321 == decode_body(
        CRA, memoryview(body), version).timeout_ms
    with pytest.raises(StructureError):
        peek_field(CRA, version, memoryview(body[:9]), "timeout_ms")


@pytest.mark.parametrize("version", [0, 1])
def test_a_raw_body_is_answered_as_a_decoded_one(version: int) -> None:
    body = _cra(version, entries=800 if version else 0)
    placement = interpret(decode_body(CRA, memoryview(body), version), version, VIEW, 1_000_000)
    spec = placement.spec
    for seed in range(3):
        raw = run(_job(body, version, hand_over(request_rng(seed, body))))
        decoded = run(_job(placement, version, hand_over(request_rng(seed, body))))
        plain = place(create_assignor("default"), spec.topic_name, spec.partitions, spec.replication_factor,
                      placement.cluster, rng=hand_over(request_rng(seed, body)))
        assert raw == decoded == Outcome(encode_assignment_body(version, plain), len(plain))


def _job(request, version: int, rng: random.Random) -> PlacementJob:
    return PlacementJob(request, version, VIEW, rng, ANONYMOUS, PlacementSettings("default", 1_000_000, False, 1))


def test_a_malformed_raw_body_comes_back_as_such() -> None:
    body = _cra(1, entries=10)[:-1] + b"\x02\x07\x01a\x07\x01b"  # a duplicate tag at the end
    malformed = run(_job(body, 1, hand_over(random.Random(1)))).malformed
    assert malformed is not None and (malformed.reason, malformed.offset) == ("tagged field 7 appears twice",
                                                                              len(body) - 3)


def _header(correlation_id: int) -> bytes:
    return struct.pack(">hhih", 68, 1, correlation_id, 4) + b"unit" + b"\x00"


@pytest.fixture(scope="module")
def server():
    with ServerThread({"replica.assignor.isolation": "thread", "replica.assignor.random.seed": "7"}) as running:
        yield running


def _ask(port: int, payload: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(struct.pack(">i", len(payload)) + payload)
        return read_frame(sock)


def test_a_large_body_gets_the_bytes_the_loop_would_give(server, monkeypatch) -> None:
    body = _cra(1, entries=1_000)
    assert len(body) > handler.DETACHED_BODY_BYTES
    detached = _ask(server.port, _header(3) + body)
    monkeypatch.setattr(handler, "DETACHED_BODY_BYTES", 1 << 30)
    assert _ask(server.port, _header(3) + body) == detached


def test_a_large_malformed_body_closes_the_connection_with_the_reason(server) -> None:
    body = _cra(1, entries=1_000)[:-1] + b"\x02\x07\x01a\x07\x01b"
    with capture_logs() as logs, socket.create_connection(("127.0.0.1", server.port), timeout=30) as sock:
        payload = _header(4) + body
        sock.sendall(struct.pack(">i", len(payload)) + payload)
        sock.settimeout(30)
        assert sock.recv(1) == b""
    (rejected,) = [line for line in logs if line["event"] == "frame_rejected"]
    assert (rejected["api_key"], rejected["reason"], rejected["correlation_id"]) == (
        68, "tagged field 7 appears twice", 4)
    assert [line["reason"] for line in logs if line["event"] == "connection_closed"] == ["malformed request"]
