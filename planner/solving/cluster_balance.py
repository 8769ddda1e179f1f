"""Cluster balance (KIP-166): replica balance, then leader balance, within budgets.

Goals
    Even replica counts with the fewest data moves (:mod:`kafka_replica_assignor.planner.solving.replica_balance`, repairs
    first), then even preferred leaders with the fewest leader changes
    (:mod:`kafka_replica_assignor.planner.goals.leader_flow`) counted against the leaders *before* the replica moves.

Constraints
    - ``max_moves`` caps repairs plus replica moves; ``max_leader_changes`` caps the partitions
      whose preferred leader differs from the input, whatever changed it: once the replica
      stage has spent the leader budget it only moves followers.
    - Everything the two rules promise (no duplicate broker, rack diversity kept, RF kept).

Algorithm
    The two rules run one after the other on one scratch copy of the replica lists; the leader
    rule prices a change against the input's preferred leaders, so a partition whose leader
    replica was moved (or repaired) is free to take any leader.

Example
    30 brokers with 3 new empty ones, 3,000 partitions of RF 3: 900 replica moves (the bound),
    followers only, then the leader flow fixes the leader counts of the new brokers.
"""

from __future__ import annotations

from collections.abc import Iterable

from kafka_replica_assignor.cluster.snapshot import ClusterSnapshot, gc_paused
from kafka_replica_assignor.planner.goals.leader_flow import balance_leaders
from kafka_replica_assignor.planner.plan import Plan, Scope
from kafka_replica_assignor.planner.solving.replica_balance import best_replicas


def cluster_balance(snapshot: ClusterSnapshot, *, threshold: float | int | str = 10,
                    max_moves: int | None = None, max_leader_changes: int | None = None,
                    forgotten: Iterable[int] = frozenset(), exact_seconds: float = 0.0,
                    scope: Scope | None = None) -> Plan:
    """Repair, replica-balance, then leader-balance (see module doc)."""
    with gc_paused():
        work = best_replicas(snapshot, forgotten, threshold=threshold, max_moves=max_moves,
                             max_leader_changes=max_leader_changes, exact_seconds=exact_seconds, scope=scope)
        balance_leaders(work, max_leader_changes=max_leader_changes, baseline=snapshot)
        return work.plan()
