#!/usr/bin/env python3
"""The balance planner against an independent exact optimum on small random clusters: a ratio table.

Each instance comes from :func:`generate` (6-16 brokers, 20-150 partitions, no racks, one or two
rack levels, new / dead / hot brokers, capacities, sizes known or unknown, thresholds 5-20 %);
with ``--modes`` it also gets a scope drawn from its seed (:func:`draw_scope`: none, 1-3 added
brokers, a removed broker, an excluded broker, 1-2 demoted brokers with mode cluster, or a topics
regex). The optimum is :mod:`independent_milp` (bench/independent_milp.py): a mixed-integer
program written from the targets as an operator reads them, sharing no code with the planner
(the targets in order, then bytes moved, replica moves, leader replicas moved; HiGHS without a
node limit, ``--time-limit`` seconds per instance at most). Every plan, the optimum's and the
planner's, is re-checked by :func:`check`, written here from the same spec and sharing no code
with the planner or the program: the hard rules (replication factors, duplicates, eligible
brokers, capacities, rack diversity never reduced), the scope (frozen partitions unchanged, no
arrival off the added brokers, removed brokers empty, excluded brokers unchanged, demoted brokers
never first where an eligible non-demoted replica exists) and which targets it meets (full
diversity, topic caps, replica band, byte band), with their violations.

The planner is asked as the command asks it: ``make_plan(snapshot, PlanRequest(mode, threshold,
scope))`` (mode replica, cluster for demoted brokers; the default exact-path limits unless
``--exact-nodes`` / ``--exact-seconds`` are given). Per instance it plans four times: the request
twice and once on the same snapshot with partitions and brokers shuffled (determinism: the plans
must be the same), and once on the first plan's result (idempotence: that plan must move nothing).

Table: per instance the planner's bytes moved (replica moves when no partition is sized) over the
optimum's, the targets each meets, leader replicas moved, the planner's CPU seconds (process time
of one plan), determinism and idempotence; then the median, mean and max ratio over the instances
where the optimum is proven and the planner meets every target the optimum meets, and the lists
of the others (a target the optimum meets that the planner misses, a refusal of a cluster the
optimum plans, a plan failing the check).

    python bench/exact_optimum.py [--instances 60] [--seed 1] [--modes] [--busy N] [--time-limit S]
        [--gap 1e-4] [--exact-nodes N] [--exact-seconds S] [--start] [--deadline MIN] [--json FILE] [--store FILE]
    python bench/exact_optimum.py --summary ROWS.json[,ROWS.json...]

``--busy N`` runs N CPU-burning child processes (Python busy loops) for the whole run, so that the
planner plans beside a CPU-heavy job; they are stopped at the end (by their process ids).
``--start``: the optimum's solve starts from the planner's plan (speed only: the program proves
its optimum whatever the start; without a proof the optimum may then be the planner's plan).
``--deadline MIN``: start no instance after MIN minutes (Ctrl-C also ends the run with its summary).
``--optima FILE``: the optima of an earlier run's rows (``--json``) instead of solving again.
``--store FILE``: the instances whose optimum is proven and meets every target, as JSON.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from fractions import Fraction
from random import Random
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

import independent_milp as milp  # noqa: E402

from kafka_replica_assignor.cluster.snapshot import BrokerEntry, ClusterSnapshot, PartitionEntry  # noqa: E402

GIB = 1 << 30
TARGET_NAMES = ("diversity", "topics", "counts", "bytes")
"""The targets in the spec's order."""


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


SCOPE_KINDS = ("none", "add", "remove", "exclude", "demote", "topics")


def draw_scope(seed: int, snapshot: ClusterSnapshot) -> tuple[ClusterSnapshot, milp.Scope, str, str]:
    """A scope drawn from ``seed`` (its own random stream: the cluster is :func:`generate`'s):
    ``(snapshot, scope, mode, label)``; with added brokers the snapshot gets them (alive, empty,
    each on the rack of a random alive broker, with the others' capacity)."""
    rng = Random(f"scope-{seed}")
    kind = rng.choice(SCOPE_KINDS)
    alive = [b for b in snapshot.brokers if b.alive]
    holding = sorted({r for p in snapshot.partitions for r in p.replicas} & {b.id for b in alive})
    if kind == "add":
        top = max(b.id for b in snapshot.brokers)
        new = [BrokerEntry(top + k, rng.choice(alive).rack, True, None, None, alive[0].capacity_bytes)
               for k in range(1, rng.randint(1, 3) + 1)]
        ids = tuple(b.id for b in new)
        return (ClusterSnapshot(snapshot.brokers + tuple(new), snapshot.partitions), milp.Scope(add_brokers=ids),
                "replica", "add " + ",".join(map(str, ids)))
    if kind == "remove":
        b = rng.choice(holding)
        return snapshot, milp.Scope(remove_brokers=(b,)), "replica", f"remove {b}"
    if kind == "exclude":
        b = rng.choice(alive).id
        return snapshot, milp.Scope(exclude_brokers=(b,)), "replica", f"exclude {b}"
    if kind == "demote":
        ids = tuple(sorted(rng.sample(holding, min(len(holding), rng.randint(1, 2)))))
        return snapshot, milp.Scope(demote_brokers=ids), "cluster", "demote " + ",".join(map(str, ids))
    if kind == "topics":
        names = sorted({p.topic for p in snapshot.partitions})
        chosen = sorted(rng.sample(names, rng.randint(1, max(1, len(names) - 1))))
        regex = "|".join(chosen)
        return snapshot, milp.Scope(topics=regex), "replica", f"topics {regex}"
    return snapshot, milp.Scope(), "replica", "none"


def instance(seed: int, modes: bool) -> tuple[ClusterSnapshot, int, milp.Scope, str, str]:
    snapshot, threshold = generate(seed)
    if not modes:
        return snapshot, threshold, milp.Scope(), "replica", "none"
    snapshot, scope, mode, label = draw_scope(seed, snapshot)
    return snapshot, threshold, scope, mode, label


# -- the independent checker ------------------------------------------------------------------
NO_RACK = "\0no rack"


def _keys(rack: str | None, depth: int, anyone_racked: bool) -> tuple[tuple[str, ...], ...]:
    """The level-1..depth keys of a rack (padded by its last component; no rack: the pseudo rack)."""
    parts = [c for c in (rack or "").split("/") if c]
    if not parts:
        parts = [NO_RACK] * depth if anyone_racked else []
    parts += [parts[-1]] * (depth - len(parts)) if parts else []
    return tuple(tuple(parts[:k + 1]) for k in range(depth))


def _frozen(snapshot: ClusterSnapshot, scope: Any) -> list[bool]:
    import re

    keep = re.compile(scope.topics) if scope.topics is not None else None
    drop = re.compile(scope.exclude_topics) if scope.exclude_topics is not None else None
    return [bool((keep and not keep.fullmatch(p.topic)) or (drop and drop.fullmatch(p.topic)))
            for p in snapshot.partitions]


def _scope_rule(snapshot: ClusterSnapshot, scope: Any, mode: str, lists: Sequence[Sequence[int]],
                eligible: set[int]) -> str:
    """The first scope rule ``lists`` break ('' when none)."""
    frozen = _frozen(snapshot, scope)
    added, excluded, demoted = set(scope.add_brokers), set(scope.exclude_brokers), set(scope.demote_brokers)
    for p, reps, still in zip(snapshot.partitions, lists, frozen, strict=True):
        name = f"{p.topic}-{p.partition}"
        if still:
            if tuple(reps) != tuple(p.replicas):
                return f"{name}: a frozen partition changed"
            continue
        came = set(reps) - set(p.replicas)
        if added and not came <= added:
            return f"{name}: a replica arrived on broker(s) {sorted(came - added)}, not added"
        if excluded & (set(reps) ^ set(p.replicas)):
            return f"{name}: excluded broker(s) {sorted(excluded & (set(reps) ^ set(p.replicas)))} changed"
        if mode == "cluster" and reps and reps[0] in demoted and any(b in eligible and b not in demoted for b in reps):
            return f"{name}: demoted broker {reps[0]} first"
    on_removed = [p for p, reps in zip(snapshot.partitions, lists, strict=True) if set(reps) & set(scope.remove_brokers)]
    if on_removed:
        return f"{on_removed[0].topic}-{on_removed[0].partition}: still on a removed broker"
    return ""


def _topic_violation(snapshot: ClusterSnapshot, lists: Sequence[Sequence[int]], eligible: list[int],
                     keys: dict[int, tuple[tuple[str, ...], ...]], groups: list[int]) -> int:
    """Replicas above the topic caps, summed over (topic, node): cap(t, g) = E(t, g) + 1 at every node
    g of the rack tree (rack nodes are key prefixes, a broker is a node below its rack), E(t, root) =
    R_t, E(t, g) = max(ceil(E(t, parent) * m_g / m_parent), S_t(g)); m_g the eligible brokers under
    g, S_t(g) (rack nodes only) the topic's partitions with RF <= B and RF >= the groups at g's level."""
    nb, depth = len(eligible), len(groups)
    aset = set(eligible)
    members: dict[Any, int] = {}
    for b in eligible:
        for node in (*keys[b], ("broker", b)):
            members[node] = members.get(node, 0) + 1
    per_node: dict[tuple[str, Any], int] = {}
    spanning: dict[tuple[str, int], int] = {}
    rtotal: dict[str, int] = {}
    for p, reps in zip(snapshot.partitions, lists, strict=True):
        rtotal[p.topic] = rtotal.get(p.topic, 0) + len(p.replicas)
        for lv in range(depth):
            if groups[lv] <= len(p.replicas) <= nb:
                spanning[(p.topic, lv)] = spanning.get((p.topic, lv), 0) + 1
        for b in reps:
            if b in aset:
                for node in (*keys[b], ("broker", b)):
                    per_node[(p.topic, node)] = per_node.get((p.topic, node), 0) + 1
    over: dict[tuple[str, Any], int] = {}
    for t, total_t in rtotal.items():
        for b in eligible:
            share, above = total_t, nb
            for lv, node in enumerate((*keys[b], ("broker", b))):
                under = members[node]
                share = max(-(-share * under // above), spanning.get((t, lv), 0) if lv < depth else 0)
                above = under
                over[(t, node)] = max(0, per_node.get((t, node), 0) - share - 1)
    return sum(over.values())


def check(snapshot: ClusterSnapshot, threshold: float | int, lists: Sequence[Sequence[int]], scope: Any = None,
          mode: str = "replica") -> dict[str, Any]:
    """What ``lists`` (the replica lists after a plan, in the snapshot's order) keep and meet,
    computed from the spec alone; ``valid`` false when a hard or scope rule breaks (``why`` says
    which). Targets: a flag each and ``violation`` (the spec's measures)."""
    scope = scope or milp.Scope()
    eligible = sorted(b.id for b in snapshot.brokers if b.alive and b.id not in set(scope.remove_brokers))
    aset = set(eligible)
    nb = len(eligible)
    rack_of = {b.id: b.rack for b in snapshot.brokers}
    depth = max((len([c for c in (r or "").split("/") if c]) for r in rack_of.values()), default=0)
    keys = {b: _keys(rack_of[b], depth, depth > 0) for b in rack_of}
    groups = [len({keys[b][lv] for b in eligible}) for lv in range(depth)]
    frac = Fraction(str(threshold)) / 100
    frozen = _frozen(snapshot, scope)

    def bad(why: str) -> dict[str, Any]:
        return {"valid": False, "why": why}

    if len(lists) != len(snapshot.partitions):
        return bad("not one list per partition")
    why = _scope_rule(snapshot, scope, mode, lists, aset)
    if why:
        return bad(why)
    counts = dict.fromkeys(eligible, 0)
    sizes = dict.fromkeys(eligible, 0)
    lacking = moved_bytes = moves = leaders = 0
    for p, reps, still in zip(snapshot.partitions, lists, frozen, strict=True):
        if not still:
            if len(reps) != len(p.replicas):
                return bad(f"{p.topic}-{p.partition}: replication factor changed")
            if len(set(reps)) != len(reps):
                return bad(f"{p.topic}-{p.partition}: a broker twice")
            if not aset.issuperset(reps):
                return bad(f"{p.topic}-{p.partition}: a replica off the eligible brokers")
        came = set(reps) - set(p.replicas)
        moves += len(came)
        moved_bytes += len(came) * (p.size_bytes or 0)
        leaders += bool(p.replicas) and p.replicas[0] not in reps
        for b in reps:
            if b in aset:
                counts[b] += 1
                sizes[b] += p.size_bytes or 0
        short = 0
        for lv in range(depth):
            now = len({keys[b][lv] for b in reps if b in aset})
            before = len({keys[b][lv] for b in p.replicas if b in aset})
            if now < min(before, len(reps)):
                return bad(f"{p.topic}-{p.partition}: rack diversity reduced at level {lv + 1}")
            if len(p.replicas) >= 2:
                short = max(short, min(len(p.replicas), groups[lv]) - now)
        lacking += short
    for b in snapshot.brokers:
        if b.id in aset and b.capacity_bytes is not None and sizes[b.id] > b.capacity_bytes:
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
    blo = max(0, blo)
    bhi = max(bhi, max((p.size_bytes or 0 for p in snapshot.partitions), default=0))
    cap_of = {b.id: b.capacity_bytes for b in snapshot.brokers}
    violation = {
        "diversity": lacking,
        "topics": _topic_violation(snapshot, lists, eligible, keys, groups),
        "counts": sum(max(0, c - hi, lo - c) for c in counts.values()),
        "bytes": sum(max(0, s - min(bhi, cap_of[b] if cap_of[b] is not None else bhi), blo - s)
                     for b, s in sizes.items()) if sized else 0,
    }
    out: dict[str, Any] = {"valid": True, "why": "", "violation": violation,
                           **{t: violation[t] == 0 for t in TARGET_NAMES},
                           "bytes_moved": moved_bytes, "moves": moves, "leaders_moved": leaders, "sized": sized}
    out.update(_leaders(snapshot, lists, aset))
    return out


def _leaders(snapshot: ClusterSnapshot, lists: Sequence[Sequence[int]], eligible: set[int]) -> dict[str, Any]:
    """Leader counts: the band floor(P/B)..ceil(P/B) met, the sum of squares, the first replicas changed."""
    counts = dict.fromkeys(eligible, 0)
    for reps in lists:
        if reps and reps[0] in counts:
            counts[reps[0]] += 1
    led = sum(1 for reps in lists if eligible & set(reps))
    lo, hi = led // len(eligible), -(-led // len(eligible))
    return {"leader_band": all(lo <= c <= hi for c in counts.values()),
            "leader_squares": sum(c * c for c in counts.values()),
            "firsts_changed": sum(1 for p, reps in zip(snapshot.partitions, lists, strict=True)
                                  if p.replicas and reps and p.replicas[0] != reps[0])}


def met(result: dict[str, Any]) -> str:
    return "".join(name[0].upper() if result[name] else "-" for name in TARGET_NAMES)


# -- the planner --------------------------------------------------------------------------------
def request_of(mode: str, threshold: int, scope: milp.Scope, args: argparse.Namespace) -> Any:
    from kafka_replica_assignor.planner.request import PlanRequest, Scope

    limits: dict[str, Any] = {}
    if args.exact_nodes is not None:
        limits["exact_nodes"] = args.exact_nodes
    if args.exact_seconds is not None:
        limits["exact_seconds"] = args.exact_seconds
    return PlanRequest(mode=mode, threshold=threshold, scope=Scope(
        scope.topics, scope.exclude_topics, scope.exclude_brokers, scope.add_brokers, scope.remove_brokers,
        scope.demote_brokers), **limits)


def lists_after(snapshot: ClusterSnapshot, plan: Any) -> list[list[int]]:
    """A plan's replica lists in ``snapshot``'s order (the plan's are by topic and partition)."""
    after = {(p.topic, p.partition): list(p.replicas) for p in plan.after.partitions}
    return [after[(p.topic, p.partition)] for p in snapshot.partitions]


def plan_once(snapshot: ClusterSnapshot, request: Any) -> tuple[Any, str, float, float]:
    """``(plan or None, the refusal's message, CPU seconds, wall seconds)``."""
    from kafka_replica_assignor.planner.request import PlanError, RequestError
    from kafka_replica_assignor.planner.solving.planning import make_plan

    cpu, wall = time.process_time(), time.perf_counter()
    try:
        plan, why = make_plan(snapshot, request), ""
    except RequestError as exc:
        plan, why = None, f"request refused: {exc}"
    except PlanError as exc:
        plan, why = None, f"refused: {exc}"
    return plan, why, time.process_time() - cpu, time.perf_counter() - wall


def shuffled(snapshot: ClusterSnapshot, seed: int) -> ClusterSnapshot:
    rng = Random(f"shuffle-{seed}")
    brokers, parts = list(snapshot.brokers), list(snapshot.partitions)
    rng.shuffle(brokers)
    rng.shuffle(parts)
    return ClusterSnapshot(tuple(brokers), tuple(parts))


def planner_runs(snapshot: ClusterSnapshot, request: Any, seed: int) -> dict[str, Any]:
    """The four plans of an instance (module doc): the first's lists (or its refusal), CPU and wall
    seconds; ``differ``: partitions whose list differs in the second plan and in the shuffled one;
    ``again``: partitions the plan of the first plan's result changes (its refusal counts as -1)."""
    first, why, cpu, wall = plan_once(snapshot, request)
    out: dict[str, Any] = {"lists": lists_after(snapshot, first) if first else why, "cpu": cpu, "wall": wall,
                           "notes": list(first.notes) if first else []}
    compared = []
    for other in (snapshot, shuffled(snapshot, seed)):
        plan, why2, _, _ = plan_once(other, request)
        if first is None or plan is None:
            compared.append(0 if (first is None) == (plan is None) and why == why2 else -1)
        else:
            compared.append(sum(a != b for a, b in zip(out["lists"], lists_after(snapshot, plan), strict=True)))
    out["differ"] = compared
    out["again"] = None
    if first is not None:
        again, _, _, _ = plan_once(first.after, request)
        if again is None:
            out["again"], out["again_moves"] = -1, None
        else:
            second = lists_after(snapshot, again)
            out["again"] = sum(a != b for a, b in zip(out["lists"], second, strict=True))
            out["again_moves"] = sum(len(set(b) - set(a)) for a, b in zip(out["lists"], second, strict=True))
    return out


# -- the optimum ----------------------------------------------------------------------------------
def optimum(snapshot: ClusterSnapshot, threshold: int, scope: milp.Scope, mode: str, args: argparse.Namespace,
            start: list[list[int]] | None) -> tuple[milp.Result, list[list[int]] | None]:
    """The independent program's optimum and its lists (leaders ordered by the spec in cluster mode)."""
    result = milp.solve(snapshot, threshold, scope, args.time_limit, args.gap, start)
    lists = result.lists
    if lists is not None and mode == "cluster":
        lists = milp.leader_order(milp.Spec(snapshot, threshold, scope), lists).lists
    return result, lists


def compare(opt: dict[str, Any] | None, mine: dict[str, Any] | None, refusal: str, metric: str) -> tuple[str,
                                                                                                           float | None]:
    """``(status, ratio to the optimum)``."""
    if mine is None:
        return ("refused" if opt is not None else "refused (no optimum)"), None
    if not mine["valid"]:
        return "INVALID", None
    if opt is None:
        return "no optimum", None
    if any(opt[t] and not mine[t] for t in TARGET_NAMES):
        return "missed", None
    ratio = (1.0 if mine[metric] == 0 else math.inf) if opt[metric] == 0 else mine[metric] / opt[metric]
    return "ok", ratio


def suspicious(opt: dict[str, Any], mine: dict[str, Any], kept: Sequence[str]) -> str:
    """Where the planner's plan beats the optimum by the spec (a bug of the program or the
    checker): a target the program found out of reach met together with the kept ones before it,
    or a target out of reach brought closer than the program's."""
    for n, t in enumerate(TARGET_NAMES):
        if t not in kept and mine[t] and all(mine[k] for k in TARGET_NAMES[:n] if k in kept):
            return f"planner meets {t}, out of reach for the optimum"
    if all(mine[t] for t in kept):
        for t in TARGET_NAMES:
            if t in kept:
                continue
            if mine["violation"][t] < opt["violation"][t]:
                return f"planner closer on {t} ({mine['violation'][t]} < {opt['violation'][t]})"
            if mine["violation"][t] > opt["violation"][t]:
                break
    return ""


# -- one instance ---------------------------------------------------------------------------------
def run_instance(seed: int, args: argparse.Namespace, earlier: dict[Any, dict[str, Any]]) -> dict[str, Any]:
    snapshot, threshold, scope, mode, label = instance(seed, args.modes)
    sized = any(p.size_bytes is not None for p in snapshot.partitions)
    metric = "bytes_moved" if sized else "moves"
    request = request_of(mode, threshold, scope, args)
    runs = planner_runs(snapshot, request, seed)
    mine = None if isinstance(runs["lists"], str) else check(snapshot, threshold, runs["lists"], scope, mode)
    start = time.perf_counter()
    old = earlier.get((seed, label))
    if old is not None:     # the optimum an earlier run found and checked
        opt, proven, bound, kept, status = old["opt"], old["proven"], old["bound"], old["kept"], old["opt_status"]
        mismatch = ""
    else:
        result, opt_lists = optimum(snapshot, threshold, scope, mode, args,
                                    runs["lists"] if args.start and mine and mine["valid"] else None)
        proven, bound, kept, status = result.proven, result.lower_bound, list(result.kept), result.status
        opt = check(snapshot, threshold, opt_lists, scope, mode) if opt_lists is not None else None
        mismatch = ""
        if opt is not None and not opt["valid"]:
            mismatch = f"the optimum fails the check: {opt['why']}"
            opt = None
        elif opt is not None and any(opt[t] != (t in kept) for t in TARGET_NAMES):
            mismatch = f"targets: program kept {kept}, checker {met(opt)}"
    opt_s = time.perf_counter() - start
    p_status, ratio = compare(opt, mine, runs["lists"] if isinstance(runs["lists"], str) else "", metric)
    odd = suspicious(opt, mine, kept) if opt is not None and mine is not None and mine["valid"] else ""
    if (opt is not None and proven and ratio is not None and ratio < 1 - args.gap - 1e-9
            and all(mine["violation"][t] == opt["violation"][t] for t in TARGET_NAMES)):
        odd = odd or f"planner moves less than the proven optimum ({mine[metric]} < {opt[metric]})"
    leaders = None
    if mode == "cluster" and mine is not None and mine["valid"]:
        best = milp.leader_order(milp.Spec(snapshot, threshold, scope), runs["lists"])
        leaders = [mine["leader_squares"], best.sum_squares, mine["firsts_changed"], best.changed]
    depth = max(len([c for c in (b.rack or "").split("/") if c]) for b in snapshot.brokers)
    return {
        "seed": seed, "brokers": len(snapshot.brokers), "partitions": len(snapshot.partitions), "levels": depth,
        "sized": sized, "capacity": any(b.capacity_bytes for b in snapshot.brokers), "threshold": threshold,
        "scope": label, "mode": mode, "metric": metric,
        "opt": opt, "opt_status": status, "proven": proven, "bound": bound, "kept": kept, "mismatch": mismatch,
        "optimum": opt[metric] if opt else None, "planner": mine[metric] if mine and mine["valid"] else None,
        "planner_status": p_status, "planner_ratio": ratio, "planner_why": mine["why"] if mine else runs["lists"],
        "targets": "/".join(met(c) if c and c["valid"] else "x" for c in (opt, mine)),
        "leaders": [opt["leaders_moved"] if opt else None, mine["leaders_moved"] if mine and mine["valid"] else None],
        "violations": [opt["violation"] if opt else None, mine["violation"] if mine and mine["valid"] else None],
        "leader_balance": leaders, "odd": odd,
        "cpu_s": round(runs["cpu"], 3), "plan_s": round(runs["wall"], 2), "opt_s": round(opt_s, 2),
        "differ": runs["differ"], "again": runs["again"], "again_moves": runs.get("again_moves"),
        "path": "exact" if any(n.startswith("exact path") for n in runs["notes"]) else "heuristic",
    }


# -- the table ------------------------------------------------------------------------------------
HEADER = ("| seed | brokers | partitions | racks | sized | cap | thr | scope | optimum | proven | planner | ratio | "
          "targets opt / plan | leaders moved opt / plan | planner CPU s | opt s | same twice / shuffled | "
          "replan changes |")


def row_line(row: dict[str, Any]) -> str:
    ratio = f"{row['planner_ratio']:.3f}" if row["planner_ratio"] is not None else row["planner_status"]
    if row["planner_ratio"] is not None and farther_than_optimum(row):
        ratio += " (farther)"   # farther than the optimum from a target out of reach
    differ = "/".join("same" if d == 0 else ("refusal differs" if d < 0 else f"{d} differ") for d in row["differ"])
    again = "-" if row["again"] is None else ("refused" if row["again"] < 0 else str(row["again"]))
    proven = "yes" if row["proven"] else row["opt_status"]
    if row["optimum"] is None:
        proven = row["opt_status"]
    return (f"| {row['seed']} | {row['brokers']} | {row['partitions']} | {row['levels'] or 'none'} | "
            f"{'yes' if row['sized'] else 'no'} | {'yes' if row['capacity'] else 'no'} | {row['threshold']} | "
            f"{row['scope']} | {row['optimum']} | {proven} | {row['planner']} | {ratio} | {row['targets']} | "
            f"{row['leaders'][0]} / {row['leaders'][1]} | {row['cpu_s']:.2f} | {row['opt_s']:.1f} | {differ} | "
            f"{again} |")


def stats(values: Sequence[float]) -> str:
    if not values:
        return "0 | - | - | -"
    return f"{len(values)} | {statistics.median(values):.3f} | {statistics.fmean(values):.3f} | {max(values):.3f}"


def print_summary(rows: list[dict[str, Any]]) -> None:
    """The summary of a run (or of the rows of several, ``--summary``)."""
    compared = [r for r in rows if r["planner_status"] == "ok" and r["proven"]]
    print()
    print(f"instances: {len(rows)}; with an optimum: {sum(r['optimum'] is not None for r in rows)}, proven: "
          f"{sum(r['optimum'] is not None and r['proven'] for r in rows)}; compared (optimum proven, the planner "
          f"meets every target the optimum meets): {len(compared)}")
    print()
    print("| figure | instances | median | mean | max |")
    print("|---|---|---|---|---|")
    print(f"| planner / optimum, bytes moved (replica moves when unsized), proven optima | "
          f"{stats([r['planner_ratio'] for r in compared])} |")
    unproven = [r for r in rows if r["planner_status"] == "ok" and not r["proven"]]
    print(f"| planner / best found, optimum not proven (time limit) | {stats([r['planner_ratio'] for r in unproven])} |")
    print(f"| planner / the program's lower bound, optimum not proven | "
          f"{stats([r['planner'] / r['bound'] for r in unproven if r['bound'] > 0])} |")
    print(f"| leader replicas moved, planner minus optimum (compared) | "
          f"{stats([r['leaders'][1] - r['leaders'][0] for r in compared])} |")
    planned = [r for r in rows if r["planner"] is not None]
    print(f"| planner CPU seconds per plan (process time) | {stats([r['cpu_s'] for r in planned])} |")
    print(f"| planner wall seconds per plan | {stats([r['plan_s'] for r in planned])} |")
    print(f"| optimum seconds per instance | {stats([r['opt_s'] for r in rows])} |")
    print()
    twice = [r["seed"] for r in rows if r["differ"][0]]
    shuffled_ = [r["seed"] for r in rows if r["differ"][1]]
    again = [r["seed"] for r in rows if r["again"]]
    print(f"determinism: plans differ on {len(set(twice) | set(shuffled_))} of {len(rows)} instances "
          f"(the same request twice: {seeds(twice)}; shuffled input: {seeds(shuffled_)})")
    print(f"idempotence: planning the plan's result changes something on {seeds(again)} of "
          f"{sum(r['again'] is not None for r in rows)} instances (replica moves then: "
          f"{sum(r.get('again_moves') or 0 for r in rows)})")
    listing("planner misses a target the optimum meets", [r for r in rows if r["planner_status"] == "missed"])
    listing("planner refuses a cluster the optimum plans", [r for r in rows if r["planner_status"] == "refused"])
    listing("planner's plan fails the check", [r for r in rows if r["planner_status"] == "INVALID"])
    listing("planner beats the optimum (a bug of the program or the checker?)", [r for r in rows if r["odd"]])
    listing("the program and the checker disagree", [r for r in rows if r["mismatch"]])
    farther = [r for r in rows if r["planner_status"] == "ok" and farther_than_optimum(r)]
    listing("planner farther than the optimum from a target out of reach", farther)
    cluster = [r for r in rows if r["leader_balance"]]
    if cluster:
        worse = [r for r in cluster if r["leader_balance"][0] > r["leader_balance"][1]]
        print(f"\nleaders (cluster mode, {len(cluster)} plans): sum of squares of leader counts above the best order "
              f"of the plan's own lists on {len(worse)}" + "".join(
                  f"\n  - seed {r['seed']}: {r['leader_balance'][0]} > {r['leader_balance'][1]}" for r in worse))
    statuses: dict[str, int] = {}
    for r in rows:
        statuses[r["planner_status"]] = statuses.get(r["planner_status"], 0) + 1
    print("\nplanner statuses: " + ", ".join(f"{k} {v}" for k, v in sorted(statuses.items())))
    paths: dict[str, int] = {}
    for r in rows:
        paths[r["path"]] = paths.get(r["path"], 0) + 1
    print("planner paths: " + ", ".join(f"{k} {v}" for k, v in sorted(paths.items())))


def seeds(which: list[int]) -> str:
    return f"{len(which)}" + (f" (seeds {', '.join(map(str, which))})" if which else "")


def farther_than_optimum(row: dict[str, Any]) -> bool:
    """The planner meets what the optimum meets but is farther from the first target out of reach
    where they differ."""
    opt, mine = row["violations"]
    if opt is None or mine is None:
        return False
    for t in TARGET_NAMES:
        if t not in row["kept"] and mine[t] != opt[t]:
            return mine[t] > opt[t]
    return False


def listing(title: str, rows: list[dict[str, Any]]) -> None:
    print(f"\n{title}: {len(rows)}")
    for r in rows:
        detail = r["odd"] or r["mismatch"] or r["planner_why"] or ""
        print(f"  - seed {r['seed']} ({r['scope']}, mode {r['mode']}, threshold {r['threshold']}): targets opt / plan "
              f"{r['targets']}, violations opt {r['violations'][0]} / plan {r['violations'][1]}"
              f"{'; ' + detail if detail else ''}")


# -- the busy neighbours ---------------------------------------------------------------------------
def start_busy(n: int) -> list[subprocess.Popen[bytes]]:
    """``n`` CPU-burning child processes (Python busy loops)."""
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]


def stop_busy(procs: list[subprocess.Popen[bytes]]) -> None:
    """Stop the busy loops this run started, each by its process id."""
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
        proc.wait()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--instances", type=int, default=60)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--seeds", type=lambda text: [int(x) for x in text.split(",")], metavar="S1,S2,...",
                        help="these instances instead of --seed and --instances")
    parser.add_argument("--modes", action="store_true", help="each instance also gets a random scope (module doc)")
    parser.add_argument("--busy", type=int, default=0, metavar="N", help="N CPU-burning processes beside the run")
    parser.add_argument("--time-limit", type=float, default=None,
                        help="seconds for the optimum's whole solve per instance (default: none)")
    parser.add_argument("--gap", type=float, default=1e-4,
                        help="relative gap at which an optimum counts as proven (HiGHS mip_rel_gap; default 0.01 %%)")
    parser.add_argument("--exact-nodes", type=int, default=None, help="the planner's --exact-nodes (default: its own)")
    parser.add_argument("--exact-seconds", type=float, default=None,
                        help="the planner's --exact-seconds (default: its own)")
    parser.add_argument("--deadline", type=float, default=None, metavar="MIN",
                        help="start no instance after MIN minutes (the summary covers those run)")
    parser.add_argument("--start", action="store_true", help="start the optimum's solve from the planner's plan")
    parser.add_argument("--store", metavar="FILE", help="write the instances and their optima as JSON")
    parser.add_argument("--optima", metavar="FILE", help="the rows (--json) of an earlier run: its optima")
    parser.add_argument("--json", metavar="FILE", help="write the rows as JSON")
    parser.add_argument("--summary", metavar="FILE,FILE",
                        help="print the summary of the rows (--json) of earlier runs, nothing else")
    args = parser.parse_args(argv)
    if args.summary:
        merged: list[dict[str, Any]] = []
        for name in args.summary.split(","):
            with open(name) as f:
                merged += json.load(f)
        print_summary(merged)
        return 0
    earlier: dict[Any, dict[str, Any]] = {}
    if args.optima:
        with open(args.optima) as f:
            earlier = {(row["seed"], row["scope"]): row for row in json.load(f)}
    busy = start_busy(args.busy)
    try:
        rows = run(args, earlier, busy)
    finally:
        stop_busy(busy)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


def run(args: argparse.Namespace, earlier: dict[Any, dict[str, Any]], busy: list[subprocess.Popen[bytes]]) -> list[
        dict[str, Any]]:
    seeds = args.seeds or range(args.seed, args.seed + args.instances)
    print(f"run: {len(seeds)} instances, {'random scopes (--modes)' if args.modes else 'no scope'}; "
          + (f"BUSY: {len(busy)} CPU-burning processes beside the planner (pids {', '.join(str(p.pid) for p in busy)})"
             if busy else "not busy (no CPU-burning processes started)")
          + f"; {os.cpu_count()} CPUs, load average at start {os.getloadavg()[0]:.2f}; optimum time limit "
          + (f"{args.time_limit:g} s" if args.time_limit else "none") + f", gap {args.gap:g}"
          + (f"; optima reused from {args.optima} (opt s: 0)" if args.optima else "") + "\n", flush=True)
    print(HEADER)
    print("|" + "---|" * HEADER.count(" | ") + "---|")
    rows, stored = [], []
    began = time.perf_counter()
    for seed in seeds:
        if args.deadline and time.perf_counter() - began > args.deadline * 60:
            print(f"\n(--deadline {args.deadline:g} min reached: {len(rows)} of {len(seeds)} instances run)")
            break
        try:
            row = run_instance(seed, args, earlier)
        except KeyboardInterrupt:
            print(f"\n(interrupted: {len(rows)} of {len(seeds)} instances run)")
            break
        rows.append(row)
        print(row_line(row), flush=True)
        if args.store and row["opt"] is not None and row["proven"] and all(row["opt"][t] for t in TARGET_NAMES):
            snapshot, threshold, _, _, _ = instance(seed, args.modes)
            stored.append({"seed": seed, "threshold": threshold, "scope": row["scope"],
                           "snapshot": snapshot.to_dict(), "metric": row["metric"], "optimum": row["optimum"]})
    print_summary(rows)
    print(f"\n(run {'BUSY with ' + str(len(busy)) + ' CPU-burning processes' if busy else 'not busy'}; "
          f"load average at end {os.getloadavg()[0]:.2f})")
    if args.store:
        with open(args.store, "w") as f:
            json.dump(stored, f, indent=1, sort_keys=True)
            f.write("\n")
    return rows


if __name__ == "__main__":
    sys.exit(main())
