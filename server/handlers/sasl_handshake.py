"""SaslHandshake (apiKey 17), versions 0-1: the client names its SASL mechanism.

On a SASL listener, before authentication: an enabled mechanism is accepted and the
connection moves on to the exchange, with SaslAuthenticate requests (version 1) or bare
length-prefixed tokens (version 0, Kafka's pre-KIP-152 framing). A mechanism that is not
enabled gets UNSUPPORTED_SASL_MECHANISM with the enabled list, and the connection is
closed after ``connection.failed.authentication.delay.ms``, as Kafka does.

Anywhere else (a PLAINTEXT or SSL listener, or after authentication) the answer is
ILLEGAL_SASL_STATE, which is what a Kafka broker answers there (re-authentication,
KIP-368, is not offered: SaslAuthenticate's session lifetime is always 0).
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any

import kafka.errors as kafka_errors

from kafka_replica_assignor.protocol.frame import RequestHeaderPeek, frame
from kafka_replica_assignor.protocol.messages import SaslHandshakeRequest, SaslHandshakeResponse, decode_body

from ..connection_rate import take_turn
from ..shared_state import ServerState

if TYPE_CHECKING:
    from ..connection import KafkaConnection

REQUEST = SaslHandshakeRequest
API_KEY = REQUEST.API_KEY
MIN_VERSION, MAX_VERSION = REQUEST.valid_versions


def _response(state: ServerState, header: RequestHeaderPeek, error: type[kafka_errors.BrokerResponseError],
              mechanisms: list[str]) -> bytes:
    state.metrics.note_error_code(error.errno)
    body = SaslHandshakeResponse(version=header.api_version, error_code=error.errno,
                                 mechanisms=mechanisms).encode(version=header.api_version)
    return frame(header.correlation_id, body,
                 flexible_header=SaslHandshakeResponse.flexible_version_q(header.api_version))


async def after_failure(state: ServerState, conn: KafkaConnection) -> None:
    """A failed authentication is answered after ``connection.failed.authentication.delay.ms``, then in
    its turn of ``max.failed.authentication.rate`` (all addresses together, the one served least
    recently first); refused a turn (``max.failed.authentication.wait.ms`` waited), its connection
    closes unanswered."""
    await asyncio.sleep(state.config.connection_failed_authentication_delay_ms / 1000.0)
    if not await take_turn(state.failed_authentications, conn.admission.ip):
        conn.close("failed authentications over their rate")


async def _after_failure(state: ServerState, conn: KafkaConnection, response: bytes) -> bytes:
    await after_failure(state, conn)
    return response


def handle(state: ServerState, header: RequestHeaderPeek, body: memoryview,
           conn: KafkaConnection) -> bytes | Coroutine[Any, Any, bytes]:
    request = decode_body(SaslHandshakeRequest, body, header.api_version)
    session = conn.sasl
    if session is None or session.complete:
        return _response(state, header, kafka_errors.IllegalSaslStateError, [])
    enabled = list(state.config.sasl_enabled_mechanisms)
    if not session.start(request.mechanism, raw=header.api_version == 0):
        conn.authentication_failed("unsupported SASL mechanism", mechanism=request.mechanism)
        return _after_failure(state, conn,
                              _response(state, header, kafka_errors.UnsupportedSaslMechanismError, enabled))
    return _response(state, header, kafka_errors.NoError, enabled)
