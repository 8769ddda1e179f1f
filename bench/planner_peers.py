#!/usr/bin/env python3
"""Our balance planner against peer balancers on the same snapshots (a printed table).

Snapshots come from ``../shared/peers/make_snapshot.py``; the peers run through
``../shared/peers/run_peer.py`` in their own virtualenv (``--peers-python``), never imported here.
Our planner runs in this process. Metrics follow the peers harness' definitions: a replica move
is a replica added to a broker that did not hold it, a leader change a partition whose first
replica differs, a rack violation a partition whose replicas span fewer than
``min(RF, racks)`` racks (a replica on a dead broker counts as a rack of its own).

    python bench/planner_peers.py [--quick] [--peers-python /tmp/peers-venv/bin/python]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections import Counter

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from kafka_replica_assignor.cluster.snapshot import ClusterSnapshot  # noqa: E402
from kafka_replica_assignor.planner.request import PlanRequest  # noqa: E402
from kafka_replica_assignor.planner.solving.planning import make_plan  # noqa: E402

PEERS_DIR = os.path.abspath(os.path.join(HERE, "..", "..", "shared", "peers"))

SCENARIOS = [
    # name, make_snapshot arguments, peers
    ("30 brokers / 3,000 partitions / 3 new", "--brokers 30 --skew new-brokers-added -k 3",
     ["yelp", "yelp+ref-leaders", "linkedin-py2:count,leader,rackaware", "linkedin:count"]),
    ("99 brokers / 30,000 partitions / 9 new",
     "--brokers 99 --topics 300 --partitions-per-topic 100 --skew new-brokers-added -k 9",
     ["yelp", "yelp+ref-leaders", "linkedin-py2:count,leader,rackaware"]),
    ("leader skew (30 brokers)", "--brokers 30 --skew leader-skew",
     ["ref-leaders", "yelp@--no-replication-groups --no-brokers", "linkedin-py2:leader"]),
    ("dead brokers (30 alive, 3 dead)", "--brokers 30 --skew broker-removed -k 3",
     ["yelp-decommission", "linkedin-remove", "topicmappr-emul"]),
    ("uneven racks (11/11/10, 4 new)", "--brokers 32 --skew new-brokers-added -k 4",
     ["yelp", "yelp+ref-leaders", "linkedin-py2:count,leader,rackaware"]),
]


def measure(before: dict, after: dict, brokers: dict) -> dict:
    """The peers harness' metrics for one plan (``before``/``after``: (topic, p) -> replicas)."""
    moves = sum(len(set(after[k]) - set(v)) for k, v in before.items())
    leader_changes = sum(1 for k, v in before.items() if after[k][0] != v[0])
    reps = Counter({b: 0 for b in brokers})
    leads = Counter({b: 0 for b in brokers})
    racks = {r for r in brokers.values()}
    n_racks = len(racks) if None not in racks else 0
    violations = 0
    valid = True
    for k, r in after.items():
        for b in r:
            if b in brokers:
                reps[b] += 1
            else:
                valid = False
        if r[0] in brokers:
            leads[r[0]] += 1
        if n_racks > 1 and len({brokers.get(b, ("dead", b)) for b in r}) < min(len(r), n_racks):
            violations += 1
        if len(set(r)) != len(r) or len(r) != len(before[k]):
            valid = False
    return {"replica_moves": moves, "leader_changes": leader_changes,
            "replicas": (min(reps.values()), max(reps.values())),
            "leaders": (min(leads.values()), max(leads.values())),
            "rack_violations": violations, "valid": valid}


def lower_bounds(before: dict, brokers: dict) -> dict:
    reps = Counter({b: 0 for b in brokers})
    leads = Counter({b: 0 for b in brokers})
    dead = 0
    for r in before.values():
        for b in r:
            if b in brokers:
                reps[b] += 1
            else:
                dead += 1
        if r[0] in brokers:
            leads[r[0]] += 1
    total = sum(len(r) for r in before.values())
    hi, lo = -(-total // len(brokers)), total // len(brokers)
    over = sum(max(0, c - hi) for c in reps.values())
    under = sum(max(0, lo - c) for c in reps.values())
    lhi = -(-len(before) // len(brokers))
    return {"moves": over + dead, "moves_tight": max(over + dead, under),
            "leaders": sum(max(0, c - lhi) for c in leads.values())}


def ours(path: str, mode: str) -> tuple[dict, float, float, dict]:
    with open(path) as f:
        snap = ClusterSnapshot.from_json(f.read())
    # the heuristic alone, as the planner's functions ran it before the one entry point
    request = PlanRequest("leader", exact_nodes=0) if mode == "leader" else PlanRequest(
        "cluster", threshold=0, exact_nodes=0)
    c0, t0 = time.process_time(), time.perf_counter()
    plan = make_plan(snap, request)
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    after = {(p.topic, p.partition): list(p.replicas) for p in plan.after.partitions}
    return after, seconds, cpu, dict(plan.bounds)


def peer(python: str, path: str, spec: str, timeout: int) -> dict:
    name, _, args = spec.partition("@")
    cmd = [python, os.path.join(PEERS_DIR, "run_peer.py"), path, name]
    if args:
        cmd += ["--peer-args", args]
    plan = path + "." + spec.replace("/", "_").replace(" ", "_").replace("@", "_") + ".plan.json"
    try:
        done = subprocess.run(cmd + ["--plan-out", plan], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"timeout after {timeout}s"}
    try:
        result = json.loads(done.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        return {"error": f"rc={done.returncode} {done.stderr[-200:]}"}
    if result.get("error"):
        return result
    with open(plan) as f:
        result["plan"] = {(p["topic"], p["partition"]): p["replicas"] for p in json.load(f)["partitions"]}
    return result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--peers-python", default="/tmp/peers-venv/bin/python")
    ap.add_argument("--work", default="/tmp/planner-bench")
    ap.add_argument("--timeout", type=int, default=900)
    ap.add_argument("--quick", action="store_true", help="skip the 30,000-partition scenario")
    ap.add_argument("--no-peers", action="store_true")
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    print("| scenario | planner | wall s / cpu s | replica moves (lower bound) | leader changes "
          "(lower bound; optimum) | replicas/broker | leaders/broker | rack violations | valid |")
    print("|---|---|---|---|---|---|---|---|---|")
    for k, (name, gen, peers) in enumerate(SCENARIOS):
        if a.quick and "30,000" in name:
            continue
        path = os.path.join(a.work, f"scenario-{k}.json")
        if not os.path.exists(path):
            subprocess.run([sys.executable, os.path.join(PEERS_DIR, "make_snapshot.py"), *gen.split(),
                            "--racks", "3", "--rf", "3", "--seed", "1", "-o", path], check=True)
        with open(path) as f:
            raw = json.load(f)
        brokers = {b["id"]: b.get("rack") for b in raw["brokers"]}
        before = {(p["topic"], p["partition"]): p["replicas"] for p in raw["partitions"]}
        lb = lower_bounds(before, brokers)
        mode = "leader" if "leader skew" in name else "cluster"
        rows = []
        after, seconds, cpu, bounds = ours(path, mode)
        rows.append((f"**ours** ({mode})", seconds, cpu, after, bounds.get("leader_changes_optimum")))
        for spec in ([] if a.no_peers else peers):
            r = peer(a.peers_python, path, spec, a.timeout)
            if r.get("error"):
                print(f"| {name} | {spec} | ERROR: {r['error'][:100]} |||||||")
                continue
            full = dict(before)
            full.update(r["plan"])
            rows.append((spec, r.get("seconds", 0) + r.get("setup_seconds", 0), r.get("cpu_seconds"), full, None))
        for label, seconds, cpu, plan, optimum in rows:
            m = measure(before, plan, brokers)
            opt = f"; {optimum}" if optimum is not None else ""
            print(f"| {name} | {label} | {seconds:.2f} / {cpu:.2f} | {m['replica_moves']} ({lb['moves']}"
                  f"{'' if lb['moves_tight'] == lb['moves'] else ', tight ' + str(lb['moves_tight'])}) | "
                  f"{m['leader_changes']} ({lb['leaders']}{opt}) | {m['replicas'][0]}-{m['replicas'][1]} | "
                  f"{m['leaders'][0]}-{m['leaders'][1]} | {m['rack_violations']} | {'yes' if m['valid'] else 'NO'} |",
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
