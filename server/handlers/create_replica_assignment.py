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
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import structlog

from assignors import (
    ANONYMOUS,
    Assignment,
    AssignmentError,
    AssignmentTimeoutError,
    AuthorizationError,
    ClusterView,
    ReplicaAssignorError,
    create_assignor,
)
from assignors.memo import MemoEntry
from assignors.under_replicated import place_under_replicated
from assignors.validate import (
    check_node_ids,
    check_size,
    check_topic_name,
    partitions_to_place,
    read_current_assignment,
    read_pending_topics,
)
from protocol.errors import error_for_exception
from protocol.fast import encode_assignment_body, encode_assignment_frame
from protocol.frame import MalformedFrameError, RequestHeaderPeek, frame
from protocol.messages import CreateReplicaAssignmentRequest, CreateReplicaAssignmentResponse, decode_body
from protocol.structure import StructureError, peek_field

from ..isolation import worker_assignor
from ..security import authorize, current_principal
from ..state import ServerState

REQUEST = CreateReplicaAssignmentRequest
API_KEY = REQUEST.API_KEY
MIN_VERSION, MAX_VERSION = REQUEST.valid_versions

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


def interpret(request: CreateReplicaAssignmentRequest, version: int, view: ClusterView,
              max_partitions: int) -> Placement:
    """Translate the request into a placement over the view; the rules (and Kafka's wording)
    are :mod:`assignors.validate`'s, which raises a typed error for an invalid request."""
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
    return Placement(topic, partitions_to_place(topic, n, rf, current, view), rf,
                     _with_topic(view, topic, current, pending), request.force_simple_assignment,
                     request.timeout_ms)


def _with_topic(view: ClusterView, topic: str | None, current: dict, pending: dict | None = None) -> ClusterView:
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


def hand_over(rng: random.Random) -> tuple[Any, ...]:
    """The generator's state, for a placement off the loop to continue exactly (seeded answers
    stay reproducible across the process boundary). The generator itself moves on to a new
    stream, so the shared unseeded one never hands two placements the same draws."""
    handed = rng.getstate()
    rng.seed(rng.getrandbits(128))
    return handed


def compute(state: ServerState, placement: Placement, rng: random.Random,
            principal: str = ANONYMOUS) -> Assignment | MemoEntry:
    """On the event loop: run the assignor (or Kafka's rack-unaware default when forced) with
    all checks.

    Small placements by an assignor that supports it come from the memo (assignors.memo):
    the same draws give the same, already validated, entry.
    """
    topic = placement.topic if placement.topic is not None else ""
    if placement.force_simple:
        assignor, cluster = _SIMPLE, placement.cluster.without_racks()
    else:
        assignor, cluster = state.assignor, placement.cluster
    memo = state.memo
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


def place_detached(assignor_name: str, placement: Placement, rng_state: tuple[Any, ...], principal: str,
                   under_replicated: bool, min_insync_replicas: int) -> Assignment:
    """Off the event loop: the placement :func:`compute` makes, from plain picklable values.

    What the executor runs (a worker process of server.isolation, or a thread): the
    generator travels as its state (:func:`hand_over`) and is continued by a fresh one; the
    assignor is the running process's own (:func:`server.isolation.worker_assignor`, built
    in the zygote before any worker forks); ``under_replicated`` and ``min_insync_replicas``
    are the KIP-409 settings. No memo: the same answer as :func:`compute` for the same state.
    """
    rng = random.Random()
    rng.setstate(rng_state)
    if placement.force_simple:
        assignor, cluster = _SIMPLE, placement.cluster.without_racks()
    else:
        assignor, cluster = worker_assignor(assignor_name), placement.cluster
    return place_under_replicated(
        assignor, placement.topic if placement.topic is not None else "", placement.partitions,
        placement.replication_factor, cluster, principal, rng=rng, enabled=under_replicated,
        min_insync_replicas=min_insync_replicas)


# a request body larger than this is decoded, checked and interpreted off the event loop too
# (answer_detached): walking, decoding and interpreting cost about a microsecond per byte, so
# on the loop a request costs at most a few milliseconds
DETACHED_BODY_BYTES = 8 * 1024


def answer_detached(assignor_name: str, request: Placement | bytes, version: int, view: ClusterView | None,
                    max_partitions: int, rng_state: tuple[Any, ...], principal: str, under_replicated: bool,
                    min_insync_replicas: int) -> tuple[Any, ...]:
    """Off the event loop: a whole answer, so that nothing of the request's size runs on the loop.

    ``request`` is a :class:`Placement` (a request decoded on the loop) or the raw body of a
    large request (over :data:`DETACHED_BODY_BYTES`), which is checked, decoded and interpreted
    here against ``view``, as :func:`handle` does on the loop. Then :func:`place_detached`
    places and validates, and the response body is encoded here too. Returns plain values
    (what a worker process may send back): ``("answer", response body, partitions)``, or
    ``("malformed", reason, offset, error)`` for a body that does not decode (the connection
    closes, as for a small one). Invalid requests raise the typed errors of ``assignors``."""
    if isinstance(request, bytes):
        assert view is not None
        try:
            decoded = decode_body(CreateReplicaAssignmentRequest, memoryview(request), version)
        except StructureError as exc:
            return ("malformed", exc.reason, exc.offset, str(exc))
        except Exception as exc:  # noqa: BLE001 - a body that does not decode closes the connection
            return ("malformed", None, None, f"{type(exc).__name__}: {exc}")
        placement = interpret(decoded, version, view, max_partitions)
    else:
        placement = request
    assignment = place_detached(assignor_name, placement, rng_state, principal, under_replicated,
                                min_insync_replicas)
    return ("answer", encode_assignment_body(version, assignment), len(assignment))


def _encode(version: int, correlation_id: int, assignment: Assignment | MemoEntry | _Encoded | None,
            exc: BaseException | None) -> bytes:
    if type(assignment) is MemoEntry:
        body = assignment.derived(version, functools.partial(encode_assignment_body, version))
        return frame(correlation_id, body, flexible_header=True)
    if exc is None:
        if isinstance(assignment, _Encoded):  # encoded off the loop (answer_detached)
            return frame(correlation_id, assignment.body, flexible_header=True)
        assert assignment is not None and not isinstance(assignment, MemoEntry)
        # straight from tuples; byte-identical to the codec (tests/conformance/test_fast_encode.py)
        return encode_assignment_frame(version, correlation_id, assignment)
    error = error_for_exception(exc)
    message = getattr(exc, "message", None) or str(exc) or error.description
    response = CreateReplicaAssignmentResponse(
        version=version, throttle_time_ms=0, error_code=error.errno, error_message=message,
        replica_assignment=[])
    return frame(correlation_id, response.encode(version=version), flexible_header=True)


def handle(state: ServerState, header: RequestHeaderPeek,
           body: memoryview) -> bytes | Coroutine[Any, Any, bytes]:
    """Decode and validate on the loop; place inline when small, else in the executor. A body
    over DETACHED_BODY_BYTES is not even decoded here: the executor does all of it."""
    version = header.api_version
    if len(body) > DETACHED_BODY_BYTES:
        return _detached_body(state, header, body)
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
    return _run_in_executor(state, header, placement, None, hand_over(rng), started, principal,
                            placement.timeout_ms)


def _detached_body(state: ServerState, header: RequestHeaderPeek, body: memoryview) -> bytes | Coroutine[Any, Any, bytes]:
    """A large request: authorized here, everything else in the executor (answer_detached)."""
    started = time.perf_counter()
    principal = current_principal.get()
    if not authorize(state, principal):
        return _finish(state, header, None, AuthorizationError(
            f"Principal {principal} is not allowed to call CreateReplicaAssignment."), started)
    raw = bytes(body)
    seed = state.config.replica_assignor_random_seed
    rng = request_rng(seed, raw if seed is not None else b"")
    # the deadline, read without decoding the body (the fields before timeoutMs are numbers)
    timeout_ms = peek_field(CreateReplicaAssignmentRequest, header.api_version, body, "timeout_ms")
    return _run_in_executor(state, header, raw, state.source.view(), hand_over(rng), started, principal,
                            timeout_ms)


async def _run_in_executor(state: ServerState, header: RequestHeaderPeek, request: Placement | bytes,
                           view: ClusterView | None, rng_state: tuple[Any, ...], started: float, principal: str,
                           timeout_ms: int) -> bytes:
    loop = asyncio.get_running_loop()
    timeout = max(timeout_ms, 1) / 1000.0
    cfg = state.config
    future = loop.run_in_executor(state.executor, answer_detached, state.assignor_name, request,
                                  header.api_version, view, cfg.max_partitions_per_request, rng_state, principal,
                                  cfg.enable_under_replicated_topic_creation, cfg.min_insync_replicas)
    try:
        result = await asyncio.wait_for(future, timeout)
    except TimeoutError:
        exc = AssignmentTimeoutError(
            f"Assignor {state.assignor_name} did not finish within timeoutMs={timeout_ms}.")
        return _finish(state, header, None, exc, started)
    except AssignmentError as exc:
        return _finish(state, header, None, exc, started)
    except Exception as exc:
        return _finish(state, header, None, ReplicaAssignorError(f"internal error: {exc!r}"), started)
    if result[0] == "malformed":
        _, reason, offset, error = result
        raise StructureError(reason, offset) if reason is not None else MalformedFrameError(error)
    _, response_body, partitions = result
    return _finish(state, header, _Encoded(response_body, partitions), None, started)


class _Encoded:
    """A response body encoded off the loop (answer_detached), and how many partitions it has."""

    __slots__ = ("body", "partitions")

    def __init__(self, body: bytes, partitions: int) -> None:
        self.body = body
        self.partitions = partitions

    def __len__(self) -> int:
        return self.partitions


def _finish(state: ServerState, header: RequestHeaderPeek, result: Assignment | MemoEntry | _Encoded | None,
            exc: BaseException | None, started: float) -> bytes:
    out = _encode(header.api_version, header.correlation_id, result, exc)
    code = 0 if exc is None else error_for_exception(exc).errno
    elapsed = time.perf_counter() - started
    state.metrics.assignment_handled(state.assignor_name, code, elapsed)
    if exc is None:  # the common line, without a dict of its fields in between
        log.info("request_handled", api_key=API_KEY, api_version=header.api_version,
                 correlation_id=header.correlation_id, assignor=state.assignor_name, error_code=0,
                 duration_ms=round(elapsed * 1000, 3),
                 partitions=len(result.assignment) if isinstance(result, MemoEntry) else len(result) if result else 0)
        return out
    fields = dict(api_key=API_KEY, api_version=header.api_version, correlation_id=header.correlation_id,
                  assignor=state.assignor_name, error_code=code, duration_ms=round(elapsed * 1000, 3), partitions=0)
    if exc is not None:
        fields["error_message"] = getattr(exc, "message", str(exc))
        if isinstance(exc, ReplicaAssignorError):
            log.warning("assignment_refused", **fields)
    log.info("request_handled", **fields)
    return out
