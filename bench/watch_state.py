#!/usr/bin/env python3
"""The watcher's web listener: the page's state answer (``GET /api/state``) at scale.

A view of ``--partitions`` partitions (RF 3, sized) on ``--brokers`` brokers in a two-level
rack tree (one broker fenced, one gone), the status fed as the watcher feeds it (``saw`` and
200 decisions of 20 moves each), a plan running with its progress; then the web server of
``watch --http-listener`` on a free loopback port, asked over HTTP with a bearer token, one
request at a time, ``--requests`` times after five warm-ups. A Markdown table: the answer's
size, its time (median, p95, max, measured by the client: connection, authentication, the copy
of the status, JSON encoding and transfer), and ``saw``'s time per refresh for reference.
Target: under 200 ms at 10,000 partitions and 100 brokers.

    python bench/watch_state.py                       # 10,000 partitions, 100 brokers
    python bench/watch_state.py --partitions 100000 --brokers 300
"""

from __future__ import annotations

import argparse
import http.client
import os
import random
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from kafka_replica_assignor.cluster.snapshot import BrokerEntry, ClusterSnapshot, PartitionEntry  # noqa: E402
from kafka_replica_assignor.watcher.decisions import View  # noqa: E402
from kafka_replica_assignor.watcher.status import WatchStatus  # noqa: E402
from kafka_replica_assignor.web.api import Api  # noqa: E402
from kafka_replica_assignor.web.config import WebConfig, digest  # noqa: E402
from kafka_replica_assignor.web.operations import Operations  # noqa: E402
from kafka_replica_assignor.web.server import WebServer  # noqa: E402

TOKEN = "bench-token-0123456789abcdef"


def view(partitions: int, brokers: int, seed: int = 7) -> View:
    rng = random.Random(seed)
    entries = tuple(BrokerEntry(b, f"/dc{b % 3}/rack{b % 12}") for b in range(brokers))
    parts = []
    for i in range(partitions):
        replicas = tuple(rng.sample(range(brokers), 3))
        parts.append(PartitionEntry(f"topic-{i // 50}", i % 50, replicas, replicas[0], replicas,
                                    rng.randrange(1, 1 << 30)))
    snapshot = ClusterSnapshot(entries[:-1], tuple(parts))       # the last broker gone: named, not registered
    return View(snapshot, frozenset({0}), frozenset(), time.time())


def feed(status: WatchStatus, partitions: int, brokers: int) -> float:
    v = view(partitions, brokers)
    began = time.perf_counter()
    status.saw(v, {0: time.time() - 60, brokers - 1: time.time() - 60})
    took = time.perf_counter() - began
    for n in range(200):
        status.record({"ts": time.time(), "event": "decided", "kind": "placement", "action": "place",
                       "subject": f"topic-{n}", "reason": "not on the assignor's placement (1000 bytes to move)",
                       "brokers": [], "moves": [{"topic": f"topic-{n}", "partition": p, "from": [1, 2, 3],
                                                 "to": [4, 5, 6]} for p in range(20)],
                       "seen": {"brokers": list(range(brokers)), "fenced": [0], "down": [0], "topics": 200,
                                "reassignments_in_progress": 0, "age_s": 0.1}, "dry_run": False})
    status.executing("dead_brokers", "[0]", "/state/plans/00001-dead_brokers")
    status.progress("progress", {"moves_done": 120, "moves_total": 300, "in_flight": 10, "bytes_done": 1 << 33,
                                 "bytes_total": 1 << 35, "rate_bytes_per_s": 50_000_000, "eta_s": 500.0,
                                 "throttle": 50_000_000, "paused": False})
    return took


def ask(port: int) -> tuple[float, int]:
    began = time.perf_counter()
    conn = http.client.HTTPConnection("127.0.0.1", port)
    conn.request("GET", "/api/state", headers={"Authorization": f"Bearer {TOKEN}"})
    response = conn.getresponse()
    body = response.read()
    conn.close()
    assert response.status == 200, body[:200]
    return time.perf_counter() - began, len(body)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--partitions", type=int, default=10_000)
    parser.add_argument("--brokers", type=int, default=100)
    parser.add_argument("--requests", type=int, default=50)
    args = parser.parse_args()
    status = WatchStatus()
    saw_s = feed(status, args.partitions, args.brokers)
    with tempfile.TemporaryDirectory() as state_dir:
        operations = Operations(status, state_dir, False, lambda event, **fields: {})
        config = WebConfig("127.0.0.1", 0, tokens=(digest(TOKEN),))
        server = WebServer(config, Api(status, state_dir, operations))
        port = server.start()
        try:
            for _ in range(5):
                ask(port)
            times, size = [], 0
            for _ in range(args.requests):
                took, size = ask(port)
                times.append(took * 1000)
        finally:
            server.close()
    times.sort()
    p95 = times[min(len(times) - 1, round(0.95 * len(times)) - 1)]
    print("| partitions | brokers | answer | median ms | p95 ms | max ms | saw ms | target |")
    print("|---:|---:|---:|---:|---:|---:|---:|---|")
    print(f"| {args.partitions:,} | {args.brokers} | {size / 1024:.0f} KiB | {statistics.median(times):.1f} | "
          f"{p95:.1f} | {times[-1]:.1f} | {saw_s * 1000:.0f} | {'met' if p95 < 200 else 'MISSED'} (p95 < 200 ms) |")
    return 0 if p95 < 200 else 1


if __name__ == "__main__":
    sys.exit(main())
