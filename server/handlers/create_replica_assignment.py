"""CreateReplicaAssignment (apiKey 68), versions 0-2 (KIP-879).

Turns a request into one placement: which partitions, which replication factor, over
which brokers; runs the configured assignor off the event loop with the request's
timeout; and answers with the assignment or an error code and message. Version 0
carries errors in tagged fields; version 1 in regular fields (schemas/README.md).

Version 1 continues a topic: ``CurrentAssignment`` is the topic's placement now and
``NumPartitions`` its partition count after the change. New partition ids are placed;
if ``ReplicationFactor`` is above the current one, every partition is returned with its
current replicas kept. Only changed partitions are in the response.

Version 2 places one topic of a batch: ``PendingTopics`` (the batch's topics placed before it)
join the cluster view first, so a load-aware assignor spreads the batch as one (KIP-660).
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import random
import threading
import time
from collections.abc import Coroutine
from types import MappingProxyType
from typing import Any, NamedTuple

import structlog

from kafka_replica_assignor.assignors import (
    AssignmentError,
    AssignmentTimeoutError,
    AuthorizationError,
    ClusterView,
    PlacementSpec,
    ReplicaAssignor,
    ReplicaAssignorError,
    create_assignor,
)
from kafka_replica_assignor.assignors.memo import PlacementMemo
from kafka_replica_assignor.assignors.under_replicated import place_under_replicated
from kafka_replica_assignor.assignors.validate import (
    check_node_ids,
    check_size,
    check_topic_name,
    partitions_to_place,
    read_current_assignment,
    read_pending_topics,
)
from kafka_replica_assignor.protocol.errors import error_for_exception
from kafka_replica_assignor.protocol.fast import encode_assignment_body
from kafka_replica_assignor.protocol.frame import MalformedRequest, RequestHeaderPeek, frame
from kafka_replica_assignor.protocol.messages import (
    CreateReplicaAssignmentRequest,
    CreateReplicaAssignmentResponse,
    decode_body,
)
from kafka_replica_assignor.protocol.structure import peek_field

from ..isolation import worker_assignor
from ..placement_slots import placement_owner
from ..security import authorize, current_principal
from ..shared_state import PlacementSettings, ServerState

REQUEST = CreateReplicaAssignmentRequest
API_KEY = REQUEST.API_KEY
MIN_VERSION, MAX_VERSION = REQUEST.valid_versions

log = structlog.get_logger("replica_assignor")
_SIMPLE = create_assignor("default")


class Placement(NamedTuple):
    """One request, interpreted: what to place (the spec), over which view, how, and by when.
    A named tuple, like the job that carries it: built per request on the hot path."""

    spec: PlacementSpec
    cluster: ClusterView
    force_simple: bool
    timeout_ms: int


def interpret(request: CreateReplicaAssignmentRequest, version: int, view: ClusterView,
              max_partitions: int) -> Placement:
    """Translate the request into a placement over the view; the rules (and Kafka's wording)
    are :mod:`kafka_replica_assignor.assignors.validate`'s, which raises a typed error for an invalid request."""
    n = request.num_partitions
    rf = request.replication_factor
    topic = request.topic_name if version >= 1 else None
    check_topic_name(topic)
    check_size(n, max_partitions)
    node_ids = request.node_id
    if node_ids:
        check_node_ids(node_ids, set(view.broker_ids))
        view = view.restricted_to(node_ids)
    entries = request.current_assignment if version >= 1 else None
    current = read_current_assignment((e.partition_id, e.replicas or ()) for e in entries) if entries else {}
    pending = read_pending_topics(
        ((t.topic_name, ((p.partition_id, p.replicas or ()) for p in t.partitions or ()))
         for t in request.pending_topics or ()), topic) if version >= 2 else {}
    if pending:
        check_size(n + sum(map(len, pending.values())), max_partitions)
    # a request naming no topic places under "", where the view keeps its current assignment
    spec = PlacementSpec(topic if topic is not None else "", partitions_to_place(topic, n, rf, current, view), rf)
    return Placement(spec, _with_topic(view, topic, current, pending), request.force_simple_assignment,
                     request.timeout_ms)


def _with_topic(view: ClusterView, topic: str | None, current: dict[int, Any],
                pending: dict[str, dict[int, tuple[int, ...]]] | None = None) -> ClusterView:
    """The view with the request's current assignment standing for the topic's, and the
    pending topics of a batch (v2) standing for any topics of their names."""
    name = topic if topic is not None else ""
    if not current and not pending and name not in view.topics:
        return view
    topics = {**view.topics, **(pending or {})}
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



def hand_over(rng: random.Random) -> random.Random:
    """A generator that continues ``rng`` exactly, for a placement off the loop (seeded answers
    stay reproducible across the process boundary; it crosses as its state). ``rng`` itself
    moves on to a new stream, so the shared unseeded one never hands two placements the same
    draws."""
    handed = random.Random()
    handed.setstate(rng.getstate())
    rng.seed(rng.getrandbits(128))
    return handed


class PlacementJob(NamedTuple):
    """One placement to run, whichever way it runs (inline, in a thread, in a worker process):
    plain, picklable values, never the server's state. A named tuple: one is built per request
    on the hot path (``bench/request_cost.py``)."""

    # the request interpreted on the loop, or the raw body of a large one (over
    # DETACHED_BODY_BYTES), checked, decoded and interpreted where the job runs
    request: Placement | bytes
    version: int
    view: ClusterView | None  # what a raw body is interpreted against
    rng: random.Random  # off the loop, a hand_over() of the request's generator
    principal: str
    settings: PlacementSettings  # the server's, built once


class Outcome(NamedTuple):
    """What a job gives, whichever way it ran: the encoded response body, or the typed error
    to answer with, or a request body that does not decode (the connection closes)."""

    body: bytes = b""
    partitions: int = 0
    error: AssignmentError | None = None
    malformed: MalformedRequest | None = None


def run(job: PlacementJob, assignor: ReplicaAssignor | None = None, memo: PlacementMemo | None = None) -> Outcome:
    """The placement of one job, validated and encoded: the same bytes inline, in a thread or in
    a worker process for the same random state.

    On the event loop the caller passes the server's ``assignor`` and its ``memo`` (small
    placements by an assignor that supports it come from the memo: the same draws give the
    same, already validated and encoded, entry); off the loop the process's own assignor is
    used (built in the zygote before any worker forks). An invalid request or a refusal is an
    :class:`Outcome` with its typed error; only a bug raises (and a worker out of memory, which
    kafka_replica_assignor.server.isolation retires)."""
    try:
        placement = job.request
        if isinstance(placement, bytes):
            try:
                decoded = decode_body(CreateReplicaAssignmentRequest, memoryview(placement), job.version)
            except Exception as exc:  # noqa: BLE001 - a body that does not decode closes the connection
                return Outcome(malformed=MalformedRequest.of(exc))
            assert job.view is not None
            placement = interpret(decoded, job.version, job.view, job.settings.max_partitions)
        spec, cluster = placement.spec, placement.cluster
        if placement.force_simple:
            assignor, cluster = _SIMPLE, cluster.without_racks()
        elif assignor is None:
            assignor = worker_assignor(job.settings.assignor_name)
        version = job.version
        if memo is not None and spec.replication_factor <= len(cluster.brokers):
            entry = memo.place(assignor, spec, cluster, job.principal, rng=job.rng)
            if entry is not None:
                return Outcome(entry.derived(version, functools.partial(encode_assignment_body, version)),
                               len(entry.assignment))
        # KIP-409: identical to assignors.place() unless fewer brokers are alive than the RF
        settings = job.settings
        assignment = place_under_replicated(assignor, spec, cluster, job.principal, rng=job.rng,
                                            enabled=settings.under_replicated,
                                            min_insync_replicas=settings.min_insync_replicas)
        return Outcome(encode_assignment_body(version, assignment), len(assignment))
    except AssignmentError as exc:
        if isinstance(exc.__cause__, MemoryError):
            raise  # a plug-in out of memory: kafka_replica_assignor.server.isolation retires the worker
        return Outcome(error=exc)


# a request body larger than this is decoded, checked and interpreted off the event loop too
# (run() of a job carrying the raw body): walking, decoding and interpreting cost about a
# microsecond per byte, so on the loop a request costs at most a few milliseconds
DETACHED_BODY_BYTES = 8 * 1024


def handle(state: ServerState, header: RequestHeaderPeek,
           body: memoryview) -> bytes | Coroutine[Any, Any, bytes | MalformedRequest]:
    """Decode and validate on the loop; place inline when small, else in the executor. A body
    over DETACHED_BODY_BYTES is not even decoded here: the executor does all of it."""
    version = header.api_version
    if len(body) > DETACHED_BODY_BYTES:
        return _large(state, header, body)
    request = decode_body(CreateReplicaAssignmentRequest, body, version)
    started = time.perf_counter()
    principal = current_principal.get()
    if not authorize(state, principal):
        return _answer(state, header, _unauthorized(principal), started)
    cfg = state.config
    try:
        placement = interpret(request, version, state.source.view(), cfg.max_partitions_per_request)
    except AssignmentError as exc:
        return _answer(state, header, Outcome(error=exc), started)
    seed = cfg.replica_assignor_random_seed
    rng = request_rng(seed, bytes(body) if seed is not None else b"")
    spec = placement.spec
    if (len(spec.partitions) * max(spec.replication_factor, 1) > cfg.inline_assignment_max_replicas
            or not state.assignor_builtin):
        job = PlacementJob(placement, version, None, hand_over(rng), principal, state.placement_settings)
        replicas = len(spec.partitions) * max(spec.replication_factor, 1)
        return _off_loop(state, header, job, started, placement.timeout_ms, state.placement_slots.is_large(replicas))
    try:
        outcome = run(PlacementJob(placement, version, None, rng, principal, state.placement_settings),
                      state.assignor, state.memo)
    except AssignmentError as exc:
        outcome = Outcome(error=exc)
    except Exception as exc:  # framework bug: never crash the connection
        outcome = Outcome(error=ReplicaAssignorError(f"internal error: {exc!r}"))
    return _answer(state, header, outcome, started)


def _large(state: ServerState, header: RequestHeaderPeek,
           body: memoryview) -> bytes | Coroutine[Any, Any, bytes | MalformedRequest]:
    """A body over DETACHED_BODY_BYTES: authorized here, everything else where the job runs."""
    started = time.perf_counter()
    principal = current_principal.get()
    if not authorize(state, principal):
        return _answer(state, header, _unauthorized(principal), started)
    raw = bytes(body)
    seed = state.config.replica_assignor_random_seed
    rng = request_rng(seed, raw if seed is not None else b"")
    # the deadline, read without decoding the body (the fields before timeoutMs are numbers)
    timeout_ms = peek_field(CreateReplicaAssignmentRequest, header.api_version, body, "timeout_ms")
    job = PlacementJob(raw, header.api_version, state.source.view(), hand_over(rng), principal,
                       state.placement_settings)
    return _off_loop(state, header, job, started, timeout_ms, state.placement_slots.is_large(None))


def _unauthorized(principal: str) -> Outcome:
    return Outcome(error=AuthorizationError(f"Principal {principal} is not allowed to call CreateReplicaAssignment."))


async def _off_loop(state: ServerState, header: RequestHeaderPeek, job: PlacementJob, started: float,
                    timeout_ms: int, large: bool) -> bytes | MalformedRequest:
    """The job in the executor (kafka_replica_assignor.server.isolation's worker processes, or threads), with the
    request's timeout as its deadline, once kafka_replica_assignor.server.placement_slots gives it a worker (the wait
    counts in the deadline)."""
    slots, owner = state.placement_slots, placement_owner.get()
    loop = asyncio.get_running_loop()
    deadline = loop.time() + max(timeout_ms, 1) / 1000.0
    admitted = False
    try:
        admitted = await asyncio.wait_for(slots.acquire(owner, large), deadline - loop.time())
        if not admitted:
            raise ReplicaAssignorError(f"The server is busy: {slots.queued} placements wait for a worker "
                                       f"(replica.assignor.max.queued.placements); retry later.")
        future = loop.run_in_executor(state.executor, run, job)
        outcome = await asyncio.wait_for(future, max(deadline - loop.time(), 0.001))
    except TimeoutError:
        outcome = Outcome(error=AssignmentTimeoutError(
            f"Assignor {state.assignor_name} did not finish within timeoutMs={timeout_ms}."))
    except AssignmentError as exc:  # from the pool: a worker that died, ran out of memory, ...
        outcome = Outcome(error=exc)
    except Exception as exc:
        outcome = Outcome(error=ReplicaAssignorError(f"internal error: {exc!r}"))
    finally:
        if admitted:
            slots.release(owner, large)
    if outcome.malformed is not None:
        return outcome.malformed  # the connection closes, as for a small body refused on the loop
    return _answer(state, header, outcome, started)


def _answer(state: ServerState, header: RequestHeaderPeek, outcome: Outcome, started: float) -> bytes:
    """The response frame of an answer or an error, counted and logged (request_handled)."""
    version, correlation_id = header.api_version, header.correlation_id
    elapsed = time.perf_counter() - started
    exc = outcome.error
    if exc is None:
        state.metrics.assignment_handled(state.assignor_name, 0, elapsed)
        log.info("request_handled", api_key=API_KEY, api_version=version, correlation_id=correlation_id,
                 assignor=state.assignor_name, error_code=0, duration_ms=round(elapsed * 1000, 3),
                 partitions=outcome.partitions)
        return frame(correlation_id, outcome.body, flexible_header=True)
    error = error_for_exception(exc)
    message = getattr(exc, "message", None) or str(exc) or error.description
    response = CreateReplicaAssignmentResponse(
        version=version, throttle_time_ms=0, error_code=error.errno, error_message=message,
        replica_assignment=[])
    state.metrics.assignment_handled(state.assignor_name, error.errno, elapsed)
    fields = dict(api_key=API_KEY, api_version=version, correlation_id=correlation_id,
                  assignor=state.assignor_name, error_code=error.errno, duration_ms=round(elapsed * 1000, 3),
                  partitions=0, error_message=getattr(exc, "message", str(exc)))
    if isinstance(exc, ReplicaAssignorError):
        log.warning("assignment_refused", **fields)
    log.info("request_handled", **fields)
    return frame(correlation_id, response.encode(version=version), flexible_header=True)
