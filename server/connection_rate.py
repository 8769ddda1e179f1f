"""``max.connection.creation.rate`` and its per-address share (KIP-612), with turns that cannot be hoarded;
the same turns for ``max.failed.authentication.rate`` (:func:`take_turn`).

**Overall** (``max.connection.creation.rate``): a token bucket of one second's worth. A new
connection is served (read, or its TLS handshake started) when it takes a token. One that finds
none waits, as a Kafka broker's throttled acceptor leaves it in the listen backlog: it costs a
socket, not a turn and not a ``max.connections`` slot (those are counted when its turn comes,
:mod:`kafka_replica_assignor.server.admission`). A turn is taken only by a connection that is served: one that closes
while it waits, or is refused when its turn comes (``max.connections``), or closes without sending
a byte, takes nothing, or gives its token back (open-and-close is bounded by the accepting, as a
broker's by its listen backlog; what a connection sends is bounded by the request limits, and
password guesses by ``max.failed.authentication.rate``). Turns were once reserved on arrival, so ten seconds of open-and-close from 100
addresses booked a minute of turns ahead and every new client waited 53-70 s behind them.

Waiting is fair between addresses: the next token goes to the waiting connection whose address
was served least recently (an address never served, or not for ``_REMEMBER_S``, first), so a
flood from many addresses does not queue a client from another one behind it. Waiting is bounded:
at most ``max_waiting`` connections wait (a socket each: ``max.connections`` of them); over it the
one waiting longest is refused; a connection waits at most ``max_wait_s``
(``max.connection.creation.wait.ms``; ``max.failed.authentication.wait.ms`` for failures), then is refused
(``connection_refused``, reason ``max.connection.creation.rate reached``).

**Per address** (``max.connection.creation.rate.per.ip``, off by default as Kafka's
``connection_creation_rate`` quota of an ``ips`` entity): a bucket per address; a connection over
it is refused at once (Kafka closes it too), and takes no turn of the address or overall.
Addresses whose buckets are full again are forgotten, so the tables stay small.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
from collections import OrderedDict
from collections.abc import Callable
from typing import Protocol

_PRUNE_FROM = 1024  # addresses remembered before those not served lately are forgotten
_REMEMBER_S = 10.0  # how long an address's last turn counts against it when others wait


class Timer(Protocol):
    def cancel(self) -> None: ...


class Clock(Protocol):
    """What the rate needs of the event loop (a test gives a fake one)."""

    def time(self) -> float: ...

    def call_later(self, delay: float, callback: Callable[[], None]) -> Timer: ...


class RateWaiter(Protocol):
    """A connection waiting for its turn."""

    def turn_came(self) -> None:
        """Its turn: serve it (it holds a token; :meth:`ConnectionRate.give_back` if it is refused now)."""

    def wait_refused(self) -> None:
        """It waited ``max_wait_s``, or longest while too many wait: refuse it."""


class Ticket:
    """A connection's place among the waiting."""

    __slots__ = ("waiter", "ip", "since")

    def __init__(self, waiter: RateWaiter, ip: str, since: float) -> None:
        self.waiter, self.ip, self.since = waiter, ip, since


class ConnectionRate:
    """When each new connection is served: ``rate`` per second overall, ``per_ip`` per address (-1: no limit)."""

    __slots__ = ("rate", "per_ip", "max_waiting", "max_wait_s", "_tokens", "_stamp", "_by_ip", "_ip_prune_at", "_waiting",
                 "_oldest", "_order", "_in_order", "_served", "_served_prune_at", "_seq", "_timer", "_clock",
                 "_ticking")

    def __init__(self, rate: int, per_ip: int, max_waiting: int = 2_000, max_wait_s: float = 10.0) -> None:
        self.rate = rate
        self.per_ip = per_ip
        self.max_waiting = max_waiting
        self.max_wait_s = max_wait_s  # a connection waiting longer is refused
        self._tokens = float(rate)  # a burst of one second's worth
        self._stamp = 0.0
        self._by_ip: dict[str, tuple[float, float]] = {}  # per address: tokens, when counted
        self._ip_prune_at = _PRUNE_FROM
        self._waiting: dict[str, OrderedDict[Ticket, None]] = {}  # per address, oldest first
        self._oldest: OrderedDict[Ticket, None] = OrderedDict()  # every waiting ticket, oldest first
        self._order: list[tuple[float, int, str]] = []  # addresses with waiters: (last served, seq, ip)
        self._in_order: set[str] = set()
        self._served: dict[str, float] = {}  # when each address was last served
        self._served_prune_at = _PRUNE_FROM
        self._seq = itertools.count()
        self._timer: Timer | None = None  # the next turn's, while connections wait
        self._clock: Clock | None = None  # the loop of the first connection that waited
        self._ticking = False  # serving the waiting now (a turn given back meanwhile is served by the same tick)

    @property
    def waiting(self) -> int:
        return len(self._oldest)

    # -- per address ----------------------------------------------------------------------
    def address_refuses(self, ip: str, now: float) -> bool:
        """``max.connection.creation.rate.per.ip``: True when a connection from ``ip`` now is over it
        (it is refused, and takes nothing); else the address's token is taken."""
        if self.per_ip < 0:
            return False
        tokens, stamp = self._by_ip.get(ip, (float(self.per_ip), now))
        tokens = min(float(self.per_ip), tokens + (now - stamp) * self.per_ip)
        if tokens < 1.0:
            self._by_ip[ip] = (tokens, now)
            return True
        self._by_ip[ip] = (tokens - 1.0, now)
        if len(self._by_ip) > self._ip_prune_at:
            full = [a for a, (t, s) in self._by_ip.items() if t + (now - s) * self.per_ip >= self.per_ip]
            for a in full:
                del self._by_ip[a]
            self._ip_prune_at = max(_PRUNE_FROM, 2 * len(self._by_ip))
        return False

    # -- overall --------------------------------------------------------------------------
    def arrive(self, waiter: RateWaiter, ip: str, clock: Clock) -> Ticket | None:
        """A new connection from ``ip``: None when it takes its turn now; else its ticket, and
        :meth:`RateWaiter.turn_came` (or :meth:`RateWaiter.wait_refused`) is called later."""
        if self.rate < 0:
            return None
        self._clock = clock
        now = clock.time()
        self._refill(now)
        if not self._oldest and self._tokens >= 1.0:
            self._take(ip, now)
            return None
        if len(self._oldest) >= self.max_waiting:
            oldest = next(iter(self._oldest))
            self.left(oldest)
            oldest.waiter.wait_refused()
        ticket = Ticket(waiter, ip, now)
        self._oldest[ticket] = None
        queue = self._waiting.get(ip)
        if queue is None:
            queue = self._waiting[ip] = OrderedDict()
        queue[ticket] = None
        if ip not in self._in_order:
            self._in_order.add(ip)
            heapq.heappush(self._order, (self._last_served(ip, now), next(self._seq), ip))
        if self._timer is None:
            self._arm(now)
        return ticket

    def left(self, ticket: Ticket) -> None:
        """A waiting connection closed (or was refused): it takes nothing."""
        if ticket in self._oldest:
            del self._oldest[ticket]
            queue = self._waiting[ticket.ip]
            del queue[ticket]
            if not queue:
                del self._waiting[ticket.ip]  # (its entry in the order is dropped when reached)
            if len(self._order) > 64 + 4 * len(self._waiting):  # addresses whose waiters all left
                self._order = [entry for entry in self._order if entry[2] in self._waiting]
                heapq.heapify(self._order)
                self._in_order = {entry[2] for entry in self._order}

    def give_back(self) -> None:
        """A connection served in its turn was refused (``max.connections``), or closed without a byte:
        its token is back, and goes to a waiting connection on the loop's next turn rather than the
        next token's timer (during a flood of open-and-close, most turns come back)."""
        if self.rate < 0:
            return
        self._tokens = min(float(self.rate), self._tokens + 1.0)
        if self._oldest and self._tokens >= 1.0 and not self._ticking and self._clock is not None:
            if self._timer is not None:
                self._timer.cancel()
            self._timer = self._clock.call_later(0, self._on_timer)

    def refuse_all(self) -> None:
        """The server stops: every waiting connection is refused."""
        for ticket in list(self._oldest):
            self.left(ticket)
            ticket.waiter.wait_refused()

    def tick(self, now: float) -> None:
        """The timer: serve the waiting in their turns, refuse those that waited too long."""
        self._timer = None
        self._ticking = True
        try:
            self._serve(now)
        finally:
            self._ticking = False
        if self._oldest:
            self._arm(now)

    def _serve(self, now: float) -> None:
        self._refill(now)
        while self._oldest:
            oldest = next(iter(self._oldest))
            if now - oldest.since < self.max_wait_s:
                break
            self.left(oldest)
            oldest.waiter.wait_refused()
        while self._oldest and self._tokens >= 1.0:
            ticket = self._next(now)
            self.left(ticket)
            self._take(ticket.ip, now)
            ticket.waiter.turn_came()

    def _next(self, now: float) -> Ticket:
        """The first waiting connection of the address served least recently."""
        order = self._order
        while True:
            _, _, ip = heapq.heappop(order)
            queue = self._waiting.get(ip)
            if queue is None:
                self._in_order.discard(ip)
                continue
            ticket = next(iter(queue))
            if len(queue) > 1:  # the address's next connection waits behind the others' turns
                heapq.heappush(order, (now, next(self._seq), ip))
            else:
                self._in_order.discard(ip)
            return ticket

    def _arm(self, now: float) -> None:
        assert self._clock is not None
        wait = min((1.0 - self._tokens) / self.rate, next(iter(self._oldest)).since + self.max_wait_s - now)
        # (at least a millisecond: a token a rounding error short must not spin the loop)
        self._timer = self._clock.call_later(max(wait, 0.001), self._on_timer)

    def _on_timer(self) -> None:
        assert self._clock is not None
        self.tick(self._clock.time())

    def _refill(self, now: float) -> None:
        self._tokens = min(float(self.rate), self._tokens + (now - self._stamp) * self.rate)
        self._stamp = now

    def _take(self, ip: str, now: float) -> None:
        self._tokens -= 1.0
        served = self._served
        served[ip] = now
        if len(served) > self._served_prune_at:
            for a in [a for a, at in served.items() if at <= now - _REMEMBER_S]:
                del served[a]
            self._served_prune_at = max(_PRUNE_FROM, 2 * len(served))

    def _last_served(self, ip: str, now: float) -> float:
        at = self._served.get(ip)
        return -1.0 if at is None or at <= now - _REMEMBER_S else at


class _Awaiting:
    """A coroutine waiting for its turn (:func:`take_turn`)."""

    __slots__ = ("_rate", "_future")

    def __init__(self, rate: ConnectionRate, future: asyncio.Future[bool]) -> None:
        self._rate, self._future = rate, future

    def turn_came(self) -> None:
        if self._future.done():  # cancelled meanwhile: the turn is not used
            self._rate.give_back()
        else:
            self._future.set_result(True)

    def wait_refused(self) -> None:
        if not self._future.done():
            self._future.set_result(False)


async def take_turn(rate: ConnectionRate, ip: str) -> bool:
    """Wait for a turn of ``rate`` for ``ip``: True when it came, False when refused (waited too long,
    or longest while too many waited). Cancelled, it takes no turn."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[bool] = loop.create_future()
    ticket = rate.arrive(_Awaiting(rate, future), ip, loop)
    if ticket is None:
        return True
    try:
        return await future
    finally:
        rate.left(ticket)
