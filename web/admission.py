"""What the web listener lets a client hold: a connection slot, and time to read its request in,
and how fast wrong credentials are answered.

**Slots** (:class:`Slots`): at most ``size`` connections at once, a thread each. A connection is
*evictable* while it has not yet given a whole request (the TLS handshake, the request line,
headers and body; the wait between two requests of a kept-alive connection) and while its wrong
credentials wait for their turn (below); it is not while its request is served or answered. A new
connection that finds every slot taken takes one from an evictable connection: of the address
holding the most slots, the one evictable longest (so one address's many slow connections go
before another's one), closed at once; with none evictable, the new connection is closed unread.

**Read deadline** (:class:`DeadlineReader`): a request is read whole (headers and body) within
``deadline_s`` of the connection's wait for it, and at most ``max_bytes`` of it; a client
sending a byte now and then (slowloris) is cut at the deadline, whatever its pace, not at a
timeout per read.

**Failed authentications** (:class:`FailedAuthRate`): the idea of the Kafka server's
``max.failed.authentication.rate`` (docs/security.md): wrong credentials are answered at most
``rate`` a second, all addresses together (after a burst of as many), each in its turn, the
address answered least recently first, so a guesser from one address does not delay another's
typo behind its queue; one that waited ``max_wait_s`` is closed unanswered. A password guesser
gets ``rate`` answers a second however many connections it opens. (The server's limiter lives on
its event loop; this one on threads, a lock and a condition.)
"""

from __future__ import annotations

import io
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

_REMEMBER_S = 10.0     # how long an address's last answer counts against it when others wait


class RequestTooLarge(OSError):
    """A request over its size: the connection is closed unanswered."""


class Connection:
    """One connection's slot: its address, whether (and since when) it may be evicted, the current
    request's read deadline and byte budget."""

    __slots__ = ("sock", "ip", "since", "evictable", "evicted", "deadline", "budget", "on_evict")

    def __init__(self, sock: Any, ip: str, now: float) -> None:
        self.sock = sock
        self.ip = ip
        self.since = now
        self.evictable = True
        self.evicted = False
        self.deadline = now
        self.budget = 0
        self.on_evict: Callable[[], None] | None = None    # besides closing the socket

    def close_socket(self) -> None:
        try:    # the plain socket's shutdown (an SSLSocket's would drop its TLS object under its reader)
            socket.socket.shutdown(self.sock, socket.SHUT_RDWR)
        except OSError:
            pass


class Slots:
    def __init__(self, size: int, deadline_s: float, max_bytes: int,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.size = size
        self.deadline_s = deadline_s
        self.max_bytes = max_bytes
        self.clock = clock
        self._lock = threading.Lock()
        self._held: dict[Connection, None] = {}     # in order of arrival
        self.evictions = 0

    def __len__(self) -> int:
        return len(self._held)

    def admit(self, sock: Any, ip: str) -> Connection | None:
        """A slot for a new connection from ``ip`` (waiting for its first request), or None: closed unread."""
        now = self.clock()
        victim = None
        with self._lock:
            if len(self._held) >= self.size:
                victim = self._victim()
                if victim is None:
                    return None
                del self._held[victim]
                victim.evicted = True
                self.evictions += 1
            conn = Connection(sock, ip, now)
            self._start(conn, now)
            self._held[conn] = None
        if victim is not None:
            victim.close_socket()
            if victim.on_evict is not None:
                victim.on_evict()
        return conn

    def _victim(self) -> Connection | None:
        held: dict[str, int] = {}
        for conn in self._held:
            held[conn.ip] = held.get(conn.ip, 0) + 1
        best: Connection | None = None
        for conn in self._held:     # oldest first: the first evictable of the address holding most wins ties
            if conn.evictable and (best is None or held[conn.ip] > held[best.ip]):
                best = conn
        return best

    def _start(self, conn: Connection, now: float) -> None:
        conn.evictable, conn.since = True, now
        conn.deadline, conn.budget = now + self.deadline_s, self.max_bytes

    def reading(self, conn: Connection) -> None:
        """The connection waits for (and reads) its next request: evictable, a new deadline and budget."""
        with self._lock:
            self._start(conn, self.clock())

    def serving(self, conn: Connection) -> None:
        """Its request is read: served and answered, not evicted."""
        with self._lock:
            conn.evictable = False

    def waiting(self, conn: Connection, on_evict: Callable[[], None] | None) -> bool:
        """Its answer waits (evictable, ``on_evict`` wakes it) or no longer does; False: evicted already."""
        with self._lock:
            if conn.evicted:
                return False
            conn.on_evict = on_evict
            conn.evictable = on_evict is not None
            if on_evict is not None:
                conn.since = self.clock()
            return True

    def release(self, conn: Connection) -> None:
        with self._lock:
            self._held.pop(conn, None)


class DeadlineReader(io.RawIOBase):
    """A connection's socket read within its request's deadline and byte budget."""

    def __init__(self, sock: Any, conn: Connection, clock: Callable[[], float] = time.monotonic) -> None:
        self.sock = sock
        self.conn = conn
        self.clock = clock

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        conn = self.conn
        if conn.evicted:        # (an error, not an end: a request cut short is never served)
            raise ConnectionAbortedError("the connection's slot went to another")
        left = conn.deadline - self.clock()
        if left <= 0:
            raise TimeoutError("the request was not read whole within its deadline")
        if conn.budget <= 0:
            raise RequestTooLarge("the request is over its size")
        self.sock.settimeout(left)
        n = int(self.sock.recv_into(memoryview(buffer)[:conn.budget]))
        if conn.evicted:
            raise ConnectionAbortedError("the connection's slot went to another")
        conn.budget -= n
        return n


class FailedAuthRate:
    """Wrong credentials answered ``rate`` a second overall, in turns fair between addresses."""

    def __init__(self, rate: float, max_wait_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.rate = rate
        self.max_wait_s = max_wait_s
        self.clock = clock
        self._cond = threading.Condition()
        self._tokens = float(rate)
        self._stamp = clock()
        self._waiting: list[_Ticket] = []       # in order of arrival
        self._answered: dict[str, float] = {}   # when each address was last answered
        self.refused = 0

    @property
    def waiting(self) -> int:
        with self._cond:
            return len(self._waiting)

    def turn(self, ip: str, slots: Slots | None = None, conn: Connection | None = None) -> bool:
        """Wait for ``ip``'s turn to be answered: True when it came; False when it waited
        ``max_wait_s`` or its connection was evicted meanwhile (closed unanswered)."""
        with self._cond:
            ticket = _Ticket(ip, self.clock())
            self._waiting.append(ticket)
        if slots is not None and conn is not None and not slots.waiting(conn, lambda: self._drop(ticket)):
            self._drop(ticket)
        try:
            with self._cond:
                while True:
                    now = self.clock()
                    if ticket.dropped:
                        break
                    self._refill(now)
                    if self._tokens >= 1.0 and self._next(now) is ticket:
                        self._tokens -= 1.0
                        self._answered[ip] = now
                        if len(self._answered) > 1024:
                            self._answered = {a: t for a, t in self._answered.items() if t > now - _REMEMBER_S}
                        self._waiting.remove(ticket)
                        self._cond.notify_all()
                        return True
                    wait = ticket.since + self.max_wait_s - now
                    if wait <= 0:
                        break
                    self._cond.wait(min(wait, max((1.0 - self._tokens) / self.rate, 0.001)))
                if ticket in self._waiting:
                    self._waiting.remove(ticket)
                self.refused += 1
                self._cond.notify_all()
                return False
        finally:
            if slots is not None and conn is not None:
                slots.waiting(conn, None)

    def _drop(self, ticket: _Ticket) -> None:
        with self._cond:
            ticket.dropped = True
            self._cond.notify_all()

    def _next(self, now: float) -> _Ticket | None:
        """The first waiting of the address answered least recently (one never, or not lately, first)."""
        best, best_at = None, 0.0
        for ticket in self._waiting:
            if ticket.dropped:
                continue
            at = self._answered.get(ticket.ip, -1.0)
            if at <= now - _REMEMBER_S:
                at = -1.0
            if best is None or at < best_at:
                best, best_at = ticket, at
        return best

    def _refill(self, now: float) -> None:
        self._tokens = min(float(self.rate), self._tokens + (now - self._stamp) * self.rate)
        self._stamp = now


class _Ticket:
    __slots__ = ("ip", "since", "dropped")

    def __init__(self, ip: str, since: float) -> None:
        self.ip, self.since, self.dropped = ip, since, False
