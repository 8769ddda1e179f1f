"""Leaders: even preferred leaders with the fewest leader changes.

Goals
    Every eligible broker is the preferred leader of between ``floor(P/B)`` and ``ceil(P/B)``
    partitions, with the fewest partitions whose preferred leader changes; only the order of
    replica lists changes (:mod:`kafka_replica_assignor.planner.goals.leader_flow`, a min-cost flow on the broker graph).

Constraints
    - Ranks last: it moves no data, so every replica goal's figure stays as it is; the replica
      goals help it by moving followers before leaders.
    - Out-of-scope partitions keep their order (:mod:`kafka_replica_assignor.planner.goals.scope`); demoted brokers lead
      only what no other alive replica can lead (:mod:`kafka_replica_assignor.planner.goals.demote_brokers`, asked for
      each partition's candidates); ``max_leader_changes`` caps the changes.
    - No rows in the exact program or the bound: the flow is exact for the replica lists it is
      given (the exact program's objective moves followers before leaders,
      :mod:`kafka_replica_assignor.planner.goals.fewer_moves`). Distance: leaders outside the band, summed.

Algorithm
    :func:`kafka_replica_assignor.planner.goals.leader_flow.balance_leaders` on the working replica lists, priced against
    the leaders of the request's input (in cluster mode, those before the replica moves).

Example
    Brokers 1, 2, 3; ``a [1,2] b [1,3] c [1,2] d [2,3] e [1,3] f [3,1]``: broker 1 leads 4 (band
    [2, 2]); ``a`` goes to 2 and ``b`` to 3: 2 changes, the optimum.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from kafka_replica_assignor.cluster.snapshot import ClusterSnapshot
from kafka_replica_assignor.planner.goals.demote_brokers import DemoteGoal
from kafka_replica_assignor.planner.goals.goal import Figures, Goal, ReportView, Target, blame, eligible_values
from kafka_replica_assignor.planner.goals.leader_flow import balance_leaders
from kafka_replica_assignor.planner.plan import Working

if TYPE_CHECKING:
    from kafka_replica_assignor.planner.plan import Plan
    from kafka_replica_assignor.planner.request import PlanRequest


class LeaderGoal(Goal):
    """Even the preferred leaders (module doc)."""

    name = "leaders"
    key = "leaders"
    modes = frozenset({"leader", "cluster"})
    phase = "leaders"
    bound_text: ClassVar[dict[str, str]] = {
        "leader_changes_lower_bound": "leader changes lower bound for the plan's own replica lists (ideal band): "
                                      "max(sum(max(0, leaders - ceil)), sum(max(0, floor - leaders))); other "
                                      "replica lists may need fewer",
        "leader_changes_optimum": "leader changes, proven minimum for the plan's own replica lists",
        "leaders_floor": "leader band floor(P/B) (ideal; P the partitions the leader rule counts, B the alive "
                         "brokers not removed; the threshold applies to replicas and bytes)",
        "leaders_ceil": "leader band ceil(P/B) (ideal; P the partitions the leader rule counts, B the alive "
                        "brokers not removed; the threshold applies to replicas and bytes)"}

    def __init__(self, work: Working, request: PlanRequest) -> None:
        super().__init__(work, request)
        self.baseline: ClusterSnapshot | None = None
        """The snapshot whose leaders count as unchanged (the request's input; by default the
        working copy's own)."""

    def optimize(self) -> int:
        before = len(self.work.moves)
        demote = self.peers.get("demote")
        balance_leaders(self.work, max_leader_changes=self.request.max_leader_changes, baseline=self.baseline,
                        candidates=demote.candidates if isinstance(demote, DemoteGoal) else None)
        return len(self.work.moves) - before

    def distance(self) -> int:
        """Leaders outside ``[floor, ceil]`` of the partitions with an alive leader over the
        eligible brokers, summed (the flow's own band when it ran)."""
        work = self.work
        counts = dict.fromkeys(work.eligible, 0)
        led = 0
        for reps in work.replicas:
            if reps and reps[0] in counts:
                counts[reps[0]] += 1
                led += 1
        n = len(counts) or 1
        floor = work.bounds.get("leaders_floor", led // n)
        ceil = work.bounds.get("leaders_ceil", -(-led // n))
        return sum(max(0, c - ceil, floor - c) for c in counts.values())

    @staticmethod
    def band(plan: Plan, after: Figures) -> tuple[int, int]:
        """The ideal leader band: the leader rule's (its partitions and brokers) when it ran, else
        ``floor``-``ceil`` of the partitions with an alive replica over the alive brokers."""
        floor, ceil = plan.bound("leaders_floor"), plan.bound("leaders_ceil")
        s = after.leaders_spread
        return (s.floor if floor is None else floor), (s.ceil if ceil is None else ceil)

    @staticmethod
    def targets(view: ReportView) -> tuple[Target, ...]:
        low, high = LeaderGoal.band(view.plan, view.after)
        values = eligible_values(view, "leaders")
        reached = view.request.mode not in ("leader", "cluster") or not values or \
            low <= min(values) and max(values) <= high
        missed = "" if reached else (f"preferred leaders per alive broker: {min(values)}-{max(values)} after the "
                                     f"plan, ideal band {low}-{high}: " + blame(view, False, "leader"))
        b, a = view.before.leaders_spread, view.after.leaders_spread
        return (Target("preferred leaders per alive broker", f"{b.min}-{b.max}", f"{a.min}-{a.max}",
                       f"{low}-{high} (ideal)", reached, 3, missed),)
