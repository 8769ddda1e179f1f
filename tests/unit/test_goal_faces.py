"""Each goal's faces agree (the house rule "one owner per rule"): on small clusters, for every
state met and every move from it, a goal's move check (``accepts``, ``accepts_swap``) allows
exactly what its own rows of the exact program allow, and its ``distance`` is 0 exactly when
those rows hold.

The rows are evaluated here, in plain Python, on the 0-1 vector of a state's replica lists; a
goal's own auxiliary columns (rack diversity's ``u``) take the largest value their ``<=`` rows
leave them, which is how every goal's auxiliary columns are built (each one is bounded above by
its rows and helps only ``>=`` rows).
"""

from __future__ import annotations

import math
from dataclasses import replace
from random import Random

import pytest

from kafka_replica_assignor.cluster.snapshot import BrokerEntry, ClusterSnapshot, PartitionEntry
from kafka_replica_assignor.planner.goals.goal import Goal
from kafka_replica_assignor.planner.goals.model import Model
from kafka_replica_assignor.planner.goals.order import REPLICA_PHASES, goals_for
from kafka_replica_assignor.planner.plan import Working
from kafka_replica_assignor.planner.request import PlanRequest, Scope
from kafka_replica_assignor.planner.solving.exact import Program

EPS = 1e-9


def cluster(rng: Random) -> tuple[ClusterSnapshot, Scope]:
    """4-6 brokers in 2-3 racks (or none, or two levels), 3-6 partitions of 2-3 topics, sizes,
    some capacities, and a scope of one kind or none."""
    n = rng.randint(4, 6)
    shape = rng.choice(("none", "flat", "tree"))
    racks: list[str | None] = [None] * n
    if shape == "flat":
        racks = [f"r{b % rng.randint(2, 3)}" for b in range(n)]
    elif shape == "tree":
        racks = [f"/dc{b % 2}/r{b % 3}" for b in range(n)]
    brokers = tuple(BrokerEntry(b, racks[b], capacity_bytes=rng.choice((None, None, rng.randint(60, 140))))
                    for b in range(n))
    parts = []
    for k in range(rng.randint(3, 6)):
        rf = rng.choice((2, 2, 3))
        parts.append(PartitionEntry(f"t{k % rng.randint(2, 3)}", k, tuple(rng.sample(range(n), rf)),
                                    size_bytes=rng.randint(5, 40)))
    scope = rng.choice((Scope(), Scope(add_brokers=(n - 1,)), Scope(exclude_brokers=(0,)),
                        Scope(exclude_topics="t1")))
    if rng.random() < 0.5:      # traffic (drawn last: the clusters without it are as they were)
        parts = [replace(p, bytes_in_per_s=float(rng.randint(0, 30)), bytes_out_per_s=float(rng.randint(0, 60)))
                 for p in parts]
        brokers = tuple(replace(b, network_in_capacity=rng.choice((None, None, float(rng.randint(40, 120)))))
                        for b in brokers)
    return ClusterSnapshot(brokers, tuple(parts)), scope


def holds(program: Program, goal_rows: list[tuple[float, float, list[int], list[float]]],
          bounds: dict[int, tuple[float, float]], vector: dict[int, float]) -> bool:
    """Whether the rows and column bounds a goal added hold for ``vector`` (the ``x`` columns),
    its auxiliary columns at the largest value their rows leave them."""
    value = dict(vector)
    for col, (low, high) in bounds.items():
        if col in vector and not low - EPS <= vector[col] <= high + EPS:
            return False
    aux = {c for _, _, cols, _ in goal_rows for c in cols if c not in vector}
    for col in sorted(aux):
        top = program.upper[col]
        for _, high, cols, coefs in goal_rows:
            if col in cols and high < math.inf:
                k = cols.index(col)
                if coefs[k] > 0:
                    rest = sum(c * vector[x] for x, c in zip(cols, coefs, strict=True) if x != col)
                    top = min(top, (high - rest) / coefs[k])
        value[col] = max(program.lower[col], top)
    for low, high, cols, coefs in goal_rows:
        total = sum(c * value[x] for x, c in zip(cols, coefs, strict=True))
        if not low - 1e-7 <= total <= high + 1e-7:
            return False
    return True


def rows_of(snapshot: ClusterSnapshot, scope: Scope, request: PlanRequest, key: str):  # type: ignore[no-untyped-def]
    """The exact program of the input, and the rows and column bounds the goal ``key`` adds."""
    work = Working(snapshot, scope)
    program = Program(work)
    goal = next(g for g in goals_for(work, request, REPLICA_PHASES) if g.key == key)
    before_rows = len(program.rows)
    lower, upper = list(program.lower), list(program.upper)
    goal.exact_rows(program)
    rows = [(lo, hi, cols, coefs) for lo, hi, cols, coefs, _ in program.rows[before_rows:]]
    bounds = {c: (program.lower[c], program.upper[c]) for c in range(len(lower))
              if (program.lower[c], program.upper[c]) != (lower[c], upper[c])}
    return program, rows, bounds


def state(snapshot: ClusterSnapshot, scope: Scope, request: PlanRequest,
          lists: list[list[int]]) -> tuple[Working, dict[str, Goal]]:
    """A working copy holding ``lists``, its model built and its goals' targets set."""
    work = Working(snapshot, scope)
    for i, reps in enumerate(lists):
        if reps != work.replicas[i]:
            work.replicas[i] = list(reps)
            work.touched.add(i)
    goals = goals_for(work, request, REPLICA_PHASES)
    Model(work, goals, None, None, {}, {})
    for goal in goals:
        goal.prepare()
    return work, {g.key: g for g in goals}


def random_lists(rng: Random, snapshot: ClusterSnapshot) -> list[list[int]]:
    """A random state: most partitions on random brokers, a replica set that did not change in
    its input order (the exact program places sets; the order is the leader goals')."""
    n = len(snapshot.brokers)
    out = []
    for p in snapshot.partitions:
        reps = rng.sample(range(n), len(p.replicas)) if rng.random() < 0.6 else list(p.replicas)
        out.append(list(p.replicas) if set(reps) == set(p.replicas) else reps)
    return out


KEYS = ("exclude", "add", "scope", "capacity", "network_capacity", "diversity", "topics", "counts", "bytes",
        "network_in")


def moves(lists: list[list[int]], n: int) -> list[tuple[int, int, int, list[list[int]]]]:
    """Every single move from ``lists``: ``(partition, source, destination, lists after)``."""
    out = []
    for i, reps in enumerate(lists):
        for s in reps:
            for d in range(n):
                if d not in reps:
                    after = [list(r) for r in lists]
                    after[i][after[i].index(s)] = d
                    out.append((i, s, d, after))
    return out


def swaps(lists: list[list[int]]) -> list[tuple[int, int, int, int, list[list[int]]]]:
    """Every swap from ``lists``: ``a`` from ``x`` to ``y`` while ``b`` goes from ``y`` to ``x``."""
    out = []
    for a, ra in enumerate(lists):
        for b, rb in enumerate(lists):
            for x in ra:
                for y in rb:
                    if a < b and x != y and y not in ra and x not in rb:
                        after = [list(r) for r in lists]
                        after[a][after[a].index(x)] = y
                        after[b][after[b].index(y)] = x
                        out.append((a, x, b, y, after))
    return out


@pytest.mark.parametrize("seed", range(24))
def test_accepts_and_distance_agree_with_the_goals_own_rows(seed: int) -> None:
    rng = Random(seed)
    snapshot, scope = cluster(rng)
    request = PlanRequest(mode="replica", threshold=rng.choice((10, 30, 60)), scope=scope)
    present = {g.key for g in goals_for(Working(snapshot, scope), request, REPLICA_PHASES)}
    faces = {key: rows_of(snapshot, scope, request, key) for key in KEYS if key in present}
    compared = 0
    for _ in range(60):
        lists = random_lists(rng, snapshot)
        _, goals = state(snapshot, scope, request, lists)
        for key, (program, rows, bounds) in faces.items():
            goal = goals[key]
            ok = holds(program, rows, bounds, program.vector(lists))
            assert (goal.distance() == 0) == ok, (key, lists, goal.distance())
            if not ok:
                continue        # the move check keeps what the goal has reached: compared from there
            for i, s, d, after in moves(lists, len(snapshot.brokers)):
                allowed = holds(program, rows, bounds, program.vector(after))
                assert goal.accepts(i, s, d) == allowed, (key, lists, (i, s, d))
                compared += 1
            for a, x, b, y, after in swaps(lists):
                allowed = holds(program, rows, bounds, program.vector(after))
                assert goal.accepts_swap(a, x, b, y) == allowed, (key, lists, (a, x, b, y))
    assert compared, "no state met a goal's rows: nothing was compared"
