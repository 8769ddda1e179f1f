#!/usr/bin/env python3
"""The watcher's speed on a real Apache Kafka cluster (issue 33): how soon it places a new topic,
and what it costs at rest.

- **placement**: ``--samples`` topics (default 20) of 12 partitions, replication factor 2, made
  one at a time by kafka-python's admin client (a client of any kind: the watcher does not care)
  while ``replica-assignor watch`` follows the cluster (refresh 5 s, its default) and our
  server answers with the multi-level assignor. Seconds from the CreateTopics answer to the
  audit log's ``executed`` record of the topic (status ``done``), or to its ``leave`` decision
  when Kafka's own placement is already equivalent. Target: median under 10 s.
- **at rest**: the watcher process's own CPU (utime + stime of ``/proc/PID/stat``, every thread)
  over ``--rest-seconds`` (default 60) with nothing to decide, on a cluster holding ``--topics``
  x ``--partitions-per-topic`` partitions besides (default 100 x 100 = 10,000, replication factor
  1 so that five nodes on small heaps hold them; the watcher starts once every broker reports
  their logs, so its first view holds them all and settles them). Target: under 2 % of a core.

    python bench/watch_placement.py [--bootstrap-server HOST:PORT] [--topics 100]
        [--partitions-per-topic 100] [--samples 20] [--rest-seconds 60] [--refresh-interval-ms 5000]
        [--state-dir DIR]

Without ``--bootstrap-server`` a 5-node cluster (the Kafka tests' multi-level racks) is started
for the run and stopped after it; with it, the bulk topics (``watch-bench-bulk-*``) are made there
if missing and left in place, and the placed topics are deleted.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from kafka_replica_assignor.protocol.cluster_reader import open_admin_client, read_cluster  # noqa: E402
from scripts.kafka_cluster import KafkaCluster  # noqa: E402
from tests.servers import ServerThread  # noqa: E402

RACKS = ("/dc1/zone-a", "/dc1/zone-b", "/dc2/zone-a")   # the Kafka tests' tree
PREFIX = "watch-bench"


@contextlib.contextmanager
def cluster(bootstrap: str | None, tmp: Path) -> Iterator[str]:
    if bootstrap:
        yield bootstrap
        return
    kafka = KafkaCluster(directory=tmp / "cluster", brokers=4, racks=RACKS)
    kafka.up(timeout=300)
    try:
        yield kafka.bootstrap
    finally:
        kafka.down()


def prepare(bootstrap: str, topics: int, per_topic: int) -> int:
    """The bulk topics (made if missing); the partitions the cluster holds."""
    from kafka.admin import NewTopic

    names = [f"{PREFIX}-bulk-{i:03d}" for i in range(topics)]
    admin = open_admin_client(bootstrap, 120_000)
    try:
        missing = sorted(set(names) - set(admin.list_topics()))
        for i in range(0, len(missing), 10):
            admin.create_topics([NewTopic(n, per_topic, 1) for n in missing[i:i + 10]], timeout_ms=120_000)
            print(f"created {min(i + 10, len(missing))}/{len(missing)} bulk topics", file=sys.stderr)
        # every broker has applied the topics (each reports the logs of its replicas) before the
        # watcher's first view: a broker lagging behind the controller would leave topics out of
        # its baseline, and the watcher would place them as new ones
        deadline = time.monotonic() + 600
        while True:
            snapshot = read_cluster(admin, with_sizes=True).snapshot
            bulk = [p for p in snapshot.partitions if p.topic.startswith(f"{PREFIX}-bulk-")]
            if len(bulk) >= topics * per_topic and all(p.size_bytes is not None for p in bulk):
                return len(snapshot.partitions)
            if time.monotonic() > deadline:
                raise SystemExit(f"the brokers did not all report the {topics * per_topic} bulk partitions in 600 s")
            time.sleep(2)
    finally:
        admin.close()


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")     # utime, stime


def records(audit: Path) -> list[dict[str, Any]]:
    if not audit.exists():
        return []
    return [json.loads(line) for line in audit.read_text().splitlines() if line.strip()]


def wait_for(predicate: Any, timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise SystemExit(f"{what}: not within {timeout:.0f} s")


def placed(audit: Path, topic: str) -> dict[str, Any] | None:
    """The record that ends the watcher's work on ``topic``: executed, or a leave decision."""
    for r in records(audit):
        if r.get("subject") != topic:
            continue
        if r["event"] == "executed" or (r["event"] == "decided" and r["action"] == "leave"):
            return r
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap-server")
    parser.add_argument("--topics", type=int, default=100)
    parser.add_argument("--partitions-per-topic", type=int, default=100)
    parser.add_argument("--samples", type=int, default=20)
    parser.add_argument("--rest-seconds", type=float, default=60.0)
    parser.add_argument("--refresh-interval-ms", type=int, default=5000, help="the watcher's (default 5000, its own)")
    parser.add_argument("--state-dir", help="the watcher's state directory (default: a temporary one), kept to read")
    args = parser.parse_args(argv)
    from kafka.admin import NewTopic

    with tempfile.TemporaryDirectory(prefix="watch-bench-") as tmp, cluster(args.bootstrap_server, Path(tmp)) as kafka:
        partitions = prepare(kafka, args.topics, args.partitions_per_topic)
        server = ServerThread({"bootstrap.servers": kafka, "replica.assignor.class.name": "multi-level",
                               "metadata.refresh.interval.ms": "2000",
                               "observed.brokers.path": str(Path(tmp) / "observed.db")})
        state, made = Path(args.state_dir or Path(tmp) / "watch"), []
        audit = state / "audit.jsonl"
        with server, open(Path(tmp) / "watch.out", "w") as out:
            watcher = subprocess.Popen(
                [sys.executable, "-m", "kafka_replica_assignor.cli.main", "watch", "--bootstrap-server", kafka,
                 "--assignor", server.bootstrap, "--state-dir", str(state), "--topics", f"{PREFIX}-.*",
                 "--timeout-ms", "60000", "--refresh-interval-ms", str(args.refresh_interval_ms)], cwd=ROOT, stdout=out, stderr=subprocess.STDOUT)
            admin = open_admin_client(kafka, 120_000)
            try:
                wait_for(lambda: any(r["event"] == "baseline" for r in records(audit)), 180, "the baseline")
                time.sleep(10)                          # the first rounds over the settled cluster
                before = [r for r in records(audit) if r["event"] in ("decided", "executed")]
                cpu, wall = cpu_seconds(watcher.pid), time.monotonic()
                time.sleep(args.rest_seconds)
                rest_cpu, rest_wall = cpu_seconds(watcher.pid) - cpu, time.monotonic() - wall
                acted = [r for r in records(audit) if r["event"] in ("decided", "executed")][len(before):]
                rows = []
                for i in range(args.samples):
                    name = f"{PREFIX}-placed-{i:02d}-{uuid.uuid4().hex[:6]}"
                    admin.create_topics([NewTopic(name, 12, 2)], timeout_ms=60_000)
                    created = time.time()
                    made.append(name)
                    record = wait_for(lambda n=name: placed(audit, n), 120, f"{name} placed")
                    moves = sum(len(r["moves"]) for r in records(audit)
                                if r["event"] == "decided" and r["subject"] == name and r["action"] == "place")
                    rows.append((name, record["ts"] - created, record.get("status") or record["action"], moves))
                    print(f"{name}: {rows[-1][1]:.1f} s ({rows[-1][2]}, {rows[-1][3]} moves)", file=sys.stderr)
                if args.bootstrap_server:
                    admin.delete_topics(made, timeout_ms=60_000)
            finally:
                admin.close()
                watcher.terminate()
                watcher.wait(120)
    seconds = [r[1] for r in rows]
    share = 100 * rest_cpu / rest_wall
    print(f"real Apache Kafka 4.3.1, 5 nodes on the multi-level tree {'/'.join(RACKS)}, one 2-core machine (shared); "
          f"{partitions:,} partitions at rest; watcher refresh {args.refresh_interval_ms / 1000:g} s")
    print(f"{'topics':>6} {'partitions':>10} {'rf':>2} {'min s':>6} {'median s':>8} {'max s':>6} {'placed':>6} "
          f"{'left':>4} {'moves':>5}")
    print(f"{len(rows):>6} {12:>10} {2:>2} {min(seconds):>6.1f} {statistics.median(seconds):>8.1f} "
          f"{max(seconds):>6.1f} {sum(r[2] == 'done' for r in rows):>6} {sum(r[2] == 'leave' for r in rows):>4} "
          f"{sum(r[3] for r in rows):>5}")
    print(f"watcher CPU at rest: {rest_cpu:.2f} s over {rest_wall:.0f} s = {share:.2f} % of a core "
          f"({len(acted)} decision(s) meanwhile)")
    median_ok, rest_ok = statistics.median(seconds) < 10, share < 2
    print(f"targets: median placement under 10 s ({'met' if median_ok else 'NOT met'}); CPU at rest under 2 % "
          f"of a core ({'met' if rest_ok else 'NOT met'})")
    return 0 if median_ok and rest_ok else 1


if __name__ == "__main__":
    sys.exit(main())
