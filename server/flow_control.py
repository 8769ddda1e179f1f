"""Flow control of one connection: when it reads, and its share of the request-memory budget.

A connection stops reading its socket (the kernel's buffers, then TCP, push back on the
client) while any of these holds:

- the connection says it is busy (an authentication step running, a failed authentication
  being answered, frames left for its next turn, ``max.inflight.requests.per.connection``
  answers pending): the argument of :meth:`FlowControl.update`;
- the peer does not read its answers (the transport's write buffer is over its high-water
  mark: ``pause_writing``);
- the frame being read waits for its bytes in ``queued.max.request.bytes``
  (:class:`kafka_replica_assignor.server.request_memory.RequestMemory`, shared by every connection), or, a large
  frame, for its turn to stream on.

It resumes as soon as none holds. The connection's buffer is counted in the shared budget;
once the budget is short, so is the whole of a frame whose size is read but not its body
(reserved before the rest is read, so that it can finish); everything is given back when the
connection closes.
"""

from __future__ import annotations

import asyncio
import struct
from collections.abc import Callable

from .request_memory import LARGE_FRAME_BYTES, RequestMemory

_LEN = struct.Struct(">i")


class FlowControl:
    """Pauses and resumes reading one transport; reserves and releases its request bytes."""

    __slots__ = ("_transport", "_memory", "_on_granted", "reading_paused", "writing_paused", "charged",
                 "memory_wait", "streaming")

    def __init__(self, memory: RequestMemory, on_granted: Callable[[], None]) -> None:
        self._transport: asyncio.BaseTransport | None = None
        self._memory = memory
        self._on_granted = on_granted  # the connection re-evaluates whether it reads
        self.reading_paused = False
        self.writing_paused = False  # the peer does not read what it is sent
        self.charged = 0  # bytes of the buffer and of the frame being read, counted in the budget
        self.memory_wait = False  # waiting for the budget to reserve the frame being read (or to stream it)
        self.streaming = 0  # bytes of the large frame being read that arrived, in the memory's streaming budget

    def attach(self, transport: asyncio.BaseTransport) -> None:
        """The transport to pause (the TLS layer's after the handshake)."""
        self._transport = transport

    def update(self, busy: bool) -> None:
        """Read, or not: paused while the connection is ``busy``, the peer does not read, or memory is short."""
        transport = self._transport
        if transport is None:
            return
        pause = busy or self.writing_paused or self.memory_wait
        if pause and not self.reading_paused:
            self.reading_paused = True
            transport.pause_reading()  # type: ignore[attr-defined]  # a read transport
        elif not pause and self.reading_paused:
            self.reading_paused = False
            transport.resume_reading()  # type: ignore[attr-defined]

    # -- the request-memory budget -------------------------------------------------------
    def received(self, buffered: int) -> None:
        """The buffer holds ``buffered`` bytes: past what was reserved, they are in memory already and
        counted as they are."""
        over = buffered - self.charged
        if over > 0:
            self.charged += over
            self._memory.charge(over)

    def account(self, buf: bytearray, max_frame: int, gathered: int = 0) -> bool:
        """Count ``buf``; when the budget is short, reserve the rest of the frame it starts (its size
        known and allowed) before reading on. True when the reservation must wait: pause reading.

        Only bytes that arrived are counted while the budget has room: a size prefix alone holds
        four bytes, not the frame it announces (six 4-byte prefixes of 100 MiB once held the whole
        budget and stalled every request that needed a second read). ``gathered``: bytes of the
        frame read but kept aside (the connection joins a large frame's reads once it is whole).

        The bytes of a large frame being read count in the streaming budget as they arrive; when it is
        spent, reading pauses until the frame's turn comes
        (:meth:`kafka_replica_assignor.server.request_memory.RequestMemory.stream`)."""
        need = len(buf) + gathered
        size = _LEN.unpack_from(buf, 0)[0] if len(buf) >= 4 else -1
        if not 0 <= size <= max_frame:
            size = -1
        if size >= LARGE_FRAME_BYTES and 4 + size > len(buf):  # a large frame being read
            if not self.memory_wait and self._stream(need):
                return True
        else:
            self.end_stream()
        if size >= 0 and self._memory.short:
            need = max(need, 4 + size)
        delta = need - self.charged
        if delta < 0:
            self.charged = need
            self._memory.release(-delta)
        elif delta > 0 and not self.memory_wait:
            if self._memory.reserve(self, delta, self.charged):
                self.charged = need
            else:
                self.memory_wait = True
                return True
        return False

    def _stream(self, arrived: int) -> bool:
        """``arrived`` bytes of the large frame being read came: they count in the streaming budget
        (what arrived only: a size prefix reserves nothing). True when it must wait for its turn."""
        more = arrived - self.streaming
        if more <= 0:
            return False
        self.streaming = arrived
        if self._memory.stream(self, more, self.charged):
            return False
        self.memory_wait = True
        return True

    def end_stream(self) -> None:
        """The large frame being read is whole: its bytes leave the streaming budget."""
        if self.streaming:
            self.streaming = 0
            self._memory.streamed(self)

    @property
    def stalls_others(self) -> bool:
        """A large frame is being read, reading is not paused by the server, and other large frames
        wait for the streaming budget: if no bytes come, the stream holds them up."""
        return bool(self.streaming) and not self.reading_paused and self._memory.streams_waiting

    def stream_granted(self) -> None:
        """:class:`kafka_replica_assignor.server.request_memory.MemoryWaiter`: the large frame being read may stream on."""
        self.memory_wait = False
        self._on_granted()

    def memory_granted(self, n: int) -> None:
        """:class:`kafka_replica_assignor.server.request_memory.MemoryWaiter`: the frame being read has its bytes; read on."""
        self.charged += n
        self.memory_wait = False
        self._on_granted()

    def release(self) -> None:
        """The connection is gone: give back everything it holds or waits for."""
        if self.memory_wait:
            self.memory_wait = False
            self._memory.cancel(self)
        self.end_stream()
        if self.charged:
            charged, self.charged = self.charged, 0
            self._memory.release(charged)
