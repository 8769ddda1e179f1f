"""One protocol object per connection: frames in, responses out, strictly in order.

Requests are read as they arrive (pipelining); each gets a slot in a queue, and
responses are written from the head of the queue as soon as the head is ready, so a
slow assignment never lets a later response overtake it. When too many requests are
in flight the connection stops reading until the queue drains.

Anything that is not a well-formed Kafka request we speak (unknown api key, an
unsupported version outside ApiVersions, a frame that does not decode, a frame over
``socket.request.max.bytes``) closes this connection only, with a log line saying why.
"""

from __future__ import annotations

import asyncio
import struct
from collections import deque

import structlog

from protocol.frame import MalformedFrameError, peek_header, skip_tagged_fields

from .dispatch import APIS

log = structlog.get_logger("replica_assignor")
_LEN = struct.Struct(">i")


class KafkaConnection(asyncio.Protocol):
    __slots__ = ("state", "transport", "conn_id", "peer", "_buf", "_queue", "_paused", "_closing",
                 "_idle_handle", "_ip", "_loop")

    def __init__(self, state) -> None:
        self.state = state
        self.transport: asyncio.Transport | None = None
        self.conn_id = 0
        self.peer = ""
        self._ip = ""
        self._buf = bytearray()
        # each slot: [response bytes or None, task or None]
        self._queue: deque[list] = deque()
        self._paused = False
        self._closing = False
        self._idle_handle: asyncio.TimerHandle | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    # -- lifecycle -------------------------------------------------------------------
    def connection_made(self, transport) -> None:
        self.transport = transport
        self._loop = asyncio.get_running_loop()
        state = self.state
        self.conn_id = state.new_conn_id()
        peername = transport.get_extra_info("peername") or ("?", 0)
        self._ip = str(peername[0])
        self.peer = f"{peername[0]}:{peername[1]}"
        cfg = state.config
        if state.stopping:
            transport.abort()
            return
        per_ip = state.connections_by_ip.get(self._ip, 0)
        if len(state.connections) >= cfg.max_connections or per_ip >= cfg.max_connections_per_ip:
            log.warning("connection_refused", conn_id=self.conn_id, peer=self.peer,
                        reason="too many connections", connections=len(state.connections),
                        connections_from_ip=per_ip)
            self._ip = ""
            transport.abort()
            return
        state.connections.add(self)
        state.connections_by_ip[self._ip] = per_ip + 1
        self._touch()
        log.debug("connection_opened", conn_id=self.conn_id, peer=self.peer)

    def connection_lost(self, exc) -> None:
        state = self.state
        if self in state.connections:
            state.connections.discard(self)
            n = state.connections_by_ip.get(self._ip, 1) - 1
            if n > 0:
                state.connections_by_ip[self._ip] = n
            else:
                state.connections_by_ip.pop(self._ip, None)
        if self._idle_handle is not None:
            self._idle_handle.cancel()
        for slot in self._queue:
            if slot[1] is not None and not slot[1].done():
                slot[1].cancel()
        self._queue.clear()
        log.debug("connection_closed", conn_id=self.conn_id, peer=self.peer)

    def _touch(self) -> None:
        if self._idle_handle is not None:
            self._idle_handle.cancel()
        self._idle_handle = self._loop.call_later(
            self.state.config.connections_max_idle_ms / 1000.0, self._idle_timeout)

    def _idle_timeout(self) -> None:
        if self._queue:
            self._touch()
            return
        log.info("connection_closed", conn_id=self.conn_id, peer=self.peer, reason="idle timeout")
        self.close()

    def close(self, reason: str | None = None, **fields) -> None:
        if self._closing:
            return
        self._closing = True
        if reason is not None:
            log.warning("connection_closed", conn_id=self.conn_id, peer=self.peer, reason=reason, **fields)
        if self.transport is not None:
            self.transport.close()

    @property
    def idle(self) -> bool:
        return not self._queue

    # -- reading ---------------------------------------------------------------------
    def data_received(self, data: bytes) -> None:
        if self._closing:
            return
        buf = self._buf
        buf += data
        max_bytes = self.state.config.socket_request_max_bytes
        pos = 0
        n = len(buf)
        while n - pos >= 4:
            (size,) = _LEN.unpack_from(buf, pos)
            if size < 0 or size > max_bytes:
                # Kafka's InvalidReceiveException: the size is refused before reading the frame
                self.close("invalid frame size", size=size, socket_request_max_bytes=max_bytes)
                return
            end = pos + 4 + size
            if end > n:
                break
            payload = bytes(buf[pos + 4:end])
            pos = end
            if not self._request(payload):
                return
        if pos:
            del buf[:pos]
        self._touch()

    def _request(self, payload: bytes) -> bool:
        """Handle one request; False when the connection was closed because of it."""
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
        view = memoryview(payload)
        try:
            offset = header.body_offset
            if supported and api.flexible(version):
                offset = skip_tagged_fields(view, offset)
            result = api.handle(self.state, header, view[offset:])
        except Exception as exc:  # a body that does not decode, or anything else wrong with it
            self.close("malformed request", api_key=header.api_key, api_version=version,
                       correlation_id=header.correlation_id, error=f"{type(exc).__name__}: {exc}")
            return False
        if isinstance(result, (bytes, bytearray)):
            if not self._queue:
                self.transport.write(result)
            else:
                self._queue.append([result, None])
            return True
        task = self._loop.create_task(result)
        slot = [None, task]
        self._queue.append(slot)
        self.state.tasks.add(task)
        task.add_done_callback(lambda t, s=slot: self._completed(t, s))
        if len(self._queue) >= self.state.config.max_inflight_requests_per_connection and not self._paused:
            self._paused = True
            self.transport.pause_reading()
        return True

    # -- writing ---------------------------------------------------------------------
    def _completed(self, task: asyncio.Task, slot: list) -> None:
        self.state.tasks.discard(task)
        if task.cancelled() or self._closing:
            return
        exc = task.exception()
        if exc is not None:
            self.close("request failed", error=f"{type(exc).__name__}: {exc}")
            return
        slot[0] = task.result()
        slot[1] = None
        self._flush()

    def _flush(self) -> None:
        queue = self._queue
        write = self.transport.write
        while queue and queue[0][0] is not None:
            write(queue.popleft()[0])
        if self._paused and len(queue) < self.state.config.max_inflight_requests_per_connection:
            self._paused = False
            self.transport.resume_reading()
