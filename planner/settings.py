"""What a plan is asked for, and the one function that turns that request into a plan.

:class:`PlanSettings` is the request (mode, threshold, budgets, batch limits and throttle,
forgotten brokers, source name, echoed in the report); :func:`make_plan` dispatches it to the
balancing rule of its mode. The command line and the Spark pipeline both plan through
:func:`make_plan`, so one snapshot and one set of settings give the same plan everywhere.
"""

from __future__ import annotations

from dataclasses import dataclass

from assignors.snapshot import ClusterSnapshot

from .cluster_balance import cluster_balance
from .leader_balance import leader_balance
from .plan import Plan, Scope
from .repair import repair
from .replica_balance import replica_balance

MODES = ("leader", "replica", "cluster", "repair")
EXACT_SECONDS = 10.0


@dataclass(frozen=True, slots=True)
class PlanSettings:
    """How the plan was asked for (echoed in the report)."""

    mode: str
    threshold: float | int | str = 10
    max_moves: int | None = None
    max_leader_changes: int | None = None
    batch_size: int | None = None
    forgotten: tuple[int, ...] = ()
    source: str = ""
    max_moves_per_broker: int | None = None    # batches: moves a broker takes part in
    max_bytes_per_batch: int | None = None     # batches: bytes copied
    throttle: int | None = None                # bytes/s, as kafka-reassign-partitions.sh --throttle
    exact_seconds: float = EXACT_SECONDS       # the exact program's time on small clusters (0: never)
    scope: Scope = Scope()                     # the topics and brokers replica moves may touch

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, got {self.mode!r}")
        for name in ("max_moves", "max_leader_changes"):
            value = getattr(self, name)
            if value is not None and value < 0:
                raise ValueError(f"{name.replace('_', '-')} must be >= 0, got {value}")
        if self.exact_seconds < 0:
            raise ValueError(f"exact-seconds must be >= 0, got {self.exact_seconds}")
        for name in ("batch_size", "max_moves_per_broker", "max_bytes_per_batch", "throttle"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ValueError(f"{name.replace('_', '-')} must be >= 1, got {value}")


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
        return repair(snapshot, settings.forgotten, max_moves=settings.max_moves, scope=settings.scope)
    return cluster_balance(snapshot, threshold=settings.threshold, max_moves=settings.max_moves,
                           max_leader_changes=settings.max_leader_changes, forgotten=settings.forgotten,
                           exact_seconds=settings.exact_seconds, scope=settings.scope)
