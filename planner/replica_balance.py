"""Replica balance (KIP-166): even replica counts per broker with the fewest data moves.

Goals
    Brokers above ``avg * (1 + threshold)`` give replicas, brokers below ``avg * (1 - threshold)``
    take them (``avg`` = replicas per alive broker, threshold 10% by default as in KIP-166;
    ``threshold=0`` asks for the tightest balance, every broker within ``[floor(avg), ceil(avg)]``).
    The number of moves reaches the lower bound ``sum(max(0, count - hi))`` (``hi`` the upper end
    of the band, ``ceil(avg)`` at threshold 0), or ``sum(max(0, lo - count))`` when more is
    missing below the band than is in excess above it, wherever the racks allow.

Constraints
    - Never two replicas of a partition on one broker.
    - Never reduce rack diversity at any level of the rack tree (see :mod:`planner.racks`): a
      replica moves inside its rack, or to a rack that keeps the partition's spread.
    - Followers move before leaders (a moved leader replica changes the preferred leader).
    - Repair first (:mod:`planner.repair`): dead, unknown and forgotten brokers and placeholders.
    - ``max_moves`` caps repairs plus moves.

Algorithm
    1. *Targets*: every broker's count is clamped into ``[lo, hi]`` and the difference with the
       total is spread by water filling (raise the lowest, lower the highest; ties keep replicas
       where they are). ``sum(max(0, count - target))`` is then the minimum number of moves.
    2. *Racks*: per rack (leaf of the rack tree) the replicas to give and to take cancel out
       inside the rack; the rest must cross racks. First, target units are traded between racks
       where that costs no move (a giver keeps one more, or a taker needs one less). Then a
       small max flow over racks routes the rest, one edge per pair of racks whose capacity is
       the number of partitions that may move between them without losing diversity. A rack
       still short is fed through a third rack (a relay: one more move, noted). What cannot be
       routed stays: that rack's targets are raised (or lowered) by water filling inside the
       rack, and a note explains it. With uneven racks and partitions spanning all racks, no
       replica can change rack and each rack is balanced within itself.
    3. *Moves*: cross-rack moves along the flow, then moves inside each rack, from the broker
       with the most to give to the broker with the most to take that has never held the
       partition; for each giver, followers first in (topic, partition) order (for cluster
       balance, followers of partitions led by brokers with too many leaders first, so that the
       leader rule can then move those leaders in one change each). A giver always has a
       partition the taker lacks when it holds more replicas, so inside a rack the targets are
       always met.

    Time: ``O(P * RF + moves * RF * log B + racks^3)``.

Example
    Brokers 1..4 (no racks), 1 to 3 holding 4 replicas each, 4 new and empty: avg 3,
    band [3, 3]; brokers 1, 2, 3 each give one follower to broker 4: 3 moves, the bound.
"""

from __future__ import annotations

import heapq
import math
from collections import Counter
from collections.abc import Iterable
from fractions import Fraction

from assignors.snapshot import ClusterSnapshot, gc_paused

from .plan import MoveKind, Plan, Working
from .repair import repair_working


def replica_balance(snapshot: ClusterSnapshot, *, threshold: float | int | str = 10,
                    max_moves: int | None = None, forgotten: Iterable[int] = frozenset()) -> Plan:
    """Repair, then balance replica counts within the threshold band (see module doc)."""
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


def water_fill(counts: dict[int, int], members: Iterable[int], targets: dict[int, int],
               delta: int) -> None:
    """Change the targets of ``members`` by ``delta`` in total, one unit at a time: raise the
    lowest target (the broker holding more first), or lower the highest (holding fewer first)."""
    if delta == 0:
        return
    if delta > 0:
        heap = [(targets[b], -counts[b], b) for b in members]
        heapq.heapify(heap)
        for _ in range(delta):
            t, c, b = heapq.heappop(heap)
            targets[b] = t + 1
            heapq.heappush(heap, (t + 1, c, b))
    else:
        heap = [(-targets[b], counts[b], b) for b in members if targets[b] > 0]
        heapq.heapify(heap)
        for _ in range(-delta):
            t, c, b = heapq.heappop(heap)
            targets[b] = -t - 1
            if targets[b] > 0:
                heapq.heappush(heap, (t + 1, c, b))


def balance_replicas(work: Working, *, threshold: float | int | str = 10,
                     max_moves: int | None = None, max_leader_changes: int | None = None,
                     leaders_too: bool = False) -> None:
    """Repair then replica-balance ``work`` (a rule's own scratch copy).

    ``max_leader_changes`` (cluster balance) stops moving leader replicas once that many
    preferred leaders changed; changes forced by repairing a dead leader do not count."""
    pre = work.counts()
    counts = dict(pre)
    repairs = repair_working(work, max_moves=max_moves, load=counts)
    budget = None if max_moves is None else max_moves - repairs
    try:
        fraction = Fraction(str(threshold)) / 100
    except ValueError:
        raise ValueError(f"threshold must be a number of percent, got {threshold!r}") from None
    if fraction < 0:
        raise ValueError(f"threshold must be >= 0, got {threshold!r}")
    _Balancer(work, fraction, budget, pre, counts, max_leader_changes, leaders_too).run()


class _Balancer:
    __slots__ = (
        "budget", "counts", "holders", "leader_budget", "leader_want", "leaf", "leaf_members", "lo",
        "hi", "moved", "pre", "targets", "threshold", "tree", "via", "work",
    )

    def __init__(self, work: Working, threshold: Fraction, budget: int | None,
                 pre: dict[int, int], counts: dict[int, int],
                 leader_budget: int | None = None, leaders_too: bool = False) -> None:
        self.work = work
        self.leader_budget = leader_budget
        self.leader_want: dict[int, int] | None = None
        if leaders_too:   # cluster balance: leaders each broker has beyond the even share
            led = Counter(r[0] for r in work.replicas if r and r[0] in work.eligible_set)
            ceil = -(-sum(led.values()) // max(1, len(work.eligible)))
            self.leader_want = {b: c - ceil for b, c in led.items() if c > ceil}
        self.threshold = threshold
        self.budget = budget
        self.pre = pre
        self.tree = work.tree
        self.moved = 0
        self.via = 0
        self.counts = counts
        self.leaf = {b: (self.tree.leaf(b) if self.tree.depth else -1) for b in work.eligible}
        self.leaf_members: dict[int, list[int]] = {}
        for b in work.eligible:
            self.leaf_members.setdefault(self.leaf[b], []).append(b)
        self.holders: dict[int, list[int]] = {b: [] for b in work.eligible}
        self.targets: dict[int, int] = {}

    # -- helpers -----------------------------------------------------------------------
    def budget_left(self, extra: int = 0) -> bool:
        return self.budget is None or self.moved + extra < self.budget

    def supply(self, b: int) -> int:
        return self.counts[b] - self.targets[b]

    def candidates(self, donor: int):
        """Partitions on ``donor`` (lazily): followers first, then those it leads, each in
        (topic, partition) order. A partition moved away meanwhile is skipped. For cluster
        balance, followers of partitions led by brokers with too many leaders go first: the
        broker receiving the follower can then take over the leadership in one change."""
        reps = self.work.replicas
        held = self.holders[donor]
        want = self.leader_want
        if want is None:
            for k in range(len(held)):
                r = reps[held[k]]
                if r[0] != donor and donor in r:
                    yield held[k]
        else:   # one pass: wanted followers now, the others after it
            later = []
            for i in held:
                r = reps[i]
                if r[0] != donor and donor in r:
                    if want.get(r[0], 0) > 0:
                        yield i
                    else:
                        later.append(i)
            for i in later:
                r = reps[i]
                if r[0] != donor and donor in r:
                    yield i
        for k in range(len(held)):
            if self.leader_budget is not None and self.leader_budget <= 0:
                return
            r = reps[held[k]]
            if r[0] == donor:
                yield held[k]

    def do_move(self, i: int, source: int, destination: int) -> None:
        reps = self.work.replicas[i]
        slot = reps.index(source)
        if slot != 0 and self.leader_want is not None and reps[0] in self.leader_want:
            self.leader_want[reps[0]] -= 1
        if slot == 0 and self.leader_budget is not None:
            if self.leader_budget <= 0:
                raise AssertionError("leader budget spent")  # candidates() excludes leaders
            self.leader_budget -= 1
        reps[slot] = destination
        self.counts[source] -= 1
        self.counts[destination] += 1
        self.holders[destination].append(i)
        self.work.record(i, source, destination, MoveKind.REPLICA)
        self.moved += 1

    def pick_receiver(self, heap: list[tuple[int, int]], i: int, accept=None) -> int | None:
        """The receiver with the most left to take that does not hold the partition."""
        held: list[tuple[int, int]] = []
        found = None
        while heap:
            key, b = heap[0]
            current = self.counts[b] - self.targets[b]  # minus what b still takes
            if key != current or current >= 0:
                heapq.heappop(heap)
                if current < 0:
                    heapq.heappush(heap, (current, b))
                continue
            if self.work.held(i, b) or (accept is not None and not accept(b)):
                held.append(heapq.heappop(heap))
                continue
            found = b
            break
        for entry in held:
            heapq.heappush(heap, entry)
        return found

    # -- the rule ----------------------------------------------------------------------
    def run(self) -> None:
        work = self.work
        eligible = work.eligible
        if not eligible:
            work.notes.append("no alive broker: nothing to balance")
            return
        usable = work.eligible_set
        for i in work.order:
            reps = work.replicas[i]
            if usable.issuperset(reps):   # an unrepaired partition cannot be reassigned
                for b in reps:
                    self.holders[b].append(i)
        total = sum(self.counts.values())
        self.lo, self.hi = band(total, len(eligible), self.threshold)
        lo, hi = self.lo, self.hi
        repairs = work.bounds.get("repairs_needed", 0)
        pre = self.pre
        pre_over = sum(max(0, c - hi) for c in pre.values())
        pre_under = sum(max(0, lo - c) for c in pre.values())
        work.bounds["replica_moves_lower_bound"] = repairs + pre_over
        work.bounds["replica_moves_tight_bound"] = max(repairs + pre_over, pre_under)
        work.bounds["replicas_band_lo"] = lo
        work.bounds["replicas_band_hi"] = hi
        start = dict(self.counts)
        self.targets = {b: min(max(c, lo), hi) for b, c in self.counts.items()}
        water_fill(self.counts, eligible, self.targets, total - sum(self.targets.values()))
        self.align_racks()
        stuck = self.route_racks()
        for leaf in sorted(self.leaf_members):
            self.move_within(leaf)
        planned = sum(max(0, self.counts[b] - self.targets[b]) for b in eligible)
        stuck = [(leaf, left) for leaf, left in stuck
                 if any(not lo <= self.targets[b] <= hi for b in self.leaf_members[leaf])]
        if stuck:
            work.bounds["replica_moves_bound_given_racks"] = repairs + sum(
                max(0, start[b] - self.targets[b]) for b in eligible
            )
            for leaf, left in stuck:
                members = self.leaf_members[leaf]
                counts = [self.targets[b] for b in members]
                name = self.tree.names[leaf] if leaf >= 0 else "(all)"
                direction = "give" if left > 0 else "take"
                work.notes.append(
                    f"rack {name} ({len(members)} brokers) cannot {direction} {abs(left)} more "
                    f"replica(s) across racks without reducing rack diversity: its partitions "
                    f"already span the racks they could move to; it is balanced within itself "
                    f"to {min(counts)}-{max(counts)} replicas per broker instead of {lo}-{hi}"
                )
        if self.via:
            work.notes.append(
                f"{self.via} replica(s) reached the rack short of replicas through a third broker "
                f"that passes another one on ({self.via} more move(s) than the bound): no partition "
                "could go there directly without reducing rack diversity or doubling a broker"
            )
        if not self.budget_left() and planned:
            work.notes.append(f"move budget reached: {planned} replica move(s) left undone")

    # -- step 2: racks -----------------------------------------------------------------
    def rack_nets(self) -> dict[int, int]:
        nets: dict[int, int] = {}
        for leaf, members in self.leaf_members.items():
            nets[leaf] = sum(self.supply(b) for b in members)
        return nets

    def align_racks(self) -> None:
        """Trade target units between racks, inside the band, so that fewer replicas need to
        cross racks: a rack with more replicas than targets takes a unit from a rack with fewer
        (its donor keeps one more, or the other rack's taker gets one less). Only trades that
        cost no move; the rest crosses racks (step 2)."""
        if self.tree.depth == 0 or len(self.leaf_members) < 2:
            return
        lo, hi = self.lo, self.hi
        nets = self.rack_nets()
        for a in sorted(r for r, v in nets.items() if v > 0):
            raise_heap = [(-(self.counts[b] - self.targets[b]), self.targets[b], b)
                          for b in self.leaf_members[a] if self.targets[b] < hi]
            heapq.heapify(raise_heap)
            for b_rack in sorted(r for r, v in nets.items() if v < 0):
                lower = [(self.counts[b] - self.targets[b], -self.targets[b], b)
                         for b in self.leaf_members[b_rack] if self.targets[b] > lo]
                heapq.heapify(lower)
                while nets[a] > 0 and nets[b_rack] < 0 and raise_heap and lower:
                    y, x = raise_heap[0][2], lower[0][2]
                    if self.counts[y] <= self.targets[y] and self.counts[x] >= self.targets[x]:
                        break   # neither keeps a move: the trade would cost one, a cross move none
                    heapq.heappop(raise_heap)
                    heapq.heappop(lower)
                    self.targets[y] += 1
                    self.targets[x] -= 1
                    nets[a] -= 1
                    nets[b_rack] += 1
                    if self.targets[y] < hi:
                        heapq.heappush(raise_heap, (-(self.counts[y] - self.targets[y]), self.targets[y], y))
                    if self.targets[x] > lo:
                        heapq.heappush(lower, (self.counts[x] - self.targets[x], -self.targets[x], x))
                if nets[a] == 0:
                    break

    def route_racks(self) -> list[tuple[int, int]]:
        if self.tree.depth == 0 or len(self.leaf_members) < 2:
            return []
        for _ in range(3):
            nets = self.rack_nets()
            if all(v == 0 for v in nets.values()) or not self.budget_left():
                break
            flows = self.rack_flow(nets)
            done = 0
            for (a, b), amount in sorted(flows.items()):
                done += self.move_across(a, b, amount)
            if done == 0:
                break
        self.relay()
        nets = self.rack_nets()
        stuck = [(leaf, left) for leaf, left in sorted(nets.items()) if left]
        for leaf, left in stuck:
            water_fill(self.counts, self.leaf_members[leaf], self.targets, left)
        return stuck

    def relay(self) -> None:
        """A rack ``b`` still short of replicas that no rack with some to give can feed directly.
        Either a third rack ``m`` that can feed ``b`` gives one (one of its brokers lowers its
        target) while a rack ``a`` with some to give keeps one more (one of its brokers raises
        its target); or, when ``a`` cannot keep more, one of ``a``'s replicas goes to a broker of
        ``m`` that hands another replica on to ``b`` (two moves for one)."""
        lo, hi = self.lo, self.hi
        cache: dict = {}
        while self.budget_left(extra=1):
            nets = self.rack_nets()
            short = [b for b in sorted(nets) if nets[b] < 0]
            giving = [a for a in sorted(nets) if nets[a] > 0]
            extra = [a for a in giving if any(self.targets[x] < hi for x in self.leaf_members[a])]
            if not short or not giving:
                return
            if extra and self._relay_one(short, extra, lo, cache):
                continue
            if not self._relay_two_hops(short, giving, cache):
                return

    def _relay_two_hops(self, short: list[int], giving: list[int], cache: dict) -> bool:
        for b in short:
            takers = [r for r in self.leaf_members[b] if self.targets[r] > self.counts[r]]
            for a in giving:
                donors = [d for d in self.leaf_members[a] if self.supply(d) > 0]
                for m in sorted(self.leaf_members):
                    if m in (a, b):
                        continue
                    for x in self.leaf_members[m]:
                        onward = None       # a partition x can hand on to a taker of b
                        for j in self.candidates(x):
                            if b in self.allowed_leaves(j, x, cache):
                                r = next((r for r in takers if not self.work.held(j, r)), None)
                                if r is not None:
                                    onward = (j, r)
                                    break
                        if onward is None:
                            continue
                        for d in donors:
                            for i in self.candidates(d):
                                if (i != onward[0] and not self.work.held(i, x)
                                        and m in self.allowed_leaves(i, d, cache)):
                                    self.do_move(i, d, x)
                                    self.do_move(onward[0], x, onward[1])
                                    self.via += 1
                                    return True
        return False

    def _relay_one(self, short: list[int], extra: list[int], lo: int, cache: dict) -> bool:
        for b in short:
            takers = [r for r in self.leaf_members[b] if self.targets[r] > self.counts[r]]
            for m in sorted(self.leaf_members):
                if m == b or m in extra:
                    continue
                for x in sorted(self.leaf_members[m], key=lambda x: (self.targets[x] - self.counts[x], x)):
                    if self.targets[x] <= lo:
                        continue
                    for i in self.candidates(x):
                        if b not in self.allowed_leaves(i, x, cache):
                            continue
                        receiver = next((r for r in takers if not self.work.held(i, r)), None)
                        if receiver is None:
                            continue
                        a = extra[0]
                        keeper = min((y for y in self.leaf_members[a] if self.targets[y] < self.hi),
                                     key=lambda y: (self.targets[y] - self.counts[y], y))
                        self.targets[keeper] += 1
                        self.targets[x] -= 1
                        self.do_move(i, x, receiver)
                        return True
        return False

    def allowed_leaves(self, i: int, source: int, cache: dict) -> frozenset[int]:
        """Racks a replica of partition ``i`` on ``source`` may move to, diversity kept."""
        reps = self.work.replicas[i]
        tree = self.tree
        alive = self.work.eligible_set
        others = [b for b in reps if b != source and b in alive]
        key = (self.leaf[source], tuple(sorted(self.leaf[b] for b in others)))
        hit = cache.get(key)
        if hit is not None:
            return hit
        src_keys = tree.keys[source]
        other_keys = [tree.keys[b] for b in others]
        used = [{k[level] for k in other_keys} for level in range(tree.depth)]
        allowed = set()
        for leaf, members in self.leaf_members.items():
            if leaf == self.leaf[source]:
                continue
            dst_keys = tree.keys[members[0]]
            if all(src_keys[lv] in used[lv] or dst_keys[lv] not in used[lv] for lv in range(tree.depth)):
                allowed.add(leaf)
        hit = cache[key] = frozenset(allowed)
        return hit

    def rack_flow(self, nets: dict[int, int]) -> dict[tuple[int, int], int]:
        """Max flow from racks with replicas to give to racks that need them (few racks)."""
        givers = sorted(r for r, v in nets.items() if v > 0)
        takers = sorted(r for r, v in nets.items() if v < 0)
        if not givers or not takers:
            return {}
        cache: dict = {}
        cap: dict[tuple[int, int], int] = {}
        for a in givers:
            seen: set[int] = set()
            wanted = {b: min(nets[a], -nets[b]) for b in takers}   # more capacity is useless
            for b in self.leaf_members[a]:
                if self.supply(b) <= 0 or not wanted:
                    continue
                for i in self.holders[b]:
                    if not wanted:
                        break
                    if i in seen or b not in self.work.replicas[i]:
                        continue
                    seen.add(i)
                    for leaf in self.allowed_leaves(i, b, cache):
                        if leaf in wanted:
                            cap[(a, leaf)] = cap.get((a, leaf), 0) + 1
                            if cap[(a, leaf)] >= wanted[leaf]:
                                del wanted[leaf]
        # Edmonds-Karp on source -> givers -> takers -> sink
        flow: dict[tuple[int, int], int] = {}
        left_give = {a: nets[a] for a in givers}
        left_take = {b: -nets[b] for b in takers}
        while True:
            # BFS in the residual graph: source -> giver (left_give) -> taker (cap - flow)
            # -> sink (left_take); back edges taker -> giver where flow > 0
            parent: dict[tuple[str, int], tuple[str, int] | None] = {}
            queue = []
            for a in givers:
                if left_give[a] > 0:
                    parent[("g", a)] = None
                    queue.append(("g", a))
            end = None
            while queue and end is None:
                node = queue.pop(0)
                kind, r = node
                if kind == "g":
                    for b in takers:
                        if ("t", b) not in parent and cap.get((r, b), 0) - flow.get((r, b), 0) > 0:
                            parent[("t", b)] = node
                            if left_take[b] > 0:
                                end = ("t", b)
                                break
                            queue.append(("t", b))
                else:
                    for a in givers:
                        if ("g", a) not in parent and flow.get((a, r), 0) > 0:
                            parent[("g", a)] = node
                            queue.append(("g", a))
            if end is None:
                break
            path = []
            node = end
            while parent[node] is not None:
                path.append((parent[node], node))
                node = parent[node]
            start = node[1]
            amount = min(left_give[start], left_take[end[1]])
            for u, v in path:
                if u[0] == "g":
                    amount = min(amount, cap[(u[1], v[1])] - flow.get((u[1], v[1]), 0))
                else:
                    amount = min(amount, flow[(v[1], u[1])])
            for u, v in path:
                if u[0] == "g":
                    flow[(u[1], v[1])] = flow.get((u[1], v[1]), 0) + amount
                else:
                    flow[(v[1], u[1])] -= amount
            left_give[start] -= amount
            left_take[end[1]] -= amount
        return {k: v for k, v in flow.items() if v > 0}

    def move_across(self, a: int, b: int, amount: int) -> int:
        """Up to ``amount`` moves from givers of rack ``a`` to takers of rack ``b``."""
        done = 0
        cache: dict = {}
        heap = [(self.counts[r] - self.targets[r], r) for r in self.leaf_members[b]
                if self.targets[r] > self.counts[r]]
        heapq.heapify(heap)
        donors = sorted((d for d in self.leaf_members[a] if self.supply(d) > 0),
                        key=lambda d: (-self.supply(d), d))
        for donor in donors:
            for i in self.candidates(donor):
                if done >= amount or self.supply(donor) <= 0 or not self.budget_left():
                    break
                if b not in self.allowed_leaves(i, donor, cache):
                    continue
                receiver = self.pick_receiver(heap, i)
                if receiver is None:
                    if not heap:
                        return done
                    continue
                self.do_move(i, donor, receiver)
                done += 1
        if done < amount and heap:
            done += self.move_across_via(a, b, amount - done, cache)
        return done

    def move_across_via(self, a: int, b: int, amount: int, cache: dict) -> int:
        """Every partition that may cross to rack ``b`` already has a replica on its takers:
        send it to another broker of ``b``, which passes one replica on to a taker inside the
        rack (one more move, counted in the notes), rather than leave both racks off balance."""
        done = 0
        donors = sorted((d for d in self.leaf_members[a] if self.supply(d) > 0),
                        key=lambda d: (-self.supply(d), d))
        for donor in donors:
            for i in self.candidates(donor):
                if done >= amount or self.supply(donor) <= 0 or not self.budget_left(extra=1):
                    return done
                if b not in self.allowed_leaves(i, donor, cache):
                    continue
                takers = [r for r in self.leaf_members[b] if self.targets[r] > self.counts[r]]
                via = next((y for y in sorted(self.leaf_members[b], key=lambda y: (self.counts[y], y))
                            if not self.work.held(i, y) and self.targets[y] <= self.counts[y]
                            and any(self._gives_to(y, r) for r in takers)), None)
                if via is None:
                    continue
                self.do_move(i, donor, via)
                self.via += 1
                done += 1
        return done

    def _gives_to(self, giver: int, taker: int) -> bool:
        return any(not self.work.held(i, taker) for i in self.candidates(giver))

    # -- step 3: inside a rack ---------------------------------------------------------
    def move_within(self, leaf: int) -> None:
        members = self.leaf_members[leaf]
        heap = [(self.counts[r] - self.targets[r], r) for r in members
                if self.targets[r] > self.counts[r]]
        if not heap:
            return
        heapq.heapify(heap)
        donors = sorted((d for d in members if self.supply(d) > 0),
                        key=lambda d: (-self.supply(d), d))
        for donor in donors:
            for i in self.candidates(donor):
                if self.supply(donor) <= 0 or not self.budget_left() or not heap:
                    break
                receiver = self.pick_receiver(heap, i)
                if receiver is None:
                    continue
                self.do_move(i, donor, receiver)
