"""Traffic: the per-partition rates the network goals share, and each broker's figures from them.

Goals
    One place that says what a broker's network carries (:mod:`.network_in`,
    :mod:`.network_capacity`, :mod:`.network_out`, :mod:`.leader_bytes_in` ask it):

    - *network-in* of ``b``: the ``bytes_in_per_s`` of every partition with a replica on ``b``
      (the leader receives the produce bytes, each follower the same bytes as replication);
    - *network-out* of ``b``: per partition it leads, ``bytes_out_per_s`` (every consumer
      group's reads) plus ``bytes_in_per_s * (RF - 1)`` (replication to its followers);
    - *leader bytes-in* of ``b``: the ``bytes_in_per_s`` of the partitions it leads.

    The leader is the first replica: after a plan the executor elects preferred leaders.

Constraints
    - Rates are held in whole milli-bytes per second (:data:`UNIT` per byte/s), so a broker's
      figure is an exact sum whatever the order of the moves, and bands are whole numbers as the
      byte band's are (:func:`kafka_replica_assignor.planner.goals.replica_bytes.byte_band`).
    - A snapshot without rates (:func:`rated` false) runs none of the network goals: their
      classes say so (``applies``), so such a plan is the plan without them, byte for byte.

Algorithm
    :class:`Tracker` holds the heuristic model's figures per broker and follows its moves from
    the working copy's move log (every move of the model is recorded there), so no goal keeps a
    copy that another goal's move leaves stale.

Example
    ``t-0 [1, 2, 3]`` with 10 B/s in and 30 B/s out: brokers 1, 2 and 3 take 10 B/s in each;
    broker 1 sends 30 + 10 * 2 = 50 B/s out and leads 10 B/s in.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import numpy as np

from kafka_replica_assignor.cluster.snapshot import ClusterSnapshot, PartitionEntry
from kafka_replica_assignor.cluster.traffic import BrokerTraffic, broker_traffic, has_traffic, partition_rates
from kafka_replica_assignor.planner.goals.goal import Goal
from kafka_replica_assignor.planner.plan import MoveKind, Plan

if TYPE_CHECKING:
    from kafka_replica_assignor.planner.goals.model import Model
    from kafka_replica_assignor.planner.plan import Working

UNIT = 1000
"""Milli-bytes per second: the whole unit of the goals' sums."""


def rated(snapshot: ClusterSnapshot) -> bool:
    """Whether the snapshot carries traffic (a partition's rate or a broker's network capacity)."""
    return has_traffic(snapshot)


def units(rate: float | None) -> int:
    """A rate in bytes/s as whole :data:`UNIT` (none: 0)."""
    return round(rate * UNIT) if rate else 0


def rate_in(p: PartitionEntry) -> int:
    """What one replica of ``p`` receives (:func:`~kafka_replica_assignor.cluster.traffic.partition_rates`)."""
    return units(p.bytes_in_per_s)


def rate_out(p: PartitionEntry) -> int:
    """What ``p``'s leader sends once every replica is a broker: consumers' reads and replication
    to its ``RF - 1`` followers (:func:`~kafka_replica_assignor.cluster.traffic.partition_rates`)."""
    return partition_rates(p, max(0, len(p.replicas) - 1), units)[1]


def rates(work: Working) -> tuple[list[int], list[int]]:
    """``(in, out)`` per partition of ``work`` (:func:`rate_in`, :func:`rate_out`), once per copy."""
    hit = work.memo.get("rates")
    if isinstance(hit, tuple):
        return hit
    parts = work.snapshot.partitions
    out = ([rate_in(p) for p in parts], [rate_out(p) for p in parts])
    work.memo["rates"] = out
    return out


def per_broker(lists: Iterable[Sequence[int]], weights: Sequence[int], brokers: Iterable[int], *,
               leaders: bool) -> dict[int, int]:
    """Per broker of ``brokers``, the ``weights`` of the partitions it holds (``leaders``: leads)."""
    out = dict.fromkeys(brokers, 0)
    for reps, w in zip(lists, weights, strict=True):
        if not w or not reps:
            continue
        for b in (reps[:1] if leaders else reps):
            if b in out:
                out[b] += w
    return out


def snapshot_figures(snapshot: ClusterSnapshot, brokers: Iterable[int]) -> dict[str, dict[int, int]]:
    """A snapshot's network-in, network-out and leader bytes-in per broker of ``brokers`` (in
    :data:`UNIT`, the first replica leading), the report's and the bench's figures: the cluster's
    rule (:func:`~kafka_replica_assignor.cluster.traffic.broker_traffic`)."""
    traffic = broker_traffic(snapshot, preferred=True, unit=units)
    none: BrokerTraffic[int] = BrokerTraffic(0, 0, 0)
    ids = [(b, traffic.get(b, none)) for b in brokers]
    return {"network_in": {b: t.network_in for b, t in ids},
            "network_out": {b: t.network_out for b, t in ids},
            "leader_in": {b: t.leader_in for b, t in ids}}


def gap(value: int, low: int, high: int) -> int:
    """How far ``value`` lies outside ``[low, high]``."""
    return max(0, value - high, low - value)


def ratio(values: Sequence[int]) -> str:
    """``min-max x mean`` of a figure, for the report."""
    mean = sum(values) / len(values) if values else 0
    if not mean:
        return "-"
    return f"{min(values) / mean:.2f}-{max(values) / mean:.2f} x mean"


def text(value: int | None) -> str:
    """A rate in :data:`UNIT` as bytes/s for the report."""
    return "-" if value is None else f"{value / UNIT:.0f}"


class Tracker:
    """Network-in and network-out per eligible broker of a heuristic model, kept in step with
    the model's moves (module doc). ``lead[i]``: the leader the tracker has seen."""

    __slots__ = ("lead", "model", "net_in", "net_out", "rin", "rout", "seen", "version")

    def __init__(self, model: Model) -> None:
        work = model.work
        self.model = model
        self.rin, self.rout = rates(work)
        reps = model.reps
        self.net_in = per_broker(reps, self.rin, work.eligible, leaders=False)
        self.net_out = per_broker(reps, self.rout, work.eligible, leaders=True)
        self.lead = [r[0] if r else -1 for r in reps]
        self.seen = len(work.moves)
        self.version = 0

    @classmethod
    def of(cls, model: Model) -> Tracker:
        """The tracker of ``model`` (one per model, shared by the goals that read it)."""
        hit = model.work.memo.get("traffic")
        if isinstance(hit, Tracker) and hit.model is model:
            return hit.sync()
        tracker = cls(model)
        model.work.memo["traffic"] = tracker
        return tracker

    def sync(self) -> Tracker:
        """Apply the moves made since last asked."""
        moves = self.model.work.moves
        if self.seen == len(moves):
            return self
        net_in, net_out, lead = self.net_in, self.net_out, self.lead
        for i, src, dst, kind in moves[self.seen:]:
            if kind is not MoveKind.LEADER:
                r = self.rin[i]
                if src in net_in:
                    net_in[src] -= r
                if dst in net_in:
                    net_in[dst] += r
            if lead[i] == src:
                lead[i] = dst
                r = self.rout[i]
                if src in net_out:
                    net_out[src] -= r
                if dst in net_out:
                    net_out[dst] += r
        self.seen = len(moves)
        self.version += 1
        return self


def knapsack(need: float, rate: np.ndarray, size: np.ndarray) -> float:
    """The fewest bytes that carry ``need`` of rate when a replica may be split (``rate``,
    ``size``: the replicas that may carry it, in bytes-per-rate order): a lower bound of any
    whole set of them; ``inf`` when they carry too little."""
    if need <= 0:
        return 0.0
    cum = np.cumsum(rate, dtype=float)
    k = int(np.searchsorted(cum, need))
    if k >= len(cum):
        return math.inf
    before_rate = float(cum[k - 1]) if k else 0.0
    before_size = float(size[:k].sum())
    return before_size + (need - before_rate) * float(size[k]) / float(rate[k])


def rate_floors(work: Working, weights: Sequence[int], low: int | dict[int, int] | None,
                high: dict[int, int]) -> tuple[np.ndarray, np.ndarray]:
    """Per eligible broker (position), the bytes it gives and takes at least in any plan that
    ends with its ``weights`` held (a replica anywhere counts, as network-in does) within
    ``[low, high[b]]`` (``low[b]`` when a dict): the rate above ``high`` must leave it on replicas it holds now, the rate
    below ``low`` arrive on replicas of partitions it does not hold, and :func:`knapsack` is
    the fewest bytes that carry a rate. Partitions out of scope or wider than the eligible
    brokers never move; an excluded broker neither gives nor takes, a broker that is not added
    (``--add-brokers``) takes only repaired replicas."""
    eligible = work.eligible
    n = len(eligible)
    value, rate, size, damaged, order, held = rate_index(work, weights)
    out_floor, in_floor = np.zeros(n), np.zeros(n)
    shut = [b in work.excluded for b in eligible]
    for k, b in enumerate(eligible):
        above = value[k] - high.get(b, math.inf)
        below = (low.get(b, 0) if isinstance(low, dict) else low or 0) - value[k]
        if above <= 0 and below <= 0:
            continue
        if shut[k]:
            (out_floor if above > 0 else in_floor)[k] = math.inf
            continue
        here = np.zeros(len(rate), dtype=bool)
        here[held[k]] = True
        if above > 0:
            pick = order[here[order]]
            out_floor[k] = knapsack(above, rate[pick], size[pick])
        if below > 0:
            may = ~here if not work.takers or b in work.takers else ~here & damaged
            pick = order[may[order]]
            in_floor[k] = knapsack(below, rate[pick], size[pick])
    return out_floor, in_floor


RateIndex = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, list[list[int]]]


def rate_index(work: Working, weights: Sequence[int]) -> RateIndex:
    """What :func:`rate_floors` reads of the input's lists, once per working copy and weights
    (the network-in and network capacity goals ask for the same): per eligible broker
    (position) its ``weights`` held; per partition that may move (a weight, in scope, no wider
    than the eligible brokers) its weight, its size, whether it lost a replica, the order of
    bytes per rate, and per broker the positions of those it holds."""
    hit = work.memo.get("rate_index")
    if isinstance(hit, tuple) and hit[0] is weights:
        known: RateIndex = hit[1]
        return known
    n = len(work.eligible)
    pos = {b: k for k, b in enumerate(work.eligible)}
    parts = work.snapshot.partitions
    value = np.zeros(n)
    holders: list[list[int]] = []
    movable: list[int] = []
    for i, reps in enumerate(work.original):
        on = [pos[b] for b in reps if b in pos]
        for k in on:
            value[k] += weights[i]
        if weights[i] > 0 and i not in work.frozen and len(reps) <= n:
            movable.append(i)
            holders.append(on)
    rate = np.array([weights[i] for i in movable], dtype=float)
    size = np.array([parts[i].size_bytes or 0 for i in movable], dtype=float)
    damaged = np.array([len(h) < len(work.original[i]) for h, i in zip(holders, movable, strict=True)], dtype=bool)
    order = np.argsort(size / np.maximum(rate, 1.0), kind="stable")
    out = (value, rate, size, damaged, order, positions(holders, n))
    work.memo["rate_index"] = (weights, out)
    return out


def positions(holders: Sequence[Sequence[int]], n: int) -> list[list[int]]:
    """Per broker position (of ``n``), the positions in ``holders`` of the lists naming it."""
    held: list[list[int]] = [[] for _ in range(n)]
    for j, on in enumerate(holders):
        for k in on:
            held[k].append(j)
    return held


def diverse_bands(work: Working, weights: Sequence[int], values: Sequence[int], threshold: Fraction,
                  largest: int) -> dict[int, tuple[int, int]] | None:
    """Per eligible broker, its band of a figure that every replica carries (``values[i]`` per
    replica of partition ``i``, ``weights[i]`` its replicas once repaired) where full rack
    diversity forces the figure away from the mean; ``None`` where it does not (every broker's
    band is the mean's).

    The figure is water-filled down the rack tree as the topic caps' replicas are
    (:class:`kafka_replica_assignor.planner.goals.topic_spread.TopicCaps`): a node's share over its children in
    proportion to their eligible brokers, each child within what full diversity forces into it
    (the values of the partitions with at least as many replicas as there are groups at its
    level: one in each group) and the most it lets it hold (one replica of each partition with
    no more replicas than groups, ``r - G + 1`` of one with more; a broker one of each). A
    child held at a bound leaves the rest to its siblings. A broker's band is its share
    ``* (1 -+ threshold)`` with the byte band's rule
    (:func:`kafka_replica_assignor.planner.goals.replica_bytes.byte_band`), its top no higher than the most it may
    hold: a broker alone in its data centre holding a replica of every partition gets the
    figure diversity forces on it, and the others the band of the mean of the rest."""
    from kafka_replica_assignor.planner.goals.model import Layout
    from kafka_replica_assignor.planner.goals.replica_bytes import byte_band

    n = len(work.eligible)
    depth = work.tree.depth
    if not depth or n < 2:
        return None
    lay = Layout.of(work)
    groups = (*work.tree.groups(work.eligible), n)
    low, high = [0] * (depth + 2), [0] * (depth + 2)
    one = 0
    for v, r in zip(values, weights, strict=True):
        if not v or not r or r > n:
            continue
        one += v
        for lv, g in enumerate(groups, 1):
            if r >= g and lv <= depth:
                low[lv] += v
            high[lv] += v * (1 if r <= g else r - g + 1)
    share: dict[int, Fraction] = {0: Fraction(sum(v * r for v, r in zip(values, weights, strict=True)))}
    held = False
    todo = [0]
    while todo:
        up = todo.pop()
        children = lay.children.get(up, ())
        if children:
            lv = lay.level[children[0]]
            fixed, bound = water_fill_shares(share[up], {c: lay.members[c] for c in children}, low[lv], high[lv])
            held |= bound
            share.update(fixed)
            todo.extend(children)
    if not held:
        return None
    out = {}
    for pos, b in enumerate(work.eligible):
        mean = share.get(lay.first_broker + pos, Fraction(0))
        lo, hi = byte_band(mean.numerator, mean.denominator, threshold, largest)
        out[b] = (lo, max(lo, largest, min(hi, one)))
    return out


def within_bands(plan: Plan, figure: str, values: dict[int, int]) -> bool:
    """Whether every broker's ``values`` is within its band of ``figure`` recorded in the plan's
    bounds (``{figure}_band_lo``/``_hi``, or a broker's own ``..._lo:{b}``/``_hi:{b}`` where full
    rack diversity set it: :func:`diverse_bands`); true without a band."""
    lo, hi = plan.bound(f"{figure}_band_lo"), plan.bound(f"{figure}_band_hi")
    if lo is None or hi is None:
        return True
    for b, v in values.items():
        low, top = plan.bound(f"{figure}_band_lo:{b}"), plan.bound(f"{figure}_band_hi:{b}")
        if not (lo if low is None else low) <= v <= (hi if top is None else top):
            return False
    return True


def water_fill_shares(total: Fraction, members: dict[int, int], low: int, high: int) -> tuple[dict[int, Fraction], bool]:
    """``total`` over the children ``members`` (their brokers) in proportion, each within
    ``[low, high]``; a child held at a bound leaves the rest to the others. The shares, and
    whether a child was held."""
    fixed: dict[int, Fraction] = {}
    held = False
    while True:
        free = [c for c in members if c not in fixed]
        weight = sum(members[c] for c in free)
        if not free or not weight:
            return fixed, held
        rest = max(Fraction(0), total - sum(fixed.values()))
        new = {c: min(max(rest * members[c] / weight, Fraction(low)), Fraction(high)) for c in free
               if not low <= rest * members[c] / weight <= high}
        if not new:
            fixed.update({c: rest * members[c] / weight for c in free})
            return fixed, held
        held = True
        fixed.update(new)


class TracksTraffic(Goal):
    """A goal that reads each broker's network figures from a :class:`Tracker` kept in step
    with the model it is bound to (``self.t``, synced on each read)."""

    traffic: Tracker | None = None

    def bind(self, model: Any, rank: int) -> None:
        super().bind(model, rank)
        self.traffic = Tracker.of(model)

    @property
    def t(self) -> Tracker:
        assert self.traffic is not None, "bind() first"
        return self.traffic.sync()


def band_texts(key: str, label: str) -> dict[str, str]:
    """The report's texts of a traffic band's two ends (``bound_text`` of the goal owning it)."""
    return {f"{key}_band_lo": f"{label} band low end (bytes/s) at threshold {{t}}: ceil(mean * (1 - threshold))",
            f"{key}_band_hi": f"{label} band high end (bytes/s) at threshold {{t}}: max(floor(mean * (1 + "
                              "threshold)), busiest partition)"}
