"""What one request costs the server itself, without sockets or a competing client.

A real server state (the embedded 6-broker cluster, JSON logs at info to /dev/null) and one
real ``KafkaConnection`` on a transport that drops what it is given; batches of 8 pipelined
frames go to ``data_received``, as a read from a busy connection would. Two measures:

- CPU µs per request (best of ``--repeat`` timed runs; varies with the machine's load);
- with ``--callgrind``: instructions per request under ``valgrind --tool=callgrind``, from two
  runs of different lengths (start-up cancels out). Repeatable to a few instructions for the
  same code, whatever else the machine does: the number to compare two versions with.

    python bench/request_cost.py [--batches 600] [--repeat 5] [--callgrind]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kafka_replica_assignor.server.logs import LogStream

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

DEPTH = 8
APIS = ("ApiVersions", "CreateReplicaAssignment")


class _DroppingTransport:
    def write(self, data) -> None:
        pass

    def get_extra_info(self, key, default=None):
        return ("127.0.0.1", 1) if key == "peername" else default

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass

    def close(self) -> None:
        pass

    def is_closing(self) -> bool:
        return False

    def abort(self) -> None:
        pass

    def get_write_buffer_size(self) -> int:
        return 0


def _frame(api: str) -> bytes:
    from kafka_replica_assignor.protocol.messages import ApiVersionsRequest, CreateReplicaAssignmentRequest

    if api == "ApiVersions":
        request = ApiVersionsRequest(version=3, client_software_name="bench", client_software_version="1")
    else:  # the frame of bench/server_throughput.py: 12 partitions, RF 3
        request = CreateReplicaAssignmentRequest(version=0, num_partitions=12, replication_factor=3, node_id=[],
                                                 timeout_ms=30_000)
    request.with_header(correlation_id=7, client_id="bench")
    return bytes(request.encode(header=True, framed=True))


async def _feed(api: str, batches: int, repeat: int, log_stream: LogStream) -> float:
    """Feed ``batches`` reads of ``DEPTH`` frames ``repeat`` times; the best CPU µs per request."""
    from kafka_replica_assignor.server.app import ReplicaAssignorServer
    from kafka_replica_assignor.server.config import load_config
    from kafka_replica_assignor.server.connection import KafkaConnection

    server = ReplicaAssignorServer(load_config(None, {"listeners": "PLAINTEXT://127.0.0.1:0",
                                                       "replica.assignor.isolation": "thread"}),
                                    log_stream=log_stream)
    await server.start()
    try:
        connection = KafkaConnection(server.state)
        connection.connection_made(_DroppingTransport())
        batch = _frame(api) * DEPTH
        best = float("inf")
        for _ in range(repeat):
            started = time.process_time()
            for _ in range(batches):
                connection.data_received(batch)
            best = min(best, (time.process_time() - started) / (batches * DEPTH) * 1e6)
        return best
    finally:
        await server.shutdown()


def _child(api: str, batches: int) -> None:
    from kafka_replica_assignor.server.logs import configure_logging

    log_stream = configure_logging("json", "info", stream=open(os.devnull, "w"))  # noqa: SIM115 - the process's log
    asyncio.run(_feed(api, batches, 1, log_stream))


def _instructions(api: str, batches: int) -> int:
    out = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable, __file__,
         "--child", api, "--batches", str(batches)],
        capture_output=True, text=True, cwd=ROOT, env={**os.environ, "PYTHONHASHSEED": "0"}, check=True)
    found = re.search(r"Collected : (\d+)", out.stderr)
    if not found:
        raise RuntimeError(f"no callgrind total in: {out.stderr[-500:]}")
    return int(found.group(1))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, default=600, help=f"reads of {DEPTH} frames per run")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--callgrind", action="store_true", help="also count instructions (needs valgrind)")
    parser.add_argument("--child", choices=APIS, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        _child(args.child, args.batches)
        return
    from kafka_replica_assignor.server.logs import configure_logging

    log_stream = configure_logging("json", "info", stream=open(os.devnull, "w"))  # noqa: SIM115 - the process's log
    if args.callgrind and shutil.which("valgrind") is None:
        parser.error("--callgrind needs valgrind on the PATH")
    print(f"# request_cost: {DEPTH} pipelined requests per read, in-process, logs at info "
          f"(Python {sys.version.split()[0]})")
    print(f"{'api':24} {'CPU µs/request':>14} {'instructions/request':>20}")
    for api in APIS:
        cpu = asyncio.run(_feed(api, args.batches, args.repeat, log_stream))
        count = "-"
        if args.callgrind:
            short, long = max(args.batches // 6, 1), args.batches
            count = f"{(_instructions(api, long) - _instructions(api, short)) / ((long - short) * DEPTH):,.0f}"
        print(f"{api:24} {cpu:>14.1f} {count:>20}")


if __name__ == "__main__":
    main()
