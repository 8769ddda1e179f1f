"""SaslAuthenticate (apiKey 36), versions 0-2, and the bare tokens of SaslHandshake v0.

Each request carries one client token of the mechanism chosen by SaslHandshake; the
response carries the server's token. When the mechanism completes, the connection is
authenticated as ``User:<name>`` and every API opens up. A failure is answered with
SASL_AUTHENTICATION_FAILED and Kafka's message, after
``connection.failed.authentication.delay.ms``, and the connection is closed. After
SaslHandshake v0 the same tokens travel without a Kafka header (:func:`handle_raw`); a
failure there closes the connection without an answer, as Kafka does.

PLAIN checks a password against a salted credential (PBKDF2), which takes milliseconds:
it runs in a thread, and the connection reads nothing more until it is done.
"""

from __future__ import annotations

import asyncio
import struct
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any

import kafka.errors as kafka_errors

from kafka_replica_assignor.protocol.frame import RequestHeaderPeek, frame
from kafka_replica_assignor.protocol.messages import SaslAuthenticateRequest, SaslAuthenticateResponse, decode_body

from ..security import AuthenticationFailed, SaslSession
from ..shared_state import ServerState
from .sasl_handshake import after_failure

if TYPE_CHECKING:
    from ..connection import KafkaConnection

# builds what is sent back from the server's token, or from the failure
Answer = Callable[[bytes | None, AuthenticationFailed | None], bytes]
Reply = bytes | Coroutine[Any, Any, bytes]

REQUEST = SaslAuthenticateRequest
API_KEY = REQUEST.API_KEY
MIN_VERSION, MAX_VERSION = REQUEST.valid_versions
AFTER_AUTHENTICATION = "SaslAuthenticate request received after successful authentication"
_LEN = struct.Struct(">i")


def _response(state: ServerState, header: RequestHeaderPeek, error: type[kafka_errors.BrokerResponseError],
              message: str | None, token: bytes | None) -> bytes:
    version = header.api_version
    state.metrics.note_error_code(error.errno)
    kwargs = {"session_lifetime_ms": 0} if version >= 1 else {}
    body = SaslAuthenticateResponse(version=version, error_code=error.errno, error_message=message,
                                    auth_bytes=token, **kwargs).encode(version=version)
    return frame(header.correlation_id, body,
                 flexible_header=SaslAuthenticateResponse.flexible_version_q(version))


def _record(conn: KafkaConnection, mechanism: str, failure: AuthenticationFailed | None) -> None:
    session = conn.sasl
    assert session is not None  # a SASL listener's connection
    if failure is not None:
        conn.authentication_failed("authentication failed", mechanism=mechanism, user=failure.user,
                                   detail=failure.detail)
    elif session.complete:
        assert session.principal is not None  # set when the exchange completes
        conn.authenticated(session.principal, mechanism)


def _evaluate(session: SaslSession, token: bytes) -> tuple[bytes | None, AuthenticationFailed | None]:
    try:
        return session.evaluate(token), None
    except AuthenticationFailed as exc:
        return None, exc


def _exchange(state: ServerState, conn: KafkaConnection, token: bytes, answer: Answer) -> Reply:
    """Evaluate one token; ``answer(server_token, failure)`` builds what is sent back.
    Returns bytes, or a coroutine when the answer must wait (PLAIN's key derivation runs
    in a thread; a failure is answered after the configured delay)."""
    session = conn.sasl
    assert session is not None and session.mechanism is not None  # after SaslHandshake
    mechanism = session.mechanism.name

    async def later(pending: bool, response: bytes | None, failure: AuthenticationFailed | None) -> bytes:
        if pending:
            response, failure = await asyncio.to_thread(_evaluate, session, token)
            _record(conn, mechanism, failure)
        if failure is not None:
            await after_failure(state, conn)
        return answer(response, failure)

    if session.mechanism.blocking:
        return later(True, None, None)
    response, failure = _evaluate(session, token)
    _record(conn, mechanism, failure)
    if failure is None:
        return answer(response, None)
    return later(False, response, failure)


def handle(state: ServerState, header: RequestHeaderPeek, body: memoryview, conn: KafkaConnection) -> Reply:
    request = decode_body(SaslAuthenticateRequest, body, header.api_version)
    session = conn.sasl
    if session is None or session.complete:
        return _response(state, header, kafka_errors.IllegalSaslStateError, AFTER_AUTHENTICATION, b"")

    def answer(response: bytes | None, failure: AuthenticationFailed | None) -> bytes:
        if failure is None:
            return _response(state, header, kafka_errors.NoError, None, response)
        return _response(state, header, kafka_errors.SaslAuthenticationFailedError, str(failure), b"")

    return _exchange(state, conn, bytes(request.auth_bytes or b""), answer)


def handle_raw(state: ServerState, token: bytes, conn: KafkaConnection) -> Reply:
    """A bare SASL token (after SaslHandshake v0): a bare token back, or nothing and a close."""
    def answer(response: bytes | None, failure: AuthenticationFailed | None) -> bytes:
        if failure is not None or response is None:
            return b""
        return _LEN.pack(len(response)) + response

    return _exchange(state, conn, bytes(token), answer)
