"""``max.connection.creation.rate`` and its per-address share (KIP-612).

Two token buckets of one second's worth, as Kafka's connection quotas: the whole server serves
at most ``max.connection.creation.rate`` new connections per second, and one client address at
most ``max.connection.creation.rate.per.ip`` (Kafka's ``connection_creation_rate`` quota on an
``ips`` entity, which has no default there; a static key here, since there is no quota store).
A connection over either waits, unread (its TLS handshake not started), for its turn. The
per-address bucket comes first: a brute force from one address spends its own share, so it no
longer makes new connections from other addresses wait behind it (they once waited about 0.4 s).
Addresses whose bucket is full again are forgotten, so the table stays small.
"""

from __future__ import annotations

_PRUNE_FROM = 1024  # addresses remembered before full buckets are forgotten


class ConnectionRate:
    """When each new connection is served: ``rate`` per second overall, ``per_ip`` per address (-1: no limit)."""

    __slots__ = ("rate", "per_ip", "_next", "_next_by_ip", "_prune_at")

    def __init__(self, rate: int, per_ip: int) -> None:
        self.rate = rate
        self.per_ip = per_ip
        self._next = 0.0  # the loop time from which the next connection is served
        self._next_by_ip: dict[str, float] = {}
        self._prune_at = _PRUNE_FROM

    def address_delay(self, ip: str, now: float) -> float:
        """How long a connection from ``ip`` accepted ``now`` waits for its address's turn; after it,
        :meth:`delay` gives its turn overall (a connection waiting for its address takes no turn of the
        others: it would make them wait for a turn it cannot use yet)."""
        if self.per_ip < 0:
            return 0.0
        by_ip = self._next_by_ip
        # a bucket of one second's worth: a burst of ``per_ip`` connections is served at once
        turn = max(now - 1.0, by_ip.get(ip, 0.0))
        by_ip[ip] = turn + 1.0 / self.per_ip
        if len(by_ip) > self._prune_at:
            self._prune(now)
        return max(turn - now, 0.0)

    def delay(self, now: float) -> float:
        """How long a connection whose address has had its turn waits for its turn overall."""
        if self.rate < 0:
            return 0.0
        turn = max(now - 1.0, self._next)
        self._next = turn + 1.0 / self.rate
        return max(turn - now, 0.0)

    def _prune(self, now: float) -> None:
        by_ip = self._next_by_ip
        for ip in [ip for ip, at in by_ip.items() if at <= now - 1.0]:
            del by_ip[ip]
        self._prune_at = max(_PRUNE_FROM, 2 * len(by_ip))
