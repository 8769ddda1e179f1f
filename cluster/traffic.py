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
state`` prints these figures; goals that weigh traffic ask the same function.

Example: ``t-0`` replicas (1, 2, 3), leader 1, 100 B/s in, 250 B/s out gives broker 1 in 100,
out 250 + 2 x 100 = 450; brokers 2 and 3 in 100 each, out 0.
"""

from __future__ import annotations

from dataclasses import dataclass

from .snapshot import ClusterSnapshot


@dataclass(frozen=True, slots=True)
class BrokerTraffic:
    """One broker's bytes per second."""

    leader_in: float = 0.0      # produce to the partitions it leads
    follower_in: float = 0.0    # replication fetched for the partitions it follows
    leader_out: float = 0.0     # consumers' reads and followers' fetches of the partitions it leads

    @property
    def network_in(self) -> float:
        return self.leader_in + self.follower_in

    @property
    def network_out(self) -> float:
        return self.leader_out


def has_rates(snapshot: ClusterSnapshot) -> bool:
    """Whether any partition carries a rate."""
    return any(p.bytes_in_per_s is not None or p.bytes_out_per_s is not None for p in snapshot.partitions)


def broker_traffic(snapshot: ClusterSnapshot) -> dict[int, BrokerTraffic]:
    """Every broker of the snapshot (and any replica id it does not list), with its traffic."""
    leader_in: dict[int, float] = {b.id: 0.0 for b in snapshot.brokers}
    follower_in = dict(leader_in)
    leader_out = dict(leader_in)
    for p in snapshot.partitions:
        if p.leader is None:
            continue
        produced = p.bytes_in_per_s or 0.0
        followers = [r for r in p.replicas if r != p.leader and r >= 0]   # placeholders fetch nothing
        leader_in[p.leader] = leader_in.get(p.leader, 0.0) + produced
        leader_out[p.leader] = leader_out.get(p.leader, 0.0) + (p.bytes_out_per_s or 0.0) + produced * len(followers)
        for r in followers:
            follower_in[r] = follower_in.get(r, 0.0) + produced
    ids = sorted(set(leader_in) | set(follower_in))
    return {i: BrokerTraffic(leader_in.get(i, 0.0), follower_in.get(i, 0.0), leader_out.get(i, 0.0)) for i in ids}


__all__ = ["BrokerTraffic", "broker_traffic", "has_rates"]
