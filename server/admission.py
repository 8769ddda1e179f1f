"""May a connection come in, and when; and when has it been idle too long.

One :class:`Admission` per connection, enforcing what a Kafka broker enforces before it reads a
connection's requests, each with a log line (``connection_refused`` / ``connection_closed`` with
a ``reason``):

- ``max.connection.creation.rate`` (:mod:`kafka_replica_assignor.server.connection_rate`): a connection over the
  rate waits for its turn (reading at most ``EARLY_BYTES`` meanwhile, so that a client that gives up is
  seen to go), holding a socket but no slot; one served that closes without sending a byte gives its
  turn back; ``.per.ip`` (off by default): a connection over it is refused;
- ``max.connections`` and ``max.connections.per.ip``, counted from the connection's turn: a connection
  over either is closed then, unless a connection idle long enough makes room for it (below), and its
  turn is given back;
- ``connections.max.idle.ms``: a connection with nothing in flight and nothing received for that
  long is closed (one timer per connection, re-armed for what is left).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import structlog

from .connection_rate import Ticket
from .shared_state import ServerState

if TYPE_CHECKING:
    from .connection import KafkaConnection

log = structlog.get_logger("replica_assignor")
# at max.connections (per ip), a connection idle at least this long makes room for a new one
_EVICT_AFTER_S = 10.0
# bytes a connection waiting for its turn reads before it stops reading (a Kafka client's first request
# is an ApiVersions of a few dozen bytes, a TLS ClientHello a few hundred)
EARLY_BYTES = 16 * 1024


class Admission:
    """The admission of one connection: the creation rate's turn, then capacity (with idle eviction),
    then the idle timeout. The connection is let in by :meth:`KafkaConnection.admitted`."""

    __slots__ = ("_connection", "_state", "_loop", "ip", "_counted", "_timer", "_ticket")

    def __init__(self, connection: KafkaConnection, state: ServerState) -> None:
        self._connection = connection
        self._state = state
        self._loop: asyncio.AbstractEventLoop = None  # type: ignore[assignment]  # set by enter
        self.ip = ""
        self._counted = False
        self._timer: asyncio.TimerHandle | None = None  # the idle check
        self._ticket: Ticket | None = None  # its place among the connections waiting for their turn

    def enter(self, loop: asyncio.AbstractEventLoop, ip: str) -> bool:
        """A new connection from ``ip``: False when it may not stay (the caller aborts it); else it is
        served now or in its turn (``max.connection.creation.rate``), waiting unread until then."""
        self._loop = loop
        self.ip = ip
        state = self._state
        if state.stopping:
            return False
        rate = state.connection_rate
        if rate.address_refuses(ip, loop.time()):
            self._refused("max.connection.creation.rate.per.ip reached", rate_per_ip=rate.per_ip)
            return False
        self._ticket = rate.arrive(self, ip, loop)
        if self._ticket is not None:
            self._connection.hold_for_admission()
        elif not self._take_slot():
            return False
        else:
            self._connection.admitted()
        return True

    @property
    def waiting(self) -> bool:
        """Waiting for its turn (``max.connection.creation.rate``)."""
        return self._ticket is not None

    def turn_came(self) -> None:
        """:class:`ConnectionRate`: the connection's turn has come."""
        self._ticket = None
        connection = self._connection
        if connection.closing:
            self._state.connection_rate.give_back()
            return
        if not self._take_slot():
            connection.closing = True
            connection.transport.abort()
            return
        connection.admitted()

    def wait_refused(self) -> None:
        """:class:`ConnectionRate`: it waited too long (or longest while too many wait)."""
        ticket, self._ticket = self._ticket, None
        connection = self._connection
        if connection.closing:
            return
        if self._state.stopping:
            connection.closing = True
            connection.transport.abort()
            return
        waited_ms = round((self._loop.time() - ticket.since) * 1000) if ticket is not None else 0
        self._refused("max.connection.creation.rate reached", waited_ms=waited_ms,
                      waiting=self._state.connection_rate.waiting)
        connection.closing = True
        connection.transport.abort()

    def _take_slot(self) -> bool:
        """``max.connections`` (``.per.ip``): the connection counts from its turn on; False when it
        may not (its turn is given back)."""
        state = self._state
        cfg = state.config
        ip = self.ip
        if state.stopping:
            state.connection_rate.give_back()
            return False
        per_ip = state.connections_by_ip.get(ip, 0)
        full = len(state.connections) >= cfg.max_connections
        if (full or per_ip >= cfg.max_connections_per_ip) and self._evict_idle(same_ip=not full):
            full, per_ip = False, per_ip - (not full)
        if full or per_ip >= cfg.max_connections_per_ip:
            reason = ("max.connections reached" if len(state.connections) >= cfg.max_connections
                      else "max.connections.per.ip reached")
            self._refused(reason, connections=len(state.connections), connections_from_ip=per_ip,
                          max_connections=cfg.max_connections, max_connections_per_ip=cfg.max_connections_per_ip)
            state.connection_rate.give_back()
            return False
        state.connection_opened(self._connection, ip)
        self._counted = True
        return True

    def _refused(self, reason: str, **fields: Any) -> None:
        connection = self._connection
        log.warning("connection_refused", conn_id=connection.conn_id, peer=connection.peer, reason=reason, **fields)
        self._state.metrics.connection_refused(reason)

    def _evict_idle(self, same_ip: bool) -> bool:
        """At ``max.connections`` (``max.connections.per.ip``: from the same address), the connection
        idle the longest, if for at least ``_EVICT_AFTER_S`` (a tenth of ``connections.max.idle.ms`` if
        less), is closed to make room: idle connections
        once locked an address out for the whole idle timeout (600 s)."""
        now = self._loop.time()
        floor = min(_EVICT_AFTER_S, self._state.config.connections_max_idle_ms / 10_000.0)
        oldest: KafkaConnection | None = None
        for other in self._state.connections:
            if (other.closing or other.responses or (same_ip and other.admission.ip != self.ip)
                    or now - other.last_active < floor):
                continue
            if oldest is None or other.last_active < oldest.last_active:
                oldest = other
        if oldest is None:
            return False
        oldest.close("idle, evicted for a new connection", idle_ms=round((now - oldest.last_active) * 1000),
                     new_peer=self._connection.peer)
        return True

    def watch_idle(self) -> None:
        """The connection is served: from now on, ``connections.max.idle.ms``."""
        self._timer = self._loop.call_later(self._state.config.connections_max_idle_ms / 1000.0, self._idle_check)

    def _idle_check(self) -> None:
        self._timer = None
        connection = self._connection
        if connection.closing:
            return
        cfg = self._state.config
        idle_s = cfg.connections_max_idle_ms / 1000.0
        # waiting for our own answers is not idleness
        remaining = idle_s if connection.responses else idle_s - (self._loop.time() - connection.last_active)
        if remaining > 0:
            self._timer = self._loop.call_later(remaining, self._idle_check)
            return
        log.info("connection_closed", conn_id=connection.conn_id, peer=connection.peer, reason="idle timeout",
                 connections_max_idle_ms=cfg.connections_max_idle_ms)
        self._state.metrics.connection_closed("idle timeout")
        connection.close()

    def leave(self) -> None:
        """The connection is gone: it no longer counts or waits, and no timer of its runs."""
        if self._ticket is not None:
            self._state.connection_rate.left(self._ticket)
            self._ticket = None
        if self._counted:
            self._counted = False
            self._state.connection_closed(self._connection, self.ip)
            if not self._connection.heard:  # opened and closed: it cost nothing, its turn is back
                self._state.connection_rate.give_back()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
