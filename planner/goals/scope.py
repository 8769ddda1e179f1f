"""Scope: what the operator lets a plan touch (``--topics``, ``--exclude-topics``,
``--exclude-brokers``, ``--add-brokers``, ``--demote-brokers``).

Goals
    Partitions out of scope (:meth:`kafka_replica_assignor.planner.plan.Scope.frozen`) keep their replica lists exactly:
    no replica move, no repair, and no reordering (no preferred-leader change), in every mode;
    excluded brokers neither give nor take replicas; with ``--add-brokers`` only the added
    brokers take replicas (repairs aside); demoted brokers lead only what no other alive replica
    can lead (:mod:`kafka_replica_assignor.planner.goals.leaders`).

Constraints
    - A hard rule of the first rank: no goal's move breaks it (:meth:`ScopeGoal.accepts`), and
      the report checks it after the plan (``out-of-scope partitions changed``, target 0).
    - Out-of-scope partitions still count in every figure and band.

Algorithm
    None of its own: the model never offers a frozen partition or an excluded broker's replica
    (:class:`kafka_replica_assignor.planner.goals.model.Model` leaves them out of its per-broker lists), repair skips
    them (:func:`kafka_replica_assignor.planner.solving.repair_rule.repair_working`), the leader goal gives a frozen partition its
    current leader as its only candidate.

Example
    ``--topics 'orders.*'``: ``payments-0 [1, 2]`` stays ``[1, 2]`` in replica, cluster, leader
    and repair mode, even when broker 1 leads more than its share.
"""

from __future__ import annotations

from kafka_replica_assignor.planner.goals.goal import ModelGoal, ReportView, Target


class ScopeGoal(ModelGoal):
    """The operator's scope as a hard rule (module doc)."""

    name = "scope"

    def optimize(self) -> int:
        return 0

    def accepts(self, i: int, source: int, destination: int) -> bool:
        work = self.model.work
        return i not in work.frozen and source not in work.excluded and self.model.may_take(destination)

    def explain(self) -> None:
        """Nothing is left: the rule holds by construction."""

    @staticmethod
    def targets(view: ReportView) -> tuple[Target, ...]:
        scope = view.settings.scope
        if scope.topics is None and scope.exclude_topics is None:
            return ()
        frozen = scope.frozen(view.plan.before)
        before, after = view.plan.before.partitions, view.plan.after.partitions
        changed = sum(1 for i in frozen if before[i].replicas != after[i].replicas)
        missed = (f"out-of-scope partitions changed: {changed} after the plan, target 0: a planner fault"
                  if changed else "")
        return (Target("out-of-scope partitions changed (replicas or their order)", 0, changed, 0, not changed,
                       1, missed),)
