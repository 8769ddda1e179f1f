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

Large frames (``LARGE_FRAME_BYTES`` and more) also take a share of a second, smaller budget
while they stream in: ``streaming_limit`` bytes of large frames being read at once (half the
budget by default), reserved whole from the frame's size prefix. A connection whose large frame
does not fit waits, first come first served, with reading paused, until a frame being streamed
is whole; when no large frame streams, the first waiting one always gets its turn. Counting bytes
as they arrive let ten 99 MiB frames stream at once (about 300 MiB in the first second), and
copying that much on two cores delayed every other client; frames below the size stream freely.
"""

from __future__ import annotations

from collections import deque
from typing import Protocol

# a frame at least this large needs a share of the streaming budget before its rest is read
LARGE_FRAME_BYTES = 1 << 20


class MemoryWaiter(Protocol):
    def memory_granted(self, n: int) -> None:
        """The reservation it waited for is made: read on."""

    def stream_granted(self, n: int) -> None:
        """Its large frame may stream in: read on."""


class RequestMemory:
    """The bytes of requests buffered by all connections, against ``limit`` (-1: unbounded)."""

    __slots__ = ("limit", "used", "_waiters", "_held_by_waiters", "streaming_limit", "streaming", "_streams")

    def __init__(self, limit: int, streaming_limit: int | None = None) -> None:
        self.limit = limit
        self.used = 0
        # bytes of large frames being read at once (-1: unbounded), those streaming now, and the
        # connections waiting to stream theirs (as _waiters)
        self.streaming_limit = (limit // 2 if limit >= 0 else -1) if streaming_limit is None else streaming_limit
        self.streaming = 0
        self._streams: deque[tuple[MemoryWaiter, int, int]] = deque()
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
    def stream(self, waiter: MemoryWaiter, n: int, held: int) -> bool:
        """Let ``waiter`` (which holds ``held`` bytes) stream in a large frame of ``n`` bytes: True when
        it may now; else it waits its turn and :meth:`MemoryWaiter.stream_granted` is called then."""
        if not self._streams and self._may_stream(n):
            self.streaming += n
            return True
        self._streams.append((waiter, n, held))
        self._held_by_waiters += held  # (what a waiting stream holds is not given back soon either)
        return False

    def streamed(self, n: int) -> None:
        """A large frame of ``n`` bytes is whole (or its connection gone): the next may stream."""
        self.streaming -= n
        while self._streams:
            waiter, size, held = self._streams[0]
            if not self._may_stream(size):
                break
            self._streams.popleft()
            self._held_by_waiters -= held
            self.streaming += size
            waiter.stream_granted(size)
        if self._waiters:
            self._wake()

    def _may_stream(self, n: int) -> bool:
        return self.streaming_limit < 0 or self.streaming == 0 or self.streaming + n <= self.streaming_limit

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
