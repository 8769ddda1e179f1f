"""What any correct answer to a vector must satisfy, whoever produced its bytes.

The answer decodes at the right version with the right correlation id; the error code is
the expected one (with a message, and in v0 in the tagged fields); a success lists exactly
the expected partition ids, each with ReplicationFactor distinct brokers from the allowed
set, spread over the racks, leaders balanced, current replicas kept on continuation, and a
v0 success carries no tagged field (so KIP-879's own schema reads it byte for byte). The
generator applies the same checks to the reference server's answers before it records them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kafka_replica_assignor.assignors.model import ClusterView
from kafka_replica_assignor.assignors.validate import placement_violations

from .vectors import API_VERSIONS, CREATE_REPLICA_ASSIGNMENT, METADATA, Vector, decode_response, response_frame


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


def _api_versions_problems(vector: Vector, decoded: Any) -> list[str]:
    expect = vector.expect
    out = []
    if decoded.error_code != expect["error_code"]:
        out.append(f"error code {decoded.error_code}, expected {expect['error_code']}")
    own = [k for k in decoded.api_keys or [] if k.api_key == API_VERSIONS]
    if not own:
        out.append(f"does not list ApiVersions (apiKey {API_VERSIONS}) itself")
    elif expect["error_code"] == 0 and not own[0].min_version <= vector.api_version <= own[0].max_version:
        out.append(f"lists ApiVersions v{own[0].min_version}-v{own[0].max_version}, "
                   f"yet answered v{vector.api_version}")
    return out


def _metadata_problems(expect: Mapping[str, Any], decoded: Any) -> list[str]:
    out = []
    if len(decoded.brokers or []) < expect["min_brokers"]:
        out.append(f"lists {len(decoded.brokers or [])} brokers, at least {expect['min_brokers']} expected")
    topics = {t.name: t.error_code for t in decoded.topics or []}
    for name, code in expect["topic_error_codes"].items():
        if topics.get(name) != code:
            out.append(f"topic {name}: error code {topics.get(name)}, expected {code}")
    return out


def _assignment_problems(vector: Vector, decoded: Any, version: int, frame: bytes,
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


def _placement_problems(expect: Mapping[str, Any], assignment: dict[int, list[int]], order: list[int],
                        brokers: Mapping[int, str | None]) -> list[str]:
    """The placement rules every answer passes (:func:`kafka_replica_assignor.assignors.validate.placement_violations`),
    over the vector's allowed brokers as the cluster view (``racks_per_partition`` is
    ``min(rf, #racks)`` of those brokers: the rack-spread rule); a partition listed twice is
    the wire's own."""
    out = []
    if len(order) != len(set(order)):
        out.append("a partition is listed twice")
    view = ClusterView.of((b, brokers.get(b)) for b in expect["brokers"])
    out += placement_violations(
        assignment, view, expect["replication_factor"], expect["partitions"],
        current={int(p): kept for p, kept in expect.get("keeps", {}).items()}, keep_order=False,
        rack_spread="racks_per_partition" in expect, leader_skew=expect.get("max_leader_skew"))
    return out[:6]


def _id_ranges(ids: list[int]) -> str:
    if ids and ids == list(range(ids[0], ids[-1] + 1)) and len(ids) > 2:
        return f"{ids[0]}-{ids[-1]}"
    return str(ids)


def expected_summary(vector: Vector) -> str:
    """What a passing answer to ``vector`` looks like, in a few words (the table's detail)."""
    expect = vector.expect
    if vector.expects_disconnect:
        return "connection closed"
    if vector.api_key == CREATE_REPLICA_ASSIGNMENT:
        if expect["error_code"]:
            return f"error code {expect['error_code']} with a message"
        extra = f", {expect['racks_per_partition']} racks each" if "racks_per_partition" in expect else ""
        return (f"partitions {_id_ranges(expect['partitions'])}, RF {expect['replication_factor']} "
                f"on distinct brokers{extra}")
    if vector.api_key == API_VERSIONS:
        return f"error code {expect['error_code']}, v{expect['body_version']} body"
    return "decodes, lists the broker"

