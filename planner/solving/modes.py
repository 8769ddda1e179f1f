"""The planner's modes, and the one function that turns a request into a plan.

:data:`RULES` maps each mode to the balancing rule that plans it, in the order the command
line lists them (:data:`MODES`); a new mode is a rule module and one row here. :func:`make_plan`
dispatches :class:`~kafka_replica_assignor.planner.settings.PlanSettings` to the rule of its mode, then (when the input
names log directories) places replicas in the directories of their brokers
(:mod:`kafka_replica_assignor.planner.solving.disks`). The command line
and the Spark pipeline both plan through :func:`make_plan`, so one snapshot and one set of
settings give the same plan everywhere.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from kafka_replica_assignor.cluster.snapshot import ClusterSnapshot
from kafka_replica_assignor.planner.goals.leader_flow import leader_balance
from kafka_replica_assignor.planner.plan import Plan
from kafka_replica_assignor.planner.solving.cluster_balance import cluster_balance
from kafka_replica_assignor.planner.solving.disks import balance_disks
from kafka_replica_assignor.planner.solving.repair_rule import repair
from kafka_replica_assignor.planner.solving.replica_balance import replica_balance

if TYPE_CHECKING:  # for the annotations only: settings checks its mode against MODES
    from kafka_replica_assignor.planner.settings import PlanSettings


def _leader(snapshot: ClusterSnapshot, settings: PlanSettings) -> Plan:
    return leader_balance(snapshot, max_leader_changes=settings.max_leader_changes,
                          forgotten=settings.forgotten, scope=settings.scope)


def _replica(snapshot: ClusterSnapshot, settings: PlanSettings) -> Plan:
    return replica_balance(snapshot, threshold=settings.threshold, max_moves=settings.max_moves,
                           forgotten=settings.forgotten, exact_seconds=settings.exact_seconds,
                           scope=settings.scope)


def _cluster(snapshot: ClusterSnapshot, settings: PlanSettings) -> Plan:
    return cluster_balance(snapshot, threshold=settings.threshold, max_moves=settings.max_moves,
                           max_leader_changes=settings.max_leader_changes, forgotten=settings.forgotten,
                           exact_seconds=settings.exact_seconds, scope=settings.scope)


def _repair(snapshot: ClusterSnapshot, settings: PlanSettings) -> Plan:
    return repair(snapshot, settings.forgotten, max_moves=settings.max_moves, scope=settings.scope)


RULES: dict[str, Callable[[ClusterSnapshot, PlanSettings], Plan]] = {
    "leader": _leader,
    "replica": _replica,
    "cluster": _cluster,
    "repair": _repair,
}
MODES = tuple(RULES)


def make_plan(snapshot: ClusterSnapshot, settings: PlanSettings) -> Plan:
    """The plan a mode asks for: the one entry point of the command line and the pipeline
    (``settings`` has a mode of :data:`MODES`: :class:`~kafka_replica_assignor.planner.settings.PlanSettings` checks it)."""
    plan = RULES[settings.mode](snapshot, settings)
    if settings.mode == "leader":  # no data moves, so no directory changes either
        return plan
    return balance_disks(plan, threshold=settings.threshold, scope=settings.scope,
                         intra=settings.mode != "repair")
