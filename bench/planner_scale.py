#!/usr/bin/env python3
"""How the pure planner scales: seconds (wall and CPU) per mode on generated snapshots.

Snapshots from ``../shared/peers/make_snapshot.py`` (cached in ``--work``). Parsing the JSON into a
``ClusterSnapshot`` is timed apart from planning. The default row: 1,000,000 partitions x RF 3
on 1,000 brokers (10 racks, 20 new empty brokers, sizes unknown); on the 2-core machine cluster
mode plans it in about 25 s with replica moves and leader changes at their bounds (2026-11-26).

    python bench/planner_scale.py [--partitions 1000000] [--brokers 1000] [--new 20]
"""

from __future__ import annotations

import argparse
import gc
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from kafka_replica_assignor.planner.inputs.sources import load_snapshot  # noqa: E402
from kafka_replica_assignor.planner.request import PlanRequest  # noqa: E402
from kafka_replica_assignor.planner.solving.planning import make_plan  # noqa: E402

PEERS_DIR = os.path.abspath(os.path.join(HERE, "..", "..", "shared", "peers"))


def timed(fn):
    gc.collect()
    c0, t0 = time.process_time(), time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0, time.process_time() - c0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--partitions", type=int, default=1_000_000)
    ap.add_argument("--brokers", type=int, default=1000)
    ap.add_argument("--racks", type=int, default=10)
    ap.add_argument("--new", type=int, default=20)
    ap.add_argument("--skew", default="new-brokers-added")
    ap.add_argument("--work", default="/tmp/planner-bench")
    ap.add_argument("--modes", default="cluster,replica,leader")
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    topics = max(1, a.partitions // 1000)
    path = os.path.join(a.work, f"scale-b{a.brokers}-p{a.partitions}-{a.skew}-k{a.new}.json")
    if not os.path.exists(path):
        subprocess.run([sys.executable, os.path.join(PEERS_DIR, "make_snapshot.py"),
                        "--brokers", str(a.brokers), "--racks", str(a.racks), "--topics", str(topics),
                        "--partitions-per-topic", str(a.partitions // topics), "--rf", "3",
                        "--skew", a.skew, "-k", str(a.new), "--seed", "1", "-o", path], check=True)
    snap, wall, cpu = timed(lambda: load_snapshot(path))
    print(f"{len(snap.partitions):,} partitions, {len(snap.brokers):,} brokers ({a.racks} racks, "
          f"{a.new} new, skew {a.skew}); parsing the JSON into a snapshot: {wall:.2f} s wall, {cpu:.2f} s CPU")
    print()
    print("| mode | wall s | CPU s | replica moves | bound | leader changes | bound; optimum |")
    print("|---|---|---|---|---|---|---|")
    requests = {    # the heuristic alone (a cluster this size is far above the exact path's limit anyway)
        "cluster": PlanRequest("cluster", threshold=0, exact_nodes=0),
        "replica": PlanRequest("replica", threshold=0, exact_nodes=0),
        "leader": PlanRequest("leader", exact_nodes=0),
    }
    for mode in a.modes.split(","):
        plan, wall, cpu = timed(lambda request=requests[mode]: make_plan(snap, request))
        b = dict(plan.bounds)
        print(f"| {mode} | {wall:.2f} | {cpu:.2f} | {plan.replica_moves:,} | "
              f"{b.get('replica_moves_tight_bound', '-')} | {plan.leader_changes:,} | "
              f"{b.get('leader_changes_lower_bound', '-')}; {b.get('leader_changes_optimum', '-')} |", flush=True)
        del plan
    return 0


if __name__ == "__main__":
    sys.exit(main())
