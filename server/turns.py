"""A connection's frames, handled in turns: the loop serves every connection in turn.

One turn of a connection handles at most ``_TURN_FRAMES`` requests, and ends after the request
that brings the bytes it read and answered past ``_TURN_BYTES``; what is left waits for the next
loop iteration (``call_soon``), behind the other connections' reads, and the connection does not
read more meanwhile. Bytes stand for work: every request's work on the loop is linear in its
size (kafka_replica_assignor.protocol.structure checks a body before the codec decodes it) or in its answer's (an inline
placement, bounded by ``replica.assignor.inline.max.replicas``). The budget is in bytes, not
time, so that the same input is always cut the same way. A large frame, read into its own memory
map (:class:`kafka_replica_assignor.server.framing.FrameReader`), is a turn of its own; while it is read, one loop
iteration reads at most ``_TURN_READ_BYTES`` of it, then the connection's reading waits for the next
iteration (uvloop reads a socket up to 32 times, 8 MiB, before the loop goes on: 5-15 ms of copying
and page faults while every other connection waited).

A frame whose size prefix is over the limit (``socket.request.max.bytes``, or
``sasl.server.max.receive.size`` before SASL authentication) closes the connection before its body
is read (Kafka's InvalidReceiveException), as does a frame larger than its api may be.
"""

from __future__ import annotations

import asyncio
import struct
from typing import TYPE_CHECKING

import structlog

from .config import Listener
from .dispatch import APIS
from .framing import FrameReader
from .handlers.metadata import current_advertised
from .logs import hold_lines, release_lines
from .placement_slots import placement_owner
from .shared_state import ServerState

if TYPE_CHECKING:
    from .connection import KafkaConnection
    from .request_pipeline import RequestPipeline

bind_contextvars = structlog.contextvars.bind_contextvars
_LEN = struct.Struct(">i")
_API_KEY = struct.Struct(">h")
# one turn of a connection on the loop: at most this many requests, and none started once
# the requests and answers of the turn reach this many bytes (the rest waits for the next
# loop iteration, behind the other connections)
_TURN_FRAMES = 64
_TURN_BYTES = 32 * 1024
# a large frame's bytes read in one loop iteration, past which reading waits for the next
_TURN_READ_BYTES = 256 * 1024


class Turns:
    """Cuts the frames a connection received and hands them, in turns, to its request pipeline."""

    __slots__ = ("_connection", "_state", "_frames", "_requests", "_advertised", "max_inflight", "scheduled",
                 "reading", "_read")

    def __init__(self, connection: KafkaConnection, state: ServerState, frames: FrameReader,
                 requests: RequestPipeline, advertised: Listener | None) -> None:
        self._connection = connection
        self._state = state
        self._frames = frames
        self._requests = requests
        # the address Metadata names for the connection's listener (None: the state's)
        self._advertised = advertised
        self.max_inflight = state.config.max_inflight_requests_per_connection
        self.scheduled: asyncio.Handle | None = None  # the next turn, when frames are left for it
        self.reading: asyncio.Handle | None = None  # the next iteration's reads of a large frame
        self._read = 0  # bytes of a large frame read since its reads last waited

    def run(self) -> None:
        """A turn: the frames received, as many as it may handle."""
        connection = self._connection
        # every log line of the requests in this read names the connection (tasks copy it)
        bind_contextvars(conn_id=connection.conn_id, peer=connection.peer)
        placement_owner.set(connection.conn_id)
        current_advertised.set(self._advertised)
        # immediate answers of this read are written together: one send for a pipelined batch;
        # so are its log lines, after the answers
        responses = connection.responses
        responses.begin_batch()
        held = hold_lines(self._state.log_stream)
        try:
            if self._frames.whole is None:
                self._run_frames()
            else:
                self._run_whole()
        finally:
            responses.end_batch(not connection.closing)
            release_lines(held)
        if connection.closing:
            return
        if self._frames.settle():
            connection.update_reading()  # the frame being read waits for its bytes

    def schedule(self) -> None:
        """Frames are left in the buffer: handle them in a later loop iteration."""
        connection = self._connection
        if (self.scheduled is None and not connection.closing and not connection.blocked
                and connection.failing is None and (len(self._frames.buf) >= 4 or self._frames.whole is not None)):
            self.scheduled = asyncio.get_running_loop().call_soon(self._next)
            connection.update_reading()

    def read_large(self, n: int) -> None:
        """``n`` bytes of a large frame were read: past ``_TURN_READ_BYTES``, reading waits for the
        next loop iteration."""
        self._read += n
        if self._read >= _TURN_READ_BYTES and self.reading is None:
            self.reading = asyncio.get_running_loop().call_soon(self._read_on)
            self._connection.update_reading()

    def _read_on(self) -> None:
        self.reading = None
        self._read = 0
        self._connection.update_reading()

    def cancel(self) -> None:
        for handle in (self.scheduled, self.reading):
            if handle is not None:
                handle.cancel()
        self.scheduled = self.reading = None

    def _next(self) -> None:
        self.scheduled = None
        connection = self._connection
        if connection.closing or connection.blocked or connection.failing is not None:
            return
        self.run()
        connection.update_reading()

    def _run_whole(self) -> None:
        """A large frame, joined once it was whole (it comes before the buffer): a turn of its own."""
        connection = self._connection
        if len(connection.responses.slots) >= self.max_inflight or connection.flow.writing_paused:
            return  # resumed by an answer done or by resume_writing
        frame = self._frames.take_whole()
        handled = self._requests.handle(memoryview(frame))
        self._frames.dispose(frame)
        if handled and not connection.blocked and connection.failing is None:
            self.schedule()

    def _run_frames(self) -> None:
        connection = self._connection
        requests = self._requests
        reader = self._frames
        slots = connection.responses.slots
        max_inflight = self.max_inflight
        # frames this turn may start: each one adds at most one answer to the queue or to
        # the read's batch (answers not yet handed to the transport count as in flight)
        room = min(_TURN_FRAMES, max_inflight - len(slots))
        frames = pos = 0
        buf = reader.buf
        n = len(buf)
        # bytes read (pos, with the size prefixes) and answered (requests.answered) in this turn
        budget = _TURN_BYTES + requests.answered
        # (the transport says pause_writing only when written to, which the loop below does not do
        # but on the way to a close: writing_paused is read once)
        write_paused = connection.flow.writing_paused
        while n - pos >= 4:
            if frames >= room or pos + requests.answered >= budget or write_paused:
                if write_paused or len(slots) >= max_inflight:
                    break  # resumed by an answer done or by resume_writing
                del buf[:pos]
                self.schedule()  # the others' turn first
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
            if not requests.handle(payload):
                return
            if connection.blocked or connection.failing is not None:
                break
        if pos:
            del buf[:pos]

    def _size_refused(self, buf: bytearray, pos: int, size: int) -> bool:
        """A frame size over the limit closes the connection before the frame is read (Kafka's
        InvalidReceiveException); so does a frame larger than its api may be (a Metadata request
        naming more topics than ``metadata.max.topics.per.request``) once its api key is read."""
        limit = self._frames.limit
        connection = self._connection
        if size < 0 or size > limit:
            key = connection.gate.limit_key if connection.gate is not None else "socket.request.max.bytes"
            connection.close("invalid frame size", size=size, limit=key, limit_bytes=limit)
            return True
        if len(buf) - pos < 6:
            return False
        (api_key,) = _API_KEY.unpack_from(buf, pos + 4)
        api = APIS.get(api_key)
        if api is None or api.max_request_bytes is None:
            return False
        api_limit = api.max_request_bytes(self._state.config)
        if size <= api_limit:
            return False
        connection.close("frame too large for its api", api_key=api_key, size=size, limit_bytes=api_limit)
        return True
