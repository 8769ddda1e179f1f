"""Leadership changes for a traffic figure: the search the network-out and leader bytes-in goals share.

Goals
    Bring every eligible broker's figure (the sum of a per-partition weight over the partitions
    it leads) into a band by changing preferred leaders only: a leadership change moves no
    data, so it is the cheap move for a figure of leaders (:mod:`.network_out`,
    :mod:`.leader_bytes_in`).

Constraints
    - A partition's leader stays one of its replicas, among the demote goal's candidates
      (:mod:`.demote_brokers`); partitions out of scope, or naming a broker that is not
      eligible, keep their order; a partition of one replica has no choice.
    - Every change keeps what the goals before the asking one reached (``earlier``: their
      ``keeps``, read from figures every pass's changes keep current: :meth:`LeaderState.track`),
      each broker's preferred-leader count no further out of the leader goal's band
      (``leaders_floor``-``leaders_ceil``, recorded by :mod:`.leader_flow`), and network-out
      within ``network_out_capacity`` (the hard rule of :mod:`.network_capacity`); a broker
      above that capacity is brought under it first, counts aside.
    - Limits are work: at most two changes per partition that can change.

Algorithm
    Per ordered pair of brokers ``(x, y)`` the partitions ``x`` leads that ``y`` may lead,
    sorted by weight. While a broker is outside its band (the furthest first, not stuck), it
    trades with every broker it shares partitions with: a single change of the weight nearest
    what evens the pair (binary search), or a swap of two partitions between the pair (one led
    by each) whose difference is nearest it; the change that brings the two closest to the band
    is made. Each change lowers the sum of the brokers' distances, so the pass ends. Indexes:
    each broker's partners (the pairs it gives to and takes from) are kept as the pairs are
    made, and a pair's best change is kept until one of its two brokers changes (it reads only
    their figures, counts and leaderships), so a step searches again only the pairs of the two
    brokers it changed.

Example
    Broker 1 leads ``a`` (60 B/s out) and ``b`` (20), broker 2 leads ``c`` (10), both hold
    replicas of all three; band 40-50: a single change is refused (counts), the swap ``a`` to 2,
    ``c`` to 1 leaves 1 with 30 and 2 with 60; the swap ``b`` to 2, ``c`` to 1 leaves 70 and 20;
    ``a`` for ``c`` brings both closest and is made.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, ClassVar

from kafka_replica_assignor.planner.goals.demote_brokers import DemoteGoal
from kafka_replica_assignor.planner.goals.goal import Goal, ReportView, Target
from kafka_replica_assignor.planner.goals.lost_replicas import settled_replicas
from kafka_replica_assignor.planner.goals.network_capacity import capacities
from kafka_replica_assignor.planner.goals.network_in import band_target
from kafka_replica_assignor.planner.goals.replica_bytes import byte_band
from kafka_replica_assignor.planner.goals.traffic import gap, per_broker, rated, rates
from kafka_replica_assignor.planner.plan import MoveKind

if TYPE_CHECKING:
    from kafka_replica_assignor.cluster.snapshot import ClusterSnapshot
    from kafka_replica_assignor.planner.plan import Working
    from kafka_replica_assignor.planner.request import PlanRequest

NEAR = 2            # weights tried on each side of a binary search
SWAPS = 8           # partitions of the busier side tried for a swap, heaviest first

Found = tuple[tuple[int, int], int, int, int, int | None]
"""A change found: ``(rank, p, x, y, q)``, ``p`` going from ``x`` to ``y`` (and ``q`` back)."""

Keeps = Callable[[int, int, int, int], bool]
"""``keeps(x, y, out_moved, weight_moved)``: a goal before accepts ``x`` handing ``y`` leaderships worth these."""


class LeaderState:
    """The preferred leaders of a working copy, with network-out and leader counts per eligible
    broker, kept up to date by :meth:`change` (one per working copy, shared by the goals)."""

    def __init__(self, work: Working, candidates: Callable[[Sequence[int]], tuple[int, ...]] | None) -> None:
        self.work = work
        self.rin, self.rout = rates(work)
        eligible = work.eligible_set
        self.cand: dict[int, tuple[int, ...]] = {}
        for i in work.order:
            reps = work.replicas[i]
            if len(reps) < 2 or i in work.frozen or not eligible.issuperset(reps):
                continue
            cand = tuple(candidates(reps) if candidates is not None else reps)
            if len(cand) > 1 and reps[0] in cand:
                self.cand[i] = cand
        self.net_out = per_broker(work.replicas, self.rout, work.eligible, leaders=True)
        self.counts = per_broker(work.replicas, [1] * len(work.replicas), work.eligible, leaders=True)
        self.cap_out = capacities(work)[1]
        self.changes = 0
        self.count_band: tuple[int, int] | None = None
        self.figures: list[tuple[Sequence[int], dict[int, int]]] = []

    @classmethod
    def of(cls, work: Working, candidates: Callable[[Sequence[int]], tuple[int, ...]] | None) -> LeaderState:
        hit = work.memo.get("leader_state")
        if isinstance(hit, LeaderState):
            return hit
        state = cls(work, candidates)
        work.memo["leader_state"] = state
        return state

    def leader(self, i: int) -> int:
        return self.work.replicas[i][0]

    def counts_keep(self, x: int, y: int, moved: int) -> bool:
        """``x`` giving ``y`` ``moved`` leaderships keeps the leader band no further out."""
        if not moved:
            return True
        if self.count_band is None:     # the leader flow's band; changes keep the total
            bounds = self.work.bounds
            n = max(1, len(self.work.eligible))
            total = sum(self.counts.values())
            self.count_band = (bounds.get("leaders_floor", total // n), bounds.get("leaders_ceil", -(-total // n)))
        floor, ceil = self.count_band
        cx, cy = self.counts[x], self.counts[y]
        return gap(cx - moved, floor, ceil) <= gap(cx, floor, ceil) and gap(cy + moved, floor, ceil) <= gap(cy, floor, ceil)

    def out_fits(self, y: int, gain: int) -> bool:
        """``y`` gaining ``gain`` network-out stays within its ``network_out_capacity``."""
        limit = self.cap_out.get(y)
        return limit is None or gain <= 0 or self.net_out[y] + gain <= limit

    def track(self, weight: Sequence[int]) -> dict[int, int]:
        """Per eligible broker, the ``weight`` of the partitions it leads, kept up to date by
        every later :meth:`change` whichever pass makes it (a goal's ``keeps`` reads its figure
        after the goals after it changed leaders)."""
        value = per_broker(self.work.replicas, weight, self.work.eligible, leaders=True)
        self.figures.append((weight, value))
        return value

    def change(self, i: int, y: int) -> None:
        """``y`` leads partition ``i`` (first in its list, the others in their order)."""
        reps = self.work.replicas[i]
        x = reps[0]
        reps.remove(y)
        reps.insert(0, y)
        self.net_out[x] -= self.rout[i]
        self.net_out[y] += self.rout[i]
        for weight, value in self.figures:
            value[x] -= weight[i]
            value[y] += weight[i]
        self.counts[x] -= 1
        self.counts[y] += 1
        self.work.record(i, x, y, MoveKind.LEADER)
        self.changes += 1


class LeadershipPass:
    """The search of the module doc for one goal's figure: ``weight`` per partition, ``low`` and
    ``high`` its band (``high`` per broker: the band's top or a capacity), ``earlier`` the
    checks of the goals before it."""

    def __init__(self, state: LeaderState, weight: Sequence[int], low: int, high: Callable[[int], int],
                 earlier: Sequence[Keeps], capacity_first: bool) -> None:
        self.s = state
        self.weight = weight
        self.low = low
        self.high = high
        self.earlier = earlier
        self.capacity_first = capacity_first
        self.value = state.track(weight)
        self.top = {b: high(b) for b in self.value}
        self.pairs: dict[tuple[int, int], list[tuple[int, int]]] = {}
        self.gives_to: dict[int, set[int]] = {b: set() for b in self.value}
        self.takes_from: dict[int, set[int]] = {b: set() for b in self.value}
        self.version = dict.fromkeys(self.value, 0)
        self.cache: dict[tuple[int, int], tuple[int, int, Found | None]] = {}
        for i in state.cand:
            if weight[i]:
                self.index(i, add=True)

    def index(self, i: int, *, add: bool) -> None:
        x = self.s.leader(i)
        for y in self.s.cand[i]:
            if y != x:
                entries = self.pairs.get((x, y))
                if entries is None:
                    entries = self.pairs[(x, y)] = []
                    self.gives_to[x].add(y)
                    self.takes_from[y].add(x)
                if add:
                    insort(entries, (self.weight[i], i))
                else:
                    del entries[bisect_left(entries, (self.weight[i], i))]

    def gap(self, b: int, value: int) -> int:
        return gap(value, self.low, self.top[b])

    def distance(self) -> int:
        return sum(self.gap(b, v) for b, v in self.value.items())

    def change(self, i: int, y: int) -> None:
        x = self.s.leader(i)
        if self.weight[i]:
            self.index(i, add=False)
        self.s.change(i, y)     # self.value with it (LeaderState.track)
        self.version[x] += 1
        self.version[y] += 1
        if self.weight[i]:
            self.index(i, add=True)

    def run(self) -> int:
        """Changes until no broker outside its band finds one; the number made."""
        made = 0
        stuck: set[int] = set()
        limit = 2 * len(self.s.cand)
        while made < limit:
            low, top = self.low, self.top
            worst, far = None, 0
            for b, v in self.value.items():
                d = max(0, v - top[b], low - v)
                if d and b not in stuck and (d > far or d == far and worst is not None and b < worst):
                    worst, far = b, d
            if worst is None:
                break
            best = self.best(worst)
            if best is None:
                stuck.add(worst)
                continue
            _, p, x, y, q = best
            self.change(p, y)
            made += 1
            if q is not None:
                self.change(q, x)
                made += 1
            stuck.clear()
        return made

    def allowed(self, x: int, y: int, moved: int, out_moved: int, weight_moved: int, b: int) -> bool:
        """``x`` handing ``y`` these: the hard capacity, the leader band (not when relieving a
        capacity), the goals before, and ``b``'s figure closer with neither further out."""
        s = self.s
        if not s.out_fits(y, out_moved) or not s.out_fits(x, -out_moved):
            return False
        over = self.capacity_first and self.value[b] > s.cap_out.get(b, self.value[b])
        if not over and not s.counts_keep(x, y, moved):
            return False
        return all(keep(x, y, out_moved, weight_moved) for keep in self.earlier)

    def best(self, b: int) -> Found | None:
        """The change that brings ``b`` and its partner closest to the band: ``(rank, p, x, y, q)``,
        ``p`` going from ``x`` to ``y`` (and ``q`` back); the first of the lowest rank, partners
        in id order. A pair's best is kept until either broker changes (:attr:`version`): it reads
        only the two brokers' figures, counts, network-out and leaderships."""
        heavy = self.value[b] > self.top[b]
        found: Found | None = None
        version, cache = self.version, self.cache
        for other in sorted(self.gives_to[b] if heavy else self.takes_from[b]):
            hit = cache.get((b, other))
            if hit is not None and hit[0] == version[b] and hit[1] == version[other]:
                pick = hit[2]
            else:
                pick = self.pair_best(b, other, heavy)
                cache[(b, other)] = (version[b], version[other], pick)
            if pick is not None and (found is None or pick[0] < found[0]):
                found = pick
        return found

    def pair_best(self, b: int, other: int, heavy: bool) -> Found | None:
        """:meth:`best` between ``b`` and one partner."""
        x, y = (b, other) if heavy else (other, b)
        vx, vy = self.value[x], self.value[y]
        gx0, gy0 = self.gap(x, vx), self.gap(y, vy)
        gb = gx0 if b == x else gy0
        before = gx0 + gy0
        want = max(1, min((vx - vy) // 2, max(gb, 1)))
        found: Found | None = None
        s = self.s
        low, tx, ty, bx = self.low, self.top[x], self.top[y], b == x
        for delta, p, q in self.options(x, y, want):
            ax, ay = vx - delta, vy + delta     # gap() inline: the pass's hot loop
            gx, gy = max(0, ax - tx, low - ax), max(0, ay - ty, low - ay)
            if gx > gx0 or gy > gy0 or (gx if bx else gy) >= gb:
                continue
            rank = (gx + gy - before, int(q is not None))
            if found is not None and rank >= found[0]:
                continue
            out_moved = s.rout[p] - (s.rout[q] if q is not None else 0)
            if self.allowed(x, y, 0 if q is not None else 1, out_moved, delta, b):
                found = (rank, p, x, y, q)
        return found

    def options(self, x: int, y: int, want: int) -> list[tuple[int, int, int | None]]:
        """Singles ``x -> y`` near ``want``, and swaps with a partition ``y`` leads that ``x`` may lead."""
        give = self.pairs.get((x, y), [])
        back = self.pairs.get((y, x), [])
        out: list[tuple[int, int, int | None]] = []
        k = bisect_left(give, (want, -1))
        for w, p in give[max(0, k - NEAR):k + NEAR]:
            out.append((w, p, None))
        for w, p in give[::-1][:SWAPS]:
            j = bisect_left(back, (w - want, -1))
            for wq, q in back[max(0, j - NEAR):j + NEAR]:
                if w > wq:
                    out.append((w - wq, p, q))
        return out


class LeaderFigure(Goal):
    """A figure of leaders brought into its band by leadership changes (module doc); the weight
    per partition, the band and the checks of the goals before it are the subclass's."""

    modes = frozenset({"leader", "cluster"})
    phase = "leaders"
    figure: ClassVar[str] = ""
    label: ClassVar[str] = ""
    search: LeadershipPass | None = None

    @classmethod
    def applies(cls, snapshot: ClusterSnapshot) -> bool:
        return rated(snapshot)

    def weights(self) -> list[int]:
        raise NotImplementedError

    def band(self) -> tuple[int, int]:
        """``(lo, hi)`` in milli-bytes/s: the weight of the partitions with a replica once
        repaired over the eligible brokers."""
        weight = self.weights()
        total = sum(w for w, n in zip(weight, settled_replicas(self.work), strict=True) if n)
        return byte_band(total, max(1, len(self.work.eligible)), self.request.fraction, max(weight, default=0))

    def __init__(self, work: Working, request: PlanRequest) -> None:
        super().__init__(work, request)
        self.hi = 0
        self.cap_out: dict[int, int] = {}

    def high(self, b: int) -> int:
        return self.hi

    def state(self) -> LeaderState:
        demote = self.peers.get("demote")
        return LeaderState.of(self.work, demote.candidates if isinstance(demote, DemoteGoal) else None)

    def keeps(self, x: int, y: int, out_moved: int, weight_moved: int) -> bool:
        """Whether ``x`` handing ``y`` leaderships worth these keeps this goal's figure (no broker
        inside the band leaves it, none outside goes further out)."""
        search = self.search
        if search is None:
            return True
        moved = self.moved(out_moved, weight_moved)
        vx, vy = search.value[x], search.value[y]
        return search.gap(x, vx - moved) <= search.gap(x, vx) and search.gap(y, vy + moved) <= search.gap(y, vy)

    def moved(self, out_moved: int, weight_moved: int) -> int:
        return weight_moved

    def earlier_keeps(self) -> list[Keeps]:
        return [g.keeps for g in self.peers.values()
                if isinstance(g, LeaderFigure) and g.rank < self.rank and g.search is not None]

    def optimize(self) -> int:
        work = self.work
        lo, hi = self.band()
        self.hi = hi
        work.bounds[f"{self.figure}_band_lo"] = lo
        work.bounds[f"{self.figure}_band_hi"] = hi
        state = self.state()
        self.cap_out = state.cap_out
        self.rank = list(self.peers).index(self.key)
        if self.request.max_leader_changes is not None:
            self.search = LeadershipPass(state, self.weights(), lo, self.high, self.earlier_keeps(), False)
            work.notes.append(f"{self.name}: no leadership change made, --max-leader-changes is the leader goal's budget")
            return 0
        self.search = LeadershipPass(state, self.weights(), lo, self.high, self.earlier_keeps(),
                                     capacity_first=self.figure == "network_out")
        made = self.search.run()
        relieved = self.relieve(state)
        if relieved:        # the band's search again, from the leaders the relief left
            self.search = LeadershipPass(state, self.weights(), lo, self.high, self.earlier_keeps(),
                                         capacity_first=self.figure == "network_out")
            made += relieved + self.search.run()
        outside = sorted(b for b, v in self.search.value.items() if self.search.gap(b, v) > 0)
        if outside:
            work.notes.append(f"broker(s) {', '.join(map(str, outside[:10]))}{', ...' if len(outside) > 10 else ''} "
                              f"keep a {self.name} outside the band [{lo // 1000}, {-(-hi // 1000)}] bytes/s: no "
                              "leadership change found keeps the leader band and the goals before (a search, not a "
                              "proof); a broker leads only partitions it holds a replica of")
        return made

    def relieve(self, state: LeaderState) -> int:
        """Changes made after the band's search, which then runs again (none here:
        :mod:`.network_out` relieves the capacities it left exceeded)."""
        return 0

    def distance(self) -> int:
        if self.search is None:
            return 0
        return self.search.distance()

    @classmethod
    def targets(cls, view: ReportView) -> tuple[Target, ...]:
        if view.request.mode not in cls.modes:
            return ()
        return band_target(view, cls.figure, cls.label, cls.name, 2 if cls.figure == "network_out" else 3)
