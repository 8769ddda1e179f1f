"""Regenerate the published conformance vectors from the codec and a deterministic server.

Most vectors come from the reference server (``source: "server"``): ``replica-assignor-server``
in deterministic mode (``replica.assignor.random.seed``) over the cluster written in the file,
started in a subprocess. A few come from the codec alone (``source: "codec"``): responses no
server gives on demand, such as REQUEST_TIMED_OUT; they are served to clients under test but
not asked of servers. Every reference answer must pass :func:`kafka_replica_assignor.conformance.properties.check_properties`
before it is recorded.

Regenerate after a change to a schema, a handler or an assignor, and review the diff::

    python -m kafka_replica_assignor.conformance.generator --write

``tests/conformance/test_vectors_fresh.py`` fails while the file differs from what this
generator produces, so the file cannot drift from the code.
"""

from __future__ import annotations

import argparse
import json
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import kafka.errors as kafka_errors
from kafka.protocol.api_header import RequestHeader

from kafka_replica_assignor.protocol.errors import ReplicaAssignorFailedError

from .exchange import Exchange
from .properties import check_properties
from .vectors import (
    API_NAMES,
    API_VERSIONS,
    CLIENT_ID,
    CREATE_REPLICA_ASSIGNMENT,
    FEATURE_NAME,
    FORMAT,
    FORMAT_VERSION,
    METADATA,
    REGENERATE,
    decode_response,
    default_vectors_path,
    dumps,
    fields_of,
    message_from_fields,
    parse_vectors,
    request_body,
    request_class,
    request_frame,
    request_header_flexible,
    response_class,
    response_frame,
    tagged_fields_present,
)

_LEN = struct.Struct(">i")

# The cluster and properties of the reference server the vectors were recorded against.
# A server under test must know these brokers (and racks) for the property checks to apply.
REFERENCE_BROKERS: tuple[tuple[int, str], ...] = (
    (0, "/dc1/rack-a"), (1, "/dc1/rack-b"),
    (2, "/dc2/rack-a"), (3, "/dc2/rack-b"),
    (4, "/dc3/rack-a"), (5, "/dc3/rack-b"),
)
REFERENCE_PROPERTIES: Mapping[str, str] = {
    "replica.assignor.class.name": "default",
    "replica.assignor.random.seed": "42",
    "advertised.listeners": "PLAINTEXT://127.0.0.1:9095",
    "node.id": "0",
}


# -- the cases the generator records -----------------------------------------------------

@dataclass(frozen=True, slots=True)
class Case:
    """What to ask and what the contract says must come back; the generator records the bytes."""

    name: str
    summary: str
    api_key: int
    version: int
    request: Mapping[str, Any] = field(default_factory=dict)  # schema field names
    error_code: int | None = 0  # expected top-level error code (None: not applicable)
    disconnect: bool = False
    response_version: int | None = None  # body version of the answer, when not ``version``
    header_version: int | None = None  # send the request under this api version (unsupported-version cases)
    truncate: int = 0  # cut this many bytes off the body (a malformed request)
    roles: tuple[str, ...] = ("server", "client")
    codec_response: Mapping[str, Any] | None = None  # source "codec": the response fields


_CURRENT_6x3 = [{"PartitionId": p, "Replicas": r} for p, r in enumerate(
    [[0, 2, 4], [2, 4, 1], [4, 1, 3], [1, 3, 5], [3, 5, 0], [5, 0, 2]])]
_CURRENT_4x2 = [{"PartitionId": p, "Replicas": r} for p, r in enumerate([[0, 3], [2, 5], [4, 1], [1, 4]])]
_PENDING_ORDERS = {"TopicName": "orders", "Partitions": _CURRENT_4x2}


def _assign(n: int, rf: int, nodes: Sequence[int] = (), simple: bool = False, timeout: int = 60_000,
            **v1: Any) -> dict[str, Any]:
    out = {"NumPartitions": n, "ReplicationFactor": rf, "ForceSimpleAssignment": simple,
           "NodeId": list(nodes), "timeoutMs": timeout}
    if v1:
        out.update({"TopicName": None, "CurrentAssignment": [], **v1})
        if "PendingTopics" in v1:
            out["PendingTopics"] = v1["PendingTopics"]
    return out


def _error_response(version: int, code: int, message: str) -> dict[str, Any]:
    out = {"ErrorCode": code, "ErrorMessage": message, "ReplicaAssignment": []}
    return {"ThrottleTimeMs": 0, **out} if version >= 1 else out


_TIMED_OUT = kafka_errors.RequestTimedOutError.errno
_FAILED = ReplicaAssignorFailedError.errno
_INVALID_PARTITIONS = kafka_errors.InvalidPartitionsError.errno
_INVALID_RF = kafka_errors.InvalidReplicationFactorError.errno
_INVALID_ASSIGNMENT = kafka_errors.InvalidReplicationAssignmentError.errno
_BROKER_NOT_AVAILABLE = kafka_errors.BrokerNotAvailableError.errno
_UNSUPPORTED_VERSION = kafka_errors.UnsupportedVersionError.errno


def cases() -> list[Case]:
    """Every exchange in the published file, in order."""
    out: list[Case] = []
    for v in range(4):
        software = {"ClientSoftwareName": CLIENT_ID, "ClientSoftwareVersion": "1"} if v >= 3 else {}
        out.append(Case(f"api-versions-v{v}", f"ApiVersions v{v}: the supported APIs"
                        + (" and the replica.assignment feature" if v >= 3 else ""), API_VERSIONS, v, software))
    out.append(Case("api-versions-v4-unsupported",
                    "ApiVersions v4, above the server's v3: UNSUPPORTED_VERSION with a v0 body listing "
                    "ApiVersions v0-v3, so that the client retries at v3 (Kafka's fallback)",
                    API_VERSIONS, 4, {"ClientSoftwareName": CLIENT_ID, "ClientSoftwareVersion": "1"},
                    error_code=_UNSUPPORTED_VERSION, response_version=0))
    for v in range(13):
        out.append(Case(f"metadata-v{v}", f"Metadata v{v}, no topics: the server is the only broker",
                        METADATA, v, {"Topics": [] if v == 0 else None}, error_code=None))
    out.append(Case("metadata-v12-unknown-topic",
                    "Metadata v12 for topic orders, no auto-creation: UNKNOWN_TOPIC_OR_PARTITION",
                    METADATA, 12, {"Topics": [{"TopicId": "00000000-0000-0000-0000-000000000000",
                                               "Name": "orders"}],
                                          "AllowAutoTopicCreation": False}, error_code=None))
    out.append(Case("metadata-v13-unsupported", "Metadata v13, above the server's v12: the connection is closed",
                    METADATA, 13, {"Topics": None}, disconnect=True, error_code=None, roles=("server",)))
    cra = CREATE_REPLICA_ASSIGNMENT
    out += [
        Case("create-replica-assignment-v0-rack-aware",
             "12 partitions, RF 3 over every broker: rack-aware, no tagged fields in the success response",
             cra, 0, _assign(12, 3)),
        Case("create-replica-assignment-v0-broker-list", "6 partitions, RF 2 on brokers 1, 3, 5 only",
             cra, 0, _assign(6, 2, [1, 3, 5])),
        Case("create-replica-assignment-v0-force-simple",
             "6 partitions, RF 3, ForceSimpleAssignment: Kafka's rack-unaware algorithm",
             cra, 0, _assign(6, 3, simple=True)),
        Case("create-replica-assignment-v0-single-replica", "1 partition, RF 1", cra, 0, _assign(1, 1)),
        Case("create-replica-assignment-v0-zero-partitions",
             "NumPartitions 0: INVALID_PARTITIONS in the tagged error fields",
             cra, 0, _assign(0, 3), error_code=_INVALID_PARTITIONS),
        Case("create-replica-assignment-v0-zero-replication-factor", "ReplicationFactor 0: INVALID_REPLICATION_FACTOR",
             cra, 0, _assign(3, 0), error_code=_INVALID_RF),
        Case("create-replica-assignment-v0-replication-factor-above-brokers",
             "ReplicationFactor 7 over 6 brokers: INVALID_REPLICATION_FACTOR",
             cra, 0, _assign(3, 7), error_code=_INVALID_RF),
        Case("create-replica-assignment-v0-unknown-broker", "NodeId names broker 99, which the cluster lacks: "
             "BROKER_NOT_AVAILABLE", cra, 0, _assign(3, 2, [0, 99]), error_code=_BROKER_NOT_AVAILABLE),
        Case("create-replica-assignment-v0-duplicate-broker", "NodeId lists broker 1 twice: INVALID_REPLICA_ASSIGNMENT",
             cra, 0, _assign(3, 2, [1, 1, 2]), error_code=_INVALID_ASSIGNMENT),
        Case("create-replica-assignment-v0-truncated",
             "a v0 request cut 3 bytes short: undecodable, the connection is closed",
             cra, 0, _assign(12, 3), disconnect=True, truncate=3, error_code=None, roles=("server",)),
        Case("create-replica-assignment-v1-new-topic", "v1, topic orders, 12 partitions, RF 3: ThrottleTimeMs "
             "and the error fields are regular fields", cra, 1, _assign(12, 3, TopicName="orders")),
        Case("create-replica-assignment-v1-null-topic", "v1 with TopicName null: 6 partitions, RF 2",
             cra, 1, _assign(6, 2, TopicName=None)),
        Case("create-replica-assignment-v1-add-partitions",
             "v1 continuation: orders has 6 partitions at RF 3, NumPartitions 9 places partitions 6-8 only",
             cra, 1, _assign(9, 3, TopicName="orders", CurrentAssignment=_CURRENT_6x3)),
        Case("create-replica-assignment-v1-raise-replication-factor",
             "v1 continuation: RF 2 to 3 for 4 partitions; every partition returned, current replicas kept",
             cra, 1, _assign(4, 3, TopicName="orders", CurrentAssignment=_CURRENT_4x2)),
        Case("create-replica-assignment-v1-fewer-partitions",
             "v1: NumPartitions 4 for a topic with 6: INVALID_PARTITIONS in the regular error fields",
             cra, 1, _assign(4, 3, TopicName="orders", CurrentAssignment=_CURRENT_6x3),
             error_code=_INVALID_PARTITIONS),
        Case("create-replica-assignment-v1-lower-replication-factor",
             "v1: RF 2 for a topic at RF 3: INVALID_REPLICATION_FACTOR",
             cra, 1, _assign(6, 2, TopicName="orders", CurrentAssignment=_CURRENT_6x3), error_code=_INVALID_RF),
        Case("create-replica-assignment-v1-missing-partition",
             "v1: the current assignment skips partition 1: INVALID_REPLICA_ASSIGNMENT",
             cra, 1, _assign(4, 2, TopicName="orders", CurrentAssignment=[_CURRENT_4x2[0], _CURRENT_4x2[2]]),
             error_code=_INVALID_ASSIGNMENT),
        Case("create-replica-assignment-v2-batch",
             "v2: topic payments, 6 partitions, RF 2, placed after topic orders of the same batch (PendingTopics)",
             cra, 2, _assign(6, 2, TopicName="payments", PendingTopics=[_PENDING_ORDERS])),
        Case("create-replica-assignment-v2-pending-twice",
             "v2: a pending topic listed twice: INVALID_REPLICA_ASSIGNMENT",
             cra, 2, _assign(6, 2, TopicName="payments", PendingTopics=[_PENDING_ORDERS, _PENDING_ORDERS]),
             error_code=_INVALID_ASSIGNMENT),
        Case("create-replica-assignment-v3-unsupported",
             "a v2 body sent as v3, above the server's v2: the connection is closed",
             cra, 2, _assign(3, 2, TopicName="orders", PendingTopics=[]), header_version=3, disconnect=True,
             error_code=None, roles=("server",)),
    ]
    for v in (0, 1):
        topic: dict[str, Any] = {"TopicName": "slow-topic"} if v else {}
        out.append(Case(
            f"create-replica-assignment-v{v}-request-timed-out",
            "client role only: the assignor overran timeoutMs 1; REQUEST_TIMED_OUT (retriable)",
            cra, v, _assign(100_000, 3, timeout=1, **topic), error_code=_TIMED_OUT, roles=("client",),
            codec_response=_error_response(v, _TIMED_OUT, "Assignor default did not finish within timeoutMs=1.")))
        topic = {"TopicName": "failing-topic"} if v else {}
        out.append(Case(
            f"create-replica-assignment-v{v}-replica-assignor-failed",
            "client role only: the assignor refused; REPLICA_ASSIGNOR_FAILED (1000, not retriable)",
            cra, v, _assign(5, 2, timeout=30_000, **topic), error_code=_FAILED, roles=("client",),
            codec_response=_error_response(
                v, _FAILED, "assignor ExampleAssignor failed: RuntimeError: the example assignor refuses.")))
    return out


# -- recording ---------------------------------------------------------------------------

class GenerationError(RuntimeError):
    """The reference server did not answer a case the way the contract says."""


def _case_request_frame(case: Case, correlation_id: int) -> bytes:
    cls = request_class(case.api_key)
    message = message_from_fields(cls, case.version, case.request)
    if case.header_version is None and not case.truncate:
        return request_frame(message, correlation_id)
    version = case.version if case.header_version is None else case.header_version
    header = RequestHeader(request_api_key=case.api_key, request_api_version=version,
                           correlation_id=correlation_id, client_id=CLIENT_ID)
    body = bytes(message.encode(version=case.version))
    if case.truncate:
        body = body[:-case.truncate]
    payload = bytes(header.encode(flexible=request_header_flexible(case.api_key, case.version))) + body
    return _LEN.pack(len(payload)) + payload


def _request_message(case: Case, frame: bytes, correlation_id: int) -> dict[str, Any]:
    version = case.version if case.header_version is None else case.header_version
    header = {"RequestApiKey": case.api_key, "RequestApiVersion": version,
              "CorrelationId": correlation_id, "ClientId": CLIENT_ID}
    fields = None
    if not case.truncate:
        cls = request_class(case.api_key)
        decoded = cls.decode(request_body(frame), version=case.version)
        fields = fields_of(decoded, cls.json["fields"], case.version)
    return {"version": case.version, "header": header, "fields": fields, "tagged_fields": [], "hex": frame.hex()}


def _response_message(case: Case, frame: bytes, correlation_id: int) -> dict[str, Any]:
    version = case.version if case.response_version is None else case.response_version
    cls = response_class(case.api_key)
    decoded = decode_response(case.api_key, version, frame)
    if decoded.header.correlation_id != correlation_id:
        raise GenerationError(f"{case.name}: correlation id {decoded.header.correlation_id}, sent {correlation_id}")
    return {"version": version, "header": {"CorrelationId": correlation_id},
            "fields": fields_of(decoded, cls.json["fields"], version),
            "tagged_fields": tagged_fields_present(decoded, cls, version), "hex": frame.hex()}


def _expect(case: Case, request: Mapping[str, Any], response: Mapping[str, Any] | None,
            brokers: Mapping[int, str | None]) -> dict[str, Any]:
    """What any conforming server must answer, derived from the request and the reference cluster."""
    if case.disconnect:
        return {"disconnect": True}
    assert response is not None  # the recorder refuses a case answered otherwise than it says
    fields = response["fields"]
    out: dict[str, Any]
    if case.api_key == API_VERSIONS:
        lists = {str(k["ApiKey"]): [k["MinVersion"], k["MaxVersion"]] for k in fields["ApiKeys"]}
        out = {"error_code": case.error_code, "body_version": response["version"], "lists": lists}
        if case.version >= 3 and case.error_code == 0:
            out["features"] = [f["Name"] for f in fields["SupportedFeatures"]]
        return out
    if case.api_key == METADATA:
        return {"min_brokers": 1,
                "topic_error_codes": {t["Name"]: t["ErrorCode"] for t in fields["Topics"]}}
    if case.error_code:
        return {"error_code": case.error_code}
    req = request["fields"]
    rf = req["ReplicationFactor"]
    allowed = sorted(req["NodeId"] or brokers)
    current = {c["PartitionId"]: c["Replicas"] for c in req.get("CurrentAssignment") or []}
    current_rf = len(next(iter(current.values()))) if current else 0
    n = req["NumPartitions"]
    partitions = list(range(n)) if not current or rf > current_rf else list(range(len(current), n))
    racks = {brokers[b] for b in allowed}
    out = {"error_code": 0, "partitions": partitions, "replication_factor": rf,
                           "brokers": allowed}
    if not req["ForceSimpleAssignment"] and None not in racks:
        out["racks_per_partition"] = min(rf, len(racks))
    if current and rf > current_rf:
        out["keeps"] = {str(p): r for p, r in sorted(current.items())}
    if not current:
        out["max_leader_skew"] = 1
    return out


def record(exchange: Callable[[bytes], bytes | None], reference: Mapping[str, Any]) -> dict[str, Any]:
    """Run every case through ``exchange`` (one request frame in, the response frame or None
    when the server closed the connection out) and return the vectors file's content."""
    brokers = {b["id"]: b.get("rack") for b in reference["cluster"]["brokers"]}
    vectors: list[dict[str, Any]] = []
    for index, case in enumerate(cases(), start=1):
        correlation_id = index
        frame = _case_request_frame(case, correlation_id)
        request = _request_message(case, frame, correlation_id)
        if case.codec_response is not None:
            version = case.version if case.response_version is None else case.response_version
            message = message_from_fields(response_class(case.api_key), version, case.codec_response)
            answer: bytes | None = response_frame(message, correlation_id)
            source = "codec"
        else:
            answer = exchange(frame)
            source = "server"
        if (answer is None) != case.disconnect:
            wanted, got = ("a closed connection", "a response") if case.disconnect else ("a response", "a closed connection")
            raise GenerationError(f"{case.name}: expected {wanted}, got {got}")
        response = None if answer is None else _response_message(case, answer, correlation_id)
        vector = {
            "name": case.name, "summary": case.summary, "api_key": case.api_key,
            "api_name": API_NAMES[case.api_key],
            "api_version": case.version if case.header_version is None else case.header_version,
            "roles": list(case.roles), "source": source, "deterministic": case.api_key != METADATA,
            "request": request, "response": response,
            "expect": _expect(case, request, response, brokers),
        }
        parsed = parse_vectors({"format": FORMAT, "format_version": FORMAT_VERSION, "reference_server": reference,
                                "apis": {}, "vectors": [vector]}).vectors[0]
        if parsed.response is not None:
            problems = check_properties(parsed, parsed.response.frame, parsed.response.version, brokers)
            if problems:
                raise GenerationError(f"{case.name}: the reference answer breaks the contract: {'; '.join(problems)}")
        vectors.append(vector)
    return {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "about": f"Wire vectors for CreateReplicaAssignment (apiKey {CREATE_REPLICA_ASSIGNMENT}, KIP-879) and the APIs a client needs "
                 "around it. Frames are hex: 4-byte length, header, body. Field names are the schemas' own. "
                 "See docs/conformance.md and schemas/README.md.",
        "regenerate": REGENERATE,
        "reference_server": dict(reference),
        "apis": _apis(vectors),
        "vectors": vectors,
    }


def _apis(vectors: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The contract's APIs and the versions the reference server advertised for them."""
    advertised = next(v["response"]["fields"]["ApiKeys"] for v in vectors
                      if v["api_key"] == API_VERSIONS and v["expect"]["error_code"] == 0)
    ranges = {k["ApiKey"]: [k["MinVersion"], k["MaxVersion"]] for k in advertised}
    out: dict[str, Any] = {}
    for key, name in API_NAMES.items():
        out[name] = {"api_key": key, "versions": ranges[key]}
    out[API_NAMES[CREATE_REPLICA_ASSIGNMENT]]["feature"] = FEATURE_NAME
    return out


def reference_description() -> dict[str, Any]:
    return {
        "command": "replica-assignor-server",
        "properties": dict(REFERENCE_PROPERTIES),
        "cluster": {"brokers": [{"id": b, "rack": r} for b, r in REFERENCE_BROKERS], "partitions": []},
    }



@contextmanager
def reference_server(extra: Mapping[str, str] | None = None, timeout: float = 30.0) -> Iterator[tuple[str, int]]:
    """``replica-assignor-server`` in deterministic mode over the reference cluster, in a
    subprocess on 127.0.0.1:0; yields its host and port."""
    reference = reference_description()
    with tempfile.TemporaryDirectory(prefix="vectors-") as tmp:
        cluster = Path(tmp) / "cluster.json"
        cluster.write_text(json.dumps(reference["cluster"]), encoding="utf-8")
        props = {**reference["properties"], **(extra or {}), "listeners": "PLAINTEXT://127.0.0.1:0",
                 "log.format": "json", "cluster.metadata.file": str(cluster)}
        argv = [sys.executable, "-m", "kafka_replica_assignor.server.main"]
        for key, value in props.items():
            argv += ["--override", f"{key}={value}"]
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        stdout = proc.stdout
        assert stdout is not None  # stdout=PIPE
        drain = threading.Thread(target=stdout.read, daemon=True)  # keeps the pipe from filling up
        try:
            port = _started_port(proc, timeout)
            drain.start()
            yield "127.0.0.1", port
        finally:
            if proc.poll() is None:
                proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            if drain.is_alive():
                drain.join(5)
            stdout.close()


def _started_port(proc: subprocess.Popen[str], timeout: float) -> int:
    stdout = proc.stdout
    assert stdout is not None  # started with stdout=PIPE
    deadline = time.monotonic() + timeout
    seen: list[str] = []
    while time.monotonic() < deadline:
        line = stdout.readline()
        if not line:
            raise GenerationError(f"the reference server exited with {proc.wait()}: {''.join(seen[-5:])}")
        seen.append(line)
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            continue
        if event.get("event") == "server_started":
            return int(event["port"])
    raise GenerationError("the reference server did not log server_started in time")


def generate() -> dict[str, Any]:
    """The vectors file's content, recorded now from the codec and a deterministic server."""
    with reference_server() as (host, port):
        exchange = Exchange(host, port)
        try:
            return record(exchange, reference_description())
        finally:
            exchange.close()



def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kafka_replica_assignor.conformance.generator",
                                     description="Regenerate the published conformance vectors.")
    parser.add_argument("--write", action="store_true", help="write the file (default: print to stdout)")
    parser.add_argument("--output", metavar="FILE", help="where to write (default: the packaged vectors file)")
    args = parser.parse_args(argv)
    text = dumps(generate())
    if not args.write:
        sys.stdout.write(text)
        return 0
    target = Path(args.output or default_vectors_path())
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    print(f"wrote {len(json.loads(text)['vectors'])} vectors to {target}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
