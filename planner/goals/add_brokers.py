"""Add brokers (``--add-brokers``): replicas move only onto the brokers added.

Goals
    The brokers named are the only ones a replica arrives on, repairs included: nothing is
    reshuffled among the others. Distance: replicas that arrived on a broker that was not added.

Constraints
    - A hard rule of the request, on every path. A replica that returns to a broker of its
      partition's input list is no arrival (the fewer-moves goal puts moved replicas back).
    - Alive brokers of the cluster only; leader mode moves no replica, so it refuses the
      option (exit 2).
    - A repair that no added broker can take (each already holds the partition) is left, with a
      note (:mod:`.lost_replicas`).

Algorithm
    Heuristic: :meth:`AddGoal.accepts` refuses any other destination; repairs place on added
    brokers only. Exact program: a column of a broker that was not added is at most what it
    holds (it may only give). Bound: brokers that were not added take no bytes.

Example
    Nine brokers, ``--add-brokers 6,7,8`` (empty): each of 0-5 gives replicas to 6, 7 and 8
    until the bands hold; no replica moves between 0-5.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafka_replica_assignor.planner.goals.goal import BoundProgram, ExactProgram, Goal, ReportView, Target
from kafka_replica_assignor.planner.plan import Working

if TYPE_CHECKING:
    from kafka_replica_assignor.cluster.snapshot import ClusterSnapshot
    from kafka_replica_assignor.planner.request import PlanRequest


class AddGoal(Goal):
    """Replicas arrive on the added brokers only (module doc)."""

    name = "add brokers"
    key = "add"
    hard = True
    modes = frozenset({"replica", "cluster", "repair"})
    flag = "--add-brokers"
    phase = "once"

    @classmethod
    def wanted(cls, request: PlanRequest) -> bool:
        return bool(request.scope.add_brokers)

    @classmethod
    def check_request(cls, request: PlanRequest, snapshot: ClusterSnapshot) -> None:
        if request.scope.add_brokers:
            cls.check_brokers(request, snapshot, request.scope.add_brokers, alive="an added broker takes replicas")

    def accepts(self, i: int, source: int, destination: int) -> bool:
        return destination in self.work.takers or destination in self.work.original[i]

    def distance(self) -> int:
        return arrivals_elsewhere(self.work)

    def exact_rows(self, program: ExactProgram) -> None:
        parts = program.work.snapshot.partitions
        for k, b in enumerate(program.brokers):
            if b not in self.work.takers:
                for i in program.parts:
                    if b not in parts[i].replicas:
                        program.cap_upper(program.x[i][k], 0.0)

    def bound_rows(self, program: BoundProgram) -> None:
        program.closed([b for b in program.brokers if b not in self.work.takers])

    @staticmethod
    def targets(view: ReportView) -> tuple[Target, ...]:
        added = set(view.request.scope.add_brokers)
        if not added:
            return ()
        before = {(p.topic, p.partition): set(p.replicas) for p in view.plan.before.partitions}
        after = sum(1 for p in view.plan.after.partitions for b in p.replicas
                    if b not in added and b not in before[(p.topic, p.partition)])
        missed = (f"replicas moved to brokers not added: {after} after the plan, target 0: a planner fault"
                  if after else "")
        return (Target("replicas moved to brokers not added (--add-brokers)", 0, after, 0, not after, 1, missed),)


def arrivals_elsewhere(work: Working) -> int:
    """Replicas of the working lists that arrived on a broker not added (0 without added brokers)."""
    if not work.takers:
        return 0
    return sum(1 for i in work.touched for b in work.replicas[i]
               if b not in work.takers and b not in work.original[i])
