#!/usr/bin/env python3
"""How often the balance planner refuses a feasible capacity (a printed table).

Each instance is built around a *witness*: a random assignment of 3-9 brokers (no racks, flat
racks, or a two-level tree), 1-4 topics of 1-30 partitions with RF 1-3 and exponential sizes;
every broker's ``capacity_bytes`` is its load in the witness times ``1 + slack``. The planner
starts from another random assignment (so some brokers are above their capacity) and must
bring every broker under it. A refusal ("capacity not met") is a miss: the witness proves a
plan exists (when the start's rack diversity allows the witness; with racks, some refusals
may be forced by the rule that diversity never drops). Fixed seeds.

    python bench/capacity_refusals.py [--instances 400] [--slack 0.1 0.2 0.5 1.0] [--exact-seconds 10]
        [--exact-nodes 400]

``--exact-seconds S``: a cluster the heuristic refuses is planned again with the exact path
(:mod:`kafka_replica_assignor.planner.solving.exact`, at most ``--exact-nodes`` branch-and-bound nodes per solve, S
seconds its safety net: reaching it counts as a refusal); the table then counts what that path
still refuses, and how many of those it proves infeasible (the witness then needs a drop of rack
diversity).
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from collections import Counter

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from kafka_replica_assignor.cluster.snapshot import BrokerEntry, ClusterSnapshot, PartitionEntry  # noqa: E402
from kafka_replica_assignor.planner.request import EXACT_NODES, PlanError, PlanRequest  # noqa: E402
from kafka_replica_assignor.planner.solving.planning import make_plan  # noqa: E402

RACKS = {"none": lambda i: None, "flat": lambda i: f"r{i % 3}", "tree": lambda i: f"/dc{i % 2}/rack{i % 3}"}


def instance(seed: int, slack: float) -> tuple[str, ClusterSnapshot]:
    rnd = random.Random(seed)
    n = rnd.randint(3, 9)
    kind = rnd.choice(list(RACKS))
    witness: dict[tuple[str, int], tuple[int, ...]] = {}
    for t in range(rnd.randint(1, 4)):
        rf = rnd.randint(1, min(3, n))
        for p in range(rnd.randint(1, 30)):
            witness[(f"t{t}", p)] = tuple(rnd.sample(range(1, n + 1), rf))
    size = {k: 1 + int(rnd.expovariate(1 / 50)) for k in witness}
    load = dict.fromkeys(range(1, n + 1), 0)
    for k, replicas in witness.items():
        for b in replicas:
            load[b] += size[k]
    brokers = tuple(BrokerEntry(b, RACKS[kind](b - 1), capacity_bytes=int(load[b] * (1 + slack)) + 1)
                    for b in load)
    start = {k: tuple(rnd.sample(range(1, n + 1), len(r))) for k, r in witness.items()}
    parts = tuple(PartitionEntry(t, p, start[(t, p)], size_bytes=size[(t, p)]) for (t, p) in witness)
    return kind, ClusterSnapshot(brokers, parts)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--instances", type=int, default=400)
    ap.add_argument("--slack", type=float, nargs="+", default=[0.1, 0.2, 0.5, 1.0])
    ap.add_argument("--exact-seconds", type=float, default=0.0)
    ap.add_argument("--exact-nodes", type=int, default=EXACT_NODES)
    a = ap.parse_args()
    heuristic = PlanRequest("cluster", threshold=10, exact_nodes=0)
    exact = PlanRequest("cluster", threshold=10, exact_nodes=a.exact_nodes, exact_seconds=a.exact_seconds)
    print("| slack | instances | refused | refused by racks: none / flat / tree | proven infeasible | seconds |")
    print("|---|---|---|---|---|---|")
    for slack in a.slack:
        refused: Counter[str] = Counter()
        proven = 0
        started = time.perf_counter()
        for seed in range(a.instances):
            kind, snap = instance(seed, slack)
            # a refusal: "capacity not met" (PlanError), "capacity infeasible" (RequestError, a ValueError)
            try:
                make_plan(snap, heuristic)
            except (PlanError, ValueError):
                try:
                    if not a.exact_seconds:
                        raise
                    make_plan(snap, exact)
                except (PlanError, ValueError) as exc:
                    refused[kind] += 1
                    proven += "proven" in str(exc)
        seconds = time.perf_counter() - started
        print(f"| {slack:g} | {a.instances} | {sum(refused.values())} | "
              f"{refused['none']} / {refused['flat']} / {refused['tree']} | {proven} | {seconds:.1f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
