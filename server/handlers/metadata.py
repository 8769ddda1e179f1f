"""Metadata (apiKey 3), versions 0-12: this server is the only broker, at its advertised
address, so that kafka-python's and aiokafka's clients bootstrap against it. Topics asked
for by name get UNKNOWN_TOPIC_OR_PARTITION: the server holds no topics.
"""

from __future__ import annotations

from collections.abc import Iterable

import kafka.errors as kafka_errors

from protocol.frame import RequestHeaderPeek, frame, patch_correlation_id
from protocol.messages import MetadataRequest, MetadataResponse, decode_body

from ..state import ServerState

REQUEST = MetadataRequest
API_KEY = REQUEST.API_KEY
# the schema goes further (v13); this server answers up to v12, and closes on newer versions
MIN_VERSION, MAX_VERSION = REQUEST.valid_versions[0], 12


def _response(state: ServerState, version: int, topics: Iterable[str]) -> MetadataResponse:
    adv = state.advertised
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


def handle(state: ServerState, header: RequestHeaderPeek, body: memoryview) -> bytes:
    version = header.api_version
    request = decode_body(MetadataRequest, body, version)
    names = [t.name for t in (request.topics or []) if t.name]
    if not names:
        return patch_correlation_id(state.templates[(API_KEY, version)], header.correlation_id)
    encoded = _response(state, version, names).encode(version=version)
    return frame(header.correlation_id, encoded, flexible_header=MetadataResponse.flexible_version_q(version))
