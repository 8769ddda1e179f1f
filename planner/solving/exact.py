"""The goals as a mixed-integer program, solved with HiGHS: the exact path for small clusters.

Goals
    The goals' own targets (:data:`kafka_replica_assignor.planner.goals.order.GOALS`), solved to optimality within a
    work limit: every hard rule, then each target in the goals' order, then the plan's cost in
    the fewer-moves goal's order (bytes moved, replica moves, leader replicas moved).

Constraints
    - This module is a driver: every row is a goal's (its ``exact_rows``), so a new goal is one
      module and the program learns it. ``x[p][k] = 1`` when partition ``p`` has a replica on
      the ``k``-th eligible broker; columns are made in (topic, partition) and broker order, so
      the program, and the plan, do not depend on the input's order.
    - Hard rows (group ``"hard"``) always hold. When the targets cannot all hold together, each
      is kept in the goals' order if it can hold with those kept before it; one that cannot is
      proven so by HiGHS (the program keeping it is infeasible) and is then only brought as close
      as it can be (its rows' total violation minimised), starting from the last plan found
      keeping those before it. A target is called unreachable only on such a proof; one neither
      found nor proven within the node limit is brought as close as it can be too.
    - Limits are work: ``PlanRequest.exact_nodes`` branch-and-bound nodes per solve, one
      thread, a fixed seed: the same plan on every machine at any load. ``exact_seconds`` is a
      wall-clock safety net only: reaching it ends the command (exit 1), never with another plan.
    - Only for clusters where every partition can be repaired and ``partitions x brokers`` is at
      most :data:`EXACT_CELLS`, without move or leader budgets, and with every out-of-scope
      partition on eligible brokers; otherwise the heuristic's plan stands and a note says why.

Algorithm
    The linear relaxation gives a lower bound of the cost; the variables on which it agrees
    with the heuristic's plan are fixed and the rest is solved first (a small program); the
    whole program runs only when that is not within :data:`GAP` of the bound. The plans of the
    two paths are ranked by the goals' distances (:func:`kafka_replica_assignor.planner.solving.heuristic.measure`),
    then by their cost; the better one is kept, the heuristic's on a tie.

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
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kafka_replica_assignor.planner.goals.fewer_moves import cost
from kafka_replica_assignor.planner.goals.goal import Goal
from kafka_replica_assignor.planner.goals.order import REPLICA_PHASES, goals_for
from kafka_replica_assignor.planner.plan import MoveKind, Working
from kafka_replica_assignor.planner.request import PlanError, PlanRequest
from kafka_replica_assignor.planner.solving.heuristic import measure

EXACT_CELLS = 2400         # partitions x eligible brokers at most for the exact path (16 x 150)
GAP = 1e-3                  # relative gap on what moves at which a solve stops (proven within 0.1 %)
SOFT_GAP = 0.05
"""Relative gap at which bringing an unreachable target closer stops: close enough is within 5 %
of the closest (the planner's passes use the same share, so a proven solve ends them)."""


@dataclass(slots=True)
class Solution:
    """What the program found: the replica sets per partition (position in the snapshot), the
    targets it keeps, those proven unreachable, and whether every solve proved optimality."""

    replicas: dict[int, list[int]]
    kept: tuple[str, ...]
    unreachable: tuple[str, ...]
    optimal: bool
    feasible: bool = True       # False: no plan keeps the hard rules (proven infeasible)


class Program:
    """The program of one working copy as the goals build it (module doc)."""

    def __init__(self, work: Working) -> None:
        self.work = work
        parts = work.snapshot.partitions
        self.parts = list(work.order)
        self.brokers = list(work.eligible)
        self.pos = {b: k for k, b in enumerate(self.brokers)}
        self.scale = float(max((p.size_bytes or 0 for p in parts), default=0) or 1)
        self.cost: list[float] = []
        self.lower: list[float] = []
        self.upper: list[float] = []
        self.integer: list[bool] = []
        self.rows: list[tuple[float, float, list[int], list[float], str]] = []
        self.phases: list[tuple[dict[int, float], str]] = []
        self.x: list[list[int]] = [[] for _ in parts]
        for i in self.parts:
            self.x[i] = [self.column(0, 1, True) for _ in self.brokers]

    # -- what the goals call -----------------------------------------------------------------
    def column(self, lower: float, upper: float, integer: bool) -> int:
        self.cost.append(0.0)
        self.lower.append(lower)
        self.upper.append(upper)
        self.integer.append(integer)
        return len(self.cost) - 1

    def row(self, lower: float, upper: float, cols: Sequence[int], coefs: Sequence[float], group: str) -> None:
        self.rows.append((lower, upper, list(cols), list(coefs), group))

    def fix(self, col: int, value: float) -> None:
        self.lower[col] = self.upper[col] = value

    def cap_upper(self, col: int, value: float) -> None:
        self.upper[col] = min(self.upper[col], value)

    def objective(self, weights: dict[int, float], name: str) -> None:
        self.phases.append((weights, name))

    # -- plans as columns ---------------------------------------------------------------------
    def vector(self, lists: Sequence[Sequence[int]]) -> dict[int, float]:
        """The ``x`` columns of replica lists."""
        out = {c: 0.0 for i in self.parts for c in self.x[i]}
        for i in self.parts:
            for b in lists[i]:
                k = self.pos.get(b)
                if k is not None:
                    out[self.x[i][k]] = 1.0
        return out

    def lists(self, values: Sequence[float]) -> dict[int, list[int]]:
        """The new replica list of every partition whose set changed: replicas kept stay in
        their slot, each one leaving is replaced in its slot by one arriving (lowest id first)."""
        out: dict[int, list[int]] = {}
        parts = self.work.snapshot.partitions
        for i in self.parts:
            chosen = {self.brokers[k] for k, c in enumerate(self.x[i]) if values[c] > 0.5}
            old = list(parts[i].replicas)
            if set(old) == chosen:
                continue
            came = iter(sorted(chosen - set(old)))
            out[i] = [b if b in chosen else next(came) for b in old]
        return out


class Solver:
    """HiGHS over a :class:`Program`, keeping the targets in the goals' order (module doc)."""

    def __init__(self, program: Program, targets: Sequence[str], nodes: int, seconds: float) -> None:
        import highspy  # the planner extra, loaded when planning

        self.hs: Any = highspy
        self.program = program
        self.targets = list(targets)
        self.nodes = nodes
        self.seconds = seconds
        self.deadline = time.monotonic() + seconds
        self.slack: dict[str, list[int]] = {}

    def past_safety_net(self) -> None:
        raise PlanError(f"the exact path ran past its safety net of {self.seconds:g} s (--exact-seconds): rerun "
                        "with a smaller --exact-nodes, a larger --exact-seconds, or --exact-nodes 0 for the heuristic "
                        "alone")

    def left(self) -> float:
        return max(0.001, self.deadline - time.monotonic())

    def highs(self, on: set[str], relax: bool = False, soft: Sequence[str] = ()) -> Any:
        m = self.program
        h = self.hs.Highs()
        for option, value in (("output_flag", False), ("threads", 1), ("random_seed", 0), ("mip_rel_gap", GAP),
                              ("mip_abs_gap", 1e-9), ("mip_feasibility_tolerance", 1e-9),
                              ("primal_feasibility_tolerance", 1e-9), ("mip_max_nodes", int(self.nodes)),
                              ("time_limit", self.left())):
            h.setOptionValue(option, value)
        n = len(m.cost)
        h.addVars(n, m.lower, m.upper)
        kind = self.hs.HighsVarType
        h.changeColsIntegrality(n, list(range(n)),
                                [kind.kInteger if z and not relax else kind.kContinuous for z in m.integer])
        self.slack = {name: [] for name in soft}
        for lower, upper, idx, val, group in m.rows:
            if group in self.slack:     # lower <= row - above + below <= upper
                lower = min(lower, upper)
                for coef, needed in ((-1.0, upper < math.inf), (1.0, lower > -math.inf)):
                    if needed:
                        h.addVar(0.0, math.inf)
                        n += 1
                        self.slack[group].append(n - 1)
                        idx, val = idx + [n - 1], val + [coef]
            elif group != "hard" and group not in on:
                continue
            h.addRow(lower, upper, len(idx), idx, val)
        return h

    def run(self, h: Any, cost: dict[int, float], seed: dict[int, float] | None = None,
            start: list[float] | None = None, offset: bool = True) -> tuple[str, list[float] | None]:
        """Solve ``h`` for ``cost``; ``(status, values)``. The safety net ends the command."""
        if time.monotonic() >= self.deadline:
            self.past_safety_net()
        n = h.getNumCol()
        h.changeColsCost(n, list(range(n)), [cost.get(c, 0.0) for c in range(n)])
        # the objective is what moves (kept replicas weigh negative): gaps are relative to it
        h.changeObjectiveOffset(-sum(cost.values()) if offset else 0.0)
        h.setOptionValue("time_limit", self.left())
        if seed is not None:
            h.setSolution(len(seed), list(seed), list(seed.values()))
        elif start is not None:
            sol = self.hs.HighsSolution()
            sol.col_value = start
            sol.value_valid = True
            h.setSolution(sol)
        h.run()
        status = h.getModelStatus()
        s = self.hs.HighsModelStatus
        if status == s.kTimeLimit:
            self.past_safety_net()
        has = h.getInfo().primal_solution_status == 2   # kSolutionStatusFeasible
        values = list(h.getSolution().col_value) if has else None
        if status == s.kOptimal:
            return "optimal", values
        if status == s.kInfeasible:
            return "infeasible", None
        return ("feasible" if has else "unknown"), values

    def solve(self, seed: Sequence[Sequence[int]] | None) -> Solution | None:
        """The best plan keeping as many targets as proven possible (module doc), or None when
        nothing is found within the limits."""
        m = self.program
        on = set(self.targets)
        status, values = self.optimise(on, seed)
        unreachable: list[str] = []
        if status == "infeasible":
            on = set()
            soft: list[str] = []
            start = seed
            for name in self.targets:   # keep each target that can hold with the ones kept before it
                found, got = self.run(self.highs(on | {name}), {}, None if start is None else m.vector(start))
                if found in ("optimal", "feasible"):
                    on.add(name)
                    if got is not None:
                        lists = m.lists(got)
                        start = [lists.get(i, list(p.replicas)) for i, p in enumerate(m.work.snapshot.partitions)]
                else:
                    soft.append(name)
                    if found == "infeasible":
                        unreachable.append(name)
            status, values = self.optimise(on, start, soft)
            if status == "infeasible":
                hard, _ = self.run(self.highs(set()), {})
                if hard == "infeasible":    # the hard rules alone: no plan at all
                    return Solution({}, (), tuple(self.targets), True, feasible=False)
                return None
        if values is None:
            return None
        return Solution(m.lists(values), tuple(t for t in self.targets if t in on), tuple(unreachable),
                        status == "optimal")

    def optimise(self, on: set[str], seed: Sequence[Sequence[int]] | None,
                 soft: Sequence[str] = ()) -> tuple[str, list[float] | None]:
        """``(status, values)`` of the program keeping ``on`` (and ``soft`` as close as it can
        be, first), then its cost phases one after the other, each held at its optimum.

        With a ``seed`` and no soft target, the linear relaxation's bound and the seed's
        agreeing variables fixed give a small program first (the relaxation-induced
        neighbourhood of the seed); the whole program runs only when that is not within
        :data:`GAP` of the bound."""
        m = self.program
        h = self.highs(on, soft=soft)
        phases = [{c: 1.0 for c in self.slack[name]} for name in soft] + [w for w, _ in m.phases]
        values: list[float] | None = None
        proven = True
        for k, weights in enumerate(phases):
            is_cost = k >= len(soft)
            h.setOptionValue("mip_rel_gap", GAP if is_cost else SOFT_GAP)
            # the work of each phase: the first cost phase (bytes) the whole node limit; bringing
            # an unreachable target closer and the tie-breaks after the bytes (replica and leader
            # moves at equal bytes) a quarter
            first_cost = k == len(soft)
            h.setOptionValue("mip_max_nodes", int(self.nodes if first_cost else max(1, self.nodes // 4)))
            if k == 0 and seed is not None and not soft:
                found, values = self.neighbourhood(on, weights, seed)
                if found == "infeasible":
                    return "infeasible", None
            else:
                found, got = self.run(h, weights, m.vector(seed) if values is None and seed is not None else None,
                                      values, offset=is_cost)
                if found == "infeasible":
                    return "infeasible", None
                if got is None:
                    return "unknown", None
                values = got
            if values is None:
                return "unknown", None
            proven = proven and found == "optimal"
            if k < len(phases) - 1:
                best = sum(w * values[c] for c, w in weights.items())
                cols = list(weights)
                h.addRow(-math.inf, best + 1e-7 * (1 + abs(best)), len(cols), cols, [weights[c] for c in cols])
        return ("optimal" if proven else "feasible"), values

    def neighbourhood(self, on: set[str], cost: dict[int, float],
                      seed: Sequence[Sequence[int]]) -> tuple[str, list[float] | None]:
        """The first cost phase from the seed: relaxation bound, fixed agreement, then the
        whole program when that is not proven within the gap."""
        m = self.program
        relaxed = self.highs(on, relax=True)
        status, lp = self.run(relaxed, cost)
        if status == "infeasible":
            return "infeasible", None
        bound = relaxed.getInfo().objective_function_value if status == "optimal" else -math.inf
        vector = m.vector(seed)
        h = self.highs(on)
        values: list[float] | None = None
        if lp is not None:
            fixed = [c for c, v in vector.items() if abs(lp[c] - v) < 1e-6]
            h.changeColsBounds(len(fixed), fixed, [vector[c] for c in fixed], [vector[c] for c in fixed])
            found, values = self.run(h, cost, vector)
            if values is not None and h.getInfo().objective_function_value <= bound * (1 + GAP) + 1e-9:
                return "optimal", values
            h = self.highs(on)
        found, full = self.run(h, cost, None if values is not None else vector, values)
        if found == "infeasible":
            return "infeasible", None
        return found, full if full is not None else values


def improve(work: Working, request: PlanRequest) -> Working:
    """The exact path (module doc) for ``work``, a pass's scratch copy the heuristic balanced: a
    new scratch copy holding the program's plan when it ranks better, else ``work``. Which path
    ran, and why, goes into the notes."""
    snapshot = work.snapshot
    eligible = work.eligible
    parts = snapshot.partitions
    why = ("a move or leader budget is set" if request.max_moves is not None or request.max_leader_changes is not None
           else "fewer alive brokers than some partition's replicas" if any(len(p.replicas) > len(eligible) for p in parts)
           else f"{len(parts)} partitions x {len(eligible)} brokers is above {EXACT_CELLS}"
           if len(parts) * len(eligible) > EXACT_CELLS else None)
    if not eligible or not parts:
        why = why or "nothing to place"
    if why is None and any(not work.eligible_set.issuperset(parts[i].replicas) for i in work.frozen):
        why = "a partition out of scope names a broker that is not alive"
    if why is not None:
        work.notes.append(f"heuristic path (moves, swaps and chains; no exact solve: {why})")
        return work
    fresh = Working(snapshot, work.scope)
    goals = goals_for(fresh, request, ("lists", *REPLICA_PHASES))
    program = Program(fresh)
    for goal in goals:
        goal.exact_rows(program)
    targets = [g.key for g in goals if g.target]
    solution = Solver(program, targets, request.exact_nodes, request.exact_seconds).solve(work.replicas)
    if solution is None:
        work.notes.append("heuristic path: the exact program (HiGHS) found no plan within its node limit")
        return work
    if not solution.feasible:
        raise PlanError("capacity infeasible: no plan keeps every broker within its capacity_bytes with rack "
                        "diversity never reduced and the request's scope (proven: the program is infeasible, HiGHS)")
    out = Working(snapshot, work.scope)
    for i, new in solution.replicas.items():
        for old, b in zip(parts[i].replicas, new, strict=True):
            if old != b:
                out.record(i, old, b, MoveKind.REPLICA if old in work.eligible_set else MoveKind.REPAIR)
        out.replicas[i] = list(new)
    labels = {g.key: g.name for g in goals}
    proofs = [f"{labels[name]} cannot be reached together with the hard rules and the targets kept before it "
              "(proven: the program keeping it is infeasible, HiGHS)" for name in solution.unreachable]
    mine, theirs = measure(work, request), measure(out, request)
    if hard_broken(theirs, goals):     # the solver's tolerance let a hard rule slip: keep the heuristic
        work.notes.append("heuristic path: the exact program's plan failed the exact re-check")
        return work
    if rank(mine, cost(work)) <= rank(theirs, cost(out)):
        work.notes.append("heuristic path: the exact program (HiGHS) found no better plan"
                          + ("" if solution.optimal else " within its node limit"))
        work.notes.extend(proofs)
        return work
    out.bounds.update(work.bounds)
    before = work.memo.get("distances")
    out.memo["distances"] = (before[0] if isinstance(before, tuple) else mine, theirs)
    out.memo["soft"] = work.memo.get("soft", ())
    done = ("optimal within 0.1 % (proven by its lower bound)" if solution.optimal
            else f"the best found within {request.exact_nodes} branch-and-bound nodes per solve (not proven optimal)")
    out.notes.append(f"exact path: a mixed-integer program of the goals solved with HiGHS, {done}")
    if solution.optimal and not solution.unreachable:
        moved_bytes, moves, _ = cost(out)
        sized = any(p.size_bytes is not None for p in parts)
        out.bounds["bytes_moved_optimum" if sized else "replica_moves_optimum"] = moved_bytes if sized else moves
    out.notes.extend(proofs)
    return out


def rank(distances: tuple[int, ...], moved: tuple[int, int, int]) -> tuple[tuple[bool, ...], tuple[int, ...],
                                                                           tuple[int, int, int]]:
    """Lower is better: the targets met (in order), then each one's distance, then what moves."""
    return tuple(d > 0 for d in distances), distances, moved


def hard_broken(distances: tuple[int, ...], goals: Sequence[Goal]) -> bool:
    """Whether a hard rule other than repair has a distance (the vector of :func:`measure`)."""
    model_goals = [g for g in goals if g.phase in REPLICA_PHASES]
    return any(d and g.hard and not g.target for d, g in zip(distances[1:], model_goals, strict=False))
