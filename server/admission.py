"""May a connection come in, and when; and when has it been idle too long.

One :class:`Admission` per connection, enforcing what a Kafka broker enforces before it reads a
connection's requests, each with a log line (``connection_refused`` / ``connection_closed`` with
a ``reason``):

- ``max.connections`` and ``max.connections.per.ip``: a connection over either is closed as soon
  as it is accepted, unless a connection idle long enough makes room for it (below);
- ``max.connection.creation.rate`` (and ``.per.ip``, :mod:`kafka_replica_assignor.server.connection_rate`): a connection
  over the rate waits, unread, for its turn (its address's first, then the overall one);
- ``connections.max.idle.ms``: a connection with nothing in flight and nothing received for that
  long is closed (one timer per connection, re-armed for what is left).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING

import structlog

from .shared_state import ServerState

if TYPE_CHECKING:
    from .connection import KafkaConnection

log = structlog.get_logger("replica_assignor")
# at max.connections (per ip), a connection idle at least this long makes room for a new one
_EVICT_AFTER_S = 10.0


class Admission:
    """The admission of one connection: capacity (with idle eviction), the creation rate's turn,
    the idle timeout. The connection is let in by :meth:`KafkaConnection.admitted`."""

    __slots__ = ("_connection", "_state", "_loop", "ip", "_counted", "_timer")

    def __init__(self, connection: KafkaConnection, state: ServerState) -> None:
        self._connection = connection
        self._state = state
        self._loop: asyncio.AbstractEventLoop = None  # type: ignore[assignment]  # set by enter
        self.ip = ""
        self._counted = False
        self._timer: asyncio.TimerHandle | None = None  # the turn awaited, then the idle check

    def enter(self, loop: asyncio.AbstractEventLoop, ip: str) -> bool:
        """A new connection from ``ip``: False when it may not stay (the caller aborts it)."""
        self._loop = loop
        self.ip = ip
        state = self._state
        if state.stopping:
            return False
        cfg = state.config
        per_ip = state.connections_by_ip.get(ip, 0)
        full = len(state.connections) >= cfg.max_connections
        if (full or per_ip >= cfg.max_connections_per_ip) and self._evict_idle(same_ip=not full):
            full, per_ip = False, per_ip - (not full)
        if full or per_ip >= cfg.max_connections_per_ip:
            reason = ("max.connections reached" if len(state.connections) >= cfg.max_connections
                      else "max.connections.per.ip reached")
            connection = self._connection
            log.warning("connection_refused", conn_id=connection.conn_id, peer=connection.peer, reason=reason,
                        connections=len(state.connections), connections_from_ip=per_ip,
                        max_connections=cfg.max_connections, max_connections_per_ip=cfg.max_connections_per_ip)
            state.metrics.connection_refused(reason)
            return False
        state.connection_opened(self._connection, ip)
        self._counted = True
        return True

    def await_turn(self) -> None:
        """``max.connection.creation.rate(.per.ip)``: the connection is served (read, or its TLS
        handshake run) in its turn."""
        rate, now = self._state.connection_rate, self._loop.time()
        delay = rate.address_delay(self.ip, now)
        if delay > 0:
            self._wait(delay, self._address_turn)
        elif (delay := rate.delay(now)) > 0:
            self._wait(delay, self._admit)
        else:
            self._connection.admitted()

    def _wait(self, delay: float, then: Callable[[], None]) -> None:
        self._connection.hold_for_admission()
        self._timer = self._loop.call_later(delay, then)

    def _address_turn(self) -> None:
        """The turn of the connection's address has come; now its turn overall."""
        self._timer = None
        if self._connection.closing:
            return
        delay = self._state.connection_rate.delay(self._loop.time())
        if delay > 0:
            self._timer = self._loop.call_later(delay, self._admit)
            return
        self._admit()

    def _admit(self) -> None:
        self._timer = None
        if not self._connection.closing:
            self._connection.admitted()

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
        """The connection is gone: it no longer counts, and no timer of its runs."""
        if self._counted:
            self._counted = False
            self._state.connection_closed(self._connection, self.ip)
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
