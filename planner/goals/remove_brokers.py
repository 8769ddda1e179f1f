"""Remove brokers (``--remove-brokers``, and ``--forget``): every replica leaves them.

Goals
    The brokers named end the plan holding no replica; they take none. Distance: the replicas
    still on them.

Constraints
    - A promise of the request, not a target: a plan that leaves a replica on a removed broker
      ends the command (exit 1) naming the partitions and what holds them there (out of the
      plan's scope, fewer brokers left than replicas, the move budget, only added brokers may
      take and none can), and nothing is written.
    - The request names brokers of the cluster and leaves at least one alive broker; leader
      mode moves no replica, so it refuses the option (exit 2).

Algorithm
    Nothing of its own: a removed broker is not eligible (:class:`kafka_replica_assignor.planner.plan.Working`), so its
    replicas are repaired like those of a dead broker (:mod:`.lost_replicas`), the exact program
    has no column for it, and the bound counts its bytes as bytes to repair. After the plan,
    :meth:`RemoveGoal.final_check` looks at the final lists.

Example
    ``--remove-brokers 4`` with ``t-0 [4, 1, 2]``: broker 4's replica goes to another broker ->
    ``t-0 [3, 1, 2]``. With ``--topics 'u.*'`` too, ``t-0`` is out of scope and stays: exit 1,
    "1 partition(s) stay on removed broker(s) 4: t-0 (out of the plan's scope: --topics or
    --exclude-topics)".
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafka_replica_assignor.planner.goals.goal import Goal, ids, names
from kafka_replica_assignor.planner.request import PlanError, RequestError

if TYPE_CHECKING:
    from kafka_replica_assignor.cluster.snapshot import ClusterSnapshot
    from kafka_replica_assignor.planner.request import PlanRequest


class RemoveGoal(Goal):
    """Nothing stays on a removed broker (module doc)."""

    name = "remove brokers"
    key = "remove"
    hard = True
    modes = frozenset({"replica", "cluster", "repair"})
    flag = "--remove-brokers"
    phase = "lists"

    @classmethod
    def wanted(cls, request: PlanRequest) -> bool:
        return bool(request.scope.remove_brokers)

    @classmethod
    def check_request(cls, request: PlanRequest, snapshot: ClusterSnapshot) -> None:
        removed = request.scope.remove_brokers
        if not removed:
            return
        known = {b.id for b in snapshot.brokers} | {r for p in snapshot.partitions for r in p.replicas if r >= 0}
        cls.check_brokers(request, snapshot, removed, known=known)
        if not any(b.alive and b.id not in removed for b in snapshot.brokers):
            raise RequestError(f"{cls.flag} names every alive broker: nothing would be left to hold the replicas")

    def distance(self) -> int:
        removed = self.work.removed
        return sum(1 for reps in self.work.replicas for b in reps if b in removed)

    def final_check(self) -> None:
        work = self.work
        removed = work.removed
        left = [i for i in work.order if removed.intersection(work.replicas[i])]
        if not left:
            return
        on = sorted({b for i in left for b in work.replicas[i] if b in removed})
        raise PlanError(f"{len(left)} partition(s) stay on removed broker(s) {ids(on)}: {names(work, left)} "
                        f"({self.why(left)})")

    def why(self, left: list[int]) -> str:
        """What holds the first partitions ``left`` on the removed brokers."""
        work, request = self.work, self.request
        parts = work.snapshot.partitions
        takers = [b for b in work.eligible if b not in work.excluded and (not work.takers or b in work.takers)]
        if any(i in work.frozen for i in left):
            return "out of the plan's scope: --topics or --exclude-topics keep them"
        if any(len(parts[i].replicas) > len(takers) for i in left):
            who = "added brokers" if work.takers else "brokers that may take a replica"
            return (f"fewer {who} ({len(takers)}) than the replicas of a partition "
                    f"({max(len(parts[i].replicas) for i in left)})")
        if request.max_moves is not None:
            return f"the move budget is spent (--max-moves {request.max_moves})"
        if work.takers:
            return "no added broker can take them (each already holds the partition, or has no room)"
        return "no broker with room takes them (capacity_bytes) while rack diversity is kept"
