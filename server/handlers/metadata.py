"""Metadata (apiKey 3), versions 0-12: this server is the only broker, at its advertised
address, so that kafka-python's and aiokafka's clients bootstrap against it. Topics asked
for by name get UNKNOWN_TOPIC_OR_PARTITION: the server holds no topics.

A request names at most ``metadata.max.topics.per.request`` topics, in at most as many bytes as
that many topics of Kafka's longest names take: the count and the size are read before anything
is decoded, and a request over either closes the connection (``frame_rejected``), so that one
request naming "a" ten million times costs nothing but its reading (it once froze every client
for 72 s and took 3 GB). The answer echoes each name, so it stays as small as the request, and is
written from the names (:mod:`kafka_replica_assignor.protocol.fast_metadata`, the codec's bytes). A
request naming ``OFF_LOOP_TOPICS`` or more is decoded and answered in a thread, its names read
without an object per topic (:class:`~kafka_replica_assignor.protocol.fast_metadata.TopicNamesReader`;
the codec decodes the fields after them, and the whole request when the reader declines).
"""

from __future__ import annotations

import asyncio
import functools
import struct
from collections.abc import Coroutine, Iterable
from contextvars import ContextVar
from typing import Any

import kafka.errors as kafka_errors

from kafka_replica_assignor.protocol.fast_metadata import (
    TopicNamesReader,
    UnknownTopicsEncoder,
    topic_names_reader,
    unknown_topics_encoder,
)
from kafka_replica_assignor.protocol.frame import (
    MalformedRequest,
    RequestHeaderPeek,
    frame,
    patch_correlation_id,
    uvarint_at,
)
from kafka_replica_assignor.protocol.messages import MetadataRequest, MetadataResponse, decode_body
from kafka_replica_assignor.protocol.structure import StructureError

from ..config import Listener, ServerConfig
from ..framing import release_view
from ..shared_state import ServerState

REQUEST = MetadataRequest
API_KEY = REQUEST.API_KEY
# the schema goes further (v13); this server answers up to v12, and closes on newer versions
MIN_VERSION, MAX_VERSION = REQUEST.valid_versions[0], 12
# a request naming at least this many topics is decoded and answered in a thread
OFF_LOOP_TOPICS = 1000


# the advertised address of the listener the request came on (set by the connection for each read):
# as Kafka, Metadata names the broker as it is reached through that listener
current_advertised: ContextVar[Listener | None] = ContextVar("current_advertised", default=None)


def _response(state: ServerState, version: int, topics: Iterable[str], adv: Listener | None = None) -> MetadataResponse:
    adv = adv or state.advertised
    return MetadataResponse(
        version=version,
        throttle_time_ms=0,
        brokers=[MetadataResponse.MetadataResponseBroker(
            node_id=state.config.node_id, host=adv.host, port=adv.port, rack=None)],
        cluster_id=state.cluster_id,
        controller_id=state.config.node_id,
        topics=[MetadataResponse.MetadataResponseTopic(
            error_code=kafka_errors.UnknownTopicOrPartitionError.errno, name=name,
            is_internal=False, partitions=[]) for name in topics],
    )


def build_templates(state: ServerState) -> dict[int, bytes]:
    """The no-topic response for every version (the common bootstrap request)."""
    return {v: frame(0, _response(state, v, []).encode(version=v),
                     flexible_header=MetadataResponse.flexible_version_q(v))
            for v in range(MIN_VERSION, MAX_VERSION + 1)}


# bytes one named topic may take in a request: a name of Kafka's longest (249), its length, a topic
# id (v10+), tagged fields and a margin
_TOPIC_BYTES = 249 + 2 + 16 + 8
_INT32 = struct.Struct(">i")


def _max_body(max_topics: int) -> int:
    return 64 + max_topics * _TOPIC_BYTES


def max_request_bytes(config: ServerConfig) -> int:
    """The largest Metadata request frame worth reading: a larger one is refused from its first
    bytes (a request header with the longest client id, and the largest body)."""
    return 10 + 0x7FFF + 8 + _max_body(config.metadata_max_topics_per_request)


def check_size(body: memoryview, version: int, max_topics: int) -> int:
    """Refuse a request naming more than ``max_topics`` topics, or larger than that many can be,
    before it is decoded: the topics array's count is the body's first field. Returns the count
    (-1 when the body is too short to say)."""
    if len(body) > _max_body(max_topics):
        raise StructureError(f"a Metadata request of {len(body)} bytes is larger than "
                             f"metadata.max.topics.per.request={max_topics} topics can be", 0)
    if MetadataRequest.flexible_version_q(version):
        count = uvarint_at(body, 0) - 1  # compact array: count + 1, 0 for null
    elif len(body) >= 4:
        (count,) = _INT32.unpack_from(body, 0)
    else:
        return -1  # the codec says what is wrong with it
    if count > max_topics:
        raise StructureError(f"a Metadata request naming {count} topics is over "
                             f"metadata.max.topics.per.request={max_topics}", 0)
    return count


def handle(state: ServerState, header: RequestHeaderPeek,
           body: memoryview) -> bytes | Coroutine[Any, Any, bytes | MalformedRequest]:
    count = check_size(body, header.api_version, state.config.metadata_max_topics_per_request)
    if count >= OFF_LOOP_TOPICS:
        return _answered_in_thread(state, header, body, current_advertised.get())
    return _answer(state, header, body, current_advertised.get())


async def _answered_in_thread(state: ServerState, header: RequestHeaderPeek, body: memoryview,
                              adv: Listener | None) -> bytes | MalformedRequest:
    """Many topics: decoded and answered in a thread, which gives the loop the interpreter whenever it
    waits for it for :data:`kafka_replica_assignor.server.runtime.SWITCH_INTERVAL_S` (on the loop, a
    request at the topic limit held it tens of milliseconds, and one client sending them back to back
    took other clients' p99 from 63 to 795 ms)."""
    return await asyncio.to_thread(_answer_or_malformed, state, header, body, adv)


def _answer_or_malformed(state: ServerState, header: RequestHeaderPeek, body: memoryview,
                         adv: Listener | None) -> bytes | MalformedRequest:
    try:
        return _answer_from_names(state, header, body, adv) or _answer(state, header, body, adv)
    except Exception as exc:
        return MalformedRequest.of(exc)
    finally:
        release_view(body)  # a large frame's memory goes back here, not on the loop


def _answer(state: ServerState, header: RequestHeaderPeek, body: memoryview, adv: Listener | None) -> bytes:
    version = header.api_version
    request = decode_body(MetadataRequest, body, version)
    names = [t.name for t in (request.topics or []) if t.name]
    if adv is not None and adv == state.advertised:
        adv = None  # the first listener's: the answers encoded at start-up
    if not names and adv is None:
        return patch_correlation_id(state.templates[(API_KEY, version)], header.correlation_id)
    flexible = MetadataResponse.flexible_version_q(version)
    return frame(header.correlation_id, _encoder(state, version, adv).body(names), flexible_header=flexible)


def _answer_from_names(state: ServerState, header: RequestHeaderPeek, body: memoryview,
                       adv: Listener | None) -> bytes | None:
    """:func:`_answer` with the names read straight from the body (a request at the topic limit
    decoded by the codec held the interpreter 10-20 ms, one object per topic), the fields after
    them decoded by the codec from the same body naming none, so that it refuses what it refused;
    None when the reader declines the topics array (the codec then reads it all)."""
    version = header.api_version
    reader = _reader(version)
    found = reader.names(body)
    if found is None:
        return None
    names, end = found
    decode_body(MetadataRequest, memoryview(reader.empty + bytes(body[end:])), version)
    if adv is not None and adv == state.advertised:
        adv = None
    flexible = MetadataResponse.flexible_version_q(version)
    return frame(header.correlation_id, _encoder(state, version, adv).body_of_raw(names), flexible_header=flexible)


@functools.cache
def _reader(version: int) -> TopicNamesReader:
    """The topics array of a request of ``version``, read from the codec's requests once."""
    def encode(names: Iterable[str]) -> bytes:
        topics = [MetadataRequest.MetadataRequestTopic(version=version, name=name) for name in names]
        return bytes(MetadataRequest(version=version, topics=topics).encode(version=version))
    return topic_names_reader(encode, MetadataRequest.flexible_version_q(version))


def _encoder(state: ServerState, version: int, adv: Listener | None) -> UnknownTopicsEncoder:
    """The answer of ``version`` through listener ``adv``, with the topics to be named: built from the
    codec's answers naming none and one, once per version and listener (a thread may build one too:
    the same value)."""
    key = (version, adv or state.advertised)
    encoder = state.metadata_encoders.get(key)
    if encoder is None:
        encoder = state.metadata_encoders[key] = unknown_topics_encoder(
            lambda names: _response(state, version, names, adv).encode(version=version),
            MetadataResponse.flexible_version_q(version))
    return encoder
