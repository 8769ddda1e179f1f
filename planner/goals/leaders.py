"""Leaders: even preferred leaders with the fewest leader changes.

Goals
    Every eligible broker is the preferred leader of between ``floor(P/B)`` and ``ceil(P/B)``
    partitions, with the fewest partitions whose preferred leader changes; only the order of
    replica lists changes (:mod:`kafka_replica_assignor.planner.goals.leader_flow`, a min-cost flow on the broker graph).

Constraints
    - Ranks last: it moves no data, so every replica goal's figure stays as it is; the replica
      goals help it by moving followers before leaders.
    - Out-of-scope partitions keep their order (:mod:`kafka_replica_assignor.planner.goals.scope`); demoted brokers lead
      only what no other alive replica can lead; ``max_leader_changes`` caps the changes.

Algorithm
    :func:`kafka_replica_assignor.planner.goals.leader_flow.balance_leaders` on the working replica lists, priced against
    the leaders before the replica moves (cluster mode).

Example
    Brokers 1, 2, 3; ``a [1,2] b [1,3] c [1,2] d [2,3] e [1,3] f [3,1]``: broker 1 leads 4 (band
    [2, 2]); ``a`` goes to 2 and ``b`` to 3: 2 changes, the optimum.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafka_replica_assignor.cluster.snapshot import ClusterSnapshot
from kafka_replica_assignor.planner.goals.goal import Goal, ReportView, Target, blame, eligible_values
from kafka_replica_assignor.planner.goals.leader_flow import balance_leaders
from kafka_replica_assignor.planner.plan import Working

if TYPE_CHECKING:
    from kafka_replica_assignor.planner.plan import Plan
    from kafka_replica_assignor.planner.report.figures import Figures


class LeaderGoal(Goal):
    """Even the preferred leaders (module doc)."""

    name = "leaders"

    def __init__(self, work: Working, max_leader_changes: int | None, baseline: ClusterSnapshot | None) -> None:
        self.work = work
        self.max_leader_changes = max_leader_changes
        self.baseline = baseline

    def optimize(self) -> int:
        before = len(self.work.moves)
        balance_leaders(self.work, max_leader_changes=self.max_leader_changes, baseline=self.baseline)
        return len(self.work.moves) - before

    def accepts(self, i: int, source: int, destination: int) -> bool:
        """Ranks last: no later goal asks."""
        return True

    def explain(self) -> None:
        """:func:`kafka_replica_assignor.planner.goals.leader_flow.balance_leaders` notes what it leaves."""

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
        reached = view.settings.mode not in ("leader", "cluster") or not values or \
            low <= min(values) and max(values) <= high
        missed = "" if reached else (f"preferred leaders per alive broker: {min(values)}-{max(values)} after the "
                                     f"plan, ideal band {low}-{high}: " + blame(view, False, "leader"))
        b, a = view.before.leaders_spread, view.after.leaders_spread
        return (Target("preferred leaders per alive broker", f"{b.min}-{b.max}", f"{a.min}-{a.max}",
                       f"{low}-{high} (ideal)", reached, 3, missed),)
