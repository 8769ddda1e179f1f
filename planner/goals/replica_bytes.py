"""Replica bytes: every broker holds between ``blo`` and ``bhi`` bytes.

Goals
    When partitions carry ``size_bytes``, every eligible broker's bytes within ``[blo, bhi]`` =
    ``mean * (1 -+ threshold)``, widened only where that band is provably out of reach
    (:func:`kafka_replica_assignor.planner.bands.byte_band`), with the fewest bytes moved.

Constraints
    - Ranks after every other replica goal: its moves and swaps keep rack diversity, capacity,
      the topic caps and the count band (a swap leaves counts as they are).
    - Unsized partitions weigh no bytes; without any size the goal has nothing to do.
    - At equal bytes a follower moves, not a leader (:func:`kafka_replica_assignor.planner.goals.search.transfer`).

Algorithm
    While a broker is outside the byte band, the furthest out and the lightest (heaviest)
    brokers of its rack, then of all, kept in size-sorted lists, exchange bytes
    (:func:`kafka_replica_assignor.planner.goals.search.exchange`): a move when counts allow, or a swap of a large
    replica for a smaller one whose difference is closest to what evens the pair (at least the
    out-of-band broker's distance to the band, as far as the partner stays in it), found by
    binary search in size-sorted replica lists. Each transfer lowers the sum of squared bytes
    by at least a quarter of what it aims at, so the pass ends in few transfers. Bytes above a
    broker's capacity count as outside the band: the same exchange relieves full disks, with the
    capacity goal's rank (:mod:`kafka_replica_assignor.planner.goals.capacity`). Lower bound:
    ``max(bytes repaired + bytes above the band or capacity, bytes missing below the band)``.

Example
    Three brokers of 40, 30 and 20 GB (band 27-33 GB at 10 %): broker 1 gives broker 3 a
    replica of about 10 GB (or swaps a large one for a smaller one when counts are at the band's
    edge).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafka_replica_assignor.planner.goals.goal import ModelGoal, ReportView, Target, band_missed
from kafka_replica_assignor.planner.goals.search import exchange
from kafka_replica_assignor.planner.plan import MoveKind

if TYPE_CHECKING:
    from kafka_replica_assignor.planner.report.figures import Figures


class ReplicaBytesGoal(ModelGoal):
    """Bring every broker's bytes into the byte band (module doc)."""

    name = "replica bytes"

    def accepts(self, i: int, source: int, destination: int) -> bool:
        """No broker inside the byte band leaves it."""
        m = self.model
        w = m.size[i]
        inside = m.blo <= m.sizes[source] <= m.upper(source)
        taken = m.blo <= m.sizes[destination] <= m.upper(destination)
        return (not inside or m.sizes[source] - w >= m.blo) and \
            (not taken or m.sizes[destination] + w <= m.upper(destination))

    def record_bounds(self) -> None:
        m = self.model
        if not m.sized:
            return
        work = m.work
        repaired = sum(m.size[i] for i, _, _, kind in work.moves if kind is MoveKind.REPAIR)
        leave = sum(max(0, s - m.upper(b)) for b, s in m.pre_bytes.items())
        reach = sum(max(0, m.blo - s) for s in m.pre_bytes.values())
        work.bounds["bytes_band_lo"] = m.blo
        work.bounds["bytes_band_hi"] = m.bhi
        work.bounds["bytes_moved_lower_bound"] = max(repaired + leave, reach)
        from kafka_replica_assignor.planner.solving.bound import (
            byte_lower_bound,  # numpy and highspy: the planner extra, loaded when planning
        )

        lp = byte_lower_bound(work.snapshot, work.eligible, m.tree, m.threshold, m.capacity,
                              frozen=work.frozen, excluded=work.excluded, takers=work.takers)
        if lp is not None:
            work.bounds["bytes_moved_lp_bound" + "".join(f"_{k}" for k in lp.kept)] = lp.bytes

    def optimize(self) -> int:
        m = self.model
        before = m.moved
        exchange(m, self.worst)
        return m.moved - before

    def explain(self) -> None:
        m = self.model
        if m.sized:
            m.note_outside("bytes", m.sizes, m.blo, m.bhi)

    def worst(self, stuck: set[int]) -> int | None:
        """The broker furthest outside the byte band, not ``stuck``."""
        m = self.model
        if m.capacity:
            outside = [b for b in m.work.eligible if b not in stuck and m.off_band(b) > 0]
            return max(outside, key=lambda b: (m.off_band(b), -b), default=None)
        best: tuple[int, int] | None = None
        for ends in (reversed(m.by_bytes), iter(m.by_bytes)):   # the heaviest, the lightest
            for _, b in ends:
                gap = m.off_band(b)
                if gap <= 0:
                    break
                if b not in stuck:
                    if best is None or (gap, -b) > best:
                        best = (gap, -b)
                    break
        return None if best is None else -best[1]

    @staticmethod
    def targets(view: ReportView) -> tuple[Target, ...]:
        plan = view.plan
        blo, bhi = plan.bound("bytes_band_lo"), plan.bound("bytes_band_hi")
        band = f"band at threshold {view.settings.threshold}%"
        reached, missed = band_missed(view, "bytes", "bytes per alive broker", blo, bhi, "bytes, outside")
        return (Target("bytes per alive broker", ratio(view.before), ratio(view.after),
                       f"{blo}-{bhi} bytes ({band})" if blo is not None else "-", reached, 2, missed),)


def ratio(fig: Figures) -> str:
    """Bytes per alive broker as ``min-max x mean``."""
    alive = [b.bytes for b in fig.brokers if b.alive]
    mean = sum(alive) / len(alive) if alive else 0
    if not mean:
        return "-"
    return f"{min(alive) / mean:.2f}-{max(alive) / mean:.2f} x mean"
