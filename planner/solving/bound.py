"""A lower bound of the bytes any plan must move: a small linear program over brokers (HiGHS).

Goals
    A sound and tight lower bound of the bytes moved by every plan that meets the goals'
    targets (:data:`kafka_replica_assignor.planner.goals.order.GOALS`): every replica on an eligible broker (repair),
    full rack diversity at every level of the rack tree, each broker's bytes in the byte band
    ``[blo, min(bhi, capacity_bytes)]``, each broker's replica count in ``[lo, hi]``, every
    topic within its cap on every broker, capacities and the request's scope kept. It
    sees what the per-broker bound ``max(repaired + above the band, below the band)`` and the
    per-partition bound (each partition's size times the racks it lacks) do not: diversity moves
    must leave given racks, and the bytes they take out of a broker must come back when that
    leaves it below the band.

Constraints
    - Computed from the snapshot as it is (before any repair), for the eligible brokers (alive
      and not forgotten). Partitions with more replicas than eligible brokers (cannot be
      repaired) and partitions out of scope (``frozen``) stay as they are: they count in the
      brokers' bytes but never move.
    - Scope: an excluded broker neither gives nor takes (nor repaired replicas: a partition
      with fewer other brokers free than replicas to repair stays as it is, as the repair
      leaves it); with ``takers`` (added brokers) the other brokers only take repaired replicas.
    - This module is a driver: each row below belongs to the goal whose rule it states, and is
      added by that goal's ``bound_rows`` through :class:`Program`. The hard goals' rows are
      always kept; the targets are kept one by one in the goals' order, each when the program
      stays feasible with it and those kept before it (the exact program's rule): the bound is
      then for plans meeting the targets kept (:attr:`ByteBound.kept`). ``None`` when even the
      hard rows cannot hold or nothing is sized.

Algorithm
    Per eligible broker ``b``: ``out_b`` the bytes of its replicas that leave it (at most the
    bytes it may give), ``in_b`` the bytes of the replicas that arrive; ``after_b = before_b -
    out_b + in_b``. Minimise ``sum(in_b)`` subject to

    1. ``sum(in_b) = sum(out_b) + D``, ``D`` the bytes of the replicas on brokers that are not
       eligible;
    2. ``blo <= after_b <= min(bhi, capacity_b)`` (band), or ``after_b <= capacity_b``;
    3. per node ``n`` of the rack tree (every level): ``sum(d_nb, b in n) >= E_n`` with
       ``0 <= d_nb <= min(out_b, X_nb)``, and ``sum(in_b, b not in n) >= E_n``;
       ``sum(in_b, b in n) - sum(e_nb, b in n) >= F_n`` with ``max(0, out_b - (movable_b -
       Z_nb)) <= e_nb <= Z_nb``;
    4. ``sum(in_b) >= D + sum(size_p * gap_p)`` (``gap_p`` the groups partition ``p`` lacks at
       its worst level, for partitions on eligible brokers only);
    5. (replica band) ``out_b >=`` the ``count_b - hi`` smallest replicas ``b`` may give,
       ``in_b >=`` the ``lo - count_b`` smallest partitions that may move; (topic caps) ``out_b
       >=`` per topic ``t`` the ``count_tb - cap_tb`` smallest replicas of ``t`` it may give,
       plus (with the replica band) the smallest of its others up to ``count_b - hi`` in all,
       where ``cap_tb`` is topic spread's cap of ``t`` on broker ``b`` (``E(t, b) + 1``, a
       figure of the cluster: :class:`~kafka_replica_assignor.planner.goals.topic_spread.TopicCaps`);
    6. with ``takers``: ``sum(in_b, b not a taker) <= D``;
    7. (topic caps, with full diversity kept) per node ``n`` with ``F_n > 0``: ``sum(f_nb, b in n)
       >= F_n`` with ``0 <= f_nb <= min(in_b, W_nb)``, ``W_nb`` summing, per topic ``t``, the
       ``cap_tb`` largest of the partitions of ``t`` that have no replica in ``n`` (``r >= G``;
       the caps of the :data:`ARRIVAL_CAPS` most crowded (topic, rack) pairs, all of the
       partitions for the others);
    8. (topic caps) ``sum(in_b, b not in N) >= L_N``, ``N`` the brokers below the byte band's
       bottom that may take (below the mean bytes without the band; any set keeps the row
       sound), ``L_N`` summing, per topic ``t``, the replicas row 5 makes its brokers give (each
       broker's ``count_tb - cap_tb`` smallest) less the largest ``sum(cap_tb, b in N)`` of them;
    9. (rack diversity) per set ``S`` of groups at a level (each group alone, and the largest
       ``2 .. G - 1`` by brokers together): ``H_S^- <= sum(after_b, b in S) <= H_S^+``, the bytes
       full diversity lets ``S`` hold: per partition that may move, ``size`` times at least
       ``max(|S|, r - O)`` (``r >= G``; ``max(0, r - O)`` otherwise) and at most ``min(I, r - G +
       |S|)`` (``r >= G``; ``min(I, r, |S|)`` otherwise), ``I`` and ``O`` the most the groups in
       and out of ``S`` may hold of it (``min(r - G + 1, brokers)`` each, 1 when ``r <= G``); the
       others' bytes in ``S`` as they are;
    10. (replica counts, with rack diversity's rows) the same sets' replica counts: a band whose
       ``|S| * lo`` is above what ``S`` may hold, or ``|S| * hi`` below what it must, is out of
       reach (no row: the program is infeasible).

    With ``r`` replicas and ``G`` groups at a level, full diversity holds at most ``cap = 1``
    replica per group when ``r <= G`` (``r - G + 1`` otherwise), and at least one in every group
    when ``r >= G``. ``E_n`` sums, over the partitions, ``size * max(0, c - cap)`` (``c`` its
    replicas on eligible brokers of ``n``); ``X_nb`` the bytes of the replicas on ``b`` whose
    partition has more than ``cap`` in ``n``; ``F_n`` the sizes of the partitions with ``r >= G``
    and no replica in ``n``; ``Z_nb`` the bytes of the replicas on ``b`` that are their
    partition's only one in ``n`` (``r >= G``), ``movable_b`` the bytes ``b`` may give.

    Soundness: take any plan meeting the targets kept, and let ``out_b`` (``in_b``) be the bytes
    of the replicas its final lists drop from (add to) broker ``b``. Bytes moved are the bytes
    added, ``sum(in_b)``. Every replica added replaces one dropped (replication factors do not
    change), and the dropped ones are those of eligible brokers or the ``D`` bytes: (1). (2) is
    the band of the final lists. A partition with ``c > cap`` replicas in ``n`` ends with at most
    ``cap``, so at least ``c - cap`` of its replicas leave ``n`` for brokers outside it: those
    bytes are in ``out_b`` and ``X_nb`` of the brokers of ``n`` they leave (``d_nb``) and in
    ``in_b`` of brokers outside; one with no
    replica in ``n`` and ``r >= G`` ends with one there, whose bytes are in ``in_b`` of a broker
    of ``n``; so does one whose only replica in ``n`` leaves its broker (``e_nb`` the bytes of
    those leaving ``b``: at least what ``b`` gives beyond its other replicas): each such
    partition has a replica added in ``n``, and these partitions are distinct from those of
    ``F_n`` and from each other. Summing over distinct partitions gives (3). A partition lacking ``g`` groups gains
    them only by ``g`` replicas added, one group each: (4). A broker above ``hi`` drops at least
    ``count - hi`` distinct replicas, one below ``lo`` gains ``lo - count`` replicas of distinct
    partitions; a broker holding ``count_tb`` replicas of topic ``t`` and ending within its cap
    ``cap_tb`` (a figure of the cluster, not of the plan) drops at least ``count_tb - cap_tb`` of them, and the cheapest set of dropped replicas with that many of every topic
    and ``count_b - hi`` in all is the one of row 5: (5). A broker that was not added gains no
    replica, and an excluded one neither gains nor loses one: (6). A partition of ``F_n`` gains a
    replica in ``n``, on some broker ``b`` of ``n`` (``f_nb`` the bytes of those gaining theirs
    on ``b``, within ``in_b``); ``b`` ends with at most ``cap_tb`` replicas of ``t``, so at most
    ``cap_tb`` of these partitions of ``t`` arrive there: (7). Per topic ``t``, the replicas added
    and dropped are of the same partitions, as many of each (its replication factor holds), so
    their bytes are equal; a broker of ``N`` ends with at most ``cap_tb`` of ``t``, so at most
    ``sum(cap_tb, b in N)`` of the additions land in ``N``, and the others (the bytes dropped
    less those largest) land outside it. The drops include each broker's ``count_tb - cap_tb``
    at least; dropping more, or larger ones, never lowers that difference: (8). A partition with
    full diversity spans ``min(r, G)`` groups: with ``r >= G`` one at least in each group, so the
    groups out of ``S`` hold ``G - |S|`` at least and those of ``S`` ``|S|``; with ``r < G`` one at
    most in each; no group holds more than its brokers, nor than ``r - G + 1``: the replicas in
    ``S`` are within the bounds of (9) and (10). So the plan's ``(out, in, d)`` is a
    feasible point and its bytes moved are at least the program's minimum. The value returned is
    the solver's objective rounded down after a relative safety margin of ``1e-6`` (solver
    tolerances).

Example
    Brokers 1, 2 in rack ``a`` and 3, 4 in rack ``b``, threshold 10 %, partitions ``x-0 [1, 2]``,
    ``y-0 [3]``, ``y-1 [4]`` of 100 bytes each. Every broker holds 100 bytes (band ``[90,
    110]``), so the per-broker bound is 0; ``x-0`` lacks rack ``b``, so the per-partition bound
    is 100. The program: 100 bytes leave rack ``a`` and arrive in ``b`` (3); the brokers of ``a``
    may fall by 10 bytes each and those of ``b`` rise by 10 each, so at least 80 bytes go back
    from ``b`` to ``a``: the bound is 180. The best plan moves 200 (``x-0`` 1 -> 3, ``y-0`` 3 -> 1;
    an enumeration agrees, ``tests/unit/test_byte_bound.py``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import chain
from typing import TYPE_CHECKING

import numpy as np

from kafka_replica_assignor.cluster.snapshot import ClusterSnapshot
from kafka_replica_assignor.planner.goals.model import Layout
from kafka_replica_assignor.planner.goals.replica_bytes import BOUND_KEY
from kafka_replica_assignor.planner.racks import RackTree

if TYPE_CHECKING:
    from kafka_replica_assignor.planner.goals.goal import Goal
    from kafka_replica_assignor.planner.plan import Working
    from kafka_replica_assignor.planner.request import PlanRequest

MARGIN = 1e-6       # relative margin taken off the solver's objective (its tolerances)
ARRIVAL_CAPS = 20_000   # (topic, rack) caps row 7 asks at most (each a water filling down the tree)


@dataclass(frozen=True, slots=True)
class ByteBound:
    """The bound (bytes), the targets the program kept (the goals' keys, in their order), and a
    minimum's flows: per broker the bytes leaving and arriving (of the program with every
    target and without rows 9 and 10, when that one holds)."""

    bytes: int
    kept: tuple[str, ...]
    flows: tuple[dict[int, float], dict[int, float]] = ({}, {})


@dataclass(slots=True)
class _Figures:
    before: np.ndarray          # bytes per eligible broker (position in ``eligible``)
    movable: np.ndarray         # of them, bytes that may leave
    dead: float                 # bytes on brokers that are not eligible, to be repaired
    gap_bytes: float            # sum of size * groups lacking, partitions on eligible brokers
    nodes: list[tuple[np.ndarray, float, float, np.ndarray, np.ndarray]]   # (members, E_n, F_n, X_n, Z_n per broker)
    total: int
    largest: int
    counts: np.ndarray          # replicas per eligible broker
    replicas: int               # replicas once repaired (the count band's total)
    free_pos: np.ndarray        # movable replicas on eligible brokers: broker position
    free_size: np.ndarray       # and size
    smallest_cum: np.ndarray    # running sums of the movable partitions' sizes, smallest first
    topics: _Topics             # replicas with their topics, for the topic caps
    lacks: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]   # (level, key, topic, size) per group a partition lacks (r >= G)
    holds: list[tuple[np.ndarray, float, float, float, float]]   # row 9: per set of groups (members), the bytes and replicas it holds at least and at most
    arrivals: list[tuple[np.ndarray, np.ndarray, float]] | None = None   # row 7 per node: members, W_nb, F_n (once)


class Program:
    """The bound's linear program as the goals build it: per eligible broker (position ``k`` in
    ``brokers``) the columns ``outs[k]`` (bytes leaving) and ``ins[k]`` (bytes arriving), scaled
    by the mean bytes per broker (``scale``); ``fig`` the cluster's figures. Rows and column
    bounds are collected here and handed to HiGHS by :meth:`solve`."""

    def __init__(self, work: Working, fig: _Figures | None = None) -> None:
        self.work = work
        self.brokers = list(work.eligible)
        self.n = n = len(self.brokers)
        if fig is None:
            fig = _figures(work.snapshot, self.brokers, work.tree, Layout.of(work).topic, work.frozen, work.excluded,
                           work.takers)
        self.fig = fig
        self.scale = max(1.0, fig.total / n)
        self.outs = np.arange(n, dtype=np.int32)
        self.ins = np.arange(n, 2 * n, dtype=np.int32)
        self.lower = np.zeros(2 * n)
        self.upper = np.concatenate([fig.movable / self.scale, np.full(n, math.inf)])
        self.blocks: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
        self.band_low: float | None = None
        self.caps = np.full(n, math.inf)
        self.counts_band: tuple[int, int] | None = None
        self.topic_caps: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None
        self.floors = (np.zeros(n), np.zeros(n))
        self.flows: tuple[dict[int, float], dict[int, float]] = ({}, {})
        self.diverse = False
        """Whether rack diversity's rows are in (the arrivals of row 7 are its repairs)."""
        self.holds = True
        """Whether rows 9 and 10 (what full diversity lets a set of groups hold) are in."""
        self.unreachable = False
        """A goal found its target out of reach with the rows before it (:meth:`solve` gives None)."""

    # -- what the goals call -----------------------------------------------------------------
    def columns(self, lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
        """New columns (a goal's own auxiliary variables) with these bounds; their indices."""
        first = len(self.lower)
        self.lower = np.concatenate([self.lower, lower])
        self.upper = np.concatenate([self.upper, upper])
        return np.arange(first, first + len(lower), dtype=np.int32)

    def row(self, lower: float, upper: float, idx: np.ndarray, val: np.ndarray) -> None:
        """One row ``lower <= sum(val * column) <= upper``."""
        k = len(idx)
        self.blocks.append((np.array([lower]), np.array([upper]), np.array([0, k], dtype=np.int32),
                            np.asarray(idx, dtype=np.int32), np.asarray(val, dtype=float)))

    def pairs(self, plus: np.ndarray, minus: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> None:
        """Rows ``lower[k] <= plus[k] - minus[k] <= upper[k]`` (those with a finite side)."""
        keep = np.isfinite(lower) | np.isfinite(upper)
        count = int(keep.sum())
        index = np.stack([plus[keep], minus[keep]], axis=1).ravel().astype(np.int32)
        self.blocks.append((lower[keep], upper[keep], np.arange(0, 2 * count + 1, 2, dtype=np.int32), index,
                            np.tile([1.0, -1.0], count)))

    def repairs(self) -> None:
        """(1): the bytes arriving are the bytes leaving plus the bytes repaired."""
        dead = self.fig.dead / self.scale
        n = self.n
        self.row(dead, dead, np.concatenate([self.ins, self.outs]), np.concatenate([np.ones(n), -np.ones(n)]))

    def shut(self, brokers: Iterable[int]) -> None:
        """These brokers neither give nor take."""
        mask = np.isin(self.brokers, list(brokers))
        self.upper[self.outs[mask]] = 0.0
        self.upper[self.ins[mask]] = 0.0

    def closed(self, brokers: Iterable[int]) -> None:
        """These brokers take nothing."""
        mask = np.isin(self.brokers, list(brokers))
        self.upper[self.ins[mask]] = 0.0

    def capacities(self, capacity: Mapping[int, int]) -> None:
        """(2): ``after_b <= capacity_b``."""
        self.caps = np.array([capacity.get(b, math.inf) for b in self.brokers], dtype=float) / self.scale
        self.pairs(self.ins, self.outs, np.full(self.n, -math.inf), self.caps - self.fig.before / self.scale)

    def byte_band(self, blo: int, bhi: int) -> None:
        """(2): ``blo <= after_b <= min(bhi, capacity_b)``."""
        self.band_low = blo
        before = self.fig.before / self.scale
        tops = np.minimum(self.caps, bhi / self.scale)
        self.pairs(self.ins, self.outs, blo / self.scale - before, tops - before)

    def require_counts(self, lo: int, hi: int) -> None:
        """(5): the count band's floors on what each broker gives and takes (with the topic
        caps' when they are kept too: :meth:`solve` combines them)."""
        self.counts_band = (lo, hi)

    def require_topic_drops(self, caps: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> None:
        """(5): a broker gives at least, per topic, the smallest of its replicas above the topic's
        cap; (8): what the brokers below the band cannot take of them within their caps arrives
        on the others. ``caps(topics, broker positions)`` gives the caps."""
        self.topic_caps = caps

    def arrivals_within(self, caps: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> None:
        """(7): per node ``n`` where partitions lack a group (``r >= G``), the bytes of those
        partitions arriving at each broker ``b`` of ``n`` (``f_nb``) come within ``in_b`` and
        within ``W_nb``, per topic the largest ``cap_tb`` of them (``caps(topics, broker
        positions)``), and sum to ``F_n`` at least."""
        fig = self.fig
        if fig.arrivals is None:
            fig.arrivals = _arrivals(fig.lacks, np.array([self.work.tree.keys[b] for b in self.brokers],
                                                         dtype=np.int64).reshape(self.n, self.work.tree.depth), caps)
        for members, room, need in fig.arrivals:
            fs = self.columns(np.zeros(len(members)), room / self.scale)
            self.pairs(fs, self.ins[members], np.full(len(fs), -math.inf), np.zeros(len(fs)))
            self.row(need / self.scale, math.inf, fs, np.ones(len(fs)))

    def require_floors(self, out_floor: np.ndarray, in_floor: np.ndarray) -> None:
        """Bytes each broker gives and takes at least (in bytes, per broker position), from a
        goal's own figure (the network goals': the fewest bytes that carry the rate a broker
        must shed or gain); the largest floor asked holds."""
        self.floors = (np.maximum(self.floors[0], out_floor), np.maximum(self.floors[1], in_floor))

    # -- solving -----------------------------------------------------------------------------
    def solve(self) -> float | None:
        """The program's minimum of ``sum(in_b)`` in bytes, or None when it is infeasible;
        :attr:`flows` then holds each broker's bytes leaving and arriving at that minimum."""
        import highspy

        if self.unreachable:
            return None
        lower, upper = self.lower.copy(), self.upper.copy()
        n, scale = self.n, self.scale
        out_floor = np.zeros(n)
        in_floor = np.zeros(n)
        if self.counts_band is not None:
            out_floor, in_floor = _count_floors(self.fig, self.counts_band)
        blocks = list(self.blocks)
        if self.topic_caps is not None:
            out_floor = self.fig.topics.floors(self.topic_caps, None if self.counts_band is None else self.counts_band[1])
            # row 8 with the brokers that must take bytes anyway inside (any set keeps it sound)
            before = self.fig.before
            low = before.mean() if self.band_low is None else self.band_low
            inside = np.flatnonzero((before < low) & (self.upper[self.ins] > 0))
            rest = np.setdiff1d(np.arange(n), inside)
            need = self.fig.topics.landing(self.topic_caps, inside)
            if need > 0 and len(rest):
                blocks.append((np.array([need / scale]), np.array([math.inf]), np.array([0, len(rest)], dtype=np.int32),
                               self.ins[rest], np.ones(len(rest))))
        out_floor, in_floor = np.maximum(out_floor, self.floors[0]), np.maximum(in_floor, self.floors[1])
        lower[self.outs] = np.maximum(lower[self.outs], out_floor / scale)
        lower[self.ins] = np.maximum(lower[self.ins], in_floor / scale)
        if np.any(lower > upper + 1e-12):
            return None
        h = highspy.Highs()  # type: ignore[no-untyped-call]
        h.setOptionValue("output_flag", False)
        h.setOptionValue("threads", 1)
        h.setOptionValue("random_seed", 0)
        h.setOptionValue("solver", "simplex")
        cols = len(lower)
        h.addVars(cols, lower, upper)
        cost = np.zeros(cols)
        cost[self.ins] = 1.0
        h.changeColsCost(cols, np.arange(cols, dtype=np.int32), cost)
        for lo, up, starts, index, value in blocks:
            if len(lo):
                h.addRows(len(lo), lo, up, len(index), starts[:-1], index, value)
        h.run()
        if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
            return None
        values = np.asarray(h.getSolution().col_value) * scale
        self.flows = (dict(zip(self.brokers, values[self.outs].tolist(), strict=True)),
                      dict(zip(self.brokers, values[self.ins].tolist(), strict=True)))
        return float(h.getInfo().objective_function_value) * scale


def byte_lower_bound(work: Working, goals: Sequence[Goal]) -> ByteBound | None:
    """The bound of the module doc for ``work`` (before any move) and the goals of its request:
    the hard goals' rows always, each target's when it keeps the program feasible with the
    targets kept before it, in the goals' order."""
    if not work.eligible or not any(p.size_bytes for p in work.snapshot.partitions):
        return None
    fig = Program(work).fig      # the figures of the cluster, once for every solve below
    kept: list[Goal] = []
    for goal in goals:
        if goal.target and _solve(work, fig, goals, [*kept, goal]) is not None:
            kept.append(goal)
    program = _program(work, fig, goals, kept)
    value = program.solve()
    if value is None:
        return None
    # the flows the plan is given: those of every target without rows 9 and 10, which put a
    # target out of reach that the plan still goes as near as it can (a minimum's flows are
    # one vertex of many: the same program gives the plan the same hint whatever was kept)
    flows = program.flows
    loose = _program(work, fig, goals, [g for g in goals if g.target], holds=False)
    if loose.solve() is not None:
        flows = loose.flows
    return ByteBound(max(0, math.floor(value * (1 - MARGIN))), tuple(g.key for g in kept), flows)


def _program(work: Working, fig: _Figures, goals: Sequence[Goal], kept: Sequence[Goal], holds: bool = True) -> Program:
    program = Program(work, fig)
    program.holds = holds
    for goal in goals:
        if not goal.target or goal in kept:
            goal.bound_rows(program)
    return program


def _solve(work: Working, fig: _Figures, goals: Sequence[Goal], kept: Sequence[Goal]) -> float | None:
    return _program(work, fig, goals, kept).solve()


def record_bound(work: Working, request: PlanRequest, goals: Sequence[Goal]) -> None:
    """Put the bytes-moved bound of ``work`` (before its moves: a fresh copy of its input) in
    its bounds, as ``bytes_moved_lp_bound:<targets kept>``."""
    from kafka_replica_assignor.planner.plan import Working as Fresh

    if not any(p.size_bytes for p in work.snapshot.partitions):
        return
    fresh = Fresh(work.snapshot, work.scope)
    mine = [type(g)(fresh, request) for g in goals]
    bound = byte_lower_bound(fresh, mine)
    if bound is not None:
        work.bounds[BOUND_KEY + ":" + ",".join(bound.kept)] = bound.bytes
        work.memo["flows"] = bound.flows


def _arrivals(lacks: tuple[np.ndarray, ...], keys: np.ndarray,
              caps: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> list[tuple[np.ndarray, np.ndarray, float]]:
    """Row 7's figures per node lacked: its eligible brokers (positions), ``W_nb`` of each and
    ``F_n``. ``keys``: the eligible brokers' rack keys per level. The brokers of one rack share
    their caps, so the caps are asked once per (topic, rack), and only for the :data:`ARRIVAL_CAPS`
    (topic, rack) pairs with the most partitions lacking (a work limit: a pair not asked counts
    all of its partitions, which keeps the bound sound, only less tight)."""
    level, key, topic, size = lacks
    if not len(size):
        return []
    order = np.lexsort((-size, topic, key, level))
    level, key, topic, size = level[order], key[order], topic[order].astype(np.int64), size[order]
    cum = np.concatenate([[0.0], np.cumsum(size)])
    cut = np.concatenate([[True], (level[1:] != level[:-1]) | (key[1:] != key[:-1]) | (topic[1:] != topic[:-1])])
    starts = np.flatnonzero(cut)
    ends = np.append(starts[1:], len(size))
    node_of = level[starts] * (int(key.max()) + 1) + key[starts]
    out = []
    asked = ARRIVAL_CAPS
    for code in np.unique(node_of):
        groups = np.flatnonzero(node_of == code)
        lv, kk = int(level[starts[groups[0]]]), int(key[starts[groups[0]]])
        members = np.flatnonzero(keys[:, lv] == kk)
        racks, first_member, rack_of = np.unique(keys[members, -1], return_index=True, return_inverse=True)
        ts = np.repeat(topic[starts[groups]], len(racks))
        first = np.repeat(starts[groups], len(racks))
        count = np.repeat(ends[groups] - starts[groups], len(racks))
        take = count.copy()
        crowded = np.flatnonzero(count >= 3)    # a cap is at least 2: only these may be cut
        if len(crowded) > asked:       # the most crowded first (stable: by topic, then rack)
            crowded = np.sort(crowded[np.argsort(-count[crowded], kind="stable")[:asked]])
        asked -= len(crowded)
        if len(crowded):
            spots = np.tile(members[first_member], len(groups))
            take[crowded] = np.minimum(caps(ts[crowded], spots[crowded]), count[crowded])
        room = (cum[first + take] - cum[first]).reshape(len(groups), len(racks)).sum(axis=0)
        out.append((members, room[rack_of.reshape(-1)], float(cum[ends[groups[-1]]] - cum[starts[groups[0]]])))
    return out


def _count_floors(fig: _Figures, limits: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
    """Bytes each broker gives and takes at least to hold a count in ``[lo, hi]``: the ``count -
    hi`` smallest replicas it may give, the ``lo - count`` smallest partitions that may move
    (``inf`` when it has fewer to give)."""
    lo, hi = limits
    n = len(fig.counts)
    over = np.maximum(0, fig.counts - hi)
    under = np.maximum(0, lo - fig.counts)
    out = np.zeros(n)
    heavy = np.flatnonzero(over)
    if len(heavy):      # sort only the replicas of the brokers above the band
        pick = np.isin(fig.free_pos, heavy)
        where, size = fig.free_pos[pick], fig.free_size[pick]
        order = np.lexsort((size, where))
        cum = np.concatenate([[0.0], np.cumsum(size[order], dtype=float)])
        start, end = np.searchsorted(where[order], heavy), np.searchsorted(where[order], heavy, side="right")
        enough = over[heavy] <= end - start
        out[heavy] = np.where(enough, cum[np.minimum(start + over[heavy], end)] - cum[start], math.inf)
    top = len(fig.smallest_cum) - 1
    into = np.where(under <= top, fig.smallest_cum[np.minimum(under, top)], math.inf)
    return out, into


class _Topics:
    """The replicas on eligible brokers with their topics (row 5 of the module doc)."""

    def __init__(self, n: int, leaf: np.ndarray, shut: np.ndarray) -> None:
        self.n = n
        self.leaf = leaf                    # leaf index per eligible broker (0 without racks)
        self.shut = shut                    # excluded: gives nothing
        self.pos: list[np.ndarray] = []     # per replica on an eligible broker: its position,
        self.topic: list[np.ndarray] = []   # topic,
        self.size: list[np.ndarray] = []    # size,
        self.free: list[np.ndarray] = []    # whether it may move
        self.parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []   # per partition: topic, rf, may move
        self.memo: tuple[object, tuple[np.ndarray, ...]] | None = None    # :meth:`drops` for one caps function

    def add(self, topic: np.ndarray, spot: np.ndarray, alive: np.ndarray, s: np.ndarray, use: np.ndarray) -> None:
        """Partitions of one replication factor (rows of ``spot``, ``n`` off the eligible brokers)."""
        rf = spot.shape[1]
        self.pos.append(spot[alive])
        self.topic.append(np.broadcast_to(topic[:, None], spot.shape)[alive])
        self.size.append(np.broadcast_to(s[:, None], spot.shape)[alive].astype(float))
        self.free.append(np.broadcast_to(use[:, None], spot.shape)[alive] & ~self.shut[spot[alive]])
        self.parts.append((topic, np.full(len(topic), rf), use))


    def drops(self, caps: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> tuple[np.ndarray, ...]:
        """The replicas the topic caps make their brokers give at least (row 5): per (topic,
        broker) above the cap (``caps(topics, broker positions)``), its ``count - cap`` smallest
        that may move. Returns ``(pos, topic, size, free, chosen, short)``: the replicas on
        eligible brokers, the indices of those chosen, and the brokers with fewer that may move
        than they must give. Memoised per ``caps`` (a figure of the cluster)."""
        if self.memo is not None and self.memo[0] == caps:
            return self.memo[1]
        n = self.n
        pos, topic = np.concatenate(self.pos), np.concatenate(self.topic)
        size, free = np.concatenate(self.size), np.concatenate(self.free)
        chosen = np.zeros(0, dtype=np.int64)
        short = np.zeros(0, dtype=np.int64)
        if len(pos):
            code = topic * n + pos
            uniq, inverse, count = np.unique(code, return_inverse=True, return_counts=True)
            t, b = uniq // n, uniq % n
            excess = np.zeros(len(uniq), dtype=np.int64)
            crowded = np.flatnonzero(count >= 3)      # a cap is at least 2
            if len(crowded):
                excess[crowded] = np.maximum(0, count[crowded] - caps(t[crowded], b[crowded]))
            # only the groups above their cap need their replicas sorted
            hot = np.flatnonzero(free & (excess[inverse] > 0))
            order = np.lexsort((size[hot], code[hot]))
            gcode, ggroup = code[hot][order], inverse[hot][order]
            first = np.searchsorted(gcode, uniq[ggroup])
            chosen = hot[order][np.arange(len(gcode)) - first < excess[ggroup]]
            short = np.unique(b[excess > np.bincount(inverse[free], minlength=len(uniq))])
        out = (pos, topic, size, free, chosen, short)
        self.memo = (caps, out)
        return out

    def floors(self, caps: Callable[[np.ndarray, np.ndarray], np.ndarray], hi: int | None) -> np.ndarray:
        """Bytes each eligible broker gives at least: per topic the smallest of its replicas of
        the topic above the cap (:meth:`drops`), and with ``hi`` the smallest others up to
        ``count - hi`` (``inf`` when it has too few it may give)."""
        n = self.n
        out = np.zeros(n)
        if not self.pos:
            return out
        pos, _, size, free, chosen, short = self.drops(caps)
        if not len(pos):
            return out
        out[short] = math.inf
        out += np.bincount(pos[chosen], weights=size[chosen], minlength=n)
        if hi is not None:
            taken = np.bincount(pos[chosen], minlength=n)
            more = np.maximum(0, np.bincount(pos, minlength=n) - hi) - taken
            picked = np.zeros(len(pos), dtype=bool)
            picked[chosen] = True
            rest = np.flatnonzero(free & ~picked & (more[pos] > 0))
            rpos, rsize = pos[rest], size[rest]
            order = np.lexsort((rsize, rpos))
            rpos, rsize = rpos[order], rsize[order]
            rank = np.arange(len(rpos)) - np.searchsorted(rpos, rpos)
            pick = rank < more[rpos]
            out += np.bincount(rpos[pick], weights=rsize[pick], minlength=n)
            out[(more > 0) & (np.bincount(rpos, minlength=n) < more)] = math.inf
        return out

    def landing(self, caps: Callable[[np.ndarray, np.ndarray], np.ndarray], inside: np.ndarray) -> float:
        """Row 8: the bytes arriving on brokers outside ``inside`` (their positions) at least,
        for the topic caps: per topic, the replicas :meth:`drops` chooses, less the largest
        as many of them as the brokers of ``inside`` may hold of the topic (the sum of their
        caps)."""
        if not self.pos:
            return 0.0
        _, topic, size, _, chosen, _ = self.drops(caps)
        if not len(chosen):
            return 0.0
        t, s = topic[chosen].astype(np.int64), size[chosen]
        ts = np.unique(t)
        room = np.zeros(len(ts), dtype=np.int64)
        if len(inside):
            room = caps(np.repeat(ts, len(inside)), np.tile(inside, len(ts))).reshape(len(ts), len(inside)).sum(axis=1)
        order = np.lexsort((-s, t))     # per topic, largest first
        t, s = t[order], s[order]
        rank = np.arange(len(t)) - np.searchsorted(t, t)
        return float(s[rank >= room[np.searchsorted(ts, t)]].sum())


class _Racks:
    """Excess ``E_n``, deficit ``F_n`` and the bytes per broker in a crowded group, per level."""

    def __init__(self, depth: int, nkeys: int, n: int, groups: tuple[int, ...]) -> None:
        self.groups = groups
        self.excess = np.zeros((depth, nkeys))
        self.deficit = np.zeros((depth, nkeys))
        self.holding = np.zeros((depth, n))     # replicas in a group with an excess, per broker
        self.sole = np.zeros((depth, n))        # replicas alone in their group with r >= G, per broker
        self.lacks: list[tuple[np.ndarray, ...]] = []   # (level, key, topic, size) per group a partition lacks
        self.present: list[np.ndarray] = [np.zeros(0, dtype=np.int64)] * depth    # the keys at each level

    def add(self, level: int, k: np.ndarray, alive: np.ndarray, spot: np.ndarray, s: np.ndarray,
            use: np.ndarray, topic: np.ndarray) -> np.ndarray:
        """Add partitions of one replication factor: ``k`` their groups at ``level`` (``nkeys + j``
        for a replica ``j`` off the eligible brokers), ``spot`` their brokers' positions (``n``
        when off); returns the groups each lacks."""
        rf = k.shape[1]
        n, nkeys = self.holding.shape[1], self.excess.shape[1]
        g = self.groups[level]
        cap = 1 if rf <= g else rf - g + 1
        cols = [k[:, j] for j in range(rf)]
        first = alive.copy()
        count = np.ones_like(k)
        for j in range(rf):
            for i in range(j):
                same = cols[i] == cols[j]
                count[:, i] += same
                count[:, j] += same
                first[:, j] &= ~same
        weight = s[:, None] * use[:, None]
        crowded = (count > cap) & alive
        self.holding[level] += np.bincount(spot.ravel(), weights=(weight * crowded).ravel(), minlength=n + 1)[:n]
        if rf >= g:     # the partition's only replica in its group: leaving it brings another one in
            alone = (count == 1) & alive
            self.sole[level] += np.bincount(spot.ravel(), weights=(weight * alone).ravel(), minlength=n + 1)[:n]
        over = np.maximum(0, count - cap) * first
        self.excess[level] += np.bincount(k.ravel(), weights=(weight * over).ravel(), minlength=nkeys + rf)[:nkeys]
        if rf >= g:
            held = np.bincount(k.ravel(), weights=(weight * first).ravel(), minlength=nkeys + rf)[:nkeys]
            self.deficit[level] += float(weight.sum()) - held
            present = self.present[level]
            has = np.zeros((len(k), len(present)), dtype=bool)
            for j in range(rf):
                has |= k[:, j:j + 1] == present[None, :]
            row, col = np.nonzero(~has & use[:, None])
            self.lacks.append((np.full(len(row), level), present[col], topic[row], s[row].astype(float)))
        distinct = first[:, 0].astype(np.int64)
        for j in range(1, rf):
            distinct += first[:, j]
        lacking: np.ndarray = np.maximum(0, min(rf, g) - distinct)
        return lacking


class _Holds:
    """Row 9's figures: per level, each group and the largest (most brokers) 2, 3, ... ``G - 1``
    groups together, the bytes and replicas full diversity lets the set hold, at least and at
    most (the module doc)."""

    def __init__(self, keys: np.ndarray, nkeys: int, groups: tuple[int, ...]) -> None:
        self.nkeys = nkeys
        self.groups = groups
        self.members = [np.bincount(keys[:, level], minlength=nkeys) for level in range(len(groups))]
        self.present = [np.unique(keys[:, level]) for level in range(len(groups))]
        self.sets: list[list[tuple[np.ndarray, np.ndarray]]] = []     # per level: (brokers, group keys)
        for level, ks in enumerate(self.present):
            big = ks[np.lexsort((ks, -self.members[level][ks]))]
            chosen = [ks[i:i + 1] for i in range(len(ks))] + [big[:k] for k in range(2, len(ks))]
            self.sets.append([(np.isin(keys[:, level], c), c) for c in chosen])
        self.first = np.concatenate([[0], np.cumsum([len(x) for x in self.sets])]).astype(int).tolist()
        self.values = np.zeros((self.first[-1], 4))    # bytes least, most; replicas least, most

    def add(self, rf: int, k: np.ndarray, alive: np.ndarray, s: np.ndarray, use: np.ndarray) -> None:
        """Partitions of ``rf`` replicas: ``k`` their brokers' keys per level (rows x replicas x
        levels), ``s`` their sizes, ``use`` whether they may move (the others' replicas on
        eligible brokers count where they are)."""
        kept = alive & ~use[:, None]
        figures = ((float(s[use].sum()), np.where(kept, s[:, None], 0).ravel()),
                   (float(use.sum()), kept.ravel().astype(float)))
        for j, (moving, fixed) in enumerate(figures):
            for level, g in enumerate(self.groups):
                held = np.bincount(k[:, :, level].ravel(), weights=fixed, minlength=self.nkeys)
                most = np.minimum(1 if rf <= g else rf - g + 1, self.members[level])    # per group
                every = int(most[self.present[level]].sum())
                for at, (_, ks) in enumerate(self.sets[level], self.first[level]):
                    inside = int(most[ks].sum())
                    if rf >= g:
                        low, high = max(len(ks), rf - (every - inside)), min(inside, rf - (g - len(ks)))
                    else:
                        low, high = max(0, rf - (every - inside)), min(inside, rf, len(ks))
                    fixed_in = float(held[ks].sum())
                    self.values[at, 2 * j:2 * j + 2] += (fixed_in + moving * low, fixed_in + moving * high)

    def limits(self) -> list[tuple[np.ndarray, float, float, float, float]]:
        rows: list[list[float]] = self.values.tolist()
        return [(mask, row[0], row[1], row[2], row[3])
                for (mask, _), row in zip(chain.from_iterable(self.sets), rows, strict=True)]


def _figures(snapshot: ClusterSnapshot, eligible: Sequence[int], tree: RackTree, topic_of: Sequence[int],
             frozen: frozenset[int], excluded: frozenset[int] = frozenset(),
             takers: frozenset[int] = frozenset()) -> _Figures:
    """Bytes per broker, the bytes to repair and the excess and deficit of every rack node
    (module doc), vectorised per replication factor."""
    parts = snapshot.partitions
    n = len(eligible)
    ids = np.array(eligible, dtype=np.int64)
    size = np.fromiter((p.size_bytes or 0 for p in parts), dtype=np.int64, count=len(parts))
    lists = [p.replicas for p in parts]
    rfs = np.fromiter(map(len, lists), dtype=np.int64, count=len(parts))
    flat = np.fromiter(chain.from_iterable(lists), dtype=np.int64, count=int(rfs.sum()))
    offsets = np.cumsum(rfs) - rfs
    stay = np.zeros(len(parts), dtype=bool)
    if frozen:
        stay[list(frozen)] = True
    stay |= rfs > n
    before = np.zeros(n)
    movable = np.zeros(n)
    counts = np.zeros(n, dtype=np.int64)
    dead_count = 0
    free_pos: list[np.ndarray] = []
    free_size: list[np.ndarray] = []
    dead = gap_bytes = 0.0
    depth = tree.depth
    keys = np.array([tree.keys[b] for b in eligible] if depth else [], dtype=np.int64).reshape(n, depth)
    nkeys = len(tree.names)
    groups = tree.groups(eligible)
    racks = _Racks(depth, nkeys, n, groups)
    holds = _Holds(keys, nkeys, groups)
    racks.present = [np.unique(keys[:, level]) for level in range(depth)]
    tid = np.asarray(topic_of, dtype=np.int64)
    leaf = np.unique(keys[:, depth - 1], return_inverse=True)[1].reshape(n) if depth else np.zeros(n, dtype=np.int64)
    topics = _Topics(n, leaf, np.array([b in excluded for b in eligible], dtype=bool))
    for rf in map(int, np.unique(rfs)):
        rows = np.flatnonzero(rfs == rf)
        if rf == 0:
            continue
        reps = flat[offsets[rows][:, None] + np.arange(rf)]
        pos = np.searchsorted(ids, reps).clip(0, n - 1)
        alive = ids[pos] == reps
        spot = np.where(alive, pos, n)          # n: off the eligible brokers
        s = size[rows]
        use = ~stay[rows]
        unable = [b in excluded or bool(takers) and b not in takers for b in eligible]
        if any(unable):    # repairs go to brokers that may take: a partition short of them stays as it is
            shut = np.array(unable + [True])[spot]
            spare = n - sum(unable) - (alive & ~shut).sum(axis=1)
            stay[rows] |= rf - alive.sum(axis=1) > spare
            use = ~stay[rows]
        topics.add(tid[rows], spot, alive, s, use)
        sw = np.broadcast_to(s[:, None], spot.shape).ravel()
        before += np.bincount(spot.ravel(), weights=sw, minlength=n + 1)[:n]
        counts += np.bincount(spot.ravel(), minlength=n + 1)[:n]
        free = (alive & use[:, None]).ravel()
        free_pos.append(spot.ravel()[free])
        free_size.append(sw[free])
        movable += np.bincount(free_pos[-1], weights=free_size[-1], minlength=n)
        lost = np.full(len(rows), rf, dtype=np.int64)
        for j in range(rf):
            lost -= alive[:, j]
        dead += float((s * lost)[use].sum())
        dead_count += int(lost[use].sum())
        holds.add(rf, keys[np.minimum(spot, n - 1)], alive, s, use)
        if depth and rf >= 2:
            lacking = np.zeros(len(rows), dtype=np.int64)
            for level in range(depth):
                k = np.where(alive, keys[np.minimum(spot, n - 1), level], nkeys + np.arange(rf))
                lacking = np.maximum(lacking, racks.add(level, k, alive, spot, s, use, tid[rows]))
            gap_bytes += float((s * lacking)[use & (lost == 0)].sum())
    nodes: list[tuple[np.ndarray, float, float, np.ndarray, np.ndarray]] = []
    for level in range(depth):
        for key in np.unique(keys[:, level]):
            nodes.append((keys[:, level] == key, float(racks.excess[level, key]),
                          float(racks.deficit[level, key]), racks.holding[level], racks.sole[level]))
    limits = holds.limits()
    fpos = np.concatenate(free_pos) if free_pos else np.zeros(0, dtype=np.int64)
    fsize = np.concatenate(free_size) if free_size else np.zeros(0, dtype=np.int64)
    smallest = np.concatenate([[0.0], np.cumsum(np.sort(size[~stay]), dtype=float)])
    parts_lacking = [np.concatenate(c) for c in zip(*racks.lacks, strict=True)] if racks.lacks else [np.zeros(0)] * 4
    lacks = (parts_lacking[0], parts_lacking[1], parts_lacking[2], parts_lacking[3])
    return _Figures(before, movable, dead, gap_bytes, nodes,
                    int(before.sum() + dead), int(size.max(initial=0)), counts,
                    int(counts.sum()) + dead_count, fpos, fsize, smallest, topics, lacks, limits)
