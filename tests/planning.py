"""How the tests ask for a plan: one :class:`PlanRequest` built from keywords, through the one
entry point (:func:`kafka_replica_assignor.planner.solving.planning.make_plan`).

``plan_of(snapshot, "replica", threshold=5, remove=(4,), exact=True)``. The exact path is off
unless ``exact`` is given (most tests check the heuristic's own plan; the exact path has its
own tests), and then it runs with the request's default work limit.
"""

from __future__ import annotations

from collections.abc import Iterable

from kafka_replica_assignor.cluster.snapshot import ClusterSnapshot
from kafka_replica_assignor.planner.plan import Plan
from kafka_replica_assignor.planner.request import EXACT_NODES, PlanRequest, Scope
from kafka_replica_assignor.planner.solving.planning import make_plan


def request_of(mode: str, *, threshold: float | int | str | None = None, max_moves: int | None = None,
               max_leader_changes: int | None = None, remove: Iterable[int] = (), scope: Scope | None = None,
               exact: bool | int = False, **extra: object) -> PlanRequest:
    """The request of the keywords: ``remove`` joins ``scope.remove_brokers``; ``exact`` True
    (the default node limit) or a node limit; ``extra``: other :class:`PlanRequest` fields."""
    scope = scope or Scope()
    if remove:
        scope = Scope(scope.topics, scope.exclude_topics, scope.exclude_brokers, scope.add_brokers,
                      (*scope.remove_brokers, *remove), scope.demote_brokers)
    nodes = (EXACT_NODES if exact is True else int(exact)) if exact else 0
    return PlanRequest(mode=mode, threshold=threshold, max_moves=max_moves, max_leader_changes=max_leader_changes,
                       scope=scope, exact_nodes=nodes, **extra)  # type: ignore[arg-type]


def plan_of(snapshot: ClusterSnapshot, mode: str, **options: object) -> Plan:
    """The plan of ``snapshot`` for the request of :func:`request_of`."""
    return make_plan(snapshot, request_of(mode, **options))  # type: ignore[arg-type]
