"""Replica balance (KIP-166): even replicas, bytes and topics per broker, with the fewest bytes moved.

Goals, in this order (each as far as the earlier ones allow)
    1. *Hard*: never two replicas of a partition on one broker; rack diversity never reduced at
       any level of the rack tree (:mod:`planner.racks`) and *repaired* where the racks allow (a
       partition with two replicas in one group while a group it could use has none); replicas
       on dead, unknown or forgotten brokers and placeholders repaired (:mod:`planner.repair`);
       a broker's ``capacity_bytes`` never exceeded.
    2. *Even*: every broker's replica count within ``[lo, hi]`` (``avg * (1 -+ threshold)``,
       ``[floor(avg), ceil(avg)]`` at threshold 0); when partitions carry ``size_bytes``, every
       broker's bytes within ``[blo, bhi]`` = ``mean * (1 -+ threshold)``, widened only where
       that band is provably out of reach: ``bhi`` is at least the largest partition (the
       broker holding it holds that much), and a band without a whole number in it (threshold
       0, a fractional mean) is ``[floor(mean), ceil(mean)]``; every topic spread evenly: a
       node ``g`` of the rack tree (a broker, a rack, a data centre) holds at most

           ``cap(t, g) = max(ceil(R_t * m_g / B), ceil(n_t(parent) * m_g / m_parent), S_t(g)) + 1``

       replicas of topic ``t``, where ``R_t`` is the topic's replicas, ``m_g`` the alive brokers
       under ``g``, ``B`` all alive brokers, ``n_t(parent)`` the topic's replicas under ``g``'s
       parent (the whole cluster for the top level; a broker's parent is its rack) and, for a
       rack node, ``S_t(g)`` the topic's partitions with at least as many replicas as there are
       groups at ``g``'s level (full diversity puts one of each in every group; 0 for brokers).
       The first term is the even share; the others are what rack diversity forces: a small
       rack holding one replica of every partition spreads that evenly over its brokers.
    3. *Leaders*: followers move before leaders, so that :mod:`planner.leader_balance` can then
       even the preferred leaders with few changes.
    4. *Cheap*: the fewest bytes moved (replica moves when sizes are unknown); the lower bounds
       are recorded in the plan (``bounds``) and shown in the report.

Constraints
    - A move never pushes a topic above its cap at the receiving node, nor a broker above its
      capacity, nor a broker out of the count band. A replica that comes back to a broker it
      left in the same plan is no move at all (chains collapse in :meth:`Working.plan`).
    - ``max_moves`` caps repairs plus moves (a swap is two moves); ``max_leader_changes`` stops
      moving leader replicas once that many preferred leaders changed.
    - Unsized partitions weigh one replica and no bytes; without any size the disk objective is
      the replica count.
    - Disks adding up to less than the bytes raise ``ValueError`` ("capacity infeasible"), and
      so does a broker left above its capacity ("capacity not met": packing replicas under
      capacities is NP-hard; the search is moves, swaps and two-move chains, step 6).

Algorithm
    Per-topic counters are kept for every node of the rack tree, so a move is checked in
    ``O(depth)``. Each broker's partitions are kept sorted by size (the replica nearest a wanted
    size is a binary search), and each rack has a heap of its brokers by load (replicas beyond
    target, then bytes), updated on every move: a receiver is found by merging the heaps of
    the racks a replica may go to, emptiest first, never by a scan of all brokers. *Wanted
    size*: a broker with bytes above the mean and replicas to give gives, per replica, its
    excess over the replicas still to give (the smallest replica otherwise), never more than
    the receiver can take and still fill its count inside the byte band.

    1. *Repair* dead, unknown and forgotten replicas (:func:`planner.repair.repair_working`).
    2. *Targets*: every count is clamped into ``[lo, hi]`` and the difference with the total is
       spread by water filling: ``sum(max(0, count - target))`` is the fewest count moves.
    3. *Diversity*: for a partition whose replicas span fewer groups at some level than they
       could, a replica of a doubled group (a follower, on the most loaded broker) moves to the
       least loaded broker of an unused group. A replica leaving a doubled group for a new one
       keeps every level's diversity.
    4. *Topics*: a topic above its cap at a node gives replicas, from the broker of the node
       holding the most of it, to a broker outside the node: below its count target first,
       then not pushed above the byte band, then holding the fewest of the topic (the best of
       the first few that fit). The replica is the smallest follower, or, when the receiver
       is below its count target and both sides want bytes moved, the one nearest that size.
    5. *Counts*: each broker above its target gives followers first, then replicas of the
       topics it holds most of (more than one above the topic's average, then above it), each
       time the one nearest its wanted size, to the broker below target holding the fewest of
       that topic among the first few emptiest that stay in the byte band. Brokers still
       outside the band then level with any broker at least two replicas away.
    6. *Bytes*: while a broker is outside the byte band (or above its capacity), the furthest
       out-of-band broker and the lightest (heaviest) brokers of its rack, then of all, kept in
       size-sorted lists, exchange bytes: a move when counts allow, or
       a swap of a large replica for a smaller one (counts unchanged) whose difference is
       closest to what evens the pair (at least the out-of-band broker's distance to the band,
       as far as the partner stays in it: a rack whose partitions cannot leave it may hold more
       than the cluster's mean, so its brokers fill to the band's top, not to the mean), found
       by binary search in size-sorted replica lists. A broker above its capacity also pairs
       with the brokers with the most room left, which may then leave the count and byte bands
       (capacity is hard, the bands are not); when no transfer fits, one of its largest
       replicas goes to a broker without the room after one replica of that broker moves to
       a third with room (a two-move chain). A pair that found nothing is not tried again
       until one of its brokers changes. Each transfer lowers the bytes above capacity or
       else the sum of squared bytes, by at least a quarter of what it aims at, so the pass
       ends in few transfers.
    7. Steps 4-6 repeat while they move something (at most a few rounds); what is still off
       target is explained in the notes (the blocking constraint) next to the lower bounds.

    8. *Exact path* (:func:`best_replicas` with ``exact_seconds`` > 0, the command's default):
       on a cluster of at most :data:`planner.exact.EXACT_CELLS` partitions x brokers, without
       budgets, the same targets as a mixed-integer program (:mod:`planner.exact`, HiGHS),
       started from this plan; the better of the two plans is kept (targets met first, then
       their distance, bytes, replica and leader moves) and the notes say which path ran. A
       target it proves out of reach is named so in the notes, with the method; the notes of
       the steps above only say what their search did not find.

    Time: ``O(P * RF * depth)`` to build the counters, ``O(P * RF * depth)`` per round to find
    the topics above their cap, then per move ``O(racks * log B + depth + R_b)`` (a merged heap
    scan, the caps, two sorted-list edits of ``R_b`` replicas per broker, a memory move), and
    per byte transfer ``O(SCAN * log R_b)``: near-linear in ``P``; a test compares the work at
    ``4N`` and ``N``. 150,000 partitions on 300 brokers: about 5 s for this rule.

Example
    Brokers 1, 2, 5 in rack a, 3, 4, 6 in rack b; 5 and 6 are new; threshold 0, no sizes.
    ``x-0 [1,3] x-1 [3,1] x-2 [2,4] x-3 [4,2] y-0 [1,4] y-1 [2,1]``: 12 replicas, band [2, 2];
    brokers 1..6 hold 4, 3, 2, 3, 0, 0; ``y-1`` has both replicas in rack a.

    ============ ============ ================================================================
    step         move         why
    ============ ============ ================================================================
    diversity    y-1 1 -> 6   y-1 lacks rack b; its follower leaves 1 (the most loaded) for 6
                              (the least loaded broker of rack b)
    counts       x-1 1 -> 5   broker 1 (3, target 2) gives a follower to 5 (rack a)
                 x-3 2 -> 5   broker 2 (3) gives a follower; 5 holds the fewest of x
                 x-2 4 -> 6   broker 4 (3) gives a follower to 6
    result                    2 replicas per broker, at most 2 of x on one (cap ceil(8/6) + 1
                              = 3), 4 moves: the bound, no leader change
    ============ ============ ================================================================
"""

from __future__ import annotations

import heapq
from bisect import bisect_left, insort
from collections.abc import Iterable
from fractions import Fraction
from itertools import islice

from cluster.snapshot import ClusterSnapshot, gc_paused

from .bands import band, byte_band, parse_threshold
from .byte_bound import byte_lower_bound
from .exact import improve
from .plan import MoveKind, Plan, Scope, Working
from .repair_rule import repair_working

ROUNDS = 4          # rounds of steps 4-6 (each one stops early when it moves nothing)
PEEK = 4            # fitting receivers looked at for one replica (the fewest of its topic wins)
TAKER, TOPIC, ANY, ANY_UNCAPPED = range(4)   # what :meth:`_Balancer.receiver` looks for
NEAR = 3            # size-sorted neighbours tried on each side of a binary search
SCAN = 256          # replicas of the heavier broker tried for one swap, smallest first from the need
PARTNERS = 8        # lightest (heaviest) brokers of its rack, then of all, paired with one out of band


def replica_balance(snapshot: ClusterSnapshot, *, threshold: float | int | str = 10,
                    max_moves: int | None = None, forgotten: Iterable[int] = frozenset(),
                    exact_seconds: float = 0.0, scope: Scope | None = None) -> Plan:
    """Repair, then balance replicas, bytes and topics within the threshold band (module doc);
    ``exact_seconds`` > 0: on small clusters, then the exact program of :mod:`planner.exact`."""
    with gc_paused():
        return best_replicas(snapshot, forgotten, threshold=threshold, max_moves=max_moves,
                             exact_seconds=exact_seconds, scope=scope).plan()


def best_replicas(snapshot: ClusterSnapshot, forgotten: Iterable[int] = frozenset(), *,
                  threshold: float | int | str = 10, max_moves: int | None = None,
                  max_leader_changes: int | None = None, exact_seconds: float = 0.0,
                  scope: Scope | None = None) -> Working:
    """The heuristic of this module, then, when ``exact_seconds`` > 0 and the cluster is small,
    the exact program of :mod:`planner.exact` seeded with its plan; the better of the two (the
    notes say which ran). ``scope``: the partitions and brokers the plan may touch."""
    work = Working(snapshot, forgotten, scope)
    if exact_seconds <= 0:
        balance_replicas(work, threshold=threshold, max_moves=max_moves, max_leader_changes=max_leader_changes)
        return work
    refusal: ValueError | None = None
    try:
        balance_replicas(work, threshold=threshold, max_moves=max_moves, max_leader_changes=max_leader_changes)
    except ValueError as exc:
        if not str(exc).startswith("capacity not met"):
            raise
        refusal = exc
    return improve(work, parse_threshold(threshold), refusal,
                   budgets=max_moves is not None or max_leader_changes is not None, time_limit=exact_seconds)


def water_fill(counts: dict[int, int], members: Iterable[int], targets: dict[int, int],
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


def balance_replicas(work: Working, *, threshold: float | int | str = 10,
                     max_moves: int | None = None, max_leader_changes: int | None = None) -> None:
    """Repair then balance ``work`` (a rule's own scratch copy), see the module doc.

    ``max_leader_changes`` (cluster balance) stops moving leader replicas once that many
    preferred leaders changed; changes forced by repairing a dead leader do not count."""
    fraction = parse_threshold(threshold)
    pre = work.counts()
    pre_bytes = work.byte_counts()
    repairs = repair_working(work, max_moves=max_moves)
    budget = None if max_moves is None else max_moves - repairs
    _Balancer(work, fraction, budget, max_leader_changes, pre, pre_bytes).run()


class _Balancer:
    """The state of one balancing run: counts, bytes and per-topic counters per tree node.

    ``held[b]`` lists the usable partitions on broker ``b`` as sorted *slot keys*
    ``size * P + rank`` (``P`` partitions, ``rank`` the (topic, partition) position), so the
    replica of a broker nearest a wanted size is a binary search and a move is two list edits.
    ``heaps[leaf]`` holds ``load_key`` entries of the brokers of a leaf rack, pushed on every
    change and dropped when stale, so the emptiest receivers are found without a scan."""

    __slots__ = (
        "allowed_cache", "blo", "bhi", "budget", "by_bytes", "capacity", "chain", "counts", "forced",
        "heaps", "held", "hi", "leader_budget", "leaf", "leaf_bytes", "leaf_chain", "leaf_members", "level",
        "lo", "mean", "members", "moved", "ncount", "nodes", "order", "parent", "parts", "pre",
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
        self.lo = self.hi = self.blo = self.bhi = self.mean = 0

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
             leaf_known: bool = False) -> bool:
        """May partition ``i``'s replica on ``source`` move to ``destination`` (hard rules, and
        the topic caps unless ``caps`` is false)? ``leaf_known``: the destination's rack is one
        of :meth:`allowed_leaves` already."""
        if destination in self.reps[i] or not self.may_take(destination) or not self.leader_ok(i, source):
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

    def receiver(self, i: int, x: int, leaves: Iterable[int], *, mode: int,
                 outside: tuple[int, int] | None = None) -> int | None:
        """The broker of ``leaves`` to take partition ``i``'s replica from ``x`` (hard rules
        kept; topic caps too unless ``mode`` is :data:`ANY_UNCAPPED`). The leaves' heaps are
        merged, emptiest (``load_key``) first; of the first :data:`PEEK` brokers that fit, the
        best by ``mode``: :data:`TAKER` only brokers below their count target that stay in the
        byte band, holding the fewest of the topic; :data:`TOPIC` below target first, then not
        pushed above the byte band, then holding the fewest of the topic; :data:`ANY` and
        :data:`ANY_UNCAPPED` the first. The scan stops early once nothing later can be better.
        ``outside``: ``(level, node)`` the receiver must be out of."""
        t = self.topic[i]
        w = self.size[i]
        load_key = self.load_key
        heaps = [self.heaps[leaf] for leaf in leaves
                 if outside is None or outside[0] >= len(self.leaf_chain[leaf])
                 or self.leaf_chain[leaf][outside[0]] != outside[1]]
        looked: list[tuple[list[tuple[int, int, int]], tuple[int, int, int]]] = []
        seen: set[int] = set()
        best: tuple[int, ...] | None = None
        found = 0
        while found < PEEK:
            top: list[tuple[int, int, int]] | None = None
            for heap in heaps:
                while heap and heap[0] != load_key(heap[0][2]):
                    heapq.heappop(heap)     # stale: the broker's current entry is in the heap too
                if heap and (top is None or heap[0] < top[0]):
                    top = heap
            if top is None:
                break
            entry = heapq.heappop(top)
            y = entry[2]
            if y in seen:
                continue                    # a duplicate of an entry already looked at
            seen.add(y)
            looked.append((top, entry))
            if mode == TAKER and entry[0] >= 0:
                break
            if mode == TOPIC and best is not None and entry[0] >= 0 and not best[0]:
                break                       # the best is below target, nothing later is
            if y == x or not self.fits(i, x, y, caps=mode != ANY_UNCAPPED, leaf_known=True):
                continue
            if mode in (ANY, ANY_UNCAPPED):
                best = entry
                break
            over = self.sized and self.sizes[y] + w > self.upper(y)
            if mode == TAKER and over:
                continue
            found += 1
            held = self.n(t, self.chain[y][-1])
            rank = (held, *entry) if mode == TAKER else (entry[0] >= 0, over, held, *entry)
            if best is None or rank < best:
                best = rank
            if held == 0 and (mode == TAKER or not (entry[0] >= 0 or over)):
                break                       # nothing later ranks better
        for heap, entry in looked:
            heapq.heappush(heap, entry)
        return None if best is None else best[-1]

    # -- the rule ------------------------------------------------------------------------
    def run(self) -> None:
        work = self.work
        eligible = work.eligible
        if not eligible:
            work.notes.append("no alive broker: nothing to balance")
            return
        total = sum(self.counts.values())
        total_bytes = sum(self.sizes.values())
        self.check_capacity_total(total_bytes)
        self.lo, self.hi = band(total, len(eligible), self.threshold)
        largest = max(self.size, default=0)
        self.blo, self.bhi = byte_band(total_bytes, len(eligible), self.threshold, largest)
        self.mean = total_bytes // len(eligible)
        self.record_bounds()
        self.set_targets()
        self.repair_diversity()
        for _ in range(ROUNDS):
            before = self.moved
            self.repair_topics()
            self.set_targets()
            self.balance_counts()
            self.balance_bytes()
            if self.moved == before or not self.budget_left():
                break
        self.explain()

    def set_targets(self) -> None:
        counts = self.counts
        self.targets = {b: min(max(c, self.lo), self.hi) for b, c in counts.items()}
        water_fill(counts, self.work.eligible, self.targets,
                   sum(counts.values()) - sum(self.targets.values()))
        self.heaps = {leaf: [self.load_key(b) for b in members] for leaf, members in self.leaf_members.items()}
        for heap in self.heaps.values():
            heapq.heapify(heap)

    def check_capacity_total(self, total_bytes: int) -> None:
        if self.capacity and len(self.capacity) == len(self.work.eligible):
            room = sum(self.capacity.values())
            if total_bytes > room:
                raise ValueError(f"capacity infeasible: the partitions hold {total_bytes} bytes, the "
                                 f"alive brokers' capacity_bytes add up to {room}")

    def record_bounds(self) -> None:
        """Lower bounds of the plan, from the counts before repair."""
        work, lo, hi, blo, bhi = self.work, self.lo, self.hi, self.blo, self.bhi
        repairs = work.bounds.get("repairs_needed", 0)
        pre_over = sum(max(0, c - hi) for c in self.pre.values())
        pre_under = sum(max(0, lo - c) for c in self.pre.values())
        work.bounds["replica_moves_lower_bound"] = repairs + pre_over
        work.bounds["replica_moves_tight_bound"] = max(repairs + pre_over, pre_under)
        work.bounds["replicas_band_lo"] = lo
        work.bounds["replicas_band_hi"] = hi
        groups = self.tree.groups(work.eligible)
        work.bounds["diversity_repairs_needed"] = sum(self.diversity_gap(i, groups) for i in work.order)
        if self.sized:
            fixed = {i for i, _, _, kind in work.moves if kind is MoveKind.REPAIR}
            repaired = sum(self.size[i] for i, _, _, kind in work.moves if kind is MoveKind.REPAIR)
            leave = sum(max(0, s - self.upper(b)) for b, s in self.pre_bytes.items())
            reach = sum(max(0, blo - s) for s in self.pre_bytes.values())
            work.bounds["bytes_band_lo"] = blo
            work.bounds["bytes_band_hi"] = bhi
            work.bounds["bytes_moved_lower_bound"] = max(repaired + leave, reach)
            # a partition lacking g groups moves g of its replicas whatever the plan
            work.bounds["diversity_bytes_needed"] = repaired + sum(
                self.size[i] * self.diversity_gap(i, groups) for i in work.order if i not in fixed)
            lp = byte_lower_bound(work.snapshot, work.eligible, self.tree, self.threshold, self.capacity,
                                  frozen=work.frozen, excluded=work.excluded, takers=work.takers)
            if lp is not None:
                work.bounds["bytes_moved_lp_bound" + "".join(f"_{k}" for k in lp.kept)] = lp.bytes

    def diversity_gap(self, i: int, groups: tuple[int, ...]) -> int:
        """Groups partition ``i`` could still span at its worst level (0 when diverse)."""
        tree = self.tree
        reps = self.reps[i]
        if tree.depth == 0 or len(reps) < 2 or not self.work.eligible_set.issuperset(reps):
            return 0
        keys = [tree.keys[b] for b in reps]
        return max(min(len(reps), groups[lv]) - len({k[lv] for k in keys}) for lv in range(tree.depth))

    # -- step 3: rack diversity ------------------------------------------------------------
    def repair_diversity(self) -> None:
        tree = self.tree
        if tree.depth == 0:
            return
        groups = self.tree.groups(self.work.eligible)
        stuck = 0
        for i in self.work.order:
            reps = self.reps[i]
            if len(reps) < 2 or not self.work.eligible_set.issuperset(reps) or i in self.work.frozen:
                continue
            while self.budget_left():
                keys = [tree.keys[b] for b in reps]
                level = next((lv for lv in range(tree.depth)
                              if len({k[lv] for k in keys}) < min(len(reps), groups[lv])), None)
                if level is None:
                    break
                if not self.fix_diversity(i, level):
                    stuck += 1
                    break
        if stuck:
            self.work.notes.append(
                f"{stuck} partition(s) still lack rack diversity: the heuristic found no broker of "
                "the racks they lack with room (capacity_bytes) for a replica allowed to leave its "
                "doubled rack (max leader changes); a search, not a proof that none exists")

    def fix_diversity(self, i: int, level: int) -> bool:
        tree = self.tree
        reps = self.reps[i]
        seen: dict[int, int] = {}
        for b in reps:
            key = tree.keys[b][level]
            seen[key] = seen.get(key, 0) + 1
        sources = sorted((b for b in reps if seen[tree.keys[b][level]] > 1 and b not in self.work.excluded),
                         key=lambda b: (b == reps[0], -self.load_key(b)[0], -self.sizes[b], b))
        free = [leaf for leaf, members in self.leaf_members.items() if tree.keys[members[0]][level] not in seen]
        for with_caps in (True, False):   # diversity comes before the topic caps
            for x in sources:
                best = self.receiver(i, x, free, mode=ANY if with_caps else ANY_UNCAPPED)
                if best is not None:
                    self.do_move(i, x, best)
                    return True
        return False

    # -- step 4: topics above their cap ----------------------------------------------------
    def above_cap(self) -> list[tuple[int, int, int, int]]:
        """``(topic, level, node, excess)`` for every node above a topic's cap, sorted."""
        over = []
        stride, parent, cap, ncount = self.stride, self.parent, self.cap, self.ncount
        for key, count in ncount.items():
            if count < 3:       # a cap is at least 2: an even share of 1, plus one
                continue
            t, node = divmod(key, stride)
            if node:
                up = parent[node]
                excess = count - cap(t, node, up, ncount.get(t * stride + up, 0))
                if excess > 0:
                    over.append((t, self.level[node], node, excess))
        over.sort()
        return over

    def repair_topics(self) -> None:
        first_broker = self.nodes - len(self.work.eligible)
        last = -1
        parts_on: dict[int, list[int]] = {}     # the topic's partitions per broker
        for t, level, node, _ in self.above_cap():
            if t != last:
                last = t
                parts_on = {}
                for i in self.topic_parts[t]:
                    for b in self.reps[i]:
                        if b not in self.work.excluded:
                            parts_on.setdefault(b, []).append(i)
            parent = self.parent[node]
            if node >= first_broker:
                x = self.work.eligible[node - first_broker]
                on = {x: parts_on.get(x, [])}
            else:
                on = {b: held for b, held in parts_on.items() if self.chain[b][level] == node}
            while self.over_cap(t, node, parent) > 0 and self.budget_left():
                moved = self.shed_topic(on, level, node)
                if moved is None:
                    break
                parts_on.setdefault(moved[1], []).append(moved[0])

    def shed_topic(self, on: dict[int, list[int]], level: int, node: int) -> tuple[int, int] | None:
        """Move one replica of a topic out of ``node`` (``on``: its partitions per broker of
        the node) to a broker outside it: from the broker holding the most of the topic, to
        the receiver of :meth:`receiver` for its smallest follower; then, when both sides want
        bytes to move (:meth:`want_pair`), the replica nearest that size which fits it too.
        Returns ``(partition, receiver)`` or None."""
        givers = sorted((b for b in on if on[b]), key=lambda b: (-len(on[b]), -self.load_key(b)[0], -self.sizes[b], b))
        for x in givers:
            cands = sorted(on[x], key=lambda i: (self.reps[i][0] == x, self.slot[i]))
            for i in cands:
                y = self.receiver(i, x, self.allowed_leaves(i, x), mode=TOPIC, outside=(level, node))
                if y is None:
                    continue
                want = self.want_pair(x, y)
                if want:
                    i = min((j for j in cands if self.fits(j, x, y) and (self.reps[j][0] == x) == (self.reps[i][0] == x)),
                            key=lambda j: (abs(self.size[j] - want), self.slot[j]))
                on[x].remove(i)
                self.do_move(i, x, y)
                return i, y
        return None

    def room(self, y: int) -> int:
        """The bytes per replica ``y`` may still take and fill its count target in the band."""
        return (self.upper(y) - self.sizes[y]) // max(1, self.targets[y] - self.counts[y])

    def want_pair(self, x: int, y: int) -> int:
        """The replica size best moved from ``x`` to ``y`` when ``x`` holds bytes above the mean
        and ``y`` is below its count target and the mean: the smallest of their excess and
        deficit per replica still to give or take and :meth:`room`; 0 (the smallest) otherwise."""
        if not self.sized:
            return 0
        excess, deficit = self.sizes[x] - self.mean, self.mean - self.sizes[y]
        room = self.targets[y] - self.counts[y]
        if excess <= 0 or deficit <= 0 or room <= 0:
            return 0
        return min(excess // max(1, self.counts[x] - self.targets[x]), deficit // room, self.room(y))

    # -- step 5: counts --------------------------------------------------------------------
    def topic_class(self, t: int, x: int) -> int:
        """How much giving a replica of ``t`` evens the topic: 0 when ``x`` holds more than one
        above the topic's average, 1 above it, 2 otherwise."""
        gain = self.n(t, self.chain[x][-1]) * self.members[0] - self.topic_total[t]
        return 0 if gain > self.members[0] else 1 if gain > 0 else 2

    def balance_counts(self) -> None:
        need = sum(max(0, self.targets[b] - c) for b, c in self.counts.items())
        donors = sorted((b for b in self.work.eligible if self.counts[b] > self.targets[b]),
                        key=lambda b: (self.targets[b] - self.counts[b], b))
        for x in donors:
            if need <= 0 or not self.budget_left():
                break
            need -= self.give(x)
        self.level_counts()

    def give(self, x: int) -> int:
        """Broker ``x`` gives replicas until it reaches its target: followers first, then the
        topics it holds most of (:meth:`topic_class`), then the replica nearest :meth:`want`,
        each to the taker of :meth:`receiver`. Returns the replicas given."""
        buckets: list[list[int]] = [[] for _ in range(6)]
        per_topic: dict[int, list[int]] = {}
        cls: dict[int, int] = {}
        for key in self.held[x]:
            i = self.partition(key)
            t = self.topic[i]
            if t not in cls:
                cls[t] = self.topic_class(t, x)
            per_topic.setdefault(t, []).append(key)
            buckets[3 * (self.reps[i][0] == x) + cls[t]].append(key)   # stays sorted
        given = 0
        while self.counts[x] > self.targets[x] and self.budget_left():
            bucket = next((b for b in buckets if b), None)
            if bucket is None:
                break
            key = bucket.pop(self.nearest(bucket, self.want(x)))
            i = self.partition(key)
            if not self.leader_ok(i, x):
                continue
            y = self.receiver(i, x, self.allowed_leaves(i, x), mode=TAKER)
            if y is None:
                continue            # tried once, like every other replica of x
            room = self.room(y)
            if self.size[i] > room and bucket:     # y could not fill its count in the band
                k = self.nearest(bucket, room)
                j = self.partition(bucket[k])
                if self.size[j] < self.size[i] and self.leader_ok(j, x) and self.fits(j, x, y):
                    insort(bucket, key)
                    del bucket[bisect_left(bucket, self.slot[j])]
                    i = j
            self.do_move(i, x, y)
            given += 1
            t = self.topic[i]
            new = self.topic_class(t, x)
            if new != cls[t]:
                for other in per_topic[t]:
                    j = self.partition(other)
                    if j == i or x not in self.reps[j]:
                        continue
                    lead = 3 * (self.reps[j][0] == x)
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
        per_topic: dict[int, list[int]] = {}
        for i in self.on(donor):
            per_topic.setdefault(self.topic[i], []).append(i)
        keyed = []
        brokers = self.members[0]
        node = self.chain[donor][-1]
        for t, items in per_topic.items():
            items.sort(key=lambda i: (self.reps[i][0] == donor, self.slot[i]))
            have = self.n(t, node)
            for j, i in enumerate(items):
                gain = (have - j) * brokers - self.topic_total[t]   # evenness won by giving it
                keyed.append((self.reps[i][0] == donor, gain <= 0, -gain, self.slot[i], i))
        keyed.sort()
        return [k[-1] for k in keyed]

    def level_counts(self) -> None:
        """Brokers still outside ``[lo, hi]`` trade with any broker at least two replicas away
        (each move lowers the sum of squared counts)."""
        progress = True
        while progress and self.budget_left():
            progress = False
            eligible = self.work.eligible
            for x in sorted((b for b in eligible if self.counts[b] > self.hi),
                            key=lambda b: (-self.counts[b], b)):
                low = sorted(eligible, key=lambda y: (self.counts[y], self.sizes[y], y))
                for i in self.candidates(x):
                    if self.counts[x] <= self.hi or not self.budget_left():
                        break
                    if x not in self.reps[i]:
                        continue
                    y = next((y for y in low if self.counts[y] + 2 <= self.counts[x]
                              and self.fits(i, x, y)), None)
                    if y is not None:
                        self.do_move(i, x, y)
                        progress = True
            for y in sorted((b for b in eligible if self.counts[b] < self.lo),
                            key=lambda b: (self.counts[b], b)):
                high = sorted(eligible, key=lambda x: (-self.counts[x], -self.sizes[x], x))
                for x in high:
                    if self.counts[x] < self.counts[y] + 2 or self.counts[y] >= self.lo:
                        break
                    for i in self.candidates(x):
                        if self.counts[x] < self.counts[y] + 2 or not self.budget_left():
                            break
                        if x in self.reps[i] and self.fits(i, x, y):
                            self.do_move(i, x, y)
                            progress = True

    # -- step 6: bytes ---------------------------------------------------------------------
    def upper(self, b: int) -> int:
        limit = self.capacity.get(b)
        return self.bhi if limit is None else min(self.bhi, limit)

    def off_band(self, b: int) -> int:
        """Bytes ``b`` is outside the band (above its capacity counts as above)."""
        return max(self.sizes[b] - self.upper(b), self.blo - self.sizes[b])

    def worst(self, stuck: set[int]) -> int | None:
        """The broker furthest outside the byte band, not ``stuck``."""
        if self.capacity:
            outside = [b for b in self.work.eligible if b not in stuck and self.off_band(b) > 0]
            return max(outside, key=lambda b: (self.off_band(b), -b), default=None)
        best: tuple[int, int] | None = None
        for ends in (reversed(self.by_bytes), iter(self.by_bytes)):   # the heaviest, the lightest
            for _, b in ends:
                gap = self.off_band(b)
                if gap <= 0:
                    break
                if b not in stuck:
                    if best is None or (gap, -b) > best:
                        best = (gap, -b)
                    break
        return None if best is None else -best[1]

    def balance_bytes(self) -> None:
        if not self.sized:
            return
        stuck: set[int] = set()
        failed: dict[tuple[int, int, int], tuple[int, ...]] = {}   # (x, y, b) -> their state then

        def attempt(x: int, y: int, b: int, gap: int) -> bool:
            """A transfer, unless the same pair failed for ``b`` while both brokers held what
            they hold now (only the topic counts of their racks, moved by other pairs, may
            differ since: a pair is retried when one of its brokers changes)."""
            state = (self.sizes[x], self.sizes[y], self.counts[x], self.counts[y])
            if failed.get((x, y, b)) == state:
                return False
            if self.transfer(x, y, gap):
                return True
            failed[(x, y, b)] = state
            return False

        while self.budget_left():
            b = self.worst(stuck)
            if b is None:
                return
            heavy = self.sizes[b] > self.upper(b)
            partners: list[int] = []
            for order in (self.leaf_bytes[self.leaf[b]], self.by_bytes):   # own rack first
                ends = iter(order) if heavy else reversed(order)
                partners += [y for _, y in islice((e for e in ends if e[1] != b), PARTNERS)]
            full = self.capacity.get(b, self.sizes[b]) < self.sizes[b]
            if full:
                partners += self.roomiest(b)     # above its disk: the brokers with most room too
            pairs = [(b, y) if heavy else (y, b) for y in dict.fromkeys(partners)]
            gap = self.off_band(b)
            if any(attempt(x, y, b, gap) for x, y in pairs) or (full and self.make_room(b)):
                stuck.clear()   # the others may have a partner now
            else:
                stuck.add(b)

    def roomiest(self, b: int) -> list[int]:
        """The :data:`PARTNERS` brokers (``b`` aside) with the most bytes left under their
        ``capacity_bytes`` (unlimited first, then the lightest), in ``b``'s rack, then of all."""
        def room(y: int) -> tuple[bool, int, int]:
            limit = self.capacity.get(y)
            return limit is not None, -(limit or 0) + self.sizes[y], y
        own = self.leaf_members[self.leaf[b]]
        return [y for group in (own, self.work.eligible)
                for y in heapq.nsmallest(PARTNERS + 1, group, key=room) if y != b]

    def make_room(self, x: int) -> bool:
        """``x`` is above its capacity and no transfer fits: move one of its largest replicas
        to a broker ``y`` that lacks the room, after moving one replica of ``y`` (the smallest
        that makes the room) to a third broker with room: a chain of two moves. Looks at the
        :data:`PARTNERS` largest replicas of ``x``, the brokers of :meth:`roomiest` and
        :data:`NEAR` replicas of each, so it costs ``O(PARTNERS^2 * NEAR)`` checks."""
        for key in self.held[x][::-1][:PARTNERS]:
            i, w = self.partition(key), key // self.parts
            if not self.leader_ok(i, x):
                continue
            for y in dict.fromkeys(self.roomiest(x)):
                limit = self.capacity.get(y)
                if (limit is None or y in self.reps[i] or not self.may_take(y) or self.sizes[y] + w <= limit
                        or self.leaf[y] not in self.allowed_leaves(i, x)):
                    continue
                need = self.sizes[y] + w - limit
                held = self.held[y]
                start = bisect_left(held, need * self.parts)
                for key_j in held[start:start + NEAR]:
                    j = self.partition(key_j)
                    if j == i or x in self.reps[j] or not self.leader_ok(j, y):
                        continue
                    z = next((z for z in dict.fromkeys(self.roomiest(y))
                              if z != x and self.fits(j, y, z, caps=False)), None)
                    if z is not None:
                        self.do_move(j, y, z)
                        self.do_move(i, x, y)
                        return True
        return False

    def transfer(self, x: int, y: int, gap: int) -> bool:
        """Move bytes from ``x`` to ``y``: one move or one swap whose net ``delta`` satisfies
        ``0 < delta < sizes[x] - sizes[y]``, keeps both in the band and is at least a quarter of
        what evens the pair (``want``); the one nearest ``want``. ``gap``: the bytes the broker
        of the pair that is out of band is out by; ``want`` is at least that much (within what
        the pair allows), so a partner already at the mean still takes what it has room for
        instead of slivers.

        When ``x`` is above its ``capacity_bytes`` (hard, before both bands) ``y`` may take
        anything its own capacity allows, counts and bands aside, and ``delta`` is at least a
        quarter of ``x``'s excess: each transfer then lowers the bytes above capacity, the
        others the sum of squared bytes, so the pass ends. Returns whether something moved."""
        sx, sy = self.sizes[x], self.sizes[y]
        over = sx - self.capacity.get(x, sx)    # bytes above x's disk
        if over > 0:
            most = self.capacity.get(y, sy + sx) - sy
            want = min(most, max(over, min((sx - sy) // 2, gap)))
        else:
            most = sx - sy - 1                      # the pair's larger side shrinks
            if sy <= self.upper(y):
                most = min(most, self.upper(y) - sy)   # y stays in the band
            if sx >= self.blo:
                most = min(most, sx - self.blo)        # and so does x
            want = min(most, (sx - sy) // 2, max(min(sx - self.mean, self.mean - sy), gap))
        if most <= 0:
            return False
        want = max(1, want)
        give_list, take_list, p = self.held[x], self.held[y], self.parts
        if not give_list:
            return False
        need = min(want, over) if over > 0 else want
        least = max(1, min(need, give_list[-1] // p) // 4)   # no slivers: the pass stays short
        best: tuple[int, int, int | None] | None = None     # (miss, give, take)
        start = bisect_left(give_list, want * p)
        if (over > 0 or self.counts[x] > self.lo and self.counts[y] < self.hi) and self.budget_left():
            for key in give_list[max(0, start - NEAR):start + NEAR]:
                w, i = key // p, self.partition(key)
                if least <= w <= most and self.fits(i, x, y, caps=over <= 0) \
                        and (best is None or abs(w - want) < best[0]):
                    best = (abs(w - want), i, None)
        if self.budget_left(extra=1):   # the smallest pair first: fewest bytes moved
            for key_a in give_list[start:start + SCAN] + give_list[max(0, start - SCAN):start][::-1]:
                if best is not None and best[0] * 8 <= want:
                    break
                w_a, a = key_a // p, self.partition(key_a)
                k = bisect_left(take_list, (w_a - want) * p)
                a_moves: bool | None = None         # may a go to y? (asked once, when needed)
                for key_b in take_list[max(0, k - NEAR):k + NEAR]:
                    delta = w_a - key_b // p
                    if not least <= delta <= most or (best is not None and abs(delta - want) >= best[0]):
                        continue
                    if a_moves is None:
                        a_moves = self.moves_to(a, x, y)
                    if not a_moves:
                        break
                    b = self.partition(key_b)
                    if self.swap_fits(a, x, b, y, caps=over <= 0):
                        best = (abs(delta - want), a, b)
        if best is None:
            return False
        _, give, take = best
        self.do_move(give, x, y)
        if take is not None:
            self.do_move(take, y, x)
        return True

    def moves_to(self, i: int, source: int, destination: int) -> bool:
        """May partition ``i``'s replica on ``source`` go to ``destination`` (one side of a
        swap: not there already, the leader budget, rack diversity; a rack is always allowed
        to itself)?"""
        return (destination not in self.reps[i] and self.may_take(destination)
                and self.leader_ok(i, source)
                and (self.leaf[source] == self.leaf[destination]
                     or self.leaf[destination] in self.allowed_leaves(i, source)))

    def swap_fits(self, a: int, x: int, b: int, y: int, *, caps: bool = True) -> bool:
        """Partition ``a`` from ``x`` to ``y`` and ``b`` from ``y`` to ``x``, counts unchanged;
        ``a``'s side (:meth:`moves_to`) is checked by the caller; the topic caps unless ``caps``
        is false."""
        if a == b or not self.moves_to(b, y, x):
            return False
        if self.reps[a][0] == x and self.reps[b][0] == y and self.leader_budget is not None \
                and self.leader_budget < 2:
            return False
        delta = self.size[a] - self.size[b]
        limit = self.capacity.get(y)
        if limit is not None and self.sizes[y] + delta > limit:
            return False
        ta, tb = self.topic[a], self.topic[b]
        return not caps or ta == tb or (self.caps_ok(ta, x, y) and self.caps_ok(tb, y, x))

    # -- step 7: what is left --------------------------------------------------------------
    def explain(self) -> None:
        work, lo, hi = self.work, self.lo, self.hi
        left = self.budget is not None and not self.budget_left()
        for b, limit in sorted(self.capacity.items()):
            if self.sizes[b] > limit:
                stop = ("the move budget is spent" if left else "no move, swap or two-move chain "
                        "found fits the other brokers' capacity_bytes with rack diversity kept")
                raise ValueError(f"capacity not met: broker {b} would still hold {self.sizes[b]} "
                                 f"bytes, above its capacity_bytes {limit}: {stop}")
        why = ("the move budget is spent" if left else
               "the heuristic found no move or swap for them that keeps rack diversity, the topic "
               "caps and the capacities (a search, not a proof that none exists)")
        for label, values, low, high in (
            ("replicas", self.counts, lo, hi),
            ("bytes", self.sizes, self.blo, self.bhi),
        ):
            if label == "bytes" and not self.sized:
                continue
            by_leaf: dict[int, list[int]] = {}
            for b in work.eligible:
                if not low <= values[b] <= high:
                    by_leaf.setdefault(self.leaf[b], []).append(b)
            for leaf, brokers in sorted(by_leaf.items()):
                where = f"rack {self.tree.names[leaf]}: " if leaf >= 0 else ""
                held = [values[b] for b in brokers]
                work.notes.append(
                    f"{where}broker(s) {', '.join(map(str, brokers))} hold {min(held)}-{max(held)} "
                    f"{label}, outside the band [{low}, {high}]: {why}")
        over = [(excess, t, node) for t, _, node, excess in self.above_cap()]
        if over:
            excess, t, node = max(over, key=lambda o: (o[0], -o[1], -o[2]))
            topic = self.topic_name[t]
            first_broker = self.nodes - len(work.eligible)
            where = (f"broker {work.eligible[node - first_broker]}" if node >= first_broker
                     else f"rack {self.tree.names[node - 1]}")
            work.notes.append(
                f"{len(over)} (topic, broker or rack) pair(s) above the topic's cap (worst: topic "
                f"{topic} on {where}, {excess} above): {why}")
