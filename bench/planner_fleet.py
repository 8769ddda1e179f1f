#!/usr/bin/env python3
"""A fleet of clusters through the Spark pipeline on local[2] with a 4 GB driver (a table).

Generates ``--clusters`` snapshots of ``--partitions`` partitions with
``../shared/peers/make_snapshot.py`` (skews cycle through new brokers, dead brokers, leader
skew and hot brokers; cached in ``--work``), then runs :func:`planner.pipeline.run_pipeline`
once and reports the wall time, the driver JVM's peak resident memory and the fleet's totals.
The master and memory go through ``PYSPARK_SUBMIT_ARGS``, as spark-submit would pass them; the
pipeline itself never sets a master.

    python bench/planner_fleet.py --clusters 100 [--partitions 30000] [--brokers 99] [--no-charts]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
PEERS_DIR = os.path.abspath(os.path.join(HERE, "..", "..", "shared", "peers"))

SKEWS = [("new-brokers-added", 9), ("broker-removed", 3), ("leader-skew", 0), ("hot-brokers", 0)]


def generate(work: str, clusters: int, partitions: int, brokers: int) -> str:
    fleet = os.path.join(work, f"fleet-p{partitions}-b{brokers}")
    os.makedirs(fleet, exist_ok=True)
    topics = max(1, partitions // 100)
    for k in range(clusters):
        path = os.path.join(fleet, f"cluster-{k:03d}.json")
        if os.path.exists(path):
            continue
        skew, new = SKEWS[k % len(SKEWS)]
        subprocess.run([sys.executable, os.path.join(PEERS_DIR, "make_snapshot.py"),
                        "--brokers", str(brokers), "--racks", "3", "--topics", str(topics),
                        "--partitions-per-topic", str(partitions // topics), "--rf", "3",
                        "--skew", skew, "-k", str(max(new, 1)), "--seed", str(k + 1), "-o", path],
                       check=True)
    for name in os.listdir(fleet):     # a smaller run after a bigger one: only the first N
        if name.endswith(".json") and int(name[8:11]) >= clusters:
            os.remove(os.path.join(fleet, name))
    return fleet


def peak_rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--clusters", type=int, default=100)
    ap.add_argument("--partitions", type=int, default=30000)
    ap.add_argument("--brokers", type=int, default=99)
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--driver-memory", default="4g")
    ap.add_argument("--mode", default="cluster")
    ap.add_argument("--work", default="/tmp/planner-bench")
    ap.add_argument("--no-charts", action="store_true")
    a = ap.parse_args()
    t0 = time.perf_counter()
    fleet = generate(a.work, a.clusters, a.partitions, a.brokers)
    print(f"generated/cached {a.clusters} snapshots in {time.perf_counter() - t0:.1f} s: {fleet}")
    os.environ["PYSPARK_SUBMIT_ARGS"] = (f"--master local[{a.cores}] --driver-memory {a.driver_memory} "
                                         "pyspark-shell")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from planner.settings import PlanSettings
    from planner.pipeline import run_pipeline, session

    out = os.path.join(a.work, f"fleet-out-{a.clusters}")
    shutil.rmtree(out, ignore_errors=True)
    t1 = time.perf_counter()
    spark = session()
    started = time.perf_counter() - t1
    jvm = spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid()
    settings = PlanSettings(a.mode, threshold=0, source=fleet)
    t2 = time.perf_counter()
    summary = run_pipeline(fleet, out, settings, charts=not a.no_charts, progress=True, spark=spark)
    seconds = time.perf_counter() - t2
    m = spark.read.parquet(os.path.join(out, "_tables", "metrics"))
    rows = m.collect()
    planned = [r for r in rows if r.status == "planned"]
    print(summary)
    print()
    print("| clusters | partitions each | master | driver memory | session start s | pipeline s | "
          "driver JVM peak RSS MB | driver Python peak RSS MB | planner s per cluster (mean, max) | "
          "replica moves / tight bound | clusters at the bound |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    py_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    per = [r.seconds for r in planned] or [0.0]
    moves = sum(r.replica_moves for r in planned)
    bound = sum(r.bounds.get("replica_moves_tight_bound", 0) for r in planned)
    at_bound = sum(1 for r in planned if r.replica_moves == r.bounds.get("replica_moves_tight_bound"))
    print(f"| {len(rows)} | {a.partitions:,} | local[{a.cores}] | {a.driver_memory} | {started:.1f} | "
          f"{seconds:.1f} | {peak_rss_mb(jvm):.0f} | {py_peak:.0f} | {sum(per) / len(per):.2f}, {max(per):.2f} | "
          f"{moves:,} / {bound:,} | {at_bound} of {len(planned)} |")
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
