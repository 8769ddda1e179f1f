"""The order of the goals, as data, and the one loop that runs them.

Goals
    :data:`GOALS` ranks every balancing goal; a goal's moves are accepted by every goal ranked
    before it, so a later goal never undoes an earlier one. The report's objectives and its
    "Targets not reached" are the goals' own :class:`~kafka_replica_assignor.planner.goals.goal.Target` figures, in
    this order (:func:`targets`).

Constraints
    Why this order:

    1. *Repair* first: a replica on a dead broker serves nobody, and a partition naming one can
       neither move nor change leader (Kafka refuses such a reassignment).
    2. *Scope*: what the operator said may not move does not move, whatever any goal wants.
    3. *Rack diversity*: losing a rack loses availability; a diversity repair may push a topic
       above its cap or a broker out of a band, never the reverse.
    4. *Capacity*: a full disk stops a broker; relieving one may break the topic caps and the
       bands (which rank after), never diversity. No move of any goal exceeds a capacity; the
       relief itself runs in the byte exchange (:mod:`kafka_replica_assignor.planner.goals.capacity` says why).
    5. *Topic spread*: a topic crowded on one broker or rack is a hot spot under load; counts
       and bytes are evened only by moves that keep every topic under its cap.
    6. *Replica counts*, then 7. *bytes*: the count band first (a swap evens bytes without
       touching counts; a move for bytes keeps both counts in their band).
    8. *Fewer moves*: once every band is reached, undo the moves it turned out not to need,
       keeping everything above.
    9. *Leaders* last: they move no data, so they cannot break anything above; the replica
       goals help them by moving followers before leaders.

    ``max_moves`` is spent in this order; ``max_leader_changes`` stops replica goals from
    moving leader replicas once spent.

Algorithm
    Repair on the working lists, then the shared :class:`~kafka_replica_assignor.planner.goals.model.Model` is built,
    each goal records its lower bounds (from the cluster before the plan), the goals of
    :data:`ONCE` run once and those of :data:`REPEATED` in rounds while they move something (at
    most :data:`ROUNDS`), then each goal explains what it left (notes, or a refusal). Leaders
    run after, on the same working lists (:mod:`kafka_replica_assignor.planner.solving.cluster_balance`, leader mode).

Example
    Adding a goal (say network-in per broker): one module here with the goal class (its
    ``accepts``, ``optimize``, ``explain``, ``targets``), one entry in :data:`GOALS` and in
    :data:`REPEATED` or :data:`ONCE`, and its test; the report and the plan pick it up from here.
"""

from __future__ import annotations

from fractions import Fraction
from typing import TYPE_CHECKING

from kafka_replica_assignor.planner.goals.capacity import CapacityGoal
from kafka_replica_assignor.planner.goals.fewer_moves import FewerMovesGoal
from kafka_replica_assignor.planner.goals.goal import Goal, ReportView, Target
from kafka_replica_assignor.planner.goals.leaders import LeaderGoal
from kafka_replica_assignor.planner.goals.lost_replicas import RepairGoal
from kafka_replica_assignor.planner.goals.model import Model
from kafka_replica_assignor.planner.goals.rack_diversity import RackDiversityGoal
from kafka_replica_assignor.planner.goals.replica_bytes import ReplicaBytesGoal
from kafka_replica_assignor.planner.goals.replica_counts import ReplicaCountGoal
from kafka_replica_assignor.planner.goals.scope import ScopeGoal
from kafka_replica_assignor.planner.goals.topic_spread import TopicSpreadGoal
from kafka_replica_assignor.planner.plan import Working

if TYPE_CHECKING:
    from kafka_replica_assignor.planner.plan import Plan
    from kafka_replica_assignor.planner.report.figures import Figures
    from kafka_replica_assignor.planner.settings import PlanSettings

ModelGoal = (ScopeGoal | RackDiversityGoal | CapacityGoal | TopicSpreadGoal | ReplicaCountGoal | ReplicaBytesGoal
             | FewerMovesGoal)
"""The goals that run on the shared model (repair and leaders run on the working lists)."""

GOALS: tuple[type[Goal], ...] = (RepairGoal, ScopeGoal, RackDiversityGoal, CapacityGoal, TopicSpreadGoal, ReplicaCountGoal,
         ReplicaBytesGoal, FewerMovesGoal, LeaderGoal)
"""Every goal, highest rank first (the module doc says why)."""

ONCE = (ScopeGoal, RackDiversityGoal)
"""Replica goals that run once: what they repair stays repaired."""

REPEATED = (CapacityGoal, TopicSpreadGoal, ReplicaCountGoal, ReplicaBytesGoal)
"""(Capacity's own pass is empty: a broker above its disk is relieved in the byte exchange, see
:mod:`kafka_replica_assignor.planner.goals.capacity`.)"""
"""Replica goals that run in rounds: one goal's moves may open room for another's."""

LAST = (FewerMovesGoal,)
"""Replica goals that run once, after the rounds: they only undo what the others did not need."""

ROUNDS = 4


def balance(work: Working, threshold: Fraction, *, max_moves: int | None = None,
            max_leader_changes: int | None = None) -> Model | None:
    """Run the replica goals of :data:`GOALS` on ``work`` (a rule's own scratch copy); the model
    they shared, or None when no broker is eligible."""
    pre = work.counts()
    pre_bytes = work.byte_counts()
    repairs = RepairGoal(work, max_moves).optimize()
    budget = None if max_moves is None else max_moves - repairs
    model = Model(work, threshold, budget, max_leader_changes, pre, pre_bytes)
    if not work.eligible:
        work.notes.append("no alive broker: nothing to balance")
        return None
    goals: dict[type[ModelGoal], ModelGoal] = {cls: cls(model) for cls in (*ONCE, *REPEATED, *LAST)}
    ranked = [goals[cls] for cls in GOALS if cls in goals]
    CapacityGoal(model).check_total()
    model.set_bands()
    for goal in ranked:
        goal.record_bounds()
    model.set_targets()
    for cls in ONCE:
        goals[cls].optimize()
    for _ in range(ROUNDS):
        moved = sum(goals[cls].optimize() for cls in REPEATED)
        if not moved or not model.budget_left():
            break
    for last in LAST:
        goals[last].optimize()
    for goal in ranked:
        goal.explain()
    return model


def targets(plan: Plan, settings: PlanSettings, before: Figures, after: Figures) -> list[Target]:
    """Every goal's figures for a plan, in rank order: the report's objectives and its targets
    not reached."""
    view = ReportView(plan, settings, before, after)
    return [t for cls in GOALS for t in cls.targets(view)]
