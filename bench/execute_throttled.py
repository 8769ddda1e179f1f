#!/usr/bin/env python3
"""A throttled execution of a few hundred moves on a local Apache Kafka cluster: how close the
wall time comes to the physical limit, and what the executor costs per poll.

A topic of ``--partitions`` partitions (replication factor 2, around the ring of 5 brokers) is
filled with ``--size`` incompressible bytes per partition; each run executes a plan that moves
one replica of every partition one broker on (``replica-assignor execute``, a subprocess, JSON
lines), the next run moves it on again. Columns:

- ``bytes``: bytes copied (one replica's size per new replica);
- ``sum/throttle``: bytes / throttle, the time one throttled link would need for all of it;
- ``busiest/throttle``: the most bytes any one broker receives, or sends as the leader of
  moving partitions, / throttle: Kafka throttles each broker's replication in and out
  separately, so no execution can beat it;
- ``wall``: the execute command from start to exit (checks, waves, leader election, throttle
  removal included); ``wall/busiest``: how far from that limit;
- ``cpu/poll``: the executor's own CPU time between its first and last poll, per poll.

    python bench/execute_throttled.py [--bootstrap-server HOST:PORT] [--partitions 300]
        [--size 200000] [--throttle 2000000,4000000] [--per-broker 5,20,5:20] [--poll-interval-ms 500]

``--per-broker kafka`` runs Kafka's own tool on the same plan instead of ours
(``kafka-reassign-partitions --execute --throttle``, then ListPartitionReassignments polled every
0.3 s until none is left, then ``--verify``, which removes its throttles), for the limit Kafka's
replication quota sets; only on the cluster the bench starts.

``--per-broker K:MAX`` runs with ``--adaptive-cap MAX`` from K (the cap each broker reaches is
the ``peak K`` column); ``K/BYTES`` (or ``K:MAX/BYTES``) adds ``--max-bytes-in-flight-per-broker
BYTES`` (``peak K`` then counts the moves beyond K too).

Without ``--bootstrap-server`` a 5-broker cluster is started for the run (scripts/kafka_cluster.py)
and stopped after it.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from kafka_replica_assignor.planner.request import PlanRequest  # noqa: E402
from scripts.kafka_cluster import KafkaCluster  # noqa: E402
from tests.kafka.test_execute import (  # noqa: E402
    REPO,
    create_topic,
    events,
    fill,
    ongoing,
    replicas_of,
    snapshot_of,
    write_plan,
)

BROKERS = 5


@contextlib.contextmanager
def cluster(bootstrap: str | None) -> Iterator[tuple[str, KafkaCluster | None]]:
    if bootstrap:
        yield bootstrap, None
        return
    with tempfile.TemporaryDirectory(prefix="execute-bench-") as tmp:
        kafka = KafkaCluster(directory=Path(tmp) / "cluster", brokers=BROKERS - 1,
                             racks=("/dc1/zone-a", "/dc1/zone-b", "/dc2/zone-a"))
        kafka.up(timeout=300)
        try:
            yield kafka.bootstrap, kafka
        finally:
            kafka.down()


def kafka_tool_run(kafka: KafkaCluster, targets: dict[tuple[str, int], tuple[int, ...]], throttle: int,
                   out: Path) -> float:
    """Kafka's own reassignment tool on ``targets``: the wall time until no reassignment is left."""
    plan = out / "kafka-reassignment.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": t, "partition": p, "replicas": list(r), "log_dirs": ["any"] * len(r)}
        for (t, p), r in sorted(targets.items())]}))
    began = time.perf_counter()
    done = kafka.tool("kafka-reassign-partitions", "--bootstrap-server", kafka.bootstrap, "--reassignment-json-file",
                      str(plan), "--execute", "--throttle", str(throttle))
    if done.returncode != 0:
        raise SystemExit(f"kafka-reassign-partitions failed: {done.stderr.strip()[-500:]}")
    topics = {t for t, _ in targets}
    while any(t in topics for t, _ in ongoing(kafka.bootstrap)):
        time.sleep(0.3)
    wall = time.perf_counter() - began
    kafka.tool("kafka-reassign-partitions", "--bootstrap-server", kafka.bootstrap, "--reassignment-json-file",
               str(plan), "--verify")
    return wall


def cap_arguments(per_broker: str) -> list[str]:
    """``K`` (a fixed cap), ``K:MAX`` (from K, adapting up to MAX: ``--adaptive-cap``), either
    with ``/BYTES`` (``--max-bytes-in-flight-per-broker BYTES``)."""
    caps, _, budget = per_broker.partition("/")
    k, _, most = caps.partition(":")
    return ["--max-moves-per-broker", k, *(["--adaptive-cap", most] if most else []),
            *(["--max-bytes-in-flight-per-broker", budget] if budget else [])]


def run_once(bootstrap: str, topic: str, partitions: int, shift: int, throttle: int, per_broker: str,
             poll_ms: int, out: Path, kafka: KafkaCluster | None = None) -> dict[str, float]:
    snap = snapshot_of(bootstrap, [topic])
    now = {(p.topic, p.partition): p.replicas for p in snap.partitions}
    targets = {k: (r[0], (r[1] + 1) % BROKERS if (r[1] + 1) % BROKERS != r[0] else (r[1] + 2) % BROKERS)
               for k, r in now.items()}
    sizes = {(p.topic, p.partition): p.size_bytes or 0 for p in snap.partitions}
    inbound: dict[int, int] = {}
    outbound: dict[int, int] = {}
    for k, target in targets.items():     # the leader (first replica) sends to each new replica
        for b in target:
            if b not in now[k]:
                inbound[b] = inbound.get(b, 0) + sizes[k]
                outbound[now[k][0]] = outbound.get(now[k][0], 0) + sizes[k]
    busiest = max([*inbound.values(), *outbound.values()])
    if per_broker == "kafka":
        if kafka is None:
            raise SystemExit("--per-broker kafka needs the cluster the bench starts (no --bootstrap-server)")
        wall = kafka_tool_run(kafka, targets, throttle, out)
        if replicas_of(bootstrap, [topic]) != targets:
            raise SystemExit("the cluster did not end in the planned state")
        total = sum(sizes[k] * sum(1 for b in t if b not in now[k]) for k, t in targets.items())
        return {"moves": len(targets), "bytes": total, "sum_s": total / throttle, "busiest_s": busiest / throttle,
                "wall_s": wall, "polls": 0, "cpu_ms_per_poll": 0.0, "peak": 0}
    plan = write_plan(out / f"plan-{shift}", snap, targets, PlanRequest("replica", throttle=throttle))
    began = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "kafka_replica_assignor.cli.main", "execute", "--plan", str(plan),
                           "--bootstrap-server", bootstrap, *cap_arguments(per_broker),
                           "--poll-interval-ms", str(poll_ms)],
                          cwd=REPO, capture_output=True, text=True, timeout=3600)
    wall = time.perf_counter() - began
    if done.returncode != 0:
        raise SystemExit(f"execute failed ({done.returncode}): {done.stderr.strip()[-500:]}")
    if replicas_of(bootstrap, [topic]) != targets:
        raise SystemExit("the cluster did not end in the planned state")
    polls = [e for e in events(done.stdout) if e["event"] == "progress"]
    report = json.loads((plan / "execution.json").read_text())
    copied = report["total"]["bytes_copied"]
    cpu = (polls[-1]["cpu_s"] - polls[0]["cpu_s"]) / max(len(polls) - 1, 1)
    return {"moves": len(targets), "bytes": copied, "sum_s": copied / throttle, "busiest_s": busiest / throttle,
            "wall_s": wall, "polls": len(polls), "cpu_ms_per_poll": 1000 * cpu,
            "peak": max(report["total"]["peak_moves_per_broker"].values())}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else "")
    parser.add_argument("--bootstrap-server", help="an existing cluster of brokers 0-4 (default: start one)")
    parser.add_argument("--partitions", type=int, default=300)
    parser.add_argument("--size", type=int, default=200_000, help="bytes per partition")
    parser.add_argument("--throttle", default="2000000,4000000", help="bytes/s, comma-separated")
    parser.add_argument("--per-broker", default="5,20",
                        help="max moves per broker, comma-separated; K:MAX starts at K and adapts up to MAX")
    parser.add_argument("--poll-interval-ms", type=int, default=500)
    args = parser.parse_args()
    throttles = [int(x) for x in args.throttle.split(",")]
    caps = args.per_broker.split(",")
    with cluster(args.bootstrap_server) as (bootstrap, kafka), \
            tempfile.TemporaryDirectory(prefix="execute-plans-") as tmp:
        topic = f"bench-execute-{uuid.uuid4().hex[:6]}"
        create_topic(bootstrap, topic, {p: (p % BROKERS, (p + 1) % BROKERS) for p in range(args.partitions)})
        began = time.perf_counter()
        fill(bootstrap, topic, range(args.partitions), args.size, record_bytes=min(args.size, 64 * 1024))
        print(f"filled {args.partitions} partitions x {args.size} bytes in {time.perf_counter() - began:.1f} s",
              file=sys.stderr)
        print("| throttle B/s | K | moves | bytes | sum/throttle s | busiest/throttle s | wall s | "
              "wall/busiest | polls | cpu ms/poll | peak K |")
        print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        shift = 0
        for throttle in throttles:
            for k in caps:
                shift += 1
                work = Path(tmp) / f"run-{shift}"
                work.mkdir()
                r = run_once(bootstrap, topic, args.partitions, shift, throttle, k, args.poll_interval_ms, work, kafka)
                print(f"| {throttle} | {k} | {r['moves']} | {r['bytes']} | {r['sum_s']:.1f} | {r['busiest_s']:.1f} | "
                      f"{r['wall_s']:.1f} | {r['wall_s'] / r['busiest_s']:.2f} | {r['polls']} | "
                      f"{r['cpu_ms_per_poll']:.1f} | {r['peak']} |", flush=True)
        with contextlib.suppress(Exception):
            from kafka.admin import KafkaAdminClient

            admin = KafkaAdminClient(bootstrap_servers=bootstrap)
            admin.delete_topics([topic])
            admin.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
