"""Replica counts: every broker holds between ``lo`` and ``hi`` replicas.

Goals
    Every eligible broker's replica count within ``[lo, hi]`` (:func:`band`: ``avg * (1 -+
    threshold)``, widened to ``[floor(avg), ceil(avg)]`` where that holds no whole number), with
    the fewest replica moves: ``sum(max(0, count - target))`` for the water-filled targets.
    Distance: replicas outside the band, summed over brokers.

Constraints
    - Ranks after the hard rules, rack diversity and topic spread: its moves keep them all
      (:meth:`kafka_replica_assignor.planner.goals.model.Model.fits`). Bytes rank after it: a byte transfer keeps a
      broker inside the count band, and one outside it no further out (:meth:`ReplicaCountGoal.accepts`).
    - Followers move before leaders (a leader replica moved is a leader change).

Algorithm
    Targets: every count clamped into ``[lo, hi]``, the difference with the total spread by
    water filling. Each broker above its target gives followers first, then replicas of the
    topics it holds most of (more than one above the topic's average, then above it), each time
    the one nearest its wanted size, to the broker below target holding the fewest of that topic
    among the first few emptiest that stay in the byte band (a smaller replica when the taker
    could not fill its count in its :meth:`~kafka_replica_assignor.planner.goals.model.Model.room` and the giver falls
    into the byte band without the larger one). Brokers still outside the band then
    level with any broker at least two replicas away. Lower bounds (before repair):
    ``repairs + sum(max(0, count - hi))`` and ``sum(max(0, lo - count))``. Exact program:
    ``lo <= sum_p x[p, b] <= hi``. Bound: a broker above ``hi`` gives at least its ``count - hi``
    smallest replicas, one below ``lo`` takes at least the ``lo - count`` smallest partitions.

Example
    Brokers 1..6 hold 4, 3, 2, 3, 0, 0 replicas (12, band [2, 2]): 1 gives two followers, 2 and
    4 one each, to 5 and 6: 4 moves, the bound.
"""

from __future__ import annotations

import math
from bisect import bisect_left, insort
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
from kafka_replica_assignor.planner.goals.search import TAKER, receiver


def band(total: int, brokers: int, threshold: Fraction) -> tuple[int, int]:
    """``(lo, hi)``: the replica counts a broker may hold without taking or giving."""
    avg = Fraction(total, brokers)
    hi = max(math.ceil(avg), math.floor(avg * (1 + threshold)))
    lo = min(math.floor(avg), math.ceil(avg * (1 - threshold)))
    return max(lo, 0), hi


class ReplicaCountGoal(Goal):
    """Bring every broker's replica count into the band (module doc)."""

    name = "replica counts"
    key = "counts"
    target = True
    phase = "rounds"
    bound_text: ClassVar[dict[str, str]] = {
        "replica_moves_lower_bound": "replica moves lower bound at threshold {t}: repairs + sum(max(0, count - hi))",
        "replica_moves_tight_bound": "replica moves lower bound at threshold {t}: max(that, sum(max(0, lo - count)))",
        "replicas_band_lo": "replica band low end (lo) at threshold {t}",
        "replicas_band_hi": "replica band high end (hi) at threshold {t}"}

    def band(self) -> tuple[int, int]:
        """``(lo, hi)`` of this cluster: the replicas on eligible brokers once repaired
        (:func:`~kafka_replica_assignor.planner.goals.lost_replicas.settled`) over the eligible brokers."""
        return band(settled(self.work)[0], len(self.work.eligible), self.request.fraction)

    def accepts(self, i: int, source: int, destination: int) -> bool:
        """No broker inside the band leaves it, none outside goes further out."""
        m = self.m
        return m.counts[source] > m.lo and m.counts[destination] < m.hi

    def accepts_swap(self, a: int, x: int, b: int, y: int) -> bool:
        return True     # counts stay

    def distance(self) -> int:
        lo, hi = self.m.lo, self.m.hi
        return sum(max(0, c - hi, lo - c) for c in self.m.counts.values())

    def move_rows(self, program: Any) -> None:
        """A broker ends within the band, or no further out than it is."""
        m = self.m
        for broker, coefs in program.per_broker(lambda i: 1).items():
            c = m.counts[broker]
            program.row(min(m.lo, c) - c, max(m.hi, c) - c, coefs)

    def exact_rows(self, program: ExactProgram) -> None:
        lo, hi = self.band()
        for k in range(len(program.brokers)):
            cols = [program.x[i][k] for i in program.parts]
            program.row(lo, hi, cols, [1.0] * len(cols), self.key)

    def bound_rows(self, program: BoundProgram) -> None:
        p: Any = program
        p.require_counts(*self.band())

    def prepare(self) -> None:
        """The band and the count targets on the model."""
        m = self.m
        m.lo, m.hi = self.band()
        m.set_targets()

    def record_bounds(self) -> None:
        """Lower bounds of the plan, from the counts before repair."""
        m = self.m
        work, lo, hi = m.work, m.lo, m.hi
        repairs = work.bounds.get("repairs_needed", 0)
        pre_over = sum(max(0, c - hi) for c in m.pre.values())
        pre_under = sum(max(0, lo - c) for c in m.pre.values())
        work.bounds["replica_moves_lower_bound"] = repairs + pre_over
        work.bounds["replica_moves_tight_bound"] = max(repairs + pre_over, pre_under)
        work.bounds["replicas_band_lo"] = lo
        work.bounds["replicas_band_hi"] = hi

    def optimize(self) -> int:
        m = self.m
        before = m.moved
        m.set_targets()
        self.balance_counts()
        return m.moved - before

    def explain(self) -> None:
        m = self.m
        m.note_outside("replicas", m.counts, m.lo, m.hi)

    @staticmethod
    def targets(view: ReportView) -> tuple[Target, ...]:
        plan, before, after = view.plan, view.before, view.after
        lo, hi = plan.bound("replicas_band_lo"), plan.bound("replicas_band_hi")
        band = f"band at threshold {view.request.threshold_text}"
        reached, missed = band_missed(view, "replicas", "replicas per alive broker", lo, hi, "replicas, outside")
        rows = [Target("replicas per alive broker", spread(before), spread(after),
                       f"{lo}-{hi} ({band})" if lo is not None else "-", reached, 2, missed)]
        if after.wider_than_alive:
            rs = after.replicas_spread
            alive = sum(b.alive for b in after.brokers)
            rows.append(Target(
                "ideal replicas per alive broker", "", f"{rs.min}-{rs.max}", f"{rs.floor}-{rs.ceil}", False, 0,
                f"the ideal replicas per alive broker ({rs.floor}-{rs.ceil}) is unreachable: "
                f"{after.wider_than_alive} partition(s) have more replicas than the {alive} alive "
                f"broker(s), and a broker holds one replica of a partition at most"))
        return tuple(rows)

    def topic_class(self, t: int, x: int) -> int:
        """How much giving a replica of ``t`` evens the topic: 0 when ``x`` holds more than one
        above the topic's average, 1 above it, 2 otherwise."""
        m = self.m
        gain = m.n(t, m.chain[x][-1]) * m.members[0] - m.topic_total[t]
        return 0 if gain > m.members[0] else 1 if gain > 0 else 2

    def balance_counts(self) -> None:
        m = self.m
        need = sum(max(0, m.targets[b] - c) for b, c in m.counts.items())
        donors = sorted((b for b in m.work.eligible if m.counts[b] > m.targets[b]),
                        key=lambda b: (m.targets[b] - m.counts[b], b))
        for x in donors:
            if need <= 0 or not m.budget_left():
                break
            need -= self.give(x)
        self.level_counts()

    def give(self, x: int) -> int:
        """Broker ``x`` gives replicas until it reaches its target: followers first, then the
        topics it holds most of (:meth:`topic_class`), then the replica nearest :meth:`want`,
        each to the taker of :meth:`receiver`. Returns the replicas given."""
        m = self.m
        buckets: list[list[int]] = [[] for _ in range(6)]
        per_topic: dict[int, list[int]] = {}
        cls: dict[int, int] = {}
        for key in m.held[x]:
            i = m.partition(key)
            t = m.topic[i]
            if t not in cls:
                cls[t] = self.topic_class(t, x)
            per_topic.setdefault(t, []).append(key)
            buckets[3 * (m.reps[i][0] == x) + cls[t]].append(key)   # stays sorted
        given = 0
        while m.counts[x] > m.targets[x] and m.budget_left():
            bucket = next((b for b in buckets if b), None)
            if bucket is None:
                break
            key = bucket.pop(m.nearest(bucket, m.want(x)))
            i = m.partition(key)
            if not m.leader_ok(i, x):
                continue
            y = receiver(m, i, x, m.allowed_leaves(i, x), mode=TAKER, upto=self.rank)
            if y is None:
                continue            # tried once, like every other replica of x
            room = m.room(y)
            # y could not fill its count within its room: a smaller replica instead, unless x
            # stays above the byte band after giving this one (those bytes must leave x anyway)
            # and y's disk is not what limits it
            if m.size[i] > room and bucket and (m.sizes[x] - m.size[i] < m.upper(x) or m.upper(y) < m.bhi):
                k = m.nearest(bucket, room)
                j = m.partition(bucket[k])
                if m.size[j] < m.size[i] and m.leader_ok(j, x) and m.fits(j, x, y, self.rank):
                    insort(bucket, key)
                    del bucket[bisect_left(bucket, m.slot[j])]
                    i = j
            m.do_move(i, x, y)
            given += 1
            t = m.topic[i]
            new = self.topic_class(t, x)
            if new != cls[t]:
                for other in per_topic[t]:
                    j = m.partition(other)
                    if j == i or x not in m.reps[j]:
                        continue
                    lead = 3 * (m.reps[j][0] == x)
                    old_bucket = buckets[lead + cls[t]]
                    k = bisect_left(old_bucket, other)
                    if k < len(old_bucket) and old_bucket[k] == other:
                        del old_bucket[k]
                        insort(buckets[lead + new], other)
                cls[t] = new
        return given

    def candidates(self, donor: int) -> list[int]:
        """The partitions on ``donor`` in giving order for the leveling fallback: followers
        first, the replica whose removal most evens its topic first, the smallest first."""
        m = self.m
        per_topic: dict[int, list[int]] = {}
        for i in m.on(donor):
            per_topic.setdefault(m.topic[i], []).append(i)
        keyed = []
        brokers = m.members[0]
        node = m.chain[donor][-1]
        for t, items in per_topic.items():
            items.sort(key=lambda i: (m.reps[i][0] == donor, m.slot[i]))
            have = m.n(t, node)
            for j, i in enumerate(items):
                gain = (have - j) * brokers - m.topic_total[t]   # evenness won by giving it
                keyed.append((m.reps[i][0] == donor, gain <= 0, -gain, m.slot[i], i))
        keyed.sort()
        return [k[-1] for k in keyed]

    def level_counts(self) -> None:
        """Brokers still outside ``[lo, hi]`` trade with any broker at least two replicas away
        (each move lowers the sum of squared counts)."""
        m = self.m
        progress = True
        while progress and m.budget_left():
            progress = False
            eligible = m.work.eligible
            for x in sorted((b for b in eligible if m.counts[b] > m.hi),
                            key=lambda b: (-m.counts[b], b)):
                low = sorted(eligible, key=lambda y: (m.counts[y], m.sizes[y], y))
                for i in self.candidates(x):
                    if m.counts[x] <= m.hi or not m.budget_left():
                        break
                    if x not in m.reps[i]:
                        continue
                    y = next((y for y in low if m.counts[y] + 2 <= m.counts[x]
                              and m.fits(i, x, y, self.rank)), None)
                    if y is not None:
                        m.do_move(i, x, y)
                        progress = True
            for y in sorted((b for b in eligible if m.counts[b] < m.lo),
                            key=lambda b: (m.counts[b], b)):
                high = sorted(eligible, key=lambda x: (-m.counts[x], -m.sizes[x], x))
                for x in high:
                    if m.counts[x] < m.counts[y] + 2 or m.counts[y] >= m.lo:
                        break
                    for i in self.candidates(x):
                        if m.counts[x] < m.counts[y] + 2 or not m.budget_left():
                            break
                        if x in m.reps[i] and m.fits(i, x, y, self.rank):
                            m.do_move(i, x, y)
                            progress = True



def spread(fig: Figures) -> str:
    """A figure's replicas per alive broker as ``min-max``."""
    s = fig.replicas_spread
    return f"{s.min}-{s.max}"
