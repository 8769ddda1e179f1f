"""Leader balance: reorder replica lists so preferred leaders are even, changing the fewest.

Goals
    Every alive broker is the preferred leader of between ``floor(P/B)`` and ``ceil(P/B)``
    partitions (``P`` partitions with an alive replica, ``B`` alive brokers), with the minimum
    number of partitions whose preferred leader changes. No data moves: only the order of each
    replica list changes (the new leader goes first, the others keep their order).

Constraints
    - A leader is one of the partition's replicas. Partitions with a replica on a dead, unknown
      or forgotten broker (or a placeholder) are left alone: Kafka cannot reassign a replica list
      naming such a broker; repair them first (cluster balance does).
    - When the band is not reachable (a broker holds too few replicas to lead ``floor(P/B)``, or
      leads partitions no other alive broker can take), the plan is the *best reachable*: the
      smallest ``sum(leaders^2)`` (the most even counts), and among those the fewest changes.
      When the band is reachable the two criteria agree. The notes say which brokers stay
      outside the band and why.
    - ``max_leader_changes`` caps the number of changed partitions (the most useful first);
      partitions whose baseline leader is dead do not count (their change is a repair).
    - ``baseline``: the snapshot whose leaders count as unchanged (cluster-balance passes the
      snapshot before its replica moves; by default the input itself).

Algorithm
    A min-cost flow on brokers. Moving the leadership of partition ``p`` from ``x`` to ``y``
    costs ``chg(y) - chg(x)`` where ``chg(z)`` is 0 for ``p``'s baseline leader and 1 for any
    other replica; a broker's count ``c`` costs ``M * c^2`` with ``M > P``. A flow is optimal
    exactly when its residual graph has no negative cycle.

    1. *Bands*: water filling over every broker's limits (it can lead at most the ``r`` partitions
       it holds, and must lead the ``m`` that only it holds) gives each broker a band ``[lo, hi]``:
       the global ``[floor, ceil]`` of the unlimited brokers, or its limit. Any plan inside the
       bands has the minimum ``sum(leaders^2)``.
    2. *Greedy* (the fast path): as many leaderships as possible go straight from brokers above
       their band to replicas below theirs, by a max flow (partitions without a baseline leader
       first, as they cost nothing more); what is left goes to brokers with room (or brokers
       with spare feed those still below), then through one intermediate broker.
    3. *Certificate*: when every broker is inside its band, Bellman-Ford from zero potentials
       looks for a negative cycle in the residual graph (LP duality: none means no plan with
       fewer changes exists); one found is cancelled and the search repeated. An edge of an
       unchanged partition costs +1 and cannot lower a distance of -1 or more, so only changed
       partitions are scanned until a broker falls to -2.
    4. *Exact fallback* when there is no certificate: primal-dual successive shortest paths from
       the baseline on the ``M * c^2`` costs (SPFA distances, then augmenting along
       zero-reduced-cost paths by depth-first search until none is left, repeated until no
       negative path remains).

    Time: the fast path is ``O(P * RF + B log B)`` plus a max flow on a graph of a few thousand
    nodes (givers, groups of partitions, takers) and ``O(cycles * P * RF)`` for the certificate
    (a million partitions on 1,000 brokers: about 3 s). The fallback is
    ``O(phases * (k * P * RF + F * P * RF))`` for ``F`` augmenting paths and ``k`` SPFA passes
    (``O(B)`` in the worst case). It runs when the band cannot be reached for reasons that are
    not local to one broker, typically leader-only plans on clusters whose replica counts are
    far from even (measured: 2.6 s at 3,000 partitions, about 8 minutes at 30,000); balance
    replicas first (cluster balance), after which the fast path applies.

Example
    Brokers 1, 2, 3; partitions ``a [1,2] b [1,3] c [1,2] d [2,3] e [1,3] f [3,1]``.
    Leaders 1:4, 2:1, 3:1, band [2, 2]. Broker 1 gives two of its partitions: ``a`` to 2 and
    ``b`` to 3 -> ``a [2,1] b [3,1]``: 2 changes, the optimum (broker 1 must lose 2).
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Iterable
from itertools import chain, compress
from operator import ne

from assignors.snapshot import ClusterSnapshot, gc_paused

from .plan import MoveKind, Plan, Working


def leader_balance(snapshot: ClusterSnapshot, *, max_leader_changes: int | None = None,
                   baseline: ClusterSnapshot | None = None,
                   forgotten: Iterable[int] = frozenset(), exact: bool = False) -> Plan:
    """Reorder replica lists for even preferred leaders with the fewest changes (see module doc).

    ``exact=True`` skips the greedy fast path and runs the min-cost flow from the baseline (the
    same answer, slower: a cross-check)."""
    with gc_paused():
        work = Working(snapshot, forgotten)
        balance_leaders(work, max_leader_changes=max_leader_changes, baseline=baseline, exact=exact)
        return work.plan()


class LeaderProblem:
    """The flow problem on broker indices; ``solve`` leaves the answer in ``holder``.

    ``lo[u]``/``hi[u]`` is the band broker ``u`` can reach in a most balanced plan: the global
    ``[floor, ceil]`` of the brokers not limited by their replicas, ``r[u]`` (every partition it
    could lead) for a broker that cannot reach the floor, ``m[u]`` (partitions only it can lead)
    for one forced above the ceiling. Water filling over these limits is the minimum of
    ``sum(leaders^2)`` for the relaxation ``m <= leaders <= r``; a plan inside the bands reaches
    it, so it is optimal for the real problem too.
    """

    __slots__ = (
        "base", "broker_ids", "budget", "cand", "ceil", "count", "floor", "hi", "holder", "led",
        "lo", "method", "must", "n", "parts", "penalty", "quadratic", "reach",
    )

    def __init__(self, broker_ids: list[int], cand: list[tuple[int, ...]], base: list[int],
                 start: list[int], budget: int | None) -> None:
        self.broker_ids = broker_ids
        self.n = len(broker_ids)
        self.cand = cand          # per leadable partition: candidate broker indices
        self.base = base          # baseline leader index, or -1 (every choice is a change)
        self.budget = budget
        self.parts = len(cand)
        self.floor = self.parts // self.n if self.n else 0
        self.ceil = -(-self.parts // self.n) if self.n else 0
        self.penalty = self.parts + 1  # M: outweighs any number of leader changes
        self.quadratic = False
        self.holder = list(start)
        self.count = [0] * self.n
        self.led: list[set[int]] = [set() for _ in range(self.n)]
        self.reach = [0] * self.n   # partitions u could lead
        self.must = [0] * self.n    # partitions only u can lead
        for p, h in enumerate(self.holder):
            self.count[h] += 1
            self.led[h].add(p)
        for u, k in Counter(chain.from_iterable(cand)).items():
            self.reach[u] = k
        for u, k in Counter(c[0] for c in cand if len(c) == 1).items():
            self.must[u] = k
        self.lo, self.hi = self._bands()
        self.method = "greedy"

    def _bands(self) -> tuple[list[int], list[int]]:
        fixed: dict[int, int] = {}
        while True:
            free = [u for u in range(self.n) if u not in fixed]
            if not free:
                break
            rest = self.parts - sum(fixed.values())
            f, c = rest // len(free), -(-rest // len(free))
            new = {u: self.reach[u] for u in free if self.reach[u] < f}
            new.update({u: self.must[u] for u in free if self.must[u] > c})
            if not new:
                break
            fixed.update(new)
        lo, hi = [0] * self.n, [0] * self.n
        for u in range(self.n):
            if u in fixed:
                lo[u] = hi[u] = fixed[u]
            else:
                lo[u], hi[u] = max(f, self.must[u]), min(c, self.reach[u])
        return lo, hi

    # -- costs -----------------------------------------------------------------------
    def chg(self, p: int, b: int) -> int:
        return 0 if b == self.base[p] else 1

    def dec_cost(self, u: int) -> int:
        """Marginal cost of one leader less on ``u``."""
        c = self.count[u]
        if self.quadratic:
            return -self.penalty * (2 * c - 1)
        if c > self.hi[u]:
            return -self.penalty
        if c <= self.lo[u]:
            return self.penalty
        return 0

    def inc_cost(self, u: int) -> int:
        c = self.count[u]
        if self.quadratic:
            return self.penalty * (2 * c + 1)
        if c < self.lo[u]:
            return -self.penalty
        if c >= self.hi[u]:
            return self.penalty
        return 0

    def changes(self) -> int:
        return sum(map(ne, self.holder, self.base))

    def move(self, p: int, y: int) -> None:
        x = self.holder[p]
        self.led[x].discard(p)
        self.led[y].add(p)
        self.count[x] -= 1
        self.count[y] += 1
        self.holder[p] = y

    def distance(self) -> int:
        """Leaders outside the global band [floor, ceil], summed over brokers."""
        return sum(max(0, c - self.ceil) + max(0, self.floor - c) for c in self.count)

    def in_bands(self) -> bool:
        return all(self.lo[u] <= self.count[u] <= self.hi[u] for u in range(self.n))

    # -- 1. greedy ---------------------------------------------------------------------
    def greedy(self) -> None:
        budget = self.budget
        used = self.changes()
        count, lo, hi, ids = self.count, self.lo, self.hi, self.broker_ids
        # partitions without a baseline leader cost the same anywhere: spread them first
        for p in range(self.parts):
            if self.base[p] == -1:
                h = self.holder[p]
                best = min(self.cand[p], key=lambda y: (count[y] - (y == h) - lo[y], ids[y]))
                if best != h:
                    self.move(p, best)

        def order(u: int) -> list[int]:  # partitions of u, those already changed first (free)
            led = sorted(self.led[u])
            return [p for p in led if self.base[p] != u] + [p for p in led if self.base[p] == u]

        def give(u: int, target_ok, stop_at: int) -> None:
            nonlocal used
            for p in order(u):
                if count[u] <= stop_at:
                    return
                best = None
                for y in self.cand[p]:
                    if y != u and target_ok(y) and (
                            best is None or (count[y] - lo[y], ids[y]) < (count[best] - lo[best], ids[best])):
                        best = y
                if best is None:
                    continue
                delta = self.chg(p, best) - self.chg(p, u)
                if budget is not None and used + delta > budget:
                    continue
                used += delta
                self.move(p, best)

        def overs() -> list[int]:
            return sorted((u for u in range(self.n) if count[u] > hi[u]),
                          key=lambda u: (hi[u] - count[u], ids[u]))

        n = self.n
        if budget is None:   # as many direct moves as a max flow allows, free partitions first
            self.direct_flow({u: count[u] - hi[u] for u in range(n) if count[u] > hi[u]},
                             {v: lo[v] - count[v] for v in range(n) if count[v] < lo[v]})
        for u in overs():                                   # above its band -> below its band
            give(u, lambda y: count[y] < lo[y], hi[u])
        over = any(count[u] > hi[u] for u in range(n))
        under = any(count[u] < lo[u] for u in range(n))
        if over and not under:                              # above -> room left in the band
            if budget is None:
                self.direct_flow({u: count[u] - hi[u] for u in range(n) if count[u] > hi[u]},
                                 {v: hi[v] - count[v] for v in range(n) if count[v] < hi[v]})
            for u in overs():
                give(u, lambda y: count[y] < hi[y], hi[u])
        elif under and not over:                            # spare in the band -> below
            if budget is None:
                self.direct_flow({u: count[u] - lo[u] for u in range(n) if count[u] > lo[u]},
                                 {v: lo[v] - count[v] for v in range(n) if count[v] < lo[v]})
            for u in sorted(range(n), key=lambda u: ids[u]):
                if not any(count[y] < lo[y] for y in range(n)):
                    break
                if count[u] > lo[u]:
                    give(u, lambda y: count[y] < lo[y], lo[u])

    def direct_flow(self, give: dict[int, int], take: dict[int, int]) -> None:
        """Move leaderships straight from givers to takers, as many as possible: a max flow
        (Dinic) from the givers (capacity: what they may give) through groups of partitions
        (a giver's partitions with the same takers among their replicas) to the takers
        (capacity: what they may take). Partitions that change nothing more (no baseline leader)
        go in a first round, so they are used before any new change."""
        if not give or not take:
            return
        rounds: tuple[dict, dict] = ({}, {})   # free partitions, then those u leads by baseline
        base, cand = self.base, self.cand
        takers = take.keys()
        for u in sorted(give):
            for p in sorted(self.led[u]):
                c = cand[p]
                if takers.isdisjoint(c):
                    continue
                b = base[p]
                if b != -1 and b != u:
                    continue
                sig = tuple(y for y in c if y in take and y != u)
                if sig:
                    rounds[b == u].setdefault((u, sig), []).append(p)
        for found in rounds:
            groups: dict[tuple[int, tuple[int, ...]], list[int]] = {}
            for (u, sig), ps in found.items():     # drop givers and takers already satisfied
                sig = tuple(v for v in sig if v in take)
                if u in give and sig:
                    groups.setdefault((u, sig), []).extend(ps)
            if not groups:
                continue
            flow = _max_flow(give, take, groups)
            for (u, sig), targets in flow.items():
                parts = groups[(u, sig)]
                k = 0
                for v, amount in targets:
                    for p in parts[k:k + amount]:
                        self.move(p, v)
                    k += amount
                    give[u] -= amount
                    take[v] -= amount
            give = {u: c for u, c in give.items() if c > 0}
            take = {v: c for v, c in take.items() if c > 0}
            if not give or not take:
                return

    def leftovers(self) -> None:
        """Two-hop paths ``u -> m -> v`` (``m`` keeps its count) for what the greedy left:
        ``out(u)`` from the partitions ``u`` leads, ``in(v)`` from one scan of the partitions
        ``v`` could lead, then the cheapest common ``m``."""
        count, lo, hi, ids = self.count, self.lo, self.hi, self.broker_ids
        budget = self.budget
        used = self.changes()
        tried: set[tuple[int, int]] = set()
        reverse: dict[int, list[int]] = {}
        while True:
            over = [u for u in range(self.n) if count[u] > hi[u]]
            under = [v for v in range(self.n) if count[v] < lo[v]]
            if over and under:
                givers, takers = over, under
            elif over:
                givers, takers = over, [v for v in range(self.n) if count[v] < hi[v]]
            elif under:
                givers, takers = [u for u in range(self.n) if count[u] > lo[u]], under
            else:
                return
            pair = next(((u, v) for u in givers for v in takers if (u, v) not in tried), None)
            if pair is None or len(tried) > 4 * self.n:   # bounded: the exact flow follows
                return
            u, v = pair
            tried.add(pair)
            out: dict[int, tuple[int, int]] = {}   # m -> (cost, partition led by u)
            for p in sorted(self.led[u]):
                for m in self.cand[p]:
                    if m != u:
                        c = self.chg(p, m) - self.chg(p, u)
                        if m not in out or c < out[m][0]:
                            out[m] = (c, p)
            if v in out:   # a direct edge appeared after other fixes
                c, p = out[v]
                if budget is None or used + c <= budget:
                    used += c
                    self.move(p, v)
                    tried.clear()
                continue
            if v not in reverse:
                reverse = self._could_lead(takers)
            into: dict[int, tuple[int, int]] = {}  # m -> (cost, partition m leads that v could)
            for p2 in reverse[v]:
                m = self.holder[p2]
                if m != v and m != u and m in out:
                    c2 = self.chg(p2, v) - self.chg(p2, m)
                    if m not in into or c2 < into[m][0]:
                        into[m] = (c2, p2)
            best = None
            for m in sorted(into, key=lambda m: ids[m]):
                c = out[m][0] + into[m][0]
                if best is None or c < best[0]:
                    best = (c, out[m][1], m, into[m][1])
            if best is None:
                continue
            c, p1, m, p2 = best
            if budget is not None and used + c > budget:
                continue
            used += c
            self.move(p1, m)
            self.move(p2, v)
            tried.clear()

    def _could_lead(self, brokers: list[int]) -> dict[int, list[int]]:
        """For each of ``brokers``, the partitions it is a candidate of (one scan)."""
        wanted = set(brokers)
        out: dict[int, list[int]] = {b: [] for b in brokers}
        for p, cands in enumerate(self.cand):
            for y in cands:
                if y in wanted:
                    out[y].append(p)
        return out

    # -- 2. certificate ----------------------------------------------------------------
    def certified(self, max_cancels: int = 10_000) -> bool:
        """True when the plan is proved optimal, after cancelling the negative cycles found.

        Bellman-Ford (queue based) from zero potentials on the residual graph. An edge that costs
        +1 (an unchanged partition) cannot lower a distance while its tail is at -1 or above,
        so only changed partitions are scanned until a broker falls to -2. A distance below
        ``-(B + 2)`` reveals a negative cycle; it is cancelled (fewer changes, same bands) and
        the search starts again. Needs every broker inside its band (no ``-M`` edges)."""
        for _ in range(max_cancels):
            if not self.in_bands():
                return False
            cycle = self._negative_cycle()
            if cycle is None:
                return True
            if not self._cancel(cycle):
                return False
        return False

    def _negative_cycle(self) -> list[tuple[int, int, int]] | None:
        n = self.n
        big = self.penalty
        s_node, t_node = n, n + 1
        limit = -(n + 3)                       # a simple path cannot be more negative
        changed: list[list[int]] = [[] for _ in range(n)]
        for p, h in enumerate(self.holder):
            if h != self.base[p]:
                changed[h].append(p)
        dist = [0] * (n + 2)
        pred: list[tuple[int, int] | None] = [None] * (n + 2)   # (tail, partition or -1)
        queue: deque[int] = deque(range(n + 2))
        queued = [True] * (n + 2)
        scanned_plus = [0] * n                 # the distance at which +1 edges were scanned
        relaxed = 0
        while queue:
            x = queue.popleft()
            queued[x] = False
            dx = dist[x]
            if relaxed > n + 2:                # amortised: look for a cycle of predecessors
                relaxed = 0
                on_cycle = self._pred_cycle(pred)
                if on_cycle is not None:
                    return self._cycle_through(on_cycle, pred)
            relax: list[tuple[int, int, int]] = []
            if x == s_node:
                relax = [(u, dx + self.dec_cost(u), -1) for u in range(n)
                         if self.count[u] > 0 and self.dec_cost(u) < big]
            elif x == t_node:
                relax = [(s_node, dx, -1)]
            else:
                inc = self.inc_cost(x)
                if inc < big:
                    relax.append((t_node, dx + inc, -1))
                for p in changed[x]:
                    bp = self.base[p]
                    for y in self.cand[p]:
                        if y != x:
                            relax.append((y, dx + (0 if y == bp else 1) - 1, p))
                if dx <= -2 and dx < scanned_plus[x]:
                    scanned_plus[x] = dx
                    for p in self.led[x]:
                        if self.base[p] == x:
                            for y in self.cand[p]:
                                if y != x:
                                    relax.append((y, dx + 1, p))
            for y, nd, p in relax:
                if nd < dist[y]:
                    dist[y] = nd
                    pred[y] = (x, p)
                    relaxed += 1
                    if nd < limit:
                        return self._cycle_through(y, pred)
                    if not queued[y]:
                        queued[y] = True
                        queue.append(y)
        return None

    @staticmethod
    def _pred_cycle(pred: list[tuple[int, int] | None]) -> int | None:
        """A node on a cycle of the predecessor graph (a negative cycle), or None."""
        state = [0] * len(pred)               # 0 new, 1 on the current walk, 2 done
        for start in range(len(pred)):
            node = start
            walk = []
            while node is not None and state[node] == 0:
                state[node] = 1
                walk.append(node)
                edge = pred[node]
                node = edge[0] if edge is not None else None
            if node is not None and state[node] == 1:
                return node
            for w in walk:
                state[w] = 2
        return None

    def _cycle_through(self, y: int, pred: list[tuple[int, int] | None]) -> list[tuple[int, int, int]]:
        """The cycle of predecessor edges reached from ``y``, as (tail, head, partition)."""
        node = y
        for _ in range(self.n + 2):            # walk back far enough to be on the cycle
            node = pred[node][0]
        cycle = []
        start = node
        while True:
            tail, p = pred[node]
            cycle.append((tail, node, p))
            node = tail
            if node == start:
                break
        cycle.reverse()
        return cycle

    def _cancel(self, cycle: list[tuple[int, int, int]]) -> bool:
        """Apply the broker-to-broker moves of a negative cycle (S and T edges only shift a
        unit between two brokers inside their bands)."""
        moves = [(x, y, p) for x, y, p in cycle if p >= 0]
        # start at a move whose partition is where the cycle expects it
        for k in range(len(moves)):
            order = moves[k:] + moves[:k]
            holder = {}
            ok = True
            for x, y, p in order:
                if holder.get(p, self.holder[p]) != x:
                    ok = False
                    break
                holder[p] = y
            if ok:
                before = self.changes()
                for x, y, p in order:
                    self.move(p, y)
                if self.changes() < before or self.in_bands():
                    return True
                return False
        return False

    # -- 3. exact fallback -------------------------------------------------------------
    def reset(self, start: list[int]) -> None:
        for p in range(self.parts):
            if self.holder[p] != start[p]:
                self.move(p, start[p])

    def shortest(self) -> list[float]:
        inf = float("inf")
        dist: list[float] = [inf] * self.n
        queue: deque[int] = deque()
        in_queue = [False] * self.n
        for u in range(self.n):
            if self.count[u] > 0:
                dist[u] = self.dec_cost(u)
                queue.append(u)
                in_queue[u] = True
        while queue:
            u = queue.popleft()
            in_queue[u] = False
            du = dist[u]
            for p in self.led[u]:
                bp = self.base[p]
                cu = 0 if bp == u else 1
                for y in self.cand[p]:
                    if y == u:
                        continue
                    nd = du + (0 if y == bp else 1) - cu
                    if nd < dist[y]:
                        dist[y] = nd
                        if not in_queue[y]:
                            in_queue[y] = True
                            queue.append(y)
        return dist

    def augment_tight(self, dist: list[float], target: float) -> bool:
        """One zero-reduced-cost path from S to T by iterative DFS; apply it. False if none."""
        n = self.n
        visited = [False] * n
        for s in range(n):
            if self.count[s] == 0 or dist[s] != self.dec_cost(s) or visited[s]:
                continue
            visited[s] = True
            stack: list[tuple[int, list[tuple[int, int]]]] = [(s, [])]
            while stack:
                u, path = stack.pop()
                if path and dist[u] + self.inc_cost(u) == target:
                    return self._apply(path)
                for p in sorted(self.led[u]):
                    cu = 0 if self.base[p] == u else 1
                    for y in self.cand[p]:
                        if y == u or visited[y]:
                            continue
                        if dist[u] + self.chg(p, y) - cu == dist[y]:
                            visited[y] = True
                            stack.append((y, path + [(p, y)]))
        return False

    def _apply(self, path: list[tuple[int, int]]) -> bool:
        if self.budget is not None:
            final: dict[int, int] = {}
            for p, y in path:
                final[p] = y
            delta = sum(self.chg(p, y) - self.chg(p, self.holder[p]) for p, y in final.items())
            if self.changes() + delta > self.budget:
                return False
        for p, y in path:
            self.move(p, y)
        return True

    def exact(self, start: list[int]) -> None:
        """Successive shortest paths for min sum(leaders^2), then min changes."""
        self.method = "min-cost flow"
        self.quadratic = True
        self.reset(start)
        while True:
            dist = self.shortest()
            target = min((dist[v] + self.inc_cost(v) for v in range(self.n)), default=0)
            if target >= 0:
                break
            pushed = False
            while self.augment_tight(dist, target):
                pushed = True
            if not pushed:
                break  # only when the budget stops every remaining path
        self.quadratic = False

    def solve(self, exact: bool = False) -> None:
        if self.n == 0 or self.parts == 0:
            return
        start = list(self.holder)
        if exact:
            self.exact(start)
            return
        self.greedy()
        if not self.in_bands():
            self.leftovers()
        if self.budget is not None:
            return  # a budget cut is a prefix of the plan, not an optimum
        if not self.certified():
            self.exact(start)


def balance_leaders(work: Working, *, max_leader_changes: int | None = None,
                    baseline: ClusterSnapshot | None = None, exact: bool = False) -> LeaderProblem | None:
    """Leader-balance ``work`` (a rule's own scratch copy); notes and bounds go on ``work``."""
    eligible = work.eligible
    index = {b: i for i, b in enumerate(eligible)}
    if baseline is work.snapshot:
        baseline = None          # the scratch copy's own input: its original lists
    if baseline is not None:
        base_first = {(p.topic, p.partition): p.replicas[0] for p in baseline.partitions}
    parts = work.snapshot.partitions
    cand: list[tuple[int, ...]] = []
    base: list[int] = []
    start: list[int] = []
    current: list[int] = []   # index of the current first replica, -1 when not alive
    members: list[int] = []
    unleadable = 0
    forced = 0  # partitions whose baseline leader is not alive: a change that is a repair
    replicas, original = work.replicas, work.original
    eligible_set = work.eligible_set
    get = index.get
    add_member, add_cand, add_base, add_start, add_current = (
        members.append, cand.append, base.append, start.append, current.append)
    for i in work.order:
        reps = replicas[i]
        if eligible_set.issuperset(reps):
            cands = tuple(map(index.__getitem__, reps))
        else:
            # Kafka cannot reassign a list naming a dead or unknown broker: the order stays,
            # and an alive first replica keeps counting as a leader it cannot hand over
            unleadable += 1
            if reps[0] not in index:
                continue
            cands = (index[reps[0]],)
        if baseline is not None:
            first = base_first.get((parts[i].topic, parts[i].partition), reps[0])
        else:
            first = original[i][0]
        b0 = get(first, -1)
        if b0 == -1:
            forced += 1
        elif b0 not in cands:
            b0 = -1
        now = get(reps[0], -1)
        add_member(i)
        add_cand(cands)
        add_base(b0)
        add_current(now)
        add_start(b0 if b0 != -1 else now if now != -1 else cands[0])
    if not members:
        if unleadable:
            work.notes.append(_unleadable(unleadable))
        return None
    budget = None if max_leader_changes is None else max_leader_changes + forced
    problem = LeaderProblem(eligible, cand, base, start, budget)
    before = list(problem.count)
    over = sum(max(0, c - problem.ceil) for c in before)
    under = sum(max(0, problem.floor - c) for c in before)
    free = sum(1 for b in base if b == -1)
    problem.solve(exact=exact)
    for k in compress(range(len(members)), map(ne, problem.holder, current)):
        reps = work.replicas[members[k]]
        leader = eligible[problem.holder[k]]
        old = reps[0]
        reps.remove(leader)
        reps.insert(0, leader)
        work.record(members[k], old, leader, MoveKind.LEADER)
    work.bounds["leader_changes_lower_bound"] = max(over, under, free)
    if max_leader_changes is None:
        work.bounds["leader_changes_optimum"] = problem.changes()
    work.bounds["leaders_floor"] = problem.floor
    work.bounds["leaders_ceil"] = problem.ceil
    distance = problem.distance()
    band = f"[{problem.floor}, {problem.ceil}]"
    if distance:
        outside = [u for u, c in enumerate(problem.count) if c < problem.floor or c > problem.ceil]
        shown = ", ".join(f"{eligible[u]}:{problem.count[u]}" for u in outside[:10])
        shown += ", ..." if len(outside) > 10 else ""
        if budget is not None and problem.changes() >= budget:
            work.notes.append(
                f"leader budget of {max_leader_changes} change(s) reached before the band {band}; "
                f"brokers outside it (broker:leaders) {shown}"
            )
        else:
            few = [eligible[u] for u in outside if problem.reach[u] < problem.floor]
            forced_up = [eligible[u] for u in outside if problem.must[u] > problem.ceil]
            why = []
            if few:
                why.append(f"{_ids(few)} hold only partitions enough to lead fewer")
            if forced_up:
                why.append(f"{_ids(forced_up)} lead partitions no other alive broker holds")
            if len(few) + len(forced_up) < len(outside):
                why.append("the others cannot trade leaders with them without moving data")
            work.notes.append(
                f"preferred-leader band {band} is not reachable by reordering replicas "
                f"({'; '.join(why)}): best reachable, the most even counts, leaves {distance} "
                f"leader(s) outside it (broker:leaders {shown}){_inside(problem, outside)}"
            )
    if unleadable:
        work.notes.append(_unleadable(unleadable))
    return problem


def _max_flow(give: dict[int, int], take: dict[int, int],
              groups: dict[tuple[int, tuple[int, ...]], list[int]]) -> dict[tuple, list[tuple[int, int]]]:
    """Dinic's max flow on source -> giver -> group -> taker -> sink; returns, per group, the
    units sent to each taker. The graph has a few thousand nodes even at a million partitions."""
    keys = sorted(groups)
    givers = sorted(give)
    takers = sorted(take)
    node_g = {u: 1 + i for i, u in enumerate(givers)}
    node_k = {k: 1 + len(givers) + i for i, k in enumerate(keys)}
    node_t = {v: 1 + len(givers) + len(keys) + i for i, v in enumerate(takers)}
    sink = 1 + len(givers) + len(keys) + len(takers)
    to: list[int] = []
    cap: list[int] = []
    adj: list[list[int]] = [[] for _ in range(sink + 1)]

    def edge(a: int, b: int, c: int) -> int:
        adj[a].append(len(to))
        to.append(b)
        cap.append(c)
        adj[b].append(len(to))
        to.append(a)
        cap.append(0)
        return len(to) - 2

    for u in givers:
        edge(0, node_g[u], give[u])
    group_edges: dict[tuple, list[tuple[int, int]]] = {}
    for k in keys:
        u, sig = k
        edge(node_g[u], node_k[k], len(groups[k]))
        group_edges[k] = [(v, edge(node_k[k], node_t[v], len(groups[k]))) for v in sig]
    for v in takers:
        edge(node_t[v], sink, take[v])
    while True:
        level = [-1] * (sink + 1)
        level[0] = 0
        queue = [0]
        for a in queue:
            for e in adj[a]:
                if cap[e] > 0 and level[to[e]] < 0:
                    level[to[e]] = level[a] + 1
                    queue.append(to[e])
        if level[sink] < 0:
            break
        it = [0] * (sink + 1)

        def push(a: int, limit: int) -> int:
            if a == sink:
                return limit
            while it[a] < len(adj[a]):
                e = adj[a][it[a]]
                b = to[e]
                if cap[e] > 0 and level[b] == level[a] + 1:
                    got = push(b, min(limit, cap[e]))
                    if got:
                        cap[e] -= got
                        cap[e ^ 1] += got
                        return got
                it[a] += 1
            return 0

        while push(0, 1 << 62):
            pass
    return {k: [(v, cap[e ^ 1]) for v, e in pairs if cap[e ^ 1] > 0] for k, pairs in group_edges.items()}


def _unleadable(n: int) -> str:
    return (f"{n} partition(s) with a replica on a dead, unknown or forgotten broker (or a "
            "placeholder) keep their order: repair them first (mode repair or cluster)")


def _ids(brokers: list[int]) -> str:
    shown = ", ".join(str(b) for b in brokers[:10]) + (", ..." if len(brokers) > 10 else "")
    return f"broker{'s' if len(brokers) > 1 else ''} {shown}"


def _inside(problem: LeaderProblem, outside: list[int]) -> str:
    skip = set(outside)
    inside = [c for u, c in enumerate(problem.count) if u not in skip]
    return f"; the others within [{min(inside)}, {max(inside)}]" if inside else ""
