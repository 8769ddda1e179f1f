"""CreateReplicaAssignment (apiKey 68), versions 0-1 (KIP-879).

Turns a request into one placement: which partitions, which replication factor, over
which brokers; runs the configured assignor off the event loop with the request's
timeout; and answers with the assignment or an error code and message. Version 0
carries errors in tagged fields; version 1 in regular fields (schemas/README.md).

Version 1 continues a topic: ``CurrentAssignment`` is the topic's placement now and
``NumPartitions`` its partition count after the change. New partition ids are placed;
if ``ReplicationFactor`` is above the current one, every partition is returned with its
current replicas kept. Only changed partitions are in the response.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import random
import threading
import time
from dataclasses import dataclass
from types import MappingProxyType

import structlog

from assignors import (
    ANONYMOUS,
    AssignmentError,
    AssignmentTimeoutError,
    AuthorizationError,
    BrokerNotAvailableError,
    ClusterView,
    InvalidPartitionsError,
    InvalidReplicaAssignmentError,
    InvalidReplicationFactorError,
    ReplicaAssignorError,
    create_assignor,
)
from assignors.memo import MemoEntry
from assignors.under_replicated import place_under_replicated
from protocol.errors import error_for_exception
from protocol.fast import encode_assignment_body, encode_assignment_frame, frame_body
from protocol.frame import RequestHeaderPeek, frame
from protocol.messages import CreateReplicaAssignmentRequest, CreateReplicaAssignmentResponse, decode_body

from ..security import authorize, current_principal

API_KEY = 68
MIN_VERSION, MAX_VERSION = CreateReplicaAssignmentRequest.valid_versions
FLEXIBLE_FROM = 0

log = structlog.get_logger("replica_assignor")
_SIMPLE = create_assignor("default")


@dataclass(frozen=True, slots=True)
class Placement:
    """One request, interpreted: what to place and over which view."""

    topic: str | None
    partitions: range
    replication_factor: int
    cluster: ClusterView
    force_simple: bool
    timeout_ms: int


def interpret(request, version: int, view: ClusterView, max_partitions: int) -> Placement:
    """Validate the request against the view; raise a typed error with Kafka's wording."""
    n = request.num_partitions
    rf = request.replication_factor
    if n > max_partitions:
        raise InvalidPartitionsError(
            f"Number of partitions {n} is above this server's limit of {max_partitions} per request.")
    node_ids = list(request.node_id or [])
    if node_ids:
        known = set(view.broker_ids)
        dup = sorted({b for b in node_ids if node_ids.count(b) > 1})
        if dup:
            raise InvalidReplicaAssignmentError(f"Duplicate broker ids in NodeId: {dup}.")
        unknown = [b for b in node_ids if b not in known]
        if unknown:
            raise BrokerNotAvailableError(
                f"Broker(s) {unknown} not available: the cluster view has brokers {sorted(known)}.")
        view = view.restricted_to(node_ids)
    topic = request.topic_name if version >= 1 else None
    current = {}
    if version >= 1 and request.current_assignment:
        for entry in request.current_assignment:
            if entry.partition_id in current:
                raise InvalidReplicaAssignmentError(
                    f"Current assignment lists partition {entry.partition_id} twice.")
            reps = list(entry.replicas or [])
            if not reps or len(set(reps)) != len(reps):
                raise InvalidReplicaAssignmentError(
                    f"Current assignment of partition {entry.partition_id} must list distinct brokers, got {reps}.")
            current[entry.partition_id] = tuple(reps)
    if not current:
        return Placement(topic, range(max(n, 0)), rf, _with_topic(view, topic, {}),
                         request.force_simple_assignment, request.timeout_ms)
    count = len(current)
    if sorted(current) != list(range(count)):
        missing = sorted(set(range(count)) - set(current))
        raise InvalidReplicaAssignmentError(
            f"Unexpected existing replica assignment for topic '{topic}', partition id {missing[0] if missing else 0} is missing.")
    rfs = {len(r) for r in current.values()}
    if len(rfs) != 1:
        raise InvalidReplicaAssignmentError(
            f"Inconsistent replication factor in the current assignment of topic '{topic}': {sorted(rfs)}.")
    current_rf = rfs.pop()
    if rf < current_rf:
        raise InvalidReplicationFactorError(
            f"Replication factor {rf} is below the current {current_rf} of topic '{topic}'; it can only be increased.")
    if n < count or (n == count and rf == current_rf):
        raise InvalidPartitionsError(
            f"The number of partitions for a topic can only be increased. Topic {topic} currently has "
            f"{count} partitions, {n} would not be an increase.")
    if rf > current_rf:
        known = set(view.broker_ids)
        for p, reps in current.items():
            gone = [b for b in reps if b not in known]
            if gone:
                raise InvalidReplicaAssignmentError(
                    f"Partition {p} of topic '{topic}' has replicas on brokers {gone}, which are not in the "
                    f"cluster view; repair it before raising the replication factor.")
        partitions = range(n)
    else:
        partitions = range(count, n)
    return Placement(topic, partitions, rf, _with_topic(view, topic, current),
                     request.force_simple_assignment, request.timeout_ms)


def _with_topic(view: ClusterView, topic: str | None, current: dict) -> ClusterView:
    """The view with the request's current assignment standing for the topic's."""
    name = topic if topic is not None else ""
    if not current and name not in view.topics:
        return view
    topics = dict(view.topics)
    if current:
        topics[name] = MappingProxyType(current)
    else:
        topics.pop(name, None)
    return ClusterView(brokers=view.brokers, fenced=view.fenced, offline=view.offline, topics=topics)


_THREAD_RNG = threading.local()


def request_rng(seed: int | None, body: bytes) -> random.Random:
    """Deterministic mode: the same request (body bytes) under the same seed draws the same numbers.

    Without a seed every request draws fresh numbers (as Kafka does) from a generator seeded
    once per thread from the OS: seeding one per request would cost more than the placement.
    """
    if seed is None:
        rng = getattr(_THREAD_RNG, "rng", None)
        if rng is None:
            rng = _THREAD_RNG.rng = random.Random()
        return rng
    digest = hashlib.sha256(seed.to_bytes(16, "big", signed=True) + body).digest()
    return random.Random(int.from_bytes(digest[:16], "big"))


def compute(state, placement: Placement, rng: random.Random,
            principal: str = ANONYMOUS) -> dict[int, list[int]] | MemoEntry:
    """Run the assignor (or Kafka's rack-unaware default when forced) with all checks.

    Small placements by an assignor that supports it come from the memo (assignors.memo):
    the same draws give the same, already validated, entry.
    """
    topic = placement.topic if placement.topic is not None else ""
    if placement.force_simple:
        assignor, cluster = _SIMPLE, placement.cluster.without_racks()
    else:
        assignor, cluster = state.assignor, placement.cluster
    memo = getattr(state, "memo", None)  # a plug-in's worker process has none
    if memo is not None and placement.replication_factor <= len(cluster.brokers):
        entry = memo.place(assignor, topic, placement.partitions, placement.replication_factor, cluster,
                           principal, rng=rng)
        if entry is not None:
            return entry
    cfg = state.config
    # KIP-409: identical to assignors.place() unless fewer brokers are alive than the RF
    return place_under_replicated(
        assignor, topic, placement.partitions, placement.replication_factor, cluster, principal,
        rng=rng, enabled=cfg.enable_under_replicated_topic_creation,
        min_insync_replicas=cfg.min_insync_replicas)


def _encode(version: int, correlation_id: int, assignment: dict[int, list[int]] | MemoEntry | None,
            exc: BaseException | None) -> bytes:
    if type(assignment) is MemoEntry:
        body = assignment.derived(version, functools.partial(encode_assignment_body, version))
        return frame_body(correlation_id, body)
    if exc is None:
        # straight from tuples; byte-identical to the codec (tests/conformance/test_fast_encode.py)
        return encode_assignment_frame(version, correlation_id, assignment)
    error = error_for_exception(exc)
    message = getattr(exc, "message", None) or str(exc) or error.description
    response = CreateReplicaAssignmentResponse(
        version=version, throttle_time_ms=0, error_code=error.errno, error_message=message,
        replica_assignment=[])
    return frame(correlation_id, response.encode(version=version), flexible_header=True)


def handle(state, header: RequestHeaderPeek, body: memoryview):
    """Decode and validate on the loop; place inline when small, else in the executor."""
    version = header.api_version
    request = decode_body(CreateReplicaAssignmentRequest, body, version)
    started = time.perf_counter()
    principal = current_principal.get()
    if not authorize(state, principal):
        return _finish(state, header, None, AuthorizationError(
            f"Principal {principal} is not allowed to call CreateReplicaAssignment."), started)
    try:
        placement = interpret(request, version, state.source.view(), state.config.max_partitions_per_request)
    except AssignmentError as exc:
        return _finish(state, header, None, exc, started)
    seed = state.config.replica_assignor_random_seed
    rng = request_rng(seed, bytes(body) if seed is not None else b"")
    inline = (len(placement.partitions) * max(placement.replication_factor, 1)
              <= state.config.inline_assignment_max_replicas
              and state.assignor_builtin)
    if inline:
        try:
            result = compute(state, placement, rng, principal)
        except AssignmentError as exc:
            return _finish(state, header, None, exc, started)
        except Exception as exc:  # framework bug: never crash the connection
            return _finish(state, header, None, ReplicaAssignorError(f"internal error: {exc!r}"), started)
        return _finish(state, header, result, None, started)
    return _run_in_executor(state, header, placement, rng, started, principal)


async def _run_in_executor(state, header, placement: Placement, rng, started: float, principal: str) -> bytes:
    loop = asyncio.get_running_loop()
    timeout = max(placement.timeout_ms, 1) / 1000.0
    future = loop.run_in_executor(state.executor, compute, state, placement, rng, principal)
    try:
        result = await asyncio.wait_for(future, timeout)
    except asyncio.TimeoutError:
        exc = AssignmentTimeoutError(
            f"Assignor {state.assignor_name} did not finish within timeoutMs={placement.timeout_ms}.")
        return _finish(state, header, None, exc, started)
    except AssignmentError as exc:
        return _finish(state, header, None, exc, started)
    except Exception as exc:
        return _finish(state, header, None, ReplicaAssignorError(f"internal error: {exc!r}"), started)
    return _finish(state, header, result, None, started)


def _finish(state, header: RequestHeaderPeek, result, exc, started: float) -> bytes:
    out = _encode(header.api_version, header.correlation_id, result, exc)
    code = 0 if exc is None else error_for_exception(exc).errno
    elapsed = time.perf_counter() - started
    state.metrics.assignment_handled(state.assignor_name, code, elapsed)
    fields = dict(api_key=API_KEY, api_version=header.api_version, correlation_id=header.correlation_id,
                  assignor=state.assignor_name, error_code=code, duration_ms=round(elapsed * 1000, 3),
                  partitions=(len(result.assignment) if type(result) is MemoEntry else len(result)) if result else 0)
    if exc is not None:
        fields["error_message"] = getattr(exc, "message", str(exc))
        if isinstance(exc, ReplicaAssignorError):
            log.warning("assignment_refused", **fields)
    log.info("request_handled", **fields)
    return out
