"""ApiVersions (apiKey 18), versions 0-3.

Responses are static, so they are encoded once at start-up and only the correlation id
is patched per request. A body of ``OFF_LOOP_BODY_BYTES`` and more (a client software name
near ``socket.request.max.bytes``) is checked in a thread: the UTF-8 of 99 MiB held the event
loop 13-30 ms, and every other connection waited that long. A version newer than 3 gets UNSUPPORTED_VERSION with a version 0
body listing ApiVersions' own range, as Kafka does, so the client falls back.

From version 3 the response carries the supported feature ``replica.assignment``: it is
how our admin client tells this server from a Kafka broker, where apiKey 68 is
ConsumerGroupHeartbeat.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any

import kafka.errors as kafka_errors

from kafka_replica_assignor.protocol.frame import MalformedRequest, RequestHeaderPeek, frame, patch_correlation_id
from kafka_replica_assignor.protocol.messages import (
    REPLICA_ASSIGNMENT_FEATURE,
    ApiVersionsRequest,
    ApiVersionsResponse,
    check_body,
)

from ..framing import GATHER_BYTES, release_view
from ..shared_state import ServerState

REQUEST = ApiVersionsRequest
API_KEY = REQUEST.API_KEY
# the schema goes further (v4); this server answers up to v3, and newer versions get the fallback
MIN_VERSION, MAX_VERSION = REQUEST.valid_versions[0], 3
FEATURE_NAME = REPLICA_ASSIGNMENT_FEATURE
FEATURE_VERSION = 1
# a body at least this large is checked in a thread (a large frame, read into its own memory map)
OFF_LOOP_BODY_BYTES = GATHER_BYTES


def build_templates(supported: dict[int, tuple[int, int]]) -> dict[int, bytes]:
    """A response frame (correlation id 0) for every supported version, plus key -1 for the fallback."""
    keys = [ApiVersionsResponse.ApiVersion(api_key=k, min_version=lo, max_version=hi)
            for k, (lo, hi) in sorted(supported.items())]
    out: dict[int, bytes] = {}
    for version in range(MIN_VERSION, MAX_VERSION + 1):
        kwargs = dict(error_code=0, api_keys=keys, throttle_time_ms=0)
        if version >= 3:
            kwargs["supported_features"] = [ApiVersionsResponse.SupportedFeatureKey(
                name=FEATURE_NAME, min_version=FEATURE_VERSION, max_version=FEATURE_VERSION)]
        body = ApiVersionsResponse(version=version, **kwargs).encode(version=version)
        out[version] = frame(0, body, flexible_header=False)  # ApiVersions: always header v0
    fallback = ApiVersionsResponse(
        version=0, error_code=kafka_errors.UnsupportedVersionError.errno,
        api_keys=[ApiVersionsResponse.ApiVersion(api_key=API_KEY, min_version=MIN_VERSION,
                                                 max_version=MAX_VERSION)],
    ).encode(version=0)
    out[-1] = frame(0, fallback, flexible_header=False)
    return out


def handle(state: ServerState, header: RequestHeaderPeek,
           body: memoryview) -> bytes | Coroutine[Any, Any, bytes | MalformedRequest]:
    version = header.api_version
    if version > MAX_VERSION or version < MIN_VERSION:
        return patch_correlation_id(state.templates[(API_KEY, -1)], header.correlation_id)
    if len(body) >= OFF_LOOP_BODY_BYTES:
        return _checked_in_thread(state, header, body)
    # check the body so that a malformed request is refused like any other (its content is not needed)
    check_body(ApiVersionsRequest, body, version)
    return patch_correlation_id(state.templates[(API_KEY, version)], header.correlation_id)


async def _checked_in_thread(state: ServerState, header: RequestHeaderPeek,
                             body: memoryview) -> bytes | MalformedRequest:
    """A large body, checked off the loop; a malformed one closes the connection as on the loop."""
    malformed = await asyncio.to_thread(_check, body, header.api_version)
    if malformed is not None:
        return malformed
    return patch_correlation_id(state.templates[(API_KEY, header.api_version)], header.correlation_id)


def _check(body: memoryview, version: int) -> MalformedRequest | None:
    try:
        check_body(ApiVersionsRequest, body, version)
    except Exception as exc:
        return MalformedRequest.of(exc)
    finally:
        release_view(body)  # the frame's memory goes back here, not on the loop
    return None
