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
    into the byte band without the larger one). A replica is searched for only in the racks
    rack diversity lets it go to that hold a broker below its target and were not found full
    for its topic (no broker there below target within the topic's caps: the same for each of
    its replicas, until a move of the topic may open one). Brokers still outside the band then
    level with any broker at least two replicas away, in passes while one moves something: a
    replica is offered only to the brokers of the racks it may go to (not found full for its
    topic), and a scan that found nothing is not repeated, in that round or the next, while
    nothing it read has changed (the model's change counters, :class:`Leveling`), so a band
    that the rack tree puts out of reach (a zone with fewer brokers holding a replica of every
    partition) costs about one scan per change, not one per replica and pass. Lower bounds
    (before repair):
    ``repairs + sum(max(0, count - hi))`` and ``sum(max(0, lo - count))``. Exact program:
    ``lo <= sum_p x[p, b] <= hi``. Bound: a broker above ``hi`` gives at least its ``count - hi``
    smallest replicas, one below ``lo`` takes at least the ``lo - count`` smallest partitions;
    with rack diversity's rows, a band its groups cannot hold is out of reach (row 10).

Example
    Brokers 1..6 hold 4, 3, 2, 3, 0, 0 replicas (12, band [2, 2]): 1 gives two followers, 2 and
    4 one each, to 5 and 6: 4 moves, the bound.
"""

from __future__ import annotations

import math
from bisect import bisect_left, insort
from fractions import Fraction
from typing import TYPE_CHECKING, Any, ClassVar

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
from kafka_replica_assignor.planner.goals.topic_spread import FullRacks, TopicSpreadGoal

if TYPE_CHECKING:
    from kafka_replica_assignor.planner.goals.model import Model


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

    leveling: Leveling | None = None
    """What the leveling fallback read (:class:`Leveling`), kept across rounds."""
    found: FullRacks | None = None
    """While the brokers above target give: the racks found full for a topic (no broker below
    its target there within the topic's caps)."""

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
        lo, hi = self.band()
        p.require_counts(lo, hi)
        if p.diverse and p.holds:   # (10): a set of groups' brokers hold what full diversity lets it hold
            p.unreachable |= any(mask.sum() * lo > most or mask.sum() * hi < least for mask, _, _, least, most in p.fig.holds)

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

    def topic_goal(self) -> TopicSpreadGoal | None:
        """The topic spread goal when it judges this goal's moves (ranked before it on the same
        model): its caps then refuse a replica wherever a rack is full for the topic."""
        topics = self.peers.get("topics")
        if isinstance(topics, TopicSpreadGoal) and topics.model is self.m and topics.rank < self.rank:
            return topics
        return None

    def balance_counts(self) -> None:
        m = self.m
        topics = self.topic_goal()
        # a broker below its target only fills up while the brokers above give
        self.found = None if topics is None else FullRacks(topics, takes=lambda y: m.counts[y] < m.targets[y])
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
        # the racks holding a broker below its target (the only takers); none opens while x gives
        takers = {leaf for leaf, members in m.leaf_members.items() if any(m.counts[y] < m.targets[y] for y in members)}
        found = self.found
        given = 0
        while m.counts[x] > m.targets[x] and m.budget_left():
            bucket = next((b for b in buckets if b), None)
            if bucket is None:
                break
            key = bucket.pop(m.nearest(bucket, m.want(x)))
            i = m.partition(key)
            if not m.leader_ok(i, x):
                continue
            leaves = [leaf for leaf in m.allowed_leaves(i, x) if leaf in takers]
            if found is not None:
                leaves = found.open(m.topic[i], x, leaves)
            y = receiver(m, i, x, leaves, mode=TAKER, upto=self.rank) if leaves else None
            if y is None:           # tried once, like every other replica of x
                if found is not None:
                    found.look(m.topic[i], x, leaves)
                continue
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
            if found is not None:
                found.moved(t, x, y)
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

    def level_counts(self) -> None:
        """Brokers still outside ``[lo, hi]`` trade with any broker at least two replicas away
        (each move lowers the sum of squared counts), in passes while one moves something. A
        replica is offered only to the brokers of the racks it may go to, and a scan that
        found nothing is not repeated, in this round or the next, while nothing it read has
        changed (:class:`Leveling`)."""
        m = self.m
        if self.leveling is None or self.leveling.model is not m:
            self.leveling = Leveling(m, self.rank, self.topic_goal())
        state = self.leveling
        if state.found is not None:
            state.found.known.clear()      # (the other goals moved replicas since)
        progress = True
        while progress and m.budget_left():
            progress = False
            eligible = m.work.eligible
            for x in sorted((b for b in eligible if m.counts[b] > m.hi),
                            key=lambda b: (-m.counts[b], b)):
                low = sorted(eligible, key=lambda y: (m.counts[y], m.sizes[y], y))
                progress |= state.give_down(x, low)
            for y in sorted((b for b in eligible if m.counts[b] < m.lo),
                            key=lambda b: (m.counts[b], b)):
                high = sorted(eligible, key=lambda x: (-m.counts[x], -m.sizes[x], x))
                caps: dict[int, dict[tuple[int, int, int], bool]] = {}     # y's topic caps, while y takes
                for x in high:
                    if m.counts[x] < m.counts[y] + 2 or m.counts[y] >= m.lo:
                        break
                    progress |= state.take_up(x, y, caps)


Key = tuple[bool, bool, int, int, int]
"""A replica's place in giving order (:func:`giving_keys`), its partition last."""


def giving_keys(m: Model, donor: int, t: int, items: list[int]) -> list[Key]:
    """The giving-order keys of ``items``, the partitions of topic ``t`` on ``donor``:
    followers first, then by how much giving it evens the topic, then the smallest."""
    items = sorted(items, key=lambda i: (m.reps[i][0] == donor, m.slot[i]))
    have = m.n(t, m.chain[donor][-1])
    brokers, total = m.members[0], m.topic_total[t]
    keys = []
    for j, i in enumerate(items):
        gain = (have - j) * brokers - total   # evenness won by giving it
        keys.append((m.reps[i][0] == donor, gain <= 0, -gain, m.slot[i], i))
    return keys


class Donor:
    """A broker's replicas in giving order for the leveling (:func:`giving_keys`), the racks
    each may go to (:meth:`Model.allowed_leaves`) and, per rack, the replicas that may go
    there, in that order; :meth:`Leveling.move` keeps it up to date, so a move costs the keys
    of one topic, not the broker's whole order."""

    __slots__ = ("allowed", "by_leaf", "key", "order", "topics", "version")

    def __init__(self, m: Model, x: int) -> None:
        self.version = m.version[x]
        self.topics: dict[int, list[int]] = {}
        for i in m.on(x):
            self.topics.setdefault(m.topic[i], []).append(i)
        self.order = sorted(k for t, items in self.topics.items() for k in giving_keys(m, x, t, items))
        self.key: dict[int, Key] = {}
        self.allowed: dict[int, frozenset[int]] = {}
        self.by_leaf: dict[int, list[Key]] = {}
        for k in self.order:
            i = k[-1]
            self.key[i] = k
            self.allowed[i] = leaves = m.allowed_leaves(i, x)
            for leaf in leaves:
                self.by_leaf.setdefault(leaf, []).append(k)

    def place(self, k: Key, add: bool) -> None:
        """Add (or remove) key ``k`` to the order and to the lists of the racks it may go to."""
        for keys in (self.order, *(self.by_leaf.setdefault(leaf, []) for leaf in self.allowed[k[-1]])):
            if add:
                insort(keys, k)
            else:
                del keys[bisect_left(keys, k)]

    def retopic(self, m: Model, x: int, t: int, gone: int | None = None, new: int | None = None) -> None:
        """``x`` gave partition ``gone`` or took ``new`` of topic ``t``: the keys of the topic
        on ``x`` change (its count there does), no other."""
        items = self.topics.setdefault(t, [])
        for i in items:
            self.place(self.key.pop(i), False)
        if gone is not None:
            items.remove(gone)
            del self.allowed[gone]
        if new is not None:
            items.append(new)
            self.allowed[new] = m.allowed_leaves(new, x)
        for k in giving_keys(m, x, t, items):
            self.key[k[-1]] = k
            self.place(k, True)

    def reracks(self, m: Model, x: int, i: int) -> None:
        """Another replica of partition ``i`` moved: the racks ``i``'s replica on ``x`` may go to."""
        k = self.key[i]
        self.place(k, False)
        self.allowed[i] = m.allowed_leaves(i, x)
        self.place(k, True)


class Leveling:
    """What :meth:`ReplicaCountGoal.level_counts` has read, so that it repeats no scan that
    found nothing while nothing the scan read has changed.

    A scan reads, of the broker ``x`` giving: its replicas in giving order and, per replica,
    the racks rack diversity lets it go to (:class:`Donor`); of a broker taking: its count and
    bytes and the topic counts of the rack-tree nodes above it (what the goals ranked before
    the count goal judge a move into it by: the topic caps, the capacities), and the leader
    budget. :meth:`Model.do_move` counts the moves that change them (``Model.version`` per
    broker, ``Model.rack_version`` per leaf rack). A scan that found nothing is repeated only
    where one of those changed: what else it would look at gives what it gave, nothing, so the
    plan is the one of the full scans. The racks found full for a topic (the topic goal's caps,
    :class:`~kafka_replica_assignor.planner.goals.topic_spread.FullRacks`) are left out of its
    offers until a move of the topic may open them."""

    __slots__ = ("donors", "found", "gave_nothing", "model", "pair_nothing", "rank", "topics")

    def __init__(self, m: Model, rank: int, topics: TopicSpreadGoal | None) -> None:
        self.model = m
        self.rank = rank
        self.topics = topics
        self.found = None if topics is None else FullRacks(topics)
        self.donors: dict[int, Donor] = {}
        self.gave_nothing: dict[int, tuple[int, int | None, dict[int, int]]] = {}
        self.pair_nothing: dict[tuple[int, int], tuple[int, int, int | None, int]] = {}

    def donor(self, x: int) -> Donor:
        """``x``'s :class:`Donor`, built again when a move of another goal changed ``x``."""
        d = self.donors.get(x)
        if d is None or d.version != self.model.version[x]:
            d = self.donors[x] = Donor(self.model, x)
        return d

    def move(self, i: int, x: int, y: int) -> None:
        """Move partition ``i``'s replica from ``x`` to ``y``; the donors of the brokers that
        held it or take it follow."""
        m = self.model
        others = [b for b in m.reps[i] if b != x]
        fresh = {b: self.donors[b] for b in (x, y, *others)
                 if b in self.donors and self.donors[b].version == m.version[b]}
        m.do_move(i, x, y)
        t = m.topic[i]
        if self.found is not None:
            self.found.moved(t, x, y)
        for b, d in fresh.items():
            if b == x:
                d.retopic(m, b, t, gone=i)
            elif b == y:
                d.retopic(m, b, t, new=i)
            elif i in d.key:        # (not when b is excluded: its replicas are not offered)
                d.reracks(m, b, i)
            d.version = m.version[b]

    def give_down(self, x: int, low: list[int]) -> bool:
        """``x`` (above ``hi``) gives each candidate to the first broker of ``low`` at least two
        replicas below it that fits; whether it gave any. Only the candidates that may go to a
        rack holding such a broker are offered, and when ``x``'s last scan found nothing and
        ``x`` is unchanged, only to racks changed since (the others refuse as they did)."""
        m = self.model
        counts = m.counts
        donor = self.donor(x)
        order = list(donor.order)
        last = self.gave_nothing.get(x)
        seen = last[2] if last is not None and last[0] == m.version[x] and last[1] == m.leader_budget else None
        ranked: dict[int, list[tuple[int, int, int]]] = {}   # leaf -> (count, position in low, broker)
        for pos, y in enumerate(low):
            ranked.setdefault(m.leaf[y], []).append((counts[y], pos, y))
        gave = False
        ids: set[int] | None = None
        for k in order:
            if ids is None:     # (again after a move: x holds fewer, racks changed)
                limit = counts[x] - 2
                ids = {key[-1] for leaf, brokers in ranked.items()
                       if brokers[0][0] <= limit and (seen is None or seen[leaf] != m.rack_version[leaf])
                       for key in donor.by_leaf.get(leaf, ())}
                if not ids:
                    break
            if k[-1] not in ids:
                continue
            if counts[x] <= m.hi or not m.budget_left():
                break
            if self.offer(x, k[-1], donor.allowed.get(k[-1], frozenset()), ranked):
                gave, ids = True, None
        if gave:
            self.gave_nothing.pop(x, None)
        else:
            self.gave_nothing[x] = (m.version[x], m.leader_budget, dict(m.rack_version))
        return gave

    def offer(self, x: int, i: int, leaves: frozenset[int], ranked: dict[int, list[tuple[int, int, int]]]) -> bool:
        """Partition ``i``'s replica on ``x`` to the first broker (in ``low`` order) of the racks
        it may go to that holds two replicas fewer than ``x`` and fits; whether it moved.
        ``ranked``: per rack, its brokers in ``low`` order with their counts then (a count only
        grows during a scan, so the first too high ends the rack)."""
        m = self.model
        counts = m.counts
        if x not in m.reps[i]:
            return False
        limit = counts[x] - 2
        t = m.topic[i]
        near: list[tuple[int, int]] = []
        looked = []
        found = self.found
        for leaf in (leaves if found is None else found.open(t, x, leaves)):
            brokers = ranked.get(leaf, ())
            if not brokers or brokers[0][0] > limit:
                continue
            looked.append(leaf)
            for c, pos, y in brokers:
                if c > limit:
                    break
                near.append((pos, y))
        near.sort()
        for _, y in near:
            if counts[y] <= limit and m.fits(i, x, y, self.rank, leaf_known=True):
                self.move(i, x, y)
                return True
        if found is not None:
            found.look(t, x, looked)    # each rack looked at once per topic and move of it
        return False

    def take_up(self, x: int, y: int, caps: dict[int, dict[tuple[int, int, int], bool]]) -> bool:
        """``y`` (below ``lo``) takes ``x``'s candidates in order while ``x`` holds two replicas
        more; whether it took any. A pair that found nothing is not scanned again while
        neither broker changed, nor (when a candidate got as far as the move check) the
        topic counts above ``y``. ``caps``: per topic, the topic goal's caps for a replica
        into ``y`` by what they depend on (:meth:`TopicSpreadGoal.caps_key`), while ``y``
        takes: a move into ``y`` changes its topic's only."""
        m = self.model
        stamp = (m.version[x], m.version[y], m.leader_budget)
        last = self.pair_nothing.get((x, y))
        if last is not None and last[:3] == stamp and last[3] in (-1, m.rack_version[m.leaf[y]]):
            return False
        took = read = False
        topics = self.topics
        where = topics.caps_key(x, m.leaf[y]) if topics is not None else None
        for k in list(self.donor(x).by_leaf.get(m.leaf[y], ())):
            if m.counts[x] < m.counts[y] + 2 or not m.budget_left():
                break
            i = k[-1]
            if x not in m.reps[i]:
                continue
            read = True
            t = m.topic[i]
            known = caps.setdefault(t, {})
            fit = known.get(where) if where is not None else None
            if fit is False:
                continue
            if not m.fits(i, x, y, self.rank, leaf_known=True):
                if fit is None and topics is not None and where is not None:
                    known[where] = topics.caps_ok(t, x, y)
                continue
            self.move(i, x, y)
            took = True
            caps.pop(t, None)
        if took:
            self.pair_nothing.pop((x, y), None)
        else:
            self.pair_nothing[(x, y)] = (*stamp, m.rack_version[m.leaf[y]] if read else -1)
        return took


def spread(fig: Figures) -> str:
    """A figure's replicas per alive broker as ``min-max``."""
    s = fig.replicas_spread
    return f"{s.min}-{s.max}"
