#!/usr/bin/env python3
"""The network goals on generated snapshots with rates: a Markdown table, before and after.

Snapshots from :mod:`snapshots` (skewed topic sizes, hot brokers holding old manual moves, new
empty brokers, a dead broker, one or two rack levels), given rates here: every topic a
popularity drawn from a Pareto law (a few topics carry most of the traffic), a handful of hot
topics at ten times that, every partition a share of its topic's produce rate, and one to three
consumer groups per topic reading all of it; brokers get network capacities at
``--capacity`` times the mean traffic (0: none).

Per snapshot, one plan with rates and one of the same snapshot without them (the planner as
it is without the network goals), both ``make_plan`` in this process, ``--mode cluster`` at
the default threshold (10 %). Columns: network-in and network-out as ``max/mean`` and the
share of brokers in their band (``in band``), disk ``max/mean``, bytes moved against the
bound the goals report (``bytes_moved_lp_bound:...`` with the network-in rows kept), leader
changes, CPU seconds, and the CPU ratio to the plan without rates.

    python bench/network_goals.py            # the default shapes
    python bench/network_goals.py --quick    # two small ones
    python bench/network_goals.py --small 12 # small snapshots (the exact path), CPU only

``--small N``: N small snapshots (seeds 1..N: 6-14 brokers, up to 2,400 partitions x brokers, one or
two rack levels, some new, dead and hot brokers, a third with capacities), where the exact
program runs; per snapshot the CPU seconds of the plan without and with rates, their ratio, the
path the plan with rates took, and the median ratio.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import random
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from snapshots import SnapshotSpec, generate  # noqa: E402

from kafka_replica_assignor.cluster.snapshot import ClusterSnapshot, gc_paused  # noqa: E402
from kafka_replica_assignor.planner.goals.replica_bytes import BOUND_KEY  # noqa: E402
from kafka_replica_assignor.planner.goals.traffic import UNIT, snapshot_figures  # noqa: E402
from kafka_replica_assignor.planner.plan import Plan  # noqa: E402
from kafka_replica_assignor.planner.request import PlanRequest  # noqa: E402
from kafka_replica_assignor.planner.solving.planning import make_plan  # noqa: E402


@dataclass(frozen=True, slots=True)
class Shape:
    name: str
    spec: SnapshotSpec
    hot_topics: int = 3
    capacity: float = 0.0


SHAPES = (
    Shape("flat 12 brokers, 2 new, skewed", SnapshotSpec(brokers=12, partitions=600, racks=3, new=2, dead=0, hot=2,
                                                        seed=1)),
    Shape("2 levels 24 brokers, 4 new, 1 dead", SnapshotSpec(brokers=24, partitions=2000, racks=6, levels=2, new=4,
                                                           dead=1, hot=3, seed=2)),
    Shape("flat 30 brokers, hot brokers, capacities", SnapshotSpec(brokers=30, partitions=4000, racks=3, new=3,
                                                                  dead=0, hot=4, hot_share=0.15, seed=3),
          hot_topics=5, capacity=1.6),
    Shape("2 levels 48 brokers, 6 new, 1 dead", SnapshotSpec(brokers=48, partitions=8000, racks=6, levels=2, new=6,
                                                           dead=1, hot=4, seed=4)),
)
QUICK = SHAPES[:2]


def with_rates(data: dict, shape: Shape) -> dict:
    """``data`` (a generated snapshot) with skewed per-partition rates and, with a capacity
    factor, brokers' network capacities (module doc)."""
    rng = random.Random(shape.spec.seed * 7919 + 1)
    topics = sorted({p["topic"] for p in data["partitions"]})
    popularity = {t: rng.paretovariate(1.3) * 1e5 for t in topics}
    groups = {t: rng.choice((1, 1, 2, 3)) for t in topics}
    for t in rng.sample(topics, min(shape.hot_topics, len(topics))):
        popularity[t] *= 10
    total_in = total_out = 0.0
    for p in data["partitions"]:
        rate = round(popularity[p["topic"]] * rng.expovariate(1.0), 1)
        p["bytes_in_per_s"] = rate
        p["bytes_out_per_s"] = round(rate * groups[p["topic"]], 1)
        total_in += rate * len(p["replicas"])
        total_out += rate * (groups[p["topic"]] + len(p["replicas"]) - 1)
    if shape.capacity:
        alive = [b for b in data["brokers"] if b.get("alive", True)]
        for b in data["brokers"]:
            b["network_in_capacity"] = round(shape.capacity * total_in / len(alive))
            b["network_out_capacity"] = round(shape.capacity * total_out / len(alive))
    return data


def without_rates(snapshot: ClusterSnapshot) -> ClusterSnapshot:
    return ClusterSnapshot(
        tuple(dataclasses.replace(b, network_in_capacity=None, network_out_capacity=None) for b in snapshot.brokers),
        tuple(dataclasses.replace(p, bytes_in_per_s=None, bytes_out_per_s=None) for p in snapshot.partitions))


def spread(values: Sequence[int]) -> float:
    mean = sum(values) / len(values)
    return max(values) / mean if mean else 0.0


def in_band(values: Sequence[int], lo: int | None, hi: int | None) -> str:
    if lo is None or hi is None:
        return "-"
    inside = sum(1 for v in values if lo <= v <= hi)
    return f"{inside}/{len(values)}"


def bound_of(plan: Plan) -> tuple[int | None, str]:
    for key, value in plan.bounds:
        if key.startswith(BOUND_KEY):
            return value, key.partition(":")[2]
    return None, ""


def rated_as(lists: ClusterSnapshot, snapshot: ClusterSnapshot) -> ClusterSnapshot:
    """``lists``'s replica lists with ``snapshot``'s rates (a plan made without them, measured)."""
    by_key = {(p.topic, p.partition): p for p in snapshot.partitions}
    return ClusterSnapshot(snapshot.brokers, tuple(
        dataclasses.replace(by_key[(p.topic, p.partition)], replicas=p.replicas) for p in lists.partitions))


def figures(plan: Plan, snapshot: ClusterSnapshot) -> dict[str, str]:
    alive = [b.id for b in snapshot.brokers if b.alive]
    before = snapshot_figures(rated_as(plan.before, snapshot), alive)
    after = snapshot_figures(rated_as(plan.after, snapshot), alive)

    def disk(s: ClusterSnapshot) -> float:
        held = dict.fromkeys(alive, 0)
        for p in s.partitions:
            for b in p.replicas:
                if b in held:
                    held[b] += p.size_bytes or 0
        return spread(list(held.values()))
    out: dict[str, str] = {}
    for fig in ("network_in", "network_out"):
        b, a = list(before[fig].values()), list(after[fig].values())
        lo, hi = plan.bound(f"{fig}_band_lo"), plan.bound(f"{fig}_band_hi")
        out[fig] = f"{spread(b):.2f} -> {spread(a):.2f}"
        out[fig + "_band"] = f"{in_band(b, lo, hi)} -> {in_band(a, lo, hi)}"
    out["disk"] = f"{disk(plan.before):.2f} -> {disk(plan.after):.2f}"
    return out


def run(snapshot: ClusterSnapshot) -> tuple[Plan, float]:
    request = PlanRequest(mode="cluster")
    start = time.process_time()
    with gc_paused():
        plan = make_plan(snapshot, request)
    return plan, time.process_time() - start


def moved_bytes(plan: Plan) -> int:
    sizes = {(p.topic, p.partition): p.size_bytes or 0 for p in plan.before.partitions}
    total = 0
    for p, q in zip(plan.before.partitions, plan.after.partitions, strict=True):
        total += len(set(q.replicas) - set(p.replicas)) * sizes[(p.topic, p.partition)]
    return total


def leader_changes(plan: Plan) -> int:
    return sum(1 for p, q in zip(plan.before.partitions, plan.after.partitions, strict=True)
               if p.replicas[:1] != q.replicas[:1])


def row(shape: Shape) -> list[str]:
    data = with_rates(generate(shape.spec), shape)
    snapshot = ClusterSnapshot.from_dict(data)
    plain, plain_cpu = run(without_rates(snapshot))
    plan, cpu = run(snapshot)
    fig = figures(plan, snapshot)
    base = figures(plain, snapshot)     # the plan without rates, measured on the rates
    bound, kept = bound_of(plan)
    moved = moved_bytes(plan)
    ratio = f"{moved / bound:.3f}" if bound else "-"
    return [shape.name, str(len(snapshot.partitions)),
            fig["network_in"], fig["network_in_band"], base["network_in"].split(" -> ")[1],
            fig["network_out"], fig["network_out_band"], base["network_out"].split(" -> ")[1],
            fig["disk"], f"{moved / 2**30:.1f} / {(bound or 0) / 2**30:.1f} GiB ({ratio}x)",
            "network_in" in kept and "yes" or "no", str(leader_changes(plan)),
            f"{cpu:.2f}", f"{cpu / plain_cpu:.2f}x" if plain_cpu else "-"]


def small_shape(seed: int) -> Shape:
    """The ``--small`` snapshot of ``seed`` (module doc)."""
    rng = random.Random(seed)
    brokers = rng.randint(6, 14)
    spec = SnapshotSpec(brokers=brokers, partitions=rng.randint(40, 2400 // brokers), racks=rng.choice((1, 2, 3)),
                        levels=rng.choice((1, 2)), new=rng.randint(0, 2), dead=rng.choice((0, 1)),
                        hot=rng.randint(0, 2), seed=seed)
    return Shape(f"small {seed}", spec, hot_topics=rng.randint(1, 3), capacity=rng.choice((0.0, 0.0, 1.6)))


def small_rows(count: int) -> None:
    """The ``--small`` table (module doc)."""
    print("| seed | brokers | partitions | capacities | CPU s w/o rates | CPU s with rates | ratio | path with rates |")
    print("|---|---|---|---|---|---|---|---|")
    ratios = []
    for seed in range(1, count + 1):
        shape = small_shape(seed)
        snapshot = ClusterSnapshot.from_dict(with_rates(generate(shape.spec), shape))
        _, plain_cpu = run(without_rates(snapshot))
        plan, cpu = run(snapshot)
        ratios.append(cpu / plain_cpu if plain_cpu else 0.0)
        path = next((n.split(":")[0] for n in plan.notes if n.startswith(("exact path", "heuristic path"))), "-")
        print(f"| {seed} | {len(snapshot.brokers)} | {len(snapshot.partitions)} | {'yes' if shape.capacity else 'no'} "
              f"| {plain_cpu:.2f} | {cpu:.2f} | {ratios[-1]:.2f}x | {path} |", flush=True)
    print(f"\nmedian ratio {sorted(ratios)[len(ratios) // 2]:.2f}x, max {max(ratios):.2f}x")


HEADER = ["snapshot", "partitions", "net-in max/mean", "net-in in band", "net-in w/o rates",
          "net-out max/mean", "net-out in band", "net-out w/o rates", "disk max/mean",
          "moved / bound", "bound keeps net-in", "leader changes", "CPU s", "CPU vs w/o rates"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the two small shapes only")
    parser.add_argument("--small", type=int, default=0, metavar="N", help="N small snapshots, CPU only")
    args = parser.parse_args(argv)
    if args.small:
        small_rows(args.small)
        return 0
    print(f"rates in bytes/s, figures as max/mean (before -> after); bands in whole {UNIT}ths of a byte/s")
    print("| " + " | ".join(HEADER) + " |")
    print("|" + "---|" * len(HEADER))
    for shape in QUICK if args.quick else SHAPES:
        print("| " + " | ".join(row(shape)) + " |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
