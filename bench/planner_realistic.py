#!/usr/bin/env python3
"""The balance planner on realistic snapshots (``bench/snapshots.py``): Markdown tables.

(a) Scale: the whole ``replica-assignor balance --mode cluster --snapshot F --out D --timings``
    command as one child process: wall seconds, the child's peak RSS (``os.wait4``: the
    resource usage of that child alone), and the per-phase seconds the command prints, the
    planner's own (``plan_s``) apart from parsing, report and charts. 150,000 sized partitions
    on 300 brokers; with ``--big`` also 1,000,000 x RF 3 on 1,000 brokers.
(b) Peers: the same command against the peer balancers of ``../shared/peers`` (run through its
    ``run_peer.py`` in their own virtualenv, ``--peers-python``; never imported here) on
    snapshots of about 3,000 and 30,000 partitions. The peers read ``size`` where we read
    ``size_bytes`` and take brokers missing from ``brokers`` as dead, so they get a converted
    copy. Every row's metrics come from its plan file (Kafka reassignment JSON) applied to the
    snapshot by one function, :func:`measure`. ``--skip-peers`` keeps our rows on these
    snapshots and leaves the peers out. The bound column shows two lower bounds of the bytes any
    plan in the 10 % band moves: ``max(dead + above the band, below the band)`` and the linear
    program of :mod:`kafka_replica_assignor.planner.solving.bound` (rack diversity at every level too); ``/ LP`` is the
    plan's bytes over the latter.

    python bench/planner_realistic.py [--big] [--skip-peers] [--peers-python /tmp/peers-venv/bin/python]
        [--peers-dir ../shared/peers] [--work /tmp/planner-realistic]

The peers folder defaults to ``../shared/peers`` beside the repository (or ``$PEERS_DIR``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, REPO)

from snapshots import SnapshotSpec, write_snapshot  # noqa: E402

Key = tuple[str, int]
THRESHOLD = 0.10   # the band of the bytes lower bound: our default --threshold


@dataclass(frozen=True, slots=True)
class Cluster:
    """What the metrics need of a snapshot: alive brokers' racks, assignment, sizes."""

    racks: dict[int, str | None]
    assignment: dict[Key, list[int]]
    sizes: dict[Key, int]


def cluster_of(data: Mapping[str, Any]) -> Cluster:
    racks = {b["id"]: b.get("rack") for b in data["brokers"] if b.get("alive", True)}
    assignment = {(p["topic"], p["partition"]): list(p["replicas"]) for p in data["partitions"]}
    sizes = {(p["topic"], p["partition"]): p.get("size_bytes") or 0 for p in data["partitions"]}
    return Cluster(racks, assignment, sizes)


def applied(cluster: Cluster, plan: Mapping[str, Any]) -> dict[Key, list[int]]:
    """The assignment after a Kafka reassignment JSON plan."""
    after = dict(cluster.assignment)
    for p in plan["partitions"]:
        key = (p["topic"], p["partition"])
        if key not in after:
            raise ValueError(f"plan names {key}, not in the snapshot")
        after[key] = list(p["replicas"])
    return after


def _spread(counts: Iterable[int]) -> int:
    values = list(counts)
    return max(values) - min(values)


def measure(cluster: Cluster, after: Mapping[Key, Sequence[int]]) -> dict[str, Any]:
    """Every metric of one plan; ``after`` is the whole assignment once the plan ran."""
    alive = cluster.racks
    before = cluster.assignment
    sizes = cluster.sizes
    replicas = Counter(dict.fromkeys(alive, 0))
    leaders = Counter(dict.fromkeys(alive, 0))
    disk = Counter(dict.fromkeys(alive, 0))
    disk_before = Counter(dict.fromkeys(alive, 0))
    topics: dict[str, Counter[int]] = {}
    n_racks = len(set(alive.values())) if None not in alive.values() else 0
    moves = bytes_moved = dead_bytes = lacking = invalid = 0
    for key, old in before.items():
        new = after[key]
        size = sizes[key]
        added = len(set(new) - set(old))
        moves += added
        bytes_moved += added * size
        per_topic = topics.setdefault(key[0], Counter())
        for b in new:
            if b in alive:
                replicas[b] += 1
                disk[b] += size
                per_topic[b] += 1
        for b in old:
            if b in alive:
                disk_before[b] += size
            else:
                dead_bytes += size
        if new[0] in alive:
            leaders[new[0]] += 1
        if n_racks > 1 and len({alive.get(b, ("dead", b)) for b in new}) < min(len(new), n_racks):
            lacking += 1
        if len(new) != len(old) or len(set(new)) != len(new) or not all(b in alive for b in new):
            invalid += 1
    n = len(alive)
    mean = sum(disk.values()) / n
    band_high, band_low = mean * (1 + THRESHOLD), mean * (1 - THRESHOLD)
    over = sum(max(0.0, d - band_high) for d in disk_before.values())
    under = sum(max(0.0, band_low - d) for d in disk_before.values())
    worst_topic = 0
    for per_topic in topics.values():
        low = min(per_topic.values()) if len(per_topic) == n else 0
        worst_topic = max(worst_topic, max(per_topic.values(), default=0) - low)
    return {
        "replica_moves": moves,
        "bytes_moved": bytes_moved,
        # every replica on a dead broker moves; bytes above mean*(1+t) leave their broker and
        # bytes below mean*(1-t) arrive: a plan within the band moves at least this much
        "bytes_lower_bound": int(max(dead_bytes + over, under)),
        "disk_max_over_mean": max(disk.values()) / mean if mean else 0.0,
        "disk_min_over_mean": min(disk.values()) / mean if mean else 0.0,
        "worst_topic_spread": worst_topic,
        "replica_spread": _spread(replicas.values()),
        "leader_spread": _spread(leaders.values()),
        "lacking_rack_diversity": lacking,
        "invalid_partitions": invalid,
    }


# -- running the planners --------------------------------------------------------------------
def run_child(argv: list[str], cwd: str) -> tuple[int, float, int, str, str]:
    """(exit code, wall seconds, peak RSS in MiB, stdout, stderr) of one child process."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        child = subprocess.Popen(argv, cwd=cwd, stdout=out, stderr=err)
        _, status, usage = os.wait4(child.pid, 0)
        child.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - t0
        out.seek(0)
        err.seek(0)
        return (child.returncode, wall, usage.ru_maxrss // 1024,
                out.read().decode(errors="replace"), err.read().decode(errors="replace"))


def run_ours(snapshot: str, out_dir: str) -> dict[str, Any]:
    argv = [sys.executable, "-m", "kafka_replica_assignor.cli.main", "balance", "--mode", "cluster", "--snapshot", snapshot,
            "--out", out_dir, "--timings"]
    code, wall, rss, stdout, stderr = run_child(argv, REPO)
    if code != 0:
        raise RuntimeError(f"balance failed ({code}): {stderr.strip()}")
    timings = json.loads(stderr.strip().splitlines()[-1])
    return {"wall_s": wall, "rss_mib": rss, "timings": timings, "plan": os.path.join(out_dir, "reassignment.json")}


def peer_snapshot(data: Mapping[str, Any], path: str) -> None:
    """The snapshot as the peers read it: alive brokers only, ``size`` for ``size_bytes``."""
    converted = {
        "brokers": [{"id": b["id"], "rack": b.get("rack")} for b in data["brokers"] if b.get("alive", True)],
        "partitions": [{"topic": p["topic"], "partition": p["partition"], "replicas": p["replicas"],
                        "size": p.get("size_bytes") or 0} for p in data["partitions"]],
    }
    with open(path, "w", encoding="utf-8") as f:
        json.dump(converted, f)


def run_peer(python: str, peers_dir: str, snapshot: str, peer: str, plan: str, timeout: float) -> dict[str, Any]:
    argv = [python, os.path.join(peers_dir, "run_peer.py"), snapshot, peer, "--plan-out", plan]
    t0 = time.perf_counter()
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, cwd=peers_dir)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout:.0f} s"}
    wall = time.perf_counter() - t0
    try:
        result = json.loads(done.stdout)
    except json.JSONDecodeError:
        return {"error": (done.stderr.strip().splitlines() or ["no output"])[-1]}
    if "error" in result:
        return {"error": result["error"]}
    return {"wall_s": wall, "seconds": result["seconds"], "plan": plan}


# -- tables ------------------------------------------------------------------------------------
def _gib(n: float) -> str:
    return f"{n / 2**30:,.0f}"


def lp_bound(data: Mapping[str, Any]) -> int | None:
    """The bound of :mod:`kafka_replica_assignor.planner.solving.bound` for the snapshot at
    :data:`THRESHOLD`, for the goals of ``--mode cluster`` (what the planner's report gives)."""
    from kafka_replica_assignor.cluster.snapshot import ClusterSnapshot
    from kafka_replica_assignor.planner.goals.order import REPLICA_PHASES, goals_for
    from kafka_replica_assignor.planner.plan import Working
    from kafka_replica_assignor.planner.request import PlanRequest
    from kafka_replica_assignor.planner.solving.bound import byte_lower_bound

    work = Working(ClusterSnapshot.from_dict(data))
    request = PlanRequest(mode="cluster", threshold=round(THRESHOLD * 100))
    found = byte_lower_bound(work, goals_for(work, request, ("lists", *REPLICA_PHASES)))
    return None if found is None else found.bytes


def metric_cells(m: Mapping[str, Any], lp: int | None = None) -> list[str]:
    bound = _gib(m["bytes_lower_bound"]) + (f" / LP {_gib(lp)}" if lp is not None else "")
    ratio = f"{m['bytes_moved'] / lp:.3f}" if lp else "-"
    return [f"{m['replica_moves']:,}", f"{_gib(m['bytes_moved'])} ({bound})", ratio,
            f"{m['disk_max_over_mean']:.3f}", f"{m['disk_min_over_mean']:.3f}", str(m["worst_topic_spread"]),
            str(m["replica_spread"]), str(m["leader_spread"]), f"{m['lacking_rack_diversity']:,}",
            f"{m['invalid_partitions']:,}"]


def row(cells: Sequence[object]) -> str:
    return "| " + " | ".join(map(str, cells)) + " |"


SCALE = [
    ("150,000 partitions, 300 brokers, 3 racks, 6 new, 1 dead",
     SnapshotSpec(brokers=300, partitions=150_000, racks=3, levels=1, new=6, dead=1, hot=3, seed=7)),
]
BIG = ("1,000,000 partitions x RF 3, 1,000 brokers, 10 racks in 3 levels, 20 new, 2 dead",
       SnapshotSpec(brokers=1000, partitions=1_000_000, racks=10, levels=3, new=20, dead=2, hot=10, seed=7))
# no dead broker: Yelp's balancers refuse a cluster with one ("inactive brokers"), and
# topicmappr-emul then keeps the layout (it only replaces replicas on dead brokers)
PEER_SCENARIOS = [
    ("30 brokers / 3,000 partitions / 3 racks / 3 new / 3 hot",
     SnapshotSpec(brokers=30, partitions=3000, racks=3, levels=1, new=3, dead=0, hot=3, seed=7)),
    ("99 brokers / 30,000 partitions / 3 racks in 3 levels / 9 new / 3 hot",
     SnapshotSpec(brokers=99, partitions=30_000, racks=3, levels=3, new=9, dead=0, hot=3, seed=7)),
]
PEERS = ("yelp", "yelp-genetic", "topicmappr-emul")


def snapshot_file(work: str, spec: SnapshotSpec) -> tuple[str, dict[str, Any]]:
    path = os.path.join(work, f"snapshot-b{spec.brokers}-p{spec.partitions}-l{spec.levels}-s{spec.seed}.json")
    data = write_snapshot(spec, path)
    return path, data


def scale_table(work: str, specs: Sequence[tuple[str, SnapshotSpec]]) -> None:
    print("| snapshot | wall s | peak RSS MiB | load s | plan s | render s | write s | replica moves | "
          "worst topic spread | replica spread | leader spread |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name, spec in specs:
        path, data = snapshot_file(work, spec)
        ours = run_ours(path, os.path.join(work, f"plan-b{spec.brokers}-p{spec.partitions}"))
        with open(ours["plan"], encoding="utf-8") as f:
            plan = json.load(f)
        cluster = cluster_of(data)
        m = measure(cluster, applied(cluster, plan))
        t = ours["timings"]
        print(row([name, f"{ours['wall_s']:.1f}", f"{ours['rss_mib']:,}", f"{t['load_s']:.1f}", f"{t['plan_s']:.1f}",
                   f"{t['render_s']:.1f}", f"{t['write_s']:.1f}", f"{m['replica_moves']:,}", m["worst_topic_spread"],
                   m["replica_spread"], m["leader_spread"]]), flush=True)


def peers_table(work: str, python: str, peers_dir: str, timeout: float, peers: bool = True) -> None:
    for name, spec in PEER_SCENARIOS:
        path, data = snapshot_file(work, spec)
        cluster = cluster_of(data)
        base = measure(cluster, cluster.assignment)
        t0 = time.perf_counter()
        lp = lp_bound(data)
        lp_s = time.perf_counter() - t0
        print(f"\n### {name}\n")
        print("| planner | replica moves | GiB moved (bound / LP bound) | / LP | disk max/mean | disk min/mean | "
              "worst topic spread | replica spread | leader spread | lacking rack diversity | invalid | plan s | "
              "wall s |")
        print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
        print(row(["before", *metric_cells(base)[:1], "-", "-", *metric_cells(base)[3:], "-", "-"]))
        ours = run_ours(path, os.path.join(work, f"plan-b{spec.brokers}-p{spec.partitions}"))
        with open(ours["plan"], encoding="utf-8") as f:
            m = measure(cluster, applied(cluster, json.load(f)))
        print(row(["ours (cluster)", *metric_cells(m, lp), f"{ours['timings']['plan_s']:.2f}",
                   f"{ours['wall_s']:.1f}"]), flush=True)
        if not peers:
            print(f"\n(LP bound computed in {lp_s:.2f} s, snapshot parsing included)")
            continue
        converted = os.path.join(work, f"peers-b{spec.brokers}-p{spec.partitions}.json")
        peer_snapshot(data, converted)
        for peer in PEERS:
            plan_path = os.path.join(work, f"plan-{peer}-b{spec.brokers}-p{spec.partitions}.json")
            result = run_peer(python, peers_dir, converted, peer, plan_path, timeout)
            if "error" in result:
                print(row([peer, *["-"] * 10, result["error"], "-"]), flush=True)
                continue
            with open(plan_path, encoding="utf-8") as f:
                m = measure(cluster, applied(cluster, json.load(f)))
            print(row([peer, *metric_cells(m, lp), f"{result['seconds']:.2f}", f"{result['wall_s']:.1f}"]), flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--big", action="store_true", help="add the 1,000,000-partition row")
    ap.add_argument("--skip-scale", action="store_true")
    ap.add_argument("--skip-peers", action="store_true")
    ap.add_argument("--peers-python", default=os.path.join(tempfile.gettempdir(), "peers-venv", "bin", "python"))
    ap.add_argument("--peers-dir", default=os.environ.get("PEERS_DIR", os.path.join(REPO, "..", "shared", "peers")))
    ap.add_argument("--peer-timeout", type=float, default=1800.0, help="seconds per peer run")
    ap.add_argument("--work", default=os.path.join(tempfile.gettempdir(), "planner-realistic"))
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    if not a.skip_scale:
        print("## Scale: the whole balance command, one process\n")
        scale_table(a.work, SCALE + ([BIG] if a.big else []))
    print("\n## Against the peers (metrics from each plan file, one function)"
          + (": peers skipped" if a.skip_peers else ""))
    peers_table(a.work, a.peers_python, os.path.abspath(a.peers_dir), a.peer_timeout, peers=not a.skip_peers)
    return 0


if __name__ == "__main__":
    sys.exit(main())
