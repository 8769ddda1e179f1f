"""Framing of one connection: the bytes received, cut into Kafka frames, and their deadline.

Kafka frames are a 4-byte size and that many bytes. :class:`FrameReader` keeps what was
received and not yet cut (``buf``); the connection cuts whole frames from its head. Two
things are the reader's own:

- **Large frames** (``GATHER_BYTES`` and more): the frame's payload gets its own anonymous
  memory map, and each read of its rest is copied into it as it comes, so the copying and the
  page faults are spread over the reads, and the memory goes back to the system as soon as the
  request is handled (``whole``). Growing one buffer read by read copied it again and again;
  cutting the payload out of it copied it twice more (a 99 MiB frame held the loop 0.5-0.7 s).
- **A large frame that stalls**: while other large frames wait for the streaming budget
  (:mod:`kafka_replica_assignor.server.request_memory`), one whose bytes stop coming for ``large.request.stall.timeout.ms`` (reading not
  paused by the server) is closed, so that what it holds goes back.
- **``request.receive.timeout.ms``**: a frame started and not whole has that long from its
  first bytes to arrive; more bytes of the same frame do not move the deadline, waiting for
  the request-memory budget counts. When it passes, ``on_timeout`` closes the connection.

Every byte the reader holds (the buffer, the gathered reads, a joined frame not handled yet)
is counted in the connection's share of ``queued.max.request.bytes`` (``kafka_replica_assignor.server.flow_control``).
"""

from __future__ import annotations

import asyncio
import mmap
import struct
from collections.abc import Callable

from .flow_control import FlowControl

_LEN = struct.Struct(">i")
# a frame at least this large has the reads of its rest gathered and joined once
GATHER_BYTES = 1 << 20


class FrameReader:
    """The received bytes of one connection, not yet cut into requests."""

    __slots__ = ("buf", "whole", "limit", "_frame", "_chunked", "_need", "_received", "_partial_at",
                 "_deadline", "_flow", "_timeout_s", "_on_timeout", "_on_wait", "_on_stall", "_last_read",
                 "_stall_check", "_stall_s")

    def __init__(self, flow: FlowControl, limit: int, timeout_ms: int,
                 on_timeout: Callable[[int], None], on_wait: Callable[[], None],
                 on_stall: Callable[[int], None] | None = None, stall_ms: int = 1_000) -> None:
        self.buf = bytearray()
        # a large frame's payload (without its size), whole and not handled yet: it comes before buf
        self.whole: mmap.mmap | None = None
        self.limit = limit  # the largest frame accepted (socket.request.max.bytes, or SASL's before it completes)
        # the payload of the large frame being read: its reads after those in buf are copied in from
        # the offset where buf's part ends
        self._frame: mmap.mmap | None = None
        self._chunked = 0  # bytes copied into it
        self._need = 0  # bytes the large frame still needed when the gathering started (0: not gathering)
        # bytes received so far, where the frame being read starts in that stream (-1: none being
        # read), and its deadline
        self._received = 0
        self._partial_at = -1
        self._deadline: asyncio.TimerHandle | None = None
        self._flow = flow
        self._timeout_s = timeout_ms / 1000.0
        self._on_timeout = on_timeout  # called with the bytes of the frame received so far
        self._on_wait = on_wait  # the frame being read waits for request memory: the connection pauses reading
        # a large frame that receives nothing for stall_ms (large.request.stall.timeout.ms) while others wait
        # for the streaming budget: called
        # with the bytes of it received (the connection closes); when its bytes last came, and the check
        self._on_stall = on_stall or on_timeout
        self._last_read = 0.0
        self._stall_check: asyncio.TimerHandle | None = None
        self._stall_s = stall_ms / 1000.0

    @property
    def held(self) -> int:
        """Bytes of requests held: the buffer, a large frame's reads, a joined frame."""
        whole = self.whole
        return len(self.buf) + self._chunked + (4 + len(whole) if whole is not None else 0)

    def feed(self, data: bytes) -> bool:
        """Bytes read from the socket; True when frames may be cut from them now, False while the
        rest of a large frame is being gathered (or it waits for request memory)."""
        self._received += len(data)
        if self._need:
            self._last_read = asyncio.get_running_loop().time()
            return self._gather(data)
        buf = self.buf
        buf += data
        self._flow.received(self.held)
        self.watch()
        return True

    def _gather(self, data: bytes) -> bool:
        frame = self._frame
        assert frame is not None
        buf = self.buf
        start = len(buf) - 4 + self._chunked
        fits = min(len(data), len(frame) - start)
        if fits == len(data):
            frame[start:start + fits] = data
        else:
            with memoryview(data) as view:
                frame[start:start + fits] = view[:fits]
        self._chunked += fits
        if self._chunked < self._need:
            self._flow.received(self.held)
            if self._flow.account(buf, self.limit, self.held - len(buf)):
                self._on_wait()  # the budget is short: the rest waits for its reservation
            return False
        # whole: the part that came with the buffer goes in front, what follows it starts the buffer
        with memoryview(buf) as view:
            frame[0:len(buf) - 4] = view[4:]
        self.whole, self._frame = frame, None
        self.buf = bytearray(data[fits:]) if fits < len(data) else bytearray()
        self._chunked, self._need = 0, 0
        self._flow.end_stream()
        self._flow.received(self.held)
        self.watch()
        return True

    @staticmethod
    def dispose(frame: mmap.mmap) -> None:
        """A large frame is handled: its memory map is unmapped in a thread (giving 99 MiB back to the
        system took about 90 ms on the loop), unless something still uses it (then it goes when that does)."""
        asyncio.get_running_loop().run_in_executor(None, _unmap, frame)

    def take_whole(self) -> mmap.mmap:
        """The joined large frame, handed to the connection (its bytes stay counted until :meth:`settle`)."""
        whole = self.whole
        assert whole is not None
        self.whole = None
        return whole

    def settle(self) -> bool:
        """After a turn: count what is held, start gathering a large frame at the head, watch its
        deadline. True when the frame being read waits for request memory: pause reading."""
        buf = self.buf
        waits = self._flow.account(buf, self.limit, self.held - len(buf))
        if len(buf) >= 4 and not self._need:
            (size,) = _LEN.unpack_from(buf, 0)
            if size >= GATHER_BYTES and 4 + size > len(buf):  # its rest is gathered, not appended read by read
                self._need = 4 + size - len(buf)
                self._frame = mmap.mmap(-1, size)  # (pages are touched, and counted, as bytes arrive)
                self._watch_stall()
        self.watch()
        return waits

    def clear(self) -> None:
        """The connection is gone."""
        self.buf = bytearray()
        self.whole = self._frame = None
        self._chunked, self._need = 0, 0
        for timer in (self._deadline, self._stall_check):
            if timer is not None:
                timer.cancel()
        self._deadline = self._stall_check = None

    # -- a large frame that stalls ---------------------------------------------------------
    def _watch_stall(self) -> None:
        """A large frame starts to be gathered: check, every ``stall_ms``, that its bytes come while
        other large frames wait for the streaming budget."""
        loop = asyncio.get_running_loop()
        self._last_read = loop.time()
        if self._stall_check is None:
            self._stall_check = loop.call_later(self._stall_s, self._check_stall)

    def _check_stall(self) -> None:
        self._stall_check = None
        if not self._need:
            return  # whole: the next large frame starts its own watch
        loop = asyncio.get_running_loop()
        quiet = loop.time() - self._last_read
        stall_s = self._stall_s
        if quiet >= stall_s and self._flow.stalls_others:
            self._on_stall(len(self.buf) + self._chunked)
            return
        self._stall_check = loop.call_later(max(stall_s - quiet, 0.05) if quiet < stall_s else stall_s,
                                            self._check_stall)

    # -- request.receive.timeout.ms ----------------------------------------------------
    def _partial_start(self) -> int:
        """Where the frame being read starts in the bytes received, if it is not whole yet; else -1
        (no bytes, or whole frames waiting for their turn)."""
        buf = self.buf
        if not buf:
            return -1
        if not self._need and len(buf) >= 4 and 4 + _LEN.unpack_from(buf, 0)[0] <= len(buf):
            return -1
        return self._received - len(buf) - self._chunked

    def watch(self) -> None:
        """Arm the deadline of a frame that started and is not whole; it moves only when another
        frame starts, never for more bytes of the same."""
        start = self._partial_start()
        if start == self._partial_at:
            return
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None
        self._partial_at = start
        if start >= 0:
            loop = asyncio.get_running_loop()
            self._deadline = loop.call_later(self._timeout_s, self._expired, start)

    def _expired(self, start: int) -> None:
        self._deadline = None
        if self._partial_start() != start:
            self._partial_at = -1
            self.watch()  # that frame is whole (another may be under way)
            return
        self._on_timeout(len(self.buf) + self._chunked)


def release_view(view: memoryview) -> None:
    """Done with ``view``, a view of a frame, in a thread: release it, and unmap the frame's memory map
    (a large frame's) now unless something else still uses it (:meth:`FrameReader.dispose` could not
    while the view lived; the last view going on the loop would unmap it there)."""
    owner = view.obj
    view.release()
    if isinstance(owner, mmap.mmap):
        _unmap(owner)


def _unmap(frame: mmap.mmap) -> None:
    try:
        frame.close()  # (munmap runs without the interpreter lock)
    except BufferError:  # a view of it still lives: it is unmapped when that goes
        pass
