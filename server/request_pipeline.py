"""One request of a connection, from its frame to its answer in the connection's queue.

A frame becomes a request: its header is peeked (api key, version, correlation id); an
unknown api key, an unsupported version outside ApiVersions, a request the SASL authentication
does not expect now, or a body that does not decode closes this connection only, with a log
line saying why. The handler's result is queued in request order
(:class:`kafka_replica_assignor.server.responses.ResponseQueue`): bytes at once, or a task whose answer is written when
it and every answer before it are done. An exclusive request (a SASL step) stops the connection
reading until its answer is done; a failed authentication makes its answer the last.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import kafka.errors as kafka_errors
import structlog

from kafka_replica_assignor.protocol.frame import (
    MalformedFrameError,
    MalformedRequest,
    RequestHeaderPeek,
    peek_header,
    skip_tagged_fields,
)

from .dispatch import APIS, Api
from .handlers import sasl_authenticate
from .responses import Slot
from .sasl_gate import SaslGate
from .security import current_principal
from .shared_state import ServerState

if TYPE_CHECKING:
    from .connection import KafkaConnection
    from .turns import Turns

log = structlog.get_logger("replica_assignor")
_UNSUPPORTED_VERSION = kafka_errors.UnsupportedVersionError.errno


class RequestPipeline:
    """Frames in, handlers called, results queued: the request path of one connection."""

    __slots__ = ("_connection", "_state", "_metrics", "_log_requests", "turns", "answered")

    def __init__(self, connection: KafkaConnection, state: ServerState) -> None:
        self._connection = connection
        self._state = state
        self._metrics = state.metrics
        self._log_requests = state.config.log_level == "debug"
        self.turns: Turns = None  # type: ignore[assignment]  # set by the connection, which owns both
        self.answered = 0  # bytes of the answers computed on the loop (a turn's budget counts them)

    def handle(self, payload: bytes | memoryview) -> bool:
        """Handle one request; False when the connection was closed because of it."""
        connection = self._connection
        gate = connection.gate
        if gate is not None and gate.session.raw:  # after SaslHandshake v0: a bare token, no Kafka header
            return self._raw_token(payload)
        try:
            header = peek_header(payload)
        except MalformedFrameError as exc:
            connection.close("malformed request header", error=str(exc))
            return False
        api = APIS.get(header.api_key)
        version = header.api_version
        supported = api is not None and api.min_version <= version <= api.max_version
        if (not supported or gate is not None) and self._refused(header, api, supported, gate):
            return False
        assert api is not None
        view = memoryview(payload)
        outcome = self._metrics.begin(header.api_key, self._log_requests)
        if outcome is not None and not supported:
            outcome.error_code = _UNSUPPORTED_VERSION  # ApiVersions' fallback answer
        current_principal.set(connection.principal)
        try:
            offset = header.body_offset
            if supported and api.flexible(version):
                offset = skip_tagged_fields(view, offset)
            if api.connection_bound:
                result = api.handle(self._state, header, view[offset:], connection)
            else:
                result = api.handle(self._state, header, view[offset:])
        except Exception as exc:  # a body that does not decode, or anything else wrong with it
            self.refuse(header, len(payload), MalformedRequest.of(exc))
            return False
        if gate is not None and supported:
            gate.answered(header.api_key)
        if self._log_requests and type(result) is bytes and not api.logs_requests:
            _log_answered(header, outcome)
        self._dispatch(result, outcome, api.connection_bound, header, payload)
        return True

    def _refused(self, header: RequestHeaderPeek, api: Api | None, supported: bool, gate: SaslGate | None) -> bool:
        """A request this connection may not send now closes it (True)."""
        fields: dict[str, Any] = {"api_key": header.api_key, "api_version": header.api_version,
                                  "correlation_id": header.correlation_id}
        if api is None:
            self._connection.close("unknown api key", **fields)
        elif not supported and not api.answers_unsupported:
            self._connection.close("unsupported api version", **fields)
        elif gate is not None and gate.refuses(header.api_key):
            self._connection.close("unexpected request during SASL authentication", **fields,
                                   sasl_state=gate.session.state)
        else:
            return False
        return True

    def _raw_token(self, payload: bytes | memoryview) -> bool:
        """A bare SASL token (after SaslHandshake v0): SaslAuthenticate's work without its header."""
        connection = self._connection
        outcome = self._metrics.begin(sasl_authenticate.API_KEY, self._log_requests)
        self._dispatch(sasl_authenticate.handle_raw(self._state, bytes(payload), connection), outcome, True,
                       None, None)
        return not connection.closing

    def refuse(self, header: Any, size: int, malformed: MalformedRequest) -> None:
        """Close for a request body that does not decode (found on the loop, or off it for a large one)."""
        connection = self._connection
        if malformed.reason is not None:  # what a Kafka broker refuses, or what would not decode in linear time
            log.warning("frame_rejected", conn_id=connection.conn_id, peer=connection.peer, api_key=header.api_key,
                        api_version=header.api_version, correlation_id=header.correlation_id,
                        reason=malformed.reason, offset=malformed.offset, size=size)
        connection.close("malformed request", api_key=header.api_key, api_version=header.api_version,
                         correlation_id=header.correlation_id, error=malformed.error)

    def _dispatch(self, result: Any, outcome: Any, exclusive: bool, header: Any,
                  payload: bytes | memoryview | None) -> None:
        """Queue a handler's result: bytes now, or an awaitable whose answer comes later."""
        connection = self._connection
        failing = connection.failing
        if isinstance(result, (bytes, bytearray)):
            self.answered += len(result)
            if outcome is not None:
                self._metrics.finish(outcome)
            if failing is None:
                responses = connection.responses
                batch = responses.batch
                if batch is not None and not responses.slots:
                    batch.append(result)  # the usual case (ResponseQueue.ready's first), without a call
                else:
                    responses.ready(result)
            else:  # the last answer
                connection.responses.later(Slot(result, None, None, failing))
                self.flush()
            return
        task = asyncio.get_running_loop().create_task(result)
        slot = Slot(None, task, outcome, failing, header, len(payload) if payload is not None else 0)
        connection.responses.later(slot)
        self._state.tasks.add(task)

        def done(t: asyncio.Task[bytes | MalformedRequest], s: Slot = slot) -> None:
            self._completed(t, s)

        task.add_done_callback(done)
        if exclusive:
            connection.blocked = True
        connection.update_reading()

    def _completed(self, task: asyncio.Task[bytes | MalformedRequest], slot: Slot) -> None:
        self._state.tasks.discard(task)
        if task.cancelled():
            return
        exc = task.exception()  # retrieved even when closing: asyncio would log it as never retrieved
        connection = self._connection
        if connection.closing:
            return
        if exc is not None:
            connection.close("request failed", error=f"{type(exc).__name__}: {exc}")
            return
        response = task.result()
        if isinstance(response, MalformedRequest):  # a large body, found malformed off the loop
            self.refuse(slot.header, slot.size, response)
            return
        slot.response = response
        slot.task = None
        if slot.outcome is not None:
            self._metrics.finish(slot.outcome)
        if connection.failing is not None and slot.close_reason is None and not connection.responses.computing:
            slot.close_reason = connection.failing  # the step that failed was this one
        self.flush()
        if not connection.closing:
            self._resume(connection)

    def _resume(self, connection: KafkaConnection) -> None:
        """An answer is done: an exclusive step may be over, and frames may wait for room."""
        if connection.blocked and not connection.responses.computing:
            connection.blocked = False
            connection.update_reading()
        frames = connection.frames
        if (not connection.blocked and connection.failing is None and self.turns.scheduled is None
                and (len(frames.buf) >= 4 or frames.whole is not None)):
            self.turns.run()  # requests that arrived while the queue was full
            connection.update_reading()

    def flush(self) -> None:
        """Write the answers ready at the head of the queue."""
        connection = self._connection
        close_reason = connection.responses.flush()
        if close_reason is not None:
            connection.close(close_reason)  # transport.close() sends what is buffered first
            return
        if connection.flow.writing_paused:
            connection.count_unread()
        connection.update_reading()


def _log_answered(header: RequestHeaderPeek, outcome: Any) -> None:
    """Answered at once (ApiVersions, Metadata, SASL): logged at debug, as Kafka's request logger
    does, with the error code the handler reported; assignments log their own request_handled at info."""
    log.debug("request_handled", api_key=header.api_key, api_version=header.api_version,
              correlation_id=header.correlation_id, error_code=outcome.error_code if outcome else None)
