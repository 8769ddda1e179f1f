"""Repair as a planner rule: :func:`kafka_replica_assignor.planner.replica_repair.repair_lists` over a :class:`Working` copy.

The algorithm (which slots need repair, how replacements are ranked, all or nothing per
partition, the move budget) is documented once, in :mod:`kafka_replica_assignor.planner.replica_repair`. This module only
adapts it to the planner's plans.

Goals
    Give every partition its replicas back on alive brokers, as a :class:`~kafka_replica_assignor.planner.plan.Plan` of
    ``repair`` moves that the other rules (:mod:`kafka_replica_assignor.planner.solving.replica_balance`,
    :mod:`kafka_replica_assignor.planner.solving.cluster_balance`) start from.

Constraints
    - Nothing is expected back: a replica on a broker marked dead is replaced like one on an
      unknown or forgotten broker or a placeholder (``keep`` is empty).
    - The rack tree is the planner's own (:class:`kafka_replica_assignor.planner.racks.RackTree`, the same rule as
      :func:`kafka_replica_assignor.planner.replica_repair.rack_levels`).
    - The operator's scope (:class:`~kafka_replica_assignor.planner.plan.Scope`): partitions out of it keep their
      lists, excluded brokers take no replacement (their own replicas stay).
    - Partitions that cannot be filled, and the replicas left over when ``max_moves`` is
      reached, are reported in the plan's notes; ``repairs_needed`` is a bound of the plan.

Algorithm
    :func:`kafka_replica_assignor.planner.replica_repair.repair_lists` on the working replica lists, in (topic, partition)
    order, with the eligible brokers (alive, not forgotten) and their replica counts; each
    change becomes a :attr:`~kafka_replica_assignor.planner.plan.MoveKind.REPAIR` move.

Example
    Brokers 0 (a), 1 (b), 2 (c), 3 (c) alive, 4 (b) dead, 9 unknown.

    ========= ============ ====================================================== ===========
    partition replicas     choice                                                 repaired
    ========= ============ ====================================================== ===========
    t-0       [0, 1, -1]   rack c is new; broker 3 holds no replica, 2 holds one  [0, 1, 3]
    t-1       [4, 0, 2]    broker 4 was on rack b, new to the partition: 1        [1, 0, 2]
    t-2       [9, 0, 1]    unknown rack; c is new; 2 and 3 hold one each: 2       [2, 0, 1]
    ========= ============ ====================================================== ===========
"""

from __future__ import annotations

from collections.abc import Iterable

from kafka_replica_assignor.cluster.snapshot import ClusterSnapshot, gc_paused
from kafka_replica_assignor.planner.plan import MoveKind, Plan, Scope, Working
from kafka_replica_assignor.planner.replica_repair import repair_lists


def repair(snapshot: ClusterSnapshot, forgotten: Iterable[int] = frozenset(), *,
           max_moves: int | None = None, scope: Scope | None = None) -> Plan:
    """Replace placeholders and replicas on dead, unknown or forgotten brokers (see module doc).
    ``scope``: partitions out of it stay as they are, excluded brokers take no replacement."""
    with gc_paused():
        work = Working(snapshot, forgotten, scope)
        repair_working(work, max_moves=max_moves)
        return work.plan()


def repair_working(work: Working, *, max_moves: int | None = None,
                   load: dict[int, int] | None = None) -> int:
    """Repair ``work`` (a rule's own scratch copy) and return the number of replacements.
    ``load`` (replicas per eligible broker, from :meth:`Working.counts`) is kept up to date."""
    if load is None:
        load = work.counts()
    order, eligible = work.order, work.eligible
    if work.frozen or work.excluded:     # out of scope: frozen partitions stay, excluded brokers take none
        order = [i for i in order if i not in work.frozen]
        eligible = [b for b in eligible if b not in work.excluded]
        load = {b: c for b, c in load.items() if b not in work.excluded}
    outcome = repair_lists(work.replicas, order, eligible, work.tree.keys, load, keep=work.excluded,
                           max_moves=max_moves)
    for i, _, old, new in outcome.changes:
        work.record(i, old, new, MoveKind.REPAIR)
    if outcome.unrepaired:
        parts = work.snapshot.partitions
        names = [f"{parts[i].topic}-{parts[i].partition}" for i in outcome.unrepaired[:10]]
        shown = ", ".join(names) + (", ..." if len(outcome.unrepaired) > 10 else "")
        work.notes.append(
            f"{len(outcome.unrepaired)} partition(s) cannot be repaired: fewer alive brokers "
            f"({len(work.eligible)}) than replicas to place ({shown})"
        )
    if outcome.deferred_slots:
        work.notes.append(f"move budget reached: {outcome.deferred_slots} replica(s) left to repair")
    work.bounds["repairs_needed"] = outcome.needed
    return len(outcome.changes)
