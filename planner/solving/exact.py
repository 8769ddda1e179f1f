"""Replica balance as a mixed-integer program, solved with HiGHS: the exact path for small clusters.

Goals
    The objectives of :mod:`kafka_replica_assignor.planner.solving.replica_balance`, at its own targets, solved to optimality:
    every replica repaired, rack diversity full, replica counts in ``[lo, hi]``, topics within
    their caps ``cap(t, g)``, bytes in ``[blo, min(bhi, capacity)]``, capacities kept; then the
    fewest bytes moved (replica moves when no partition is sized); then the fewest replica
    moves; then the fewest leader replicas moved (followers move before leaders).

Constraints
    - Hard whatever the targets: one replica of a partition per broker, the replication factor,
      ``capacity_bytes``, and rack diversity never below the input's at any level.
    - When the targets cannot all hold together, each is kept in the order diversity, counts,
      topics, bytes if it can hold with those kept before it; one that cannot is proven so by
      HiGHS (the program keeping it is infeasible) and is then only brought as close as it can
      be (its rows' total violation minimised), starting from the last plan found keeping those
      before it. A target is called unreachable only on such a proof; one neither found nor
      proven within the limits is brought as close as it can be too, and not called unreachable.
    - Only for clusters where every partition can be repaired and ``partitions x brokers`` is at
      most :data:`EXACT_CELLS`, without move or leader budgets; a time limit for the whole
      solve; ``None`` when nothing is found, and the caller keeps its own plan.
    - Scope (:class:`kafka_replica_assignor.planner.plan.Scope`): out-of-scope partitions and excluded brokers keep
      their replicas (fixed variables); with added brokers, the others only give.

Algorithm
    ``x[p, b] = 1`` when partition ``p`` has a replica on broker ``b``. Counts, bytes and topic
    counts of a node of the rack tree are sums of ``x``. Diversity at a level: ``u[p, g] <=
    sum(x[p, b] for b in g)``, ``u <= 1``, ``sum_g u[p, g] >= min(RF, groups)``. A topic's cap
    under a rack whose parent is not the root depends on the parent's count (``ceil(n_parent *
    m_g / m_parent)``): the maximum of the two terms is a disjunction with one binary, and
    ``n <= ceil(a / m) + 1`` is the integer inequality ``m * n <= a + 2 * m - 1``.
    Bytes moved are the sizes of the replicas not kept on their broker, so the objective is to
    keep the heaviest replicas: first the bytes (sizes scaled by the largest), then, with bytes
    held at their optimum, the replicas and the leaders kept. The linear relaxation gives a lower
    bound; the variables on which it agrees with ``seed`` (the heuristic's plan) are fixed and the
    rest is solved first (a small program); the whole program runs only when that is not within
    :data:`GAP` of the bound.

Example
    Brokers 1, 2 in rack a and 3, 4 in rack b, each with ``capacity_bytes`` 200, threshold 20 %:
    ``x-0 [1,3] 60``, ``x-1 [1,4] 50``, ``x-2 [1,3] 45``, ``x-3 [2,4] 10``, ``y-0 [1,4] 25``.
    Broker 1 holds 180 of 380 bytes (band [76, 114]), broker 2 holds 10. The heuristic moves 85
    bytes; the program moves ``x-2`` and ``y-0`` from 1 to 2 (70 bytes, the optimum; an
    enumeration of every plan agrees, ``tests/unit/test_planner_exact.py``): brokers then hold
    110, 80, 105 and 85 bytes and 2, 3, 2, 3 replicas.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction

from kafka_replica_assignor.cluster.snapshot import ClusterSnapshot, PartitionEntry
from kafka_replica_assignor.planner.bands import band, byte_band
from kafka_replica_assignor.planner.plan import MoveKind, Working
from kafka_replica_assignor.planner.racks import RackTree

EXACT_CELLS = 2400          # partitions x eligible brokers at most for the exact path (16 x 150)
TIME_LIMIT = 10.0           # seconds for all the solves of one plan
GAP = 1e-3                  # relative gap on what moves at which a solve stops (proven within 0.1 %)
NODE_LIMIT = 150            # branch-and-bound nodes per solve: a work limit, so plans are deterministic
                            # unless the time limit (a safety net) ends a solve first
TARGETS = ("diversity", "counts", "topics", "bytes")   # in the order they are kept


@dataclass(frozen=True, slots=True)
class Targets:
    """The targets of one cluster at one threshold (see :mod:`kafka_replica_assignor.planner.solving.replica_balance`)."""

    lo: int
    hi: int
    blo: int
    bhi: int
    sized: bool


@dataclass(slots=True)
class Solution:
    """What the program found: the replica sets per partition (position in the snapshot), the
    targets it keeps, those proven unreachable, and whether the last solve proved optimality."""

    replicas: dict[int, list[int]]
    kept: tuple[str, ...]
    unreachable: tuple[str, ...]
    optimal: bool
    bound: float = 0.0          # a lower bound of the bytes (replica moves when unsized) moved
    feasible: bool = True       # False: no plan keeps the hard rules (proven infeasible)


Node = tuple[str | int, ...]   # ("root",), (level, rack key) or ("b", broker)


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


class _Rows:
    """A sparse program being built: columns with cost, bounds and integrality; rows."""

    def __init__(self) -> None:
        self.cost: list[float] = []
        self.lower: list[float] = []
        self.upper: list[float] = []
        self.integer: list[bool] = []
        self.rows: list[tuple[float, float, list[int], list[float], str]] = []

    def col(self, lower: float, upper: float, integer: bool, cost: float = 0.0) -> int:
        self.cost.append(cost)
        self.lower.append(lower)
        self.upper.append(upper)
        self.integer.append(integer)
        return len(self.cost) - 1

    def row(self, lower: float, upper: float, index: list[int], value: list[float], group: str) -> None:
        self.rows.append((lower, upper, index, value, group))


class ExactProblem:
    """The program of one snapshot (module doc). ``bands``: the :class:`Targets`; ``order`` the
    partitions by (topic, partition)."""

    def __init__(self, snapshot: ClusterSnapshot, eligible: Sequence[int], tree: RackTree,
                 targets: Targets, capacity: dict[int, int], *, frozen: frozenset[int] = frozenset(),
                 excluded: frozenset[int] = frozenset(), takers: frozenset[int] = frozenset()) -> None:
        self.slack: dict[str, list[int]] = {}
        self.timed_out = False      # a solve ended by the time limit: the plan may differ between runs
        self.snapshot = snapshot
        self.eligible = list(eligible)
        self.tree = tree
        self.targets = targets
        self.capacity = capacity
        parts = snapshot.partitions
        self.size = [p.size_bytes or 0 for p in parts]
        self.smax = max(self.size, default=0) or 1
        pos = {b: k for k, b in enumerate(self.eligible)}
        self.pos = pos
        nb = len(self.eligible)
        m = self.model = _Rows()
        self.x: list[list[int]] = []
        for _ in parts:
            self.x.append([m.col(0, 1, True) for _ in range(nb)])
        for i, p in enumerate(parts):
            m.row(len(p.replicas), len(p.replicas), self.x[i], [1.0] * nb, "hard")
            for k, b in enumerate(self.eligible):     # out of scope: as it is
                if i in frozen or b in excluded:
                    m.lower[self.x[i][k]] = m.upper[self.x[i][k]] = float(b in p.replicas)
                elif takers and b not in takers:    # only gives
                    m.upper[self.x[i][k]] = float(b in p.replicas)
        eset = set(self.eligible)
        # counts
        for k in range(nb):
            m.row(targets.lo, targets.hi, [self.x[i][k] for i in range(len(parts))], [1.0] * len(parts), "counts")
        # bytes (scaled by the largest partition) and capacity
        sized = [i for i in range(len(parts)) if self.size[i]]
        for k, b in enumerate(self.eligible):
            idx = [self.x[i][k] for i in sized]
            val = [self.size[i] / self.smax for i in sized]
            limit = capacity.get(b)
            if limit is not None:
                m.row(-math.inf, limit / self.smax, idx, val, "hard")
            if targets.sized:
                top = targets.bhi if limit is None else min(targets.bhi, limit)
                m.row(targets.blo / self.smax, top / self.smax, idx, val, "bytes")
        self._diversity(parts, eset)
        self._topics(parts)

    # -- rack diversity -------------------------------------------------------------------
    def _diversity(self, parts: Sequence[PartitionEntry], eset: set[int]) -> None:
        tree, m = self.tree, self.model
        if tree.depth == 0:
            return
        groups = tree.groups(self.eligible)
        for level in range(tree.depth):
            members: dict[int, list[int]] = {}
            for k, b in enumerate(self.eligible):
                members.setdefault(tree.keys[b][level], []).append(k)
            for i, p in enumerate(parts):
                rf = len(p.replicas)
                if rf < 2:
                    continue
                full = min(rf, groups[level])
                now = len({tree.keys[b][level] for b in p.replicas if b in eset})
                u = []
                for ks in members.values():
                    col = m.col(0, 1, False)
                    u.append(col)
                    m.row(-math.inf, 0, [col] + [self.x[i][k] for k in ks], [1.0] + [-1.0] * len(ks), "hard")
                if now:
                    m.row(min(now, full), math.inf, u, [1.0] * len(u), "hard")   # never reduced
                if full > now:
                    m.row(full, math.inf, u, [1.0] * len(u), "diversity")

    # -- topic caps -----------------------------------------------------------------------
    def _topics(self, parts: Sequence[PartitionEntry]) -> None:
        tree, m = self.tree, self.model
        nb = len(self.eligible)
        groups = tree.groups(self.eligible)
        by_topic: dict[str, list[int]] = {}
        for i, p in enumerate(parts):
            by_topic.setdefault(p.topic, []).append(i)
        # nodes: ("root",), (level, key) for racks, ("b", k) for brokers; members as positions
        node_members: dict[Node, list[int]] = {("root",): list(range(nb))}
        node_parent: dict[Node, Node] = {}
        node_level: dict[Node, int] = {}
        for k, b in enumerate(self.eligible):
            keys = tree.keys[b] if tree.depth else ()
            up: Node = ("root",)
            for level, key in enumerate(keys, 1):
                node: Node = (level, key)
                node_members.setdefault(node, []).append(k)
                node_parent[node] = up
                node_level[node] = level
                up = node
            node_members[("b", k)] = [k]
            node_parent[("b", k)] = up
            node_level[("b", k)] = tree.depth + 1
        for items in by_topic.values():
            total = sum(len(parts[i].replicas) for i in items)
            for node, ks in node_members.items():
                if node == ("root",):
                    continue
                mg = len(ks)
                level = node_level[node]
                spanning = 0
                if node[0] != "b":
                    spanning = sum(1 for i in items if len(parts[i].replicas) >= groups[level - 1])
                c0 = max(_ceil(total * mg, nb), spanning) + 1
                most = sum(min(len(parts[i].replicas), mg) for i in items)
                if most <= c0:
                    continue
                idx = [self.x[i][k] for i in items for k in ks]
                parent = node_parent[node]
                if parent == ("root",):
                    m.row(-math.inf, c0, idx, [1.0] * len(idx), "topics")
                    continue
                mp = len(node_members[parent])
                parent_most = sum(min(len(parts[i].replicas), mp) for i in items)
                if _ceil(parent_most * mg, mp) + 1 <= c0:
                    m.row(-math.inf, c0, idx, [1.0] * len(idx), "topics")
                    continue
                # n <= c0 (z = 0) or mp * n - mg * n_parent <= 2 * mp - 1 (z = 1)
                z = m.col(0, 1, True)
                m.row(-math.inf, c0, idx + [z], [1.0] * len(idx) + [-(most - c0)], "topics")
                pidx = [self.x[i][k] for i in items for k in node_members[parent]]
                big = mp * most - (2 * mp - 1)
                coef: dict[int, float] = {}
                for c in idx:
                    coef[c] = coef.get(c, 0.0) + mp
                for c in pidx:
                    coef[c] = coef.get(c, 0.0) - mg
                cols = [c for c in coef if coef[c]]
                m.row(-math.inf, 2 * mp - 1 + big, cols + [z], [coef[c] for c in cols] + [float(big)], "topics")

    # -- solving --------------------------------------------------------------------------
    def solve(self, seed: Sequence[Sequence[int]] | None = None, *, time_limit: float = TIME_LIMIT,
              node_limit: int | None = NODE_LIMIT, gap: float = GAP) -> Solution | None:
        """The best plan keeping as many targets as proven possible (module doc), or None when
        nothing is found or proven within the limits."""
        import highspy

        deadline = time.monotonic() + time_limit

        def left(share: float = 1.0) -> float:
            return max(0.05, (deadline - time.monotonic()) * share)

        on = set(TARGETS)
        status, values, bound = self._optimise(highspy, on, seed, left, node_limit, gap)
        unreachable: list[str] = []
        if status == "infeasible":
            on = set()
            soft: list[str] = []    # proven out of reach, or neither found nor proven within the limits
            start = seed            # the last plan found keeping ``on``: where the closest solve starts
            for name in TARGETS:    # keep each target that can hold with the ones kept before it
                h = self._highs(highspy, on | {name}, left(0.25), node_limit, gap)
                found, got = self._run(h, highspy, {}, seed)
                if found in ("optimal", "feasible"):
                    on.add(name)
                    if got is not None:
                        lists = self._lists(got)
                        start = [lists.get(i, list(p.replicas)) for i, p in enumerate(self.snapshot.partitions)]
                else:
                    soft.append(name)
                    if found == "infeasible":
                        unreachable.append(name)
            status, values, bound = self._optimise(highspy, on, start, left, node_limit, gap, soft=soft)
            if status == "infeasible":
                hard, _ = self._run(self._highs(highspy, set(), left(1.0), node_limit, gap), highspy, {}, None)
                if hard == "infeasible":    # the hard rules alone: no plan at all
                    return Solution({}, (), TARGETS, True, feasible=False)
                return None
        if values is None:
            return None
        return Solution(self._lists(values), tuple(t for t in TARGETS if t in on), tuple(unreachable),
                        status == "optimal", bound=bound)

    def _optimise(self, highspy, on: set[str], seed: Sequence[Sequence[int]] | None,  # type: ignore[no-untyped-def]
                  left: Callable[[float], float], node_limit: int | None,
                  gap: float, soft: Sequence[str] = ()) -> tuple[str, list[float] | None, float]:
        """``(status, values, lower bound of what moves)`` of the program keeping ``on``:
        bytes first (when sized), then, with bytes held, replica and leader moves.

        The linear relaxation gives the bound. With a ``seed``, the variables on which the
        relaxation and the seed agree are fixed and the rest is solved first (a small program,
        the relaxation-induced neighbourhood of the seed); only when that is not within ``gap``
        of the bound does the whole program run, from that solution."""
        parts = self.snapshot.partitions
        keep = [{self.pos[b] for b in p.replicas if b in self.pos} for p in parts]
        leader = [self.pos.get(p.replicas[0], -1) if p.replicas else -1 for p in parts]
        forced = [(len(p.replicas) - len(ks), self.size[i]) for i, (p, ks) in enumerate(zip(parts, keep, strict=True))]
        moves = self._move_weights(keep, leader)
        primary = self._byte_weights(keep) if self.targets.sized else moves
        if soft:
            return self._closest(highspy, on, seed, left, node_limit, gap, soft, primary, moves)
        relaxed = self._highs(highspy, on, left(0.3), node_limit, gap, relax=True)
        status, lp = self._run(relaxed, highspy, primary, None)
        if status == "infeasible":
            return "infeasible", None, 0.0
        bound = relaxed.getInfo().objective_function_value if status == "optimal" else 0.0
        h = self._highs(highspy, on, left(0.8), node_limit, gap)
        values: list[float] | None = None
        proven = False
        if seed is not None and lp is not None:
            vector = self._vector(seed)
            fixed = [c for c, v in vector.items() if abs(lp[c] - v) < 1e-6]
            h.changeColsBounds(len(fixed), fixed, [vector[c] for c in fixed], [vector[c] for c in fixed])
            found, values = self._run(h, highspy, primary, seed)
            if values is not None and h.getInfo().objective_function_value <= bound * (1 + gap) + 1e-9:
                proven = True
            else:
                h.changeColsBounds(len(fixed), fixed, [0.0] * len(fixed), [1.0] * len(fixed))
                h.setOptionValue("time_limit", left(0.8))
        if not proven:
            found, full = self._run(h, highspy, primary, None, values)
            if found == "infeasible":
                return "infeasible", None, 0.0
            if full is not None:
                values = full
                bound = max(bound, h.getInfo().mip_dual_bound)
                proven = found == "optimal"
        if values is None:
            return "unknown", None, 0.0
        if self.targets.sized:
            lower = bound * self.smax + sum(n * w for n, w in forced)
            best = sum(w * values[c] for c, w in primary.items())
            cols = list(primary)
            h.addRow(-math.inf, best + 1e-9 * (1 + abs(best)), len(cols), cols, [primary[c] for c in cols])
            h.setOptionValue("time_limit", left(1.0))
            _, tied = self._run(h, highspy, moves, None, values)
            values = tied or values
        else:
            lower = math.ceil(bound / (len(parts) + 2) - 1e-6) + sum(n for n, _ in forced)
        return "optimal" if proven else "feasible", values, float(lower)

    def _closest(self, highspy, on: set[str], seed: Sequence[Sequence[int]] | None,  # type: ignore[no-untyped-def]
                 left: Callable[[float], float], node_limit: int | None, gap: float, soft: Sequence[str],
                 primary: dict[int, float], moves: dict[int, float]) -> tuple[str, list[float] | None, float]:
        """The program keeping ``on``, each target of ``soft`` (proven out of reach, or not found
        within the limits) as close as
        it can be, one after the other (its rows' total violation minimised and then held),
        then what moves: the planner's rule of "as far as the earlier ones allow"."""
        h = self._highs(highspy, on, left(0.5), node_limit, gap, soft=soft)
        values: list[float] | None = None
        phases = [{c: 1.0 for c in self.slack[name]} for name in soft] + [primary]
        if self.targets.sized:
            phases.append(moves)
        proven = True
        for k, cost in enumerate(phases):
            h.setOptionValue("time_limit", left(0.5 if k < len(phases) - 1 else 1.0))
            found, got = self._run(h, highspy, cost, seed if values is None else None, values, offset=k >= len(soft))
            if got is None:
                return ("infeasible" if found == "infeasible" else "unknown"), None, 0.0
            values = got
            proven = proven and found == "optimal"
            if k < len(phases) - 1:
                best = sum(w * values[c] for c, w in cost.items())
                cols = list(cost)
                h.addRow(-math.inf, best + 1e-7 * (1 + abs(best)), len(cols), cols, [cost[c] for c in cols])
        return "optimal" if proven else "feasible", values, 0.0

    def _vector(self, lists: Sequence[Sequence[int]]) -> dict[int, float]:
        """The ``x`` columns of replica lists."""
        out = {c: 0.0 for row in self.x for c in row}
        for i, reps in enumerate(lists):
            for b in reps:
                k = self.pos.get(b)
                if k is not None:
                    out[self.x[i][k]] = 1.0
        return out

    def _byte_weights(self, keep: list[set[int]]) -> dict[int, float]:
        return {self.x[i][k]: -self.size[i] / self.smax for i, ks in enumerate(keep) for k in ks if self.size[i]}

    def _move_weights(self, keep: list[set[int]], leader: list[int]) -> dict[int, float]:
        n = len(keep) + 1
        return {self.x[i][k]: -(n + (k == leader[i])) for i, ks in enumerate(keep) for k in ks}

    def _highs(self, highspy, on: set[str], time_limit: float, node_limit: int | None, gap: float,  # type: ignore[no-untyped-def]
               relax: bool = False, soft: Sequence[str] = ()):
        m = self.model
        h = highspy.Highs()
        h.setOptionValue("output_flag", False)
        h.setOptionValue("threads", 1)
        h.setOptionValue("random_seed", 0)
        h.setOptionValue("mip_rel_gap", gap)
        h.setOptionValue("mip_abs_gap", 1e-9)
        h.setOptionValue("time_limit", float(time_limit))
        h.setOptionValue("mip_feasibility_tolerance", 1e-9)
        h.setOptionValue("primal_feasibility_tolerance", 1e-9)
        if node_limit is not None:
            h.setOptionValue("mip_max_nodes", int(node_limit))
        n = len(m.cost)
        h.addVars(n, m.lower, m.upper)
        h.changeColsIntegrality(n, list(range(n)),
                                [highspy.HighsVarType.kInteger if z and not relax else highspy.HighsVarType.kContinuous
                                 for z in m.integer])
        self.slack = {name: [] for name in soft}
        for lower, upper, idx, val, group in m.rows:
            if group in self.slack:     # lower <= row - above + below <= upper
                lower = min(lower, upper)   # a band above a capacity: as close as the capacity allows
                extra = [(-1.0, upper < math.inf), (1.0, lower > -math.inf)]
                for coef, needed in extra:
                    if needed:
                        h.addVar(0.0, math.inf)
                        n += 1
                        self.slack[group].append(n - 1)
                        idx, val = idx + [n - 1], val + [coef]
            elif group != "hard" and group not in on:
                continue
            h.addRow(lower, upper, len(idx), idx, val)
        return h

    def _run(self, h, highspy, cost: dict[int, float], seed: Sequence[Sequence[int]] | None,  # type: ignore[no-untyped-def]
             start: list[float] | None = None, offset: bool = True) -> tuple[str, list[float] | None]:
        n = h.getNumCol()
        h.changeColsCost(n, list(range(n)), [cost.get(c, 0.0) for c in range(n)])
        # the objective is what moves (kept replicas have negative costs): gaps are relative to it
        h.changeObjectiveOffset(-sum(cost.values()) if offset else 0.0)
        if seed is not None:
            vector = self._vector(seed)
            h.setSolution(len(vector), list(vector), list(vector.values()))
        elif start is not None:
            sol = highspy.HighsSolution()
            sol.col_value = start
            sol.value_valid = True
            h.setSolution(sol)
        h.run()
        status = h.getModelStatus()
        s = highspy.HighsModelStatus
        if status == s.kTimeLimit:
            self.timed_out = True
        info = h.getInfo()
        has = info.primal_solution_status == 2   # kSolutionStatusFeasible
        values = list(h.getSolution().col_value) if has else None
        if status == s.kOptimal:
            return "optimal", values
        if status == s.kInfeasible:
            return "infeasible", None
        return ("feasible" if has else "unknown"), values

    def _lists(self, values: list[float]) -> dict[int, list[int]]:
        """The new replica list of every partition whose set changed: replicas kept stay in
        their slot, each one leaving is replaced in its slot by one arriving (lowest id first)."""
        out: dict[int, list[int]] = {}
        for i, p in enumerate(self.snapshot.partitions):
            chosen = {self.eligible[k] for k, c in enumerate(self.x[i]) if values[c] > 0.5}
            old = list(p.replicas)
            if set(old) == chosen:
                continue
            came = iter(sorted(chosen - set(old)))
            out[i] = [b if b in chosen else next(came) for b in old]
        return out


def targets_of(snapshot: ClusterSnapshot, eligible: Sequence[int], threshold: Fraction) -> Targets:
    """The bands of :mod:`kafka_replica_assignor.planner.solving.replica_balance` for a fully repairable snapshot."""
    parts = snapshot.partitions
    total = sum(len(p.replicas) for p in parts)
    total_bytes = sum((p.size_bytes or 0) * len(p.replicas) for p in parts)
    lo, hi = band(total, len(eligible), threshold)
    largest = max((p.size_bytes or 0 for p in parts), default=0)
    blo, bhi = byte_band(total_bytes, len(eligible), threshold, largest)
    return Targets(lo, hi, blo, bhi, any(p.size_bytes is not None for p in parts))


def topic_excess(snapshot: ClusterSnapshot, lists: Sequence[Sequence[int]], eligible: Sequence[int],
                 tree: RackTree) -> int:
    """The replicas above ``cap(t, g)`` (the formula of :mod:`kafka_replica_assignor.planner.solving.replica_balance`) summed
    over the topics and the nodes of the rack tree, for the replica lists ``lists``."""
    nb = len(eligible)
    eset = set(eligible)
    groups = tree.groups(eligible)
    chain: dict[int, tuple[Node, ...]] = {}
    members: dict[Node, int] = {}
    for b in eligible:
        keys = tree.keys[b] if tree.depth else ()
        chain[b] = (("root",), *((lv, k) for lv, k in enumerate(keys, 1)), ("b", b))
        for node in chain[b]:
            members[node] = members.get(node, 0) + 1
    count: dict[tuple[str, Node], int] = {}
    total: dict[str, int] = {}
    spanning: dict[tuple[str, int], int] = {}
    for p, reps in zip(snapshot.partitions, lists, strict=True):
        total[p.topic] = total.get(p.topic, 0) + len(reps)
        for level, g in enumerate(groups, 1):
            if len(reps) >= g:
                spanning[(p.topic, level)] = spanning.get((p.topic, level), 0) + 1
        for b in reps:
            if b in eset:
                for node in chain[b]:
                    count[(p.topic, node)] = count.get((p.topic, node), 0) + 1
    parent_of = {c[j]: c[j - 1] for c in chain.values() for j in range(1, len(c))}
    excess = 0
    for (t, node), n in count.items():
        if node == ("root",) or n < 3:
            continue
        mg, parent = members[node], parent_of[node]
        head = node[0]
        span = spanning.get((t, head), 0) if isinstance(head, int) else 0
        cap = max(_ceil(total[t] * mg, nb), _ceil(count.get((t, parent), 0) * mg, members[parent]), span) + 1
        excess += max(0, n - cap)
    return excess


def distances(snapshot: ClusterSnapshot, lists: Sequence[Sequence[int]], eligible: Sequence[int],
              tree: RackTree, targets: Targets, capacity: dict[int, int]) -> tuple[int, ...] | None:
    """How far ``lists`` are from each target, in :data:`TARGETS` order: racks missing from
    partitions, replicas and bytes outside the bands, replicas above the topic caps (0: met);
    None when a hard rule breaks (a replica off the eligible brokers, a duplicate, a capacity
    exceeded)."""
    eset = set(eligible)
    counts = dict.fromkeys(eligible, 0)
    sizes = dict.fromkeys(eligible, 0)
    groups = tree.groups(eligible)
    missing = 0
    for p, reps in zip(snapshot.partitions, lists, strict=True):
        if len(set(reps)) != len(reps) or not eset.issuperset(reps):
            return None
        for b in reps:
            counts[b] += 1
            sizes[b] += p.size_bytes or 0
        if tree.depth and len(reps) > 1:
            for level in range(tree.depth):
                missing += max(0, min(len(reps), groups[level]) - len({tree.keys[b][level] for b in reps}))
    if any(sizes[b] > limit for b, limit in capacity.items()):
        return None
    off_counts = sum(max(0, c - targets.hi, targets.lo - c) for c in counts.values())
    off_bytes = 0 if not targets.sized else sum(
        max(0, s - min(targets.bhi, capacity.get(b, targets.bhi)), targets.blo - s) for b, s in sizes.items())
    return missing, off_counts, topic_excess(snapshot, lists, eligible, tree), off_bytes


LABELS = {"diversity": "full rack diversity", "counts": "the replica band", "topics": "the topic caps",
          "bytes": "the byte band"}


def _cost(snapshot: ClusterSnapshot, lists: Sequence[Sequence[int]]) -> tuple[int, int, int]:
    """(bytes moved, replica moves, leader replicas moved) from the snapshot to ``lists``."""
    moved_bytes = moves = leaders = 0
    for p, reps in zip(snapshot.partitions, lists, strict=True):
        came = len(set(reps) - set(p.replicas))
        moves += came
        moved_bytes += came * (p.size_bytes or 0)
        leaders += bool(p.replicas) and p.replicas[0] not in reps
    return moved_bytes, moves, leaders


def _rank(off: tuple[int, ...], snapshot: ClusterSnapshot,
          lists: Sequence[Sequence[int]]) -> tuple[tuple[bool, ...], tuple[int, ...], tuple[int, int, int]]:
    """Lower is better: the targets met (in order), then each one's distance, then what moves."""
    return tuple(d > 0 for d in off), off, _cost(snapshot, lists)


def improve(work: Working, threshold: Fraction, refusal: ValueError | None, *, budgets: bool,
            cells: int = EXACT_CELLS, time_limit: float = TIME_LIMIT) -> Working:
    """The exact path (module doc) for ``work``, a rule's scratch copy that the heuristic
    balanced (or refused with ``refusal``, "capacity not met"): a new scratch copy holding the
    program's plan when it is better (targets kept, then bytes, replicas and leaders moved),
    else ``work``. Which path ran, and why, goes into the notes."""
    snapshot = work.snapshot
    eligible = work.eligible
    parts = snapshot.partitions
    why = ("a move or leader budget is set" if budgets else
           "fewer alive brokers than some partition's replicas" if any(len(p.replicas) > len(eligible) for p in parts)
           else f"{len(parts)} partitions x {len(eligible)} brokers is above {cells}"
           if len(parts) * len(eligible) > cells else None)
    if not eligible or not parts:
        why = why or "nothing to place"
    if why is None and (work.excluded - work.eligible_set
                        or any(not work.eligible_set.issuperset(parts[i].replicas) for i in work.frozen)):
        why = "a partition or broker out of scope names a broker that is not alive"
    if why is not None:
        if refusal is not None:
            raise refusal
        work.notes.append(f"heuristic path (moves, swaps and chains; no exact solve: {why})")
        return work
    capacity = {b.id: b.capacity_bytes for b in snapshot.brokers
                if b.id in work.eligible_set and b.capacity_bytes is not None}
    targets = targets_of(snapshot, eligible, threshold)
    problem = ExactProblem(snapshot, eligible, work.tree, targets, capacity, frozen=work.frozen,
                           excluded=work.excluded, takers=work.takers)
    solution = problem.solve(None if refusal is not None else work.replicas, time_limit=time_limit,
                             node_limit=NODE_LIMIT)
    if solution is None:
        if refusal is not None:
            raise refusal
        work.notes.append("heuristic path: the exact program (HiGHS) found no plan within its limits")
        return work
    if not solution.feasible:
        raise ValueError("capacity infeasible: no plan keeps every broker within its capacity_bytes with rack "
                         "diversity never reduced (proven: the program is infeasible, HiGHS)")
    lists = [list(r) for r in work.replicas]
    exact_lists = [solution.replicas.get(i, list(p.replicas)) for i, p in enumerate(parts)]
    exact_off = distances(snapshot, exact_lists, eligible, work.tree, targets, capacity)
    if exact_off is None:       # the solver's tolerance let a hard rule slip: keep the heuristic
        if refusal is not None:
            raise refusal
        work.notes.append("heuristic path: the exact program's plan failed the exact re-check")
        return work
    proofs = [f"{LABELS[name]} cannot be reached together with the hard rules and the targets kept before it "
              "(proven: the program keeping it is infeasible, HiGHS)" for name in solution.unreachable]
    if refusal is None:
        own = distances(snapshot, lists, eligible, work.tree, targets, capacity)
        if own is not None and _rank(own, snapshot, lists) <= _rank(exact_off, snapshot, exact_lists):
            work.notes.append("heuristic path: its plan is as good as the exact program's (HiGHS)")
            work.notes.extend(proofs)
            return work
    out = Working(snapshot, work.forgotten)
    out.frozen, out.excluded, out.takers, out.demoted = work.frozen, work.excluded, work.takers, work.demoted
    for i, new in solution.replicas.items():
        for j, (old, b) in enumerate(zip(parts[i].replicas, new, strict=True)):
            if old != b:
                out.replicas[i][j] = b
                out.record(i, old, b, MoveKind.REPLICA if old in work.eligible_set else MoveKind.REPAIR)
    out.bounds.update(work.bounds)
    done = ("optimal within 0.1 % (proven by its lower bound)" if solution.optimal
            else "the best found within the limits (not proven optimal)")
    out.notes.append(f"exact path: a mixed-integer program of the targets solved with HiGHS, {done}"
                     + ("; its time limit ended a solve, so another run may find another plan"
                        if problem.timed_out else ""))
    if solution.optimal and not solution.unreachable:
        moved_bytes, moves, _ = _cost(snapshot, exact_lists)
        out.bounds["replica_moves_optimum" if not targets.sized else "bytes_moved_optimum"] = \
            moved_bytes if targets.sized else moves
    out.notes.extend(proofs)
    return out
