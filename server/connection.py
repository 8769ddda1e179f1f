"""One protocol object per connection: frames in, responses out, strictly in order.

Requests are read as they arrive (pipelining); each gets a slot in a queue, and
responses are written from the head of the queue as soon as the head is ready, so a
slow assignment never lets a later response overtake it.

Anything that is not a well-formed Kafka request we speak (unknown api key, an
unsupported version outside ApiVersions, a frame that does not decode, a frame over
``socket.request.max.bytes``) closes this connection only, with a log line saying why.

Limits, each with a log line (``connection_refused`` / ``connection_closed`` with a
``reason``), enforced the way a Kafka broker enforces them:

- ``max.connections`` and ``max.connections.per.ip``: a connection over either is
  closed as soon as it is accepted;
- ``socket.request.max.bytes`` (``sasl.server.max.receive.size`` before SASL
  authentication): a frame whose size prefix is larger closes the connection before its
  body is read (Kafka's InvalidReceiveException);
- ``connections.max.idle.ms``: a connection with nothing in flight and nothing received
  for that long is closed;
- ``request.receive.timeout.ms``: a frame not received whole that long after its first
  bytes closes the connection (more bytes of it do not move the deadline);
- ``max.inflight.requests.per.connection``: the connection stops reading while that
  many responses are pending (answered inline or not: an answer counts until it is handed
  to the transport), and also while the peer does not read what it is sent (the
  transport's write buffer is over its high-water mark), so a client can never make the
  server buffer without bound;
- ``queued.max.request.bytes`` (server.request_memory): the request bytes buffered by all
  connections together, counted as they arrive; once the budget is short a connection reserves
  the rest of the frame it reads before reading on, and stops reading while it waits.

Fairness: the loop serves every connection in turn. One turn of a connection handles at
most ``_TURN_FRAMES`` requests, and ends after the request that brings the bytes it read
and answered past ``_TURN_BYTES``; what is left waits for the next loop iteration
(``call_soon``), behind the other connections' reads, and the connection does not read more
meanwhile. Bytes stand for work: every request's work on the loop is linear in its size
(protocol.structure checks a body before the codec decodes it) or in its answer's (an
inline placement, bounded by ``replica.assignor.inline.max.replicas``). The budget is in
bytes, not time, so that the same input is always cut the same way.

The connection is split as a protocol server's usually is: the bytes received and not yet
cut into frames, large frames' reads joined once and the ``request.receive.timeout.ms``
deadline are :class:`server.framing.FrameReader`; flow control (reading paused and resumed,
the connection's share of ``queued.max.request.bytes``) is
:class:`server.flow_control.FlowControl`; the TLS upgrade of a connection on an ``SSL``
listener is :class:`server.tls_upgrade.TlsUpgrade`; what a connection may send while its
SASL authentication runs is :class:`server.sasl_gate.SaslGate`; answers in request order are
:class:`server.responses.ResponseQueue`. This class admits the connection, takes turns and
dispatches requests.

Security: on SSL listeners the principal is the client certificate's subject (if one was
verified); on SASL listeners the connection follows Kafka's authentication state machine
(``server.security.sasl``) and accepts nothing but ApiVersions and the SASL APIs until it
completes. The principal is published to handlers through
``server.security.current_principal``.
"""

from __future__ import annotations

import asyncio
import ssl
import struct
from collections.abc import Callable
from typing import Any

import kafka.errors as kafka_errors
import structlog

from protocol.frame import MalformedFrameError, MalformedRequest, peek_header, skip_tagged_fields

from .config import Listener
from .dispatch import APIS
from .flow_control import FlowControl
from .framing import FrameReader
from .handlers import sasl_authenticate
from .handlers.metadata import current_advertised
from .logs import hold_lines, release_lines
from .placement_slots import placement_owner
from .request_memory import RequestMemory
from .responses import ResponseQueue, Slot
from .sasl_gate import SaslGate
from .security import ANONYMOUS, SaslSession, current_principal, principal_from_certificate
from .shared_state import ServerState
from .tls_upgrade import TlsUpgrade

log = structlog.get_logger("replica_assignor")
bind_contextvars = structlog.contextvars.bind_contextvars
_LEN = struct.Struct(">i")
_API_KEY = struct.Struct(">h")
_UNSUPPORTED_VERSION = kafka_errors.UnsupportedVersionError.errno
# one turn of a connection on the loop: at most this many requests, and none started once
# the requests and answers of the turn reach this many bytes (the rest waits for the next
# loop iteration, behind the other connections)
_TURN_FRAMES = 64
_TURN_BYTES = 32 * 1024
# at max.connections (per ip), a connection idle at least this long makes room for a new one
_EVICT_AFTER_S = 10.0


class KafkaConnection(asyncio.Protocol):
    __slots__ = ("state", "transport", "conn_id", "peer", "principal", "sasl", "gate", "flow", "frames",
                 "responses", "_closing", "_idle_handle", "_ip", "_loop", "_last_active", "_blocked", "_failing",
                 "_metrics", "_counted", "_log_requests", "_turn", "_max_inflight", "_answered", "_ssl_context",
                 "_tls", "_lost", "_listener", "_advertised")

    def __init__(self, state: ServerState, ssl_context: ssl.SSLContext | None = None,
                 listener: Listener | None = None, advertised: Listener | None = None) -> None:
        self.state = state
        # the listener the connection came on (its security protocol decides TLS and SASL), and the
        # address Metadata names for it; None: the state's (a state built without the server)
        self._listener = listener
        self._advertised = advertised
        self._ssl_context = ssl_context
        self._tls: TlsUpgrade | None = None  # the TLS handshake, while it runs
        self._lost = False
        # set by connection_made (then by the TLS upgrade) before any other call uses it
        self.transport: asyncio.Transport = None  # type: ignore[assignment]
        self.conn_id = 0
        self.peer = ""
        self.principal = ANONYMOUS
        self.sasl: SaslSession | None = None  # on a SASL listener (the SASL handlers use it)
        self.gate: SaslGate | None = None
        self._ip = ""
        self.responses = ResponseQueue()
        self._closing = False
        self._idle_handle: asyncio.TimerHandle | None = None
        self._loop: asyncio.AbstractEventLoop = None  # type: ignore[assignment]  # set by connection_made
        self._last_active = 0.0
        # an authentication step is running: read nothing more until it is done
        self._blocked = False
        # authentication failed: the pending answer is the last one, then the connection closes
        self._failing: str | None = None
        self._metrics = state.metrics
        self._counted = False
        self._answered = 0  # bytes of the answers computed on the loop (the turn's budget counts them)
        self._log_requests = state.config.log_level == "debug"
        memory = state.request_memory
        if memory is None:  # a state built without the server (tests): its own budget
            memory = state.request_memory = RequestMemory(state.config.queued_max_request_bytes)
        self.flow = FlowControl(memory, self._update_reading)
        cfg = state.config
        self.frames = FrameReader(self.flow, cfg.socket_request_max_bytes, cfg.request_receive_timeout_ms,
                                  self._receive_timeout, self._update_reading)
        self._turn: asyncio.Handle | None = None  # the next turn, when frames are left for it
        self._max_inflight = state.config.max_inflight_requests_per_connection

    # -- lifecycle -------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._use(transport)  # type: ignore[arg-type]  # a stream transport
        self._loop = asyncio.get_running_loop()
        self._last_active = self._loop.time()
        state = self.state
        self.conn_id = state.new_conn_id()
        peername = transport.get_extra_info("peername") or ("?", 0)
        self._ip = str(peername[0])
        self.peer = f"{peername[0]}:{peername[1]}"
        cfg = state.config
        if state.stopping:
            self._closing = True
            transport.abort()  # type: ignore[attr-defined]
            return
        per_ip = state.connections_by_ip.get(self._ip, 0)
        full = len(state.connections) >= cfg.max_connections
        if (full or per_ip >= cfg.max_connections_per_ip) and self._evict_idle(same_ip=not full):
            full, per_ip = False, per_ip - (not full)
        if full or per_ip >= cfg.max_connections_per_ip:
            reason = ("max.connections reached" if len(state.connections) >= cfg.max_connections
                      else "max.connections.per.ip reached")
            log.warning("connection_refused", conn_id=self.conn_id, peer=self.peer, reason=reason,
                        connections=len(state.connections), connections_from_ip=per_ip,
                        max_connections=cfg.max_connections, max_connections_per_ip=cfg.max_connections_per_ip)
            self._metrics.connection_refused(reason)
            self._closing = True
            transport.abort()  # type: ignore[attr-defined]
            return
        state.connection_opened(self, self._ip)
        self._counted = True
        # max.connection.creation.rate(.per.ip): served (read, or its TLS handshake run) in its turn
        rate, now = state.connection_rate, self._loop.time()
        delay = rate.address_delay(self._ip, now)
        if delay > 0:
            self._wait_turn(delay, self._address_turn)
        elif (delay := rate.delay(now)) > 0:
            self._wait_turn(delay, self._admit)
        else:
            self._admit()

    def _wait_turn(self, delay: float, then: Callable[[], None]) -> None:
        self._blocked = True  # what arrives meanwhile waits in the buffer, unread
        self.flow.update(True)
        self._loop.call_soon(self._still_paused)  # (uvloop starts reading after connection_made)
        self._idle_handle = self._loop.call_later(delay, then)

    def _address_turn(self) -> None:
        """The turn of the connection's address has come; now its turn overall."""
        self._idle_handle = None
        if self._closing:
            return
        delay = self.state.connection_rate.delay(self._loop.time())
        if delay > 0:
            self._idle_handle = self._loop.call_later(delay, self._admit)
            return
        self._admit()

    def _still_paused(self) -> None:
        if self._blocked and not self._closing and self.flow.reading_paused:
            self.transport.pause_reading()

    def _admit(self) -> None:
        self._idle_handle = None
        if self._closing:
            return
        self._blocked = False
        early, self.frames.buf = self.frames.buf, bytearray()
        self.flow.update(False)
        if self._ssl_context is not None:
            self._tls = TlsUpgrade(self, self._ssl_context)
            self._tls.start(self.transport)
            if early:
                assert self._tls.early is not None
                self._tls.early += early
            return
        self._ready()
        if early:
            self.data_received(bytes(early))

    def _evict_idle(self, same_ip: bool) -> bool:
        """At ``max.connections`` (``max.connections.per.ip``: from the same address), the connection
        idle the longest, if for at least ``_EVICT_AFTER_S`` (a tenth of ``connections.max.idle.ms`` if
        less), is closed to make room: idle connections
        once locked an address out for the whole idle timeout (600 s)."""
        now = self._loop.time()
        floor = min(_EVICT_AFTER_S, self.state.config.connections_max_idle_ms / 10_000.0)
        oldest: KafkaConnection | None = None
        for other in self.state.connections:
            if (other._closing or other.responses or (same_ip and other._ip != self._ip)
                    or now - other._last_active < floor):
                continue
            if oldest is None or other._last_active < oldest._last_active:
                oldest = other
        if oldest is None:
            return False
        oldest.close("idle, evicted for a new connection", idle_ms=round((now - oldest._last_active) * 1000),
                     new_peer=self.peer)
        return True

    def _use(self, transport: asyncio.Transport) -> None:
        self.transport = transport
        self.flow.attach(transport)
        self.responses.attach(transport)

    def tls_ready(self, raw: asyncio.Transport, tls: asyncio.Transport | None) -> None:
        """:class:`TlsUpgrade`: the handshake is done; ``tls`` is the transport from now on."""
        self._tls = None
        if tls is None or self._closing:
            raw.abort()
            return
        self._use(tls)
        self.principal = principal_from_certificate(tls.get_extra_info("peercert"))
        self._ready()
        if len(self.frames.buf) >= 4:  # requests that came with the end of the handshake
            self._process()
            self._update_reading()

    def _ready(self) -> None:
        state = self.state
        cfg = state.config
        listener = self._listener or state.listener
        if listener is not None and listener.uses_sasl:
            assert state.users is not None  # the server loads them for a SASL listener
            self.sasl = SaslSession(cfg.sasl_enabled_mechanisms, state.users, state.auth_secret)
            self.gate = SaslGate(self.sasl, cfg, self._metrics)
            self.frames.limit = self.gate.frame_limit
        self._last_active = self._loop.time()
        self._idle_handle = self._loop.call_later(cfg.connections_max_idle_ms / 1000.0, self._idle_check)
        log.debug("connection_opened", conn_id=self.conn_id, peer=self.peer, principal=self.principal)

    def connection_lost(self, exc: Exception | None) -> None:
        if self._lost:
            return  # after a failed TLS handshake both this protocol and the TLS layer may say so
        self._lost = True
        self._closing = True  # a TLS handshake still running fails, and says why (TlsUpgrade)
        if self._counted:
            self._counted = False
            self.state.connection_closed(self, self._ip)
        if self._idle_handle is not None:
            self._idle_handle.cancel()
            self._idle_handle = None
        self.responses.cancel()
        if self._turn is not None:
            self._turn.cancel()
            self._turn = None
        self.frames.clear()
        self.flow.release()
        self.state.answer_memory.hold(self, 0)
        log.debug("connection_closed", conn_id=self.conn_id, peer=self.peer)

    def _idle_check(self) -> None:
        """``connections.max.idle.ms``: one timer per connection, re-armed for what is left."""
        self._idle_handle = None
        if self._closing:
            return
        cfg = self.state.config
        idle_s = cfg.connections_max_idle_ms / 1000.0
        # waiting for our own answers is not idleness
        remaining = idle_s if self.responses else idle_s - (self._loop.time() - self._last_active)
        if remaining > 0:
            self._idle_handle = self._loop.call_later(remaining, self._idle_check)
            return
        log.info("connection_closed", conn_id=self.conn_id, peer=self.peer, reason="idle timeout",
                 connections_max_idle_ms=cfg.connections_max_idle_ms)
        self._metrics.connection_closed("idle timeout")
        self._closing = True
        self.transport.close()

    def close(self, reason: str | None = None, **fields: Any) -> None:
        if self._closing:
            return
        self.responses.write_batch()  # answers to the requests before the one that closes the connection
        self._closing = True
        if reason is not None:
            log.warning("connection_closed", conn_id=self.conn_id, peer=self.peer, reason=reason, **fields)
            self._metrics.connection_closed(reason)
        if self._tls is not None:
            self._tls.cancel()  # its transport is the TLS layer's: the upgrade closes it
        elif self.transport is not None:
            self.transport.close()

    @property
    def idle(self) -> bool:
        return not self.responses

    # -- authentication (called by the SASL handlers) ----------------------------------
    def authenticated(self, principal: str, mechanism: str) -> None:
        assert self.gate is not None
        self.principal = principal
        self.frames.limit = self.gate.frame_limit
        self.gate.succeeded(self.conn_id, self.peer, principal, mechanism)

    def authentication_failed(self, reason: str, **fields: Any) -> None:
        """The answer being built is the last: the connection closes once it is written."""
        assert self.gate is not None
        self._failing = reason
        self.gate.failed(self.conn_id, self.peer, reason, fields)

    # -- flow control (server.flow_control) ------------------------------------------------
    def pause_writing(self) -> None:
        # the peer does not read its responses: stop reading its requests; what it left unread
        # counts in queued.max.response.bytes (server.answer_memory)
        self.flow.writing_paused = True
        self._update_reading()
        self._count_unread()

    def resume_writing(self) -> None:
        self.flow.writing_paused = False
        self.state.answer_memory.hold(self, 0)
        self._update_reading()
        self._schedule_turn()  # requests read before the pause

    def _update_reading(self) -> None:
        if not self._closing:
            self.flow.update(self._blocked or self._failing is not None or self._turn is not None
                             or len(self.responses) >= self._max_inflight)

    # -- reading ---------------------------------------------------------------------
    def data_received(self, data: bytes) -> None:
        if self._closing:
            return
        tls = self._tls
        if tls is not None and tls.early is not None:  # before the TLS layer took over: its bytes
            tls.early += data
            self.transport.pause_reading()
            return
        self._last_active = self._loop.time()
        if (self.frames.feed(data) and not self._blocked and self._failing is None and self._turn is None
                and tls is None):
            self._process()

    def _schedule_turn(self) -> None:
        """Frames are left in the buffer: handle them in a later loop iteration."""
        if (self._turn is None and not self._closing and not self._blocked and self._failing is None
                and (len(self.frames.buf) >= 4 or self.frames.whole is not None)):
            self._turn = asyncio.get_running_loop().call_soon(self._next_turn)
            self._update_reading()

    def _next_turn(self) -> None:
        self._turn = None
        if self._closing or self._blocked or self._failing is not None:
            return
        self._process()
        self._update_reading()

    def _process(self) -> None:
        # every log line of the requests in this read names the connection (tasks copy it)
        bind_contextvars(conn_id=self.conn_id, peer=self.peer)
        placement_owner.set(self.conn_id)
        current_advertised.set(self._advertised)
        # immediate answers of this read are written together: one send for a pipelined batch;
        # so are its log lines, after the answers
        responses = self.responses
        responses.begin_batch()
        held = hold_lines(self.state.log_stream)
        try:
            if self.frames.whole is None:
                self._process_frames()
            else:
                self._process_whole()
        finally:
            responses.end_batch(not self._closing)
            release_lines(held)
        if self._closing:
            return
        if self.frames.settle():
            self._update_reading()  # the frame being read waits for its bytes

    def _receive_timeout(self, received: int) -> None:
        """:class:`FrameReader`: a frame was not received whole within ``request.receive.timeout.ms``."""
        if not self._closing:
            self.close("request receive timeout", received=received,
                       request_receive_timeout_ms=self.state.config.request_receive_timeout_ms)

    def _process_whole(self) -> None:
        """A large frame, joined once it was whole (it comes before the buffer): a turn of its own."""
        if len(self.responses.slots) >= self._max_inflight or self.flow.writing_paused:
            return  # resumed by an answer done (_completed) or by resume_writing
        frame = self.frames.take_whole()
        handled = self._request(memoryview(frame))
        self.frames.dispose(frame)
        if handled and not self._blocked and self._failing is None:
            self._schedule_turn()

    def _process_frames(self) -> None:
        reader = self.frames
        slots = self.responses.slots
        max_inflight = self._max_inflight
        # frames this turn may start: each one adds at most one answer to the queue or to
        # the read's batch (answers not yet handed to the transport count as in flight)
        room = min(_TURN_FRAMES, max_inflight - len(slots))
        frames = 0
        buf = reader.buf
        pos = 0
        n = len(buf)
        # bytes read (pos, with the size prefixes) and answered (self._answered) in this turn
        budget = _TURN_BYTES + self._answered
        # (the transport says pause_writing only when written to, which the loop below does not do
        # but on the way to a close: writing_paused is read once)
        write_paused = self.flow.writing_paused
        while n - pos >= 4:
            if frames >= room or pos + self._answered >= budget or write_paused:
                if write_paused or len(slots) >= max_inflight:
                    break  # resumed by an answer done (_completed) or by resume_writing
                if pos:
                    del buf[:pos]
                    pos = 0
                self._schedule_turn()  # the others' turn first
                return
            (size,) = _LEN.unpack_from(buf, pos)
            end = pos + 4 + size
            if (size < 0 or size > reader.limit or end > n) and self._size_refused(buf, pos, size):
                return
            if end > n:
                break
            payload = bytes(buf[pos + 4:end])
            pos = end
            frames += 1
            if not self._request(payload):
                return
            if self._blocked or self._failing is not None:
                break
        if pos:
            del buf[:pos]

    def _size_refused(self, buf: bytearray, pos: int, size: int) -> bool:
        """A frame size over the limit closes the connection before the frame is read (Kafka's
        InvalidReceiveException); so does a frame larger than its api may be (a Metadata request
        naming more topics than ``metadata.max.topics.per.request``) once its api key is read."""
        limit = self.frames.limit
        if size < 0 or size > limit:
            key = self.gate.limit_key if self.gate is not None else "socket.request.max.bytes"
            self.close("invalid frame size", size=size, limit=key, limit_bytes=limit)
            return True
        if len(buf) - pos < 6:
            return False
        (api_key,) = _API_KEY.unpack_from(buf, pos + 4)
        api = APIS.get(api_key)
        if api is None or api.max_request_bytes is None:
            return False
        api_limit = api.max_request_bytes(self.state.config)
        if size <= api_limit:
            return False
        self.close("frame too large for its api", api_key=api_key, size=size, limit_bytes=api_limit)
        return True

    # each refusal is one branch of the per-request path: split, every request would pay a call
    # for it (bench/request_cost.py)
    def _request(self, payload: bytes | memoryview) -> bool:  # noqa: C901
        """Handle one request; False when the connection was closed because of it."""
        gate = self.gate
        if gate is not None and gate.session.raw:  # after SaslHandshake v0: a bare token, no Kafka header
            outcome = self._metrics.begin(sasl_authenticate.API_KEY, self._log_requests)
            self._dispatch(sasl_authenticate.handle_raw(self.state, bytes(payload), self), outcome, True, None, None)
            return not self._closing
        try:
            header = peek_header(payload)
        except MalformedFrameError as exc:
            self.close("malformed request header", error=str(exc))
            return False
        api = APIS.get(header.api_key)
        if api is None:
            self.close("unknown api key", api_key=header.api_key, api_version=header.api_version,
                       correlation_id=header.correlation_id)
            return False
        version = header.api_version
        supported = api.min_version <= version <= api.max_version
        if not supported and not api.answers_unsupported:
            self.close("unsupported api version", api_key=header.api_key, api_version=version,
                       correlation_id=header.correlation_id)
            return False
        if gate is not None and gate.refuses(header.api_key):
            self.close("unexpected request during SASL authentication", api_key=header.api_key,
                       api_version=version, correlation_id=header.correlation_id, sasl_state=gate.session.state)
            return False
        view = memoryview(payload)
        outcome = self._metrics.begin(header.api_key, self._log_requests)
        if outcome is not None and not supported:
            outcome.error_code = _UNSUPPORTED_VERSION  # ApiVersions' fallback answer
        current_principal.set(self.principal)
        try:
            offset = header.body_offset
            if supported and api.flexible(version):
                offset = skip_tagged_fields(view, offset)
            if api.connection_bound:
                result = api.handle(self.state, header, view[offset:], self)
            else:
                result = api.handle(self.state, header, view[offset:])
        except Exception as exc:  # a body that does not decode, or anything else wrong with it
            self._refuse(header, len(payload), MalformedRequest.of(exc))
            return False
        if gate is not None and supported:
            gate.answered(header.api_key)
        if self._log_requests and type(result) is bytes and not api.logs_requests:
            # answered at once (ApiVersions, Metadata, SASL): logged at debug, as Kafka's request
            # logger does, with the error code the handler reported; assignments log their own
            # request_handled at info
            log.debug("request_handled", api_key=header.api_key, api_version=version,
                      correlation_id=header.correlation_id, error_code=outcome.error_code if outcome else None)
        self._dispatch(result, outcome, api.connection_bound, header, payload)
        return True

    def _refuse(self, header: Any, size: int, malformed: MalformedRequest) -> None:
        """Close for a request body that does not decode (found on the loop, or off it for a large one)."""
        if malformed.reason is not None:  # what a Kafka broker refuses, or what would not decode in linear time
            log.warning("frame_rejected", conn_id=self.conn_id, peer=self.peer, api_key=header.api_key,
                        api_version=header.api_version, correlation_id=header.correlation_id,
                        reason=malformed.reason, offset=malformed.offset, size=size)
        self.close("malformed request", api_key=header.api_key, api_version=header.api_version,
                   correlation_id=header.correlation_id, error=malformed.error)

    def _dispatch(self, result: Any, outcome: Any, exclusive: bool, header: Any,
                  payload: bytes | memoryview | None) -> None:
        """Queue a handler's result: bytes now, or an awaitable whose answer comes later."""
        failing = self._failing
        if isinstance(result, (bytes, bytearray)):
            self._answered += len(result)
            if outcome is not None:
                self._metrics.finish(outcome)
            if failing is None:
                responses = self.responses
                batch = responses.batch
                if batch is not None and not responses.slots:
                    batch.append(result)  # the usual case (ResponseQueue.ready's first), without a call
                else:
                    responses.ready(result)
            else:  # the last answer
                self.responses.later(Slot(result, None, None, failing))
                self._flush()
            return
        task = self._loop.create_task(result)
        slot = Slot(None, task, outcome, failing, header, len(payload) if payload is not None else 0)
        self.responses.later(slot)
        self.state.tasks.add(task)

        def done(t: asyncio.Task[bytes | MalformedRequest], s: Slot = slot) -> None:
            self._completed(t, s)

        task.add_done_callback(done)
        if exclusive:
            self._blocked = True
        self._update_reading()

    # -- writing (server.responses) ----------------------------------------------------------
    def _completed(self, task: asyncio.Task[bytes | MalformedRequest], slot: Slot) -> None:
        self.state.tasks.discard(task)
        if task.cancelled():
            return
        exc = task.exception()  # retrieved even when closing: asyncio would log it as never retrieved
        if self._closing:
            return
        if exc is not None:
            self.close("request failed", error=f"{type(exc).__name__}: {exc}")
            return
        response = task.result()
        if isinstance(response, MalformedRequest):  # a large body, found malformed off the loop
            self._refuse(slot.header, slot.size, response)
            return
        slot.response = response
        slot.task = None
        if slot.outcome is not None:
            self._metrics.finish(slot.outcome)
        responses = self.responses
        if self._failing is not None and slot.close_reason is None and not responses.computing:
            slot.close_reason = self._failing  # the step that failed was this one
        self._flush()
        if self._closing:
            return
        if self._blocked and not responses.computing:
            self._blocked = False
            self._update_reading()
        if (not self._blocked and self._failing is None and self._turn is None
                and (len(self.frames.buf) >= 4 or self.frames.whole is not None)):
            self._process()  # requests that arrived while the queue was full
            self._update_reading()

    def _flush(self) -> None:
        close_reason = self.responses.flush()
        if close_reason is not None:
            self.close(close_reason)  # transport.close() sends what is buffered first
            return
        if self.flow.writing_paused:
            self._count_unread()
        self._update_reading()

    def _count_unread(self) -> None:
        """The answers the client has not read yet, in queued.max.response.bytes."""
        if not self._closing:
            self.state.answer_memory.hold(self, self.transport.get_write_buffer_size())

    def drop_unread_answers(self, held: int, total: int) -> None:
        """:class:`server.answer_memory.AnswerMemory`: over its cap, this connection holds the most."""
        log.warning("connection_closed", conn_id=self.conn_id, peer=self.peer, reason="answers not read",
                    unread_bytes=held, queued_response_bytes=total,
                    limit_bytes=self.state.config.queued_max_response_bytes)
        self._metrics.connection_closed("answers not read")
        self._closing = True
        self.transport.abort()  # the buffered answers are dropped, not sent
