"""Fuzz the wire server with malformed Kafka frames and print how each was handled.

    python bench/fuzz.py [--frames 100000] [--seed 1] [--concurrency 32] [--sasl-sessions 2000]

Starts ``replica-assignor-server`` (a real process, JSON logs) and sends it frames built
from a valid request of every supported API and version (ApiVersions 0-3 and newer ones
that get the fallback, Metadata 0-12, CreateReplicaAssignment 0-1, SaslHandshake 0-1,
SaslAuthenticate 0-2), most of them mutated: truncated, extended, length prefixes that
lie (short, long, negative, over ``socket.request.max.bytes``), flipped bits, boundary
bytes, oversized compact-array lengths and varints, tagged-field sections (unknown tags,
absurd counts and sizes), scrambled headers (api key, version, client id), random bytes,
spliced requests. Then, on a ``SASL_PLAINTEXT`` server, whole authentication sessions
with mutated handshakes and tokens, right and wrong passwords.

Requirements checked on every frame, any violation is a failure (exit status 1):

- the server process never dies (and exits 0 on SIGTERM at the end);
- every answer carries the request's correlation id and decodes as the response of the
  request's API and version;
- every successful CreateReplicaAssignment answer is a valid assignment *of the request
  as the server must have read it*: the request is decoded and interpreted here too, and
  the answer must list exactly its partition ids, each with RF distinct brokers of the
  view (and current replicas kept);
- a connection the server closes is only the offending one: a sentinel connection opened
  at the start answers a well-formed request every 100 frames, and a fresh connection
  answers one right after every close;
- no SASL session with a wrong password, however mutated, is ever authenticated.

The table tells, per mutation, how many frames were answered (by error code), closed by
the server (with the reason it logged) or closed at end of input (an incomplete frame).
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import os
import random
import socket
import struct
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from kafka.net.sasl.scram import ScramClient  # noqa: E402
from kafka.protocol.metadata import (  # noqa: E402
    ApiVersionsRequest,
    ApiVersionsResponse,
    MetadataRequest,
    MetadataResponse,
)
from kafka.protocol.sasl import (  # noqa: E402
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)

from kafka_replica_assignor.assignors import AssignmentError, validate_assignment  # noqa: E402
from kafka_replica_assignor.cluster.snapshot import ClusterSnapshot  # noqa: E402
from kafka_replica_assignor.protocol.frame import MalformedFrameError, peek_header, skip_tagged_fields  # noqa: E402
from kafka_replica_assignor.protocol.messages import CreateReplicaAssignmentRequest, CreateReplicaAssignmentResponse  # noqa: E402
from kafka_replica_assignor.server.config import default_cluster_file  # noqa: E402
from kafka_replica_assignor.server.handlers.create_replica_assignment import interpret  # noqa: E402

_LEN = struct.Struct(">i")
MAX_BYTES = 1 << 20  # socket.request.max.bytes of the fuzzed server
MAX_PARTITIONS = 5000  # max.partitions.per.request of the fuzzed server
FLEXIBLE_FROM = {18: 3, 3: 9, 68: 0, 17: 1000, 36: 2}
SUPPORTED = {18: (0, 3), 3: (0, 12), 68: (0, 1), 17: (0, 1), 36: (0, 2)}
RESPONSES = {18: ApiVersionsResponse, 3: MetadataResponse, 68: CreateReplicaAssignmentResponse,
             17: SaslHandshakeResponse, 36: SaslAuthenticateResponse}
MUTATIONS = ("none", "bit_flips", "boundary_bytes", "truncated", "trailing_garbage", "length_short",
             "length_long", "length_negative", "oversized", "varint_bomb", "tagged_fields", "header",
             "client_id", "random_bytes", "spliced", "two_in_one")


class FuzzFailure(AssertionError):
    """The server broke a requirement."""


# -- valid seeds ------------------------------------------------------------------------
def _frame(request, rng: random.Random, client_id: str | None = "fuzz") -> bytes:
    request.with_header(correlation_id=rng.randrange(1 << 31), client_id=client_id)
    return bytes(request.encode(header=True, framed=True))[4:]


def seed_payloads(rng: random.Random) -> list[tuple[int, int, bytes]]:
    """(api key, version, payload without the length prefix): one of every API and version."""
    out = []
    for v in range(0, 4):
        kw = {"client_software_name": "fuzz", "client_software_version": "1.0"} if v >= 3 else {}
        out.append((18, v, _frame(ApiVersionsRequest(version=v, **kw), rng)))
    for v in range(0, 13):
        topics = [MetadataRequest.MetadataRequestTopic(name=f"topic-{i}") for i in range(rng.randrange(3))]
        out.append((3, v, _frame(MetadataRequest(version=v, topics=topics if topics or v == 0 else None), rng)))
    for v in range(0, 2):
        n, rf = rng.randrange(1, 40), rng.randrange(1, 4)
        kwargs = dict(num_partitions=n, replication_factor=rf, force_simple_assignment=rng.random() < 0.3,
                      node_id=rng.sample(range(6), rng.randrange(0, 7)) if rng.random() < 0.3 else [],
                      timeout_ms=5000)
        if v >= 1:
            current = rng.randrange(0, 4)
            C = CreateReplicaAssignmentRequest
            kwargs.update(topic_name="fuzzed", num_partitions=current + n, current_assignment=[
                C.CurrentPartition(partition_id=p, replicas=rng.sample(range(6), rf)) for p in range(current)])
        out.append((68, v, _frame(CreateReplicaAssignmentRequest(version=v, **kwargs), rng)))
    for v in range(0, 2):
        mechanism = rng.choice(["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "GSSAPI"])
        out.append((17, v, _frame(SaslHandshakeRequest(version=v, mechanism=mechanism), rng)))
    for v in range(0, 3):
        token = rng.randbytes(rng.randrange(40))
        out.append((36, v, _frame(SaslAuthenticateRequest(version=v, auth_bytes=token), rng)))
    return out


# -- mutations ----------------------------------------------------------------------------
@dataclass
class Case:
    mutation: str
    data: bytes  # what is written, length prefix included
    payload: bytes | None  # the frame the server will read first (None: it cannot be read whole)
    incomplete: bool = False  # the server is left waiting for bytes: send EOF


def _huge_varint(rng: random.Random) -> bytes:
    return rng.choice([b"\xff\xff\xff\xff\x0f", b"\xff\xff\xff\x7f", b"\x80\x80\x80\x80\x80\x80\x01",
                       b"\xfe\xff\xff\xff\x07"])


def mutate(rng: random.Random, payload: bytes, seeds: list[tuple[int, int, bytes]]) -> Case:
    m = rng.choice(MUTATIONS)
    p = bytearray(payload)
    if m == "none":
        pass
    elif m == "bit_flips":
        for _ in range(rng.randrange(1, 9)):
            i = rng.randrange(len(p))
            p[i] ^= 1 << rng.randrange(8)
    elif m == "boundary_bytes":
        for _ in range(rng.randrange(1, 5)):
            p[rng.randrange(len(p))] = rng.choice([0x00, 0x01, 0x7F, 0x80, 0xFE, 0xFF])
    elif m == "truncated":
        p = p[:rng.randrange(len(p))]
    elif m == "trailing_garbage":
        p += rng.randbytes(rng.randrange(1, 64))
    elif m == "length_short":
        cut = rng.randrange(0, len(p))
        return Case(m, _LEN.pack(cut) + bytes(p), bytes(p[:cut]), incomplete=True)
    elif m == "length_long":
        return Case(m, _LEN.pack(len(p) + rng.randrange(1, 2000)) + bytes(p), None, incomplete=True)
    elif m == "length_negative":
        return Case(m, _LEN.pack(-rng.randrange(1, 1 << 31)) + bytes(p), None)
    elif m == "oversized":
        return Case(m, _LEN.pack(rng.randrange(MAX_BYTES + 1, 1 << 31)) + bytes(p[:64]), None)
    elif m == "varint_bomb":
        i = rng.randrange(8, max(9, len(p)))
        p[i:i + rng.randrange(1, 6)] = _huge_varint(rng)
    elif m == "tagged_fields":
        p = _mutate_tagged(rng, p)
    elif m == "header":
        struct.pack_into(">hh", p, 0, rng.choice([rng.randrange(-5, 80), 17, 36, 68, 18, 3, 32767, -1]),
                         rng.choice([rng.randrange(-3, 20), 32767, -1]))
    elif m == "client_id":
        struct.pack_into(">h", p, 8, rng.choice([-2, -32768, 32767, len(p), len(p) - 9, 0]))
    elif m == "random_bytes":
        p = bytearray(rng.randbytes(rng.randrange(0, 200)))
    elif m == "spliced":
        other = rng.choice(seeds)[2]
        p = p[:rng.randrange(len(p) + 1)] + other[rng.randrange(len(other) + 1):]
    elif m == "two_in_one":
        return Case(m, (_LEN.pack(len(p)) + bytes(p)) * 2, bytes(p))
    return Case(m, _LEN.pack(len(p)) + bytes(p), bytes(p))


def _mutate_tagged(rng: random.Random, p: bytearray) -> bytearray:
    """The request's tagged-field sections (header v2 and the body's last byte)."""
    try:
        header = peek_header(bytes(p))
    except MalformedFrameError:
        return p
    flexible = header.api_version >= FLEXIBLE_FROM.get(header.api_key, 1000)
    where = rng.choice(["header", "body"]) if flexible else "body"
    at = header.body_offset if where == "header" else len(p) - 1
    kind = rng.choice(["unknown_tag", "huge_count", "huge_size", "truncated_tag"])
    if kind == "unknown_tag":  # legal: a reader skips tags it does not know
        section = b"\x01" + bytes([rng.randrange(10, 120)]) + b"\x03abc"
    elif kind == "huge_count":
        section = _huge_varint(rng)
    elif kind == "huge_size":
        section = b"\x01\x05" + _huge_varint(rng) + b"xy"
    else:
        section = b"\x02\x05\x02a"
    return p[:at] + section + p[at + 1:]


# -- checking answers ------------------------------------------------------------------------
class Checker:
    def __init__(self) -> None:
        text = Path(default_cluster_file()).read_text(encoding="utf-8")
        self.view = ClusterSnapshot.from_json(text).cluster_view()

    def check(self, payload: bytes, response: bytes) -> int:
        """Validate an answer to ``payload``; return its error code. Raises FuzzFailure."""
        header = peek_header(payload)
        (cid,) = _LEN.unpack_from(response, 0)
        if cid != header.correlation_id:
            raise FuzzFailure(f"answer carries correlation id {cid}, the request {header.correlation_id}")
        key, version = header.api_key, header.api_version
        lo, hi = SUPPORTED[key]
        if not lo <= version <= hi:
            if key != 18:
                raise FuzzFailure(f"answered api {key} v{version}, which should have closed the connection")
            version = 0  # the ApiVersions fallback
        flexible = version >= FLEXIBLE_FROM[key] and key != 18
        try:
            decoded = RESPONSES[key].decode(response[5 if flexible else 4:], version=version)
        except Exception as exc:  # noqa: BLE001
            raise FuzzFailure(f"undecodable answer to api {key} v{version}: {exc}") from None
        code = getattr(decoded, "error_code", 0) or 0
        if key == 18 and header.api_version > hi and code != 35:
            raise FuzzFailure(f"ApiVersions v{header.api_version} answered {code}, not UNSUPPORTED_VERSION")
        if key == 68 and code == 0:
            self._check_assignment(payload, header, decoded)
        return code

    def _check_assignment(self, payload: bytes, header, decoded) -> None:
        version = header.api_version
        view = memoryview(payload)
        try:
            body = view[skip_tagged_fields(view, header.body_offset):]
            request = CreateReplicaAssignmentRequest.decode(body, version=version)
            placement = interpret(request, version, self.view, MAX_PARTITIONS)
        except (AssignmentError, Exception) as exc:  # noqa: BLE001
            raise FuzzFailure(f"success for a request that does not stand: {type(exc).__name__}: {exc}") from None
        answer = {e.partition_id: list(e.replicas) for e in decoded.replica_assignment}
        if len(answer) != len(decoded.replica_assignment):
            raise FuzzFailure("the answer lists a partition twice")
        try:
            spec = placement.spec
            validate_assignment(answer, spec.partitions, spec.replication_factor, placement.cluster,
                                placement.cluster.topic_assignment(spec.topic_name))
        except AssignmentError as exc:
            raise FuzzFailure(f"WRONG ASSIGNMENT for {request}: {exc}") from None


# -- the server under test -------------------------------------------------------------------------
class Server:
    """``python -m kafka_replica_assignor.server.main`` with JSON logs; ``closes`` maps a client port to the close reason."""

    def __init__(self, *overrides: str) -> None:
        argv = [sys.executable, "-m", "kafka_replica_assignor.server.main", "--override", "listeners=PLAINTEXT://127.0.0.1:0",
                "--override", "log.format=json", "--override", f"socket.request.max.bytes={MAX_BYTES}",
                "--override", f"max.partitions.per.request={MAX_PARTITIONS}"]
        for item in overrides:
            argv += ["--override", item]
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=ROOT)
        # client port -> reasons the server logged when it closed a connection from it, in order
        self.closes: dict[int, list[str]] = collections.defaultdict(list)
        self.port = 0
        for line in self.proc.stdout:
            record = _json(line)
            if record.get("event") == "server_started":
                self.port = record["port"]
                break
        else:
            raise RuntimeError(f"server exited with {self.proc.wait()} before server_started")
        self._reader = threading.Thread(target=self._drain, daemon=True)
        self._reader.start()

    def _drain(self) -> None:
        for line in self.proc.stdout:
            record = _json(line)
            if record.get("event") == "connection_closed" and record.get("reason"):
                port = int(str(record.get("peer", ":0")).rsplit(":", 1)[1])
                self.closes[port].append(record["reason"])

    async def close_reason(self, port: int, seen: int, timeout: float = 2.0) -> str:
        """The reason logged for the connection from ``port`` that had ``seen`` earlier closes;
        asked while that connection still holds the port, so it cannot be another's."""
        deadline = time.monotonic() + timeout
        while len(self.closes[port]) <= seen:
            if time.monotonic() > deadline:
                return "no reason logged"
            await asyncio.sleep(0.002)
        return self.closes[port][seen]

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self) -> int:
        if self.alive:
            self.proc.terminate()
        try:
            code = self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            code = self.proc.wait()
        self._reader.join(5)
        self.proc.stdout.close()
        return code


def _json(line: str) -> dict:
    try:
        record = json.loads(line)
    except json.JSONDecodeError:
        return {}
    return record if isinstance(record, dict) else {}


# -- the fuzzer --------------------------------------------------------------------------------------
@dataclass
class Report:
    frames: int = 0
    outcomes: dict[str, collections.Counter] = field(
        default_factory=lambda: collections.defaultdict(collections.Counter))
    sentinel_checks: int = 0
    recovery_checks: int = 0
    sessions: collections.Counter = field(default_factory=collections.Counter)
    failures: list[str] = field(default_factory=list)

    def table(self) -> str:
        lines = [f"{'mutation':<18} {'frames':>7}  outcomes"]
        for mutation in MUTATIONS:
            counts = self.outcomes.get(mutation)
            if not counts:
                continue
            parts = ", ".join(f"{what} {n}" for what, n in counts.most_common())
            lines.append(f"{mutation:<18} {sum(counts.values()):>7}  {parts}")
        total = collections.Counter()
        for counts in self.outcomes.values():
            for what, n in counts.items():
                total[what.split(" (")[0].split(":")[0]] += n
        lines.append(f"{'all':<18} {self.frames:>7}  " + ", ".join(f"{w} {n}" for w, n in total.most_common()))
        lines.append(f"well-formed requests answered: {self.sentinel_checks} on the sentinel connection, "
                     f"{self.recovery_checks} on fresh connections right after a close")
        lines.append(f"failures: {len(self.failures)}")
        lines.extend(f"  {f}" for f in self.failures[:20])
        return "\n".join(lines)


class Connection:
    def __init__(self, port: int) -> None:
        self.port = port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None
        self.local_port = 0
        self.closes_seen = 0  # closes the server had logged for this port before this connection

    async def open(self, server: Server | None = None) -> None:
        self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port)
        sock = self.writer.get_extra_info("socket")
        # closing first must not leave TIME_WAIT behind: 100,000 frames would exhaust the ports
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.local_port = sock.getsockname()[1]
        if server is not None:
            self.closes_seen = len(server.closes[self.local_port])

    async def read_frame(self, timeout: float) -> bytes | None:
        """A response frame, or None at end of stream."""
        try:
            size = _LEN.unpack(await asyncio.wait_for(self.reader.readexactly(4), timeout))[0]
            return await asyncio.wait_for(self.reader.readexactly(size), timeout)
        except (asyncio.IncompleteReadError, ConnectionError):
            return None

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            self.writer = None


def _well_formed(rng: random.Random) -> tuple[bytes, int]:
    request = ApiVersionsRequest(version=rng.randrange(4), client_software_name="fuzz", client_software_version="1")
    cid = rng.randrange(1 << 31)
    request.with_header(correlation_id=cid, client_id="fuzz-check")
    return bytes(request.encode(header=True, framed=True)), cid


def _well_formed_assignment(rng: random.Random) -> bytes:
    request = CreateReplicaAssignmentRequest(version=0, num_partitions=rng.randrange(1, 30),
                                             replication_factor=rng.randrange(1, 4), force_simple_assignment=False,
                                             node_id=[], timeout_ms=10_000)
    request.with_header(correlation_id=rng.randrange(1 << 31), client_id="fuzz-check")
    return bytes(request.encode(header=True, framed=True))


class Fuzzer:
    def __init__(self, server: Server, seed: int, concurrency: int, answer_timeout: float = 10.0) -> None:
        self.server = server
        self.seed = seed
        self.concurrency = concurrency
        self.answer_timeout = answer_timeout
        self.checker = Checker()
        self.report = Report()

    def fail(self, message: str) -> None:
        self.report.failures.append(message)

    async def _expect_answer(self, conn: Connection, data: bytes, where: str) -> None:
        conn.writer.write(data)
        payload = data[4:]
        response = await conn.read_frame(self.answer_timeout)
        if response is None:
            self.fail(f"{where}: a well-formed request was not answered (connection closed)")
            return
        try:
            code = self.checker.check(payload, response)
        except FuzzFailure as exc:
            self.fail(f"{where}: {exc}")
            return
        if code and peek_header(payload).api_key != 68:
            self.fail(f"{where}: a well-formed request got error {code}")

    async def run(self, frames: int) -> Report:
        sentinel = Connection(self.server.port)
        await sentinel.open()
        counter = iter(range(frames))
        lock = asyncio.Lock()

        async def sentinel_check(rng: random.Random) -> None:
            async with lock:
                await self._expect_answer(sentinel, _well_formed(rng)[0], "sentinel")
                await self._expect_answer(sentinel, _well_formed_assignment(rng), "sentinel")
                self.report.sentinel_checks += 2

        async def worker(index: int) -> None:
            rng = random.Random(f"{self.seed}/{index}")
            seeds = seed_payloads(rng)
            conn: Connection | None = None
            for i in counter:
                if conn is None:
                    conn = Connection(self.server.port)
                    await conn.open(self.server)
                if i % 100 == 0:
                    await sentinel_check(rng)
                    if not self.server.alive:
                        self.fail(f"the server died (exit code {self.server.proc.returncode})")
                        return
                if i % 5000 == 0 and i:
                    seeds = seed_payloads(rng)
                case = mutate(rng, rng.choice(seeds)[2], seeds)
                self.report.frames += 1
                kept = await self._one(conn, case)
                if not kept:
                    conn.close()
                    conn = None
                    # the server closed only the offender: a fresh connection is answered at once
                    check = Connection(self.server.port)
                    await check.open()
                    await self._expect_answer(check, _well_formed(rng)[0], f"after {case.mutation}")
                    self.report.recovery_checks += 1
                    check.close()
            if conn is not None:
                conn.close()

        await asyncio.gather(*(worker(i) for i in range(self.concurrency)))
        await sentinel_check(random.Random(self.seed))
        sentinel.close()
        return self.report

    async def _one(self, conn: Connection, case: Case) -> bool:
        """Send one case; True if the connection is still usable."""
        outcomes = self.report.outcomes[case.mutation]
        conn.writer.write(case.data)
        if case.incomplete or case.payload is None:
            # the server waits for the rest, or refuses the size: end our side and see
            if case.incomplete:
                conn.writer.write_eof()
            response = await conn.read_frame(self.answer_timeout)
            if response is None:
                if case.incomplete:
                    outcomes["closed at end of input (incomplete frame)"] += 1
                else:
                    outcomes[f"closed: {await self.server.close_reason(conn.local_port, conn.closes_seen)}"] += 1
            elif case.payload is not None:
                self._judge(case, response, outcomes)  # the first part was a whole request
                while await conn.read_frame(self.answer_timeout) is not None:
                    pass
            else:
                self.fail(f"{case.mutation}: answered a frame that cannot be read: {case.data[:40].hex()}")
            return False
        try:
            response = await conn.read_frame(self.answer_timeout)
        except TimeoutError:
            self.fail(f"{case.mutation}: no answer and no close within {self.answer_timeout}s: {case.data[:60].hex()}")
            return False
        if response is None:
            outcomes[f"closed: {await self.server.close_reason(conn.local_port, conn.closes_seen)}"] += 1
            return False
        self._judge(case, response, outcomes)
        if case.mutation == "two_in_one":
            second = await conn.read_frame(self.answer_timeout)
            if second is None:
                self.fail("two_in_one: the second of two pipelined requests was not answered")
                return False
        return True

    def _judge(self, case: Case, response: bytes, outcomes: collections.Counter) -> None:
        try:
            code = self.checker.check(case.payload, response)
        except FuzzFailure as exc:
            self.fail(f"{case.mutation}: {exc} (frame {case.data[:80].hex()})")
            outcomes["answered wrongly"] += 1
            return
        outcomes["answered" if code == 0 else f"answered (error {code})"] += 1


# -- SASL sessions -----------------------------------------------------------------------------------
class SaslFuzzer:
    """Whole authentication sessions on a SASL_PLAINTEXT server, some tokens mutated."""

    def __init__(self, server: Server, seed: int, password: str) -> None:
        self.server = server
        self.seed = seed
        self.password = password
        self.report = Report()

    async def run(self, sessions: int, concurrency: int) -> Report:
        counter = iter(range(sessions))

        async def worker(index: int) -> None:
            rng = random.Random(f"sasl/{self.seed}/{index}")
            for _ in counter:
                await self._session(rng)

        await asyncio.gather(*(worker(i) for i in range(concurrency)))
        return self.report

    async def _session(self, rng: random.Random) -> None:
        mechanism = rng.choice(["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
        right = rng.random() < 0.5
        password = self.password if right else self.password + "x"
        mutate_at = rng.choice([None, "handshake", "first", "final"])
        version = rng.choice([0, 1])
        conn = Connection(self.server.port)
        await conn.open()
        self.report.frames += 1
        try:
            outcome = await self._exchange(conn, rng, mechanism, password, mutate_at, version)
        finally:
            conn.close()
        self.report.sessions[outcome] += 1
        if outcome == "authenticated" and not right:
            self.report.failures.append(f"authenticated with a wrong password ({mechanism}, v{version}, "
                                        f"mutated {mutate_at})")
        if outcome != "authenticated" and right and mutate_at is None:
            self.report.failures.append(f"right password, no mutation, not authenticated: {outcome}")

    @staticmethod
    def _maybe(rng: random.Random, data: bytes, do: bool) -> bytes:
        if not do or not data:
            return data
        out = bytearray(data)
        for _ in range(rng.randrange(1, 4)):
            out[rng.randrange(len(out))] ^= 1 << rng.randrange(8)
        return bytes(out)

    async def _exchange(self, conn, rng, mechanism, password, mutate_at, version) -> str:
        request = SaslHandshakeRequest(version=version, mechanism=mechanism)
        request.with_header(correlation_id=1, client_id="fuzz")
        frame = bytes(request.encode(header=True, framed=True))
        conn.writer.write(frame[:4] + self._maybe(rng, frame[4:], mutate_at == "handshake"))
        response = await conn.read_frame(5)
        if response is None:
            return "closed at handshake"
        if SaslHandshakeResponse.decode(response[4:], version=version).error_code:
            return "handshake refused"
        scram = ScramClient("alice", password, mechanism) if mechanism != "PLAIN" else None
        tokens = ([scram.first_message()] if scram else [f"\0alice\0{password}".encode()])
        step = 0
        while tokens:
            token = self._maybe(rng, tokens.pop(), mutate_at == ("first" if step == 0 else "final"))
            if version == 0:
                conn.writer.write(_LEN.pack(len(token)) + token)
                answer = await conn.read_frame(5)
                if answer is None:
                    return "closed during authentication"
                server_token = answer
            else:
                auth = SaslAuthenticateRequest(version=2, auth_bytes=token)
                auth.with_header(correlation_id=2 + step, client_id="fuzz")
                conn.writer.write(bytes(auth.encode(header=True, framed=True)))
                answer = await conn.read_frame(5)
                if answer is None:
                    return "closed during authentication"
                decoded = SaslAuthenticateResponse.decode(answer[5:], version=2)
                if decoded.error_code:
                    return f"refused (error {decoded.error_code})"
                server_token = decoded.auth_bytes
            if scram is not None:
                try:
                    if step == 0:
                        scram.process_server_first_message(server_token)
                        tokens.append(scram.final_message())
                    else:
                        scram.process_server_final_message(server_token)
                except (ValueError, KeyError, UnicodeDecodeError):
                    return "client gave up"
            step += 1
        probe = MetadataRequest(version=1, topics=[])
        probe.with_header(correlation_id=99, client_id="fuzz")
        conn.writer.write(bytes(probe.encode(header=True, framed=True)))
        answer = await conn.read_frame(5)
        return "authenticated" if answer is not None and _LEN.unpack_from(answer)[0] == 99 else "not authenticated"


def run_campaign(frames: int, seed: int, concurrency: int, sasl_sessions: int, users_file: str | None = None,
                 answer_timeout: float = 10.0) -> tuple[Report, Report | None, int, int]:
    """Run both campaigns; (frame report, SASL report, exit codes of the two servers)."""
    try:
        import uvloop

        runner = uvloop.run
    except ImportError:  # pragma: no cover
        runner = asyncio.run
    server = Server()
    try:
        report = runner(Fuzzer(server, seed, concurrency, answer_timeout).run(frames))
        if not server.alive:
            report.failures.append(f"the server died (exit code {server.proc.returncode})")
    finally:
        code = server.stop()
    if code != 0:
        report.failures.append(f"the server exited {code} on SIGTERM")
    sasl_report, sasl_code = None, 0
    if sasl_sessions:
        import tempfile

        from kafka_replica_assignor.server.security.users import scram_credential, write_users_file

        with tempfile.TemporaryDirectory() as tmp:
            path = users_file or os.path.join(tmp, "users.json")
            write_users_file(path, {"alice": {m: scram_credential(m, "fuzz-secret", iterations=4096)
                                              for m in ("SCRAM-SHA-256", "SCRAM-SHA-512")}})
            sasl = Server("listeners=SASL_PLAINTEXT://127.0.0.1:0", f"sasl.users.file={path}",
                          "sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
                          "connection.failed.authentication.delay.ms=0")
            try:
                sasl_report = runner(SaslFuzzer(sasl, seed, "fuzz-secret").run(sasl_sessions, concurrency))
                if not sasl.alive:
                    sasl_report.failures.append("the SASL server died")
            finally:
                sasl_code = sasl.stop()
            if sasl_code != 0:
                sasl_report.failures.append(f"the SASL server exited {sasl_code} on SIGTERM")
    return report, sasl_report, code, sasl_code


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--frames", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--sasl-sessions", type=int, default=2_000)
    args = parser.parse_args(argv)
    started = time.monotonic()
    report, sasl_report, _, _ = run_campaign(args.frames, args.seed, args.concurrency, args.sasl_sessions)
    elapsed = time.monotonic() - started
    print(f"fuzzed {report.frames} frames (seed {args.seed}, {args.concurrency} connections) and "
          f"{sasl_report.frames if sasl_report else 0} SASL sessions in {elapsed:.1f} s")
    print(report.table())
    if sasl_report is not None:
        print(f"SASL sessions ({sasl_report.frames}, half with a wrong password, most with a mutated "
              f"handshake or token): " + ", ".join(f"{w} {n}" for w, n in sasl_report.sessions.most_common()))
        print(f"SASL failures: {len(sasl_report.failures)}")
        for failure in sasl_report.failures[:20]:
            print(f"  {failure}")
    failures = report.failures + (sasl_report.failures if sasl_report else [])
    print("RESULT:", "PASS" if not failures else f"FAIL ({len(failures)} failures)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
