"""Replica balance (KIP-166): even replicas, bytes and topics per broker, with the fewest bytes moved.

Goals, in this order (each as far as the earlier ones allow)
    1. *Hard*: never two replicas of a partition on one broker; rack diversity never reduced at
       any level of the rack tree (:mod:`kafka_replica_assignor.planner.racks`) and *repaired* where the racks allow (a
       partition with two replicas in one group while a group it could use has none); replicas
       on dead, unknown or forgotten brokers and placeholders repaired (:mod:`kafka_replica_assignor.planner.solving.repair_rule`);
       a broker's ``capacity_bytes`` never exceeded.
    2. *Even*: every broker's replica count within ``[lo, hi]`` (``avg * (1 -+ threshold)``,
       ``[floor(avg), ceil(avg)]`` at threshold 0); when partitions carry ``size_bytes``, every
       broker's bytes within ``[blo, bhi]`` = ``mean * (1 -+ threshold)``, widened only where
       that band is provably out of reach: ``bhi`` is at least the largest partition (the
       broker holding it holds that much), and a band without a whole number in it (threshold
       0, a fractional mean) is ``[floor(mean), ceil(mean)]``; every topic spread evenly: a
       node ``g`` of the rack tree (a broker, a rack, a data centre) holds at most

           ``cap(t, g) = max(ceil(R_t * m_g / B), ceil(n_t(parent) * m_g / m_parent), S_t(g)) + 1``

       replicas of topic ``t``, where ``R_t`` is the topic's replicas, ``m_g`` the alive brokers
       under ``g``, ``B`` all alive brokers, ``n_t(parent)`` the topic's replicas under ``g``'s
       parent (the whole cluster for the top level; a broker's parent is its rack) and, for a
       rack node, ``S_t(g)`` the topic's partitions with at least as many replicas as there are
       groups at ``g``'s level (full diversity puts one of each in every group; 0 for brokers).
       The first term is the even share; the others are what rack diversity forces: a small
       rack holding one replica of every partition spreads that evenly over its brokers.
    3. *Leaders*: followers move before leaders, so that :mod:`kafka_replica_assignor.planner.goals.leader_flow` can then
       even the preferred leaders with few changes.
    4. *Cheap*: the fewest bytes moved (replica moves when sizes are unknown); the lower bounds
       are recorded in the plan (``bounds``) and shown in the report.

Constraints
    - A move never pushes a topic above its cap at the receiving node, nor a broker above its
      capacity, nor a broker out of the count band. A replica that comes back to a broker it
      left in the same plan is no move at all (chains collapse in :meth:`Working.plan`).
    - ``max_moves`` caps repairs plus moves (a swap is two moves); ``max_leader_changes`` stops
      moving leader replicas once that many preferred leaders changed.
    - Unsized partitions weigh one replica and no bytes; without any size the disk objective is
      the replica count.
    - Disks adding up to less than the bytes raise ``ValueError`` ("capacity infeasible"), and
      so does a broker left above its capacity ("capacity not met": packing replicas under
      capacities is NP-hard; the search is moves, swaps and two-move chains, step 6).

Algorithm
    Each step below is a goal of :mod:`kafka_replica_assignor.planner.goals` (one module each, ranked by
    :data:`kafka_replica_assignor.planner.goals.order.GOALS`, the order as data) over one shared model
    (:class:`kafka_replica_assignor.planner.goals.model.Model`); this module is the entry point.

    Per-topic counters are kept for every node of the rack tree, so a move is checked in
    ``O(depth)``. Each broker's partitions are kept sorted by size (the replica nearest a wanted
    size is a binary search), and each rack has a heap of its brokers by load (replicas beyond
    target, then bytes), updated on every move: a receiver is found by merging the heaps of
    the racks a replica may go to, emptiest first, never by a scan of all brokers. *Wanted
    size*: a broker with bytes above the mean and replicas to give gives, per replica, its
    excess over the replicas still to give (the smallest replica otherwise), never more than
    the receiver can take and still fill its count inside the byte band.

    1. *Repair* dead, unknown and forgotten replicas (:func:`kafka_replica_assignor.planner.solving.repair_rule.repair_working`).
    2. *Targets*: every count is clamped into ``[lo, hi]`` and the difference with the total is
       spread by water filling: ``sum(max(0, count - target))`` is the fewest count moves.
    3. *Diversity*: for a partition whose replicas span fewer groups at some level than they
       could, a replica of a doubled group (a follower, on the most loaded broker) moves to the
       least loaded broker of an unused group. A replica leaving a doubled group for a new one
       keeps every level's diversity.
    4. *Topics*: a topic above its cap at a node gives replicas, from the broker of the node
       holding the most of it, to a broker outside the node: below its count target first,
       then not pushed above the byte band, then holding the fewest of the topic (the best of
       the first few that fit). The replica is the smallest follower, or, when the receiver
       is below its count target and both sides want bytes moved, the one nearest that size.
    5. *Counts*: each broker above its target gives followers first, then replicas of the
       topics it holds most of (more than one above the topic's average, then above it), each
       time the one nearest its wanted size, to the broker below target holding the fewest of
       that topic among the first few emptiest that stay in the byte band. Brokers still
       outside the band then level with any broker at least two replicas away.
    6. *Bytes*: while a broker is outside the byte band (or above its capacity), the furthest
       out-of-band broker and the lightest (heaviest) brokers of its rack, then of all, kept in
       size-sorted lists, exchange bytes: a move when counts allow, or
       a swap of a large replica for a smaller one (counts unchanged) whose difference is
       closest to what evens the pair (at least the out-of-band broker's distance to the band,
       as far as the partner stays in it: a rack whose partitions cannot leave it may hold more
       than the cluster's mean, so its brokers fill to the band's top, not to the mean), found
       by binary search in size-sorted replica lists. A broker above its capacity also pairs
       with the brokers with the most room left, which may then leave the count and byte bands
       (capacity is hard, the bands are not); when no transfer fits, one of its largest
       replicas goes to a broker without the room after one replica of that broker moves to
       a third with room (a two-move chain). A pair that found nothing is not tried again
       until one of its brokers changes. Each transfer lowers the bytes above capacity or
       else the sum of squared bytes, by at least a quarter of what it aims at, so the pass
       ends in few transfers.
    7. Steps 4-6 repeat while they move something (at most a few rounds); what is still off
       target is explained in the notes (the blocking constraint) next to the lower bounds.
       Then *fewer moves* (:mod:`kafka_replica_assignor.planner.goals.fewer_moves`) puts back
       the moved replicas the targets did not need, keeping everything above.

    8. *Exact path* (:func:`best_replicas` with ``exact_seconds`` > 0, the command's default):
       on a cluster of at most :data:`kafka_replica_assignor.planner.solving.exact.EXACT_CELLS` partitions x brokers, without
       budgets, the same targets as a mixed-integer program (:mod:`kafka_replica_assignor.planner.solving.exact`, HiGHS),
       started from this plan; the better of the two plans is kept (targets met first, then
       their distance, bytes, replica and leader moves) and the notes say which path ran. A
       target it proves out of reach is named so in the notes, with the method; the notes of
       the steps above only say what their search did not find.

    Time: ``O(P * RF * depth)`` to build the counters, ``O(P * RF * depth)`` per round to find
    the topics above their cap, then per move ``O(racks * log B + depth + R_b)`` (a merged heap
    scan, the caps, two sorted-list edits of ``R_b`` replicas per broker, a memory move), and
    per byte transfer ``O(SCAN * log R_b)``: near-linear in ``P``; a test compares the work at
    ``4N`` and ``N``. 150,000 partitions on 300 brokers: about 5 s for this rule.

Example
    Brokers 1, 2, 5 in rack a, 3, 4, 6 in rack b; 5 and 6 are new; threshold 0, no sizes.
    ``x-0 [1,3] x-1 [3,1] x-2 [2,4] x-3 [4,2] y-0 [1,4] y-1 [2,1]``: 12 replicas, band [2, 2];
    brokers 1..6 hold 4, 3, 2, 3, 0, 0; ``y-1`` has both replicas in rack a.

    ============ ============ ================================================================
    step         move         why
    ============ ============ ================================================================
    diversity    y-1 1 -> 6   y-1 lacks rack b; its follower leaves 1 (the most loaded) for 6
                              (the least loaded broker of rack b)
    counts       x-1 1 -> 5   broker 1 (3, target 2) gives a follower to 5 (rack a)
                 x-3 2 -> 5   broker 2 (3) gives a follower; 5 holds the fewest of x
                 x-2 4 -> 6   broker 4 (3) gives a follower to 6
    result                    2 replicas per broker, at most 2 of x on one (cap ceil(8/6) + 1
                              = 3), 4 moves: the bound, no leader change
    ============ ============ ================================================================
"""

from __future__ import annotations

from collections.abc import Iterable

from kafka_replica_assignor.cluster.snapshot import ClusterSnapshot, gc_paused
from kafka_replica_assignor.planner.bands import band, parse_threshold
from kafka_replica_assignor.planner.goals.model import water_fill
from kafka_replica_assignor.planner.goals.order import balance
from kafka_replica_assignor.planner.plan import Plan, Scope, Working
from kafka_replica_assignor.planner.solving.exact import improve

__all__ = ["balance_replicas", "band", "best_replicas", "replica_balance", "water_fill"]


def replica_balance(snapshot: ClusterSnapshot, *, threshold: float | int | str = 10,
                    max_moves: int | None = None, forgotten: Iterable[int] = frozenset(),
                    exact_seconds: float = 0.0, scope: Scope | None = None) -> Plan:
    """Repair, then balance replicas, bytes and topics within the threshold band (module doc);
    ``exact_seconds`` > 0: on small clusters, then the exact program of :mod:`kafka_replica_assignor.planner.solving.exact`."""
    with gc_paused():
        return best_replicas(snapshot, forgotten, threshold=threshold, max_moves=max_moves,
                             exact_seconds=exact_seconds, scope=scope).plan()


def best_replicas(snapshot: ClusterSnapshot, forgotten: Iterable[int] = frozenset(), *,
                  threshold: float | int | str = 10, max_moves: int | None = None,
                  max_leader_changes: int | None = None, exact_seconds: float = 0.0,
                  scope: Scope | None = None) -> Working:
    """The heuristic of this module, then, when ``exact_seconds`` > 0 and the cluster is small,
    the exact program of :mod:`kafka_replica_assignor.planner.solving.exact` seeded with its plan; the better of the two (the
    notes say which ran). ``scope``: the partitions and brokers the plan may touch."""
    work = Working(snapshot, forgotten, scope)
    if exact_seconds <= 0:
        balance_replicas(work, threshold=threshold, max_moves=max_moves, max_leader_changes=max_leader_changes)
        return work
    refusal: ValueError | None = None
    try:
        balance_replicas(work, threshold=threshold, max_moves=max_moves, max_leader_changes=max_leader_changes)
    except ValueError as exc:
        if not str(exc).startswith("capacity not met"):
            raise
        refusal = exc
    return improve(work, parse_threshold(threshold), refusal,
                   budgets=max_moves is not None or max_leader_changes is not None, time_limit=exact_seconds)


def balance_replicas(work: Working, *, threshold: float | int | str = 10,
                     max_moves: int | None = None, max_leader_changes: int | None = None) -> None:
    """Repair then balance ``work`` (a rule's own scratch copy): the replica goals of
    :mod:`kafka_replica_assignor.planner.goals` in their order.

    ``max_leader_changes`` (cluster balance) stops moving leader replicas once that many
    preferred leaders changed; changes forced by repairing a dead leader do not count."""
    balance(work, parse_threshold(threshold), max_moves=max_moves, max_leader_changes=max_leader_changes)
