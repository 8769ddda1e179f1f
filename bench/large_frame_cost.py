"""How long one large frame holds the event loop: the longest single read, in-process.

A real server state and one real ``KafkaConnection`` on a transport that drops what it is
given (as ``bench/request_cost.py``); an ApiVersions frame with a client software name of
``--mib`` MiB is fed in reads of 256 KiB, as a socket would bring it, ``--repeat`` times. Prints
the longest read (the one that completes the frame: it is handled then), the time of all the
reads of the frame, and the process's resident memory before and after each frame.

    python bench/large_frame_cost.py [--mib 99] [--repeat 3]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

READ = 256 << 10


def _rss_mib() -> int:
    with open("/proc/self/statm", encoding="ascii") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") >> 20


async def _run(mib: int, repeat: int) -> None:
    from request_cost import _DroppingTransport

    from kafka_replica_assignor.protocol.messages import ApiVersionsRequest
    from kafka_replica_assignor.server.app import ReplicaAssignorServer
    from kafka_replica_assignor.server.config import load_config
    from kafka_replica_assignor.server.connection import KafkaConnection

    server = ReplicaAssignorServer(load_config(None, {"listeners": "PLAINTEXT://127.0.0.1:0",
                                                       "replica.assignor.isolation": "thread"}))
    await server.start()
    try:
        request = ApiVersionsRequest(version=3, client_software_name="n" * (mib << 20), client_software_version="1")
        request.with_header(correlation_id=7, client_id="bench")
        frame = bytes(request.encode(header=True, framed=True))
        reads = [frame[i:i + READ] for i in range(0, len(frame), READ)]
        del frame, request
        connection = KafkaConnection(server.state)
        connection.connection_made(_DroppingTransport())
        print(f"{'frame':>5} {'longest read ms':>15} {'all reads ms':>12} {'RSS before MiB':>14} {'RSS after MiB':>13}")
        for n in range(repeat):
            before = _rss_mib()
            longest = total = 0.0
            for data in reads:
                started = time.perf_counter()
                connection.data_received(data)
                took = time.perf_counter() - started
                longest, total = max(longest, took), total + took
            await asyncio.sleep(0.2)  # what was handed off (the unmapping) is done
            print(f"{n + 1:>5} {longest * 1000:>15.1f} {total * 1000:>12.1f} {before:>14} {_rss_mib():>13}")
    finally:
        await server.shutdown()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=99, help="client software name, MiB (the frame is a bit more)")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    from kafka_replica_assignor.server.logs import configure_logging

    configure_logging("json", "info", stream=open(os.devnull, "w"))  # noqa: SIM115 - the process's log
    print(f"# large_frame_cost: one ApiVersions frame of {args.mib} MiB in reads of {READ >> 10} KiB, in-process "
          f"(Python {sys.version.split()[0]})")
    asyncio.run(_run(args.mib, args.repeat))


if __name__ == "__main__":
    main()
