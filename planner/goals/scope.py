"""Scope (``--topics``, ``--exclude-topics``): partitions out of scope keep their replica lists.

Goals
    Partitions out of scope (:meth:`kafka_replica_assignor.planner.request.Scope.frozen`) keep their replica lists
    exactly: no replica move, no repair, and no reordering (no preferred-leader change), in
    every mode. Distance: out-of-scope partitions changed.

Constraints
    - A hard rule of the first rank: no goal's move breaks it (:meth:`ScopeGoal.accepts`), and
      the report checks it after the plan (``out-of-scope partitions changed``, target 0).
    - Out-of-scope partitions still count in every figure and band.

Algorithm
    Heuristic: the model never offers a frozen partition's replicas, repair skips them, and the
    leader goal gives a frozen partition its current leader as its only candidate. Exact
    program: a frozen partition's columns are fixed. Bound: its bytes stay.

Example
    ``--topics 'orders.*'``: ``payments-0 [1, 2]`` stays ``[1, 2]`` in replica, cluster, leader
    and repair mode, even when broker 1 leads more than its share.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafka_replica_assignor.planner.goals.goal import ExactProgram, Goal, ReportView, Target

if TYPE_CHECKING:
    from kafka_replica_assignor.planner.request import PlanRequest


class ScopeGoal(Goal):
    """The operator's topics as a hard rule (module doc)."""

    name = "scope"
    key = "scope"
    hard = True
    modes = frozenset({"leader", "replica", "cluster", "repair"})
    flag = "--topics"
    phase = "once"

    @classmethod
    def wanted(cls, request: PlanRequest) -> bool:
        return request.scope.topics is not None or request.scope.exclude_topics is not None

    def accepts(self, i: int, source: int, destination: int) -> bool:
        return i not in self.work.frozen

    def distance(self) -> int:
        work = self.work
        return sum(1 for i in work.frozen if work.replicas[i] != list(work.original[i]))

    def exact_rows(self, program: ExactProgram) -> None:
        parts = program.work.snapshot.partitions
        for i in program.parts:
            if i in self.work.frozen:
                for k, b in enumerate(program.brokers):
                    program.fix(program.x[i][k], float(b in parts[i].replicas))

    @staticmethod
    def targets(view: ReportView) -> tuple[Target, ...]:
        scope = view.request.scope
        if scope.topics is None and scope.exclude_topics is None:
            return ()
        frozen = scope.frozen(view.plan.before)
        before, after = view.plan.before.partitions, view.plan.after.partitions
        changed = sum(1 for i in frozen if before[i].replicas != after[i].replicas)
        missed = (f"out-of-scope partitions changed: {changed} after the plan, target 0: a planner fault"
                  if changed else "")
        return (Target("out-of-scope partitions changed (replicas or their order)", 0, changed, 0, not changed,
                       1, missed),)
