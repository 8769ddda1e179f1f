"""Repair: every replica on an alive, eligible broker.

Goals
    Replace placeholders and replicas on dead, unknown or forgotten brokers
    (:func:`kafka_replica_assignor.planner.solving.repair_rule.repair_working`, the algorithm of :mod:`kafka_replica_assignor.planner.replica_repair`), first of
    all goals: a partition naming a broker that cannot serve is neither movable nor leadable.

Constraints
    - Partitions out of scope stay as they are, and excluded brokers take no repair (the scope
      rule, :mod:`kafka_replica_assignor.planner.goals.scope`); ``max_moves`` caps the repairs first.
    - Its moves are counted in every later goal's figures and bounds (``repairs_needed``).

Algorithm
    Runs on the working replica lists before the shared model is built (the model indexes
    repaired partitions only). Accepts every later move: a later move is between eligible
    brokers, so it never breaks a repair.

Example
    Broker 4 dead, ``t-1 [4, 0, 2]``: its replica on 4 goes to the eligible broker of a rack
    ``t-1`` lacks holding the fewest replicas -> ``t-1 [1, 0, 2]``.
"""

from __future__ import annotations

from kafka_replica_assignor.planner.goals.goal import Goal, ReportView, Target, blame
from kafka_replica_assignor.planner.plan import Working
from kafka_replica_assignor.planner.solving.repair_rule import repair_working


class RepairGoal(Goal):
    """Repair the replicas that cannot serve (module doc)."""

    name = "repair"

    def __init__(self, work: Working, max_moves: int | None) -> None:
        self.work = work
        self.max_moves = max_moves

    def optimize(self) -> int:
        return repair_working(self.work, max_moves=self.max_moves)

    def accepts(self, i: int, source: int, destination: int) -> bool:
        return destination in self.work.eligible_set

    def explain(self) -> None:
        """:func:`kafka_replica_assignor.planner.solving.repair_rule.repair_working` notes what it could not repair."""

    @staticmethod
    def targets(view: ReportView) -> tuple[Target, ...]:
        before, after = view.before.misplaced, view.after.misplaced
        missed = ""
        if after:
            why = blame(view, True, "repair")
            if view.after.wider_than_alive and not (view.settings.mode == "leader" or "budget" in why):
                alive = sum(b.alive for b in view.after.brokers)
                why = (f"{view.after.wider_than_alive} partition(s) have more replicas than the {alive} alive "
                       f"broker(s)")
            missed = f"replicas on dead or unknown brokers and placeholders: {after} after the plan, target 0: {why}"
        return (Target("replicas on dead or unknown brokers, placeholders", before, after, 0, not after, 1,
                       missed),)
