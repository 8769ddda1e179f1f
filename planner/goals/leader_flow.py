"""Leader balance: reorder replica lists so preferred leaders are even, changing the fewest.

Goals
    Every alive broker is the preferred leader of between ``floor(P/B)`` and ``ceil(P/B)``
    partitions (``P`` partitions with an alive replica, ``B`` alive brokers), with the minimum
    number of partitions whose preferred leader changes. No data moves: only the order of each
    replica list changes (the new leader goes first, the others keep their order). Secondary:
    among the partitions that can carry a leader change at the same cost, those of the topics
    the giving broker leads most go first, so each topic's leaders spread as a side effect. This
    never adds a change: per-broker balance with the fewest changes comes first, and a topic
    whose leaders are concentrated but whose brokers are inside the band stays as it is.

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
    - Partitions out of the operator's scope (``--topics``, ``--exclude-topics``) keep their
      order: their leader is their only candidate (it still counts in its broker's leaders).
    - ``baseline``: the snapshot whose leaders count as unchanged (cluster-balance passes the
      snapshot before its replica moves; by default the input itself).

Algorithm
    A min-cost flow on the *broker graph*. Moving the leadership of partition ``p`` from ``x``
    to ``y`` costs ``chg(y) - chg(x)``, where ``chg(z)`` is 0 for ``p``'s baseline leader and 1
    for any other replica: -1, 0 or +1. The residual graph has an edge ``x -> y`` per cost for
    every pair of brokers such that ``x`` leads a partition ``y`` holds a replica of; its
    capacity is the number of such partitions (a *pool*, kept up to date as leaders move). A
    node ``T`` closes the cycles: ``T -> x`` gives one leadership of ``x`` away, ``y -> T``
    gives ``y`` one more, priced by a convex cost of the broker's count. A plan is optimal
    exactly when this graph has no negative cycle.

    1. *Bands*: water filling over every broker's limits (it can lead at most the ``r`` partitions
       it holds, and must lead the ``m`` that only it holds) gives each broker a band ``[lo, hi]``:
       the global ``[floor, ceil]`` of the unlimited brokers, or its limit. Any plan inside the
       bands has the minimum ``sum(leaders^2)``.
    2. *Start* at the baseline (each partition led by its baseline leader when it can be): every
       broker-to-broker edge costs 0 or +1, so there is no negative cycle among brokers.
    3. *Cancel the cheapest cycles through T* (primal-dual): Bellman-Ford from ``T`` over the
       broker graph gives distances ``d``; the cheapest cycle costs ``D = min d(y) + in(y)``.
       While ``D < 0``, leaderships move along cycles of cost ``D`` only (edges with
       ``d(x) + cost = d(y)``), as a blocking flow (Dinic: levels by breadth-first search, then
       depth-first paths with a pointer per broker), each path carrying as many units as its
       pools and the end brokers' current price allow, with concrete partitions taken from the
       pools. Moving along tight edges keeps ``d`` a valid potential, so no negative cycle ever
       appears among brokers and each ``D`` is the cheapest; when ``D >= 0`` the plan is optimal.
       A path visits each broker once, so its partitions are distinct: every path found in the
       broker graph is a real sequence of leader changes.
    4. *Prices*: first the *band* price, ``K * (distance of the count from [lo, hi])`` with
       ``K > P`` (a unit that leaves the band is worth more than any number of changes), which
       lets a path carry many units at once. If a broker is still outside its band afterwards
       (the band is out of reach for reasons that are not local to one broker), the cycle
       cancelling goes on from there with the price ``K * count^2``: exact for the smallest
       ``sum(leaders^2)``, then the fewest changes. A budget stops a path that would exceed it
       (cheapest cycles first: the most useful changes first).
       Before the ``count^2`` prices, bands are refined: brokers a broker above its band can
       pass leaderships to (every partition they lead has all its replicas among them), and
       those that can pass to a broker below its band, keep their total; each such group gets
       its own water-filled band, the others share the rest, and the band prices run again.
       The ``count^2`` pass then only confirms (or finishes) the optimum.

    Time: ``O(P * RF)`` to build the pools, then per phase a Bellman-Ford over at most
    ``B * (B - 1)`` pairs (in practice far fewer) and a blocking flow; the number of phases is
    the number of distinct cycle costs (a handful with band prices). Figures measured with
    ``bench/planner_realistic.py`` are in the README's performance section.

Example
    Brokers 1, 2, 3; partitions ``a [1,2] b [1,3] c [1,2] d [2,3] e [1,3] f [3,1]``.
    Leaders 1:4, 2:1, 3:1, band [2, 2]. Broker 1 gives two of its partitions: ``a`` to 2 and
    ``b`` to 3 -> ``a [2,1] b [3,1]``: 2 changes, the optimum (broker 1 must lose 2).
"""

from __future__ import annotations

from collections import Counter, defaultdict, deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import chain, compress, repeat
from operator import add, mul, ne

from kafka_replica_assignor.cluster.snapshot import ClusterSnapshot
from kafka_replica_assignor.planner.plan import MoveKind, Working


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
        "base", "broker_ids", "budget", "cand", "ceil", "count", "floor", "hi", "holder", "lo",
        "must", "n", "parts", "penalty", "reach", "topic",
    )

    def __init__(self, broker_ids: list[int], cand: list[tuple[int, ...]], base: list[int],
                 start: list[int], topic: list[int], budget: int | None) -> None:
        self.broker_ids = broker_ids
        self.n = len(broker_ids)
        self.cand = cand          # per leadable partition: candidate broker indices
        self.base = base          # baseline leader index, or -1 (every choice is a change)
        self.topic = topic        # per leadable partition: its topic's index
        self.budget = budget
        self.parts = len(cand)
        self.floor = self.parts // self.n if self.n else 0
        self.ceil = -(-self.parts // self.n) if self.n else 0
        self.penalty = self.parts + 1  # K: outweighs any number of leader changes
        self.holder = list(start)
        self.count = [0] * self.n
        self.reach = [0] * self.n   # partitions u could lead
        self.must = [0] * self.n    # partitions only u can lead
        for h in self.holder:
            self.count[h] += 1
        for u, k in Counter(chain.from_iterable(cand)).items():
            self.reach[u] = k
        for u, k in Counter(c[0] for c in cand if len(c) == 1).items():
            self.must[u] = k
        self.lo = [0] * self.n
        self.hi = [0] * self.n
        self._bands(list(range(self.n)), self.parts)

    def _bands(self, brokers: list[int], total: int) -> None:
        """Water filling of ``total`` leaderships over ``brokers`` within their limits: sets
        ``lo``/``hi`` of those brokers."""
        fixed: dict[int, int] = {}
        f = c = 0
        while True:
            free = [u for u in brokers if u not in fixed]
            if not free:
                break
            rest = total - sum(fixed.values())
            f, c = rest // len(free), -(-rest // len(free))
            new = {u: self.reach[u] for u in free if self.reach[u] < f}
            new.update({u: self.must[u] for u in free if self.must[u] > c})
            if not new:
                break
            fixed.update(new)
        for u in brokers:
            if u in fixed:
                self.lo[u] = self.hi[u] = fixed[u]
            else:
                self.lo[u], self.hi[u] = max(f, self.must[u]), min(c, self.reach[u])

    def refine_bands(self, groups: list[list[int]], rest: list[int]) -> None:
        """Bands again, when some are out of reach: each of ``groups`` (brokers whose total can
        no longer change) shares its own total, ``rest`` what is left."""
        left = self.parts
        for group in groups:
            total = sum(self.count[u] for u in group)
            self._bands(group, total)
            left -= total
        self._bands(rest, left)

    def changes(self) -> int:
        return sum(map(ne, self.holder, self.base))

    def distance(self) -> int:
        """Leaders outside the global band [floor, ceil], summed over brokers."""
        return sum(max(0, c - self.ceil) + max(0, self.floor - c) for c in self.count)

    def in_bands(self) -> bool:
        return all(self.lo[u] <= self.count[u] <= self.hi[u] for u in range(self.n))

    def solve(self, exact: bool = False) -> None:
        if self.n == 0 or self.parts == 0:
            return
        flow = _BrokerFlow(self)
        if not exact:
            flow.cancel_cycles(quadratic=False)
            if self.in_bands() or self.budget is not None:
                return  # optimal in the bands; or a budget cut (a prefix of the plan)
            settled: list[int] = []
            while not self.in_bands():
                groups = flow.stuck(settled)
                if not groups:
                    break
                settled += chain.from_iterable(groups)
                self.refine_bands(groups, [u for u in range(self.n) if u not in set(settled)])
                flow.cancel_cycles(quadratic=False)
        flow.cancel_cycles(quadratic=True)


_BACK, _SIDE, _AWAY = 0, 1, 2
"""The cost class of moving a partition from its leader ``x`` to ``y``, plus one: back to its
baseline leader ``y`` (-1), between two brokers that are not its baseline leader (0), away from
its baseline leader ``x`` (+1). A pool's key is ``y * 3 + class``."""

_PICK_WINDOW = 16
"""Partitions of a pool looked at to choose the one whose topic gains most from the move."""


class _BrokerFlow:
    """Cycle cancelling on the broker graph of a :class:`LeaderProblem` (module docstring, 3-4).

    ``pools[x][key]`` holds (as an insertion-ordered dict) the partitions ``x`` leads that
    could move to ``key // 3`` at cost ``key % 3 - 1``. ``topic_led[topic * n + x]`` counts
    the leaderships of a topic on broker ``x``. ``quadratic`` picks the price of a count.
    """

    __slots__ = ("changes", "pools", "problem", "quadratic", "topic_led")

    def __init__(self, problem: LeaderProblem) -> None:
        self.problem = problem
        self.quadratic = False
        self.changes = problem.changes()
        n, base, cand, topic = problem.n, problem.base, problem.cand, problem.topic
        grouped: defaultdict[int, list[int]] = defaultdict(list)   # x * 3n + key -> partitions
        for p, x in enumerate(problem.holder):
            b = base[p]
            row = x * 3 * n
            for y in cand[p]:
                if y != x:
                    grouped[row + y * 3 + (_AWAY if b == x else _BACK if b == y else _SIDE)].append(p)
        pools: list[dict[int, dict[int, None]]] = [{} for _ in range(n)]
        for slot in sorted(grouped):
            x, key = divmod(slot, 3 * n)
            pools[x][key] = dict.fromkeys(grouped[slot])
        self.pools = pools
        self.topic_led: dict[int, int] = Counter(map(add, map(mul, topic, repeat(n)), problem.holder))

    # -- prices of a broker's count: giving one away (T -> x), taking one more (y -> T) ----------
    def give(self, x: int) -> tuple[int, int] | None:
        """(cost, units at that cost) of ``x`` leading one partition less, or None if it may not."""
        problem = self.problem
        c = problem.count[x]
        if self.quadratic:
            return (-problem.penalty * (2 * c - 1), 1) if c > 0 else None
        if c > problem.hi[x]:
            return -problem.penalty, c - problem.hi[x]
        if c > problem.lo[x]:
            return 0, c - problem.lo[x]
        return None

    def take(self, y: int) -> tuple[int, int] | None:
        """(cost, units at that cost) of ``y`` leading one partition more, or None if it may not."""
        problem = self.problem
        c = problem.count[y]
        if self.quadratic:
            return problem.penalty * (2 * c + 1), 1
        if c < problem.lo[y]:
            return -problem.penalty, problem.lo[y] - c
        if c < problem.hi[y]:
            return 0, problem.hi[y] - c
        return None

    # -- the cycle cancelling ------------------------------------------------------------
    def cancel_cycles(self, *, quadratic: bool) -> None:
        """Phases of (distances, blocking flow on the tight edges) until no cycle through T
        costs less than zero, or a phase moves nothing (a budget stops every path)."""
        self.quadratic = quadratic
        while True:
            dist = self.distances()
            cheapest = self.cheapest(dist)
            if cheapest is None or cheapest >= 0 or not self.blocking_flows(dist, cheapest):
                return

    def stuck(self, settled: list[int]) -> list[list[int]]:
        """Brokers whose total cannot change any more, as groups: those a broker above its band
        can pass leaderships to (every partition they lead has all its replicas among them),
        and those that can pass leaderships to a broker below its band (no partition led
        elsewhere has a replica among them). ``settled`` brokers are left out."""
        problem, pools = self.problem, self.pools
        n, count, lo, hi = problem.n, problem.count, problem.lo, problem.hi
        skip = set(settled)
        forward: list[list[int]] = [[] for _ in range(n)]
        backward: list[list[int]] = [[] for _ in range(n)]
        for x in range(n):
            for key, pool in pools[x].items():
                if pool:
                    forward[x].append(key // 3)
                    backward[key // 3].append(x)
        groups = []
        for seeds, edges in (([u for u in range(n) if count[u] > hi[u] and u not in skip], forward),
                             ([u for u in range(n) if count[u] < lo[u] and u not in skip], backward)):
            seen = dict.fromkeys(seeds)
            queue = deque(seeds)
            while queue:
                for y in edges[queue.popleft()]:
                    if y not in seen and y not in skip:
                        seen[y] = None
                        queue.append(y)
            if seen:
                groups.append(sorted(seen))
                skip.update(seen)
        return groups

    def distances(self) -> list[int | None]:
        """Bellman-Ford (queue based) from T: ``T -> x`` at ``give(x)``, then the pools."""
        n, pools = self.problem.n, self.pools
        dist: list[int | None] = [None] * n
        queued = [False] * n
        queue: deque[int] = deque()
        for x in range(n):
            price = self.give(x)
            if price is not None:
                dist[x] = price[0]
                queued[x] = True
                queue.append(x)
        while queue:
            x = queue.popleft()
            queued[x] = False
            dx = dist[x]
            assert dx is not None
            for key, pool in pools[x].items():
                if pool:
                    y = key // 3
                    nd = dx + key % 3 - 1
                    dy = dist[y]
                    if dy is None or nd < dy:
                        dist[y] = nd
                        if not queued[y]:
                            queued[y] = True
                            queue.append(y)
        return dist

    def cheapest(self, dist: list[int | None]) -> int | None:
        """The cost of the cheapest cycle through T, or None when there is none."""
        best = None
        for y, dy in enumerate(dist):
            if dy is not None:
                price = self.take(y)
                if price is not None and (best is None or dy + price[0] < best):
                    best = dy + price[0]
        return best

    def blocking_flows(self, dist: list[int | None], target: int) -> bool:
        """Move leaderships along cycles of cost ``target`` until none is left; True if any moved.

        Dinic on the tight edges: levels by breadth-first search from the tight starts, then
        depth-first paths along edges one level down, a pointer per broker; again until no
        tight end is reachable."""
        n, pools = self.problem.n, self.pools
        moved = False
        while True:
            starts = [x for x in range(n) if dist[x] is not None and self._tight_start(x, dist)]
            level = [-1] * n
            for x in starts:
                level[x] = 0
            tight: list[list[int]] = [[] for _ in range(n)]
            queue = deque(starts)
            found = False
            while queue:
                x = queue.popleft()
                dx = dist[x]
                assert dx is not None
                for key, pool in pools[x].items():
                    y = key // 3
                    if pool and dist[y] == dx + key % 3 - 1 and level[y] in (-1, level[x] + 1):
                        if level[y] < 0:
                            level[y] = level[x] + 1
                            queue.append(y)
                            found = found or self._tight_end(y, dist, target)
                        tight[x].append(key)
            if not found:
                return moved
            pointer = [0] * n
            progress = False
            for start in starts:
                while self._tight_start(start, dist):
                    path = self._path(start, tight, pointer, dist, target)
                    if path is None:
                        break
                    if self._push(start, path):
                        progress = moved = True
                    else:
                        pointer[path[-1][0]] += 1   # the budget refuses this end: skip its edge
            if not progress:
                return moved

    def _tight_start(self, x: int, dist: list[int | None]) -> bool:
        price = self.give(x)
        return price is not None and dist[x] == price[0]

    def _tight_end(self, y: int, dist: list[int | None], target: int) -> bool:
        price = self.take(y)
        dy = dist[y]
        return price is not None and dy is not None and dy + price[0] == target

    def _path(self, start: int, tight: list[list[int]], pointer: list[int], dist: list[int | None],
              target: int) -> list[tuple[int, int]] | None:
        """A path of tight edges ``(broker, pool key)`` from ``start`` to a tight end, or None;
        brokers found to lead nowhere are cut off for this round (their pointer runs out)."""
        pools = self.pools
        path: list[tuple[int, int]] = []
        x = start
        while True:
            if path and self._tight_end(x, dist, target):
                return path
            keys = tight[x]
            while pointer[x] < len(keys) and not pools[x][keys[pointer[x]]]:
                pointer[x] += 1
            if pointer[x] < len(keys):
                key = keys[pointer[x]]
                path.append((x, key))
                x = key // 3
                continue
            if not path:
                return None
            x, _ = path.pop()
            pointer[x] += 1

    def _push(self, start: int, path: list[tuple[int, int]]) -> bool:
        """Move as many units along ``path`` as its pools, the end prices and the budget allow."""
        problem = self.problem
        give, take = self.give(start), self.take(path[-1][1] // 3)
        assert give is not None and take is not None
        units = min(give[1], take[1], *(len(self.pools[x][key]) for x, key in path))
        budget = problem.budget
        if budget is not None:
            delta = sum(key % 3 - 1 for _, key in path)
            if delta > 0:
                units = min(units, (budget - self.changes) // delta)
            if units <= 0:
                return False
        for x, key in path:
            y = key // 3
            for _ in range(units):
                self._move(self._pick(self.pools[x][key], x, y), x, y)
        return True

    def _pick(self, pool: dict[int, None], x: int, y: int) -> int:
        """The partition of ``pool`` whose topic ``x`` leads most more than ``y`` (first on a
        tie), among the first :data:`_PICK_WINDOW`."""
        topic, n, topic_led = self.problem.topic, self.problem.n, self.topic_led
        best, gain = -1, 0
        for k, p in enumerate(pool):
            if k == _PICK_WINDOW:
                break
            slot = topic[p] * n
            value = topic_led.get(slot + x, 0) - topic_led.get(slot + y, 0)
            if best < 0 or value > gain:
                best, gain = p, value
        return best

    def _move(self, p: int, x: int, y: int) -> None:
        """``p``'s leadership from ``x`` to ``y``: pools, counts, topic counts and changes."""
        problem = self.problem
        b = problem.base[p]
        pools = self.pools
        from_x, to_y = pools[x], pools[y]
        for z in problem.cand[p]:
            if z != x:
                del from_x[z * 3 + (_AWAY if b == x else _BACK if b == z else _SIDE)][p]
            if z != y:
                key = z * 3 + (_AWAY if b == y else _BACK if b == z else _SIDE)
                pool = to_y.get(key)
                if pool is None:
                    to_y[key] = {p: None}
                else:
                    pool[p] = None
        problem.holder[p] = y
        problem.count[x] -= 1
        problem.count[y] += 1
        slot = problem.topic[p] * problem.n
        self.topic_led[slot + x] -= 1
        self.topic_led[slot + y] = self.topic_led.get(slot + y, 0) + 1
        self.changes += (y != b) - (x != b)


@dataclass(frozen=True, slots=True)
class _Leadable:
    """What leader balance may reorder: ``members[k]`` is the index (in the working copy) of
    the ``k``-th leadable partition; ``cand``, ``base``, ``start``, ``current`` and ``topic``
    its candidate broker indices, baseline leader (-1: none alive among them), leader to start
    from, current leader (-1: not alive) and topic index. ``unleadable`` partitions keep their
    order; ``forced`` ones lost their baseline leader (a change that is a repair)."""

    members: list[int]
    cand: list[tuple[int, ...]]
    base: list[int]
    start: list[int]
    current: list[int]
    topic: list[int]
    unleadable: int
    forced: int


def _leadable(work: Working, baseline: ClusterSnapshot | None,
              candidates: Callable[[Sequence[int]], Sequence[int]] | None) -> _Leadable:
    """The partitions of ``work`` whose leader may change, as broker indices; ``candidates``
    narrows the brokers that may lead a partition (the demote goal's rule)."""
    index = {b: i for i, b in enumerate(work.eligible)}
    if baseline is work.snapshot:
        baseline = None          # the scratch copy's own input: its original lists
    base_first: dict[tuple[str, int], int] = {}
    if baseline is not None:
        base_first = {(p.topic, p.partition): p.replicas[0] for p in baseline.partitions}
    parts = work.snapshot.partitions
    members: list[int] = []
    cand: list[tuple[int, ...]] = []
    base: list[int] = []
    start: list[int] = []
    current: list[int] = []
    topic: list[int] = []
    topics = {name: k for k, name in enumerate(sorted({p.topic for p in parts}))}
    unleadable = forced = 0
    replicas, original, eligible_set = work.replicas, work.original, work.eligible_set
    get = index.get
    add_member, add_cand, add_base, add_start, add_current, add_topic = (
        members.append, cand.append, base.append, start.append, current.append, topic.append)
    frozen = work.frozen
    cands: tuple[int, ...]
    for i in work.order:
        reps = replicas[i]
        if i in frozen:
            # out of scope: its leader stays, and keeps counting as a leader of its broker
            if reps[0] not in index:
                continue
            cands = (index[reps[0]],)
        elif eligible_set.issuperset(reps):
            cands = tuple(map(index.__getitem__, reps if candidates is None else candidates(reps)))
        else:
            # Kafka cannot reassign a list naming a dead or unknown broker: the order stays,
            # and an alive first replica keeps counting as a leader it cannot hand over
            unleadable += 1
            if reps[0] not in index:
                continue
            cands = (index[reps[0]],)
        entry = parts[i]
        if baseline is not None:
            first = base_first.get((entry.topic, entry.partition), reps[0])
        else:
            first = original[i][0]
        b0 = get(first, -1)
        if b0 == -1:
            forced += 1     # its leader is gone: a repair, not a change of the budget
        elif b0 not in cands:
            if first in reps:     # still a replica, but the request (demote) forbids it to lead
                forced += 1
            b0 = -1
        now = get(reps[0], -1)
        add_member(i)
        add_cand(cands)
        add_base(b0)
        add_current(now)
        add_start(b0 if b0 != -1 else now if now in cands else cands[0])
        add_topic(topics[entry.topic])
    return _Leadable(members, cand, base, start, current, topic, unleadable, forced)


def balance_leaders(work: Working, *, max_leader_changes: int | None = None,
                    baseline: ClusterSnapshot | None = None, exact: bool = False,
                    candidates: Callable[[Sequence[int]], Sequence[int]] | None = None) -> LeaderProblem | None:
    """Leader-balance ``work`` (a rule's own scratch copy); notes and bounds go on ``work``.
    ``exact``: skip the band prices and cancel cycles with the ``count^2`` price from the
    baseline (the same answer, slower: a cross-check)."""
    leadable = _leadable(work, baseline, candidates)
    if not leadable.members:
        if leadable.unleadable:
            work.notes.append(_unleadable(leadable.unleadable))
        return None
    budget = None if max_leader_changes is None else max_leader_changes + leadable.forced
    problem = LeaderProblem(work.eligible, leadable.cand, leadable.base, leadable.start, leadable.topic, budget)
    lo, hi = list(problem.lo), list(problem.hi)
    over = sum(max(0, c - h) for c, h in zip(problem.count, hi, strict=True))
    under = sum(max(0, low - c) for c, low in zip(problem.count, lo, strict=True))
    free = sum(1 for b in leadable.base if b == -1)
    problem.solve(exact=exact)
    _record(work, problem, leadable)
    # a leadership that leaves a broker above its band is a change; valid when the bands are met
    reached = all(low <= c <= h for c, low, h in zip(problem.count, lo, hi, strict=True))
    work.bounds["leader_changes_lower_bound"] = max(over, under, free) if reached else free
    if max_leader_changes is None:
        work.bounds["leader_changes_optimum"] = problem.changes()
    work.bounds["leaders_floor"] = problem.floor
    work.bounds["leaders_ceil"] = problem.ceil
    if problem.distance():
        work.notes.append(_outside_note(problem, max_leader_changes, budget))
    if leadable.unleadable:
        work.notes.append(_unleadable(leadable.unleadable))
    return problem


def _record(work: Working, problem: LeaderProblem, leadable: _Leadable) -> None:
    """Put each new leader first in its replica list and record the change."""
    eligible = work.eligible
    for k in compress(range(len(leadable.members)), map(ne, problem.holder, leadable.current)):
        i = leadable.members[k]
        reps = work.replicas[i]
        leader = eligible[problem.holder[k]]
        old = reps[0]
        reps.remove(leader)
        reps.insert(0, leader)
        work.record(i, old, leader, MoveKind.LEADER)


def _outside_note(problem: LeaderProblem, max_leader_changes: int | None, budget: int | None) -> str:
    """Why some brokers end outside the global band, and where they are."""
    eligible = problem.broker_ids
    band = f"[{problem.floor}, {problem.ceil}]"
    outside = [u for u, c in enumerate(problem.count) if c < problem.floor or c > problem.ceil]
    shown = ", ".join(f"{eligible[u]}:{problem.count[u]}" for u in outside[:10])
    shown += ", ..." if len(outside) > 10 else ""
    if budget is not None and problem.changes() >= budget:
        return (f"leader budget of {max_leader_changes} change(s) reached before the band {band}; "
                f"brokers outside it (broker:leaders) {shown}")
    few = [eligible[u] for u in outside if problem.reach[u] < problem.floor]
    forced_up = [eligible[u] for u in outside if problem.must[u] > problem.ceil]
    why = []
    if few:
        why.append(f"{_ids(few)} hold only partitions enough to lead fewer")
    if forced_up:
        why.append(f"{_ids(forced_up)} lead partitions no other alive broker holds")
    if len(few) + len(forced_up) < len(outside):
        why.append("the others cannot trade leaders with them without moving data")
    return (f"preferred-leader band {band} is not reachable by reordering replicas "
            f"({'; '.join(why)}): best reachable, the most even counts, leaves {problem.distance()} "
            f"leader(s) outside it (broker:leaders {shown}){_inside(problem, outside)}")


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
