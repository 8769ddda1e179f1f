#!/usr/bin/env python3
"""An exact model of the balance planner's targets, written from the operator's spec alone.

The reference optimum of ``bench/exact_optimum.py``. It is written from the targets as an operator
reads them (the spec, summarised here) and imports nothing from the planner: only the snapshot's
data types. The scope is this module's own :class:`Scope` (the same fields as the planner's).

The spec, in short
    Eligible brokers E: alive and not removed (B of them). Unsized partitions weigh 0 bytes.
    Racks are paths (``/dc1/r3`` or ``r3``), padded to the deepest depth by repeating their last
    component; brokers without a rack (when others have one) share a pseudo rack at every level;
    the level-k key of a broker is its first k components; G_k = distinct level-k keys among E.

    Hard rules: the replication factor RF is kept, no broker twice, every replica on E (repairs);
    rack diversity (distinct level-k keys among a partition's eligible replicas) never below the
    input's; bytes on a broker <= its capacity_bytes; the scope: frozen partitions (topic not
    fullmatching ``topics`` or fullmatching ``exclude_topics``) keep their list, excluded brokers
    keep exactly what they hold, with ``add_brokers`` replicas arrive only on added brokers, removed
    brokers end empty.

    Soft targets, in order: (1) full diversity: a partition with RF >= 2 spans min(RF, G_k) keys at
    every level k; (2) topic caps: replicas of topic T under each node g of the rack tree (every
    rack node and every eligible broker) <= E(T, g) + 1 (:meth:`Spec._topic_caps`); (3) a replica
    count band per broker; (4) a byte band per broker (only when some partition is sized), below
    the capacity. A target is *kept* when it can hold together with the hard rules and the targets
    kept before it; the targets that cannot are then brought as close as possible, in order (their
    total violation minimised, then held). Then the cost, lexicographic, each held at its optimum
    before the next: bytes moved (replica moves when nothing is sized), replica moves (arrivals),
    leader replicas moved (partitions whose input first replica is not in the new list).

The program
    ``x[p, b]`` binary: partition p has a replica on eligible broker b (for frozen partitions and
    excluded brokers fixed to the input; 0 where the scope forbids an arrival). ``u[p, k, g]`` in
    [0, 1], ``u <= sum of x[p, b] over b in group g``: sum over g is at most the number of level-k
    keys p spans, which is all the diversity rows need (they are lower bounds). One non-negative
    slack per violation term: ``d[p]`` (groups lacking, the max over levels), ``s[T, g]`` (replicas
    above a topic cap), ``w[b]`` (replicas out of the count band), ``v[b]`` (bytes out of the byte
    band). A kept target has its slacks' upper bounds at 0; a minimised one a row holding their
    sum at its optimum. Bytes are scaled by a power of two (exact in floating point) so that the
    rows stay well conditioned; every figure reported is recomputed in integers from the rounded
    ``x`` (:meth:`Spec.evaluate`).

Solving: one HiGHS model, one solve per phase (the targets' feasibility checks, the minimised
targets, the three costs), each phase started from the previous phase's plan; no node limit, and
optionally a time limit for the whole sequence (then the best plan found, ``proven`` false). The
result: the replica lists, whether proven optimal, the lower bound of bytes moved.

    python bench/independent_milp.py --selfcheck [--cases 40] [--seed 1]
    python bench/independent_milp.py --snapshot FILE [--threshold 10] [--remove-brokers 3] ...

``--selfcheck`` compares the program with brute-force enumeration (every assignment of tiny
clusters, the spec's order applied to them) and this module's measures with the bench's checker
(``bench/exact_optimum.py``'s ``check``) on the enumerated assignments.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import re
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from random import Random
from typing import Any

import highspy
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from kafka_replica_assignor.cluster.snapshot import BrokerEntry, ClusterSnapshot, PartitionEntry  # noqa: E402

TARGETS = ("diversity", "topics", "counts", "bytes")
"""The soft targets in the spec's order."""

NO_RACK = None
"""The path component of the pseudo rack of brokers without a rack (no real component is None)."""

INF = highspy.kHighsInf


@dataclass(frozen=True)
class Scope:
    """What a plan may touch (the fields of the planner's request scope)."""

    topics: str | None = None
    exclude_topics: str | None = None
    exclude_brokers: tuple[int, ...] = ()
    add_brokers: tuple[int, ...] = ()
    remove_brokers: tuple[int, ...] = ()
    demote_brokers: tuple[int, ...] = ()


@dataclass
class Evaluation:
    """What replica lists keep and cost, by the spec (integers, exact)."""

    valid: bool
    why: str = ""
    violation: dict[str, int] = field(default_factory=dict)
    bytes_moved: int = 0        # replica moves when nothing is sized
    moves: int = 0
    leaders_moved: int = 0

    def met(self, target: str) -> bool:
        return self.violation.get(target, 0) == 0


# -- the spec's static figures ------------------------------------------------------------------
def rack_path(rack: str | None) -> list[str]:
    return [c for c in rack.split("/") if c] if rack else []


class Spec:
    """The static figures of the spec for one snapshot, threshold and scope (eligible brokers,
    rack tree, frozen partitions, allowed brokers per partition, bands, topic caps), and
    :meth:`evaluate`, the spec's measures of a plan."""

    def __init__(self, snapshot: ClusterSnapshot, threshold: float | int, scope: Scope | None = None) -> None:
        self.snapshot = snapshot
        self.scope = scope = scope or Scope()
        self.parts = snapshot.partitions
        self.fraction = Fraction(str(threshold)) / 100
        self.removed = set(scope.remove_brokers)
        self.eligible = sorted(b.id for b in snapshot.brokers if b.alive and b.id not in self.removed)
        self.eset = set(self.eligible)
        self.B = len(self.eligible)
        self.excluded = set(scope.exclude_brokers) & self.eset
        self.added = set(scope.add_brokers)
        self.capacity = {b.id: b.capacity_bytes for b in snapshot.brokers}
        self.size = [p.size_bytes or 0 for p in self.parts]
        self.sized = any(p.size_bytes is not None for p in self.parts)
        self.rf = [len(p.replicas) for p in self.parts]
        self._frozen(scope)
        self._racks()
        self._allowed()
        self._bands()
        self._topic_caps()

    # the scope ------------------------------------------------------------------------------
    def _frozen(self, scope: Scope) -> None:
        keep = re.compile(scope.topics) if scope.topics is not None else None
        drop = re.compile(scope.exclude_topics) if scope.exclude_topics is not None else None
        self.frozen = [bool((keep is not None and not keep.fullmatch(p.topic))
                            or (drop is not None and drop.fullmatch(p.topic))) for p in self.parts]

    def _allowed(self) -> None:
        """Per partition: the eligible brokers that may hold it after (``allowed``), those that must
        (``must``: excluded brokers holding it), whether it can be repaired (RF <= allowed)."""
        self.allowed: list[set[int]] = []
        self.must: list[set[int]] = []
        self.repairable: list[bool] = []
        for i, p in enumerate(self.parts):
            held = set(p.replicas) & self.eset
            if self.frozen[i]:
                self.allowed.append(held)
                self.must.append(held)
                self.repairable.append(True)
                continue
            takers = {b for b in self.eset - self.excluded if not self.added or b in self.added}
            self.allowed.append(held | takers)
            self.must.append(held & self.excluded)
            self.repairable.append(self.rf[i] <= len(held | takers))

    # the rack tree --------------------------------------------------------------------------
    def _racks(self) -> None:
        """``key[b][k-1]``: the level-k key of broker b (a tuple of its first k path components);
        ``groups[k-1]``: the level-k keys among E with their eligible brokers."""
        paths = {b.id: rack_path(b.rack) for b in self.snapshot.brokers}
        self.depth = max((len(c) for c in paths.values()), default=0)
        self.key: dict[int, list[tuple[Any, ...]]] = {}
        for b, path in paths.items():
            full = path + [path[-1]] * (self.depth - len(path)) if path else [NO_RACK] * self.depth
            self.key[b] = [tuple(full[:k]) for k in range(1, self.depth + 1)]
        self.groups: list[dict[tuple[Any, ...], list[int]]] = []
        for k in range(self.depth):
            level: dict[tuple[Any, ...], list[int]] = {}
            for b in self.eligible:
                level.setdefault(self.key[b][k], []).append(b)
            self.groups.append(level)
        self.G = [len(level) for level in self.groups]
        self.before = [[self.distinct(p.replicas, k) for k in range(self.depth)] for p in self.parts]

    def distinct(self, replicas: Iterable[int], k: int) -> int:
        """Distinct level-(k+1) keys among the eligible brokers of ``replicas``."""
        return len({self.key[b][k] for b in replicas if b in self.eset})

    def diversity_lack(self, i: int, replicas: Sequence[int]) -> int:
        """The diversity target's violation of partition i with ``replicas``: the most groups
        lacking at any level (0 for RF < 2)."""
        if self.rf[i] < 2:
            return 0
        return max((max(0, min(self.rf[i], self.G[k]) - self.distinct(replicas, k)) for k in range(self.depth)),
                   default=0)

    # the bands ------------------------------------------------------------------------------
    def _will_hold(self, i: int) -> int:
        """Replicas of partition i on eligible brokers once repaired (a frozen partition: as it is)."""
        return len(set(self.parts[i].replicas) & self.eset) if self.frozen[i] else self.rf[i]

    def _bands(self) -> None:
        t = self.fraction
        total = sum(self._will_hold(i) for i in range(len(self.parts)))
        avg = Fraction(total, max(self.B, 1))
        self.count_hi = max(math.ceil(avg), math.floor(avg * (1 + t)))
        self.count_lo = max(0, min(math.floor(avg), math.ceil(avg * (1 - t))))
        mean = Fraction(sum(self.size[i] * self._will_hold(i) for i in range(len(self.parts))), max(self.B, 1))
        lo, hi = math.ceil(mean * (1 - t)), math.floor(mean * (1 + t))
        if lo > hi:
            lo, hi = math.floor(mean), math.ceil(mean)
        self.byte_lo = max(0, lo)
        bhi = max(hi, max(self.size, default=0))
        self.byte_hi = {b: bhi if self.capacity[b] is None else min(bhi, self.capacity[b]) for b in self.eligible}

    # the topic caps -------------------------------------------------------------------------
    def _topic_caps(self) -> None:
        """``nodes``: every node of the rack tree below the root (a rack node ``(k, key)``, a broker
        ``("broker", b)``) with its eligible brokers; ``caps[(T, node)] = E(T, node) + 1`` with
        E(T, root) = R_T and E(T, g) = max(ceil(E(T, parent) * m_g / m_parent), S_T(g)), S_T(g)
        for a rack node at level k the partitions of T with RF <= B and RF >= G_k, 0 for a broker."""
        self.nodes: dict[Any, list[int]] = {}
        parent: dict[Any, Any] = {}
        for k, level in enumerate(self.groups):
            for key, members in level.items():
                self.nodes[(k, key)] = members
                parent[(k, key)] = (k - 1, key[:-1]) if k else "root"
        for b in self.eligible:
            self.nodes[("broker", b)] = [b]
            parent[("broker", b)] = (self.depth - 1, self.key[b][-1]) if self.depth else "root"
        self.nodes["root"] = list(self.eligible)
        topics: dict[str, list[int]] = {}
        for i, p in enumerate(self.parts):
            topics.setdefault(p.topic, []).append(i)
        self.topics = topics
        self.caps: dict[tuple[str, Any], int] = {}
        order = [n for n in self.nodes if n != "root"]      # levels top-down, then the brokers
        for name, members in topics.items():
            share: dict[Any, int] = {"root": sum(self.rf[i] for i in members)}
            for node in order:
                up = parent[node]
                spanning = 0
                if node[0] != "broker":
                    spanning = sum(1 for i in members if self.G[node[0]] <= self.rf[i] <= self.B)
                share[node] = max(-(-share[up] * len(self.nodes[node]) // len(self.nodes[up])), spanning)
                self.caps[(name, node)] = share[node] + 1

    # the measures of a plan -----------------------------------------------------------------
    def hard_violation(self, lists: Sequence[Sequence[int]]) -> str:
        """The first hard rule ``lists`` break ('' when none)."""
        if len(lists) != len(self.parts):
            return "not one list per partition"
        for i, (p, reps) in enumerate(zip(self.parts, lists, strict=True)):
            name = f"{p.topic}-{p.partition}"
            if self.frozen[i]:
                if tuple(reps) != tuple(p.replicas):
                    return f"{name}: frozen partition changed"
                if self.removed & set(reps):
                    return f"{name}: frozen partition on a removed broker"
                continue
            if len(reps) != self.rf[i] or len(set(reps)) != len(reps):
                return f"{name}: replication factor changed or a broker twice"
            if not set(reps) <= self.allowed[i] or not self.must[i] <= set(reps):
                return f"{name}: a replica off the eligible brokers, or the scope broken"
            if any(self.distinct(reps, k) < self.before[i][k] for k in range(self.depth)):
                return f"{name}: rack diversity reduced"
        loads = self.loads(lists)
        over = [b for b in self.eligible if self.capacity[b] is not None and loads[b] > self.capacity[b]]
        return f"broker {over[0]} above its capacity" if over else ""

    def loads(self, lists: Sequence[Sequence[int]]) -> dict[int, int]:
        loads = dict.fromkeys(self.eligible, 0)
        for i, reps in enumerate(lists):
            for b in reps:
                if b in loads:
                    loads[b] += self.size[i]
        return loads

    def counts(self, lists: Sequence[Sequence[int]]) -> dict[int, int]:
        counts = dict.fromkeys(self.eligible, 0)
        for reps in lists:
            for b in reps:
                if b in counts:
                    counts[b] += 1
        return counts

    def topic_violation(self, lists: Sequence[Sequence[int]]) -> int:
        total = 0
        for name, members in self.topics.items():
            on: dict[int, int] = {}
            for i in members:
                for b in lists[i]:
                    if b in self.eset:
                        on[b] = on.get(b, 0) + 1
            for node, brokers in self.nodes.items():
                if node != "root":
                    total += max(0, sum(on.get(b, 0) for b in brokers) - self.caps[(name, node)])
        return total

    def evaluate(self, lists: Sequence[Sequence[int]]) -> Evaluation:
        why = self.hard_violation(lists)
        if why:
            return Evaluation(False, why)
        counts, loads = self.counts(lists), self.loads(lists)
        violation = {
            "diversity": sum(self.diversity_lack(i, reps) for i, reps in enumerate(lists)),
            "topics": self.topic_violation(lists),
            "counts": sum(max(0, c - self.count_hi, self.count_lo - c) for c in counts.values()),
            "bytes": sum(max(0, loads[b] - self.byte_hi[b], self.byte_lo - loads[b]) for b in self.eligible)
            if self.sized else 0,
        }
        moves = bytes_moved = leaders = 0
        for i, (p, reps) in enumerate(zip(self.parts, lists, strict=True)):
            came = len(set(reps) - set(p.replicas))
            moves += came
            bytes_moved += came * self.size[i]
            leaders += bool(p.replicas) and p.replicas[0] not in reps
        return Evaluation(True, "", violation, bytes_moved if self.sized else moves, moves, leaders)


# -- the program ----------------------------------------------------------------------------
@dataclass
class Result:
    """An optimum: ``lists`` (snapshot order; None when there is none), ``status`` ('optimal',
    'time limit', 'infeasible': no plan keeps the hard rules, 'unrepairable': a partition cannot be
    repaired, 'unknown': no plan found in time), ``proven`` (every phase optimal), ``lower_bound``
    (of bytes moved, replica moves when unsized), ``kept`` (the targets kept), ``evaluation``."""

    lists: list[list[int]] | None
    status: str
    proven: bool
    lower_bound: float
    kept: tuple[str, ...] = ()
    evaluation: Evaluation | None = None
    seconds: float = 0.0
    solves: int = 0
    log: list[str] = field(default_factory=list)


class Rows:
    """Rows gathered before they go to HiGHS in one call."""

    def __init__(self) -> None:
        self.lower: list[float] = []
        self.upper: list[float] = []
        self.starts: list[int] = []
        self.index: list[int] = []
        self.value: list[float] = []

    def add(self, terms: Iterable[tuple[int, float]], lower: float, upper: float) -> None:
        self.starts.append(len(self.index))
        for col, coef in terms:
            self.index.append(col)
            self.value.append(coef)
        self.lower.append(lower)
        self.upper.append(upper)

    def send(self, h: highspy.Highs) -> None:
        if self.lower:
            h.addRows(len(self.lower), np.array(self.lower), np.array(self.upper), len(self.index),
                      np.array(self.starts, dtype=np.int32), np.array(self.index, dtype=np.int32),
                      np.array(self.value))


class Exact:
    """The program of :class:`Spec` in HiGHS, solved phase by phase (module doc)."""

    def __init__(self, spec: Spec, time_limit: float | None = None, gap: float = 0.0, verbose: bool = False) -> None:
        self.spec = spec
        self.time_limit = time_limit
        self.gap = gap
        self.verbose = verbose
        big = max(spec.size, default=0)
        self.unit = float(2 ** max(0, big.bit_length() - 11))     # bytes per unit: sizes up to ~2048 units
        self.lower: list[float] = []
        self.upper: list[float] = []
        self.integer: list[int] = []
        self.slacks: dict[str, list[int]] = {t: [] for t in TARGETS}
        self.h = highspy.Highs()
        self.h.setOptionValue("output_flag", verbose)
        self.h.setOptionValue("random_seed", 0)
        self.h.setOptionValue("mip_rel_gap", gap)
        self.h.setOptionValue("mip_feasibility_tolerance", 1e-7)

    # columns --------------------------------------------------------------------------------
    def column(self, lower: float, upper: float, integer: bool = False) -> int:
        self.lower.append(lower)
        self.upper.append(upper)
        if integer:
            self.integer.append(len(self.lower) - 1)
        return len(self.lower) - 1

    def build(self) -> None:
        """The columns and rows of the hard rules and the targets (module doc)."""
        spec, rows = self.spec, Rows()
        # x[p, b]: fixed where the scope fixes it, 0 where the broker may not hold the partition
        self.x: dict[tuple[int, int], int] = {}
        for i in range(len(spec.parts)):
            for b in spec.eligible:
                if b in spec.allowed[i]:
                    low = 1.0 if b in spec.must[i] else 0.0
                    self.x[(i, b)] = self.column(low, 1.0, integer=True)
        for i in range(len(spec.parts)):
            if not spec.frozen[i]:      # the replication factor (frozen lists are fixed already)
                rows.add(((self.x[(i, b)], 1.0) for b in spec.allowed[i]), spec.rf[i], spec.rf[i])
        self.diversity_rows(rows)
        self.topic_rows(rows)
        self.band_rows(rows)
        self.h.addCols(len(self.lower), np.zeros(len(self.lower)), np.array(self.lower), np.array(self.upper),
                       0, np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.int32), np.zeros(0))
        self.h.changeColsIntegrality(len(self.integer), np.array(self.integer, dtype=np.int32),
                                     np.ones(len(self.integer), dtype=np.uint8))
        rows.send(self.h)

    def diversity_rows(self, rows: Rows) -> None:
        """u[p, k, g] <= sum over g's brokers of x[p, b]; hard: sum over g of u >= the input's
        keys; target: sum over g of u + d[p] >= min(RF, G_k) for RF >= 2."""
        spec = self.spec
        for i in range(len(spec.parts)):
            lack = self.column(0.0, INF) if spec.rf[i] >= 2 else None
            if lack is not None:
                self.slacks["diversity"].append(lack)
            for k, level in enumerate(spec.groups):
                us = []
                for members in level.values():
                    xs = [self.x[(i, b)] for b in members if (i, b) in self.x]
                    if xs:
                        u = self.column(0.0, 1.0)
                        us.append(u)
                        rows.add([(u, 1.0)] + [(c, -1.0) for c in xs], -INF, 0.0)
                if spec.before[i][k]:
                    rows.add(((u, 1.0) for u in us), spec.before[i][k], INF)
                if lack is not None:
                    rows.add([(u, 1.0) for u in us] + [(lack, 1.0)], min(spec.rf[i], spec.G[k]), INF)

    def topic_rows(self, rows: Rows) -> None:
        """Replicas of T under node g - s[T, g] <= cap(T, g) (no row where the cap cannot bind)."""
        spec = self.spec
        for name, members in spec.topics.items():
            most = sum(spec.rf[i] for i in members)
            for node, brokers in spec.nodes.items():
                cap = spec.caps.get((name, node))
                if cap is None or cap >= most:
                    continue
                s = self.column(0.0, INF)
                self.slacks["topics"].append(s)
                terms = [(self.x[(i, b)], 1.0) for i in members for b in brokers if (i, b) in self.x]
                rows.add(terms + [(s, -1.0)], -INF, cap)

    def band_rows(self, rows: Rows) -> None:
        """Per eligible broker: lo <= replicas + w, replicas - w <= hi; bytes the same with v (in
        units); capacity as a hard row."""
        spec = self.spec
        for b in spec.eligible:
            xs = [(self.x[(i, b)], i) for i in range(len(spec.parts)) if (i, b) in self.x]
            w = self.column(0.0, INF)
            self.slacks["counts"].append(w)
            rows.add([(c, 1.0) for c, _ in xs] + [(w, 1.0)], spec.count_lo, INF)
            rows.add([(c, 1.0) for c, _ in xs] + [(w, -1.0)], -INF, spec.count_hi)
            load = [(c, spec.size[i] / self.unit) for c, i in xs if spec.size[i]]
            if spec.capacity[b] is not None:
                rows.add(load, -INF, spec.capacity[b] / self.unit)
            if spec.sized:
                v = self.column(0.0, INF)
                self.slacks["bytes"].append(v)
                rows.add(load + [(v, 1.0)], spec.byte_lo / self.unit, INF)
                rows.add(load + [(v, -1.0)], -INF, spec.byte_hi[b] / self.unit)

    # a plan as columns ----------------------------------------------------------------------
    def lists_of(self, values: Sequence[float]) -> list[list[int]]:
        """The replica lists of a solution: kept replicas in their input order, then arrivals."""
        out = []
        for i, p in enumerate(self.spec.parts):
            if self.spec.frozen[i]:
                out.append(list(p.replicas))
                continue
            on = {b for b in self.spec.allowed[i] if values[self.x[(i, b)]] > 0.5}
            out.append([b for b in p.replicas if b in on] + sorted(on - set(p.replicas)))
        return out

    def columns_of(self, lists: Sequence[Sequence[int]]) -> list[float]:
        """A full column vector of ``lists`` (x from the lists; u and the slacks at their least
        values), for HiGHS as a start."""
        values = [0.0] * len(self.lower)
        for i, reps in enumerate(lists):
            for b in reps:
                if (i, b) in self.x:
                    values[self.x[(i, b)]] = 1.0
        # the continuous columns: solve the LP with every x fixed (exact and simple)
        fixed = highspy.Highs()
        fixed.setOptionValue("output_flag", False)
        fixed.passModel(self.h.getModel())
        xs = np.array(sorted(self.x.values()), dtype=np.int32)
        at = np.array([values[c] for c in xs])
        fixed.changeColsBounds(len(xs), xs, at, at)
        fixed.changeColsIntegrality(len(xs), xs, np.zeros(len(xs), dtype=np.uint8))
        fixed.run()
        if fixed.getModelStatus() == highspy.HighsModelStatus.kOptimal:
            return list(fixed.getSolution().col_value)
        return values

    # the phases -----------------------------------------------------------------------------
    def remaining(self) -> float | None:
        if self.time_limit is None:
            return None
        return self.time_limit - (time.perf_counter() - self.started)

    def run(self, costs: dict[int, float], abs_gap: float, start: list[float] | None) -> tuple[str, list[float] | None,
                                                                                                 float]:
        """Minimise ``costs``: ``(status, values, dual bound)``; status 'optimal', 'feasible' (time
        limit with a plan), 'infeasible' or 'unknown'."""
        left = self.remaining()
        if left is not None and left <= 0:
            return "unknown", None, -INF
        h = self.h
        n = len(self.lower)
        cost = np.zeros(n)
        for c, v in costs.items():
            cost[c] += v
        h.changeColsCost(n, np.arange(n, dtype=np.int32), cost)
        h.setOptionValue("mip_abs_gap", abs_gap)
        h.setOptionValue("time_limit", INF if left is None else max(left, 0.01))
        if start is not None:
            h.setSolution(n, np.arange(n, dtype=np.int32), np.array(start))
        h.run()
        self.solves += 1
        status = h.getModelStatus()
        info = h.getInfo()
        if status == highspy.HighsModelStatus.kInfeasible:
            return "infeasible", None, INF
        values = list(h.getSolution().col_value) if info.primal_solution_status == 2 else None
        bound = info.mip_dual_bound if math.isfinite(info.mip_dual_bound) else -INF
        if status == highspy.HighsModelStatus.kOptimal and values is not None:
            return "optimal", values, bound
        return ("feasible" if values is not None else "unknown"), values, bound

    def solve(self, start: Sequence[Sequence[int]] | None = None) -> Result:
        """The optimum (module doc); ``start``: replica lists to start from (used when they keep
        the hard rules; speed only)."""
        self.started = time.perf_counter()
        self.solves = 0
        spec = self.spec
        if not all(spec.repairable):
            return Result(None, "unrepairable", True, 0.0)
        if spec.B == 0:
            return Result(None, "infeasible", True, 0.0)
        self.build()
        result = Result(None, "optimal", True, 0.0)
        plan = [list(r) for r in start] if start is not None and spec.evaluate(start).valid else None
        plan = self.targets(plan, result)
        if plan is not None:
            plan = self.costs(plan, result)
        result.lists = plan
        result.seconds = time.perf_counter() - self.started
        result.solves = self.solves
        if plan is not None:
            result.evaluation = spec.evaluate(plan)
            if not result.proven:
                result.status = "time limit"
        return result

    def hold(self, costs: dict[int, float], value: float, tolerance: float) -> None:
        """Keep ``costs`` at most ``value`` (+ ``tolerance``) in the phases after."""
        rows = Rows()
        rows.add(sorted(costs.items()), -INF, value + tolerance)
        rows.send(self.h)

    def x_cost(self, costs: dict[int, float], lists: Sequence[Sequence[int]]) -> float:
        """The value of ``costs`` (on x columns only) at ``lists``."""
        return sum(costs.get(self.x[(i, b)], 0.0) for i, reps in enumerate(lists) for b in reps if (i, b) in self.x)

    def objective(self, name: str, lists: list[list[int]]) -> int:
        """A cost phase's figure of ``lists``, by the spec."""
        e = self.spec.evaluate(lists)
        return {"bytes moved": e.bytes_moved, "replica moves": e.moves}.get(name, e.leaders_moved)

    # the targets' phases ----------------------------------------------------------------------
    def unit_of(self, target: str) -> float:
        """Violation units per program unit: bytes per unit for the byte band, 1 for the others."""
        return self.unit if target == "bytes" else 1.0

    def targets(self, plan: list[list[int]] | None, result: Result) -> list[list[int]] | None:
        """The targets' phases: each checked in order (kept when it holds with the hard rules and
        the targets kept before it), then the others minimised in order and held. The plan after
        them (None: no plan keeps the hard rules, or none was found in time)."""
        present = [t for t in TARGETS if t != "bytes" or self.spec.sized]
        kept: list[str] = []
        for target in present:
            if plan is None or not self.spec.evaluate(plan).met(target):
                status, values, _ = self.run(dict.fromkeys(self.slacks[target], 1.0), 0.999 / self.unit_of(target),
                                             self.columns_of(plan) if plan is not None else None)
                if status == "infeasible" or (values is None and plan is None):
                    result.status = status      # only the first solve can (no plan in hand yet)
                    result.proven = status == "infeasible"
                    return None
                if values is not None:
                    plan = self.better(plan, self.lists_of(values), lambda e, t=target: e.violation[t])
                # a target that holds in the plan in hand is proven kept, whatever the status
                result.proven &= status == "optimal" or self.spec.evaluate(plan).met(target)
            if self.spec.evaluate(plan).met(target):
                kept.append(target)
                self.keep(target)
        result.kept = tuple(t for t in TARGETS if t in kept or t not in present)   # no sizes: no byte band
        for target in present:
            if target not in kept:
                plan = self.minimise(target, plan, result)
        return plan

    def better(self, plan: list[list[int]] | None, other: list[list[int]], measure: Any) -> list[list[int]]:
        """``other`` unless ``plan`` (a plan in hand) measures less (a solve stopped by the time limit)."""
        if plan is None or measure(self.spec.evaluate(other)) <= measure(self.spec.evaluate(plan)):
            return other
        return plan

    def keep(self, target: str) -> None:
        """A kept target: its slacks at 0 from now on."""
        cols = np.array(self.slacks[target], dtype=np.int32)
        if len(cols):
            self.h.changeColsBounds(len(cols), cols, np.zeros(len(cols)), np.zeros(len(cols)))

    def minimise(self, target: str, plan: list[list[int]], result: Result) -> list[list[int]]:
        """Bring a target not kept as close as possible, then hold its total violation there."""
        costs = dict.fromkeys(self.slacks[target], 1.0)
        unit = self.unit_of(target)
        status, values, _ = self.run(costs, 0.999 / unit, self.columns_of(plan))
        if values is not None:
            plan = self.better(plan, self.lists_of(values), lambda e: e.violation[target])
        result.proven &= status == "optimal"
        violation = self.spec.evaluate(plan).violation[target]
        self.hold(costs, violation / unit, 0.5 / unit)
        result.log.append(f"{target}: not kept, violation {violation} ({status})")
        return plan

    # the cost phases ------------------------------------------------------------------------
    def cost_phases(self) -> list[tuple[str, dict[int, float], float]]:
        """``(name, costs on x, program units per unit)`` of the cost phases, in order. Leader
        replicas moved = (input leaders not eligible) + (eligible input leaders) - (those kept):
        the costs are -1 on each eligible input leader's x, the rest a constant."""
        spec = self.spec
        arrivals = [(i, b) for (i, b) in self.x if not spec.frozen[i] and b not in spec.parts[i].replicas]
        phases: list[tuple[str, dict[int, float], float]] = []
        if spec.sized:
            size = {self.x[(i, b)]: spec.size[i] / self.unit for (i, b) in arrivals if spec.size[i]}
            phases.append(("bytes moved", size, 1.0 / self.unit))
        phases.append(("replica moves", {self.x[k]: 1.0 for k in arrivals}, 1.0))
        leaders = {self.x[(i, p.replicas[0])]: -1.0 for i, p in enumerate(spec.parts)
                   if not spec.frozen[i] and p.replicas and (i, p.replicas[0]) in self.x}
        phases.append(("leader replicas moved", leaders, 1.0))
        return phases

    def costs(self, plan: list[list[int]], result: Result) -> list[list[int]]:
        """The cost phases, each minimised and held; the lower bound (of bytes moved, or replica
        moves when unsized) from the first."""
        for n, (name, costs, unit) in enumerate(self.cost_phases()):
            status, values, bound = self.run(costs, 0.999 * unit, self.columns_of(plan))
            if values is not None and self.x_cost(costs, self.lists_of(values)) <= self.x_cost(costs, plan):
                plan = self.lists_of(values)
            result.proven &= status == "optimal"
            value = self.x_cost(costs, plan)
            if n == 0:
                found = self.spec.evaluate(plan).bytes_moved     # the dual bound, as bytes (or moves)
                result.lower_bound = float(min(found, max(0, math.ceil(bound / unit - 1e-6)))) if bound > -INF else 0.0
            self.hold(costs, value, 0.5 * unit)
            result.log.append(f"{name}: {self.objective(name, plan)} ({status})")
        return plan


def solve(snapshot: ClusterSnapshot, threshold: float | int, scope: Scope | None = None,
          time_limit: float | None = None, gap: float = 0.0, start: Sequence[Sequence[int]] | None = None,
          verbose: bool = False) -> Result:
    """The optimum of the spec for ``snapshot`` (module doc)."""
    return Exact(Spec(snapshot, threshold, scope), time_limit, gap, verbose).solve(start)


# -- leaders (cluster mode): only reordering the lists -------------------------------------------
@dataclass
class Leaders:
    """The leader order of replica lists: ``lists`` with each partition's leader first, the sum of
    squares of the eligible brokers' leader counts, the partitions whose first replica changed from
    the input, the band floor(P/B)..ceil(P/B), whether proven optimal."""

    lists: list[list[int]]
    sum_squares: int
    changed: int
    band: tuple[int, int]
    proven: bool


def leader_counts(spec: Spec, lists: Sequence[Sequence[int]]) -> dict[int, int]:
    counts = dict.fromkeys(spec.eligible, 0)
    for reps in lists:
        if reps and reps[0] in counts:
            counts[reps[0]] += 1
    return counts


def leader_band(spec: Spec, lists: Sequence[Sequence[int]]) -> tuple[int, int]:
    """floor(P/B), ceil(P/B); P = partitions with an eligible replica."""
    led = sum(1 for reps in lists if spec.eset & set(reps))
    return led // max(spec.B, 1), -(-led // max(spec.B, 1))


def leader_order(spec: Spec, lists: Sequence[Sequence[int]], time_limit: float | None = None) -> Leaders:
    """The spec's leader step on fixed replica sets: each eligible broker first replica of as close
    to floor(P/B)..ceil(P/B) partitions as reachable (least sum of squares of leader counts), then
    the fewest partitions whose first replica changed from the input; a demoted broker never first
    where an eligible non-demoted replica exists; frozen partitions keep their order. A small
    program: l[p, b] binary (b leads p), sum over b = 1; per broker count = sum of l, written as a
    sum of unit steps z[b, j] of cost 2(base + j) - 1 (convex, so they fill in order: the cost is
    the square, less the constant base^2 of the frozen partitions it leads)."""
    fixed = [list(r) for r in lists]
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("random_seed", 0)
    cols, steps, rows = leader_program(spec, fixed)
    n = len(cols) + len(steps)
    h.addCols(n, np.zeros(n), np.zeros(n), np.ones(n), 0, np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.int32),
              np.zeros(0))
    if cols:
        h.changeColsIntegrality(len(cols), np.arange(len(cols), dtype=np.int32), np.ones(len(cols), dtype=np.uint8))
    rows.send(h)
    changed = {cols[(i, p.replicas[0])]: -1.0 for i, p in enumerate(spec.parts)
               if p.replicas and (i, p.replicas[0]) in cols}
    proven = True
    values = [0.0] * n
    for costs in (steps, changed):      # the sum of squares, held; then the first replicas changed
        cost = np.zeros(n)
        for c, v in costs.items():
            cost[c] = v
        h.changeColsCost(n, np.arange(n, dtype=np.int32), cost)
        h.setOptionValue("mip_abs_gap", 0.999)
        h.setOptionValue("time_limit", INF if time_limit is None else time_limit)
        h.run()
        proven &= h.getModelStatus() == highspy.HighsModelStatus.kOptimal
        if h.getInfo().primal_solution_status != 2:
            break
        values = list(h.getSolution().col_value)
        hold = Rows()
        hold.add(sorted(costs.items()), -INF, sum(v * values[c] for c, v in costs.items()) + 0.5)
        hold.send(h)
    for (i, b), c in cols.items():
        if values[c] > 0.5:
            fixed[i] = [b] + [x for x in fixed[i] if x != b]
    counts = leader_counts(spec, fixed)
    moved = sum(1 for i, p in enumerate(spec.parts) if p.replicas and fixed[i] and fixed[i][0] != p.replicas[0])
    return Leaders(fixed, sum(c * c for c in counts.values()), moved, leader_band(spec, fixed), proven)


def leader_program(spec: Spec, lists: list[list[int]]) -> tuple[dict[tuple[int, int], int], dict[int, float], Rows]:
    """The columns l[p, b] (by (p, b)), the step columns z with their costs, and the rows of
    :func:`leader_order`'s program."""
    demoted = set(spec.scope.demote_brokers)
    base = leader_counts(spec, [lists[i] if spec.frozen[i] else [] for i in range(len(lists))])
    cols: dict[tuple[int, int], int] = {}
    rows = Rows()
    for i, reps in enumerate(lists):
        if spec.frozen[i]:
            continue
        cands = [b for b in reps if b in spec.eset]
        if any(b not in demoted for b in cands):
            cands = [b for b in cands if b not in demoted]
        for b in cands:
            cols[(i, b)] = len(cols)
        if cands:
            rows.add(((cols[(i, b)], 1.0) for b in cands), 1.0, 1.0)
    steps: dict[int, float] = {}
    for b in spec.eligible:
        mine = [c for (_, x), c in cols.items() if x == b]
        zs = list(range(len(cols) + len(steps), len(cols) + len(steps) + len(mine)))
        for j, z in enumerate(zs):
            steps[z] = 2.0 * (base[b] + j + 1) - 1
        rows.add([(c, 1.0) for c in mine] + [(z, -1.0) for z in zs], 0.0, 0.0)
    return cols, steps, rows


# -- the self-check: brute force on tiny clusters ----------------------------------------------------
def choices_of(spec: Spec) -> list[list[list[int]]]:
    """Per partition, every replica list the scope lets it have (frozen: its own)."""
    choices = []
    for i, p in enumerate(spec.parts):
        if spec.frozen[i]:
            choices.append([list(p.replicas)])
            continue
        sets = [set(c) for c in itertools.combinations(sorted(spec.allowed[i]), spec.rf[i]) if spec.must[i] <= set(c)]
        choices.append([[b for b in p.replicas if b in s] + sorted(s - set(p.replicas)) for s in sets])
    return choices


def brute_force(spec: Spec) -> tuple[tuple[str, ...], tuple[int, ...], list[list[int]]] | None:
    """Every assignment of ``spec``'s cluster, the spec's order applied: ``(kept targets, the key
    (violations of the others in order, bytes moved, replica moves, leader replicas moved), an
    optimal plan)``; None when no assignment keeps the hard rules."""
    plans = []
    for lists in itertools.product(*choices_of(spec)):
        e = spec.evaluate(lists)
        if e.valid:
            plans.append((e, [list(r) for r in lists]))
    if not plans:
        return None
    kept: list[str] = []
    for target in TARGETS:
        if any(all(e.met(t) for t in (*kept, target)) for e, _ in plans):
            kept.append(target)
    others = [t for t in TARGETS if t not in kept]
    best = min(((tuple(e.violation[t] for t in others) + (e.bytes_moved, e.moves, e.leaders_moved), lists)
                for e, lists in plans if all(e.met(t) for t in kept)), key=lambda pair: pair[0])
    return tuple(kept), best[0], best[1]


def brute_leaders(spec: Spec, lists: Sequence[Sequence[int]]) -> tuple[int, int]:
    """The least (sum of squares of leader counts, first replicas changed) over every choice of
    leaders of ``lists`` (demoted brokers excluded where the spec says), by enumeration."""
    demoted = set(spec.scope.demote_brokers)
    options = []
    for i, reps in enumerate(lists):
        cands = [b for b in reps if b in spec.eset]
        if any(b not in demoted for b in cands):
            cands = [b for b in cands if b not in demoted]
        options.append([reps[0]] if spec.frozen[i] or not cands else cands)
    best = None
    for firsts in itertools.product(*options):
        counts = dict.fromkeys(spec.eligible, 0)
        for b in firsts:
            if b in counts:
                counts[b] += 1
        changed = sum(1 for p, b in zip(spec.parts, firsts, strict=True) if p.replicas and b != p.replicas[0])
        key = (sum(c * c for c in counts.values()), changed)
        best = key if best is None or key < best else best
    assert best is not None
    return best


def check_leaders(spec: Spec, lists: list[list[int]], rng: Random) -> str:
    """:func:`leader_order` against :func:`brute_leaders` with 0-2 demoted brokers ('' when they agree)."""
    demote = tuple(rng.sample(spec.eligible, min(len(spec.eligible), rng.randint(0, 2))))
    old = spec.scope
    spec.scope = Scope(old.topics, old.exclude_topics, old.exclude_brokers, old.add_brokers, old.remove_brokers,
                       demote)
    try:
        got = leader_order(spec, lists)
        want = brute_leaders(spec, lists)
    finally:
        spec.scope = old
    if (got.sum_squares, got.changed) != want or not got.proven:
        return f"leaders with demoted {demote}: program {(got.sum_squares, got.changed)}, brute force {want}"
    return ""


def tiny(rng: Random) -> tuple[ClusterSnapshot, int, Scope, str]:
    """A tiny random cluster (3-4 brokers, 3-4 partitions, RF 2 mostly) with a threshold and a scope."""
    n = rng.randint(3, 4)
    ids = list(range(1, n + 1))
    shape = rng.choice(("none", "flat", "two", "partial"))
    rack = {
        "none": lambda b: None, "flat": lambda b: f"r{b % 2}", "two": lambda b: f"/dc{b % 2}/r{b % 3}",
        "partial": lambda b: None if b == 1 else f"r{b % 2}",
    }[shape]
    dead = [n + 1] if rng.random() < 0.3 else []
    sized = rng.random() < 0.7
    parts = []
    for p in range(rng.randint(3, 4)):
        rf = rng.choice((2, 2, 2, 1, 3))
        reps = tuple(rng.sample(ids + dead, rf))
        parts.append(PartitionEntry(f"t{p % 2}", p, reps, None, None, rng.randint(1, 60) if sized else None))
    cap = None
    if sized and rng.random() < 0.3:
        cap = int(sum((q.size_bytes or 0) * len(q.replicas) for q in parts) / n * rng.uniform(1.0, 1.6))
    kind = rng.choice(("none", "none", "add", "remove", "exclude", "topics"))
    extra = [n + 2] if kind == "add" else []
    brokers = [BrokerEntry(b, rack(b), b not in dead, None, None, cap) for b in ids + dead + extra]
    scope = {"none": Scope(), "add": Scope(add_brokers=(n + 2,)), "remove": Scope(remove_brokers=(rng.choice(ids),)),
             "exclude": Scope(exclude_brokers=(rng.choice(ids),)), "topics": Scope(topics="t0")}[kind]
    label = f"{n} brokers{' + 1 dead' if dead else ''}, racks {shape}, {'sized' if sized else 'unsized'}" \
            f"{', capacity' if cap else ''}, scope {kind}"
    return ClusterSnapshot(tuple(brokers), tuple(parts)), rng.choice((0, 5, 10, 25, 50)), scope, label


def cross_check(spec: Spec, threshold: int, scope: Scope, rng: Random) -> str:
    """This module's measures against the bench's checker on up to 200 random assignments
    ('' when they agree on validity and on every target met)."""
    from exact_optimum import TARGET_NAMES, check

    brokers = sorted({b.id for b in spec.snapshot.brokers})
    choices = choices_of(spec)
    for n in range(200):
        if n % 4 == 0:      # anything, mostly breaking a hard rule
            lists = [rng.sample(brokers, spec.rf[i]) for i in range(len(spec.parts))]
        else:               # what the scope allows, mostly keeping the hard rules
            lists = [rng.choice(c) if c else [] for c in choices]
        mine, theirs = spec.evaluate(lists), check(spec.snapshot, threshold, lists, scope)
        if mine.valid != theirs["valid"]:
            return f"validity differs on {lists}: {mine.why!r} vs {theirs['why']!r}"
        if mine.valid and any(mine.met(t) != theirs[t] for t in TARGET_NAMES):
            return f"targets differ on {lists}: {mine.violation} vs {theirs}"
    return ""


def selfcheck(cases: int, seed: int) -> int:
    """The program against brute force on ``cases`` tiny clusters (module doc); 0 when all agree."""
    rng = Random(seed)
    failures = 0
    for case in range(cases):
        snapshot, threshold, scope, label = tiny(rng)
        spec = Spec(snapshot, threshold, scope)
        brute = brute_force(spec) if all(spec.repairable) else None
        result = Exact(spec).solve()
        if result.lists is None:
            ok = brute is None and result.status in ("infeasible", "unrepairable")
            shown = result.status
        else:
            e = result.evaluation
            assert e is not None
            others = [t for t in TARGETS if t not in result.kept]
            key = tuple(e.violation[t] for t in others) + (e.bytes_moved, e.moves, e.leaders_moved)
            ok = brute is not None and (result.kept, key) == brute[:2] and result.proven
            shown = f"kept {','.join(result.kept) or '-'} key {key}"
        why = cross_check(spec, threshold, scope, rng)
        if not why and result.lists is not None:
            why = check_leaders(spec, result.lists, rng)
        ok = ok and not why
        failures += not ok
        print(f"case {case + 1}: {label}, threshold {threshold}: milp {shown}; brute force "
              f"{('kept ' + (','.join(brute[0]) or '-') + f' key {brute[1]}') if brute else 'no plan'}"
              f"{'' if ok else '  <-- DIFFERS'}{(' (' + why + ')') if why else ''}", flush=True)
    print(f"self-check: {cases - failures} of {cases} tiny clusters agree with brute force (replica optimum and "
          f"leader order) and with the bench's checker")
    return 1 if failures else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--selfcheck", action="store_true", help="compare with brute force on tiny clusters")
    parser.add_argument("--cases", type=int, default=40)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--snapshot", metavar="FILE", help="a snapshot (JSON) to solve")
    parser.add_argument("--threshold", type=float, default=10)
    parser.add_argument("--time-limit", type=float, default=None)
    parser.add_argument("--topics")
    parser.add_argument("--exclude-topics")
    for name in ("exclude-brokers", "add-brokers", "remove-brokers", "demote-brokers"):
        parser.add_argument(f"--{name}", type=lambda s: tuple(int(x) for x in s.split(",")), default=())
    args = parser.parse_args(argv)
    if args.selfcheck:
        return selfcheck(args.cases, args.seed)
    if not args.snapshot:
        parser.error("--selfcheck or --snapshot FILE")
    with open(args.snapshot) as f:
        snapshot = ClusterSnapshot.from_dict(json.load(f))
    scope = Scope(args.topics, args.exclude_topics, args.exclude_brokers, args.add_brokers, args.remove_brokers,
                  args.demote_brokers)
    threshold = int(args.threshold) if float(args.threshold).is_integer() else args.threshold
    result = solve(snapshot, threshold, scope, args.time_limit, verbose=False)
    e = result.evaluation
    print(json.dumps({
        "status": result.status, "proven": result.proven, "lower_bound": result.lower_bound, "kept": result.kept,
        "violation": e.violation if e else None, "bytes_moved": e.bytes_moved if e else None,
        "moves": e.moves if e else None, "leaders_moved": e.leaders_moved if e else None,
        "seconds": round(result.seconds, 2), "log": result.log,
        "replicas": {f"{p.topic}-{p.partition}": r for p, r in zip(snapshot.partitions, result.lists or [],
                                                                    strict=False)},
    }, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
