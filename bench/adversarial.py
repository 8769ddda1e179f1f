"""Attacks on a live server, one at a time, while a bystander measures how long it waits.

Each attack gets a fresh server (``python -m kafka_replica_assignor.server.main`` in a subprocess, loopback, port 0,
``queued.max.request.bytes`` small enough to show the cap, placements off the loop in worker
processes as by default). A bystander client sends
ApiVersions every 50 ms on its own connection during the attack; the server's resident memory
is polled from /proc (VmRSS) and its high-water mark read at the end (VmHWM). One Markdown table:

| attack | bystander requests | p99 ms | max ms | server peak RSS MiB |

Bounded: at most ``--connections`` (<= 2,000) connections, ``--seconds`` (<= 120) per attack,
127.0.0.1 only. The attacks are the hardening issue's (docs/security.md, "Fair scheduling and
bounded memory"):

- ``varint``: an array length made of 200 KB of varint continuation bytes, again and again;
- ``varint-before-sasl``: the same in ApiVersions v3 (293 KiB) on a SASL listener, unauthenticated;
- ``tagged-entries``: 40,000 CurrentAssignment entries with a tagged field in each;
- ``pipelining``: 5,000 pipelined 1,000-partition requests, never read back;
- ``partial-frames``: ten connections each sending 99 MiB of a 100 MiB frame, then waiting;
- ``malformed``: a tag declaring 2^28 bytes, an array of a million entries in 5 bytes, duplicate tags,
  again and again;
- ``node-ids``: 40,000 distinct NodeIds in one request, again and again;
- ``assignment-1m``: a new topic of 1,000,000 partitions with replication factor 3 (an 18 MB
  answer), again and again;
- ``assignment-1m-x4``: the same on four connections at once.

The second round (docs/security.md, "Second round"):

- ``metadata-1m``: Metadata v1 naming the topic "a" a million times (3 MB), again and again;
- ``metadata-10m``: the same ten million times (30 MB);
- ``frame-headers``: six connections each sending a 4-byte size prefix of 100 MiB and nothing more;
  the bystander's request (a 200 KB ApiVersions) then needs several socket reads;
- ``unread-answers``: 64 connections each sending a 1,000,000 x 3 request and never reading;
  the bystander is a 2,000 x 3 CreateReplicaAssignment;
- ``node-id-echo``: 4,000,000 unknown NodeIds in one request (16 MB), again and again; the attacker
  prints the answer's size;
- ``near-max-frames``: ApiVersions frames of 99 MiB (a long client software name), again and again;
- ``plain-brute-force``: 50 connections guessing PLAIN passwords, each guess on a new connection (a
  failed authentication closes it), on a SASL_PLAINTEXT listener with the default limits; the attacker
  prints the guesses per second and the server's CPU share.

The third round (issue 32; the bystander comes from ``--bystander-address``, 127.0.0.2 by default
for these, the attackers from 127.0.1.x):

- ``connection-flood``: open-and-close from 100 addresses as fast as four processes can; the
  bystander opens a new connection for each ApiVersions (every 250 ms), as a new client does;
- ``mechanism-names``: SaslHandshake with a new made-up mechanism name each time, from 16
  threads, metrics on and scraped every second; the table gives ``/metrics``'s size at the end
  (each name once became a label); the bystander connects for each ApiVersions (SASL listener);
- ``frame-holders``: eight connections each sending the 4-byte size of a 100 MiB frame, one of
  them reopened every 0.5 s, and one sending 60 MiB of its frame then stopping, reopened every
  2 s; the bystander sends a 1.2 MiB ApiVersions;
- ``plain-brute-force-16``: ``plain-brute-force`` from 16 addresses; the bystander connects for
  each ApiVersions (SASL listener);
- ``metadata-10k``: one client sending Metadata v1 naming 10,000 topics (40-character names) back
  to back, the next as soon as the answer came.

The table's ``refused`` counts ``connection_refused`` lines (a quiet server refuses none).

    python bench/adversarial.py [--seconds 8] [--queued-max-mib 200] [--only ATTACK ...]
    python bench/adversarial.py --only "none (new clients)" connection-flood "none (metrics)" mechanism-names \
        "none (1.2 MiB bystander)" frame-holders "none (SASL new clients)" plain-brute-force-16 \
        "none (bystander from 127.0.0.2)" metadata-10k
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kafka_replica_assignor.protocol.frame import recv_exactly, uvarint_bytes  # noqa: E402
from kafka_replica_assignor.protocol.messages import ApiVersionsRequest, CreateReplicaAssignmentRequest  # noqa: E402

HOST = "127.0.0.1"


def _framed(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


def _header(api_key: int, api_version: int, correlation_id: int, flexible: bool) -> bytes:
    return struct.pack(">hhih", api_key, api_version, correlation_id, 3) + b"adv" + (b"\x00" if flexible else b"")


def _encoded(request, correlation_id: int = 1) -> bytes:
    request.with_header(correlation_id=correlation_id, client_id="adv")
    return bytes(request.encode(header=True, framed=True))


def _read_frame(sock: socket.socket) -> bytes:
    (size,) = struct.unpack(">i", recv_exactly(sock, 4))
    return recv_exactly(sock, size)


class Server:
    """The real server command on 127.0.0.1:0; its JSON log is read (and dropped) by a thread."""

    def __init__(self, overrides: dict[str, str]) -> None:
        argv = [sys.executable, "-m", "kafka_replica_assignor.server.main", "--override", "log.format=json"]
        for key, value in {"listeners": f"PLAINTEXT://{HOST}:0", **overrides}.items():
            argv += ["--override", f"{key}={value}"]
        self.proc = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.port = 0
        self.metrics_port = 0
        self.rejected = 0
        self.refused = 0
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if '"metrics_started"' in line:
                self.metrics_port = json.loads(line)["port"]
            if '"server_started"' in line:
                self.port = json.loads(line)["port"]
                break
        if not self.port:
            raise RuntimeError(f"the server did not start (exit {self.proc.wait()})")
        threading.Thread(target=self._drain, daemon=True).start()
        self.peak_rss = 0
        self._watching = True
        threading.Thread(target=self._watch_rss, daemon=True).start()

    def _drain(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if '"frame_rejected"' in line:
                self.rejected += 1
            elif '"connection_refused"' in line:
                self.refused += 1

    def metrics_bytes(self) -> int:
        """The size of a ``/metrics`` scrape (0 without metrics)."""
        if not self.metrics_port:
            return 0
        import urllib.request

        with urllib.request.urlopen(f"http://{HOST}:{self.metrics_port}/metrics", timeout=60) as response:
            return len(response.read())

    def _status(self, key: str) -> int:
        try:
            with open(f"/proc/{self.proc.pid}/status", encoding="ascii") as f:
                for line in f:
                    if line.startswith(key):
                        return int(line.split()[1]) * 1024
        except OSError:
            pass
        return 0

    def _watch_rss(self) -> None:
        while self._watching:
            self.peak_rss = max(self.peak_rss, self._status("VmRSS:"))
            time.sleep(0.02)

    def cpu_seconds(self) -> float:
        """The server process's user + system CPU time."""
        try:
            with open(f"/proc/{self.proc.pid}/stat", encoding="ascii") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except OSError:
            return 0.0

    def stop(self) -> int:
        self.peak_rss = max(self.peak_rss, self._status("VmHWM:"))
        self._watching = False
        self.proc.terminate()
        try:
            return self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()


class Bystander(threading.Thread):
    """ApiVersions every ``interval`` s on one connection (``reconnect``: a new connection for each,
    as on a SASL listener, where ApiVersions comes once before authentication); latencies in seconds."""

    def __init__(self, port: int, interval: float = 0.05, reconnect: bool = False, frame: bytes | None = None,
                 timeout: float = 30, source: str | None = None) -> None:
        super().__init__(daemon=True)
        self.port, self.interval, self.reconnect, self.timeout = port, interval, reconnect, timeout
        self.source = (source, 0) if source else None  # the bystander's own address (attackers use HOST)
        self.latencies: list[float] = []
        self.errors = 0
        self.stop_event = threading.Event()
        self.frame = frame or _encoded(ApiVersionsRequest(version=3, client_software_name="bystander",
                                                          client_software_version="1"))

    def run(self) -> None:
        sock = None
        try:
            while not self.stop_event.is_set():
                started = time.perf_counter()
                try:
                    if sock is None:
                        sock = socket.create_connection((HOST, self.port), timeout=self.timeout,
                                                        source_address=self.source)
                    sock.sendall(self.frame)
                    _read_frame(sock)
                except OSError:  # a timeout counts as what it waited
                    self.errors += 1
                    self.latencies.append(time.perf_counter() - started)
                    return
                self.latencies.append(time.perf_counter() - started)
                if self.reconnect:
                    sock.close()
                    sock = None
                self.stop_event.wait(max(self.interval - (time.perf_counter() - started), 0))
        finally:
            if sock is not None:
                sock.close()


def _until(stop: threading.Event, each: Callable[[], None]) -> None:
    while not stop.is_set():
        try:
            each()
        except OSError:
            time.sleep(0.01)


def _send_until_closed(port: int, data: bytes) -> None:
    with socket.create_connection((HOST, port), timeout=30) as sock:
        try:
            sock.sendall(data)
            while sock.recv(1 << 16):
                pass
        except OSError:
            pass


def _request_answered(port: int, data: bytes) -> None:
    with socket.create_connection((HOST, port), timeout=60) as sock:
        sock.sendall(data)
        _read_frame(sock)


# --- the attacks: each runs until ``stop`` is set, within the connection bound ---------------------

def attack_varint(port: int, stop: threading.Event, connections: int) -> None:
    body = struct.pack(">ih?", 6, 3, False) + b"\x80" * 200_000 + b"\x01"
    data = _framed(_header(68, 0, 1, True) + body)
    _until(stop, lambda: _send_until_closed(port, data))


def attack_varint_before_sasl(port: int, stop: threading.Event, connections: int) -> None:
    data = _framed(_header(18, 3, 1, True) + b"\x80" * (293 * 1024) + b"\x01")
    _until(stop, lambda: _send_until_closed(port, data))


def _tagged_entries(n: int) -> bytes:
    entries = b"".join(struct.pack(">i", p) + b"\x02" + struct.pack(">i", p % 6) + b"\x01\x05\x02ab" for p in range(n))
    body = (struct.pack(">ih?", n + 1, 1, False) + b"\x01" + struct.pack(">i", 30_000) + b"\x02t"
            + uvarint_bytes(n + 1) + entries + b"\x00")
    return _framed(_header(68, 1, 1, True) + body)


def attack_tagged_entries(port: int, stop: threading.Event, connections: int) -> None:
    data = _tagged_entries(40_000)
    _until(stop, lambda: _request_answered(port, data))


def attack_pipelining(port: int, stop: threading.Event, connections: int) -> None:
    request = _encoded(CreateReplicaAssignmentRequest(version=0, num_partitions=1_000, replication_factor=3,
                                                      node_id=[], timeout_ms=30_000))
    with socket.create_connection((HOST, port), timeout=30) as sock:
        sock.setblocking(False)
        pending = memoryview(request * 5_000)
        while pending and not stop.is_set():  # never read back
            try:
                pending = pending[sock.send(pending):]
            except BlockingIOError:
                time.sleep(0.01)
        stop.wait()


def attack_partial_frames(port: int, stop: threading.Event, connections: int) -> None:
    size = 100 * 1024 * 1024
    chunk = b"\x00" * (1 << 20)
    socks = []
    try:
        for _ in range(min(10, connections)):
            sock = socket.create_connection((HOST, port), timeout=30)
            sock.setblocking(False)
            socks.append([sock, 4 + 99 * 1024 * 1024, True])
        for entry in socks:
            entry[0].send(struct.pack(">i", size))
            entry[1] -= 4
        while not stop.is_set() and any(left > 0 and open_ for _, left, open_ in socks):
            progressed = False
            for entry in socks:
                sock, left, open_ = entry
                if left <= 0 or not open_:
                    continue
                try:
                    sent = sock.send(chunk[:left])
                    entry[1] -= sent
                    progressed = True
                except BlockingIOError:
                    pass
                except OSError:
                    entry[2] = False
            if not progressed:
                time.sleep(0.01)
        stop.wait()
    finally:
        for sock, _, _ in socks:
            sock.close()


def attack_malformed(port: int, stop: threading.Event, connections: int) -> None:
    head = struct.pack(">ih?", 6, 3, False) + b"\x01" + struct.pack(">i", 5_000)
    # (bytes after a body are ignored, as by Kafka: librdkafka sends some)
    short_array = struct.pack(">ih?", 6, 3, False) + uvarint_bytes(1_000_001) + struct.pack(">i", 5_000) + b"\x00"
    bodies = [head + b"\x01\x07" + uvarint_bytes(1 << 28) + b"ab", short_array, head + b"\x02\x07\x01a\x07\x01b"]
    frames = [_framed(_header(68, 0, 1, True) + body) for body in bodies]
    i = 0

    def once() -> None:
        nonlocal i
        _send_until_closed(port, frames[i % len(frames)])
        i += 1

    _until(stop, once)


def attack_node_ids(port: int, stop: threading.Event, connections: int) -> None:
    data = _encoded(CreateReplicaAssignmentRequest(version=0, num_partitions=6, replication_factor=3,
                                                   node_id=list(range(1000, 41_000)), timeout_ms=30_000))
    _until(stop, lambda: _request_answered(port, data))


def _assignment_1m(port: int, stop: threading.Event) -> None:
    data = _encoded(CreateReplicaAssignmentRequest(version=0, num_partitions=1_000_000, replication_factor=3,
                                                   node_id=[], timeout_ms=120_000))
    _until(stop, lambda: _request_answered(port, data))


def attack_assignment_1m(port: int, stop: threading.Event, connections: int) -> None:
    _assignment_1m(port, stop)


def attack_assignment_1m_x4(port: int, stop: threading.Event, connections: int) -> None:
    threads = [threading.Thread(target=_assignment_1m, args=(port, stop), daemon=True)
               for _ in range(min(4, connections))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def _metadata_naming(count: int) -> bytes:
    """Metadata v1 naming the topic "a" ``count`` times (built as bytes: the codec would take minutes)."""
    return _framed(_header(3, 1, 1, False) + struct.pack(">i", count) + b"\x00\x01a" * count)


def attack_metadata_1m(port: int, stop: threading.Event, connections: int) -> None:
    data = _metadata_naming(1_000_000)
    _until(stop, lambda: _send_until_answered_or_closed(port, data))


def attack_metadata_10m(port: int, stop: threading.Event, connections: int) -> None:
    data = _metadata_naming(10_000_000)
    _until(stop, lambda: _send_until_answered_or_closed(port, data))


def _send_until_answered_or_closed(port: int, data: bytes) -> None:
    with socket.create_connection((HOST, port), timeout=120) as sock:
        sock.sendall(data)
        try:
            _read_frame(sock)
        except (OSError, ConnectionError):
            pass


def attack_frame_headers(port: int, stop: threading.Event, connections: int) -> None:
    socks = [socket.create_connection((HOST, port), timeout=30) for _ in range(min(6, connections))]
    try:
        for sock in socks:
            sock.sendall(struct.pack(">i", 100 * 1024 * 1024))
        stop.wait()
    finally:
        for sock in socks:
            sock.close()


def large_api_versions() -> bytes:
    """A 200 KB ApiVersions (a long client software name): more than one socket read."""
    return _encoded(ApiVersionsRequest(version=3, client_software_name="b" * 200_000, client_software_version="1"))


def attack_unread_answers(port: int, stop: threading.Event, connections: int) -> None:
    data = _encoded(CreateReplicaAssignmentRequest(version=0, num_partitions=1_000_000, replication_factor=3,
                                                   node_id=[], timeout_ms=60_000))
    socks = []
    try:
        for _ in range(min(64, connections)):
            sock = socket.create_connection((HOST, port), timeout=30)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            sock.sendall(data)
            socks.append(sock)
        stop.wait()
    finally:
        for sock in socks:
            sock.close()


def placement_2000() -> bytes:
    return _encoded(CreateReplicaAssignmentRequest(version=0, num_partitions=2_000, replication_factor=3,
                                                   node_id=[], timeout_ms=60_000))


def attack_node_id_echo(port: int, stop: threading.Event, connections: int) -> None:
    data = _encoded(CreateReplicaAssignmentRequest(version=0, num_partitions=6, replication_factor=3,
                                                   node_id=list(range(1000, 4_001_000)), timeout_ms=30_000))
    sizes = []

    def once() -> None:
        with socket.create_connection((HOST, port), timeout=60) as sock:
            sock.sendall(data)
            sizes.append(len(_read_frame(sock)))

    _until(stop, once)
    print(f"# node-id-echo: request {len(data):,} bytes, answers of {sorted(set(sizes))} bytes", flush=True)


def attack_near_max_frames(port: int, stop: threading.Event, connections: int) -> None:
    data = _encoded(ApiVersionsRequest(version=3, client_software_name="n" * (99 << 20), client_software_version="1"))
    _until(stop, lambda: _send_until_answered_or_closed(port, data))


def _plain_guess(port: int, source: str | None = None) -> None:
    with socket.create_connection((HOST, port), timeout=30, source_address=(source, 0) if source else None) as sock:
        sock.sendall(_framed(_header(17, 1, 1, False) + struct.pack(">h", 5) + b"PLAIN"))
        _read_frame(sock)
        token = b"\0alice\0wrong"
        sock.sendall(_framed(_header(36, 1, 2, False) + struct.pack(">i", len(token)) + token))
        _read_frame(sock)


def attack_plain_brute_force(port: int, stop: threading.Event, connections: int, addresses: int = 0) -> None:
    counts = [0] * min(50, connections)

    def guesser(i: int) -> None:
        source = FLOOD_SOURCES[i % addresses] if addresses else None
        while not stop.is_set():
            try:
                _plain_guess(port, source)
                counts[i] += 1
            except OSError:
                time.sleep(0.01)

    threads = [threading.Thread(target=guesser, args=(i,), daemon=True) for i in range(len(counts))]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    print(f"# plain-brute-force: {sum(counts) / (time.perf_counter() - started):.0f} guesses/s "
          f"from {len(counts)} connections, {addresses or 1} addresses", flush=True)


def attack_plain_brute_force_16(port: int, stop: threading.Event, connections: int) -> None:
    attack_plain_brute_force(port, stop, connections, addresses=16)


def attack_none(port: int, stop: threading.Event, connections: int) -> None:
    stop.wait()


# --- the third round (issue 32) ---------------------------------------------------------------
FLOOD_SOURCES = [f"127.0.1.{i}" for i in range(1, 101)]


_FLOOD = """
import socket, sys
port, sources = int(sys.argv[1]), sys.argv[2:]
while True:
    for source in sources:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=5, source_address=(source, 0)).close()
        except OSError:
            pass
"""


def attack_connection_flood(port: int, stop: threading.Event, connections: int) -> None:
    # four interpreters (the attacker is a daemon process, which may not start others of multiprocessing)
    flood = [subprocess.Popen([sys.executable, "-c", _FLOOD, str(port), *FLOOD_SOURCES[i::4]]) for i in range(4)]
    stop.wait()
    for process in flood:
        process.kill()
        process.wait()


def _made_up_mechanism(port: int, n: int, source: str) -> None:
    name = f"MADE-UP-{n}".encode()
    with socket.create_connection((HOST, port), timeout=30, source_address=(source, 0)) as sock:
        sock.sendall(_framed(_header(17, 1, 1, False) + struct.pack(">h", len(name)) + name))
        _read_frame(sock)


def attack_mechanism_names(port: int, stop: threading.Event, connections: int) -> None:
    counter = iter(range(1 << 30))

    def guesser(i: int) -> None:
        while not stop.is_set():
            try:
                _made_up_mechanism(port, next(counter), FLOOD_SOURCES[i])
            except OSError:
                time.sleep(0.01)

    threads = [threading.Thread(target=guesser, args=(i,), daemon=True) for i in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def _holder(port: int, stop: threading.Event, part: int, every: float, source: str) -> None:
    while not stop.is_set():
        try:
            with socket.create_connection((HOST, port), timeout=30, source_address=(source, 0)) as sock:
                sock.sendall(struct.pack(">i", 100 << 20) + b"\0" * part)
                stop.wait(every)
        except OSError:
            time.sleep(0.05)


def attack_frame_holders(port: int, stop: threading.Event, connections: int) -> None:
    threads = [threading.Thread(target=_holder, args=(port, stop, 0, 0.5 if i == 0 else 60.0, FLOOD_SOURCES[i]),
                                daemon=True) for i in range(8)]
    threads.append(threading.Thread(target=_holder, args=(port, stop, 60 << 20, 2.0, FLOOD_SOURCES[8]), daemon=True))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def attack_metadata_10k(port: int, stop: threading.Event, connections: int) -> None:
    names = b"".join(struct.pack(">h", 40) + f"topic-{i:05d}".ljust(40, "x").encode() for i in range(10_000))
    data = _framed(_header(3, 1, 1, False) + struct.pack(">i", 10_000) + names)
    with socket.create_connection((HOST, port), timeout=60, source_address=(FLOOD_SOURCES[0], 0)) as sock:
        while not stop.is_set():  # back to back: the next as soon as the answer came
            sock.sendall(data)
            _read_frame(sock)


def large_bystander() -> bytes:
    return _encoded(ApiVersionsRequest(version=3, client_software_name="b" * 1_200_000, client_software_version="1"))


ATTACKS: dict[str, Callable[[int, threading.Event, int], None]] = {
    "none (baseline)": attack_none,
    "none (placement bystander)": attack_none,
    "varint": attack_varint,
    "varint-before-sasl": attack_varint_before_sasl,
    "tagged-entries": attack_tagged_entries,
    "pipelining": attack_pipelining,
    "partial-frames": attack_partial_frames,
    "malformed": attack_malformed,
    "node-ids": attack_node_ids,
    "assignment-1m": attack_assignment_1m,
    "assignment-1m-x4": attack_assignment_1m_x4,
    "metadata-1m": attack_metadata_1m,
    "metadata-10m": attack_metadata_10m,
    "frame-headers": attack_frame_headers,
    "unread-answers": attack_unread_answers,
    "node-id-echo": attack_node_id_echo,
    "plain-brute-force": attack_plain_brute_force,
    "near-max-frames": attack_near_max_frames,
    "none (new clients)": attack_none,
    "connection-flood": attack_connection_flood,
    "none (metrics)": attack_none,
    "mechanism-names": attack_mechanism_names,
    "none (1.2 MiB bystander)": attack_none,
    "frame-holders": attack_frame_holders,
    "none (SASL new clients)": attack_none,
    "plain-brute-force-16": attack_plain_brute_force_16,
    "none (bystander from 127.0.0.2)": attack_none,
    "metadata-10k": attack_metadata_10k,
}
# the third round's: the bystander from another address; new clients connect for each request
THIRD_ROUND = {"none (new clients)", "connection-flood", "none (metrics)", "mechanism-names",
               "none (1.2 MiB bystander)", "frame-holders", "none (SASL new clients)", "plain-brute-force-16",
               "none (bystander from 127.0.0.2)", "metadata-10k"}
NEW_CLIENTS = {"none (new clients)", "connection-flood"}
# attacks whose bystander sends something else than a small ApiVersions
BYSTANDER_FRAMES: dict[str, Callable[[], bytes]] = {
    "frame-headers": large_api_versions,
    "unread-answers": placement_2000,
    "none (placement bystander)": placement_2000,
    "none (1.2 MiB bystander)": large_bystander,
    "frame-holders": large_bystander,
}


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def run(name: str, seconds: float, queued_max: int, connections: int, users_file: str,
        bystander_address: str | None = None) -> dict:
    # placements off the loop run as a server runs them by default: in worker processes
    overrides = {"queued.max.request.bytes": str(queued_max), "max.connections": str(connections + 10)}
    if name in ("plain-brute-force", "plain-brute-force-16", "none (SASL new clients)"):
        overrides.update({"listeners": f"SASL_PLAINTEXT://{HOST}:0", "sasl.users.file": users_file,
                          "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256"})
    if name in ("none (metrics)", "mechanism-names"):
        overrides.update({"listeners": f"SASL_PLAINTEXT://{HOST}:0", "sasl.users.file": users_file,
                          "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256",
                          "metrics.listener": f"http://{HOST}:0"})
    if name == "varint-before-sasl":
        overrides.update({"listeners": f"SASL_PLAINTEXT://{HOST}:0", "sasl.users.file": users_file,
                          "sasl.enabled.mechanisms": "SCRAM-SHA-256"})
    server = Server(overrides)
    try:
        frame = BYSTANDER_FRAMES[name]() if name in BYSTANDER_FRAMES else None
        if name in THIRD_ROUND and bystander_address is None:
            bystander_address = "127.0.0.2"
        bystander = Bystander(server.port, reconnect=name in ("varint-before-sasl", "plain-brute-force", "none (metrics)",
                                                         "mechanism-names", "plain-brute-force-16",
                                                         "none (SASL new clients)", *NEW_CLIENTS),
                              frame=frame, timeout=max(seconds, 5.0), source=bystander_address,
                              interval=0.25 if name in NEW_CLIENTS else 0.05)
        bystander.start()
        scraping = threading.Event()
        if server.metrics_port:  # a Prometheus scrape every second, as a server with metrics on gets
            threading.Thread(target=_until, args=(scraping, lambda: (server.metrics_bytes(), scraping.wait(1.0))),
                             daemon=True).start()
        time.sleep(0.5)
        # the attacker in its own process: its client work must not hold the bystander's interpreter
        spawn = mp.get_context("spawn")
        stop = spawn.Event()
        attacker = spawn.Process(target=ATTACKS[name], args=(server.port, stop, connections), daemon=True)
        attacker.start()
        cpu_before, started = server.cpu_seconds(), time.perf_counter()
        time.sleep(seconds)
        cpu_share = (server.cpu_seconds() - cpu_before) / (time.perf_counter() - started)
        stop.set()
        bystander.stop_event.set()
        scraping.set()
        attacker.join(30)
        if attacker.is_alive():
            attacker.kill()
        bystander.join(30)
        metrics_bytes = server.metrics_bytes()
    finally:
        code = server.stop()
    lat = bystander.latencies
    return {"attack": name, "requests": len(lat), "p50_ms": _percentile(lat, 0.5) * 1e3,
            "p99_ms": _percentile(lat, 0.99) * 1e3, "refused": server.refused, "metrics_kib": metrics_bytes / 1024,
            "max_ms": max(lat, default=float("nan")) * 1e3, "rss_mib": server.peak_rss / 2**20,
            "rejected": server.rejected, "bystander_errors": bystander.errors, "exit": code,
            "cpu_pct": cpu_share * 100}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=8.0, help="per attack (at most 120)")
    parser.add_argument("--queued-max-mib", type=int, default=200, help="queued.max.request.bytes, MiB (>= 100)")
    parser.add_argument("--connections", type=int, default=100, help="at most 2,000")
    parser.add_argument("--only", nargs="*", choices=list(ATTACKS), help="these attacks only")
    parser.add_argument("--bystander-address", metavar="IP",
                        help=f"the bystander's source address (e.g. 127.0.0.2; the attackers use {HOST})")
    args = parser.parse_args(argv)
    seconds = min(args.seconds, 120.0)
    connections = min(args.connections, 2_000)
    queued_max = max(args.queued_max_mib, 100) * 2**20
    from kafka_replica_assignor.server.security.users import scram_credential, write_users_file

    with tempfile.TemporaryDirectory() as tmp:
        users = os.path.join(tmp, "users.json")
        write_users_file(users, {"alice": {"SCRAM-SHA-256": scram_credential("SCRAM-SHA-256", "x", iterations=4096)}})
        print(f"# adversarial: {seconds:g} s per attack, bystander ApiVersions every 50 ms, "
              f"queued.max.request.bytes={queued_max // 2**20} MiB, {os.cpu_count()} CPUs, Python {sys.version.split()[0]}")
        print("| attack | bystander requests | p50 ms | p99 ms | max ms | server peak RSS MiB | frames rejected "
              "| refused | /metrics KiB | server CPU % |")
        print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        for name in args.only or list(ATTACKS):
            r = run(name, seconds, queued_max, connections, users, args.bystander_address)
            note = f" ({r['bystander_errors']} bystander errors)" if r["bystander_errors"] else ""
            print(f"| {r['attack']}{note} | {r['requests']} | {r['p50_ms']:.1f} | {r['p99_ms']:.1f} | "
                  f"{r['max_ms']:.1f} | {r['rss_mib']:.0f} | {r['rejected']} | {r['refused']} | "
                  f"{r['metrics_kib']:.0f} | {r['cpu_pct']:.0f} |", flush=True)


if __name__ == "__main__":
    main()
