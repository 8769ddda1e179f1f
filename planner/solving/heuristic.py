"""The heuristic: the goals' own moves, in their order, on one shared model.

Goals
    A plan for any size of cluster, near-linear in the partitions, by asking each goal of
    :data:`kafka_replica_assignor.planner.goals.order.GOALS` for its moves in rank order: every
    move a goal makes is accepted by the hard goals and by every goal ranked before it
    (:meth:`kafka_replica_assignor.planner.goals.model.Model.fits`).

Constraints
    - Deterministic: partitions are visited by (topic, partition), brokers by id; every limit
      is a number of moves, searches or rounds, never time.
    - ``max_moves`` caps repairs plus moves (a swap is two moves), spent in the goals' order;
      ``max_leader_changes`` stops moving leader replicas once that many preferred leaders
      changed (changes forced by repairing a dead leader do not count).

Algorithm
    1. The goals of phase ``"lists"`` (repair) run on the replica lists.
    2. The shared model is built from the repaired lists; every replica goal records its
       targets on it (``prepare``: the bands, the count targets, the lower bounds), and the
       bytes-moved bound is computed (:mod:`kafka_replica_assignor.planner.solving.bound`).
    3. The goals of phase ``"once"`` run once (rack diversity), those of ``"rounds"`` in
       rounds while one of them moves something (at most :data:`ROUNDS`: capacity, topic
       spread, counts, bytes; one goal's moves may open room for another's), then those of
       ``"last"`` (fewer moves). Each goal then notes what it left (``explain``).

    Time: ``O(P * RF * depth)`` to build the counters, ``O(P * RF * depth)`` per round to find
    the topics above their cap, then per move ``O(racks + k log racks + depth + R_b)`` (a
    merged heap scan of the ``k`` brokers looked at, the caps, two sorted-list edits of ``R_b``
    replicas per broker), and per byte transfer ``O(SCAN * log R_b)``: near-linear in ``P``; a
    test compares the work at ``4N`` and ``N``. A target the rack tree puts out of reach costs
    about one search per rack, topic and change, not one per replica and pass: the goals' own
    searches skip what found nothing while nothing it read has changed (their module docs say
    what).

Example
    Brokers 1, 2, 5 in rack a, 3, 4, 6 in rack b; 5 and 6 are new; threshold 0, no sizes.
    ``x-0 [1,3] x-1 [3,1] x-2 [2,4] x-3 [4,2] y-0 [1,4] y-1 [2,1]``: 12 replicas, band [2, 2];
    brokers 1..6 hold 4, 3, 2, 3, 0, 0; ``y-1`` has both replicas in rack a.

    ============ ============ ================================================================
    goal         move         why
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

from collections.abc import Sequence

from kafka_replica_assignor.planner.goals.goal import Goal
from kafka_replica_assignor.planner.goals.lost_replicas import misplaced
from kafka_replica_assignor.planner.goals.model import Model
from kafka_replica_assignor.planner.goals.order import REPLICA_PHASES, goals_for
from kafka_replica_assignor.planner.plan import Working
from kafka_replica_assignor.planner.request import PlanRequest
from kafka_replica_assignor.planner.solving.bound import record_bound

ROUNDS = 4


def balance(work: Working, request: PlanRequest, goals: Sequence[Goal]) -> Model | None:
    """Run ``goals`` (the goals of ``request``'s mode, in rank order) on ``work``, a pass's own
    scratch copy; the model they shared, or None when no broker is eligible or the mode has no
    replica goal. ``work.memo["distances"]``: the goals' distances at the start and the end."""
    pre = work.counts()
    pre_bytes = work.byte_counts()
    misplaced_before = misplaced(work)
    for goal in goals:
        if goal.phase == "lists":
            goal.optimize()
    on_model = [g for g in goals if g.phase in REPLICA_PHASES]
    if not on_model:
        return None
    if not work.eligible:
        work.notes.append("no alive broker: nothing to balance")
        return None
    spent = len(work.moves)
    budget = None if request.max_moves is None else request.max_moves - spent
    leader_budget = request.max_leader_changes if request.mode == "cluster" else None
    model = Model(work, on_model, budget, leader_budget, pre, pre_bytes)
    for goal in on_model:
        goal.prepare()
    for goal in on_model:
        goal.record_bounds()
    record_bound(work, request, goals)
    start = (misplaced_before, *(g.distance() for g in on_model))
    run_phases(model, on_model)
    work.memo["distances"] = (start, (misplaced(work), *(g.distance() for g in on_model)))
    work.memo["soft"] = (False, *(g.target for g in on_model))
    return model


def run_phases(model: Model, goals: Sequence[Goal]) -> None:
    """The goals' moves: ``"once"`` goals once, ``"rounds"`` goals in rounds while one of them
    moves something (at most :data:`ROUNDS`), then ``"last"`` goals; then their notes."""
    for goal in goals:
        if goal.phase == "once":
            goal.optimize()
    rounds = [g for g in goals if g.phase == "rounds"]
    for _ in range(ROUNDS):
        moved = sum(goal.optimize() for goal in rounds)
        if not moved or not model.budget_left():
            break
    for goal in goals:
        if goal.phase == "last":
            goal.optimize()
    for goal in goals:
        goal.explain()


def measure(work: Working, request: PlanRequest) -> tuple[int, ...]:
    """How far ``work``'s current lists are from every target, in the goals' order (repair
    first): the vector the heuristic records for its start and its end, for any lists (the
    exact program's too)."""
    goals = goals_for(work, request, REPLICA_PHASES)
    if not goals or not work.eligible:
        return (misplaced(work),)
    Model(work, goals, None, None, {}, {})
    for goal in goals:
        goal.prepare()
    return (misplaced(work), *(g.distance() for g in goals))
