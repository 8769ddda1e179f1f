"""kafka_replica_assignor.protocol.structure: every well-formed request passes and decodes as the codec decodes it; what a
Kafka broker refuses is refused with its reason; and the check plus the decode take time linear in
the body's size (compared by ratio, 4N against N, never against a clock)."""

from __future__ import annotations

import gc
import struct
import time
from collections.abc import Callable

import pytest
from kafka.protocol.sasl import SaslAuthenticateRequest, SaslHandshakeRequest

from kafka_replica_assignor.protocol.frame import uvarint_bytes
from kafka_replica_assignor.protocol.messages import (
    ApiVersionsRequest,
    CreateReplicaAssignmentRequest,
    MetadataRequest,
    decode_body,
)
from kafka_replica_assignor.protocol.structure import StructureError, check_request_body, request_walk

REQUESTS = (ApiVersionsRequest, MetadataRequest, CreateReplicaAssignmentRequest, SaslHandshakeRequest,
            SaslAuthenticateRequest)
CRA = CreateReplicaAssignmentRequest


def _examples() -> list[tuple[type, int, object]]:
    out: list[tuple[type, int, object]] = []
    for v in range(CRA.min_version, CRA.max_version + 1):
        fields = dict(num_partitions=12, replication_factor=3, node_id=[1, 2, 3], timeout_ms=5_000)
        if v >= 1:
            fields.update(topic_name="orders", current_assignment=[
                CRA.CurrentPartition(partition_id=p, replicas=[1, 2]) for p in range(4)])
        out.append((CRA, v, CRA(version=v, **fields)))
        out.append((CRA, v, CRA(version=v, num_partitions=1, replication_factor=1, node_id=None, timeout_ms=1)))
    for v in range(0, 4):
        kwargs = dict(client_software_name="unit", client_software_version="1.0") if v >= 3 else {}
        out.append((ApiVersionsRequest, v, ApiVersionsRequest(version=v, **kwargs)))
    for v in range(0, 13):
        topic = MetadataRequest.MetadataRequestTopic(name="orders", **({"topic_id": None} if v >= 10 else {}))
        kwargs = {"allow_auto_topic_creation": False} if v >= 4 else {}
        out.append((MetadataRequest, v, MetadataRequest(version=v, topics=[topic], **kwargs)))
        if v >= 1:
            out.append((MetadataRequest, v, MetadataRequest(version=v, topics=None, **kwargs)))
    for v in (0, 1):
        out.append((SaslHandshakeRequest, v, SaslHandshakeRequest(version=v, mechanism="SCRAM-SHA-256")))
    for v in (0, 1, 2):
        out.append((SaslAuthenticateRequest, v, SaslAuthenticateRequest(version=v, auth_bytes=b"n,,n=alice,r=x")))
    return out


EXAMPLES = _examples()


@pytest.mark.parametrize("cls", REQUESTS, ids=lambda c: c.__name__)
def test_every_version_of_every_request_has_a_walk(cls) -> None:
    for version in range(cls.valid_versions[0], cls.valid_versions[1] + 1):
        request_walk(cls, version)


@pytest.mark.parametrize("cls, version, message", EXAMPLES, ids=lambda x: getattr(x, "__name__", str(x))[:30])
def test_well_formed_bodies_pass_untouched(cls, version, message) -> None:
    body = bytes(message.encode(version=version))
    assert check_request_body(cls, version, body) is None
    assert decode_body(cls, memoryview(body), version) == cls.decode(body, version=version)


def _cra_v1(entries: int, entry_tag: bytes = b"\x00", tail: bytes = b"\x00") -> bytes:
    """CreateReplicaAssignment v1 written by hand: ``entries`` CurrentAssignment entries of one replica,
    each ending with the tagged-field section ``entry_tag``; ``tail`` is the request's own section."""
    head = struct.pack(">ih?", entries, 1, False) + b"\x01" + struct.pack(">i", 5_000) + b"\x02t"
    entry = b"".join(struct.pack(">i", p) + b"\x02" + struct.pack(">i", 1) + entry_tag for p in range(entries))
    return head + uvarint_bytes(entries + 1) + entry + tail


def test_unknown_tags_are_taken_out_before_the_codec_sees_them() -> None:
    tagged = _cra_v1(3, entry_tag=b"\x01\x05\x02ab", tail=b"\x02\x01\x00\x07\x01z")
    plain = _cra_v1(3)
    assert check_request_body(CRA, 1, tagged) == plain
    assert decode_body(CRA, memoryview(tagged), 1) == decode_body(CRA, memoryview(plain), 1)


V0 = struct.pack(">ih?", 6, 3, False) + b"\x01" + struct.pack(">i", 5_000)  # NodeId empty, then tags

MALFORMED = {
    "overlong varint": (V0[:7] + b"\x80" * 6 + b"\x01" + V0[8:] + b"\x00", "varint longer than 5 bytes"),
    "array past the end": (V0[:7] + uvarint_bytes(1001) + b"\x00" * 8 + b"\x00",
                           "an array of 1000 entries (4000 bytes) with"),
    "tag bigger than the body": (V0 + b"\x01\x07" + uvarint_bytes(1 << 28) + b"ab",
                                 "tagged field 7 declares 268435456 bytes with 2 left"),
    "duplicate tag": (V0 + b"\x02\x07\x01a\x07\x01b", "tagged field 7 appears twice"),
    "truncated": (V0[:-2], "truncated"),
    "string past the end": (_cra_v1(0)[:12] + b"\x7f" + b"x" * 10, "a string or bytes of 126 bytes"),
}


@pytest.mark.parametrize("name", list(MALFORMED))
def test_what_a_broker_refuses_is_refused_with_its_reason(name: str) -> None:
    body, reason = MALFORMED[name]
    version = 1 if name == "string past the end" else 0
    with pytest.raises(StructureError) as refused:
        decode_body(CRA, memoryview(body), version)
    assert refused.value.reason.startswith(reason), refused.value.reason


def test_non_flexible_negative_lengths_are_refused() -> None:
    body = struct.pack(">h", -2) + b"PLAIN"
    with pytest.raises(StructureError, match="negative length -2"):
        decode_body(SaslHandshakeRequest, memoryview(body), 1)


def _cpu_ratio(small: Callable[[], object], large: Callable[[], object], repeat: int = 9) -> float:
    """CPU time of ``large`` over ``small``: the least of ``repeat`` interleaved runs of each (the
    machine's other load only adds, and hits both alike), without the garbage collector (whose
    passes depend on everything else the process holds)."""
    best = [float("inf"), float("inf")]
    gc.collect()
    gc.disable()
    try:
        for _ in range(repeat):
            for i, work in enumerate((small, large)):
                started = time.process_time()
                work()
                best[i] = min(best[i], time.process_time() - started)
    finally:
        gc.enable()
    return best[1] / max(best[0], 1e-6)


def _decoded(body: bytes, version: int = 1) -> Callable[[], object]:
    return lambda: decode_body(CRA, memoryview(body), version)


def _refused(body: bytes, version: int = 0) -> Callable[[], None]:
    def run() -> None:
        with pytest.raises(StructureError):
            decode_body(CRA, memoryview(body), version)
    return run


LINEAR_CASES = {
    # the array length of finding 2: N continuation bytes (the codec's loop was O(N^2))
    "overlong varint": lambda n: _refused(V0[:7] + b"\x80" * (50 * n)),
    # finding 3: a tagged field in every entry (the codec copied the rest of the body per entry)
    "a tag in every entry": lambda n: _decoded(_cra_v1(n, b"\x01\x05\x02ab")),
    "many entries": lambda n: _decoded(_cra_v1(n)),
    "a tag claiming the world, in every entry": lambda n: _refused(
        _cra_v1(n, b"\x01\x05\x02ab")[:-1] + b"\x01\x05\x85\x80\x80\x80\x01", 1),
}


@pytest.mark.parametrize("name", list(LINEAR_CASES))
def test_work_is_linear_in_the_body_size(name: str) -> None:
    n = 2_000
    small, large = LINEAR_CASES[name](n), LINEAR_CASES[name](4 * n)
    small()
    large()  # warm: codec compiled, caches filled
    ratio = _cpu_ratio(small, large)
    assert ratio <= 6, f"{name}: 4x the size took {ratio:.1f}x the work"


# librdkafka 2.x's all-topics Metadata v12 request: a 4-byte array-count placeholder left in
# place, read as topics=null, allow_auto_topic_creation=false, no authorized operations, no
# tags, then 3 more bytes. Kafka answers it; so must we.
LIBRDKAFKA_ALL_TOPICS_METADATA_V12 = bytes.fromhex("00000000010000")


def test_bytes_after_the_body_are_ignored_as_kafka_does() -> None:
    request = decode_body(MetadataRequest, memoryview(LIBRDKAFKA_ALL_TOPICS_METADATA_V12), 12)
    assert request.topics is None
    assert decode_body(CRA, memoryview(V0 + b"\x00" + b"junk"), 0) == decode_body(CRA, memoryview(V0 + b"\x00"), 0)
