"""Replica bytes: every broker holds between ``blo`` and ``bhi`` bytes.

Goals
    When partitions carry ``size_bytes``, every eligible broker's bytes within ``[blo, min(bhi,
    capacity)]`` (:func:`byte_band`: ``mean * (1 -+ threshold)``, widened only where that band
    is provably out of reach), with the fewest bytes moved. Distance: bytes outside the band,
    summed over brokers.

Constraints
    - Ranks after every other target: its moves and swaps keep rack diversity, capacity, the
      topic caps and the count band (a swap leaves counts as they are); a broker inside the
      band stays in it, one outside goes no further out (:meth:`ReplicaBytesGoal.accepts`).
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
    Exact program: ``blo <= sum_p size_p * x[p, b] <= min(bhi, capacity_b)``. Bound: the same
    on each broker's bytes after the plan.

Example
    Three brokers of 40, 30 and 20 GB (band 27-33 GB at 10 %): broker 1 gives broker 3 a
    replica of about 10 GB (or swaps a large one for a smaller one when counts are at the band's
    edge).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from fractions import Fraction
from typing import Any, ClassVar

from kafka_replica_assignor.planner.goals.goal import (
    BoundProgram,
    ExactProgram,
    Figures,
    Goal,
    ReportView,
    Target,
    band_missed,
)
from kafka_replica_assignor.planner.goals.lost_replicas import settled
from kafka_replica_assignor.planner.goals.search import exchange
from kafka_replica_assignor.planner.plan import MoveKind


def byte_band(total: int, brokers: int, threshold: Fraction, largest: int) -> tuple[int, int]:
    """``(blo, bhi)``: the bytes a broker may hold, ``mean * (1 -+ threshold)``, widened only
    where that band is provably out of reach: ``bhi`` is at least ``largest`` (the broker
    holding the largest partition holds that much), and a band holding no whole number of
    bytes (threshold 0, a fractional mean) is ``[floor(mean), ceil(mean)]``."""
    mean = Fraction(total, brokers)
    lo, hi = math.ceil(mean * (1 - threshold)), math.floor(mean * (1 + threshold))
    if lo > hi:
        lo, hi = math.floor(mean), math.ceil(mean)
    return max(0, lo), max(hi, largest)


BOUND_KEY = "bytes_moved_lp_bound"
"""The plan's LP bound key (:mod:`kafka_replica_assignor.planner.solving.bound`); the targets it
kept follow it, ``bytes_moved_lp_bound:diversity,topics``."""
BAND_BOUND = "bytes_moved_lower_bound"


def bounds_that_hold(bounds: Mapping[str, int]) -> dict[str, int]:
    """The bytes-moved lower bounds among a plan's ``bounds`` (``bytes_moved_*``) that bound it:
    every one, but the byte band's own (:data:`BAND_BOUND`) when the LP bound did not keep the
    band (the band is then out of reach with the targets before it: no plan is within it, and
    the band's figure bounds nothing). The report's figure and the fewer-moves goal's stop
    both read these."""
    kept = [key.partition(":")[2].split(",") for key in bounds if key.partition(":")[0] == BOUND_KEY]
    out_of_reach = bool(kept) and ReplicaBytesGoal.key not in kept[0]
    return {key: value for key, value in bounds.items()
            if key.startswith("bytes_moved_") and not (out_of_reach and key == BAND_BOUND)}


class ReplicaBytesGoal(Goal):
    """Bring every broker's bytes into the byte band (module doc)."""

    name = "replica bytes"
    key = "bytes"
    target = True
    phase = "rounds"
    bound_text: ClassVar[dict[str, str]] = {
        "bytes_band_lo": "byte band low end at threshold {t}: ceil(mean * (1 - threshold)) (floor(mean) when the band "
                         "holds no whole number)",
        "bytes_band_hi": "byte band high end at threshold {t}: max(floor(mean * (1 + threshold)), largest partition) "
                         "(ceil(mean) when the band holds no whole number)",
        "bytes_moved_lower_bound": "bytes moved lower bound at threshold {t}: max(bytes repaired + bytes above "
                                   "the band or capacity, bytes missing below the band)"}

    def sized(self) -> bool:
        return any(p.size_bytes is not None for p in self.work.snapshot.partitions)

    def band(self) -> tuple[int, int]:
        """``(blo, bhi)`` of this cluster: the bytes on eligible brokers once repaired over the
        eligible brokers."""
        largest = max((p.size_bytes or 0 for p in self.work.snapshot.partitions), default=0)
        return byte_band(settled(self.work)[1], len(self.work.eligible), self.request.fraction, largest)

    def gap(self, b: int, value: int) -> int:
        """Bytes ``value`` on broker ``b`` lie outside its band (above its capacity counts as above)."""
        m = self.m
        return max(0, value - m.upper(b), m.blo - value)

    def accepts(self, i: int, source: int, destination: int) -> bool:
        """No broker inside the byte band leaves it, none outside goes further out."""
        m = self.m
        w = m.size[i]
        if not w:
            return True
        s, d = m.sizes[source], m.sizes[destination]
        return self.gap(source, s - w) <= self.gap(source, s) and self.gap(destination, d + w) <= self.gap(destination, d)

    def accepts_swap(self, a: int, x: int, b: int, y: int) -> bool:
        m = self.m
        delta = m.size[a] - m.size[b]
        sx, sy = m.sizes[x], m.sizes[y]
        return self.gap(x, sx - delta) <= self.gap(x, sx) and self.gap(y, sy + delta) <= self.gap(y, sy)

    def distance(self) -> int:
        m = self.m
        if not m.sized:
            return 0
        return sum(self.gap(b, s) for b, s in m.sizes.items())

    def move_rows(self, program: Any) -> None:
        """A broker's bytes end within the band, or no further out than they are (bytes over
        the mean)."""
        m = self.m
        scale = max(1, m.mean)
        for broker, coefs in program.per_broker(lambda i: m.size[i] / scale).items():
            s = m.sizes[broker]
            program.row((min(m.blo, s) - s) / scale, (max(m.upper(broker), s) - s) / scale, coefs)

    def exact_rows(self, program: ExactProgram) -> None:
        if not self.sized():
            return
        blo, bhi = self.band()
        sizes = [p.size_bytes or 0 for p in program.work.snapshot.partitions]
        scale = program.scale
        capacity = {b.id: b.capacity_bytes for b in program.work.snapshot.brokers if b.capacity_bytes is not None}
        for k, b in enumerate(program.brokers):
            limit = capacity.get(b)
            top = bhi if limit is None else min(bhi, limit)
            cols = [program.x[i][k] for i in program.parts if sizes[i]]
            program.row(blo / scale, top / scale, cols, [sizes[i] / scale for i in program.parts if sizes[i]], self.key)

    def bound_rows(self, program: BoundProgram) -> None:
        p: Any = program
        p.byte_band(*self.band())

    def prepare(self) -> None:
        m = self.m
        work = m.work
        m.blo, m.bhi = self.band()
        total = settled(work)[1]
        m.mean = total // len(work.eligible)
        # what receivers fill up to: the band's bottom when the bytes missing below the band
        # are at least those above it (any byte a broker takes beyond the bottom is then a
        # byte the bound does not ask for), else the mean (the surplus must land somewhere)
        below = sum(max(0, m.blo - s) for s in m.sizes.values())
        above = sum(max(0, s - m.upper(b)) for b, s in m.sizes.items())
        m.fill = m.blo if below >= above else m.mean

    def record_bounds(self) -> None:
        m = self.m
        work = m.work
        if not m.sized:
            return
        repaired = sum(m.size[i] for i, _, _, kind in work.moves if kind is MoveKind.REPAIR)
        leave = sum(max(0, s - m.upper(b)) for b, s in m.pre_bytes.items())
        reach = sum(max(0, m.blo - s) for s in m.pre_bytes.values())
        work.bounds["bytes_band_lo"] = m.blo
        work.bounds["bytes_band_hi"] = m.bhi
        work.bounds[BAND_BOUND] = max(repaired + leave, reach)

    def optimize(self) -> int:
        m = self.m
        before = m.moved
        exchange(m, self.worst, self.rank)
        return m.moved - before

    def explain(self) -> None:
        m = self.m
        if m.sized:
            m.note_outside("bytes", m.sizes, m.blo, m.bhi)

    def worst(self, stuck: set[int]) -> int | None:
        """The broker furthest outside the byte band, not ``stuck``."""
        m = self.m
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
        band = f"band at threshold {view.request.threshold_text}"
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
