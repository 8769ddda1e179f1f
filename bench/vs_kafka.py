"""Our server beside the Apache Kafka broker, in one run on loopback: req/s, p50, p99, server
CPU per request, and ratios (ours / Kafka).

Two servers are started by this script and stopped at the end, whatever happens:

- **Apache Kafka** 4.3.1 (``scripts/kafka_cluster.py``: node 0 a combined KRaft controller and
  broker, plus ``--kafka-brokers`` brokers), with the C2 compiler on (the cluster's quick-start
  flags stop at C1; ``--kafka-quick-jit`` keeps them); the load goes to node 0.
- **replica-assignor-server** on uvloop, the real command (``bench/server_throughput.py``),
  logging every assignment at info to a file, over a 12-broker snapshot in 3 racks.

Cells, each over every ``--connections`` x ``--depths`` pair, with the same load generator
(``bench/loadgen.py``) and the same settings for both servers:

1. ApiVersions v3 and Metadata v12 (no topics: the brokers, the cluster id, the controller)
   on Kafka and on ours, one right after the other; Kafka is the anchor.
2. CreateReplicaAssignment v1 on ours, *repeated* (one topic name, 12 partitions, RF 3, every
   broker: after a few requests the placement memo answers) and *varied*: every request of
   the cell its own partition count (1-28), replication factor (1-4), broker list (3-12 of the
   12 brokers) and topic name: no two requests of the run share a placement-memo key. (Broker
   lists repeat: 12 brokers have 4,017 lists of 3 or more.) Kafka has no such API: its
   ApiVersions in the same cell is the anchor.

Server CPU is the process's own user + system time (``/proc/PID/stat``) over the measured
window, divided by the requests. Both servers are idle while the other is measured; their
idle CPU after the cells is printed (Kafka's background threads count in its figures).
Before the cells, each server answers ``--jit-warmup`` requests per API (Kafka's JIT
compiles its hot paths).
The client shares the cores, so req/s and latencies are lower bounds; CPU per request is the
fairer comparison on a small machine. On a busy machine (the load average is printed), a
server that keeps a core busy gets only its fair share of it, while one that sleeps between
requests is woken first: the req/s of CPU-bound cells (varied assignments) fall with the
machine's load, their CPU per request does not; Kafka's JVM, with several busy threads, gets
several shares.

    python bench/vs_kafka.py [--requests 10000] [--connections 1,16] [--depths 1,8] [--repeat 1]
                             [--kafka-brokers 0] [--kafka-quick-jit] [--jit-warmup 20000]

A failure (Kafka cannot be resolved or started, a server answers an error) is one line and
exit 1.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from loadgen import request_frame, run_load  # noqa: E402
from server_throughput import API_VERSIONS, METADATA, Row, Target, cpu_seconds, measure, our_server  # noqa: E402

from kafka_replica_assignor.protocol.messages import CreateReplicaAssignmentRequest, CreateReplicaAssignmentResponse  # noqa: E402
from scripts.kafka_cluster import JVM_FLAGS, ClusterError, KafkaCluster, kafka_version  # noqa: E402

BROKERS = 12
RACKS = ("rack-a", "rack-b", "rack-c")
CLUSTER = {"brokers": [{"id": b, "rack": RACKS[b % len(RACKS)]} for b in range(BROKERS)]}
REPEATED = request_frame(CreateReplicaAssignmentRequest(
    version=1, num_partitions=12, replication_factor=3, node_id=[], timeout_ms=30_000,
    topic_name="bench-repeated", current_assignment=[]))


def decode_assignment(payload: bytes):
    return CreateReplicaAssignmentResponse.decode(payload[5:], version=1)


def varied_shapes(count: int, seed: int = 21) -> list[tuple[tuple[int, ...], int, int]]:
    """``count`` distinct (broker list, partitions, RF): every one a new memo key and, while
    broker lists last, a new broker layout."""
    rng = random.Random(seed)
    seen: set[tuple[tuple[int, ...], int, int]] = set()
    shapes = []
    while len(shapes) < count:
        rf = rng.randint(1, 4)
        brokers = tuple(sorted(rng.sample(range(BROKERS), rng.randint(max(3, rf), BROKERS))))
        shape = (brokers, rng.randint(1, 28), rf)
        if shape not in seen:
            seen.add(shape)
            shapes.append(shape)
    return shapes


def varied_frames(shapes: list[tuple[tuple[int, ...], int, int]]) -> list[bytes]:
    return [request_frame(CreateReplicaAssignmentRequest(
        version=1, num_partitions=partitions, replication_factor=rf, node_id=list(brokers), timeout_ms=30_000,
        topic_name=f"bench-varied-{i}", current_assignment=[]))
        for i, (brokers, partitions, rf) in enumerate(shapes)]


def idle_cpu_ms_per_s(pid: int, seconds: float = 3.0) -> float:
    before = cpu_seconds(pid)
    time.sleep(seconds)
    return (cpu_seconds(pid) - before) / seconds * 1000


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def warm_up(target: Target, frame: bytes, count: int) -> None:
    if count > 0:
        run_load(target.host, target.port, frame, 4, 8, count, 1, warmup=0)


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}" if b else "-"


def print_tables(kafka: list[Row], ours: list[Row], repeated: list[Row], varied: list[Row]) -> None:
    print("| API | conns x depth | Kafka req/s | ours req/s | ours / Kafka | Kafka p50 / p99 ms "
          "| ours p50 / p99 ms | Kafka CPU µs/req | ours CPU µs/req | ours / Kafka CPU |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for k, o in zip(kafka, ours, strict=True):
        print(f"| {k.api} | {k.connections} x {k.depth} | {k.result.rate:,.0f} | {o.result.rate:,.0f} "
              f"| {_ratio(o.result.rate, k.result.rate)} | {k.result.p50_ms:.2f} / {k.result.p99_ms:.2f} "
              f"| {o.result.p50_ms:.2f} / {o.result.p99_ms:.2f} | {k.cpu_us:.1f} | {o.cpu_us:.1f} "
              f"| {_ratio(o.cpu_us, k.cpu_us)} |")
    anchor = {(r.connections, r.depth): r for r in kafka if r.api == "ApiVersions"}
    print()
    print("| CreateReplicaAssignment (ours) | conns x depth | req/s | p50 / p99 ms | CPU µs/req "
          "| req/s / Kafka's ApiVersions | varied / repeated: req/s, CPU |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for rep, var in zip(repeated, varied, strict=True):
        k = anchor[(rep.connections, rep.depth)]
        for name, r in (("repeated", rep), ("varied", var)):
            print(f"| {name} | {r.connections} x {r.depth} | {r.result.rate:,.0f} "
                  f"| {r.result.p50_ms:.2f} / {r.result.p99_ms:.2f} | {r.cpu_us:.1f} "
                  f"| {_ratio(r.result.rate, k.result.rate)} "
                  f"| {f'{_ratio(var.result.rate, rep.result.rate)}, {_ratio(var.cpu_us, rep.cpu_us)}' if r is var else ''} |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--requests", type=int, default=10_000, help="per cell")
    parser.add_argument("--warmup", type=int, default=200, help="per connection, before each cell")
    parser.add_argument("--connections", default="1,16")
    parser.add_argument("--depths", default="1,8")
    parser.add_argument("--client-processes", type=int, default=2,
                        help="client processes for multi-connection cells")
    parser.add_argument("--repeat", type=int, default=1, help="runs per cell; the fastest is reported")
    parser.add_argument("--jit-warmup", type=int, default=20_000,
                        help="requests per API and server before the cells (4 connections x 8)")
    parser.add_argument("--kafka-brokers", type=int, default=0,
                        help="Kafka brokers besides the combined controller+broker node 0 (which takes the load)")
    parser.add_argument("--kafka-quick-jit", action="store_true",
                        help="keep the cluster's quick-start JVM flags (C1 only) instead of the full JIT")
    parser.add_argument("--log-level", default="info", help="our server's log.level")
    args = parser.parse_args(argv)
    load_before = Path("/proc/loadavg").read_text().split()[0]
    try:
        grid = [(int(c), int(d)) for c in args.connections.split(",") for d in args.depths.split(",")]
    except ValueError:
        parser.error("--connections and --depths take comma-separated integers")
    if min(args.requests, args.repeat, *(n for cell in grid for n in cell)) < 1 or args.warmup < 0:
        parser.error("--requests, --repeat, connections and depths must be positive")

    # every varied cell its own block of frames (its runs and warm-ups), plus one for the checks
    block = args.repeat * max(args.requests + args.warmup * c for c, _ in grid)
    shapes = varied_shapes(len(grid) * block + 1)
    frames = varied_frames(shapes)
    flags = JVM_FLAGS if args.kafka_quick_jit else tuple(f for f in JVM_FLAGS if "TieredStopAtLevel" not in f)
    kafka_rows: list[Row] = []
    our_rows: list[Row] = []
    repeated: list[Row] = []
    varied: list[Row] = []
    notes: list[str] = []
    with tempfile.TemporaryDirectory(prefix="vs-kafka-") as tmp:
        cluster_file = Path(tmp) / "cluster.json"
        cluster_file.write_text(json.dumps(CLUSTER))
        kafka_cluster = KafkaCluster(directory=Path(tmp) / "kafka", brokers=args.kafka_brokers, jvm_flags=flags)
        try:
            kafka_cluster.up()
            node = kafka_cluster.nodes[0]
            assert node.pid is not None
            kafka = Target(f"kafka {kafka_version()}", "127.0.0.1", node.port, node.pid)
            print(f"# Kafka: {len(kafka_cluster.nodes)} node(s) up in {kafka_cluster.started_seconds:.1f} s",
                  file=sys.stderr, flush=True)
            with our_server("uvloop", str(cluster_file), args.log_level) as ours:
                for target in (kafka, ours):
                    for frame in (API_VERSIONS, METADATA):
                        warm_up(target, frame, args.jit_warmup)
                warm_up(ours, REPEATED, args.jit_warmup)
                for api, frame in (("ApiVersions", API_VERSIONS), ("Metadata", METADATA)):
                    for c, d in grid:
                        kafka_rows.append(measure(kafka, api, frame, args, c, d))
                        our_rows.append(measure(ours, api, frame, args, c, d))
                for cell, (c, d) in enumerate(grid):
                    repeated.append(measure(ours, "CreateReplicaAssignment", REPEATED, args, c, d,
                                            decode=decode_assignment))
                    varied.append(measure(ours, "CreateReplicaAssignment varied",
                                          frames[cell * block:(cell + 1) * block] + frames[-1:], args, c, d,
                                          decode=decode_assignment))
                for target in (kafka, ours):
                    notes.append(f"{target.name}: idle {idle_cpu_ms_per_s(target.pid):.1f} ms CPU/s after the cells, "
                                 f"RSS {rss_mib(target.pid):.0f} MiB")
        except (ClusterError, RuntimeError, ConnectionError) as exc:
            print(f"vs_kafka: {exc}".splitlines()[0], file=sys.stderr)
            return 1
        finally:
            kafka_cluster.down()

    mean_replicas = sum(n * rf for _, n, rf in shapes) / len(shapes)
    load_after = Path("/proc/loadavg").read_text().split()[0]
    print(f"# vs_kafka: {args.requests:,} requests per cell (best of {args.repeat}), loopback, "
          f"{os.cpu_count()} cores (load average {load_before} before, {load_after} after), "
          f"{platform.python_implementation()} {platform.python_version()}; "
          f"client on the same machine ({args.client_processes} client processes for multi-connection cells)")
    print(f"# Kafka {kafka_version()}: {len(kafka_cluster.nodes)} node(s), load on node 0 (controller+broker), "
          f"JVM {' '.join(flags)}; ours: uvloop, log.level={args.log_level}, {BROKERS} brokers in "
          f"{len(RACKS)} racks; varied requests: {len(frames):,} distinct, {mean_replicas:.1f} replicas on "
          f"average (repeated: 36)")
    print(f"# {'; '.join(notes)}")
    print()
    print_tables(kafka_rows, our_rows, repeated, varied)
    return 0


if __name__ == "__main__":
    sys.exit(main())
