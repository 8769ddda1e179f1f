"""The shared working state of the replica goals: one indexed model every goal reads and moves.

Goals (:mod:`kafka_replica_assignor.planner.goals`) never keep their own copy of the cluster: they read this model and
change it only through :meth:`Model.do_move`, which keeps every index up to date. The model is
mutable and indexed for speed inside one planning run; what leaves the planner is a new value
(:meth:`kafka_replica_assignor.planner.plan.Working.plan`).

Goals
    Answer the questions every goal asks, each in ``O(depth)`` or a binary search: how many
    replicas of topic ``t`` a rack-tree node holds (:meth:`Model.n`), its cap
    (:meth:`Model.cap`), the racks a replica may go to (:meth:`Model.allowed_leaves`), whether a
    move keeps the hard rules (:meth:`Model.fits`), a broker's replica nearest a wanted size.

Constraints
    - Only usable partitions (every replica on an eligible broker) are indexed; partitions out of
      scope (``Working.frozen``) and excluded brokers' replicas are counted but never offered.
    - :meth:`Model.fits` is the conjunction of the ``accepts`` of the goals before the one asking
      (scope, rack diversity, capacity, topic caps), written once, inline, for speed; a test
      checks it against the goals' own ``accepts`` on random moves.

Algorithm
    Per-topic counters for every node of the rack tree (``ncount[t * stride + node]``); per
    broker its usable partitions as sorted *slot keys* ``size * P + rank``; per leaf rack a heap
    of ``load_key`` entries (pushed on every change, stale ones dropped when popped); all brokers
    and each rack's brokers sorted by bytes.

Example
    Brokers 1, 2 in rack a and 3 in rack b, ``t-0 [1, 3]``: nodes are 0 (root), 1 (rack a),
    2 (rack b), 3, 4, 5 (brokers 1, 2, 3); ``n(t, 1) = 1``, ``n(t, 2) = 1``; moving ``t-0``'s
    replica from 1 to 2 keeps rack a's count and fits; from 3 to 2 would leave rack b and is
    refused by :meth:`Model.allowed_leaves` (diversity would drop).
"""

from __future__ import annotations

import heapq
from bisect import bisect_left, insort
from fractions import Fraction

from kafka_replica_assignor.planner.bands import band, byte_band
from kafka_replica_assignor.planner.plan import MoveKind, Working


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
        "allowed_cache", "blo", "bhi", "budget", "by_bytes", "capacity", "chain", "counts", "forced",
        "heaps", "held", "hi", "leader_budget", "leaf", "leaf_bytes", "leaf_chain", "leaf_members", "level",
        "fill", "lo", "mean", "members", "moved", "ncount", "nodes", "order", "parent", "parts", "pre",
        "pre_bytes", "reps", "sized", "size", "sizes", "slot", "stride", "targets", "threshold", "topic",
        "topic_name", "topic_parts", "topic_total", "tree", "work",
    )

    def __init__(self, work: Working, threshold: Fraction, budget: int | None,
                 leader_budget: int | None, pre: dict[int, int], pre_bytes: dict[int, int]) -> None:
        self.work = work
        self.threshold = threshold
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
        # nodes: 0 the root, 1 + k rack key k, then one per eligible broker
        eligible = work.eligible
        depth = self.tree.depth
        first_broker = 1 + len(self.tree.names)
        self.nodes = first_broker + len(eligible)
        self.chain: dict[int, tuple[int, ...]] = {}
        self.members = [0] * self.nodes
        self.parent = [0] * self.nodes
        self.level = [0] * self.nodes
        self.leaf: dict[int, int] = {}
        self.leaf_members: dict[int, list[int]] = {}
        self.leaf_chain: dict[int, tuple[int, ...]] = {}
        for pos, b in enumerate(eligible):
            keys = self.tree.keys[b] if depth else ()
            self.chain[b] = (0, *(1 + k for k in keys), first_broker + pos)
            for level, node in enumerate(self.chain[b]):
                self.members[node] += 1
                self.level[node] = level
                if level:
                    self.parent[node] = self.chain[b][level - 1]
            self.leaf[b] = keys[-1] if keys else -1
            self.leaf_members.setdefault(self.leaf[b], []).append(b)
            self.leaf_chain[self.leaf[b]] = self.chain[b][:-1]
        self.capacity = {b.id: b.capacity_bytes for b in work.snapshot.brokers
                         if b.id in work.eligible_set and b.capacity_bytes is not None}
        # topics, totals and per-node counters (usable partitions only)
        names: dict[str, int] = {}
        for i in work.order:                  # numbered in name order, whatever the input order
            names.setdefault(parts[i].topic, len(names))
        self.topic = [names[p.topic] for p in parts]
        self.topic_total = [0] * len(names)
        self.topic_parts: list[list[int]] = [[] for _ in names]
        self.stride = self.nodes
        self.ncount: dict[int, int] = {}
        held: dict[int, list[int]] = {b: [] for b in eligible}
        groups = self.tree.groups(eligible)
        self.forced: dict[int, int] = {}    # topic * (depth + 2) + level -> partitions spanning every group
        self.counts = work.counts()
        self.sizes = work.byte_counts()
        usable = work.eligible_set
        ncount, chain, topic, slot = self.ncount, self.chain, self.topic, self.slot
        get = ncount.get
        frozen, excluded = work.frozen, work.excluded
        self.topic_name = list(names)
        for i in work.order:
            r = self.reps[i]
            t = topic[i]
            self.topic_total[t] += len(r)
            if not usable.issuperset(r):   # an unrepaired partition cannot be reassigned
                continue
            movable = i not in frozen
            if movable:
                self.topic_parts[t].append(i)
            for level, g in enumerate(groups, 1):
                if len(r) >= g:
                    key = t * (depth + 2) + level
                    self.forced[key] = self.forced.get(key, 0) + 1
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
        self.lo = self.hi = self.blo = self.bhi = self.mean = self.fill = 0

    # -- helpers -------------------------------------------------------------------------
    def budget_left(self, extra: int = 0) -> bool:
        return self.budget is None or self.moved + extra < self.budget

    def n(self, t: int, node: int) -> int:
        return self.ncount.get(t * self.stride + node, 0)

    def cap(self, t: int, node: int, parent: int, parent_count: int) -> int:
        m = self.members[node]
        share = -(-self.topic_total[t] * m // self.members[0])
        even = -(-parent_count * m // self.members[parent])
        spanning = self.forced.get(t * (self.tree.depth + 2) + self.level[node], 0)
        return max(share, even, spanning) + 1

    def caps_ok(self, t: int, source: int, destination: int) -> bool:
        """After moving a replica of topic ``t`` from ``source`` to ``destination``, every node
        on the destination's side (below the lowest common node) is within the topic's cap."""
        cs, cd = self.chain[source], self.chain[destination]
        d = 1
        while cs[d] == cd[d]:
            d += 1
        for level in range(d, len(cd)):
            node, parent = cd[level], cd[level - 1]
            parent_count = self.n(t, parent) + (1 if level - 1 >= d else 0)
            if self.n(t, node) + 1 > self.cap(t, node, parent, parent_count):
                return False
        return True

    def over_cap(self, t: int, node: int, parent: int) -> int:
        return self.n(t, node) - self.cap(t, node, parent, self.n(t, parent))

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

    def may_take(self, b: int) -> bool:
        """Whether the scope lets broker ``b`` take replicas (not excluded; one of the added)."""
        work = self.work
        return b not in work.excluded and (not work.takers or b in work.takers)

    def leader_ok(self, i: int, source: int) -> bool:
        return self.reps[i][0] != source or self.leader_budget is None or self.leader_budget > 0

    def fits(self, i: int, source: int, destination: int, *, caps: bool = True,
             leaf_known: bool = False, returning: bool = False) -> bool:
        """May partition ``i``'s replica on ``source`` move to ``destination`` (hard rules, and
        the topic caps unless ``caps`` is false)? ``leaf_known``: the destination's rack is one
        of :meth:`allowed_leaves` already. ``returning``: the destination held the replica
        before the plan, so only its exclusion (not the added-brokers rule) stops it."""
        scoped = destination not in self.work.excluded if returning else self.may_take(destination)
        if destination in self.reps[i] or not scoped or not self.leader_ok(i, source):
            return False
        if not leaf_known and self.leaf[destination] not in self.allowed_leaves(i, source):
            return False
        limit = self.capacity.get(destination)
        if limit is not None and self.sizes[destination] + self.size[i] > limit:
            return False
        return not caps or self.caps_ok(self.topic[i], source, destination)

    def do_move(self, i: int, source: int, destination: int) -> None:
        reps = self.reps[i]
        slot = reps.index(source)
        if slot == 0 and self.leader_budget is not None:
            self.leader_budget -= 1
        reps[slot] = destination
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
        key = self.slot[i]
        gave = self.held[source]
        del gave[bisect_left(gave, key)]
        insort(self.held[destination], key)
        if self.heaps:
            for b in (source, destination):
                heapq.heappush(self.heaps[self.leaf[b]], self.load_key(b))
        self.work.record(i, source, destination, MoveKind.REPLICA)
        self.moved += 1

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
    def set_bands(self) -> None:
        """The count band ``[lo, hi]``, the byte band ``[blo, bhi]`` and the mean bytes
        (:mod:`kafka_replica_assignor.planner.bands`)."""
        eligible = self.work.eligible
        total_bytes = sum(self.sizes.values())
        self.lo, self.hi = band(sum(self.counts.values()), len(eligible), self.threshold)
        self.blo, self.bhi = byte_band(total_bytes, len(eligible), self.threshold, max(self.size, default=0))
        self.mean = total_bytes // len(eligible)
        # what receivers fill up to: the band's bottom when the bytes missing below the band
        # are at least those above it (any byte a broker takes beyond the bottom is then a
        # byte the bound does not ask for), else the mean (the surplus must land somewhere)
        below = sum(max(0, self.blo - s) for s in self.sizes.values())
        above = sum(max(0, s - self.upper(b)) for b, s in self.sizes.items())
        self.fill = self.blo if below >= above else self.mean

    def set_targets(self) -> None:
        """Each broker's count target: clamped into ``[lo, hi]``, the difference with the total
        spread by :func:`water_fill`; the receivers' heaps rebuilt."""
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
