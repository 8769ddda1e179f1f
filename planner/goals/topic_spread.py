"""Topic spread: no rack-tree node holds more replicas of a topic than its cap.

Goals
    A node ``g`` of the rack tree (a data centre, a rack, a broker) holds at most
    ``cap(t, g) = E(t, g) + 1`` replicas of topic ``t``. The *even share* ``E`` is taken down
    the tree from the root, ``E(t, root) = R_t`` (the topic's replicas): a node's share is split
    over its children in proportion to their eligible brokers ``m_g``, each child within

        ``S_t(g) <= E(t, g) <= M_t(g)``

    where, over the topic's partitions that can be repaired, ``S_t(g)`` counts those with at
    least as many replicas as there are groups at ``g``'s level (full rack diversity puts one of
    each in every group; 0 for brokers) and ``M_t(g)`` is the most full diversity lets one group
    hold (one replica of each partition with no more replicas than groups, ``r - G + 1`` of one
    with more; a broker holds one of each). A child held at a bound leaves the rest to its
    siblings (water filling), and shares are rounded up. A big rack that may hold one replica
    per partition gives the rest of its proportional share to the small ones; a small rack that
    must hold one of every partition keeps them. A cap is a number of the cluster and the topic,
    never of the plan: one move is checked on its own, and the exact program's rows are linear.
    Distance: the replicas above the caps, summed over topics and nodes.

Constraints
    - Ranks after the hard rules and rack diversity (a diversity repair may push a topic above
      its cap), before replica counts and bytes: their moves never push a topic above its cap
      (:meth:`TopicSpreadGoal.accepts`; a swap of two topics checks both).

Algorithm
    A topic above its cap at a node gives replicas, from the broker of the node holding the
    most of it, to a broker outside the node (:func:`kafka_replica_assignor.planner.goals.search.receiver`, mode
    ``TOPIC``): below its count target first, then not pushed above the byte band, then holding
    the fewest of the topic. The replica is the smallest follower, or, when the receiver is
    below its count target and both sides want bytes moved, the one nearest that size (the
    nearest that fits, asked nearest first). Where a topic's brokers above its cap must shed
    more than the brokers below their count target may take of it within the caps, its racks
    shed first, then its brokers, the one whose smallest follower is largest first
    (:meth:`TopicSpreadGoal.dearest_first`): what those brokers cannot take lands where no
    bytes were asked for. A shed that no broker has the capacity for is a swap with a replica
    of another topic of about its size (:meth:`TopicSpreadGoal.swap_out`). A search that finds
    nothing marks the racks where
    no broker may take the topic from that giver within the caps (:class:`FullRacks`: the same
    for every replica of the topic, and for every giver whose path in the rack tree parts from
    the rack's at the same level); the topic's other replicas are searched for in the other
    racks only, until a move of the topic lowers a count the verdict read. Exact
    program: ``sum(x[p, b] for p of t, b under g) <= cap(t, g)`` where the topic could exceed
    it. Bound: a broker above a topic's cap gives at least that many of the topic's replicas,
    its smallest (:mod:`kafka_replica_assignor.planner.solving.bound` combines it with the count band's own),
    and what the brokers below the byte band cannot take within their caps arrives elsewhere
    (its row 8).

Example
    Topic x with 12 replicas on 6 brokers without racks: ``E = ceil(12 / 6) = 2``, cap 3; broker
    1 holding 5 gives two of its followers of x to the emptiest brokers holding the fewest of x.
    With racks ``a`` (4 brokers) and ``b`` (2 brokers) and 6 partitions of RF 2: every
    partition has one replica in each rack (``S = M = 6``), so each rack's share is 6 (rack
    ``a``'s proportional 8 is above what it may hold), each broker of ``b`` ``E = 3`` (cap 4)
    and of ``a`` ``E = ceil(6 / 4) = 2`` (cap 3).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Iterable
from itertools import chain, groupby, islice
from operator import itemgetter
from typing import TYPE_CHECKING, Any

from kafka_replica_assignor.cluster.snapshot import ClusterSnapshot
from kafka_replica_assignor.planner.goals.goal import BoundProgram, ExactProgram, Goal, ReportView, Target, blame
from kafka_replica_assignor.planner.goals.model import Layout
from kafka_replica_assignor.planner.goals.search import NEAR, TOPIC, receiver
from kafka_replica_assignor.planner.racks import RackTree

if TYPE_CHECKING:
    from kafka_replica_assignor.planner.plan import Working
    from kafka_replica_assignor.planner.request import PlanRequest

SWAP_TRIES = 4      # givers, followers per giver and brokers per follower a shed's swap tries
SWAP_LOOK = 32      # the emptiest brokers it looks at for them
TOPIC_CAP = "E(t, node) + 1, E the topic's even share down the rack tree"


class TopicCaps:
    """``cap(t, node)`` of the module doc over a :class:`~kafka_replica_assignor.planner.goals.model.Layout`, memoised
    (a cap depends on the node's ancestors only). The shares are kept per topic and parent node,
    one number when its children share alike (the brokers of a rack do), else one per child in
    ``children`` order: a number per topic and broker would be most of the planner's memory on
    the largest clusters."""

    __slots__ = ("capped", "depth", "layout", "memo", "position", "stride")

    def __init__(self, layout: Layout, depth: int) -> None:
        self.layout = layout
        self.depth = depth
        self.stride = layout.nodes
        self.memo: dict[int, int | tuple[int, ...]] = {}     # t * stride + parent -> its children's shares
        self.position = [0] * layout.nodes      # a node's place among its parent's children
        for children in layout.children.values():
            for k, child in enumerate(children):
                self.position[child] = k
        self.capped: dict[int, int] = {}     # t * stride + node -> cap, the hot path's own memo

    def share(self, t: int, node: int) -> int:
        """``E(t, node)`` (module doc): the parent's share water-filled over its children."""
        lay = self.layout
        if node == 0:
            return lay.total[t]
        up = lay.parent[node]
        key = t * self.stride + up
        hit = self.memo.get(key)
        if hit is None:
            filled = self.fill(t, up)
            shares = tuple(filled[child] for child in lay.children[up])
            hit = self.memo[key] = shares[0] if shares.count(shares[0]) == len(shares) else shares
        return hit if isinstance(hit, int) else hit[self.position[node]]

    def fill(self, t: int, up: int) -> dict[int, int]:
        """The shares of ``up``'s children: ``E(t, up)`` over them in proportion to their brokers,
        each within its bounds (at least what full diversity puts in it, at most what it may
        hold); a child held at a bound leaves the rest to the others (water filling)."""
        lay, stride = self.layout, self.depth + 2
        children = lay.children[up]
        level = lay.level[children[0]]
        low = lay.spanning.get(t * stride + level, 0) if level <= self.depth else 0
        high = lay.most.get(t * stride + level, 0)
        total = self.share(t, up)
        fixed: dict[int, int] = {}
        while True:
            free = [c for c in children if c not in fixed]
            weight = sum(lay.members[c] for c in free)
            if not free or not weight:
                break
            rest = max(0, total - sum(fixed.values()))
            new = {}
            for c in free:
                even = -(-rest * lay.members[c] // weight)
                if even < low:
                    new[c] = low
                elif even > high:
                    new[c] = high
            if not new:
                fixed.update({c: -(-rest * lay.members[c] // weight) for c in free})
                break
            fixed.update(new)
        return fixed

    def cap(self, t: int, node: int) -> int:
        key = t * self.stride + node
        hit = self.capped.get(key)
        if hit is None:
            hit = self.capped[key] = self.share(t, node) + 1
        return hit

    def broker_caps(self, topics: Any, positions: Any) -> Any:
        """The caps of many (topic, broker) pairs at once: ``topics`` and ``positions`` (in the
        eligible brokers) as numpy arrays; the same numbers as :meth:`cap`."""
        import numpy as np  # the planner extra, loaded when planning

        lay = self.layout
        ups = np.asarray(lay.parent, dtype=np.int64)[positions + lay.first_broker]
        pairs, inverse = np.unique(topics * self.stride + ups, return_inverse=True)
        # the brokers of one rack share its share alike (the same weight and bounds)
        values = [self.cap(t, lay.children[up][0]) for t, up in (divmod(pair, self.stride) for pair in pairs.tolist())]
        return np.asarray(values, dtype=np.int64)[inverse]


class FullRacks:
    """The racks a search found full for a topic (:meth:`TopicSpreadGoal.full`), so that the
    search of another replica of the topic leaves them out: per topic, by
    :meth:`TopicSpreadGoal.caps_key`, whether the rack was full when looked at. A search over a
    full rack can only find nothing, so leaving it out changes no result. :meth:`moved` forgets
    what a move of the topic may change: a rack found full reopens only when a count it read
    drops, one found open may fill when one rises. ``takes``: the brokers the search looks at
    (all when None); a set that may only shrink while the memo is used."""

    __slots__ = ("goal", "known", "takes")

    def __init__(self, goal: TopicSpreadGoal, takes: Callable[[int], bool] | None = None) -> None:
        self.goal = goal
        self.takes = takes
        self.known: dict[int, dict[tuple[int, int, int], bool]] = {}

    def open(self, t: int, x: int, leaves: Iterable[int]) -> list[int]:
        """Of ``leaves``, those not found full for a replica of ``t`` from ``x``."""
        known = self.known.get(t)
        if not known:
            return list(leaves)
        key = self.goal.caps_key
        return [leaf for leaf in leaves if not known.get(key(x, leaf))]

    def look(self, t: int, x: int, leaves: Iterable[int]) -> None:
        """Find out, once, whether each of ``leaves`` is full for a replica of ``t`` from ``x``
        (after a search there found nothing)."""
        known = self.known.setdefault(t, {})
        goal = self.goal
        for leaf in leaves:
            key = goal.caps_key(x, leaf)
            if key not in known:
                known[key] = goal.full(t, x, leaf, self.takes)

    def moved(self, t: int, source: int, destination: int) -> None:
        """A replica of ``t`` moved from ``source`` to ``destination``: forget what that may change."""
        known = self.known.get(t)
        if not known:
            return
        changed = self.goal.moved_counts
        drop = []
        for key, full in known.items():
            lower, higher = changed(source, destination, key)
            if lower or (higher and not full):
                drop.append(key)
        for key in drop:
            del known[key]


class TopicSpreadGoal(Goal):
    """Bring every topic under its cap at every node (module doc)."""

    name = "topic spread"
    key = "topics"
    target = True
    phase = "rounds"

    def __init__(self, work: Working, request: PlanRequest) -> None:
        super().__init__(work, request)
        self.layout = Layout.of(work)
        self.caps = TopicCaps(self.layout, work.tree.depth)
        self.found = FullRacks(self)
        """The racks :meth:`shed_topic`'s searches found full for the topic being repaired."""
        self.unswapped: set[int] = set()
        """The topics :meth:`swap_out` found nothing for in this round."""

    def cap(self, t: int, node: int) -> int:
        return self.caps.cap(t, node)

    def caps_ok(self, t: int, source: int, destination: int) -> bool:
        """After moving a replica of topic ``t`` from ``source`` to ``destination``, every node
        on the destination's side (below the lowest common node) is within the topic's cap (or
        no further above it than it was)."""
        m = self.m
        cs, cd = m.chain[source], m.chain[destination]
        d = 1
        while cs[d] == cd[d]:
            d += 1
        base = t * m.stride
        get = m.ncount.get
        capped = self.caps.capped
        for node in cd[d:]:
            key = base + node
            cap = capped.get(key)
            if cap is None:
                cap = self.caps.cap(t, node)
            if get(key, 0) >= cap:
                return False
        return True

    def accepts(self, i: int, source: int, destination: int) -> bool:
        return self.caps_ok(self.m.topic[i], source, destination)

    def caps_key(self, x: int, leaf: int) -> tuple[int, int, int]:
        """What :meth:`caps_ok` of a replica going from ``x`` to a broker of ``leaf`` depends on,
        but the topic and that broker: the leaf, the level below the lowest node common to ``x``
        and the leaf (the nodes checked from there down) and, in ``x``'s own rack, ``x``."""
        m = self.m
        cx, above = m.chain[x], m.leaf_chain[leaf]
        d = 1
        while d < len(above) and cx[d] == above[d]:
            d += 1
        return leaf, d, x if d == len(above) else -1

    def open_racks(self, t: int, sources: Iterable[int], leaves: Iterable[int],
                   at_cap: dict[int, bool] | None = None) -> dict[int, list[int]]:
        """Per broker of ``sources``, the racks of ``leaves`` where :meth:`caps_ok` may let a
        replica of topic ``t`` from it in: those with no node on their path below the node
        common with the source (the rack itself included) holding the topic at its cap or
        above, which refuses every broker of the rack. ``O(depth)`` per rack, each node's count
        read once, no scan of brokers (a data centre at the topic's cap shuts each of its racks).
        ``at_cap``: the nodes found at the cap or not, kept by a caller asking again for other
        sources while no count has changed."""
        m = self.m
        chain, leaf_chain = m.chain, m.leaf_chain
        base = t * m.stride
        get = m.ncount.get
        capped, cap = self.caps.capped, self.caps.cap
        at_cap = {} if at_cap is None else at_cap
        out: dict[int, list[int]] = {}
        for x in sources:
            cx = chain[x]
            kept = []
            for leaf in leaves:
                above = leaf_chain[leaf]
                d = 1
                while d < len(above) and cx[d] == above[d]:
                    d += 1
                for node in above[d:]:
                    full = at_cap.get(node)
                    if full is None:
                        key = base + node
                        limit = capped.get(key)
                        full = at_cap[node] = get(key, 0) >= (cap(t, node) if limit is None else limit)
                    if full:
                        break
                else:
                    kept.append(leaf)
            out[x] = kept
        return out

    def full(self, t: int, x: int, leaf: int, takes: Callable[[int], bool] | None = None) -> bool:
        """No broker of ``leaf`` (``x`` aside; of those ``takes`` names, when given) may take a
        replica of topic ``t`` from ``x`` within the caps, whatever the partition."""
        caps_ok = self.caps_ok
        return not any(y != x and (takes is None or takes(y)) and caps_ok(t, x, y) for y in self.m.leaf_members[leaf])

    def moved_counts(self, source: int, destination: int, key: tuple[int, int, int]) -> tuple[bool, bool]:
        """Whether a move of a replica from ``source`` to ``destination`` changes the topic
        counts :meth:`caps_ok` reads for the racks of ``key`` (:meth:`caps_key`): (lowers one, raises one)."""
        m = self.m
        leaf, d, _ = key
        above = m.leaf_chain[leaf]

        def under(b: int) -> bool:
            return m.leaf[b] == leaf or (d < len(above) and m.chain[b][d] == above[d])
        return under(source), under(destination)

    def accepts_swap(self, a: int, x: int, b: int, y: int) -> bool:
        m = self.m
        ta, tb = m.topic[a], m.topic[b]
        return ta == tb or (self.caps_ok(ta, x, y) and self.caps_ok(tb, y, x))

    def over_cap(self, t: int, node: int) -> int:
        return self.m.n(t, node) - self.caps.cap(t, node)

    def optimize(self) -> int:
        before = self.m.moved
        self.repair_topics()
        return self.m.moved - before

    def distance(self) -> int:
        return sum(excess for _, _, _, excess in self.above_cap())

    def explain(self) -> None:
        m = self.m
        work = m.work
        over = [(excess, t, node) for t, _, node, excess in self.above_cap()]
        if over:
            excess, t, node = max(over, key=lambda o: (o[0], -o[1], -o[2]))
            topic = m.topic_name[t]
            first_broker = m.nodes - len(work.eligible)
            where = (f"broker {work.eligible[node - first_broker]}" if node >= first_broker
                     else f"rack {m.tree.names[node - 1]}")
            work.notes.append(
                f"{len(over)} (topic, broker or rack) pair(s) above the topic's cap (worst: topic "
                f"{topic} on {where}, {excess} above): {m.why_left()}")

    def move_rows(self, program: Any) -> None:
        """A (topic, node) ends within the topic's cap, or no further above it than it is."""
        m = self.m
        for key, coefs in program.per_node().items():
            t, node = divmod(key, m.stride)
            now = m.ncount.get(key, 0)
            program.row(-float("inf"), float(max(self.cap(t, node), now) - now), coefs)

    def exact_rows(self, program: ExactProgram) -> None:
        lay = self.layout
        parts = program.work.snapshot.partitions
        by_topic: dict[int, list[int]] = {}
        for i in program.parts:
            by_topic.setdefault(lay.topic[i], []).append(i)
        under: dict[int, list[int]] = {}     # node -> broker positions (in program.brokers) below it
        for k, b in enumerate(program.brokers):
            for node in lay.chain[b][1:]:
                under.setdefault(node, []).append(k)
        for t, items in by_topic.items():
            for node, ks in under.items():
                cap = self.caps.cap(t, node)
                if sum(min(len(parts[i].replicas), len(ks)) for i in items) <= cap:
                    continue    # the topic cannot exceed it
                cols = [program.x[i][k] for i in items for k in ks]
                program.row(-float("inf"), cap, cols, [1.0] * len(cols), self.key)

    def bound_rows(self, program: BoundProgram) -> None:
        """A broker holding more of a topic than its cap gives at least the excess, and what the
        brokers below the byte band cannot take of it within their caps arrives elsewhere (rows
        5 and 8 of the bound's module doc); with rack diversity's rows, a broker takes at most its
        cap of each topic's partitions lacking its group (row 7)."""
        p: Any = program
        p.require_topic_drops(self.caps.broker_caps)
        if p.diverse:
            p.arrivals_within(self.caps.broker_caps)

    @staticmethod
    def targets(view: ReportView) -> tuple[Target, ...]:
        before, after = max(0, view.before.topic_excess), max(0, view.after.topic_excess)
        missed = (f"worst topic: {after} replica(s) on one broker above its cap {TOPIC_CAP} after "
                  "the plan, target 0: " + blame(view, True, "topic")) if after else ""
        return (Target(f"worst topic: replicas on one broker above its cap ({TOPIC_CAP})", before, after, 0,
                       not after, 2, missed),)

    def above_cap(self) -> list[tuple[int, int, int, int]]:
        """``(topic, level, node, excess)`` for every node above a topic's cap, sorted."""
        m = self.m
        over = []
        stride, cap = m.stride, self.caps.cap
        for key, count in m.ncount.items():
            if count < 3:       # a cap is at least 2: an even share of 1, plus one
                continue
            t, node = divmod(key, stride)
            if node:
                excess = count - cap(t, node)
                if excess > 0:
                    over.append((t, m.level[node], node, excess))
        over.sort()
        return over

    def repair_topics(self) -> None:
        m = self.m
        first_broker = m.nodes - len(m.work.eligible)
        self.found = FullRacks(self)
        self.unswapped = set()    # topics whose swap found nothing this round
        takers = [y for y in m.work.eligible if m.counts[y] < m.targets.get(y, m.counts[y])]
        for t, entries in groupby(self.above_cap(), key=itemgetter(0)):
            parts_on: dict[int, list[int]] = {}     # the topic's partitions per broker
            self.found.known.clear()    # (only the topic being repaired moves meanwhile)
            for i in m.topic_parts[t]:
                for b in m.reps[i]:
                    if b not in m.work.excluded:
                        parts_on.setdefault(b, []).append(i)
            for _, level, node, _ in self.dearest_first(list(entries), parts_on, first_broker, takers):
                if node >= first_broker:
                    x = m.work.eligible[node - first_broker]
                    on = {x: parts_on.get(x, [])}
                else:
                    on = {b: held for b, held in parts_on.items() if m.chain[b][level] == node}
                while self.over_cap(t, node) > 0 and m.budget_left():
                    moved = self.shed_topic(on, level, node)
                    if moved is None:
                        break
                    parts_on.setdefault(moved[1], []).append(moved[0])

    def dearest_first(self, entries: list[tuple[int, int, int, int]], parts_on: dict[int, list[int]],
                      first_broker: int, takers: list[int]) -> list[tuple[int, int, int, int]]:
        """One topic's nodes above its cap (:meth:`above_cap`) in the order they shed. The
        brokers below their count target (``takers``: those of the round's start still below
        it), where :func:`~kafka_replica_assignor.planner.goals.search.receiver` sends a shed
        first and which need the bytes anyway, take only the topic's caps' worth of it. When
        the brokers above the cap must shed more than that room: racks first (a rack's shedding
        may bring a broker within its cap), then the brokers by the size of the replica each
        sheds first (its smallest follower), largest first, so that the room goes to the sheds
        that would cost most elsewhere and the smallest go where their bytes are extra (the
        bound's row 8 counts the same). Otherwise as they come."""
        m = self.m
        brokers = [e for e in entries if e[2] >= first_broker]
        if len(brokers) < 2:
            return entries
        t, drops, room = entries[0][0], sum(e[3] for e in brokers), 0
        for y in takers:
            if m.counts[y] < m.targets[y]:
                node = m.chain[y][-1]
                room += max(0, self.cap(t, node) - m.n(t, node))
                if room >= drops:
                    return entries

        def first_shed(node: int) -> int:
            x = m.work.eligible[node - first_broker]
            held = parts_on.get(x)
            return m.size[min(held, key=self.shed_key(x))] if held else 0
        racks = [e for e in entries if e[2] < first_broker]
        return racks + sorted(brokers, key=lambda e: (-first_shed(e[2]), e[2]))

    def shed_key(self, x: int) -> Callable[[int], tuple[bool, int]]:
        """The order in which broker ``x`` offers its replicas of a topic to shed: followers
        first, then the smallest (slot key)."""
        reps, slot = self.m.reps, self.m.slot
        return lambda i: (reps[i][0] == x, slot[i])

    def shed_topic(self, on: dict[int, list[int]], level: int, node: int) -> tuple[int, int] | None:
        """Move one replica of a topic out of ``node`` (``on``: its partitions per broker of
        the node) to a broker outside it: from the broker holding the most of the topic, to
        the receiver of :func:`~kafka_replica_assignor.planner.goals.search.receiver` for its smallest follower; then, when
        both sides want bytes to move (:meth:`Model.want_pair`), the replica nearest that size
        which fits it too. Returns ``(partition, receiver)`` or None."""
        m = self.m
        found = self.found
        givers = sorted((b for b in on if on[b]), key=lambda b: (-len(on[b]), -m.load_key(b)[0], -m.sizes[b], b))
        for x in givers:
            cands = sorted(on[x], key=self.shed_key(x))
            for i in cands:
                t = m.topic[i]
                leaves = [leaf for leaf in found.open(t, x, m.allowed_leaves(i, x))
                          if level >= len(m.leaf_chain[leaf]) or m.leaf_chain[leaf][level] != node]
                y = receiver(m, i, x, leaves, mode=TOPIC, upto=self.rank + 1, outside=(level, node))
                if y is None:
                    found.look(t, x, leaves)
                    continue
                want = m.want_pair(x, y)
                if want:    # the nearest that fits (i does), nearest first: few are asked
                    lead = m.reps[i][0] == x
                    i = next(j for j in sorted((j for j in cands if (m.reps[j][0] == x) == lead),
                                               key=lambda j: (abs(m.size[j] - want), m.slot[j]))
                             if m.fits(j, x, y, self.rank + 1))
                on[x].remove(i)
                m.do_move(i, x, y)
                found.moved(t, x, y)
                return i, y
        return self.swap_out(on, givers, level, node)

    def swap_out(self, on: dict[int, list[int]], givers: list[int], level: int,
                 node: int) -> tuple[int, int] | None:
        """When no broker outside ``node`` may take one of the topic's replicas from it (its
        capacity full): a swap of one of the :data:`SWAP_TRIES` smallest followers of each of
        the first :data:`SWAP_TRIES` givers with a replica of another topic of about its size,
        on one of the first :data:`SWAP_TRIES` brokers, of the :data:`SWAP_LOOK` emptiest,
        outside the node whose caps let the topic in (the swap as a whole kept within the
        capacities and bands). Only with capacities (nothing else ranked before the topic caps
        refuses a receiver that a swap could satisfy), and once per topic and round when it
        finds nothing (the topic's counts change only by its own moves). Returns ``(partition,
        receiver)`` or None."""
        m = self.m
        t = m.topic[next(i for held in on.values() for i in held)] if any(on.values()) else -1
        if not m.capacity or t in self.unswapped:
            return None     # only a capacity stops a shed that a swap may carry
        upto = self.rank + 1
        for x in givers[:SWAP_TRIES]:
            for i in sorted(on[x], key=self.shed_key(x))[:SWAP_TRIES]:
                t = m.topic[i]
                takers = (y for _, y in islice(m.by_bytes, SWAP_LOOK)
                          if m.chain[y][level] != node and self.caps_ok(t, x, y) and m.unit_fits(i, x, y, upto))
                for y in islice(takers, SWAP_TRIES):
                    near = bisect_left(m.held[y], m.slot[i])
                    for key in m.held[y][max(0, near - NEAR):near + NEAR]:
                        b = m.partition(key)
                        if m.topic[b] != t and m.swap_fits(i, x, b, y, upto):
                            on[x].remove(i)
                            m.do_move(i, x, y)
                            m.do_move(b, y, x)
                            self.found.moved(t, x, y)
                            return i, y
        self.unswapped.add(t)
        return None


def worst_excess(snapshot: ClusterSnapshot, removed: frozenset[int] = frozenset()) -> int:
    """The report's figure: the most replicas of one topic on one eligible broker (alive, not
    removed) above the topic's cap there (0 when none is above), computed with numpy."""
    import numpy as np  # the planner extra, loaded when planning

    eligible = sorted(b.id for b in snapshot.brokers if b.alive and b.id not in removed)
    if not eligible:
        return 0
    tree = RackTree.of({b.id: b.rack for b in snapshot.brokers})
    layout = Layout.build(snapshot.partitions, eligible, tree)
    lists = [p.replicas for p in snapshot.partitions]
    rf = np.fromiter(map(len, lists), dtype=np.int64, count=len(lists))
    flat = np.fromiter(chain.from_iterable(lists), dtype=np.int64, count=int(rf.sum()))
    topic = np.repeat(np.asarray(layout.topic, dtype=np.int64), rf)
    ids = np.asarray(eligible, dtype=np.int64)
    pos = np.searchsorted(ids, flat).clip(0, len(ids) - 1)
    on = ids[pos] == flat
    codes, counts = np.unique(topic[on] * len(ids) + pos[on], return_counts=True)
    crowded = counts >= 3       # a cap is at least 2
    if not crowded.any():
        return 0
    t, k = codes[crowded] // len(ids), codes[crowded] % len(ids)
    excess = counts[crowded] - TopicCaps(layout, tree.depth).broker_caps(t, k)
    return max(0, int(excess.max()))
