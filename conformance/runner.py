"""The server role: hold a server under test to the published vectors.

Every vector meant for servers is sent to the server under test, one at a time, and its
answer judged:

* exact mode compares the answer byte for byte with the vector. Only a server in
  deterministic mode with the reference properties (``replica.assignor.random.seed=42``,
  the default assignor, the vectors' cluster) can pass it: it is how the reference server
  is held to its own published bytes;
* property mode (the default) checks what any correct implementation must do
  (:mod:`kafka_replica_assignor.conformance.properties`); requests a server must refuse close the connection.

Before that, ApiVersions tells which APIs the server has: CreateReplicaAssignment's apiKey
missing fails every CreateReplicaAssignment vector with "not implemented" (nothing is sent
that a Kafka broker would read as ConsumerGroupHeartbeat), and versions the server does not
advertise are skipped.
"""

from __future__ import annotations

import socket
import struct
from collections.abc import Callable
from dataclasses import dataclass, field

from kafka.protocol.api_header import RequestHeader

from kafka_replica_assignor.protocol.frame import peek_header

from .exchange import Exchange
from .properties import check_properties, expected_summary
from .results import FAIL, PASS, SKIP, Outcome, Report
from .vectors import API_VERSIONS, CREATE_REPLICA_ASSIGNMENT, FEATURE_NAME, Vector, VectorSet, decode_response

_LEN = struct.Struct(">i")
_CRA = f"apiKey {CREATE_REPLICA_ASSIGNMENT}"


def _retarget(frame: bytes, version: int) -> bytes:
    """The same request under another api version (the header re-encoded by the codec)."""
    payload = frame[4:]
    head = peek_header(payload)
    header = RequestHeader(request_api_key=head.api_key, request_api_version=version,
                           correlation_id=head.correlation_id, client_id=head.client_id)
    out = bytes(header.encode(flexible=False)) + payload[head.body_offset:]
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
        out.append(Outcome("discovery", _CRA, FAIL,
                           f"{_CRA} (CreateReplicaAssignment) is not implemented: ApiVersions does not list it"))
    else:
        out.append(Outcome("discovery", _CRA, PASS, f"CreateReplicaAssignment v{cra[0]}-v{cra[1]} advertised"))
        if FEATURE_NAME in found.features:
            out.append(Outcome("discovery", "feature", PASS, f"'{FEATURE_NAME}' advertised (ApiVersions v3)"))
        else:
            out.append(Outcome("discovery", "feature", FAIL,
                               f"ApiVersions v3 does not advertise the '{FEATURE_NAME}' feature, so clients cannot "
                               f"tell this server from a Kafka broker, where {_CRA} is ConsumerGroupHeartbeat"))
    return found, out


def _oserror(exc: OSError) -> str:
    if isinstance(exc, (socket.timeout, TimeoutError)):
        return "no answer in time"
    return exc.strerror or type(exc).__name__


def check_server(vectors: VectorSet, host: str, port: int, exact: bool = False, timeout: float = 5.0,
                 opener: Callable[[], socket.socket] | None = None) -> Report:
    """Send every server vector to ``host:port`` and judge the answers. ``opener`` sets up each
    connection instead of plain TCP (TLS, SASL)."""
    target = f"against {host}:{port}"
    mode = "exact bytes" if exact else "properties"
    exchange = Exchange(host, port, timeout, opener)
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
        response = vector.response
        if response is None:  # vector.expects_disconnect
            if answer is None:
                return Outcome(name, check, PASS, "connection closed")
            self.exchange.close()
            return Outcome(name, check, FAIL, f"answered ({len(answer)} bytes) instead of closing the connection")
        if answer is None:
            return Outcome(name, check, FAIL, "closed the connection instead of answering")
        problems = check_properties(vector, answer, response.version, self.vectors.brokers)
        if problems:
            self.exchange.close()  # the connection may be out of step: start the next vector afresh
        if check == "bytes":
            expected = response.frame
            if answer == expected:
                return Outcome(name, check, PASS, f"identical ({len(answer)} bytes)")
            at = next((i for i, (a, b) in enumerate(zip(answer, expected, strict=False)) if a != b),
                      min(len(answer), len(expected)))
            verdict = "; ".join(problems) or \
                "properties hold, so the server is not in the reference's deterministic mode"
            return Outcome(name, check, FAIL,
                           f"bytes differ from offset {at} ({len(answer)} bytes, expected {len(expected)}): {verdict}")
        if problems:
            return Outcome(name, check, FAIL, "; ".join(problems))
        return Outcome(name, check, PASS, expected_summary(vector))

