"""The shared working state of the replica goals: one indexed model every goal reads and moves.

Goals (:mod:`kafka_replica_assignor.planner.goals`) never keep their own copy of the cluster: they read this model and
change it only through :meth:`Model.do_move`, which keeps every index up to date. The model is
mutable and indexed for speed inside one planning run; what leaves the planner is a new value
(:meth:`kafka_replica_assignor.planner.plan.Working.plan`).

Goals
    Answer the questions every goal asks, each in ``O(depth)`` or a binary search: how many
    replicas of topic ``t`` a rack-tree node holds (:meth:`Model.n`), the racks a replica may go
    to (:meth:`Model.allowed_leaves`), whether a move keeps every rule ranked before the goal
    asking (:meth:`Model.fits`), a broker's replica nearest a wanted size.

Constraints
    - Only usable partitions (every replica on an eligible broker) are indexed; partitions out of
      scope (``Working.frozen``) and excluded brokers' replicas are counted but never offered.
    - :meth:`Model.fits` holds no rule of its own beyond what every move must keep (no broker
      twice in a partition, the leader-change budget): it asks the ``accepts`` of the goals
      ranked before the one asking, in their order. The targets the searches read (the count
      and byte bands, the count targets) are set here by the goals that own them.

Algorithm
    Per-topic counters for every node of the rack tree (``ncount[t * stride + node]``); per
    broker its usable partitions as sorted *slot keys* ``size * P + rank``; per leaf rack a heap
    of ``load_key`` entries (pushed on every change, stale ones dropped when popped); all brokers
    and each rack's brokers sorted by bytes. Change counters, bumped by :meth:`Model.do_move`:
    ``version[b]`` for a move that changes broker ``b``'s replicas or the racks of a partition it
    holds, ``rack_version[leaf]`` for one that changes a count or bytes of a broker of the leaf
    rack or a topic count of a rack-tree node above it; a search that found nothing remembers
    them and is repeated only when one it read has changed. Per broker, once asked
    (:meth:`Model.reachable`), its replicas per leaf rack that rack diversity lets go there,
    sorted by slot key and kept by :meth:`Model.do_move`.

Example
    Brokers 1, 2 in rack a and 3 in rack b, ``t-0 [1, 3]``: nodes are 0 (root), 1 (rack a),
    2 (rack b), 3, 4, 5 (brokers 1, 2, 3); ``n(t, 1) = 1``, ``n(t, 2) = 1``; moving ``t-0``'s
    replica from 1 to 2 keeps rack a's count and fits; from 3 to 2 would leave rack b and is
    refused by :meth:`Model.allowed_leaves` (diversity would drop).
"""

from __future__ import annotations

import heapq
from bisect import bisect_left, insort
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from kafka_replica_assignor.cluster.snapshot import PartitionEntry
from kafka_replica_assignor.planner.plan import MoveKind, Working
from kafka_replica_assignor.planner.racks import RackTree

Check = Callable[[int, int, int], bool]
SwapCheck = Callable[[int, int, int, int], bool]


class Rule(Protocol):
    """What the model asks of a goal (:class:`kafka_replica_assignor.planner.goals.goal.Goal`)."""

    @property
    def key(self) -> str: ...

    @property
    def hard(self) -> bool: ...

    @property
    def refuses(self) -> bool: ...

    @property
    def judges_swaps(self) -> bool: ...

    def accepts(self, i: int, source: int, destination: int) -> bool: ...

    def accepts_swap(self, a: int, x: int, b: int, y: int) -> bool: ...

    def bind(self, model: Model, rank: int) -> None: ...


@dataclass(frozen=True, slots=True)
class Layout:
    """The rack tree's nodes and the topics of a working copy, numbered once for every face of
    the planner (the model's counters, the topic caps, the exact program, the bound).

    Nodes: 0 the root, ``1 + k`` rack key ``k``, then one per eligible broker (``first_broker +
    position``); ``chain[b]`` the nodes from the root down to broker ``b``; ``children[node]``.
    Topics: numbered in name order; ``topic[i]`` of partition ``i``, ``total[t]`` its replicas
    (every partition). Per topic and level (``t * (depth + 2) + level``, level ``depth + 1`` the
    brokers), over its partitions that can be repaired: ``spanning``, those with at least as many
    replicas as there are groups at that level (full diversity puts one in each group), and
    ``most``, the most replicas one group may hold with full diversity (one per partition when
    it has no more replicas than groups, ``r - G + 1`` else; one per partition on a broker)."""

    nodes: int
    first_broker: int
    chain: dict[int, tuple[int, ...]]
    members: list[int]
    parent: list[int]
    level: list[int]
    topic: list[int]
    topic_name: list[str]
    total: list[int]
    spanning: dict[int, int]
    most: dict[int, int]
    children: dict[int, tuple[int, ...]]

    @classmethod
    def of(cls, work: Working) -> Layout:
        """The layout of ``work`` (made once per working copy)."""
        cached = work.layout
        if isinstance(cached, Layout):
            return cached
        layout = cls.build(work.snapshot.partitions, work.eligible, work.tree)
        work.layout = layout
        return layout

    @classmethod
    def build(cls, parts: Sequence[PartitionEntry], eligible: Sequence[int], tree: RackTree) -> Layout:
        """The layout of partitions ``parts`` on the ``eligible`` brokers (sorted ids) of ``tree``."""
        depth = tree.depth
        first_broker = 1 + len(tree.names)
        nodes = first_broker + len(eligible)
        chain: dict[int, tuple[int, ...]] = {}
        members, parent, level = [0] * nodes, [0] * nodes, [0] * nodes
        for pos, b in enumerate(eligible):
            keys = tree.keys[b] if depth else ()
            chain[b] = (0, *(1 + k for k in keys), first_broker + pos)
            for lv, node in enumerate(chain[b]):
                members[node] += 1
                level[node] = lv
                if lv:
                    parent[node] = chain[b][lv - 1]
        names = {name: t for t, name in enumerate(sorted({p.topic for p in parts}))}   # whatever the input order
        topic = [names[p.topic] for p in parts]
        total = [0] * len(names)
        spanning: dict[int, int] = {}
        most: dict[int, int] = {}
        groups = (*tree.groups(eligible), len(eligible))      # the brokers are the deepest groups
        n = len(eligible)
        for i, p in enumerate(parts):
            rf = len(p.replicas)
            t = topic[i]
            total[t] += rf
            if rf <= n:
                for lv, g in enumerate(groups, 1):
                    key = t * (depth + 2) + lv
                    if rf >= g and lv <= depth:
                        spanning[key] = spanning.get(key, 0) + 1
                    most[key] = most.get(key, 0) + (1 if rf <= g else rf - g + 1)
        kids: dict[int, list[int]] = {}
        for node in range(1, nodes):
            if members[node]:
                kids.setdefault(parent[node], []).append(node)
        children = {node: tuple(sorted(set(k))) for node, k in kids.items()}
        return cls(nodes, first_broker, chain, members, parent, level, topic, list(names), total, spanning, most,
                   children)


def water_fill(counts: dict[int, int], members: list[int], targets: dict[int, int],
               delta: int) -> None:
    """Change the targets of ``members`` by ``delta`` in total, one unit at a time: raise the
    lowest target (the broker holding more first), or lower the highest (holding fewer first)."""
    if delta > 0:
        heap = [(targets[b], -counts[b], b) for b in members]
        heapq.heapify(heap)
        for _ in range(delta):
            t, c, b = heapq.heappop(heap)
            targets[b] = t + 1
            heapq.heappush(heap, (t + 1, c, b))
    elif delta < 0:
        down = [(-targets[b], counts[b], b) for b in members if targets[b] > 0]
        heapq.heapify(down)
        for _ in range(-delta):
            t, c, b = heapq.heappop(down)
            targets[b] = -t - 1
            if targets[b] > 0:
                heapq.heappush(down, (t + 1, c, b))


class Model:
    """The state of one balancing run: counts, bytes and per-topic counters per tree node.

    ``held[b]`` lists the usable partitions on broker ``b`` as sorted *slot keys*
    ``size * P + rank`` (``P`` partitions, ``rank`` the (topic, partition) position), so the
    replica of a broker nearest a wanted size is a binary search and a move is two list edits.
    ``heaps[leaf]`` holds ``load_key`` entries of the brokers of a leaf rack, pushed on every
    change and dropped when stale, so the emptiest receivers are found without a scan."""

    __slots__ = (
        "allowed_cache", "blo", "bhi", "budget", "by_bytes", "capacity", "chain", "checks", "counts",
        "goals", "heaps", "held", "hi", "leader_budget", "leaf", "leaf_bytes", "leaf_chain", "leaf_members",
        "leaves_under", "level", "fill", "lo", "mean", "members", "moved", "ncount", "nodes", "order", "parent",
        "parts", "pre", "pre_bytes", "rack_version", "reach", "reps", "sized", "size", "sizes", "slot", "stride",
        "swap_checks", "unit_checks", "targets", "topic", "topic_name", "topic_parts", "topic_total", "tree",
        "unleafed", "version", "work",
    )

    def __init__(self, work: Working, goals: Sequence[Rule], budget: int | None,
                 leader_budget: int | None, pre: dict[int, int], pre_bytes: dict[int, int]) -> None:
        self.work = work
        self.budget = budget
        self.leader_budget = leader_budget
        self.pre = pre
        self.pre_bytes = pre_bytes
        self.moved = 0
        self.reps = work.replicas
        self.tree = work.tree
        parts = work.snapshot.partitions
        self.parts = n_parts = len(parts)
        self.size = [p.size_bytes or 0 for p in parts]
        self.sized = any(p.size_bytes is not None for p in parts)
        self.order = work.order
        self.slot = [0] * n_parts       # size * P + rank: held lists sort by size, then name
        size = self.size
        for position, i in enumerate(work.order):
            self.slot[i] = size[i] * n_parts + position
        layout = Layout.of(work)
        eligible = work.eligible
        first_broker = layout.first_broker
        self.nodes = layout.nodes
        self.chain = layout.chain
        self.members = layout.members
        self.parent = layout.parent
        self.level = layout.level
        self.leaf: dict[int, int] = {}
        self.leaf_members: dict[int, list[int]] = {}
        self.leaf_chain: dict[int, tuple[int, ...]] = {}
        for b in eligible:
            keys = self.tree.keys[b] if self.tree.depth else ()
            self.leaf[b] = keys[-1] if keys else -1
            self.leaf_members.setdefault(self.leaf[b], []).append(b)
            self.leaf_chain[self.leaf[b]] = self.chain[b][:-1]
        del first_broker
        self.capacity: dict[int, int] = {}     # set by the capacity goal
        # per-node counters of every topic (usable partitions only)
        self.topic = layout.topic
        self.topic_name = layout.topic_name
        self.topic_total = layout.total
        self.topic_parts: list[list[int]] = [[] for _ in layout.topic_name]
        self.stride = self.nodes
        self.ncount: dict[int, int] = {}
        held: dict[int, list[int]] = {b: [] for b in eligible}
        self.counts = work.counts()
        self.sizes = work.byte_counts()
        usable = work.eligible_set
        ncount, chain, topic, slot = self.ncount, self.chain, self.topic, self.slot
        get = ncount.get
        frozen, excluded = work.frozen, work.excluded
        for i in work.order:
            r = self.reps[i]
            if not usable.issuperset(r):   # an unrepaired partition cannot be reassigned
                continue
            t = topic[i]
            movable = i not in frozen
            if movable:
                self.topic_parts[t].append(i)
            base = t * self.stride
            s = slot[i]
            for b in r:
                if movable and b not in excluded:
                    held[b].append(s)
                for node in chain[b]:
                    key = base + node
                    ncount[key] = get(key, 0) + 1
        for on_broker in held.values():
            on_broker.sort()
        self.held = held
        self.allowed_cache: dict[tuple[int, tuple[int, ...]], frozenset[int]] = {}
        self.targets: dict[int, int] = {}
        self.heaps: dict[int, list[tuple[int, int, int]]] = {}
        self.by_bytes = sorted((s, b) for b, s in self.sizes.items())
        self.leaf_bytes: dict[int, list[tuple[int, int]]] = {}
        for s, b in self.by_bytes:
            self.leaf_bytes.setdefault(self.leaf[b], []).append((s, b))
        self.lo = self.hi = self.blo = self.mean = self.fill = 0
        self.bhi = 1 << 62
        # change counters for the searches that remember what found nothing (do_move)
        self.version = dict.fromkeys(eligible, 0)
        self.rack_version = dict.fromkeys(self.leaf_members, 0)
        self.leaves_under: dict[int, list[int]] = {}      # rack-tree node -> the leaf racks below it
        for leaf, above in self.leaf_chain.items():
            for node in above[1:]:
                self.leaves_under.setdefault(node, []).append(leaf)
        self.reach: dict[int, dict[int, list[int]]] = {}    # see :meth:`reachable`
        self.goals = list(goals)
        # per rank r: the accepts of every hard goal and of the goals ranked before r (and
        # without rack diversity's, for callers that looked the receiver's rack up already);
        # for swaps, the rules of single replicas (both moves) and the goals judging the pair
        self.checks: list[tuple[Check, ...]] = []
        self.unleafed: list[tuple[Check, ...]] = []
        self.unit_checks: list[tuple[Check, ...]] = []
        self.swap_checks: list[tuple[SwapCheck, ...]] = []
        for rank in range(len(self.goals) + 1):
            asked = [g for r, g in enumerate(self.goals) if g.refuses and (g.hard or r < rank)]
            self.checks.append(tuple(g.accepts for g in asked))
            self.unleafed.append(tuple(g.accepts for g in asked if g.key != "diversity"))
            self.unit_checks.append(tuple(g.accepts for g in asked if not g.judges_swaps))
            self.swap_checks.append(tuple(g.accepts_swap for g in asked if g.judges_swaps))
        for rank, goal in enumerate(self.goals):
            goal.bind(self, rank)

    # -- helpers -------------------------------------------------------------------------
    def budget_left(self, extra: int = 0) -> bool:
        return self.budget is None or self.moved + extra < self.budget

    def n(self, t: int, node: int) -> int:
        return self.ncount.get(t * self.stride + node, 0)

    def allowed_leaves(self, i: int, source: int) -> frozenset[int]:
        """Racks (leaves) a replica of partition ``i`` on ``source`` may move to, diversity
        kept at every level; its own rack always."""
        tree = self.tree
        if tree.depth == 0:
            return frozenset((-1,))
        others = [b for b in self.reps[i] if b != source]
        key = (self.leaf[source], tuple(sorted(self.leaf[b] for b in others)))
        hit = self.allowed_cache.get(key)
        if hit is not None:
            return hit
        src_keys = tree.keys[source]
        used = [{tree.keys[b][level] for b in others} for level in range(tree.depth)]
        allowed = set()
        for leaf, members in self.leaf_members.items():
            dst_keys = tree.keys[members[0]]
            if all(src_keys[lv] in used[lv] or dst_keys[lv] not in used[lv] for lv in range(tree.depth)):
                allowed.add(leaf)
        hit = self.allowed_cache[key] = frozenset(allowed)
        return hit

    def rank(self, key: str) -> int:
        """The rank of the goal named ``key`` among the goals of this run (``fits(..., rank + 1)``
        asks that goal too); past the last goal when it does not run."""
        return next((r for r, g in enumerate(self.goals) if g.key == key), len(self.goals))

    def goal(self, key: str) -> Rule | None:
        """The goal named ``key``, when it runs."""
        return next((g for g in self.goals if g.key == key), None)

    def leader_ok(self, i: int, source: int) -> bool:
        return self.reps[i][0] != source or self.leader_budget is None or self.leader_budget > 0

    def fits(self, i: int, source: int, destination: int, upto: int, *, leaf_known: bool = False) -> bool:
        """May partition ``i``'s replica on ``source`` move to ``destination``? Every hard goal
        and every goal ranked before ``upto`` accepts it (a goal asks with its own rank; 0: the
        hard rules only), the destination does not hold the partition, and the leader budget
        allows it. ``leaf_known``: the destination's rack is one of :meth:`allowed_leaves`
        already (rack diversity is not asked again)."""
        if destination in self.reps[i] or not self.leader_ok(i, source):
            return False
        for check in (self.unleafed if leaf_known else self.checks)[upto]:
            if not check(i, source, destination):
                return False
        return True

    def unit_fits(self, i: int, source: int, destination: int, upto: int) -> bool:
        """One side of a swap: the rules of single replicas (those that do not judge swaps as
        a whole) accept partition ``i``'s replica moving from ``source`` to ``destination``."""
        if destination in self.reps[i] or not self.leader_ok(i, source):
            return False
        return all(check(i, source, destination) for check in self.unit_checks[upto])

    def swap_fits(self, a: int, x: int, b: int, y: int, upto: int) -> bool:
        """May ``a`` move from ``x`` to ``y`` while ``b`` moves from ``y`` to ``x``? Both sides
        keep the rules of single replicas, and the goals of per-broker figures accept the net
        change (:meth:`kafka_replica_assignor.planner.goals.goal.Goal.accepts_swap`)."""
        if a == b or not self.unit_fits(a, x, y, upto) or not self.unit_fits(b, y, x, upto):
            return False
        if self.leader_budget is not None and (self.reps[a][0] == x) + (self.reps[b][0] == y) > self.leader_budget:
            return False
        return all(check(a, x, b, y) for check in self.swap_checks[upto])

    def do_move(self, i: int, source: int, destination: int) -> None:
        reps = self.reps[i]
        version = self.version
        for b in reps:
            version[b] += 1
        version[destination] += 1
        cs, cd = self.chain[source], self.chain[destination]
        d = 1
        while cs[d] == cd[d]:
            d += 1
        rack_version = self.rack_version
        if d < len(cs) - 1:     # the racks below the nodes whose topic counts change
            for node in (cs[d], cd[d]):
                for leaf in self.leaves_under[node]:
                    rack_version[leaf] += 1
        rack_version[self.leaf[source]] += 1
        rack_version[self.leaf[destination]] += 1
        key = self.slot[i]
        reach = self.reach
        if reach:       # the holders' reach changes with the partition's racks
            for b in reps:
                if b in reach and b not in self.work.excluded:
                    for leaf in self.allowed_leaves(i, b):
                        keys = reach[b][leaf]
                        del keys[bisect_left(keys, key)]
        slot = reps.index(source)
        if slot == 0 and self.leader_budget is not None:
            self.leader_budget -= 1
        reps[slot] = destination
        if reach:
            for b in reps:
                if b in reach and b not in self.work.excluded:
                    for leaf in self.allowed_leaves(i, b):
                        insort(reach[b].setdefault(leaf, []), key)
        w = self.size[i]
        self.counts[source] -= 1
        self.counts[destination] += 1
        for b, delta in ((source, -w), (destination, w)):
            if delta:
                for order in (self.by_bytes, self.leaf_bytes[self.leaf[b]]):
                    del order[bisect_left(order, (self.sizes[b], b))]
                    insort(order, (self.sizes[b] + delta, b))
                self.sizes[b] += delta
        base = self.topic[i] * self.stride
        for node in self.chain[source]:
            self.ncount[base + node] -= 1
        for node in self.chain[destination]:
            self.ncount[base + node] = self.ncount.get(base + node, 0) + 1
        gave = self.held[source]
        del gave[bisect_left(gave, key)]
        insort(self.held[destination], key)
        if self.heaps:
            for b in (source, destination):
                heapq.heappush(self.heaps[self.leaf[b]], self.load_key(b))
        self.work.record(i, source, destination, MoveKind.REPLICA)
        self.moved += 1

    def reachable(self, x: int, leaf: int) -> list[int]:
        """The slot keys (sorted) of the usable replicas on ``x`` that rack diversity lets go
        to ``leaf`` (:meth:`allowed_leaves`): built for ``x`` when first asked, then kept by
        :meth:`do_move`. Not to be changed by the caller."""
        per_leaf = self.reach.get(x)
        if per_leaf is None:
            per_leaf = self.reach[x] = {}
            for key in self.held[x]:
                for lf in self.allowed_leaves(self.partition(key), x):
                    per_leaf.setdefault(lf, []).append(key)
        return per_leaf.get(leaf, [])

    def partition(self, key: int) -> int:
        """The partition of a slot key."""
        return self.order[key % self.parts]

    def on(self, broker: int) -> list[int]:
        """The usable partitions on ``broker`` now, smallest first."""
        return [self.order[k % self.parts] for k in self.held[broker]]

    def load_key(self, b: int) -> tuple[int, int, int]:
        """Lower is emptier: replicas beyond target, then bytes."""
        return self.counts[b] - self.targets.get(b, self.counts[b]), self.sizes[b], b

    def want(self, x: int) -> int:
        """The size of replica that ``x`` best gives next: its bytes above the mean shared over
        the replicas it still has to give; 0 (the smallest) without either."""
        excess = self.sizes[x] - self.mean
        give = self.counts[x] - self.targets[x]
        if not self.sized or excess <= 0 or give <= 0:
            return 0
        return excess // give

    def nearest(self, keys: list[int], want: int) -> int:
        """The position in sorted slot ``keys`` of the size nearest ``want`` (the smaller on a tie)."""
        k = bisect_left(keys, want * self.parts)
        if k == len(keys) or (k and want - keys[k - 1] // self.parts <= keys[k] // self.parts - want):
            return k - 1
        return k


    # -- bands and targets ---------------------------------------------------------------
    def set_targets(self) -> None:
        """Each broker's count target: clamped into ``[lo, hi]`` (the replica-count goal's band),
        the difference with the total spread by :func:`water_fill`; the receivers' heaps rebuilt."""
        counts = self.counts
        self.targets = {b: min(max(c, self.lo), self.hi) for b, c in counts.items()}
        water_fill(counts, self.work.eligible, self.targets,
                   sum(counts.values()) - sum(self.targets.values()))
        self.heaps = {leaf: [self.load_key(b) for b in members] for leaf, members in self.leaf_members.items()}
        for heap in self.heaps.values():
            heapq.heapify(heap)

    def upper(self, b: int) -> int:
        """The most bytes ``b`` may hold: the band's top, or its capacity when lower."""
        limit = self.capacity.get(b)
        return self.bhi if limit is None else min(self.bhi, limit)

    def off_band(self, b: int) -> int:
        """Bytes ``b`` is outside the band (above its capacity counts as above)."""
        return max(self.sizes[b] - self.upper(b), self.blo - self.sizes[b])

    def room(self, y: int) -> int:
        """The bytes per replica ``y`` may still take and fill its count target in the band:
        up to the band's bottom while below it when receivers fill to the bottom (``fill``,
        :meth:`set_bands`), else up to its top."""
        top = self.upper(y)
        if self.sizes[y] < self.fill == self.blo:
            top = min(top, self.blo)
        return (top - self.sizes[y]) // max(1, self.targets[y] - self.counts[y])

    def want_pair(self, x: int, y: int) -> int:
        """The replica size best moved from ``x`` to ``y`` when ``x`` holds bytes above the mean
        and ``y`` is below its count target and ``fill`` (:meth:`set_bands`): the smallest of
        their excess (to the mean) and deficit (to ``fill``) per replica still to give or take
        and :meth:`room`; 0 (the smallest) otherwise."""
        if not self.sized:
            return 0
        excess, deficit = self.sizes[x] - self.mean, self.fill - self.sizes[y]
        room = self.targets[y] - self.counts[y]
        if excess <= 0 or deficit <= 0 or room <= 0:
            return 0
        return min(excess // max(1, self.counts[x] - self.targets[x]), deficit // room, self.room(y))

    def why_left(self) -> str:
        """Why a soft target is left unreached, for the goals' notes."""
        if self.budget is not None and not self.budget_left():
            return "the move budget is spent"
        return ("the heuristic found no move or swap for them that keeps rack diversity, the topic "
                "caps and the capacities (a search, not a proof that none exists)")

    def note_outside(self, label: str, values: dict[int, int], low: int, high: int) -> None:
        """One note per rack on the brokers whose ``values`` are outside ``[low, high]``."""
        by_leaf: dict[int, list[int]] = {}
        for b in self.work.eligible:
            if not low <= values[b] <= high:
                by_leaf.setdefault(self.leaf[b], []).append(b)
        for leaf, brokers in sorted(by_leaf.items()):
            where = f"rack {self.tree.names[leaf]}: " if leaf >= 0 else ""
            held = [values[b] for b in brokers]
            self.work.notes.append(
                f"{where}broker(s) {', '.join(map(str, brokers))} hold {min(held)}-{max(held)} "
                f"{label}, outside the band [{low}, {high}]: {self.why_left()}")

