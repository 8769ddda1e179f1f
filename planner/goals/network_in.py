"""Network-in: every broker receives between ``lo`` and ``hi`` bytes/s.

Goals
    When partitions carry ``bytes_in_per_s``, every eligible broker's network-in (the produce
    bytes of the partitions it holds a replica of, leader or follower: :mod:`.traffic`) within
    ``[lo, min(hi, network_in_capacity)]``, ``mean * (1 -+ threshold)`` with the byte band's rule
    (:func:`kafka_replica_assignor.planner.goals.replica_bytes.byte_band`: ``hi`` at least the
    busiest partition; where full rack diversity forces a broker's network-in away from the mean,
    its own band: :func:`.traffic.diverse_bands`), with the fewest bytes moved. Distance: rate outside the band, summed
    over brokers (whole milli-bytes/s).

Constraints
    - Ranks after bytes, as Cruise Control's ``NetworkInboundUsageDistributionGoal`` follows its
      disk usage goal (:mod:`.order` says why): its moves and swaps keep rack diversity, the
      capacities, the topic caps and the count and byte bands no further out; a broker inside
      the band stays in it, one outside goes no further out (:meth:`NetworkInGoal.accepts`).
    - Inert without rates (:func:`.traffic.rated`): the goal is not made, the plan is the plan
      without it.

Algorithm
    While a broker is outside the band, the furthest out pairs with the quietest (busiest)
    brokers of its rack, then of all (:data:`PARTNERS` each): the giver's replicas are tried in
    order of bytes per useful rate (``size / min(rate, need)``: the bytes-moved bound's own
    order, :func:`.traffic.rate_floors`), the first that brings the out-of-band broker closer
    without pushing its partner out is a candidate per partner, and the cheapest candidate
    moves. When no single move fits (the count or byte band at its edge), a swap of a busy
    replica for a quiet one of about the same size. Every transfer lowers the sum of the
    brokers' distances, so the pass ends. Rack diversity is asked first, each replica's racks
    kept until a move changes its broker (``Model.version``), and each side of a swap once per
    search: the same answers as :meth:`Model.fits` and :meth:`Model.swap_fits`. Exact program:
    ``lo <= sum_p in_p * x[p, b] <= min(hi, capacity_b)``. Bound: a broker above the band
    gives, one below it takes, at least the fewest bytes that carry the rate it is out by.

Example
    Brokers 1, 2, 3 receive 150, 90 and 60 B/s (band 90-110 at 10 %): broker 1 gives broker 3
    a replica of about 40 B/s, the one with the fewest bytes among those that carry it.
"""

from __future__ import annotations

import heapq
from typing import Any, ClassVar

import numpy as np

from kafka_replica_assignor.planner.goals.goal import BoundProgram, ExactProgram, ReportView, Target, blame
from kafka_replica_assignor.planner.goals.lost_replicas import settled_replicas
from kafka_replica_assignor.planner.goals.network_capacity import capacities
from kafka_replica_assignor.planner.goals.replica_bytes import byte_band
from kafka_replica_assignor.planner.goals.traffic import (
    TracksTraffic,
    band_texts,
    diverse_bands,
    gap,
    rate_floors,
    rated,
    rates,
    ratio,
    snapshot_figures,
    text,
    within_bands,
)

PARTNERS = 4        # quietest (busiest) brokers of its rack, then of all, paired with one out of band
SCAN = 48           # replicas of the giver tried per partner, cheapest first
SWAP = 8            # replicas of each side tried for a swap


class NetworkInGoal(TracksTraffic):
    """Bring every broker's network-in into its band (module doc)."""

    name = "network-in"
    key = "network_in"
    target = True
    phase = "rounds"
    bound_text: ClassVar[dict[str, str]] = {
        **band_texts("network_in", "network-in"),
        "network_in_band_lo:": "network-in band low end (bytes/s) at threshold {t} of broker {b}, whose share "
                               "full rack diversity sets",
        "network_in_band_hi:": "network-in band high end (bytes/s) at threshold {t} of broker {b}, whose share "
                               "full rack diversity sets (at most the rate it may hold)"}

    def __init__(self, work: Any, request: Any) -> None:
        super().__init__(work, request)
        self.lo, self.hi = 0, 1 << 62
        self.own: dict[int, tuple[int, int]] = {}     # brokers whose band diversity sets (traffic.diverse_bands)
        self.cap = capacities(work)[0]
        self.failed: dict[tuple[int, int], tuple[int, int, int, int]] = {}
        self.cols: tuple[Any, np.ndarray, np.ndarray] | None = None
        self.floors: tuple[np.ndarray, np.ndarray] | None = None
        self.leaves: dict[int, tuple[Any, int, dict[int, frozenset[int]]]] = {}    # x: (model, version[x], i: racks)
        self.held: dict[int, tuple[Any, int, np.ndarray]] = {}      # x: (model, version[x], Model.on(x))

    @classmethod
    def applies(cls, snapshot: Any) -> bool:
        return rated(snapshot)

    def band(self) -> tuple[int, int]:
        """``(lo, hi)`` in milli-bytes/s: the rate on eligible brokers once repaired over them."""
        return self.bands()[0]

    def bands(self) -> tuple[tuple[int, int], dict[int, tuple[int, int]]]:
        """The band of the mean (:meth:`band`), and the brokers whose own band full rack
        diversity sets (:func:`.traffic.diverse_bands`), the band of the most brokers first."""
        rin, _ = rates(self.work)
        weights = settled_replicas(self.work)
        total = sum(r * n for r, n in zip(rin, weights, strict=True))
        largest = max(rin, default=0)
        common = byte_band(total, max(1, len(self.work.eligible)), self.request.fraction, largest)
        own = diverse_bands(self.work, weights, rin, self.request.fraction, largest)
        if own is None:
            return common, {}
        tally: dict[tuple[int, int], int] = {}
        for b in self.work.eligible:
            tally[own[b]] = tally.get(own[b], 0) + 1
        common = max(tally, key=lambda band: (tally[band], -min(b for b in own if own[b] == band)))
        return common, {b: v for b, v in own.items() if v != common}

    def lower(self, b: int) -> int:
        band = self.own.get(b)
        return self.lo if band is None else band[0]

    def upper(self, b: int) -> int:
        band = self.own.get(b)
        hi = self.hi if band is None else band[1]
        limit = self.cap.get(b)
        return hi if limit is None else min(hi, limit)

    def gap(self, b: int, value: int) -> int:
        return gap(value, self.lower(b), self.upper(b))

    def prepare(self) -> None:
        (self.lo, self.hi), self.own = self.bands()

    def record_bounds(self) -> None:
        self.work.bounds["network_in_band_lo"] = self.lo
        self.work.bounds["network_in_band_hi"] = self.hi
        for b, (lo, hi) in sorted(self.own.items()):
            self.work.bounds[f"network_in_band_lo:{b}"] = lo
            self.work.bounds[f"network_in_band_hi:{b}"] = hi

    # -- the faces --------------------------------------------------------------------------
    def accepts(self, i: int, source: int, destination: int) -> bool:
        """No broker inside the band leaves it, none outside goes further out."""
        t = self.t
        r = t.rin[i]
        if not r:
            return True
        s, d = t.net_in[source], t.net_in[destination]
        return self.gap(source, s - r) <= self.gap(source, s) and self.gap(destination, d + r) <= self.gap(destination, d)

    def accepts_swap(self, a: int, x: int, b: int, y: int) -> bool:
        t = self.t
        delta = t.rin[a] - t.rin[b]
        vx, vy = t.net_in[x], t.net_in[y]
        return self.gap(x, vx - delta) <= self.gap(x, vx) and self.gap(y, vy + delta) <= self.gap(y, vy)

    def distance(self) -> int:
        t = self.t
        return sum(self.gap(b, v) for b, v in t.net_in.items())

    def move_rows(self, program: Any) -> None:
        """A broker's network-in ends within the band, or no further out than it is."""
        t = self.t
        scale = max(1, self.hi)
        for broker, coefs in program.per_broker(lambda i: t.rin[i] / scale).items():
            v = t.net_in[broker]
            program.row((min(self.lower(broker), v) - v) / scale, (max(self.upper(broker), v) - v) / scale, coefs)

    def exact_rows(self, program: ExactProgram) -> None:
        (lo, hi), own = self.bands()
        rin, _ = rates(program.work)
        scale = float(max(1, hi))
        cols_of = [i for i in program.parts if rin[i]]
        for k, b in enumerate(program.brokers):
            low, top = own.get(b, (lo, hi))
            limit = self.cap.get(b)
            top = top if limit is None else min(top, limit)
            program.row(low / scale, top / scale, [program.x[i][k] for i in cols_of],
                        [rin[i] / scale for i in cols_of], self.key)

    def bound_rows(self, program: BoundProgram) -> None:
        if self.floors is None:     # the same for every program the bound solves
            (lo, hi), own = self.bands()
            rin, _ = rates(self.work)
            his = {b: own.get(b, (lo, hi))[1] for b in self.work.eligible}
            tops = {b: hi if b not in self.cap else min(hi, self.cap[b]) for b, hi in his.items()}
            self.floors = rate_floors(self.work, rin, {b: own.get(b, (lo, hi))[0] for b in self.work.eligible}
                                      if own else lo, tops)
        program.require_floors(*self.floors)

    def explain(self) -> None:
        t = self.t
        values = {b: (self.lo if b in self.own else v) // 1000 for b, v in t.net_in.items()}
        self.m.note_outside("bytes/s network-in", values, self.lo // 1000, -(-self.hi // 1000))
        for b, (lo, hi) in self.own.items():     # a band full rack diversity sets: its own note
            own = {y: (t.net_in[b] if y == b else lo) // 1000 for y in t.net_in}
            self.m.note_outside("bytes/s network-in", own, lo // 1000, -(-hi // 1000))

    # -- the search -------------------------------------------------------------------------
    def optimize(self) -> int:
        m = self.m
        before = m.moved
        stuck: set[int] = set()
        while m.budget_left():
            t = self.t
            worst = max((b for b in m.work.eligible if b not in stuck and self.gap(b, t.net_in[b]) > 0),
                        key=lambda b: (self.gap(b, t.net_in[b]), -b), default=None)
            if worst is None:
                break
            if self.transfer(worst):
                stuck.clear()
            else:
                stuck.add(worst)
        return m.moved - before

    def partners(self, b: int, heavy: bool) -> list[int]:
        """The :data:`PARTNERS` quietest (busiest when ``b`` is below) brokers of ``b``'s rack,
        then of all."""
        m, t = self.m, self.t
        sign = 1 if heavy else -1

        def key(y: int) -> tuple[int, int]:
            return sign * t.net_in[y], y
        own = [y for y in m.leaf_members[m.leaf[b]] if y != b]
        every = [y for y in m.work.eligible if y != b]
        return list(dict.fromkeys(heapq.nsmallest(PARTNERS, own, key=key) + heapq.nsmallest(PARTNERS, every, key=key)))

    def transfer(self, b: int) -> bool:
        """One move or swap that brings ``b`` closer to the band (module doc); whether one was made."""
        m, t = self.m, self.t
        heavy = t.net_in[b] > self.upper(b)
        best: tuple[float, int, int, int, int | None] | None = None     # (bytes per rate, i, x, y, swap)
        need = max(1, self.gap(b, t.net_in[b]))
        mine = self.cheapest(b, need) if heavy else None
        for y in self.partners(b, heavy):
            x, z = (b, y) if heavy else (y, b)
            state = (t.net_in[x], t.net_in[z], m.counts[x], m.counts[z])
            if self.failed.get((x, z)) == state:
                continue
            most = self.most(b, x, z)
            if most <= 0:
                continue
            found: tuple[float, int, int | None] | None = self.single(
                x, z, most, need, mine if mine is not None else self.cheapest(x, need))
            if found is None:
                found = self.swap(x, z, most, need)
            if found is None:
                self.failed[(x, z)] = state
            elif best is None or found[0] < best[0]:
                best = (found[0], found[1], x, z, found[2])
        if best is None:
            return False
        _, i, x, z, j = best
        m.do_move(i, x, z)
        if j is not None:
            m.do_move(j, z, x)
        return True

    def most(self, b: int, x: int, z: int) -> int:
        """The most rate ``x`` may hand ``z``: neither goes further out of the band, and ``b``
        (one of them) comes strictly closer."""
        t = self.t
        vx, vz = t.net_in[x], t.net_in[z]
        gx, gz = self.gap(x, vx), self.gap(z, vz)
        return min(vx - self.lower(x) + gx - (b == x), self.upper(z) + gz - vz - (b == z))

    def columns(self) -> tuple[np.ndarray, np.ndarray]:
        """Per partition, its rate and its size in bytes (as floats) for the vector searches,
        made once per model."""
        if self.cols is None or self.cols[0] is not self.m:
            rin = np.array(self.t.rin, dtype=np.int64)
            self.cols = (self.m, rin, np.array(self.m.size, dtype=float))
        return self.cols[1], self.cols[2]

    def on(self, x: int) -> np.ndarray:
        """:meth:`Model.on` as an array, kept until a move changes ``x`` (its version)."""
        m = self.m
        seen = self.held.get(x)
        if seen is None or seen[0] is not m or seen[1] != m.version[x]:
            seen = self.held[x] = (m, m.version[x], np.array(m.on(x), dtype=np.intp))
        return seen[2]

    def cheapest(self, x: int, need: int) -> list[int]:
        """``x``'s movable replicas with a rate, fewest bytes per useful rate first (ties: the
        model's order, smallest first)."""
        rin, size = self.columns()
        on = self.on(x)
        rate = rin[on]
        busy = rate > 0
        on, rate = on[busy], rate[busy]
        key = size[on] / np.minimum(rate, need)
        out: list[int] = on[np.argsort(key, kind="stable")[:SCAN]].tolist()
        return out

    def single(self, x: int, z: int, most: int, need: int, order: list[int]) -> tuple[float, int, None] | None:
        m, rin, rank = self.m, self.t.rin, self.rank
        if len(m.checks[rank]) == len(m.unleafed[rank]):     # rack diversity not asked
            for i in order:
                if rin[i] <= most and m.fits(i, x, z, rank):
                    return m.size[i] / min(rin[i], need), i, None
            return None
        # rack diversity asked first, from racks remembered per replica of x until x changes
        # (:meth:`Model.allowed_leaves` reads only the partition's brokers, x among them)
        seen = self.leaves.get(x)
        if seen is None or seen[0] is not m or seen[1] != m.version[x]:
            seen = self.leaves[x] = (m, m.version[x], {})
        racks, leaf = seen[2], m.leaf[z]
        for i in order:
            if rin[i] > most:
                continue
            allowed = racks.get(i)
            if allowed is None:
                allowed = racks[i] = m.allowed_leaves(i, x)
            if leaf in allowed and m.fits(i, x, z, rank, leaf_known=True):
                return m.size[i] / min(rin[i], need), i, None
        return None

    def swap(self, x: int, z: int, most: int, need: int) -> tuple[float, int, int] | None:
        """A busy replica of ``x`` for a quiet one of ``z``."""
        m, rin = self.m, self.t.rin
        if not m.budget_left(extra=1):
            return None
        rates_of, _ = self.columns()
        give = self.on(x)
        give = give[rates_of[give] > 0]
        gives = give[np.argsort(-rates_of[give], kind="stable")[:SWAP]].tolist()
        take = self.on(z)
        takes = take[np.argsort(rates_of[take], kind="stable")[:SWAP]].tolist()
        pairs = []
        for a in gives:
            for c in takes:
                delta = rin[a] - rin[c]
                if 0 < delta <= most:
                    pairs.append(((m.size[a] + m.size[c]) / min(delta, need), m.slot[a], m.slot[c], a, c))
        pairs.sort()
        return self.first_swap(x, z, pairs[:4 * SWAP])

    def first_swap(self, x: int, z: int, pairs: list[tuple[float, int, int, int, int]]) -> tuple[float, int, int] | None:
        """The first of ``pairs`` that :meth:`Model.swap_fits`, each side of a swap asked once."""
        m, rank, budget = self.m, self.rank, self.m.leader_budget
        checks = m.swap_checks[rank]
        sides: dict[tuple[int, int], bool] = {}
        for cost, _, _, a, c in pairs:
            if a == c:
                continue
            ok = sides.get((a, x))
            if ok is None:
                ok = sides[(a, x)] = m.unit_fits(a, x, z, rank)
            if not ok:
                continue
            ok = sides.get((c, z))
            if ok is None:
                ok = sides[(c, z)] = m.unit_fits(c, z, x, rank)
            if not ok:
                continue
            if budget is not None and (m.reps[a][0] == x) + (m.reps[c][0] == z) > budget:
                continue
            if all(check(a, x, c, z) for check in checks):
                return cost, a, c
        return None

    # -- the report -------------------------------------------------------------------------
    @staticmethod
    def targets(view: ReportView) -> tuple[Target, ...]:
        return band_target(view, "network_in", "network-in per alive broker", "network-in", 2)


def band_target(view: ReportView, figure: str, label: str, note: str, section: int) -> tuple[Target, ...]:
    """A network figure's row: ``min-max x mean`` before and after over the alive brokers not
    removed, its band, and whether every such broker is in it after the plan."""
    plan = view.plan
    if not rated(plan.before):
        return ()
    lo, hi = plan.bound(f"{figure}_band_lo"), plan.bound(f"{figure}_band_hi")
    removed = view.request.scope.removed
    alive = [b.id for b in plan.before.brokers if b.alive and b.id not in removed]
    before = list(snapshot_figures(plan.before, alive)[figure].values())
    after = list(snapshot_figures(plan.after, alive)[figure].values())
    reached = within_bands(plan, figure, snapshot_figures(plan.after, alive)[figure])
    band = "-" if lo is None or hi is None else \
        f"{text(lo)}-{text(hi)} bytes/s (band at threshold {view.request.threshold_text})"
    missed = "" if reached else (f"{label}: {text(min(after))}-{text(max(after))} bytes/s after the plan, {band}: "
                                 + blame(view, figure == "network_in", note))
    return (Target(label, ratio(before), ratio(after), band, reached, section, missed),)

