"""Replica balance (KIP-166): even replicas, bytes and topics per broker, with the fewest bytes moved.

Goals, in this order (each as far as the earlier ones allow)
    1. *Hard*: never two replicas of a partition on one broker; rack diversity never reduced at
       any level of the rack tree (:mod:`planner.racks`) and *repaired* where the racks allow (a
       partition with two replicas in one group while a group it could use has none); replicas
       on dead, unknown or forgotten brokers and placeholders repaired (:mod:`planner.repair`);
       a broker's ``capacity_bytes`` never exceeded.
    2. *Even*: every broker's replica count within ``[lo, hi]`` (``avg * (1 -+ threshold)``,
       ``[floor(avg), ceil(avg)]`` at threshold 0); when partitions carry ``size_bytes``, every
       broker's bytes within ``[blo, bhi]`` = ``mean -+ max(mean * threshold, largest)``
       (``largest`` the biggest partition: bytes come in lumps); every topic spread evenly: a
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
    - A ``capacity_bytes`` smaller than what must stay on the broker raises ``ValueError``.

Algorithm
    Per-topic counters are kept for every node of the rack tree, so a move is checked in
    ``O(depth)``; every pass below works on plain lists keyed by broker.

    1. *Repair* dead, unknown and forgotten replicas (:func:`planner.repair.repair_working`).
    2. *Targets*: every count is clamped into ``[lo, hi]`` and the difference with the total is
       spread by water filling: ``sum(max(0, count - target))`` is the fewest count moves.
    3. *Diversity*: for a partition whose replicas span fewer groups at some level than they
       could, a replica of a doubled group (a follower, on the most loaded broker) moves to the
       least loaded broker of an unused group. A replica leaving a doubled group for a new one
       keeps every level's diversity.
    4. *Topics*: a topic above its cap at a node gives replicas to the brokers holding the
       fewest of it (then the least loaded) outside that node.
    5. *Counts*: each broker above its target gives, in an order that interleaves topics (the
       replica whose removal most evens its topic first, followers first, the smallest first
       unless the broker has too many bytes), to the broker below target holding the fewest of
       that topic among the few with the most to take (one heap of takers per rack). Brokers
       still outside the band then level with any broker at least two replicas away.
    6. *Bytes*: while a broker is outside the byte band (or above its capacity), the heaviest
       out-of-band broker and the lightest partner exchange bytes: a move when counts allow, or
       a swap of a large replica for a smaller one (counts unchanged) whose difference is
       closest to what evens the pair, found by binary search in size-sorted replica lists.
       Each transfer lowers the sum of squared bytes, so the pass ends.
    7. Steps 4-6 repeat while they move something (at most a few rounds); what is still off
       target is explained in the notes (the blocking constraint) next to the lower bounds.

    Time: ``O(P * RF * log + moves * (racks + depth) * log B + swaps * R_b * log R_b)`` for
    ``R_b`` replicas per broker.

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
import math
from bisect import bisect_left, insort
from collections.abc import Iterable
from fractions import Fraction

from assignors.snapshot import ClusterSnapshot, gc_paused

from .plan import MoveKind, Plan, Working
from .repair import repair_working

ROUNDS = 4          # rounds of steps 4-6 (each one stops early when it moves nothing)
PEEK = 4            # takers looked at per leaf heap for one replica (the fewest of its topic wins)
NEAR = 3            # size-sorted neighbours tried on each side of a binary search
SCAN = 256          # replicas of the heavier broker tried for one swap, smallest first from the need
PARTNERS = 8        # lightest (heaviest) brokers of its rack, then of all, paired with one out of band


def replica_balance(snapshot: ClusterSnapshot, *, threshold: float | int | str = 10,
                    max_moves: int | None = None, forgotten: Iterable[int] = frozenset()) -> Plan:
    """Repair, then balance replicas, bytes and topics within the threshold band (module doc)."""
    with gc_paused():
        work = Working(snapshot, forgotten)
        balance_replicas(work, threshold=threshold, max_moves=max_moves)
        return work.plan()


def band(total: int, brokers: int, threshold: Fraction) -> tuple[int, int]:
    """``(lo, hi)``: the counts a broker may hold without taking or giving."""
    avg = Fraction(total, brokers)
    hi = max(math.ceil(avg), math.floor(avg * (1 + threshold)))
    lo = min(math.floor(avg), math.ceil(avg * (1 - threshold)))
    return max(lo, 0), hi


def byte_band(total: int, brokers: int, threshold: Fraction, largest: int) -> tuple[int, int]:
    """``(blo, bhi)``: the bytes a broker may hold, ``mean -+ max(mean * threshold, largest)``."""
    mean = Fraction(total, brokers)
    slack = max(mean * threshold, Fraction(largest))
    return max(0, math.ceil(mean - slack)), math.floor(mean + slack)


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


def parse_threshold(threshold: float | int | str) -> Fraction:
    """The threshold in percent as a fraction (``10`` -> ``1/10``); ``ValueError`` when invalid."""
    try:
        fraction = Fraction(str(threshold)) / 100
    except ValueError:
        raise ValueError(f"threshold must be a number of percent, got {threshold!r}") from None
    if fraction < 0:
        raise ValueError(f"threshold must be >= 0, got {threshold!r}")
    return fraction


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
    """The state of one balancing run: counts, bytes and per-topic counters per tree node."""

    __slots__ = (
        "allowed_cache", "blo", "bhi", "budget", "capacity", "chain", "counts", "holders", "hi",
        "leader_budget", "leaf", "leaf_members", "level", "lo", "mean", "members", "moved",
        "forced", "ncount", "nodes", "parent", "pre", "pre_bytes", "rank", "reps", "sized", "size", "sizes", "stride",
        "targets", "threshold", "topic", "topic_parts", "topic_total", "tree", "work",
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
        self.size = [p.size_bytes or 0 for p in parts]
        self.sized = any(p.size_bytes is not None for p in parts)
        self.rank = [0] * len(parts)
        for position, i in enumerate(work.order):
            self.rank[i] = position
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
        self.holders: dict[int, list[int]] = {b: [] for b in eligible}
        groups = self.tree.groups(eligible)
        self.forced: dict[int, int] = {}    # topic * (depth + 2) + level -> partitions spanning every group
        self.counts = work.counts()
        self.sizes = work.byte_counts()
        usable = work.eligible_set
        for i in work.order:
            r = self.reps[i]
            t = self.topic[i]
            self.topic_total[t] += len(r)
            if not usable.issuperset(r):   # an unrepaired partition cannot be reassigned
                continue
            self.topic_parts[t].append(i)
            for level, g in enumerate(groups, 1):
                if len(r) >= g:
                    key = t * (depth + 2) + level
                    self.forced[key] = self.forced.get(key, 0) + 1
            base = t * self.stride
            for b in r:
                self.holders[b].append(i)
                for node in self.chain[b]:
                    key = base + node
                    self.ncount[key] = self.ncount.get(key, 0) + 1
        self.allowed_cache: dict[tuple[int, tuple[int, ...]], frozenset[int]] = {}
        self.targets: dict[int, int] = {}
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

    def leader_ok(self, i: int, source: int) -> bool:
        return self.reps[i][0] != source or self.leader_budget is None or self.leader_budget > 0

    def fits(self, i: int, source: int, destination: int, *, caps: bool = True) -> bool:
        """May partition ``i``'s replica on ``source`` move to ``destination`` (hard rules, and
        the topic caps unless ``caps`` is false)?"""
        if destination in self.reps[i] or not self.leader_ok(i, source):
            return False
        if self.leaf[destination] not in self.allowed_leaves(i, source):
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
        self.sizes[source] -= w
        self.sizes[destination] += w
        base = self.topic[i] * self.stride
        for node in self.chain[source]:
            self.ncount[base + node] -= 1
        for node in self.chain[destination]:
            self.ncount[base + node] = self.ncount.get(base + node, 0) + 1
        self.holders[destination].append(i)
        self.work.record(i, source, destination, MoveKind.REPLICA)
        self.moved += 1

    def on(self, broker: int) -> list[int]:
        """The partitions on ``broker`` now (``holders`` keeps partitions that left, and lists
        one that came back twice)."""
        reps = self.reps
        live = list(dict.fromkeys(i for i in self.holders[broker] if broker in reps[i]))
        self.holders[broker] = live
        return live

    def load_key(self, b: int) -> tuple[int, int, int]:
        """Lower is emptier: replicas beyond target, then bytes."""
        return self.counts[b] - self.targets.get(b, self.counts[b]), self.sizes[b], b

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
            repaired = sum(self.size[i] for i, _, _, kind in work.moves if kind is MoveKind.REPAIR)
            leave = sum(max(0, s - self.upper(b)) for b, s in self.pre_bytes.items())
            reach = sum(max(0, blo - s) for s in self.pre_bytes.values())
            work.bounds["bytes_band_lo"] = blo
            work.bounds["bytes_band_hi"] = bhi
            work.bounds["bytes_moved_lower_bound"] = max(repaired + leave, reach)

    def diversity_gap(self, i: int, groups: tuple[int, ...]) -> int:
        """Groups partition ``i`` could still span at its worst level (0 when diverse)."""
        tree = self.tree
        reps = self.reps[i]
        if tree.depth == 0 or not self.work.eligible_set.issuperset(reps):
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
            if len(reps) < 2 or not self.work.eligible_set.issuperset(reps):
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
                f"{stuck} partition(s) still lack rack diversity: every broker of the racks they "
                "lack is full (capacity_bytes) or no replica may leave its doubled rack (max leader "
                "changes)")

    def fix_diversity(self, i: int, level: int) -> bool:
        tree = self.tree
        reps = self.reps[i]
        seen: dict[int, int] = {}
        for b in reps:
            key = tree.keys[b][level]
            seen[key] = seen.get(key, 0) + 1
        sources = sorted((b for b in reps if seen[tree.keys[b][level]] > 1),
                         key=lambda b: (b == reps[0], -self.load_key(b)[0], -self.sizes[b], b))
        free = [y for y in self.work.eligible if tree.keys[y][level] not in seen]
        for with_caps in (True, False):   # diversity comes before the topic caps
            for x in sources:
                best = min((y for y in free if self.fits(i, x, y, caps=with_caps)),
                           key=self.load_key, default=None)
                if best is not None:
                    self.do_move(i, x, best)
                    return True
        return False

    # -- step 4: topics above their cap ----------------------------------------------------
    def above_cap(self) -> list[tuple[int, int, int, int]]:
        """``(topic, level, node, excess)`` for every node above a topic's cap, sorted."""
        over = []
        for key, count in self.ncount.items():
            t, node = divmod(key, self.stride)
            if node and count:
                parent = self.parent[node]
                excess = count - self.cap(t, node, parent, self.n(t, parent))
                if excess > 0:
                    over.append((t, self.level[node], node, excess))
        over.sort()
        return over

    def repair_topics(self) -> None:
        order: list[int] = []
        last = -1
        for t, level, node, _ in self.above_cap():
            if t != last:   # receivers in preference order, once per topic
                last = t
                order = sorted(self.work.eligible, key=lambda y: (
                    self.counts[y] >= self.targets[y], self.n(t, self.chain[y][-1]), self.load_key(y)))
            parent = self.parent[node]
            while self.over_cap(t, node, parent) > 0 and self.budget_left():
                if not self.shed_topic(t, level, node, order):
                    break

    def shed_topic(self, t: int, level: int, node: int, order: list[int]) -> bool:
        """Move one replica of topic ``t`` out of ``node`` to a broker outside ``node``: one
        below its count target first, then the one holding the fewest of the topic, then the
        least loaded."""
        if level == len(self.chain[order[0]]) - 1:
            inside = [self.work.eligible[node - (self.nodes - len(self.work.eligible))]]
        else:
            inside = sorted((b for b in order if self.chain[b][level] == node),
                            key=lambda b: (-self.n(t, self.chain[b][-1]), -self.load_key(b)[0], b))
        for x in inside:
            cands = sorted((i for i in self.topic_parts[t] if x in self.reps[i]),
                           key=lambda i: (self.reps[i][0] == x, self.size[i], self.rank[i]))
            room: dict[int, bool] = {}
            for i in cands:
                for y in order:
                    if self.chain[y][level] == node:
                        continue
                    ok = room.get(y)
                    if ok is None:
                        ok = room[y] = self.caps_ok(t, x, y)
                    if ok and self.fits(i, x, y, caps=False):
                        self.do_move(i, x, y)
                        self.drop_full(t, order, room)
                        return True
        self.drop_full(t, order, room)
        return False

    def drop_full(self, t: int, order: list[int], tried: dict[int, bool]) -> None:
        """Forget the receivers already at the topic's cap on their own (they stay there while
        this topic is repaired: its counts only grow outside the node being emptied)."""
        full = set()
        for y, ok in tried.items():
            chain = self.chain[y]
            if not ok and self.n(t, chain[-1]) + 1 > self.cap(t, chain[-1], chain[-2], self.n(t, chain[-2]) + 1):
                full.add(y)
        if full:
            order[:] = [y for y in order if y not in full]

    # -- step 5: counts --------------------------------------------------------------------
    def candidates(self, donor: int) -> list[int]:
        """The partitions on ``donor`` in giving order (module doc, step 5)."""
        big_first = self.sized and self.sizes[donor] > self.bhi
        per_topic: dict[int, list[int]] = {}
        for i in self.on(donor):
            per_topic.setdefault(self.topic[i], []).append(i)
        keyed = []
        brokers = self.members[0]
        node = self.chain[donor][-1]
        for t, items in per_topic.items():
            items.sort(key=lambda i: (self.reps[i][0] == donor,
                                      -self.size[i] if big_first else self.size[i], self.rank[i]))
            have = self.n(t, node)
            for j, i in enumerate(items):
                gain = (have - j) * brokers - self.topic_total[t]   # evenness won by giving it
                keyed.append((self.reps[i][0] == donor, gain <= 0, -gain,
                              -self.size[i] if big_first else self.size[i], self.rank[i], i))
        keyed.sort()
        return [k[-1] for k in keyed]

    def balance_counts(self) -> None:
        takers: dict[int, list[tuple[int, int]]] = {}
        for b in self.work.eligible:
            if self.counts[b] < self.targets[b]:
                takers.setdefault(self.leaf[b], []).append((self.counts[b] - self.targets[b], b))
        for heap in takers.values():
            heapq.heapify(heap)
        donors = sorted((b for b in self.work.eligible if self.counts[b] > self.targets[b]),
                        key=lambda b: (self.targets[b] - self.counts[b], b))
        for x in donors:
            if not takers:
                break
            for i in self.candidates(x):
                if self.counts[x] <= self.targets[x] or not self.budget_left():
                    break
                if x not in self.reps[i] or not self.leader_ok(i, x):
                    continue
                y = self.pick_taker(takers, i, x)
                if y is not None:
                    self.do_move(i, x, y)
        self.level_counts()

    def pick_taker(self, takers: dict[int, list[tuple[int, int]]], i: int, x: int) -> int | None:
        """Among the first takers of each allowed leaf's heap that stay within the byte band,
        the one holding the fewest of the partition's topic (then the most to take)."""
        t = self.topic[i]
        best: tuple[int, int, int] | None = None
        for leaf in self.allowed_leaves(i, x):
            heap = takers.get(leaf)
            if not heap:
                continue
            looked: list[tuple[int, int]] = []
            while heap and len(looked) < PEEK:
                key, y = heapq.heappop(heap)
                current = self.counts[y] - self.targets[y]
                if current >= 0:
                    continue
                if key != current:
                    heapq.heappush(heap, (current, y))
                    continue
                looked.append((key, y))
                if self.fits(i, x, y) and not (self.sized and self.sizes[y] + self.size[i] > self.upper(y)):
                    rank = (self.n(t, self.chain[y][-1]), key, y)
                    if best is None or rank < best:
                        best = rank
            for entry in looked:
                heapq.heappush(heap, entry)
            if not heap:
                del takers[leaf]
        return None if best is None else best[2]

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

    def balance_bytes(self) -> None:
        if not self.sized:
            return
        eligible = self.work.eligible
        by_size = {b: sorted((self.size[i], self.rank[i], i) for i in self.on(b)) for b in eligible}
        stuck: set[int] = set()
        while self.budget_left():
            outside = [b for b in eligible if b not in stuck
                       and (self.sizes[b] > self.upper(b) or self.sizes[b] < self.blo)]
            if not outside:
                return
            b = max(outside, key=lambda b: (max(self.sizes[b] - self.upper(b), self.blo - self.sizes[b]), -b))
            sign = 1 if self.sizes[b] > self.upper(b) else -1
            near = self.leaf_members[self.leaf[b]]
            partners = [sorted((y for y in group if y != b), key=lambda y: (sign * self.sizes[y], y))[:PARTNERS]
                        for group in (near, eligible)]    # its own rack first: most swaps stay there
            pairs = [(b, y) if sign > 0 else (y, b) for y in dict.fromkeys(partners[0] + partners[1])]
            if any(self.transfer(x, y, by_size) for x, y in pairs):
                stuck.clear()   # the others may have a partner now
            else:
                stuck.add(b)

    def transfer(self, x: int, y: int, by_size: dict[int, list[tuple[int, int, int]]]) -> bool:
        """Move bytes from ``x`` to ``y``: one move or one swap whose net ``delta`` satisfies
        ``0 < delta < sizes[x] - sizes[y]``, keeps both in the band and is at least a quarter of
        what evens the pair (``want``); the one nearest ``want``. Returns whether something moved."""
        sx, sy = self.sizes[x], self.sizes[y]
        most = sx - sy - 1                      # the pair's larger side shrinks
        if sy <= self.upper(y):
            most = min(most, self.upper(y) - sy)   # y stays in the band
        if sx >= self.blo:
            most = min(most, sx - self.blo)        # and so does x
        if most <= 0:
            return False
        want = max(1, min(most, sx - self.mean, self.mean - sy, (sx - sy) // 2))
        give_list, take_list = by_size[x], by_size[y]
        if not give_list:
            return False
        least = max(1, min(want, give_list[-1][0]) // 4)   # no slivers: the pass stays short
        best: tuple[int, int, int | None] | None = None     # (miss, give, take)
        if self.counts[x] > self.lo and self.counts[y] < self.hi and self.budget_left():
            k = bisect_left(give_list, (want, -1, -1))
            for w, _, i in give_list[max(0, k - NEAR):k + NEAR]:
                if least <= w <= most and self.fits(i, x, y) and (best is None or abs(w - want) < best[0]):
                    best = (abs(w - want), i, None)
        if self.budget_left(extra=1):   # the smallest pair first: fewest bytes moved
            start = bisect_left(give_list, (want, -1, -1))
            for w_a, _, a in give_list[start:start + SCAN] + give_list[max(0, start - SCAN):start][::-1]:
                if best is not None and best[0] * 8 <= want:
                    break
                k = bisect_left(take_list, (w_a - want, -1, -1))
                for w_b, _, b in take_list[max(0, k - NEAR):k + NEAR]:
                    delta = w_a - w_b
                    if not least <= delta <= most or (best is not None and abs(delta - want) >= best[0]):
                        continue
                    if self.swap_fits(a, x, b, y):
                        best = (abs(delta - want), a, b)
        if best is None:
            return False
        _, give, take = best
        self.do_move(give, x, y)
        by_size[x].remove((self.size[give], self.rank[give], give))
        insort(by_size[y], (self.size[give], self.rank[give], give))
        if take is not None:
            self.do_move(take, y, x)
            by_size[y].remove((self.size[take], self.rank[take], take))
            insort(by_size[x], (self.size[take], self.rank[take], take))
        return True

    def swap_fits(self, a: int, x: int, b: int, y: int) -> bool:
        """Partition ``a`` from ``x`` to ``y`` and ``b`` from ``y`` to ``x``, counts unchanged."""
        if a == b or y in self.reps[a] or x in self.reps[b]:
            return False
        if not (self.leader_ok(a, x) and self.leader_ok(b, y)):
            return False
        if self.reps[a][0] == x and self.reps[b][0] == y and self.leader_budget is not None \
                and self.leader_budget < 2:
            return False
        if self.leaf[y] not in self.allowed_leaves(a, x) or self.leaf[x] not in self.allowed_leaves(b, y):
            return False
        delta = self.size[a] - self.size[b]
        limit = self.capacity.get(y)
        if limit is not None and self.sizes[y] + delta > limit:
            return False
        ta, tb = self.topic[a], self.topic[b]
        return ta == tb or (self.caps_ok(ta, x, y) and self.caps_ok(tb, y, x))

    # -- step 7: what is left --------------------------------------------------------------
    def explain(self) -> None:
        work, lo, hi = self.work, self.lo, self.hi
        for b, limit in sorted(self.capacity.items()):
            if self.sizes[b] > limit:
                raise ValueError(f"capacity infeasible: broker {b} holds {self.sizes[b]} bytes that "
                                 f"cannot move elsewhere, above its capacity_bytes {limit}")
        left = self.budget is not None and not self.budget_left()
        why = ("the move budget is spent" if left else
               "no replica on them can move to a broker that would take it without reducing rack "
               "diversity, exceeding a topic's cap or a broker's capacity")
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
            topic = work.snapshot.partitions[self.topic_parts[t][0]].topic
            first_broker = self.nodes - len(work.eligible)
            where = (f"broker {work.eligible[node - first_broker]}" if node >= first_broker
                     else f"rack {self.tree.names[node - 1]}")
            work.notes.append(
                f"{len(over)} (topic, broker or rack) pair(s) above the topic's cap (worst: topic "
                f"{topic} on {where}, {excess} above): {why}")
