"""Metadata answers naming unknown topics (protocol/fast_metadata.py) are exactly the codec's, for
every version this server answers, whatever the names and the broker named."""

from __future__ import annotations

import kafka.errors as kafka_errors
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_replica_assignor.protocol.fast_metadata import unknown_topics_encoder
from kafka_replica_assignor.protocol.messages import MetadataResponse as Response

VERSIONS = range(0, 13)  # as server/handlers/metadata.py answers
# names of 0 to Kafka's longest 249 characters, any text (each name's length crosses one varint byte at 127)
names = st.lists(st.text(min_size=1, max_size=249), max_size=40)
hosts = st.sampled_from(["127.0.0.1", "broker-0.example.com", "\u00e9.example"])


def codec_body(version: int, host: str, port: int, topics: list[str]) -> bytes:
    return Response(
        version=version, throttle_time_ms=0,
        brokers=[Response.MetadataResponseBroker(node_id=7, host=host, port=port, rack=None)],
        cluster_id="replica-assignor", controller_id=7,
        topics=[Response.MetadataResponseTopic(error_code=kafka_errors.UnknownTopicOrPartitionError.errno, name=name,
                                               is_internal=False, partitions=[]) for name in topics],
    ).encode(version=version)


def encoder(version: int, host: str, port: int):
    return unknown_topics_encoder(lambda topics: codec_body(version, host, port, list(topics)),
                                  Response.flexible_version_q(version))


@settings(max_examples=200)
@given(version=st.sampled_from(VERSIONS), host=hosts, port=st.integers(0, 65535), topics=names)
def test_the_answer_is_byte_identical_to_the_codec(version, host, port, topics):
    assert encoder(version, host, port).body(topics) == codec_body(version, host, port, topics)


def test_the_topic_limit_decodes_back_in_every_version():
    topics = [f"topic-{i:05d}".ljust(249, "x") for i in range(10_000)]
    for version in VERSIONS:
        body = encoder(version, "127.0.0.1", 9095).body(topics)
        assert body == codec_body(version, "127.0.0.1", 9095, topics)
        assert [t.name for t in Response.decode(body, version=version).topics] == topics


def test_an_answer_of_another_shape_is_refused():
    """The encoder checks what it assumes against the codec's answers: an answer without a topics
    array where expected, or whose entries are not the same around their names, is refused."""
    def extra_byte_per_topic(topics):
        return codec_body(1, "h", 1, list(topics)) + b"\x00" * len(topics)

    for encode, flexible in [(lambda topics: codec_body(1, "h", 1, list(topics)), True),
                             (lambda topics: codec_body(9, "h", 1, list(topics)), False),
                             (extra_byte_per_topic, False)]:
        with pytest.raises(ValueError):
            unknown_topics_encoder(encode, flexible)


# ---- the request side: the names read straight from a body (fast_metadata.TopicNamesReader) ----
from kafka_replica_assignor.protocol.fast_metadata import topic_names_reader  # noqa: E402
from kafka_replica_assignor.protocol.messages import MetadataRequest as Request  # noqa: E402
from kafka_replica_assignor.protocol.messages import decode_body  # noqa: E402

REQUEST_VERSIONS = range(0, 13)    # as server/handlers/metadata.py decodes
request_names = st.lists(st.one_of(st.text(max_size=249), st.just("")), max_size=30)


def request_body(version: int, topics: list[str | None], *, ids: list[bytes] | None = None,
                 auto: bool = True, cluster_ops: bool = False, topic_ops: bool = False) -> bytes:
    import uuid
    entries = []
    for k, name in enumerate(topics):
        entry = Request.MetadataRequestTopic(version=version, name=name)
        if version >= 10 and ids is not None:
            entry.topic_id = uuid.UUID(bytes=ids[k % len(ids)])
        entries.append(entry)
    request = Request(version=version, topics=entries)
    if version >= 4:
        request.allow_auto_topic_creation = auto
    if 8 <= version <= 10:
        request.include_cluster_authorized_operations = cluster_ops
    if version >= 8:
        request.include_topic_authorized_operations = topic_ops
    return bytes(request.encode(version=version))


def reader(version: int):
    return topic_names_reader(lambda names: request_body(version, list(names)), Request.flexible_version_q(version))


def codec_names(version: int, body: bytes) -> list[str] | None:
    """The codec's decode of ``body`` as the server uses it (empty names left out), or None when it refuses."""
    try:
        request = decode_body(Request, memoryview(body), version)
    except Exception:  # noqa: BLE001 - any refusal
        return None
    return [t.name for t in (request.topics or []) if t.name]


def read_names(version: int, body: bytes) -> list[str] | None:
    """The reader's names, the rest decoded by the codec as the server does; None when it declines or the rest is refused."""
    r = reader(version)
    found = r.names(body)
    if found is None:
        return None
    raws, end = found
    try:
        decode_body(Request, memoryview(r.empty + body[end:]), version)
    except Exception:  # noqa: BLE001 - the server answers as the codec would: refused
        return None
    return [str(raw, "utf-8") for raw in raws]


@settings(max_examples=300)
@given(version=st.sampled_from(REQUEST_VERSIONS), topics=request_names,
       ids=st.lists(st.binary(min_size=16, max_size=16), min_size=1, max_size=3), auto=st.booleans(),
       ops=st.booleans())
def test_the_names_read_are_the_codecs(version, topics, ids, auto, ops):
    """On well-formed bodies the reader gives the codec's names, or declines (an empty name)."""
    body = request_body(version, topics, ids=ids, auto=auto, cluster_ops=ops, topic_ops=not ops)
    got = read_names(version, body)
    if "" in topics:
        assert got is None
    else:
        assert got is not None and got == codec_names(version, body)


@settings(max_examples=500)
@given(version=st.sampled_from(REQUEST_VERSIONS), topics=st.lists(st.text(min_size=1, max_size=40), max_size=8),
       cut=st.integers(0, 400), at=st.integers(0, 400), byte=st.integers(0, 255), extra=st.binary(max_size=6))
def test_on_a_mutated_body_the_reader_never_answers_what_the_codec_refuses(version, topics, cut, at, byte, extra):
    """Truncated, changed and extended bodies: whenever the reader (and the codec on the rest)
    answers, the codec accepts the whole body and names the same topics."""
    body = bytearray(request_body(version, topics))
    if body:
        body[at % len(body)] = byte
    body = bytes(body[:cut]) + extra if cut < len(body) else bytes(body) + extra
    got = read_names(version, body)
    if got is not None:
        assert got == codec_names(version, body)


def test_the_topic_limit_is_read_in_every_version():
    topics = [f"topic-{i:05d}".ljust(40, "x") for i in range(10_000)]
    for version in REQUEST_VERSIONS:
        body = request_body(version, topics, ids=[bytes(range(16))])
        assert read_names(version, body) == topics


def test_a_request_of_another_shape_is_refused():
    """The reader checks what it assumes against the codec's requests: a body whose topics array is
    not first, or whose entries differ around their names, is refused when the reader is built."""
    for encode, flexible in [(lambda names: b"\x00" + request_body(1, list(names)), False),
                             (lambda names: request_body(1, list(names)) + b"\x00" * len(names), False),
                             (lambda names: request_body(9, list(names)), False)]:
        with pytest.raises(ValueError):
            topic_names_reader(encode, flexible)


def test_mutated_bodies_are_both_read_and_declined():
    """The mutation test above is not empty: of 3,000 mutated bodies the reader answers some (each
    as the codec) and declines some the codec refuses."""
    import random
    rng = random.Random(1)
    answered = declined_refused = 0
    for _ in range(3000):
        version = rng.choice(REQUEST_VERSIONS)
        body = bytearray(request_body(version, [f"t{rng.randrange(10**6)}" for _ in range(rng.randrange(1, 6))]))
        if rng.random() < 0.5:
            body[rng.randrange(len(body))] = rng.randrange(256)
        if rng.random() < 0.3:
            del body[rng.randrange(len(body)):]
        got, codec = read_names(version, bytes(body)), codec_names(version, bytes(body))
        if got is not None:
            assert got == codec
            answered += 1
        elif codec is None:
            declined_refused += 1
    assert answered > 500 and declined_refused > 100, (answered, declined_refused)
