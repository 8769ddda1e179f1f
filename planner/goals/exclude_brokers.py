"""Exclude brokers (``--exclude-brokers``): they neither give nor take replicas.

Goals
    An excluded broker keeps exactly the replicas it holds: none leaves it, none arrives.
    Distance: replicas that left or reached an excluded broker.

Constraints
    - A hard rule of the request: no goal's move breaks it, on any path. An excluded broker
      still counts in every figure and band (it holds what it holds).
    - Brokers of the cluster only, alive ones (a dead broker's replicas are repaired anyway);
      leader mode moves no replica, so it refuses the option (exit 2).

Algorithm
    Heuristic: the model never offers an excluded broker's replicas, and :meth:`ExcludeGoal.accepts`
    refuses a move to one; repair places nothing there. Exact program: an excluded broker's
    columns are fixed at what it holds. Bound: it gives and takes no bytes.

Example
    ``--exclude-brokers 3`` with broker 3 far above the band: broker 3 stays as it is; the
    others balance among themselves, and the report says which band broker 3 leaves.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafka_replica_assignor.planner.goals.goal import BoundProgram, ExactProgram, Goal

if TYPE_CHECKING:
    from kafka_replica_assignor.cluster.snapshot import ClusterSnapshot
    from kafka_replica_assignor.planner.request import PlanRequest


class ExcludeGoal(Goal):
    """Excluded brokers keep their replicas (module doc)."""

    name = "exclude brokers"
    key = "exclude"
    hard = True
    modes = frozenset({"replica", "cluster", "repair"})
    flag = "--exclude-brokers"
    phase = "once"

    @classmethod
    def wanted(cls, request: PlanRequest) -> bool:
        return bool(request.scope.exclude_brokers)

    @classmethod
    def check_request(cls, request: PlanRequest, snapshot: ClusterSnapshot) -> None:
        if request.scope.exclude_brokers:
            cls.check_brokers(request, snapshot, request.scope.exclude_brokers,
                              alive="a dead broker's replicas are repaired; leave it out")

    def accepts(self, i: int, source: int, destination: int) -> bool:
        excluded = self.work.excluded
        return source not in excluded and destination not in excluded

    def distance(self) -> int:
        work = self.work
        excluded = work.excluded
        return sum(len(excluded.intersection(set(work.replicas[i]) ^ set(work.original[i]))) for i in work.touched)

    def exact_rows(self, program: ExactProgram) -> None:
        parts = program.work.snapshot.partitions
        for k, b in enumerate(program.brokers):
            if b in self.work.excluded:
                for i in program.parts:
                    program.fix(program.x[i][k], float(b in parts[i].replicas))

    def bound_rows(self, program: BoundProgram) -> None:
        program.shut(self.work.excluded)
