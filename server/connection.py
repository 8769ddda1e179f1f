"""One protocol object per connection: frames in, responses out, strictly in order.

Requests are read as they arrive (pipelining); each gets a slot in a queue, and
responses are written from the head of the queue as soon as the head is ready, so a
slow assignment never lets a later response overtake it.

Anything that is not a well-formed Kafka request we speak (unknown api key, an
unsupported version outside ApiVersions, a frame that does not decode, a frame over
``socket.request.max.bytes``) closes this connection only, with a log line saying why.

Limits, each with a log line (``connection_refused`` / ``connection_closed`` with a
``reason``), enforced the way a Kafka broker enforces them:

- ``max.connections``, ``max.connections.per.ip``, ``max.connection.creation.rate`` and
  ``connections.max.idle.ms``: :class:`kafka_replica_assignor.server.admission.Admission`;
- ``socket.request.max.bytes`` (``sasl.server.max.receive.size`` before SASL
  authentication): a frame whose size prefix is larger closes the connection before its
  body is read (Kafka's InvalidReceiveException, :class:`kafka_replica_assignor.server.turns.Turns`);
- ``request.receive.timeout.ms``: a frame not received whole that long after its first
  bytes closes the connection (more bytes of it do not move the deadline);
- ``max.inflight.requests.per.connection``: the connection stops reading while that
  many responses are pending (answered inline or not: an answer counts until it is handed
  to the transport), and also while the peer does not read what it is sent (the
  transport's write buffer is over its high-water mark), so a client can never make the
  server buffer without bound;
- ``queued.max.request.bytes`` (kafka_replica_assignor.server.request_memory): the request bytes buffered by all
  connections together, counted as they arrive; once the budget is short a connection reserves
  the rest of the frame it reads before reading on, and stops reading while it waits.

The connection is split as a protocol server's usually is, and this class glues the parts
to the transport: whether and when the connection comes in, and its idle timeout, are
:class:`kafka_replica_assignor.server.admission.Admission`; the bytes received and not yet cut into frames, large
frames' reads joined once and the ``request.receive.timeout.ms`` deadline are
:class:`kafka_replica_assignor.server.framing.FrameReader`; the frames handled in fair turns (at most 64 requests or
32 KiB per turn, then the other connections get theirs) are :class:`kafka_replica_assignor.server.turns.Turns`; one
request from its frame to its queued answer is :class:`kafka_replica_assignor.server.request_pipeline.RequestPipeline`;
flow control (reading paused and resumed, the connection's share of
``queued.max.request.bytes``) is :class:`kafka_replica_assignor.server.flow_control.FlowControl`; the TLS upgrade of a
connection on an ``SSL`` listener is :class:`kafka_replica_assignor.server.tls_upgrade.TlsUpgrade`; what a connection
may send while its SASL authentication runs is :class:`kafka_replica_assignor.server.sasl_gate.SaslGate`; answers in
request order are :class:`kafka_replica_assignor.server.responses.ResponseQueue`.

Security: on SSL listeners the principal is the client certificate's subject (if one was
verified); on SASL listeners the connection follows Kafka's authentication state machine
(``kafka_replica_assignor.server.security.sasl``) and accepts nothing but ApiVersions and the SASL APIs until it
completes. The principal is published to handlers through
``kafka_replica_assignor.server.security.current_principal``.
"""

from __future__ import annotations

import asyncio
import ssl
from typing import Any

import structlog

from .admission import EARLY_BYTES, Admission
from .binding import client_host
from .config import Listener
from .flow_control import FlowControl
from .framing import FrameReader
from .request_memory import RequestMemory
from .request_pipeline import RequestPipeline
from .responses import ResponseQueue
from .sasl_gate import SaslGate
from .security import ANONYMOUS, SaslSession, principal_from_certificate
from .shared_state import ServerState
from .tls_upgrade import TlsUpgrade
from .turns import Turns

log = structlog.get_logger("replica_assignor")


class KafkaConnection(asyncio.Protocol):
    __slots__ = ("state", "transport", "conn_id", "peer", "principal", "sasl", "gate", "flow", "frames",
                 "responses", "admission", "requests", "turns", "closing", "blocked", "failing", "last_active", "heard",
                 "_loop", "_listener", "_ssl_context", "_tls", "_lost")

    def __init__(self, state: ServerState, ssl_context: ssl.SSLContext | None = None,
                 listener: Listener | None = None, advertised: Listener | None = None) -> None:
        self.state = state
        # the listener the connection came on (its security protocol decides TLS and SASL), and the
        # address Metadata names for it; None: the state's (a state built without the server)
        self._listener = listener
        self._ssl_context = ssl_context
        self._tls: TlsUpgrade | None = None  # the TLS handshake, while it runs
        self._lost = False
        # set by connection_made (then by the TLS upgrade) before any other call uses it
        self.transport: asyncio.Transport = None  # type: ignore[assignment]
        self._loop: asyncio.AbstractEventLoop = None  # type: ignore[assignment]  # set by connection_made
        self.conn_id = 0
        self.peer = ""
        self.principal = ANONYMOUS
        self.sasl: SaslSession | None = None  # on a SASL listener (the SASL handlers use it)
        self.gate: SaslGate | None = None
        self.responses = ResponseQueue()
        self.closing = False
        self.last_active = 0.0
        self.heard = False  # the client sent something (a connection that never did gives its turn back)
        # reading waits: for the connection's admission, or for an authentication step to be done
        self.blocked = False
        # authentication failed: the pending answer is the last one, then the connection closes
        self.failing: str | None = None
        memory = state.request_memory
        if memory is None:  # a state built without the server (tests): its own budget
            memory = state.request_memory = RequestMemory(state.config.queued_max_request_bytes)
        self.flow = FlowControl(memory, self.update_reading)
        cfg = state.config
        self.frames = FrameReader(self.flow, cfg.socket_request_max_bytes, cfg.request_receive_timeout_ms,
                                  self._receive_timeout, self.update_reading, self._stalled,
                                  cfg.large_request_stall_timeout_ms)
        self.admission = Admission(self, state)
        self.requests = RequestPipeline(self, state)
        self.turns = self.requests.turns = Turns(self, state, self.frames, self.requests, advertised)

    # -- lifecycle -------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._use(transport)  # type: ignore[arg-type]  # a stream transport
        self._loop = asyncio.get_running_loop()
        self.last_active = self._loop.time()
        self.conn_id = self.state.new_conn_id()
        peername = transport.get_extra_info("peername") or ("?", 0)
        host = client_host(str(peername[0]))  # an IPv4 client of a dual-stack listener by its IPv4 address
        self.peer = f"{host}:{peername[1]}"
        if not self.admission.enter(self._loop, host):
            self.closing = True
            transport.abort()  # type: ignore[attr-defined]

    def hold_for_admission(self) -> None:
        """:class:`Admission`: what arrives before the connection's turn waits in the buffer, not handled;
        reading goes on until ``EARLY_BYTES`` came, so that a client that gives up is seen to go (its
        place among the waiting given back)."""
        self.blocked = True

    def admitted(self) -> None:
        """:class:`Admission`: the connection's turn has come; serve it (its TLS handshake first)."""
        self.blocked = False
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

    def _use(self, transport: asyncio.Transport) -> None:
        self.transport = transport
        self.flow.attach(transport)
        self.responses.attach(transport)

    def tls_ready(self, raw: asyncio.Transport, tls: asyncio.Transport | None) -> None:
        """:class:`TlsUpgrade`: the handshake is done; ``tls`` is the transport from now on."""
        self._tls = None
        if tls is None or self.closing:
            raw.abort()
            return
        self._use(tls)
        self.principal = principal_from_certificate(tls.get_extra_info("peercert"))
        self._ready()
        if len(self.frames.buf) >= 4:  # requests that came with the end of the handshake
            self.turns.run()
            self.update_reading()

    def _ready(self) -> None:
        state = self.state
        listener = self._listener or state.listener
        if listener is not None and listener.uses_sasl:
            assert state.users is not None  # the server loads them for a SASL listener
            self.sasl = SaslSession(state.config.sasl_enabled_mechanisms, state.users, state.auth_secret)
            self.gate = SaslGate(self.sasl, state.config, state.metrics)
            self.frames.limit = self.gate.frame_limit
        self.last_active = self._loop.time()
        self.admission.watch_idle()
        log.debug("connection_opened", conn_id=self.conn_id, peer=self.peer, principal=self.principal)

    def connection_lost(self, exc: Exception | None) -> None:
        if self._lost:
            return  # after a failed TLS handshake both this protocol and the TLS layer may say so
        self._lost = True
        self.closing = True  # a TLS handshake still running fails, and says why (TlsUpgrade)
        self.admission.leave()
        self.responses.cancel()
        self.turns.cancel()
        self.frames.clear()
        self.flow.release()
        self.state.answer_memory.hold(self, 0)
        log.debug("connection_closed", conn_id=self.conn_id, peer=self.peer)

    def close(self, reason: str | None = None, **fields: Any) -> None:
        if self.closing:
            return
        self.responses.write_batch()  # answers to the requests before the one that closes the connection
        self.closing = True
        if reason is not None:
            log.warning("connection_closed", conn_id=self.conn_id, peer=self.peer, reason=reason, **fields)
            self.state.metrics.connection_closed(reason)
        if self._tls is not None:
            self._tls.cancel()  # its transport is the TLS layer's: the upgrade closes it
        elif self.transport is not None:
            self.transport.close()

    def _receive_timeout(self, received: int) -> None:
        """:class:`FrameReader`: a frame was not received whole within ``request.receive.timeout.ms``."""
        if not self.closing:
            self.close("request receive timeout", received=received,
                       request_receive_timeout_ms=self.state.config.request_receive_timeout_ms)

    def _stalled(self, received: int) -> None:
        """:class:`FrameReader`: a large frame's bytes stopped coming while others wait to stream theirs."""
        if not self.closing:
            self.close("large frame stalled", received=received)

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
        self.failing = reason
        self.gate.failed(self.conn_id, self.peer, reason, fields)

    # -- flow control (kafka_replica_assignor.server.flow_control) ------------------------------------------------
    def pause_writing(self) -> None:
        # the peer does not read its responses: stop reading its requests; what it left unread
        # counts in queued.max.response.bytes (kafka_replica_assignor.server.answer_memory)
        self.flow.writing_paused = True
        self.update_reading()
        self.count_unread()

    def resume_writing(self) -> None:
        self.flow.writing_paused = False
        self.state.answer_memory.hold(self, 0)
        self.update_reading()
        self.turns.schedule()  # requests read before the pause

    def update_reading(self) -> None:
        if not self.closing:
            turns = self.turns
            self.flow.update(self.blocked or self.failing is not None or turns.scheduled is not None
                             or turns.reading is not None or len(self.responses) >= turns.max_inflight)

    def count_unread(self) -> None:
        """The answers the client has not read yet, in queued.max.response.bytes."""
        if not self.closing:
            self.state.answer_memory.hold(self, self.transport.get_write_buffer_size())

    def drop_unread_answers(self, held: int, total: int) -> None:
        """:class:`kafka_replica_assignor.server.answer_memory.AnswerMemory`: over its cap, this connection holds the most."""
        log.warning("connection_closed", conn_id=self.conn_id, peer=self.peer, reason="answers not read",
                    unread_bytes=held, queued_response_bytes=total,
                    limit_bytes=self.state.config.queued_max_response_bytes)
        self.state.metrics.connection_closed("answers not read")
        self.closing = True
        self.transport.abort()  # the buffered answers are dropped, not sent

    # -- reading ---------------------------------------------------------------------
    def data_received(self, data: bytes) -> None:
        if self.closing:
            return
        self.heard = True
        tls = self._tls
        if tls is not None and tls.early is not None:  # before the TLS layer took over: its bytes
            tls.early += data
            self.transport.pause_reading()
            return
        self.last_active = self._loop.time()
        if self.blocked and self.transport is not None and self.admission.waiting:
            self.frames.buf += data  # before its turn: kept, not handled, not counted as a request yet
            if len(self.frames.buf) >= EARLY_BYTES:
                self.flow.update(True)
            return
        if not self.frames.feed(data):
            self.turns.read_large(len(data))  # a large frame being read
        elif not self.blocked and self.failing is None and self.turns.scheduled is None and tls is None:
            self.turns.run()
