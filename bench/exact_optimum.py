#!/usr/bin/env python3
"""The balance planner against exact optima on small random clusters: a ratio table.

Each instance comes from :func:`generate` (6-16 brokers, 20-150 partitions, no racks, one or two
rack levels, new / dead / hot brokers, capacities, sizes known or unknown, thresholds 5-20 %).
The optimum is the planner's own mixed-integer program (:class:`~kafka_replica_assignor.planner.solving.exact.Program`,
built by the goals' ``exact_rows``: the targets of :data:`kafka_replica_assignor.planner.goals.order.GOALS` in their
order, then the fewest bytes moved, then replicas, then leader replicas) solved by HiGHS through
its :class:`~kafka_replica_assignor.planner.solving.exact.Solver` without a node limit (:func:`optimum`). Every plan, the
optimum's and the planner's, is re-checked by :func:`check`, written here from the goals' module
docs and sharing no code with the planner: replication factors, duplicates, eligible brokers,
capacities, rack diversity never reduced, and which targets it meets (full diversity, replica
band, topic caps, byte band).

Table: per instance the planner's bytes moved (replica moves when no partition is sized) over
the optimum's, the targets each meets, and the planner's path; then the median, mean and worst
ratio over the instances where the optimum is proven and the planner meets every target the
optimum meets, and the count of the others (a reachable target missed, a refusal of a feasible
cluster).

    python bench/exact_optimum.py [--instances 60] [--seed 1] [--time-limit 30] [--gap 0.001]
        [--exact-nodes 400] [--exact-seconds 300] [--json FILE] [--store FILE]
    python bench/exact_optimum.py --summary ROWS.json[,ROWS.json...]

Two plans per instance: the heuristic alone (the planner with ``--exact-nodes 0``) and the planner
as the command runs it (``--exact-nodes``, its work limit, and ``--exact-seconds``, its safety net:
reaching it counts as a refusal). The optimum's solve starts from the heuristic's plan and stops
within ``--gap`` of its lower bound or at ``--time-limit`` (then with the best plan found, not
proven); both ratios are shown, to the optimum found and to the solver's lower bound (an upper
bound of the true ratio).
``--store FILE``: write the instances whose optimum is proven and meets every target, with it,
as JSON (the fixed subset of the suite).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time
from collections.abc import Sequence
from fractions import Fraction
from random import Random
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from kafka_replica_assignor.cluster.snapshot import BrokerEntry, ClusterSnapshot, PartitionEntry  # noqa: E402
from kafka_replica_assignor.planner.request import EXACT_NODES, EXACT_SECONDS  # noqa: E402

GIB = 1 << 30


# -- instances ------------------------------------------------------------------------------
def generate(seed: int) -> tuple[ClusterSnapshot, int]:
    """A random small cluster and a threshold in percent (see the module doc)."""
    rng = Random(seed)
    n = rng.randint(6, 16)
    levels = rng.choice((0, 1, 1, 2))
    ids = list(range(1, n + 1))
    racks: dict[int, str | None] = {}
    if levels == 1:
        k = rng.randint(2, 4)
        racks = {b: f"r{b % k}" for b in ids}
    elif levels == 2:
        dcs, per = rng.randint(2, 3), rng.randint(1, 3)
        racks = {b: f"/dc{b % dcs}/r{(b // dcs) % per}" for b in ids}
    else:
        racks = dict.fromkeys(ids)
    new = set(rng.sample(ids, rng.randint(0, 2)))
    dead = set(rng.sample([b for b in ids if b not in new], rng.choice((0, 0, 1))))
    hot = set(rng.sample([b for b in ids if b not in new], rng.randint(0, 2)))
    old = [b for b in ids if b not in new]
    weight = {b: (6.0 if b in hot else 1.0) for b in old}
    sized = rng.random() < 0.7
    partitions = []
    total = rng.randint(20, 150)
    topics = rng.randint(1, 5)
    alive = n - len(dead)
    for t in range(topics):
        rf = min(rng.choice((1, 2, 3, 3)), alive, len(old))
        count = total // topics + (t < total % topics)
        scale = rng.choice((1, 4, 20)) * (1 << 20)
        for p in range(count):
            chosen: list[int] = []
            pool = list(old)
            for _ in range(rf):
                b = rng.choices(pool, [weight[x] for x in pool])[0]
                pool.remove(b)
                chosen.append(b)
            size = int(scale * rng.lognormvariate(0, 1.2)) + 1 if sized else None
            partitions.append(PartitionEntry(f"t{t}", p, tuple(chosen), None, None, size))
    capacity: dict[int, int] = {}
    if sized and rng.random() < 0.3:
        per_broker = sum(p.size_bytes or 0 for p in partitions for _ in p.replicas) / alive
        factor = rng.uniform(1.15, 2.0)
        capacity = {b: int(per_broker * factor) for b in ids}
    brokers = tuple(BrokerEntry(b, racks[b], b not in dead, None, None, capacity.get(b)) for b in ids)
    return ClusterSnapshot(brokers, tuple(partitions)), rng.choice((10, 10, 5, 20))


# -- the independent checker ------------------------------------------------------------------
def _keys(rack: str | None, depth: int) -> tuple[str, ...]:
    if rack is None:
        return ()
    parts = [c for c in rack.split("/") if c]
    parts += [parts[-1]] * (depth - len(parts))
    return tuple("/".join(parts[:k + 1]) for k in range(depth))


def check(snapshot: ClusterSnapshot, threshold: int, lists: Sequence[Sequence[int]]) -> dict[str, Any]:
    """What ``lists`` (the replica lists after a plan) keep and meet, computed from the
    documented rules alone; ``valid`` false when a hard rule breaks (``why`` says which)."""
    alive = sorted(b.id for b in snapshot.brokers if b.alive)
    aset = set(alive)
    nb = len(alive)
    rack_of = {b.id: b.rack for b in snapshot.brokers}
    depth = max((len([c for c in (r or "").split("/") if c]) for r in rack_of.values()), default=0)
    keys = {b: _keys(rack_of[b], depth) for b in rack_of}
    groups = [len({keys[b][lv] for b in alive}) for lv in range(depth)]
    frac = Fraction(threshold, 100)
    out: dict[str, Any] = {"valid": True, "why": ""}

    def bad(why: str) -> dict[str, Any]:
        return {"valid": False, "why": why}

    counts = dict.fromkeys(alive, 0)
    sizes = dict.fromkeys(alive, 0)
    diverse = True
    moved_bytes = moves = leaders = 0
    for p, reps in zip(snapshot.partitions, lists, strict=True):
        if len(reps) != len(p.replicas):
            return bad(f"{p.topic}-{p.partition}: replication factor changed")
        if len(set(reps)) != len(reps):
            return bad(f"{p.topic}-{p.partition}: a broker twice")
        if not aset.issuperset(reps):
            return bad(f"{p.topic}-{p.partition}: a replica off the alive brokers")
        came = set(reps) - set(p.replicas)
        moves += len(came)
        moved_bytes += len(came) * (p.size_bytes or 0)
        leaders += p.replicas[0] not in reps
        for b in reps:
            counts[b] += 1
            sizes[b] += p.size_bytes or 0
        for lv in range(depth):
            now = len({keys[b][lv] for b in reps})
            before = len({keys[b][lv] for b in p.replicas if b in aset})
            if now < min(before, len(reps)):
                return bad(f"{p.topic}-{p.partition}: rack diversity reduced at level {lv + 1}")
            if now < min(len(reps), groups[lv]):
                diverse = False
    for b in snapshot.brokers:
        if b.alive and b.capacity_bytes is not None and sizes[b.id] > b.capacity_bytes:
            return bad(f"broker {b.id} above its capacity_bytes")
    total = sum(counts.values())
    avg = Fraction(total, nb)
    hi = max(math.ceil(avg), math.floor(avg * (1 + frac)))
    lo = max(0, min(math.floor(avg), math.ceil(avg * (1 - frac))))
    sized = any(p.size_bytes is not None for p in snapshot.partitions)
    mean = Fraction(sum(sizes.values()), nb)
    blo, bhi = math.ceil(mean * (1 - frac)), math.floor(mean * (1 + frac))
    if blo > bhi:
        blo, bhi = math.floor(mean), math.ceil(mean)
    bhi = max(bhi, max((p.size_bytes or 0 for p in snapshot.partitions), default=0))
    cap_of = {b.id: b.capacity_bytes for b in snapshot.brokers}
    # topic caps (the topic-spread goal's doc): cap(t, g) = E(t, g) + 1 at every node g of the rack
    # tree, E(t, root) = R_t, E(t, g) = max(ceil(E(t, parent) * m_g / m_parent), S_t(g)); m_g the alive
    # brokers under g, S_t(g) (rack nodes only) the topic's partitions with no more replicas than alive
    # brokers and at least as many as there are groups at g's level; nodes are key prefixes, a broker
    # is a node below its rack
    per_node: dict[tuple[str, Any], int] = {}
    members: dict[Any, int] = {}
    spanning: dict[tuple[str, int], int] = {}
    rtotal: dict[str, int] = {}
    for b in alive:
        for node in (*keys[b], ("broker", b)):
            members[node] = members.get(node, 0) + 1
    for p, reps in zip(snapshot.partitions, lists, strict=True):
        rtotal[p.topic] = rtotal.get(p.topic, 0) + len(p.replicas)
        for lv in range(depth):
            if groups[lv] <= len(p.replicas) <= nb:
                spanning[(p.topic, lv)] = spanning.get((p.topic, lv), 0) + 1
        for b in reps:
            for node in (*keys[b], ("broker", b)):
                per_node[(p.topic, node)] = per_node.get((p.topic, node), 0) + 1
    topics_ok = True
    for t, total_t in rtotal.items():
        for b in alive:
            share, above = total_t, nb
            for lv, node in enumerate((*keys[b], ("broker", b))):
                under = members[node]
                share = max(-(-share * under // above), spanning.get((t, lv), 0) if lv < depth else 0)
                above = under
                if per_node.get((t, node), 0) > share + 1:
                    topics_ok = False
    out.update(
        diversity=diverse,
        counts=all(lo <= c <= hi for c in counts.values()),
        topics=topics_ok,
        bytes=not sized or all(blo <= s <= min(bhi, cap_of[b] if cap_of[b] is not None else bhi)
                               for b, s in sizes.items()),
        bytes_moved=moved_bytes, moves=moves, leaders_moved=leaders, sized=sized,
    )
    return out


TARGET_NAMES = ("diversity", "counts", "topics", "bytes")


def met(result: dict[str, Any]) -> str:
    return "".join(name[0].upper() if result[name] else "-" for name in TARGET_NAMES)


# -- the plans ------------------------------------------------------------------------------
def heuristic_lists(snapshot: ClusterSnapshot, threshold: int) -> list[list[int]] | str:
    """The replica lists of the planner's heuristic alone (the message when it refuses)."""
    lists, _ = planner_lists(snapshot, threshold, 0, 0.0)
    return lists


def planner_lists(snapshot: ClusterSnapshot, threshold: int, nodes: int,
                  seconds: float) -> tuple[list[list[int]] | str, str]:
    """The planner's replica lists with ``--exact-nodes nodes --exact-seconds seconds`` (the
    message when it refuses) and the path its notes name. The lists are in the snapshot's order
    (the plan's are by topic and partition)."""
    from kafka_replica_assignor.planner.request import PlanError, PlanRequest
    from kafka_replica_assignor.planner.solving.planning import make_plan

    try:
        plan = make_plan(snapshot, PlanRequest("replica", threshold=threshold, exact_nodes=nodes,
                                               exact_seconds=seconds))
    except (PlanError, ValueError) as exc:
        return str(exc), "refused"
    path = "exact" if any(n.startswith("exact path") for n in plan.notes) else "heuristic"
    after = {(p.topic, p.partition): list(p.replicas) for p in plan.after.partitions}
    return [after[(p.topic, p.partition)] for p in snapshot.partitions], path


NO_NODE_LIMIT = 2**31 - 1     # HiGHS' largest node limit


def optimum(snapshot: ClusterSnapshot, threshold: int, seed: list[list[int]] | None, time_limit: float,
            gap: float) -> tuple[list[list[int]] | None, bool, float]:
    """The optimum's replica lists (None when no plan keeps the hard rules), whether it is
    proven (within ``gap``), and the solver's lower bound of what moves."""
    from kafka_replica_assignor.planner.goals.order import REPLICA_PHASES, goals_for
    from kafka_replica_assignor.planner.plan import Working
    from kafka_replica_assignor.planner.request import PlanRequest
    from kafka_replica_assignor.planner.solving.exact import Program

    work = Working(snapshot)
    goals = goals_for(work, PlanRequest("replica", threshold=threshold), ("lists", *REPLICA_PHASES))
    program = Program(work)
    for goal in goals:
        goal.exact_rows(program)
    solver = optimum_solver(program, [g.key for g in goals if g.target], time_limit, gap)
    solution = solver.solve(seed)
    if solution is None or not solution.feasible:
        return None, solution is not None, 0.0
    lists = [solution.replicas.get(i, list(p.replicas)) for i, p in enumerate(snapshot.partitions)]
    return lists, solution.optimal, solver.moved_bound()


def optimum_solver(program: Any, targets: list[str], time_limit: float, gap: float) -> Any:
    """The planner's :class:`~kafka_replica_assignor.planner.solving.exact.Solver` for an optimum: no node limit,
    ``gap`` as HiGHS' relative gap, ``time_limit`` seconds for the whole solve as a limit (the best
    plan found when it is reached, not proven) rather than a safety net; it records the lower
    bound of the first cost phase (what moves) of the last program it optimised."""
    from kafka_replica_assignor.planner.request import PlanError
    from kafka_replica_assignor.planner.solving.exact import Solver

    class Optimum(Solver):
        def __init__(self) -> None:
            super().__init__(program, targets, NO_NODE_LIMIT, time_limit)
            self.relaxed: list[Any] = []
            self.lower = 0.0

        def highs(self, on: set[str], relax: bool = False, soft: Sequence[str] = ()) -> Any:
            h = super().highs(on, relax, soft)
            h.setOptionValue("mip_rel_gap", gap)
            if relax:
                self.relaxed.append(h)
            return h

        def optimise(self, on: set[str], seed: Sequence[Sequence[int]] | None,
                     soft: Sequence[str] = ()) -> tuple[str, list[float] | None]:
            self.lower = 0.0
            return super().optimise(on, seed, soft)

        def run(self, h: Any, cost: dict[int, float], seed: dict[int, float] | None = None,
                start: list[float] | None = None, offset: bool = True) -> tuple[str, list[float] | None]:
            try:
                status, values = super().run(h, cost, seed, start, offset)
            except PlanError:   # the time limit: the best plan found so far
                has = h.getInfo().primal_solution_status == 2
                status, values = ("feasible" if has else "unknown"), (list(h.getSolution().col_value) if has else None)
            if values is not None and program.phases and cost is program.phases[0][0]:
                self.record(h)
            return status, values

        def record(self, h: Any) -> None:
            """The lower bound of a solve of the first cost phase: the relaxation's optimum,
            or the dual bound of a whole program (not of one with the seed's columns fixed)."""
            info = h.getInfo()
            if any(h is r for r in self.relaxed):
                if h.getModelStatus() == self.hs.HighsModelStatus.kOptimal:
                    self.lower = max(self.lower, info.objective_function_value)
                return
            lp = h.getLp()
            n = len(program.cost)
            if list(lp.col_lower_[:n]) != program.lower or list(lp.col_upper_[:n]) != program.upper:
                return
            if math.isfinite(info.mip_dual_bound):
                self.lower = max(self.lower, info.mip_dual_bound)

        def moved_bound(self) -> float:
            """The recorded bound as bytes moved (replica moves when no partition is sized),
            the replicas on brokers that are not eligible (moved whatever the plan) added."""
            parts = program.work.snapshot.partitions
            eligible = set(program.brokers)
            forced = [(sum(1 for b in parts[i].replicas if b not in eligible), parts[i].size_bytes or 0)
                      for i in program.parts]
            if program.phases[0][1] == "bytes moved":
                return self.lower * program.scale + sum(n * size for n, size in forced)
            weight = len(program.parts) + 2     # the most a replica moved weighs (leaders one more)
            return float(math.ceil(self.lower / weight - 1e-6) + sum(n for n, _ in forced))

    return Optimum()


def compare(snapshot: ClusterSnapshot, threshold: int, opt: dict[str, Any] | None, proven: bool,
            lists: list[list[int]] | str, metric: str) -> tuple[str, float | None, dict[str, Any] | None]:
    """``(status, ratio to the optimum, the check of lists)``."""
    if isinstance(lists, str):
        return ("refused" if opt is not None else "refused (infeasible)"), None, None
    mine = check(snapshot, threshold, lists)
    if not mine["valid"]:
        raise SystemExit(f"the planner's plan fails the check: {mine['why']}")
    if opt is None:
        return "no optimum", None, mine
    if any(opt[t] and not mine[t] for t in TARGET_NAMES):
        return "missed", None, mine
    if not all(opt[t] for t in TARGET_NAMES):
        return "unreachable target", None, mine
    if opt[metric] == 0:
        return "ok", 1.0 if mine[metric] == 0 else math.inf, mine
    return ("ok" if proven else "ok (optimum within its bound)"), mine[metric] / opt[metric], mine


# -- the table ------------------------------------------------------------------------------
def summary(label: str, rows: list[dict[str, Any]], key: str) -> str:
    values = [r[key] for r in rows if r[key] is not None]
    if not values:
        return f"| {label} | 0 | - | - | - |"
    return (f"| {label} | {len(values)} | {statistics.median(values):.3f} | {statistics.fmean(values):.3f} | "
            f"{max(values):.3f} |")


def print_summary(rows: list[dict[str, Any]]) -> None:
    """The summary tables of a run (or of the rows of several, ``--summary``)."""
    proven = [r for r in rows if r["planner_status"] == "ok"]
    print()
    print(f"instances: {len(rows)}; with a proven optimum (within --gap) where every target is reachable: "
          f"{sum(r['proven'] and r['targets'].split('/')[0] == 'DCTB' for r in rows)}; of them compared with "
          f"the planner (it meets every target too): {len(proven)}")
    print()
    print("| plan: ratio of what moves (bytes; replica moves when unsized) | instances | median | mean | max |")
    print("|---|---|---|---|---|")
    print(summary("heuristic alone / optimum", rows, "heuristic_ratio"))
    print(summary("planner / optimum", rows, "planner_ratio"))
    print(summary("planner / proven optimum", proven, "planner_ratio"))
    print(summary("heuristic alone / solver's lower bound", rows, "heuristic_to_bound"))
    print(summary("planner / solver's lower bound", rows, "planner_to_bound"))
    for who in ("heuristic", "planner"):
        counts: dict[str, int] = {}
        for r in rows:
            counts[r[f"{who}_status"]] = counts.get(r[f"{who}_status"], 0) + 1
        print(f"\n{who} statuses: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    for k, who in ((1, "heuristic"), (2, "planner")):
        extra = sum(1 for r in rows if r[f"{who}_ratio"] is not None and r["leaders"][k] > r["leaders"][0])
        print(f"{who}: more leader replicas moved than the optimum on {extra} of "
              f"{sum(1 for r in rows if r[f'{who}_ratio'] is not None)} compared instances")
    print()
    print("| leader replicas moved | instances | median | mean | max |")
    print("|---|---|---|---|---|")
    for k, who, compared in ((1, "heuristic", [r for r in rows if r["heuristic_ratio"] is not None]),
                             (2, "planner", [r for r in rows if r["planner_ratio"] is not None]),
                             (2, "planner (proven optima)", proven)):
        for label, values in (
                (f"{who}: minus optimum", [r["leaders"][k] - r["leaders"][0] for r in compared]),
                (f"{who}: / optimum (optimum > 0)",
                 [r["leaders"][k] / r["leaders"][0] for r in compared if r["leaders"][0]])):
            if values:
                print(f"| {label} | {len(values)} | {statistics.median(values):.3f} | "
                      f"{statistics.fmean(values):.3f} | {max(values):.3f} |")
            else:
                print(f"| {label} | 0 | - | - | - |")
    paths: dict[str, int] = {}
    for r in rows:
        paths[r["path"]] = paths.get(r["path"], 0) + 1
    print("planner paths: " + ", ".join(f"{k} {v}" for k, v in sorted(paths.items())))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--instances", type=int, default=60)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--seeds", type=lambda text: [int(x) for x in text.split(",")], metavar="S1,S2,...",
                        help="these instances instead of --seed and --instances")
    parser.add_argument("--time-limit", type=float, default=30.0, help="seconds per optimum solve")
    parser.add_argument("--gap", type=float, default=1e-3, help="relative gap at which an optimum counts as proven")
    parser.add_argument("--exact-nodes", type=int, default=EXACT_NODES,
                        help="the planner's --exact-nodes (its work limit)")
    parser.add_argument("--exact-seconds", type=float, default=EXACT_SECONDS,
                        help="the planner's --exact-seconds (a safety net: reaching it counts as a refusal)")
    parser.add_argument("--store", metavar="FILE", help="write the instances and their optima as JSON")
    parser.add_argument("--optima", metavar="FILE",
                        help="the rows (--json) of an earlier run: its optima instead of solving again")
    parser.add_argument("--json", metavar="FILE", help="write the rows as JSON")
    parser.add_argument("--summary", metavar="FILE,FILE",
                        help="print the summary tables of the rows (--json) of earlier runs, nothing else")
    args = parser.parse_args(argv)
    if args.summary:
        merged: list[dict[str, Any]] = []
        for name in args.summary.split(","):
            with open(name) as f:
                merged += json.load(f)
        print_summary(merged)
        return 0
    rows: list[dict[str, Any]] = []
    stored: list[dict[str, Any]] = []
    earlier: dict[int, dict[str, Any]] = {}
    if args.optima:
        with open(args.optima) as f:
            earlier = {row["seed"]: row for row in json.load(f)}
    print("| seed | brokers | partitions | racks | sized | cap | thr | optimum | gap | heuristic | ratio | "
          "planner | ratio | targets opt / heur / plan | path | plan s | opt s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for seed in args.seeds or range(args.seed, args.seed + args.instances):
        snapshot, threshold = generate(seed)
        sized = any(p.size_bytes is not None for p in snapshot.partitions)
        metric = "bytes_moved" if sized else "moves"
        heur = heuristic_lists(snapshot, threshold)
        start = time.perf_counter()
        mine, path = planner_lists(snapshot, threshold, args.exact_nodes, args.exact_seconds)
        plan_s = time.perf_counter() - start
        start = time.perf_counter()
        if seed in earlier:     # the optimum an earlier run found and checked
            old = earlier[seed]
            proven, bound = old["proven"], old["bound"]
            opt = None if old["optimum"] is None else {
                metric: old["optimum"], "leaders_moved": old["leaders"][0],
                **{name: flag != "-" for name, flag in zip(TARGET_NAMES, old["targets"].split("/")[0], strict=True)}}
        else:
            opt_lists, proven, bound = optimum(snapshot, threshold, heur if not isinstance(heur, str) else None,
                                               args.time_limit, args.gap)
            opt = check(snapshot, threshold, opt_lists) if opt_lists is not None else None
            if opt is not None and not opt["valid"]:
                raise SystemExit(f"seed {seed}: the optimum fails the check: {opt['why']}")
        opt_s = time.perf_counter() - start
        h_status, h_ratio, h_check = compare(snapshot, threshold, opt, proven, heur, metric)
        p_status, p_ratio, p_check = compare(snapshot, threshold, opt, proven, mine, metric)
        depth = max(len([c for c in (b.rack or "").split("/") if c]) for b in snapshot.brokers)
        value = opt[metric] if opt else None
        gap = (value / bound - 1) if value and bound > 0 else 0.0
        row = {
            "seed": seed, "brokers": len(snapshot.brokers), "partitions": len(snapshot.partitions),
            "levels": depth, "sized": sized, "capacity": any(b.capacity_bytes for b in snapshot.brokers),
            "threshold": threshold, "optimum": value, "bound": bound, "proven": proven,
            "heuristic": h_check[metric] if h_check else None, "heuristic_ratio": h_ratio, "heuristic_status": h_status,
            "planner": p_check[metric] if p_check else None, "planner_ratio": p_ratio, "planner_status": p_status,
            "heuristic_to_bound": h_check[metric] / bound if h_check and bound > 0 and h_ratio else None,
            "planner_to_bound": p_check[metric] / bound if p_check and bound > 0 and p_ratio else None,
            "targets": "/".join(met(c) if c else "x" for c in (opt, h_check, p_check)),
            "path": path, "plan_s": round(plan_s, 2), "opt_s": round(opt_s, 2),
            "leaders": [c["leaders_moved"] if c else None for c in (opt, h_check, p_check)],
        }
        rows.append(row)

        def shown(ratio: float | None, status: str) -> str:
            return f"{ratio:.3f}" if ratio is not None else status

        print(f"| {seed} | {row['brokers']} | {row['partitions']} | {depth or 'none'} | {'yes' if sized else 'no'} | "
              f"{'yes' if row['capacity'] else 'no'} | {threshold} | {value} | {gap:.4f} | {row['heuristic']} | "
              f"{shown(h_ratio, h_status)} | {row['planner']} | {shown(p_ratio, p_status)} | {row['targets']} | "
              f"{path} | {plan_s:.2f} | {opt_s:.2f} |", flush=True)
        if args.store and opt is not None and proven and all(opt[t] for t in TARGET_NAMES):
            stored.append({"seed": seed, "threshold": threshold, "snapshot": snapshot.to_dict(),
                           "metric": metric, "optimum": value})
    print_summary(rows)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    if args.store:
        with open(args.store, "w") as f:
            json.dump(stored, f, indent=1, sort_keys=True)
            f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
