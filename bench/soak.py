"""Soak the wire server: many concurrent connections, a million requests, 0 errors, and
resident memory that stays flat.

    python bench/soak.py [--connections 1000] [--requests 1000000] [--depth 4] [--max-seconds 900]
                         [--client-processes 1]

Starts ``replica-assignor-server`` (uvloop, JSON logs, ``replica.assignor.random.seed`` so
that equal requests get equal answers), opens ``--connections`` connections and keeps
``--depth`` requests in flight on each until ``--requests`` have been answered: a mix of
ApiVersions v3, Metadata v1 and CreateReplicaAssignment v0 (12 partitions, RF 3, six
brokers in three racks). The first answer to each kind of request is decoded and checked
(a valid assignment); every later answer must be byte-identical to it apart from the
correlation id, and arrive in order: anything else is an error. The server's resident
memory (VmRSS from /proc) is sampled throughout; the mean over the first quarter of the
requests is compared with the mean over the last quarter.

Prints the figures and exits 1 if there was any error or the memory moved by more than 10%.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import queue
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from kafka.protocol.metadata import ApiVersionsRequest, MetadataRequest  # noqa: E402

from kafka_replica_assignor.protocol.messages import CreateReplicaAssignmentRequest, CreateReplicaAssignmentResponse  # noqa: E402

_LEN = struct.Struct(">i")
_CID = struct.Struct(">i")
CLUSTER = {"brokers": [{"id": b, "rack": f"rack-{b % 3}"} for b in range(6)]}
# request kinds, in the order a connection cycles through them: 3 cheap, 1 assignment
KINDS = ("api_versions", "metadata", "api_versions", "assignment")


def _requests() -> dict[str, bytes]:
    built = {
        "api_versions": ApiVersionsRequest(version=3, client_software_name="soak", client_software_version="1"),
        "metadata": MetadataRequest(version=1, topics=[]),
        "assignment": CreateReplicaAssignmentRequest(version=0, num_partitions=12, replication_factor=3,
                                                     force_simple_assignment=False, node_id=[], timeout_ms=30_000),
    }
    out = {}
    for name, request in built.items():
        request.with_header(correlation_id=0, client_id="soak")
        out[name] = bytes(request.encode(header=True, framed=True))
    return out


def _check_assignment(body: bytes) -> None:
    response = CreateReplicaAssignmentResponse.decode(body[5:], version=0)
    assert response.error_code == 0, response
    assignment = {e.partition_id: list(e.replicas) for e in response.replica_assignment}
    assert sorted(assignment) == list(range(12)), assignment
    for replicas in assignment.values():
        assert len(set(replicas)) == 3 and set(replicas) <= set(range(6)), assignment
        assert len({b % 3 for b in replicas}) == 3, assignment  # one replica per rack


class _Client(asyncio.Protocol):
    """One connection: keeps ``depth`` requests in flight, checks each answer."""

    def __init__(self, shared: _Shared, index: int) -> None:
        self.kinds = shared.kinds
        self.shared = shared
        self.index = index
        self.transport = None
        self.buf = bytearray()
        self.sent = 0
        self.inflight: list[tuple[int, str]] = []
        self.done = asyncio.get_running_loop().create_future()

    def connection_made(self, transport) -> None:
        self.transport = transport

    def start(self) -> None:
        for _ in range(self.shared.depth):
            self._send()

    def _send(self) -> None:
        shared = self.shared
        if shared.issued >= shared.total:
            return
        shared.issued += 1
        kind = self.kinds[(self.index + self.sent) % len(self.kinds)]
        self.sent += 1
        cid = self.sent
        frame = bytearray(shared.requests[kind])
        _CID.pack_into(frame, 8, cid)
        self.inflight.append((cid, kind))
        self.transport.write(frame)

    def data_received(self, data: bytes) -> None:
        buf = self.buf
        buf += data
        pos = 0
        shared = self.shared
        while len(buf) - pos >= 4:
            (size,) = _LEN.unpack_from(buf, pos)
            if len(buf) - pos - 4 < size:
                break
            body = bytes(buf[pos + 4:pos + 4 + size])
            pos += 4 + size
            cid, kind = self.inflight.pop(0)
            got = _CID.unpack_from(body)[0]
            reference = shared.reference.get(kind)
            if reference is None:
                try:
                    if kind == "assignment":
                        _check_assignment(body)
                    shared.reference[kind] = body[4:]
                except Exception as exc:  # noqa: BLE001
                    shared.error(f"{kind}: {exc}")
            elif got != cid or body[4:] != reference:
                shared.error(f"{kind}: correlation id {got} (expected {cid}) or an answer unlike the first")
            shared.answered += 1
            self._send()
        del buf[:pos]
        if not self.inflight and shared.issued >= shared.total and not self.done.done():
            self.done.set_result(None)

    def connection_lost(self, exc) -> None:
        if self.inflight:
            self.shared.error(f"connection {self.index} lost with {len(self.inflight)} requests in flight: {exc}")
        if not self.done.done():
            self.done.set_result(None)


class _Shared:
    def __init__(self, total: int, depth: int, kinds: tuple[str, ...]) -> None:
        self.kinds = kinds
        self.total = total
        self.depth = depth
        self.issued = 0
        self.answered = 0
        self.errors = 0
        self.first_errors: list[str] = []
        self.requests = _requests()
        self.reference: dict[str, bytes] = {}

    def error(self, message: str) -> None:
        self.errors += 1
        if len(self.first_errors) < 10:
            self.first_errors.append(message)


async def _drive(port: int, connections: int, total: int, depth: int, kinds, progress, deadline: float) -> dict:
    loop = asyncio.get_running_loop()
    shared = _Shared(total, depth, kinds)
    clients = []
    for i in range(connections):
        _, client = await loop.create_connection(lambda i=i: _Client(shared, i), "127.0.0.1", port)
        clients.append(client)
    progress(0, connections)
    started = time.monotonic()
    for client in clients:
        client.start()
    last = 0
    while not all(c.done.done() for c in clients):
        await asyncio.sleep(0.1)
        if shared.answered != last:
            progress(shared.answered, connections)
            last = shared.answered
        if time.monotonic() > deadline:
            shared.error("stopped at --max-seconds before every request was answered")
            break
    elapsed = time.monotonic() - started
    for client in clients:
        client.transport.close()
    return {"answered": shared.answered, "errors": shared.errors, "first_errors": shared.first_errors,
            "seconds": elapsed}


def _client_process(port, connections, total, depth, kinds, deadline, counter, result_queue) -> None:
    import uvloop

    def progress(answered, _connections):
        counter.value = answered

    result_queue.put(uvloop.run(_drive(port, connections, total, depth, kinds, progress, deadline)))


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def _rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def _run(args, kinds, server):
    """Drive the load; None if the server did not start."""
    port = None
    for line in server.stdout:
        if '"server_started"' in line:
            port = json.loads(line)["port"]
            break
    if port is None:
        return None
    warnings = []

    def drain():
        for log_line in server.stdout:
            if '"warning"' in log_line or '"error"' in log_line:
                warnings.append(log_line.strip())

    threading.Thread(target=drain, daemon=True).start()

    ctx = multiprocessing.get_context("spawn")
    procs, counters, results = [], [], ctx.Queue()
    deadline = time.monotonic() + args.max_seconds
    share, extra = divmod(args.requests, args.client_processes)
    conns, extra_conns = divmod(args.connections, args.client_processes)
    try:
        for i in range(args.client_processes):
            counter = ctx.Value("q", 0, lock=False)
            proc = ctx.Process(target=_client_process, args=(
                port, conns + (i < extra_conns), share + (i < extra), args.depth, kinds,
                time.time() + (deadline - time.monotonic()), counter, results), daemon=True)
            proc.start()
            procs.append(proc)
            counters.append(counter)
        samples: list[tuple[int, int]] = []  # (answered so far, VmRSS KiB)
        started = time.monotonic()
        cpu_before = _cpu_seconds(server.pid)
        rss_at_connect = 0
        while any(p.is_alive() for p in procs):
            answered = sum(c.value for c in counters)
            rss = _rss_kib(server.pid)
            if answered:
                samples.append((answered, rss))
            else:
                rss_at_connect = max(rss_at_connect, rss)
            time.sleep(0.25)
            if time.monotonic() > deadline + 30:
                break
        outcomes = []
        for proc in procs:
            try:
                outcomes.append(results.get(timeout=30))
            except queue.Empty:
                outcomes.append({"answered": 0, "errors": 1, "seconds": 0.0,
                                 "first_errors": [f"client process {proc.pid} ended without a result "
                                                  f"(exit {proc.exitcode})"]})
        wall = time.monotonic() - started
        rss_end = _rss_kib(server.pid)
        cpu = _cpu_seconds(server.pid) - cpu_before
        alive = server.poll() is None
        return outcomes, samples or [(0, rss_end)], rss_at_connect, rss_end, cpu, wall, alive, warnings
    finally:
        for proc in procs:
            if proc.is_alive():
                proc.terminate()
            proc.join(10)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--connections", type=int, default=1000)
    parser.add_argument("--requests", type=int, default=1_000_000)
    parser.add_argument("--depth", type=int, default=4, help="requests in flight per connection")
    parser.add_argument("--client-processes", type=int, default=1)
    parser.add_argument("--max-seconds", type=float, default=900.0)
    parser.add_argument("--mix", default=",".join(KINDS),
                        help=f"request kinds each connection cycles through (default {','.join(KINDS)})")
    args = parser.parse_args(argv)
    kinds = tuple(k.strip() for k in args.mix.split(",") if k.strip())
    if not kinds or set(kinds) - set(KINDS):
        parser.error(f"--mix takes kinds among {sorted(set(KINDS))}")

    with tempfile.TemporaryDirectory() as tmp:
        cluster = Path(tmp) / "cluster.json"
        cluster.write_text(json.dumps(CLUSTER))
        server = subprocess.Popen(
            [sys.executable, "-m", "kafka_replica_assignor.server.main", "--override", "listeners=PLAINTEXT://127.0.0.1:0",
             "--override", "log.format=json", "--override", f"cluster.metadata.file={cluster}",
             "--override", "replica.assignor.random.seed=7",
             "--override", f"max.connections={args.connections + 100}",
             "--override", f"max.connections.per.ip={args.connections + 100}"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=ROOT)
        try:
            measured = _run(args, kinds, server)
        finally:  # whatever happened, leave no server behind
            if server.poll() is None:
                server.terminate()
            try:
                exit_code = server.wait(30)
            except subprocess.TimeoutExpired:
                server.kill()
                exit_code = server.wait()
    if measured is None:
        print(f"server did not start (exit {exit_code})")
        return 1
    outcomes, samples, rss_at_connect, rss_end, cpu, wall, alive, warnings = measured

    answered = sum(o["answered"] for o in outcomes)
    errors = sum(o["errors"] for o in outcomes)
    seconds = max(max(o["seconds"] for o in outcomes), 1e-9)
    quarter = args.requests / 4
    first = [rss for n, rss in samples if n <= quarter]
    last = [rss for n, rss in samples if n >= 3 * quarter]
    first_mean = sum(first) / len(first) if first else float("nan")
    last_mean = sum(last) / len(last) if last else float("nan")
    drift = (last_mean - first_mean) / first_mean if first else float("nan")
    print(f"connections              {args.connections} ({args.client_processes} client process(es), "
          f"depth {args.depth})")
    print(f"requests answered        {answered} of {args.requests} in {seconds:.1f} s "
          f"({answered / seconds:,.0f} req/s; mix {'/'.join(kinds)})")
    print(f"server CPU               {cpu:.1f} s, {cpu / max(answered, 1) * 1e6:.0f} us per request")
    print(f"errors                   {errors}")
    for o in outcomes:
        for message in o["first_errors"]:
            print(f"  {message}")
    print(f"server warnings logged   {len(warnings)}")
    for line in warnings[:5]:
        print(f"  {line}")
    print(f"server VmRSS             after connecting {rss_at_connect / 1024:.1f} MiB; "
          f"first quarter mean {first_mean / 1024:.1f} MiB ({len(first)} samples), "
          f"last quarter mean {last_mean / 1024:.1f} MiB ({len(last)} samples), "
          f"change {drift:+.1%}; peak {max(r for _, r in samples) / 1024:.1f} MiB; at the end {rss_end / 1024:.1f} MiB")
    print(f"server                   {'alive' if alive else 'DIED'} to the end, exit code {exit_code} on SIGTERM "
          f"(wall {wall:.1f} s)")
    ok = errors == 0 and answered == args.requests and alive and exit_code == 0 and abs(drift) <= 0.10
    print("RESULT:", "PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
