"""``queued.max.request.bytes``: one budget for the request bytes every connection buffers.

Kafka's memory pool, for our frames, counted as bytes arrive: while the budget has room, a
connection reads on and holds what it read (a size prefix holds four bytes, not the frame it
announces). Once the budget is short, a connection that has read the size of a frame it has
not read whole must reserve the rest of the frame before it reads on; while the budget is spent it
stops reading its socket (the kernel's buffers, then TCP, push back on the client) and waits,
first come first served, until requests are processed and their bytes given back. A frame
already being read always has its bytes reserved, so it can finish and free them; bytes that
arrived before a reservation was refused (at most one socket read per connection) are
counted, never dropped. When every byte held belongs to connections that are waiting, nothing
would ever be given back, so the first of them gets its frame anyway (the overshoot is at
most one frame, at most ``socket.request.max.bytes``).

Large frames (``LARGE_FRAME_BYTES`` and more) also count, while they stream in, in a second, smaller
budget: ``streaming_limit`` bytes of large frames read at once (half the budget by default). Only
bytes that arrived count: a size prefix alone reserves nothing (it once reserved the whole frame it
announced, so a few 4-byte headers held the budget and a 3.5 MB request waited 37-44 s). While
the large frames being read hold the budget, a connection that reads more of its own waits, first
come first served, with reading paused, until one of them is whole; the frame that started
streaming first always reads on, so the frames being read always finish. A stream that stops
sending while others wait is closed (``large.request.stall.timeout.ms``,
:class:`kafka_replica_assignor.server.framing.FrameReader`),
so what it holds goes back. Counting bytes as they arrive with no such budget let ten 99 MiB
frames stream at once (about 300 MiB in the first second), and copying that much on two cores
delayed every other client; frames below the size stream freely.
"""

from __future__ import annotations

from collections import deque
from typing import Protocol

# a frame at least this large counts in the streaming budget while it is read
LARGE_FRAME_BYTES = 1 << 20


class MemoryWaiter(Protocol):
    def memory_granted(self, n: int) -> None:
        """The reservation it waited for is made: read on."""

    def stream_granted(self) -> None:
        """Its large frame may stream on: read on."""


class RequestMemory:
    """The bytes of requests buffered by all connections, against ``limit`` (-1: unbounded)."""

    __slots__ = ("limit", "used", "_waiters", "_held_by_waiters", "streaming_limit", "streaming", "_streams",
                 "_active")

    def __init__(self, limit: int, streaming_limit: int | None = None) -> None:
        self.limit = limit
        self.used = 0
        # bytes of large frames read at once (-1: unbounded), those that arrived, each stream's in the order
        # the streams started, and the streams waiting to read on (first come first served)
        self.streaming_limit = (limit // 2 if limit >= 0 else -1) if streaming_limit is None else streaming_limit
        self.streaming = 0
        self._active: dict[MemoryWaiter, int] = {}
        self._streams: deque[tuple[MemoryWaiter, int, int]] = deque()  # (stream, 0, bytes it holds)
        # (connection, bytes it asks for, bytes it holds while it waits), first come first served
        self._waiters: deque[tuple[MemoryWaiter, int, int]] = deque()
        self._held_by_waiters = 0

    def charge(self, n: int) -> None:
        """Bytes already in memory: counted whatever the budget says."""
        self.used += n

    def release(self, n: int) -> None:
        self.used -= n
        if self._waiters:
            self._wake()

    def reserve(self, waiter: MemoryWaiter, n: int, held: int) -> bool:
        """Reserve ``n`` bytes for ``waiter`` (which holds ``held``): True when done now; else it
        waits its turn and :meth:`MemoryWaiter.memory_granted` is called when it comes."""
        if not self._waiters and self._fits(n):
            self.used += n
            return True
        self._waiters.append((waiter, n, held))
        self._held_by_waiters += held
        if self.used <= self._held_by_waiters:  # nothing held by anyone who would give it back
            first, first_n, first_held = self._waiters.popleft()
            self._held_by_waiters -= first_held
            self.used += first_n
            if first is waiter:
                return True
            first.memory_granted(first_n)
        return False

    def cancel(self, waiter: MemoryWaiter) -> None:
        for queue in (self._waiters, self._streams):
            for entry in queue:
                if entry[0] is waiter:
                    queue.remove(entry)
                    self._held_by_waiters -= entry[2]
                    break
        if self._waiters:
            self._wake()

    # -- large frames -------------------------------------------------------------------
    def stream(self, waiter: MemoryWaiter, arrived: int, held: int) -> bool:
        """``arrived`` more bytes of ``waiter``'s large frame came (it holds ``held`` request bytes): True
        when it may read on; else it waits its turn and :meth:`MemoryWaiter.stream_granted` is called then."""
        active = self._active
        active[waiter] = active.get(waiter, 0) + arrived
        self.streaming += arrived
        if self._may_stream(waiter):
            return True
        self._streams.append((waiter, 0, held))
        self._held_by_waiters += held  # (what a waiting stream holds is not given back soon either)
        return False

    def streamed(self, waiter: MemoryWaiter) -> None:
        """``waiter``'s large frame is whole (or its connection gone): its bytes leave the streaming budget."""
        self.streaming -= self._active.pop(waiter, 0)
        streams = self._streams
        while streams and self._may_stream(streams[0][0]):
            first, _, held = streams.popleft()
            self._held_by_waiters -= held
            first.stream_granted()
        oldest = next(iter(self._active), None)
        for entry in streams:  # the stream that started first now, if it waits (it may always read on)
            if entry[0] is oldest:
                streams.remove(entry)
                self._held_by_waiters -= entry[2]
                entry[0].stream_granted()
                break
        if self._waiters:
            self._wake()

    def _may_stream(self, waiter: MemoryWaiter) -> bool:
        """Within the budget, or the stream that started first (it always finishes)."""
        if self.streaming_limit < 0 or self.streaming <= self.streaming_limit:
            return True
        return next(iter(self._active), None) is waiter

    @property
    def streams_waiting(self) -> bool:
        """Large frames wait for the streaming budget: a stalled one is closed."""
        return bool(self._streams)

    @property
    def short(self) -> bool:
        """The budget is spent, or someone waits for it: frames being read reserve their rest."""
        return self.limit >= 0 and (self.used >= self.limit or bool(self._waiters))

    def _fits(self, n: int) -> bool:
        return self.limit < 0 or self.used + n <= self.limit

    def _wake(self) -> None:
        while self._waiters:
            waiter, n, held = self._waiters[0]
            if not (self._fits(n) or self.used <= self._held_by_waiters):
                return
            self._waiters.popleft()
            self._held_by_waiters -= held
            self.used += n
            waiter.memory_granted(n)

    @property
    def waiting(self) -> int:
        """Connections waiting: for request memory, or to stream a large frame."""
        return len(self._waiters) + len(self._streams)
