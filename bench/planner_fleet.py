#!/usr/bin/env python3
"""A fleet of sized clusters through the Spark pipeline on local[2] (a table).

Generates ``--clusters`` snapshots of ``--partitions`` sized partitions with
``bench/snapshots.py`` (fixed seeds: cluster k has seed k + 1; new, dead and hot brokers vary
from cluster to cluster; brokers have a ``capacity_bytes`` unless ``--capacity 0``), cached in ``--work``, then
runs :func:`kafka_replica_assignor.planner.fleet.pipeline.run_pipeline` once and prints the wall time, the planner's own
seconds (per cluster, inside the executors), the peak resident memory of the whole process
tree (this driver, its JVM and the Python workers) and the fleet's totals. The master and
memory go through ``PYSPARK_SUBMIT_ARGS``, as spark-submit would pass them; the pipeline
itself never sets a master.

    python bench/planner_fleet.py --clusters 100 [--partitions 30000] [--brokers 60] [--charts]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from bench.snapshots import SnapshotSpec, write_snapshot  # noqa: E402

# the report's replica-move lower bound: the largest of these
BOUNDS = ("replica_moves_tight_bound", "diversity_repairs_needed", "repairs_needed")


def spec_of(k: int, partitions: int, brokers: int, capacity: float | None) -> SnapshotSpec:
    """Cluster k of the fleet: its own seed and its own mix of new, dead and hot brokers."""
    return SnapshotSpec(brokers=brokers, partitions=partitions, racks=3, levels=1 + k % 2,
                        new=k % 4, dead=k % 3 // 2, hot=k % 5, capacity=capacity, seed=k + 1)


def generate(work: str, clusters: int, partitions: int, brokers: int, capacity: float) -> str:
    fleet = os.path.join(work, f"fleet-p{partitions}-b{brokers}-c{capacity}")
    os.makedirs(fleet, exist_ok=True)
    for k in range(clusters):
        path = os.path.join(fleet, f"cluster-{k:03d}.json")
        if not os.path.exists(path):
            write_snapshot(spec_of(k, partitions, brokers, capacity or None), path + ".tmp")
            os.replace(path + ".tmp", path)
    for name in os.listdir(fleet):     # a smaller run after a bigger one: only the first N
        if name.endswith(".json") and int(name[8:11]) >= clusters:
            os.remove(os.path.join(fleet, name))
    return fleet


class TreeMemory:
    """Peak of the summed resident memory of this process and all its descendants (sampled)."""

    def __init__(self, every: float = 0.25) -> None:
        self.every, self.peak_mb = every, 0.0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _tree_rss_mb(self) -> float:
        parent: dict[int, int] = {}
        rss: dict[int, int] = {}
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            try:
                with open(f"/proc/{name}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            parent[int(name)] = int(fields[1])
            rss[int(name)] = int(fields[21])
        tree, frontier = {os.getpid()}, [os.getpid()]
        while frontier:
            pid = frontier.pop()
            for child in [c for c, p in parent.items() if p == pid]:
                tree.add(child)
                frontier.append(child)
        return sum(rss.get(p, 0) for p in tree) * os.sysconf("SC_PAGE_SIZE") / 2**20

    def _run(self) -> None:
        while not self.stop.wait(self.every):
            self.peak_mb = max(self.peak_mb, self._tree_rss_mb())

    def __enter__(self) -> TreeMemory:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--clusters", type=int, default=100)
    ap.add_argument("--partitions", type=int, default=30000)
    ap.add_argument("--brokers", type=int, default=60)
    ap.add_argument("--capacity", type=float, default=1.5,
                    help="capacity_bytes: this multiple of the mean disk use (0: no capacity_bytes)")
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--driver-memory", default="2g")
    ap.add_argument("--mode", default="cluster")
    ap.add_argument("--threshold", type=float, default=10.0,
                    help="percent, as balance --threshold (0 asks sized clusters for a band of one byte: "
                         "minutes per cluster)")
    ap.add_argument("--work", default=os.path.join(tempfile.gettempdir(), "planner-bench"))
    ap.add_argument("--charts", action="store_true", help="also render the PNG charts of every cluster")
    a = ap.parse_args()
    t0 = time.perf_counter()
    fleet = generate(a.work, a.clusters, a.partitions, a.brokers, a.capacity)
    print(f"generated/cached {a.clusters} snapshots in {time.perf_counter() - t0:.1f} s: {fleet}")
    os.environ["PYSPARK_SUBMIT_ARGS"] = (f"--master local[{a.cores}] --driver-memory {a.driver_memory} "
                                         "pyspark-shell")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from kafka_replica_assignor.planner.fleet.pipeline import run_pipeline, session
    from kafka_replica_assignor.planner.request import PlanRequest

    out = os.path.join(a.work, f"fleet-out-{a.clusters}")
    shutil.rmtree(out, ignore_errors=True)
    with TreeMemory() as memory:
        t1 = time.perf_counter()
        spark = session()
        started = time.perf_counter() - t1
        threshold = int(a.threshold) if a.threshold.is_integer() else a.threshold
        # --threshold is refused by the modes that balance no replicas or bytes (leader, repair)
        request = PlanRequest(a.mode, threshold=threshold if a.mode in ("replica", "cluster") else None,
                              source=fleet)
        t2 = time.perf_counter()
        summary = run_pipeline(fleet, out, request, charts=a.charts, progress=True, spark=spark)
        seconds = time.perf_counter() - t2
        rows = spark.read.parquet(os.path.join(out, "_tables", "metrics")).collect()
        spark.stop()
    planned = [r for r in rows if r.status == "planned"]
    print(summary)
    print()
    print("| clusters | partitions each | master | mode, threshold | charts | session start s | wall s | plan s "
          "(sum over clusters; CPU) | plan s per cluster (mean, max) | peak RSS MB (process tree) | "
          "replica moves / lower bound | clusters at the bound |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    per = [r.seconds for r in planned] or [0.0]
    cpu = sum(r.cpu_seconds for r in planned)
    moves = sum(r.replica_moves for r in planned)
    floor = {r.cluster_id: max(r.bounds.get(k, 0) for k in BOUNDS) for r in planned}
    bound = sum(floor.values())
    at_bound = sum(1 for r in planned if r.replica_moves == floor[r.cluster_id])
    print(f"| {len(rows)} ({len(planned)} planned) | {a.partitions:,} | local[{a.cores}] | {a.mode}, {threshold} | "
          f"{'yes' if a.charts else 'no'} | {started:.1f} | {seconds:.1f} | {sum(per):.1f}; {cpu:.1f} | "
          f"{sum(per) / len(per):.2f}, {max(per):.2f} | {memory.peak_mb:,.0f} | {moves:,} / {bound:,} | "
          f"{at_bound} of {len(planned)} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
