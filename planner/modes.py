"""The planner's modes, and the one function that turns a request into a plan.

:func:`make_plan` dispatches :class:`~planner.settings.PlanSettings` to the balancing rule of
its mode (:data:`~planner.settings.MODES`). The command line and the Spark pipeline both plan
through :func:`make_plan`, so one snapshot and one set of settings give the same plan everywhere.
"""

from __future__ import annotations

from cluster.snapshot import ClusterSnapshot

from .cluster_balance import cluster_balance
from .leader_balance import leader_balance
from .plan import Plan
from .repair_rule import repair
from .replica_balance import replica_balance
from .settings import PlanSettings


def make_plan(snapshot: ClusterSnapshot, settings: PlanSettings) -> Plan:
    """The plan a mode asks for: the one entry point of the command line and the pipeline."""
    if settings.mode == "leader":
        return leader_balance(snapshot, max_leader_changes=settings.max_leader_changes,
                              forgotten=settings.forgotten, scope=settings.scope)
    if settings.mode == "replica":
        return replica_balance(snapshot, threshold=settings.threshold, max_moves=settings.max_moves,
                               forgotten=settings.forgotten, exact_seconds=settings.exact_seconds,
                               scope=settings.scope)
    if settings.mode == "repair":
        return repair(snapshot, settings.forgotten, max_moves=settings.max_moves)
    return cluster_balance(snapshot, threshold=settings.threshold, max_moves=settings.max_moves,
                           max_leader_changes=settings.max_leader_changes, forgotten=settings.forgotten,
                           exact_seconds=settings.exact_seconds, scope=settings.scope)
