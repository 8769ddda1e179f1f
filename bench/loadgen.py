"""A loopback load generator for Kafka-protocol servers: raw asyncio sockets, request frames
encoded once by the schema codec, only the correlation id patched per request.

One frame is sent over and over; given several, the requests go through them in turn, and
every request of a run (warm-up included) gets a frame of its own while there are enough:
connection ``i`` starts where connection ``i - 1`` ends (varied requests that no server-side
cache has seen).

Each connection keeps ``depth`` requests in flight; answers are checked to come back in
order (correlation id) and their latency recorded. Several client processes can share the
connections when one client process is the bottleneck; all of them open their
connections and warm up first, then start together on a signal, so the measured window
holds only the steady load.
"""

from __future__ import annotations

import asyncio
import multiprocessing as mp
import struct
import sys
import time
from array import array
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import accumulate
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

_INT32 = struct.Struct(">i")
CORRELATION_OFFSET = 8  # frame: length int32, api_key int16, api_version int16, correlation_id int32


def request_frame(message, client_id: str = "loadgen") -> bytes:
    """A whole request frame (length prefix included) with correlation id 0."""
    message.with_header(correlation_id=0, client_id=client_id)
    return bytes(message.encode(header=True, framed=True))


class _Pipeline(asyncio.Protocol):
    """One connection: keeps ``depth`` requests in flight until ``count`` are answered; request
    ``k`` is frame ``(offset + k) % len(parts)``."""

    def __init__(self, parts: list[tuple[bytes, bytes]], offset: int, count: int, depth: int,
                 done: asyncio.Future) -> None:
        self.parts, self.offset = parts, offset
        self.count, self.depth, self.done = count, depth, done
        self.sent = 0
        self.received = 0
        self.in_flight: deque[tuple[int, int]] = deque()
        self.latencies_ns = array("q")
        self.buf = bytearray()
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport) -> None:
        self.transport = transport

    def start(self) -> None:
        self._send(min(self.depth, self.count))

    def _send(self, n: int) -> None:
        now = time.perf_counter_ns()
        frames = []
        parts, offset, kinds = self.parts, self.offset, len(self.parts)
        for _ in range(n):
            cid = self.sent
            self.sent += 1
            head, tail = parts[(offset + cid) % kinds]
            frames.append(head + _INT32.pack(cid) + tail)
            self.in_flight.append((cid, now))
        self.transport.write(b"".join(frames))

    def data_received(self, data: bytes) -> None:
        buf = self.buf
        buf += data
        pos, n, answered = 0, len(buf), 0
        now = time.perf_counter_ns()
        while n - pos >= 8:
            (size,) = _INT32.unpack_from(buf, pos)
            if n - pos - 4 < size:
                break
            (cid,) = _INT32.unpack_from(buf, pos + 4)
            expected, sent_ns = self.in_flight.popleft()
            if cid != expected:
                self._fail(f"answer {cid} arrived where {expected} was expected")
                return
            self.latencies_ns.append(now - sent_ns)
            pos += 4 + size
            answered += 1
        if pos:
            del buf[:pos]
        self.received += answered
        if self.received >= self.count:
            if not self.done.done():
                self.done.set_result(None)
            return
        more = min(answered, self.count - self.sent)
        if more > 0:
            self._send(more)

    def _fail(self, why: str) -> None:
        if not self.done.done():
            self.done.set_exception(RuntimeError(why))
        self.transport.close()

    def connection_lost(self, exc) -> None:
        if not self.done.done():
            self.done.set_exception(ConnectionError(f"server closed the connection after {self.received} answers"))


async def _open(host: str, port: int, parts: list[tuple[bytes, bytes]], counts: list[int], offsets: list[int],
                depth: int):
    loop = asyncio.get_running_loop()
    pipes = []
    for count, offset in zip(counts, offsets, strict=True):
        done = loop.create_future()
        _, pipe = await loop.create_connection(
            lambda c=count, o=offset, d=done: _Pipeline(parts, o, c, depth, d), host, port)
        pipes.append(pipe)
    return pipes


async def _drive(pipes) -> None:
    for p in pipes:
        p.start()
    await asyncio.gather(*(p.done for p in pipes))


async def _session(host, port, frames, counts, offsets, warmup_offsets, depth, warmup, ready, go, out) -> None:
    parts = [(f[:CORRELATION_OFFSET], f[CORRELATION_OFFSET + 4:]) for f in frames]
    if warmup:
        pipes = await _open(host, port, parts, [warmup] * len(counts), warmup_offsets, depth)
        await _drive(pipes)
        for p in pipes:
            p.transport.close()
    pipes = await _open(host, port, parts, counts, offsets, depth)
    ready.set()
    await asyncio.get_running_loop().run_in_executor(None, go.wait)
    started = time.monotonic()
    await _drive(pipes)
    ended = time.monotonic()
    latencies = array("q")
    for p in pipes:
        latencies.extend(p.latencies_ns)
        p.transport.close()
    out.put((started, ended, latencies.tobytes()))


def _client_main(host, port, frames, counts, offsets, warmup_offsets, depth, warmup, ready, go, out) -> None:
    try:
        import uvloop

        uvloop.run(_session(host, port, frames, counts, offsets, warmup_offsets, depth, warmup, ready, go, out))
    except BaseException as exc:  # reported to the parent, which raises it
        ready.set()
        out.put(exc)


@dataclass(frozen=True)
class LoadResult:
    requests: int
    seconds: float
    p50_ms: float
    p99_ms: float

    @property
    def rate(self) -> float:
        return self.requests / self.seconds


def run_load(host: str, port: int, frame: bytes | Sequence[bytes], connections: int, depth: int, total: int,
             processes: int = 1, warmup: int = 200,
             on_start: Callable[[], None] | None = None) -> LoadResult:
    """``total`` requests over ``connections`` connections split among ``processes`` client
    processes. ``frame`` is one request frame or several, sent in turn (module docstring).
    ``on_start`` runs right before the measured window opens (sample CPU there)."""
    frames = [frame] if isinstance(frame, bytes) else list(frame)
    processes = max(1, min(processes, connections))
    per_conn = [total // connections + (1 if i < total % connections else 0) for i in range(connections)]
    starts = [0, *accumulate(per_conn)][:connections]
    warmup_starts = [total + i * warmup for i in range(connections)]
    groups = [(per_conn[i::processes], starts[i::processes], warmup_starts[i::processes]) for i in range(processes)]
    ctx = mp.get_context("spawn")
    go, out = ctx.Event(), ctx.Queue()
    readies = [ctx.Event() for _ in groups]
    procs = [ctx.Process(target=_client_main,
                         args=(host, port, frames, counts, offsets, warmup_offsets, depth, warmup, r, go, out),
                         daemon=True)
             for (counts, offsets, warmup_offsets), r in zip(groups, readies, strict=True)]
    for p in procs:
        p.start()
    try:
        for r in readies:
            if not r.wait(60):
                raise RuntimeError("a client process did not get ready")
        if on_start is not None:
            on_start()
        go.set()
        results = [out.get(timeout=600) for _ in procs]
    finally:
        for p in procs:
            p.join(10)
            if p.is_alive():
                p.kill()
    for r in results:
        if isinstance(r, BaseException):
            raise r
    started = min(r[0] for r in results)
    ended = max(r[1] for r in results)
    latencies = array("q")
    for r in results:
        latencies.frombytes(r[2])
    ordered = sorted(latencies)
    assert len(ordered) == total, (len(ordered), total)

    def pct(q: float) -> float:
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))] / 1e6

    return LoadResult(total, ended - started, pct(0.50), pct(0.99))
