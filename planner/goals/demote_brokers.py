"""Demote brokers (``--demote-brokers``): they lead nothing another alive replica can lead.

Goals
    A demoted broker is not the preferred leader (the first replica) of any partition that has
    a replica on an alive broker that is not demoted. Its replicas stay. Distance: the
    partitions a demoted broker still leads although another alive replica could.

Constraints
    - A promise of the request in the modes that order replica lists (leader and cluster; the
      others refuse the option, exit 2): a plan that leaves such a partition led by a demoted
      broker ends the command (exit 1) naming the partitions and why (out of the plan's scope,
      or a replica on a dead broker that leader mode cannot repair). The changes it forces do
      not count against ``--max-leader-changes`` (the request asked for them).
    - A partition whose alive replicas are all demoted keeps a demoted leader.

Algorithm
    The leader goal (:mod:`.leaders`) asks :meth:`DemoteGoal.candidates` for the brokers that
    may lead each partition: without the demoted ones when another alive replica is there. The
    leader flow then balances the others' leaders with the fewest changes; the demoted brokers'
    leaderships are changes it must make.

Example
    ``--demote-brokers 1,5``: ``t3-0 [1, 3]`` becomes ``[3, 1]``; ``t4-0 [1, 5]`` keeps broker 1
    first (both replicas demoted).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from kafka_replica_assignor.planner.goals.goal import Goal, ReportView, Target, ids, names
from kafka_replica_assignor.planner.request import PlanError

if TYPE_CHECKING:
    from kafka_replica_assignor.cluster.snapshot import ClusterSnapshot, PartitionEntry
    from kafka_replica_assignor.planner.request import PlanRequest


class DemoteGoal(Goal):
    """Demoted brokers lead only what nobody else can (module doc)."""

    name = "demote brokers"
    key = "demote"
    hard = True
    modes = frozenset({"leader", "cluster"})
    flag = "--demote-brokers"
    ignored = "it does not order replica lists"
    phase = "leaders"

    @classmethod
    def wanted(cls, request: PlanRequest) -> bool:
        return bool(request.scope.demote_brokers)

    @classmethod
    def check_request(cls, request: PlanRequest, snapshot: ClusterSnapshot) -> None:
        if request.scope.demote_brokers:
            cls.check_brokers(request, snapshot, request.scope.demote_brokers)

    def candidates(self, replicas: Sequence[int]) -> tuple[int, ...]:
        """The replicas that may lead a partition: all, less the demoted ones when an alive,
        eligible replica that is not demoted is among them."""
        demoted, eligible = self.work.demoted, self.work.eligible_set
        if any(b in eligible and b not in demoted for b in replicas):
            return tuple(b for b in replicas if b not in demoted)
        return tuple(replicas)

    def led(self) -> list[int]:
        """Partitions led by a demoted broker although another alive replica could lead."""
        work = self.work
        demoted, eligible = work.demoted, work.eligible_set
        return [i for i in work.order if work.replicas[i] and work.replicas[i][0] in demoted
                and any(b in eligible and b not in demoted for b in work.replicas[i])]

    def distance(self) -> int:
        return len(self.led())

    def final_check(self) -> None:
        left = self.led()
        if not left:
            return
        work = self.work
        if any(i in work.frozen for i in left):
            why = "out of the plan's scope: --topics or --exclude-topics keep their order"
        elif any(not work.eligible_set.issuperset(work.replicas[i]) for i in left):
            why = ("a replica on a dead, unknown or removed broker: Kafka cannot reorder such a list; repair it "
                   "first (--mode cluster)")
        else:
            why = "a planner fault"
        on = sorted({work.replicas[i][0] for i in left})
        raise PlanError(f"{len(left)} partition(s) stay led by demoted broker(s) {ids(on)}: {names(work, left)} "
                        f"({why})")

    @staticmethod
    def targets(view: ReportView) -> tuple[Target, ...]:
        demoted = set(view.request.scope.demote_brokers)
        if not demoted:
            return ()
        alive = {b.id for b in view.plan.before.brokers if b.alive} - view.request.scope.removed

        def led(parts: Sequence[PartitionEntry]) -> int:
            return sum(1 for p in parts if p.replicas and p.replicas[0] in demoted
                       and any(b in alive and b not in demoted for b in p.replicas))
        before, after = led(view.plan.before.partitions), led(view.plan.after.partitions)
        missed = (f"partitions led by a demoted broker with another alive replica: {after}, target 0"
                  if after else "")
        return (Target("partitions led by a demoted broker that another alive replica could lead", before, after,
                       0, not after, 1, missed),)
