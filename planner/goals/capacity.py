"""Capacity: no broker holds more bytes than its ``capacity_bytes``.

Goals
    A broker's ``capacity_bytes`` is never exceeded by a move (a hard rule), and a broker above
    it is brought under it.

Constraints
    - Ranks after repair and rack diversity (a broker above its disk sheds replicas only where
      diversity is kept), before topic spread, counts and bytes: to bring a broker under its
      disk, a transfer may take any replica its partner's capacity allows, topic caps and the
      count and byte bands aside.
    - Disks adding up to less than the bytes raise ``ValueError`` ("capacity infeasible"), and
      so does a broker left above its capacity ("capacity not met": packing replicas under
      capacities is NP-hard; the search is moves, swaps and two-move chains).

Algorithm
    Every move of every goal checks the receiver's room (:meth:`CapacityGoal.accepts`, inside
    :meth:`kafka_replica_assignor.planner.goals.model.Model.fits`). A broker above its capacity is relieved in the byte
    exchange (:func:`kafka_replica_assignor.planner.goals.search.exchange`, run by the bytes goal), where bytes above a
    capacity count as bytes outside the band: it pairs with the lightest brokers of its rack,
    then of all, and the brokers with the most room left, in a move or swap that lowers its
    excess by at least a quarter of it, with this goal's rank (topic caps and the count and
    byte bands aside); when none fits, one of its largest replicas goes to a broker without the
    room after one replica of that broker moves to a third with room (a two-move chain,
    :func:`kafka_replica_assignor.planner.goals.search.make_room`). A pass of its own before topic spread was tried and
    measured on the 40 comparable clusters of ``bench/exact_optimum.py``: mean bytes over the
    optimum 1.207 -> 1.212 and more leader replicas moved (633 -> 643), so the relief stays
    where the byte transfers are.

Example
    Broker 5 (capacity 100 GB) holds 120 GB, broker 6 (capacity 100 GB) holds 60 GB: a replica
    of 20 GB or more (or a swap with that difference) goes from 5 to 6.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafka_replica_assignor.planner.goals.goal import ModelGoal, ReportView, Target, blame

if TYPE_CHECKING:
    from kafka_replica_assignor.planner.report.figures import Figures


class CapacityGoal(ModelGoal):
    """Keep and bring every broker under its ``capacity_bytes`` (module doc)."""

    name = "capacity"

    def accepts(self, i: int, source: int, destination: int) -> bool:
        m = self.model
        limit = m.capacity.get(destination)
        return limit is None or m.sizes[destination] + m.size[i] <= limit

    def check_total(self) -> None:
        """Refuse a cluster whose disks cannot hold its bytes (before any move)."""
        m = self.model
        if m.capacity and len(m.capacity) == len(m.work.eligible):
            room = sum(m.capacity.values())
            total = sum(m.sizes.values())
            if total > room:
                raise ValueError(f"capacity infeasible: the partitions hold {total} bytes, the "
                                 f"alive brokers' capacity_bytes add up to {room}")

    def optimize(self) -> int:
        """Nothing of its own: the byte exchange of :class:`~kafka_replica_assignor.planner.goals.replica_bytes.ReplicaBytesGoal`
        relieves brokers above their capacity, with the capacity's rank (module doc)."""
        return 0

    def explain(self) -> None:
        m = self.model
        for b, limit in sorted(m.capacity.items()):
            if m.sizes[b] > limit:
                left = m.budget is not None and not m.budget_left()
                stop = ("the move budget is spent" if left else "no move, swap or two-move chain "
                        "found fits the other brokers' capacity_bytes with rack diversity kept")
                raise ValueError(f"capacity not met: broker {b} would still hold {m.sizes[b]} "
                                 f"bytes, above its capacity_bytes {limit}: {stop}")

    @staticmethod
    def targets(view: ReportView) -> tuple[Target, ...]:
        def over(fig: Figures) -> int:
            return sum(1 for b in fig.brokers
                       if b.alive and b.capacity_bytes is not None and b.bytes > b.capacity_bytes)
        before, after = over(view.before), over(view.after)
        missed = (f"brokers above capacity_bytes: {after} after the plan, target 0: "
                  + blame(view, True, "capacity")) if after else ""
        return (Target("brokers above capacity_bytes", before, after, 0, not after, 1, missed),)
