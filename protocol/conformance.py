"""The conformance kit's core: hold a server, or a client, to the published wire vectors.

**Server role** (:func:`check_server`): every vector meant for servers is sent to the
server under test, one at a time, and its answer judged:

* exact mode compares the answer byte for byte with the vector. Only a server in
  deterministic mode with the reference properties (``replica.assignor.random.seed=42``,
  the default assignor, the vectors' cluster) can pass it: it is how the reference server
  is held to its own published bytes;
* property mode (the default) checks what any correct implementation must do: the
  answer decodes at the right version with the right correlation id; the error code is the
  expected one (with a message, and in v0 in the tagged fields); a success lists exactly
  the expected partition ids, each with ReplicationFactor distinct brokers from the allowed
  set, spread over the racks, leaders balanced, current replicas kept on continuation, and
  a v0 success carries no tagged field (so KIP-879's own schema reads it byte for byte);
  requests a server must refuse close the connection.

Before that, ApiVersions tells which APIs the server has: apiKey 68 missing fails every
CreateReplicaAssignment vector with "not implemented" (nothing is sent that a Kafka broker
would read as ConsumerGroupHeartbeat), and versions the server does not advertise are
skipped.

**Client role** (:class:`VectorListener`): a listener that answers a client under test
with the vectors' responses. A CreateReplicaAssignment request is served only if its body
is byte-identical to a vector's request; anything else is a failure and closes the
connection, as a Kafka broker closes on a request it cannot read.
"""

from __future__ import annotations

import asyncio
import socket
import struct
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from kafka.protocol.api_header import RequestHeader

from .frame import MalformedFrameError, patch_correlation_id, peek_header
from .messages import MetadataResponse
from .vectors import (
    API_NAMES,
    API_VERSIONS,
    CREATE_REPLICA_ASSIGNMENT,
    FEATURE_NAME,
    METADATA,
    Exchange,
    Vector,
    VectorSet,
    decode_response,
    fields_of,
    message_from_fields,
    request_body,
    request_class,
    response_frame,
)

PASS, FAIL, SKIP = "PASS", "FAIL", "SKIP"
_LEN = struct.Struct(">i")


@dataclass(frozen=True, slots=True)
class Outcome:
    vector: str
    check: str
    status: str
    detail: str


@dataclass(frozen=True, slots=True)
class Report:
    target: str
    role: str
    mode: str
    outcomes: tuple[Outcome, ...]

    def count(self, status: str) -> int:
        return sum(1 for o in self.outcomes if o.status == status)

    @property
    def ok(self) -> bool:
        return self.count(FAIL) == 0 and bool(self.outcomes)

    def format(self) -> str:
        """The pass/fail table and a one-line summary."""
        rows = [("RESULT", "VECTOR", "CHECK", "DETAIL")]
        rows += [(o.status, o.vector, o.check, o.detail) for o in self.outcomes]
        widths = [max(len(r[i]) for r in rows) for i in range(3)]
        lines = ["  ".join(r[i].ljust(widths[i]) for i in range(3)) + "  " + r[3] for r in rows]
        lines.append(f"conformance ({self.role} role, {self.mode}) {self.target}: "
                     f"{self.count(PASS)} passed, {self.count(FAIL)} failed, {self.count(SKIP)} skipped")
        return "\n".join(lines)


# -- properties ---------------------------------------------------------------------------

def check_properties(vector: Vector, frame: bytes, body_version: int, brokers: Mapping[int, str | None]) -> list[str]:
    """What is wrong with ``frame`` as an answer to ``vector`` (empty: it conforms)."""
    try:
        decoded = decode_response(vector.api_key, body_version, frame)
    except Exception as exc:
        return [f"undecodable as a {vector.api_name} v{body_version} response: {type(exc).__name__}: {exc}"]
    problems: list[str] = []
    if decoded.header.correlation_id != vector.request.correlation_id:
        problems.append(f"correlation id {decoded.header.correlation_id}, sent {vector.request.correlation_id}")
    expect = vector.expect
    if vector.api_key == API_VERSIONS:
        problems += _api_versions_problems(vector, decoded)
    elif vector.api_key == METADATA:
        problems += _metadata_problems(expect, decoded)
    else:
        problems += _assignment_problems(vector, decoded, body_version, frame, brokers)
    return problems


def _api_versions_problems(vector: Vector, decoded) -> list[str]:
    expect = vector.expect
    out = []
    if decoded.error_code != expect["error_code"]:
        out.append(f"error code {decoded.error_code}, expected {expect['error_code']}")
    own = [k for k in decoded.api_keys or [] if k.api_key == API_VERSIONS]
    if not own:
        out.append("does not list ApiVersions (apiKey 18) itself")
    elif expect["error_code"] == 0 and not own[0].min_version <= vector.api_version <= own[0].max_version:
        out.append(f"lists ApiVersions v{own[0].min_version}-v{own[0].max_version}, "
                   f"yet answered v{vector.api_version}")
    return out


def _metadata_problems(expect: Mapping, decoded) -> list[str]:
    out = []
    if len(decoded.brokers or []) < expect["min_brokers"]:
        out.append(f"lists {len(decoded.brokers or [])} brokers, at least {expect['min_brokers']} expected")
    topics = {t.name: t.error_code for t in decoded.topics or []}
    for name, code in expect["topic_error_codes"].items():
        if topics.get(name) != code:
            out.append(f"topic {name}: error code {topics.get(name)}, expected {code}")
    return out


def _assignment_problems(vector: Vector, decoded, version: int, frame: bytes,
                         brokers: Mapping[int, str | None]) -> list[str]:
    expect = vector.expect
    out = []
    if decoded.error_code != expect["error_code"]:
        out.append(f"error code {decoded.error_code}, expected {expect['error_code']}"
                   + (f" ({decoded.error_message})" if decoded.error_message else ""))
        return out
    entries = decoded.replica_assignment or []
    tags = set(decoded.tags or ())
    if decoded.unknown_tags:
        out.append(f"unknown tagged fields {sorted(decoded.unknown_tags)}")
    if expect["error_code"]:
        if not decoded.error_message:
            out.append("no ErrorMessage with the error")
        if entries:
            out.append(f"{len(entries)} assignments in an error response")
        if version == 0 and "error_code" not in tags:
            out.append("v0 must carry ErrorCode as tagged field 0")
    else:
        if version == 0 and tags:
            out.append(f"a v0 success carries tagged fields {sorted(tags)}: KIP-879's schema no longer "
                       f"matches it byte for byte")
        out += _placement_problems(expect, {e.partition_id: list(e.replicas or []) for e in entries},
                                   [e.partition_id for e in entries], brokers)
    again = response_frame(decoded, decoded.header.correlation_id)
    if again != frame:
        out.append(f"not in the codec's canonical encoding ({len(frame)} bytes; re-encoded: {len(again)})")
    return out


def _placement_problems(expect: Mapping, assignment: dict[int, list[int]], order: list[int],
                        brokers: Mapping[int, str | None]) -> list[str]:
    out = []
    if len(order) != len(set(order)):
        out.append("a partition is listed twice")
    if sorted(assignment) != expect["partitions"]:
        out.append(f"partitions {_ids(sorted(assignment))}, expected {_ids(expect['partitions'])}")
    rf = expect["replication_factor"]
    allowed = set(expect["brokers"])
    for p, reps in sorted(assignment.items()):
        if len(reps) != rf:
            out.append(f"partition {p}: {len(reps)} replicas {reps}, expected {rf}")
        if len(set(reps)) != len(reps):
            out.append(f"partition {p}: a broker twice in {reps}")
        stray = [b for b in reps if b not in allowed]
        if stray:
            out.append(f"partition {p}: brokers {stray} outside {sorted(allowed)}")
        need = expect.get("racks_per_partition")
        if need is not None:
            racks = {brokers.get(b) for b in reps}
            if len(racks) < need:
                out.append(f"partition {p}: {reps} span {len(racks)} racks, expected {need}")
        kept = expect.get("keeps", {}).get(str(p))
        if kept is not None and not set(kept) <= set(reps):
            out.append(f"partition {p}: current replicas {kept} not kept in {reps}")
    if "max_leader_skew" in expect and assignment:
        leaders = Counter(reps[0] for reps in assignment.values() if reps)
        counts = [leaders.get(b, 0) for b in allowed]
        if max(counts) - min(counts) > expect["max_leader_skew"]:
            out.append(f"leader counts per broker {dict(sorted(leaders.items()))} differ by more than "
                       f"{expect['max_leader_skew']}")
    return out[:6]


def _ids(ids: list[int]) -> str:
    if ids and ids == list(range(ids[0], ids[-1] + 1)) and len(ids) > 2:
        return f"{ids[0]}-{ids[-1]}"
    return str(ids)


def _summary(vector: Vector) -> str:
    expect = vector.expect
    if vector.expects_disconnect:
        return "connection closed"
    if vector.api_key == CREATE_REPLICA_ASSIGNMENT:
        if expect["error_code"]:
            return f"error code {expect['error_code']} with a message"
        extra = f", {expect['racks_per_partition']} racks each" if "racks_per_partition" in expect else ""
        return (f"partitions {_ids(expect['partitions'])}, RF {expect['replication_factor']} "
                f"on distinct brokers{extra}")
    if vector.api_key == API_VERSIONS:
        return f"error code {expect['error_code']}, v{expect['body_version']} body"
    return "decodes, lists the broker"


# -- server role --------------------------------------------------------------------------

def _retarget(frame: bytes, version: int) -> bytes:
    """The same request under another api version (the header re-encoded by the codec)."""
    payload = frame[4:]
    head = peek_header(payload)
    header = RequestHeader(request_api_key=head.api_key, request_api_version=version,
                           correlation_id=head.correlation_id, client_id=head.client_id)
    out = header.encode(flexible=False) + payload[head.body_offset:]
    return _LEN.pack(len(out)) + out


@dataclass(slots=True)
class _Discovery:
    """What the server under test says it supports (ApiVersions)."""

    apis: dict[int, tuple[int, int]] = field(default_factory=dict)
    features: set[str] = field(default_factory=set)
    answered: bool = False


def _discover(vectors: VectorSet, exchange: Exchange) -> tuple[_Discovery, list[Outcome]]:
    found = _Discovery()
    candidates = sorted((v for v in vectors.for_role("server")
                         if v.api_key == API_VERSIONS and v.response is not None and v.expect["error_code"] == 0),
                        key=lambda v: -v.api_version)
    problem = "no ApiVersions vector"
    for vector in candidates:
        try:
            answer = exchange(vector.request.frame)
        except OSError as exc:
            exchange.close()
            problem = f"ApiVersions v{vector.api_version}: {_oserror(exc)}"
            if isinstance(exc, TimeoutError):
                break  # a server that does not answer will not answer an older version either
            continue
        if answer is None:
            problem = f"ApiVersions v{vector.api_version}: the server closed the connection"
            continue
        try:
            decoded = decode_response(API_VERSIONS, vector.api_version, answer)
        except Exception as exc:
            exchange.close()
            problem = f"ApiVersions v{vector.api_version}: undecodable answer ({type(exc).__name__})"
            continue
        if decoded.error_code:
            problem = f"ApiVersions v{vector.api_version}: error code {decoded.error_code}"
            continue
        found.answered = True
        found.apis = {k.api_key: (k.min_version, k.max_version) for k in decoded.api_keys or []}
        found.features = {f.name for f in (getattr(decoded, "supported_features", None) or [])}
        break
    if not found.answered:
        return found, [Outcome("discovery", "ApiVersions", FAIL, problem)]
    out = [Outcome("discovery", "ApiVersions", PASS, f"{len(found.apis)} APIs advertised")]
    cra = found.apis.get(CREATE_REPLICA_ASSIGNMENT)
    if cra is None:
        out.append(Outcome("discovery", "apiKey 68", FAIL,
                           "apiKey 68 (CreateReplicaAssignment) is not implemented: ApiVersions does not list it"))
    else:
        out.append(Outcome("discovery", "apiKey 68", PASS, f"CreateReplicaAssignment v{cra[0]}-v{cra[1]} advertised"))
        if FEATURE_NAME in found.features:
            out.append(Outcome("discovery", "feature", PASS, f"'{FEATURE_NAME}' advertised (ApiVersions v3)"))
        else:
            out.append(Outcome("discovery", "feature", FAIL,
                               f"ApiVersions v3 does not advertise the '{FEATURE_NAME}' feature, so clients cannot "
                               f"tell this server from a Kafka broker, where apiKey 68 is ConsumerGroupHeartbeat"))
    return found, out


def _oserror(exc: OSError) -> str:
    if isinstance(exc, (socket.timeout, TimeoutError)):
        return "no answer in time"
    return exc.strerror or type(exc).__name__


def check_server(vectors: VectorSet, host: str, port: int, exact: bool = False, timeout: float = 5.0) -> Report:
    """Send every server vector to ``host:port`` and judge the answers."""
    target = f"against {host}:{port}"
    mode = "exact bytes" if exact else "properties"
    exchange = Exchange(host, port, timeout)
    try:
        exchange.connect()
    except OSError as exc:
        return Report(target, "server", mode, (Outcome("connect", "TCP", FAIL,
                                                       f"cannot connect to {host}:{port}: {_oserror(exc)}"),))
    try:
        found, outcomes = _discover(vectors, exchange)
        run = _ServerRun(vectors, exchange, found, exact, timeout)
        outcomes += [run.check(vector) for vector in vectors.for_role("server")]
    finally:
        exchange.close()
    return Report(target, "server", mode, tuple(outcomes))


class _ServerRun:
    """One pass over the server vectors, on one connection (reopened after each close)."""

    def __init__(self, vectors: VectorSet, exchange: Exchange, found: _Discovery, exact: bool,
                 timeout: float) -> None:
        self.vectors, self.exchange, self.found = vectors, exchange, found
        self.exact, self.timeout = exact, timeout
        self.contract = {spec["api_key"]: tuple(spec["versions"]) for spec in vectors.apis.values()}
        self.hung: set[int] = set()  # api keys that once got no answer: not asked again

    def check(self, vector: Vector) -> Outcome:
        check = "bytes" if self.exact and vector.deterministic else "properties"
        frame_or_outcome = self._frame(vector, check)
        if isinstance(frame_or_outcome, Outcome):
            return frame_or_outcome
        try:
            answer = self.exchange(frame_or_outcome)
        except OSError as exc:
            self.exchange.close()
            if isinstance(exc, TimeoutError):
                self.hung.add(vector.api_key)
                what = "neither answered nor closed the connection" if vector.expects_disconnect else "no answer"
                return Outcome(vector.name, check, FAIL, f"{what} within {self.timeout:g}s")
            return Outcome(vector.name, check, FAIL, _oserror(exc))
        return self._judge(vector, check, answer)

    def _frame(self, vector: Vector, check: str) -> bytes | Outcome:
        """What to send for ``vector`` to this server, or why nothing is sent."""
        name = vector.name
        if not self.found.answered:
            return Outcome(name, check, FAIL, "not sent: the server did not answer ApiVersions")
        advertised = self.found.apis.get(vector.api_key)
        if advertised is None:
            what = "is not implemented" if vector.api_key == CREATE_REPLICA_ASSIGNMENT else "is not advertised"
            return Outcome(name, check, FAIL,
                           f"not sent: apiKey {vector.api_key} ({vector.api_name}) {what}: ApiVersions does not list it")
        if vector.api_key in self.hung:
            return Outcome(name, check, FAIL, f"not sent: an earlier {vector.api_name} request got no answer")
        lo, hi = advertised
        unsupported = vector.api_version > self.contract.get(vector.api_key, (0, 32767))[1]
        if not self.exact and unsupported and vector.api_version <= hi:
            return _retarget(vector.request.frame, hi + 1)  # "above the server's newest version", for this server
        if not unsupported and not lo <= vector.api_version <= hi:
            return Outcome(name, check, SKIP, f"the server advertises {vector.api_name} v{lo}-v{hi}")
        return vector.request.frame

    def _judge(self, vector: Vector, check: str, answer: bytes | None) -> Outcome:
        name = vector.name
        if vector.expects_disconnect:
            if answer is None:
                return Outcome(name, check, PASS, "connection closed")
            self.exchange.close()
            return Outcome(name, check, FAIL, f"answered ({len(answer)} bytes) instead of closing the connection")
        if answer is None:
            return Outcome(name, check, FAIL, "closed the connection instead of answering")
        problems = check_properties(vector, answer, vector.response.version, self.vectors.brokers)
        if problems:
            self.exchange.close()  # the connection may be out of step: start the next vector afresh
        if check == "bytes":
            expected = vector.response.frame
            if answer == expected:
                return Outcome(name, check, PASS, f"identical ({len(answer)} bytes)")
            at = next((i for i, (a, b) in enumerate(zip(answer, expected)) if a != b),
                      min(len(answer), len(expected)))
            verdict = "; ".join(problems) or \
                "properties hold, so the server is not in the reference's deterministic mode"
            return Outcome(name, check, FAIL,
                           f"bytes differ from offset {at} ({len(answer)} bytes, expected {len(expected)}): {verdict}")
        if problems:
            return Outcome(name, check, FAIL, "; ".join(problems))
        return Outcome(name, check, PASS, _summary(vector))


# -- client role --------------------------------------------------------------------------

class VectorListener:
    """Answers a client under test with the vectors' responses.

    ``await start()`` binds (port 0 works; see :attr:`port`), ``await serve()`` runs until
    :meth:`request_stop` or ``max_requests`` requests, then :meth:`report` tells what was
    served and what did not match.
    """

    def __init__(self, vectors: VectorSet, host: str = "127.0.0.1", port: int = 0,
                 max_requests: int | None = None, on_event: Callable[[str], None] | None = None) -> None:
        self.vectors = vectors
        self.host, self.port = host, port
        self.max_requests = max_requests
        self.on_event = on_event or (lambda line: None)
        self.served: Counter[str] = Counter()
        self.failures: list[Outcome] = []
        self.requests = 0
        self._server: asyncio.base_events.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._stop = asyncio.Event()
        client = vectors.for_role("client")
        self._answers = [v for v in client if v.response is not None]
        self._metadata_unknown_topic = next(
            (v for v in self._answers if v.api_key == METADATA and v.expect["topic_error_codes"]), None)

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._connection, self.host, self.port)
        self.host, self.port = self._server.sockets[0].getsockname()[:2]

    def request_stop(self) -> None:
        self._stop.set()

    async def serve(self) -> None:
        if self._server is None:
            await self.start()
        try:
            await self._stop.wait()
        finally:
            self._server.close()
            for writer in list(self._writers):  # idle clients too: wait_closed waits for them
                writer.close()
            await asyncio.wait_for(self._server.wait_closed(), 5)

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = "%s:%s" % writer.get_extra_info("peername")[:2]
        self._writers.add(writer)
        try:
            while not self._stop.is_set():
                try:
                    (size,) = _LEN.unpack(await reader.readexactly(4))
                    payload = await reader.readexactly(size) if 0 <= size <= 1 << 24 else None
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                if payload is None:
                    self._fail("frame", f"frame size {size} from {peer}")
                    return
                answer = self._answer(payload, peer)
                self.requests += 1
                if answer is None:
                    return
                writer.write(answer)
                await writer.drain()
                if self.max_requests is not None and self.requests >= self.max_requests:
                    self.request_stop()
        finally:
            self._writers.discard(writer)
            writer.close()

    def _fail(self, check: str, detail: str) -> None:
        self.failures.append(Outcome("client request", check, FAIL, detail))
        self.on_event(f"FAIL {check}: {detail}")

    def _serve(self, vector: Vector, correlation_id: int, peer: str, frame: bytes | None = None) -> bytes:
        self.served[vector.name] += 1
        self.on_event(f"served {vector.name} to {peer}")
        return patch_correlation_id(frame or vector.response.frame, correlation_id)

    def _answer(self, payload: bytes, peer: str) -> bytes | None:
        try:
            head = peek_header(payload)
        except MalformedFrameError as exc:
            self._fail("header", f"malformed request header from {peer}: {exc}")
            return None
        key, version = head.api_key, head.api_version
        what = f"{API_NAMES.get(key, f'apiKey {key}')} v{version}"
        if key == API_VERSIONS:
            wanted = [v for v in self._answers if v.api_key == key and
                      (v.api_version == version if version <= 3 else v.expect["error_code"] != 0)]
            if not wanted:
                self._fail(what, f"no vector answers {what}")
                return None
            return self._serve(wanted[0], head.correlation_id, peer)
        if key not in (METADATA, CREATE_REPLICA_ASSIGNMENT):
            self._fail(what, f"apiKey {key} is not part of the contract (from {peer})")
            return None
        candidates = [v for v in self._answers if v.api_key == key and v.api_version == version]
        if not candidates:
            self._fail(what, f"{what} is not advertised by this server; the client should not send it")
            return None
        frame = b"\0\0\0\0" + payload
        try:
            body = request_body(frame)
            request = request_class(key).decode(body, version=version)
        except Exception as exc:
            self._fail(what, f"undecodable {what} request: {type(exc).__name__}: {exc}")
            return None
        if key == METADATA:
            base = next((v for v in candidates if not v.expect["topic_error_codes"]), candidates[0])
            return self._serve(base, head.correlation_id, peer, self._metadata(base, version, request))
        for vector in candidates:
            if vector.request_body == body:
                return self._serve(vector, head.correlation_id, peer)
        fields = fields_of(request, request_class(key).json["fields"], version)
        self._fail(what, f"matches no vector (the body must equal a vector's byte for byte): {fields}")
        return None

    def _metadata(self, vector: Vector, version: int, request) -> bytes:
        """The vector's Metadata answer, with this listener as the broker and the named topics unknown."""
        fields = dict(vector.response.fields)
        fields["Brokers"] = [{**b, "Host": self.host, "Port": self.port} for b in fields["Brokers"]]
        fields["Topics"] = []
        message = message_from_fields(MetadataResponse, version, fields)
        names = [t.name for t in request.topics or [] if t.name]
        message.topics = [MetadataResponse.MetadataResponseTopic(
            error_code=self._unknown_topic_code(), name=n, is_internal=False, partitions=[]) for n in names]
        return response_frame(message, 0)

    def _unknown_topic_code(self) -> int:
        vector = self._metadata_unknown_topic
        return next(iter(vector.expect["topic_error_codes"].values())) if vector else 3

    def report(self) -> Report:
        outcomes: list[Outcome] = []
        for vector in self._answers:
            count = self.served.get(vector.name, 0)
            if count:
                outcomes.append(Outcome(vector.name, "served", PASS, f"served {count}x: {vector.summary}"))
            elif vector.api_key == CREATE_REPLICA_ASSIGNMENT:
                outcomes.append(Outcome(vector.name, "served", SKIP, "not requested"))
        if not any(self.served.get(v.name) for v in self._answers if v.api_key == CREATE_REPLICA_ASSIGNMENT):
            outcomes.append(Outcome("client", "requests", FAIL,
                                    "no CreateReplicaAssignment request matched a vector"))
        outcomes += self.failures
        return Report(f"on {self.host}:{self.port}", "client", "request bytes", tuple(outcomes))


__all__ = ["FAIL", "PASS", "SKIP", "Outcome", "Report", "VectorListener", "check_properties", "check_server"]
