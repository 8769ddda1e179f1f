"""What a plan is asked for: :class:`PlanSettings` (mode, threshold, budgets, batch limits and
throttle, forgotten brokers, source name, echoed in the report). :func:`kafka_replica_assignor.planner.solving.modes.make_plan`
turns it into a plan; a mode without a rule there is refused here, before any rule runs.
"""

from __future__ import annotations

from dataclasses import dataclass

from kafka_replica_assignor.planner.plan import Scope
from kafka_replica_assignor.planner.solving.modes import MODES

__all__ = ["EXACT_SECONDS", "MODES", "PlanSettings"]

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
