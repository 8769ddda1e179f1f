"""Capacity: no broker holds more bytes than its ``capacity_bytes``.

Goals
    A broker's ``capacity_bytes`` is never exceeded by a move (a hard rule), and a broker above
    it is brought under it. Distance: the bytes above capacity, summed over brokers.

Constraints
    - A hard rule: every goal's moves keep it (:meth:`CapacityGoal.accepts`; a swap by its net
      bytes). Its relief moves keep the other hard rules (rack diversity never reduced, the
      scope) and may break the topic caps and the bands, which rank after it.
    - Disks adding up to less than the bytes are refused before planning ("capacity
      infeasible", exit 2); a broker the plan leaves above its capacity ends the command
      ("capacity not met", exit 1: packing replicas under capacities is NP-hard, and the
      heuristic's search is moves, swaps and two-move chains; the exact path on small clusters
      proves it or finds a plan).

Algorithm
    A broker above its capacity is relieved in the byte exchange
    (:func:`kafka_replica_assignor.planner.goals.search.exchange`, run by the bytes goal), where
    bytes above a capacity count as bytes outside the band: it pairs with the lightest brokers of
    its rack, then of all, and the brokers with the most room left, in a move or swap that lowers
    its excess by at least a quarter of it, asking only the hard rules; when none fits, one of
    its largest replicas goes to a broker without the room after one replica of that broker
    moves to a third with room (a two-move chain, :func:`kafka_replica_assignor.planner.goals.search.make_room`).
    Exact program: ``sum_p size_p * x[p, b] <= capacity_b``. Bound: ``after_b <= capacity_b``.

Example
    Broker 5 (capacity 100 GB) holds 120 GB, broker 6 (capacity 100 GB) holds 60 GB: a replica
    of 20 GB or more (or a swap with that difference) goes from 5 to 6.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from kafka_replica_assignor.planner.goals.goal import (
    BoundProgram,
    ExactProgram,
    Figures,
    Goal,
    ReportView,
    Target,
    blame,
)
from kafka_replica_assignor.planner.request import PlanError, RequestError

if TYPE_CHECKING:
    from kafka_replica_assignor.planner.goals.model import Model
    from kafka_replica_assignor.planner.plan import Working
    from kafka_replica_assignor.planner.request import PlanRequest


class CapacityGoal(Goal):
    """Keep and bring every broker under its ``capacity_bytes`` (module doc)."""

    name = "capacity"
    key = "capacity"
    hard = True
    phase = "rounds"

    def __init__(self, work: Working, request: PlanRequest) -> None:
        super().__init__(work, request)
        self.capacity = capacities(work)

    def bind(self, model: Model, rank: int) -> None:
        super().bind(model, rank)
        model.capacity = self.capacity     # the searches read it (room on a broker)

    def accepts(self, i: int, source: int, destination: int) -> bool:
        limit = self.capacity.get(destination)
        if limit is None:
            return True
        m = self.m
        return m.sizes[destination] + m.size[i] <= limit

    def accepts_swap(self, a: int, x: int, b: int, y: int) -> bool:
        m = self.m
        delta = m.size[a] - m.size[b]
        limit = self.capacity.get(y if delta > 0 else x)
        return limit is None or m.sizes[y if delta > 0 else x] + abs(delta) <= limit

    def prepare(self) -> None:
        """Refuse a cluster whose disks cannot hold its bytes (before any move)."""
        m = self.m
        if self.capacity and len(self.capacity) == len(m.work.eligible):
            room = sum(self.capacity.values())
            total = sum(m.sizes.values())
            if total > room:
                raise RequestError(f"capacity infeasible: the partitions hold {total} bytes, the alive brokers' "
                                   f"capacity_bytes add up to {room}")

    def distance(self) -> int:
        sizes = self.m.sizes
        return sum(max(0, sizes[b] - limit) for b, limit in self.capacity.items())

    def final_check(self) -> None:
        """A broker left above its capacity ends the command: a capacity is a disk."""
        sizes = self.work.byte_counts()
        for b, limit in sorted(self.capacity.items()):
            if sizes[b] > limit:
                stop = ("the move budget is spent" if self.request.max_moves is not None else
                        "only the added brokers take replicas (--add-brokers), and no move onto them fits their "
                        "capacity_bytes" if self.work.takers else
                        "no move, swap or two-move chain found fits the other brokers' capacity_bytes with rack "
                        "diversity kept")
                raise PlanError(f"capacity not met: broker {b} would still hold {sizes[b]} bytes, above its "
                                f"capacity_bytes {limit}: {stop}")

    def move_rows(self, program: Any) -> None:
        """A broker ends within its capacity, or no further above it than it is (bytes over
        the mean)."""
        m = self.m
        scale = max(1, m.mean)
        for broker, coefs in program.per_broker(lambda i: m.size[i] / scale).items():
            limit = self.capacity.get(broker)
            if limit is not None:
                s = m.sizes[broker]
                program.row(-math.inf, (max(limit, s) - s) / scale, coefs)

    def exact_rows(self, program: ExactProgram) -> None:
        sizes = [p.size_bytes or 0 for p in program.work.snapshot.partitions]
        scale = program.scale
        for k, b in enumerate(program.brokers):
            limit = self.capacity.get(b)
            if limit is not None:
                cols = [program.x[i][k] for i in program.parts if sizes[i]]
                program.row(-float("inf"), limit / scale, cols,
                            [sizes[i] / scale for i in program.parts if sizes[i]], "hard")

    def bound_rows(self, program: BoundProgram) -> None:
        program.capacities(self.capacity)

    @staticmethod
    def targets(view: ReportView) -> tuple[Target, ...]:
        def over(fig: Figures) -> int:
            return sum(1 for b in fig.brokers
                       if b.alive and b.capacity_bytes is not None and b.bytes > b.capacity_bytes)
        before, after = over(view.before), over(view.after)
        missed = (f"brokers above capacity_bytes: {after} after the plan, target 0: "
                  + blame(view, True, "capacity")) if after else ""
        return (Target("brokers above capacity_bytes", before, after, 0, not after, 1, missed),)


def capacities(work: Working) -> dict[int, int]:
    """``capacity_bytes`` of the eligible brokers that have one."""
    return {b.id: b.capacity_bytes for b in work.snapshot.brokers
            if b.id in work.eligible_set and b.capacity_bytes is not None}
