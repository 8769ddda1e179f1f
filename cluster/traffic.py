"""What each broker's network carries, from its partitions' rates: the one rule.

A partition's ``bytes_in_per_s`` (what producers write) arrives at its leader, and each
follower fetches it again from the leader as replication; its ``bytes_out_per_s`` (what every
consumer group reads) leaves its leader. So, per broker:

=================== ==========================================================================
network in          produce to the partitions it leads + the same of the partitions it follows
network out         per partition it leads: consume + produce x (replicas - 1 followers)
=================== ==========================================================================

Followers count whether or not they are in the ISR (one out of it still fetches); KIP-409
placeholders (negative ids) fetch nothing. A partition
without a leader carries nothing; a partition without rates counts 0. ``replica-assignor
state`` prints these figures; the planner's network goals weigh each partition with
:func:`partition_rates` and report with :func:`broker_traffic` (``preferred``: the first replica
leads, as after a plan once preferred leaders are elected; in the planner's whole units).

Example: ``t-0`` replicas (1, 2, 3), leader 1, 100 B/s in, 250 B/s out gives broker 1 in 100,
out 250 + 2 x 100 = 450; brokers 2 and 3 in 100 each, out 0.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar, overload

from .snapshot import ClusterSnapshot, PartitionEntry

N = TypeVar("N", int, float)
"""A rate's number: bytes/s as given (``float``) or in a caller's whole units (``int``)."""


def _as_given(rate: float | None) -> float:
    return rate or 0.0


@dataclass(frozen=True, slots=True)
class BrokerTraffic(Generic[N]):
    """One broker's bytes per second (or the caller's unit)."""

    leader_in: N = 0        # produce to the partitions it leads
    follower_in: N = 0      # replication fetched for the partitions it follows
    leader_out: N = 0       # consumers' reads and followers' fetches of the partitions it leads

    @property
    def network_in(self) -> N:
        return self.leader_in + self.follower_in

    @property
    def network_out(self) -> N:
        return self.leader_out


def has_rates(snapshot: ClusterSnapshot) -> bool:
    """Whether any partition carries a rate."""
    return any(p.bytes_in_per_s is not None or p.bytes_out_per_s is not None for p in snapshot.partitions)


def has_traffic(snapshot: ClusterSnapshot) -> bool:
    """Whether the snapshot carries traffic: a partition's rate or a broker's network capacity."""
    return has_rates(snapshot) or any(b.network_in_capacity is not None or b.network_out_capacity is not None
                                      for b in snapshot.brokers)


def partition_rates(p: PartitionEntry, followers: int, unit: Callable[[float | None], N]) -> tuple[N, N]:
    """``(in, out)`` of ``p`` in ``unit``: what its leader and each of its ``followers`` receive
    (produce), and what its leader sends (consume + produce x followers)."""
    produced = unit(p.bytes_in_per_s)
    return produced, unit(p.bytes_out_per_s) + produced * followers


@overload
def broker_traffic(snapshot: ClusterSnapshot, *, preferred: bool = False) -> dict[int, BrokerTraffic[float]]: ...


@overload
def broker_traffic(snapshot: ClusterSnapshot, *, preferred: bool = False,
                   unit: Callable[[float | None], N]) -> dict[int, BrokerTraffic[N]]: ...


def broker_traffic(snapshot: ClusterSnapshot, *, preferred: bool = False,
                   unit: Callable[[float | None], Any] = _as_given) -> dict[int, BrokerTraffic[Any]]:
    """Every broker of the snapshot (and any replica id it does not list), with its traffic in
    ``unit`` (bytes/s as given by default). ``preferred``: the first replica leads (the leader
    a plan's execution elects), not the partition's current ``leader``."""
    zero = unit(None)
    leader_in: dict[int, Any] = {b.id: zero for b in snapshot.brokers}
    follower_in = dict(leader_in)
    leader_out = dict(leader_in)
    for p in snapshot.partitions:
        leader = (p.replicas[0] if p.replicas else None) if preferred else p.leader
        if leader is None:
            continue
        followers = [r for r in p.replicas if r != leader and r >= 0]   # placeholders fetch nothing
        produced, sent = partition_rates(p, len(followers), unit)
        if leader >= 0:     # a placeholder first: the others still fetch (from the leader elected)
            leader_in[leader] = leader_in.get(leader, zero) + produced
            leader_out[leader] = leader_out.get(leader, zero) + sent
        for r in followers:
            follower_in[r] = follower_in.get(r, zero) + produced
    ids = sorted(set(leader_in) | set(follower_in))
    return {i: BrokerTraffic(leader_in.get(i, zero), follower_in.get(i, zero), leader_out.get(i, zero)) for i in ids}


__all__ = ["BrokerTraffic", "broker_traffic", "has_rates", "has_traffic", "partition_rates"]
