"""Validation, once: the rules every request meets before any assignor runs, and every answer after.

Goals
    One home for each rule, used by everyone who needs it: the server's request reader
    (wire rules on ``NodeId`` and ``CurrentAssignment``), the framework (:func:`kafka_replica_assignor.assignors.base.place`
    and the KIP-409 path, before any assignor runs), the fast check every answer passes
    (:func:`validate_assignment`), the property tests and the conformance kit (the same
    placement rules as lists of messages, :func:`placement_violations`). Assignors assume
    valid input, as Kafka's placers do.

Constraints
    - Kafka's order, error classes and messages: partitions > 0 (:class:`InvalidPartitionsError`),
      then 0 < replication factor (:class:`InvalidReplicationFactorError`), then replication
      factor <= brokers. The wire rules raise the classes the published vectors expect.
    - Linear in the size of the request: a NodeId list of 40,000 ids is checked in one pass.
    - :func:`validate_assignment` is on every answer's path: whole-batch set checks run in C
      first; the per-partition rules run only to name what is wrong, in a fixed order.
    - Standard library only; no rule is written twice (each message comes from one function).

Algorithm
    *A request over the wire* (:func:`check_topic_name`, :func:`check_size`, :func:`check_node_ids`,
    :func:`read_current_assignment`, :func:`partitions_to_place`): a topic name, when there is
    one, follows Kafka's rule (1-249 characters of ``[a-zA-Z0-9._-]``, not ``.`` or ``..``,
    checked first, as a broker does); the size cap; NodeId without
    duplicates (counted, not searched) and every id a broker of the view; a current assignment
    lists each partition once with distinct replicas; its ids are 0..n-1, with one replication
    factor, which may only be raised; the partition count may only grow (or the replication
    factor must); replicas of partitions whose replication factor is raised are on brokers
    of the view. The result is the range of partition ids to place.

    *A request to the framework* (:func:`check_request`, once per placement): the three counts
    above (:func:`check_preconditions`), no negative partition id, and for each requested
    partition that exists (id order): its replicas on brokers of the view, and no more of them
    than the replication factor; then, when a partition is new, an unfenced broker to lead it
    (Kafka's ``"All brokers are currently fenced."``).

    *An answer* (:func:`validate_assignment`): a mapping from exactly the requested integer ids
    to lists of ``replication_factor`` distinct brokers of the view (negative placeholders where
    allowed, never leading), current replicas kept. The same rules, each as a message, and the
    optional ones (order of kept replicas, no fenced leader, rack spread, leader and replica
    balance) are listed by :func:`placement_violations`. Where the view has fenced brokers, the
    fenced rule too (:func:`fenced_violations`): none leads a partition it did not lead, and none
    takes a new replica while an unfenced broker of the view is not in the partition.

Example
    Brokers 0-3, partitions 0-1, replication factor 2, answer ``{0: [0, 9], 1: [1, 1]}``:
    :func:`validate_assignment` raises ``partition 0: broker 9 is not in the cluster view``;
    :func:`placement_violations` lists that and ``partition 1: duplicate broker in replicas [1, 1]``.
    A request with NodeId ``[1, 2, 1]`` raises ``Duplicate broker ids in NodeId: [1].``
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Container, Iterable, Iterator, Mapping, Sequence
from itertools import chain
from typing import Any

from .errors import (
    BrokerNotAvailableError,
    InvalidPartitionsError,
    InvalidReplicaAssignmentError,
    InvalidReplicationFactorError,
    InvalidTopicError,
    ReplicaAssignorError,
)
from .model import Assignment, ClusterView

__all__ = [
    "ALL_FENCED_MESSAGE",
    "balance_violations",
    "check_counts",
    "check_existing_partitions",
    "check_node_ids",
    "check_partition_ids",
    "check_preconditions",
    "check_request",
    "check_size",
    "check_topic_name",
    "check_unfenced_leader",
    "fenced_violations",
    "leader_counts",
    "partitions_to_place",
    "placement_violations",
    "read_current_assignment",
    "replica_counts",
    "validate_assignment",
]


# -- a request over the wire -----------------------------------------------------------------

TOPIC_NAME_MAX_LENGTH = 249
_TOPIC_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")


def check_topic_name(topic: str | None) -> None:
    """Kafka's rule for topic names (``org.apache.kafka.common.internals.Topic``), with its
    messages; ``None`` (no name: v0, or a null TopicName) passes. The length is counted in
    UTF-16 code units, as Java counts it."""
    if topic is None:
        return
    if not topic:
        reason = "the empty string is not allowed"
    elif topic in (".", ".."):
        reason = f"'{topic}' is not allowed"
    elif (len(topic) if topic.isascii() else len(topic.encode("utf-16-le")) // 2) > TOPIC_NAME_MAX_LENGTH:
        reason = f"the length of '{topic}' is longer than the max allowed length {TOPIC_NAME_MAX_LENGTH}"
    elif not _TOPIC_NAME_CHARS.issuperset(topic):
        reason = f"'{topic}' contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'"
    else:
        return
    raise InvalidTopicError(f"Topic name is invalid: {reason}")


def check_size(n_partitions: int, max_partitions: int) -> None:
    """The server's cap on the partitions of one request."""
    if n_partitions > max_partitions:
        raise InvalidPartitionsError(
            f"Number of partitions {n_partitions} is above this server's limit of {max_partitions} per request.")


def check_node_ids(node_ids: Sequence[int], known: Collection[int]) -> None:
    """A request's NodeId list: no id twice, then every id a broker of the view. Linear."""
    if len(set(node_ids)) != len(node_ids):
        dup = sorted(b for b, count in Counter(node_ids).items() if count > 1)
        raise InvalidReplicaAssignmentError(f"Duplicate broker ids in NodeId: {_some(dup)}.")
    known = known if isinstance(known, (set, frozenset)) else set(known)
    unknown = [b for b in node_ids if b not in known]
    if unknown:
        # as Kafka, the message names the offending broker (the first); it never grows with the request
        more = f" (and {len(unknown) - 1} more)" if len(unknown) > 1 else ""
        raise BrokerNotAvailableError(
            f"Broker {unknown[0]} not available{more}: the cluster view has brokers {_some(sorted(known))}.")


_ECHO_MAX = 10  # ids an error message lists at most


def _some(ids: Sequence[int]) -> str:
    """At most ``_ECHO_MAX`` ids, then how many more: an error message never grows with the request."""
    if len(ids) <= _ECHO_MAX:
        return str(list(ids))
    return "[" + ", ".join(map(str, ids[:_ECHO_MAX])) + f", ... and {len(ids) - _ECHO_MAX} more]"


def read_current_assignment(entries: Iterable[tuple[int, Sequence[int]]]) -> dict[int, tuple[int, ...]]:
    """A request's current assignment, each partition once and each with distinct brokers."""
    current: dict[int, tuple[int, ...]] = {}
    for partition, replicas in entries:
        if partition in current:
            raise InvalidReplicaAssignmentError(f"Current assignment lists partition {partition} twice.")
        reps = tuple(replicas)
        if not reps or len(set(reps)) != len(reps):
            raise InvalidReplicaAssignmentError(
                f"Current assignment of partition {partition} must list distinct brokers, got {list(reps)}.")
        current[partition] = reps
    return current


def read_pending_topics(entries: Iterable[tuple[str, Iterable[tuple[int, Sequence[int]]]]],
                        topic: str | None) -> dict[str, dict[int, tuple[int, ...]]]:
    """A request's pending topics (v2: placed earlier in the same batch, not yet created), each
    named validly, once, and not the request's own topic; their partitions as
    :func:`read_current_assignment` reads a current assignment."""
    pending: dict[str, dict[int, tuple[int, ...]]] = {}
    for name, partitions in entries:
        check_topic_name(name)
        if name in pending or name == topic:
            raise InvalidReplicaAssignmentError(
                f"Pending topic '{name}' is listed twice or is the topic being placed.")
        pending[name] = read_current_assignment(partitions)
    return pending


def partitions_to_place(topic: str | None, n_partitions: int, replication_factor: int,
                        current: Mapping[int, Sequence[int]], cluster: ClusterView) -> range:
    """The partition ids a request asks for, given the topic's current assignment.

    A new topic: ``0..n-1``. An existing one (Kafka's add-partitions rules): its ids are
    ``0..count-1`` with one replication factor; that may only be raised, and the partition
    count only grow unless it is; a raised replication factor returns every partition, whose
    current replicas must be on brokers of ``cluster``; otherwise only the new ids.
    """
    if not current:
        return range(max(n_partitions, 0))
    count = len(current)
    if sorted(current) != list(range(count)):
        missing = sorted(set(range(count)) - set(current))
        raise InvalidReplicaAssignmentError(
            f"Unexpected existing replica assignment for topic '{topic}', "
            f"partition id {missing[0] if missing else 0} is missing.")
    rfs = {len(r) for r in current.values()}
    if len(rfs) != 1:
        raise InvalidReplicaAssignmentError(
            f"Inconsistent replication factor in the current assignment of topic '{topic}': {sorted(rfs)}.")
    current_rf = rfs.pop()
    if replication_factor < current_rf:
        raise InvalidReplicationFactorError(
            f"Replication factor {replication_factor} is below the current {current_rf} of topic '{topic}'; "
            f"it can only be increased.")
    if n_partitions < count or (n_partitions == count and replication_factor == current_rf):
        raise InvalidPartitionsError(
            f"The number of partitions for a topic can only be increased. Topic {topic} currently has "
            f"{count} partitions, {n_partitions} would not be an increase.")
    if replication_factor == current_rf:
        return range(count, n_partitions)
    known = set(cluster.broker_ids)
    for p, reps in current.items():
        gone = [b for b in reps if b not in known]
        if gone:
            raise InvalidReplicaAssignmentError(
                f"Partition {p} of topic '{topic}' has replicas on brokers {gone}, which are not in the "
                f"cluster view; repair it before raising the replication factor.")
    return range(n_partitions)


# -- a request to the framework ----------------------------------------------------------------

def check_counts(n_partitions: int, replication_factor: int, available: int) -> None:
    """Kafka's three checks, in Kafka's order (``AdminUtils.assignReplicasToBrokers``)."""
    if n_partitions <= 0:
        raise InvalidPartitionsError("Number of partitions must be larger than 0.")
    if replication_factor <= 0:
        raise InvalidReplicationFactorError("Replication factor must be larger than 0.")
    if replication_factor > available:
        raise InvalidReplicationFactorError(
            f"Replication factor: {replication_factor} larger than available brokers: {available}."
        )


def check_preconditions(n_partitions: int, replication_factor: int, cluster: ClusterView) -> None:
    """:func:`check_counts` over the brokers of ``cluster``."""
    check_counts(n_partitions, replication_factor, len(cluster.brokers))


def check_partition_ids(partitions: Sequence[int]) -> None:
    """No negative partition id (constant time for a range)."""
    if isinstance(partitions, range):
        if not partitions or (partitions.start >= 0 and partitions[-1] >= 0):
            return
        lowest = min(partitions[0], partitions[-1])
    else:
        lowest = min(partitions, default=0)
    if lowest < 0:
        raise InvalidPartitionsError(f"Partition ids must not be negative, got {lowest}.")


def check_existing_partitions(topic_name: str | None, partitions: Sequence[int], replication_factor: int,
                              cluster: ClusterView, current: Mapping[int, Sequence[int]] | None = None) -> None:
    """Requested partitions that exist, in id order: current replicas on brokers of the view,
    and no more of them than the replication factor (it may only be raised).

    ``current`` is ``cluster.topic_assignment(topic_name)``, when the caller has it already.
    """
    if current is None:
        current = cluster.topic_assignment(topic_name)
    if not current:
        return
    wanted = partitions if isinstance(partitions, range) else set(partitions)
    raised = sorted(p for p in current if p in wanted)
    if not raised:
        return
    known = set(cluster.broker_ids)
    for p in raised:
        gone = [b for b in current[p] if b not in known]
        if gone:
            raise ReplicaAssignorError(
                f"Partition {p} of topic {topic_name}: current replicas {gone} are not available brokers."
            )
        if len(current[p]) > replication_factor:
            raise InvalidReplicationFactorError(
                f"Partition {p} of topic {topic_name} already has {len(current[p])} replicas; "
                f"replication factor {replication_factor} would not be an increase."
            )


ALL_FENCED_MESSAGE = "All brokers are currently fenced."
"""Kafka's ``StripedReplicaPlacer`` refusal, with its class (:class:`InvalidReplicationFactorError`)."""


def check_unfenced_leader(partitions: Sequence[int], cluster: ClusterView,
                          current: Mapping[int, Sequence[int]]) -> None:
    """A new partition needs an unfenced broker to lead it (a partition that exists keeps its leader)."""
    if cluster.fenced and len(cluster.fenced) == len(cluster.brokers):
        if any(p not in current for p in partitions):
            raise InvalidReplicationFactorError(ALL_FENCED_MESSAGE)


def check_request(topic_name: str | None, partitions: Sequence[int], replication_factor: int,
                  cluster: ClusterView, current: Mapping[int, Sequence[int]] | None = None) -> None:
    """Every framework-level rule, in order: what :func:`kafka_replica_assignor.assignors.base.place` checks once.

    ``current`` is ``cluster.topic_assignment(topic_name)``, when the caller has it already.
    """
    check_preconditions(len(partitions), replication_factor, cluster)
    check_partition_ids(partitions)
    check_existing_partitions(topic_name, partitions, replication_factor, cluster, current)
    check_unfenced_leader(partitions, cluster, current if current is not None else
                          cluster.topic_assignment(topic_name))


# -- an answer: one rule per function ----------------------------------------------------------

def _partition_ids_problem(got: Collection[int], partitions: Iterable[int]) -> str:
    wanted, have = set(partitions), set(got)
    missing = sorted(wanted - have)[:10]
    extra = sorted(have - wanted)[:10]
    return f"the wrong partition ids (missing {missing}, unexpected {extra})"


def _shape_problem(p: int, replicas: object) -> str | None:
    if isinstance(replicas, (str, bytes)) or not isinstance(replicas, Sequence):
        return f"partition {p}: replicas must be a list of broker ids"
    return None


def _count_problem(p: int, reps: Sequence[int], replication_factor: int) -> str | None:
    if len(reps) != replication_factor:
        return f"partition {p}: {len(reps)} replicas returned, replication factor is {replication_factor}"
    return None


def _duplicate_problem(p: int, reps: Sequence[int]) -> str | None:
    if len(set(reps)) != len(reps):
        return f"partition {p}: duplicate broker in replicas {list(reps)}"
    return None


def _unknown_problem(p: int, reps: Sequence[int], known: frozenset[int], placeholders: bool) -> str | None:
    """The first replica that is no broker of the view (where all are, by equality: see
    :func:`_integer_problem` for ``True`` or ``1.0`` standing for broker 1)."""
    if known.issuperset(reps):
        return None
    for b in reps:
        if isinstance(b, bool) or not isinstance(b, int):
            return f"partition {p}: replicas must be integers, got {list(reps[:10])}"
        if b < 0:
            if not placeholders:
                return f"partition {p}: placeholder {b} not allowed"
        elif b not in known:
            return f"partition {p}: broker {b} is not in the cluster view"
    return None


def _kept_problem(p: int, reps: Sequence[int], kept: Sequence[int] | None) -> str | None:
    if kept is not None and not set(reps).issuperset(kept):
        return f"partition {p}: current replicas {list(kept)} must be kept, got {list(reps)}"
    return None


def _prefix_problem(p: int, reps: Sequence[int], kept: Sequence[int] | None) -> str | None:
    if kept is not None and list(reps[:len(kept)]) != list(kept):
        return f"partition {p}: current replicas {list(kept)} are not a prefix of {list(reps)}"
    return None


def _integer_problem(p: int, reps: Sequence[int]) -> str | None:
    if any(type(b) is not int for b in reps):
        return f"partition {p}: replicas must be integers, got {list(reps[:10])}"
    return None


def _placeholder_leader_problem(p: int, reps: Sequence[int]) -> str | None:
    if reps and reps[0] < 0:
        return f"partition {p}: the leader may not be a placeholder"
    return None


def _fenced_leader_problem(p: int, reps: Sequence[int], fenced: Collection[int],
                           kept: Sequence[int] | None = None) -> str | None:
    """A fenced broker leads only a partition it leads already (its current replicas kept first)."""
    if reps and reps[0] in fenced and not (kept and kept[0] == reps[0]):
        return f"partition {p}: fenced broker {reps[0]} leads"
    return None


def _needless_fenced_problem(p: int, reps: Sequence[int], fenced: Collection[int], unfenced: int,
                             kept: Sequence[int] | None = None) -> str | None:
    """A fenced broker takes a new replica only where every unfenced broker (``unfenced`` of
    them in the view) holds one already; kept replicas are not new."""
    added = [b for b in reps if b in fenced and not (kept and b in kept)]
    if added and sum(1 for b in reps if b >= 0 and b not in fenced) < unfenced:
        return (f"partition {p}: fenced broker {added[0]} takes a new replica while an unfenced "
                f"broker could ({list(reps)})")
    return None


def fenced_violations(assignment: Mapping[int, Sequence[int]], cluster: ClusterView,
                      current: Mapping[int, Sequence[int]]) -> Iterator[str]:
    """The fenced rule (:mod:`kafka_replica_assignor.assignors.fencing`) over every partition, in id order."""
    fenced = cluster.fenced
    if not fenced:
        return
    used = set(chain.from_iterable(assignment.values())) & fenced
    if not used:
        return  # no fenced broker at all: none leads, none is needless
    unfenced = len(cluster.brokers) - len(fenced)
    for p in sorted(assignment):
        reps, kept = assignment[p], current.get(p)
        problem = (_fenced_leader_problem(p, reps, fenced, kept)
                   or _needless_fenced_problem(p, reps, fenced, unfenced, kept))
        if problem is not None:
            yield problem


def _rack_spread_problem(p: int, reps: Sequence[int], rack_of: Mapping[int, str | None],
                         n_racks: int) -> str | None:
    """Only replicas on brokers of the view count (placeholders have no rack)."""
    real = [b for b in reps if b in rack_of]
    want = min(len(real), n_racks)
    spanned = len({rack_of[b] for b in real})
    if spanned != want:
        return f"partition {p}: {list(reps)} spans {spanned} racks, expected {want}"
    return None


def leader_counts(assignment: Mapping[int, Sequence[int]], brokers: Iterable[int]) -> dict[int, int]:
    """Preferred-leader count per broker, with 0 for the given brokers that lead nothing."""
    counts = dict.fromkeys(brokers, 0)
    for replicas in assignment.values():
        if replicas:
            counts[replicas[0]] = counts.get(replicas[0], 0) + 1
    return counts


def replica_counts(assignment: Mapping[int, Sequence[int]], brokers: Iterable[int]) -> dict[int, int]:
    """Replica count per broker, with 0 for the given brokers that hold nothing."""
    counts = dict.fromkeys(brokers, 0)
    for replicas in assignment.values():
        for b in replicas:
            counts[b] = counts.get(b, 0) + 1
    return counts


def balance_violations(counts: Mapping[int, int], what: str, tolerance: int = 1) -> list[str]:
    """The counts differ by at most ``tolerance`` (0 = exactly equal)."""
    if not counts:
        return []
    low, high = min(counts.values()), max(counts.values())
    if high - low > tolerance:
        return [f"{what} counts range {low}..{high} (more than {tolerance} apart): {dict(sorted(counts.items()))}"]
    return []


# -- an answer: every violation, as messages ------------------------------------------------------

def placement_violations(
    assignment: Mapping[int, Sequence[int]],
    cluster: ClusterView,
    replication_factor: int,
    partitions: Iterable[int] | None = None,
    *,
    current: Mapping[int, Sequence[int]] | None = None,
    keep_order: bool = True,
    fenced_never_lead: bool = True,
    fenced_only_when_needed: bool = False,
    rack_spread: bool = False,
    leader_skew: int | None = None,
    replica_skew: int | None = None,
    placeholders: bool = False,
) -> list[str]:
    """Every violation of the selected rules, with the messages :func:`validate_assignment` raises.

    - always: exactly ``partitions`` (when given); per partition ``replication_factor`` distinct
      integer brokers of ``cluster`` (negative placeholders too with ``placeholders``, never
      leading); ``current`` replicas kept, as a prefix with ``keep_order``;
    - ``fenced_never_lead``: no broker of ``cluster.fenced`` leads (but a current leader kept first);
    - ``fenced_only_when_needed``: a broker of ``cluster.fenced`` takes a new replica only where
      every unfenced broker of the view holds one (the framework's rule, with the one above);
    - ``rack_spread``: each partition spans ``min(its replicas on brokers of the view, #racks)``
      racks (no-op without racks);
    - ``leader_skew=t``: preferred-leader counts over the unfenced brokers differ by at most ``t``;
    - ``replica_skew=t``: replica counts over the brokers of the view differ by at most ``t``.
    """
    out: list[str] = []
    if partitions is not None:
        wanted = list(partitions)
        if set(wanted) != set(assignment):
            out.append(_partition_ids_problem(assignment.keys(), wanted))
    known = frozenset(cluster.broker_ids)
    current = current or {}
    rack_of = cluster.rack_by_broker
    n_racks = len(cluster.racks) if rack_spread else 0
    for p, replicas in sorted(assignment.items()):
        shape = _shape_problem(p, replicas)
        if shape is not None:
            out.append(shape)
            continue
        kept = current.get(p)
        problems = [
            _count_problem(p, replicas, replication_factor),
            _duplicate_problem(p, replicas),
            _unknown_problem(p, replicas, known, placeholders),
            (_prefix_problem if keep_order else _kept_problem)(p, replicas, kept),
            _integer_problem(p, replicas),
            _placeholder_leader_problem(p, replicas),
            _fenced_leader_problem(p, replicas, cluster.fenced, kept) if fenced_never_lead else None,
            _needless_fenced_problem(p, replicas, cluster.fenced, len(cluster.unfenced_ids), kept)
            if fenced_only_when_needed and cluster.fenced else None,
            _rack_spread_problem(p, replicas, rack_of, n_racks) if n_racks else None,
        ]
        out += dict.fromkeys(problem for problem in problems if problem is not None)  # once each
    if leader_skew is not None:
        out += balance_violations(leader_counts(assignment, cluster.unfenced_ids), "leader", leader_skew)
    if replica_skew is not None:
        counts = {b: c for b, c in replica_counts(assignment, known).items() if b in known}
        out += balance_violations(counts, "replica", replica_skew)
    return out


# -- an answer: the fast check every answer passes ------------------------------------------------

def validate_assignment(
    result: object,
    partitions: Sequence[int],
    replication_factor: int,
    cluster: ClusterView,
    current: Mapping[int, Sequence[int]] | None = None,
    allow_placeholders: bool = False,
) -> Assignment:
    """Check an assignor's answer and return it as a plain ``dict[int, list[int]]``.

    Exactly the requested partition ids; ``replication_factor`` distinct brokers
    each; every broker in the cluster view (or a negative placeholder id, where the
    under-replicated feature allows it, never as leader); current replicas kept; the
    fenced rule (:func:`fenced_violations`). Any violation raises :class:`ReplicaAssignorError` naming the partition.
    """
    if not isinstance(result, Mapping):
        raise ReplicaAssignorError(f"assignor returned {type(result).__name__}, not a partition map")
    keys = result.keys()
    if set(map(type, keys)) - {int}:
        bad = sorted(repr(p) for p in keys if type(p) is not int)[:10]
        raise ReplicaAssignorError(f"assignor returned non-integer partition ids: {bad}")
    # the same ids: as many, and every requested one present (a range needs no set)
    distinct = len(partitions) if isinstance(partitions, range) else len(set(partitions))
    if len(keys) != distinct or not all(map(keys.__contains__, partitions)):
        raise ReplicaAssignorError(f"assignor returned {_partition_ids_problem(keys, partitions)}")
    known = frozenset(cluster.broker_ids)
    current = current or {}
    out = _validate_batch(result, partitions, replication_factor, known, current)
    if out is None:
        out = _validate_slowly(result, partitions, replication_factor, known, current, allow_placeholders)
    for problem in fenced_violations(out, cluster, current):
        raise ReplicaAssignorError(problem)
    return out


def _validate_slowly(result: Mapping[int, Any], partitions: Sequence[int], replication_factor: int,
                     known: frozenset[int], current: Mapping[int, Sequence[int]],
                     allow_placeholders: bool) -> Assignment:
    """The answer's first problem, by partition, as :func:`validate_assignment` raises it."""
    # slow path: find and name the first partition that is wrong
    out: Assignment = {}
    for p in partitions:
        replicas = result[p]
        shape = _shape_problem(p, replicas)
        if shape is not None:
            raise ReplicaAssignorError(shape)
        reps = list(replicas)
        problem = (_count_problem(p, reps, replication_factor) or _duplicate_problem(p, reps)
                   or _unknown_problem(p, reps, known, allow_placeholders)
                   or _kept_problem(p, reps, current.get(p)))
        if problem is not None:
            raise ReplicaAssignorError(problem)
        out[p] = reps
    # one pass over every replica: ints only (True == 1 and 1.0 == 1 would pass the set checks)
    if set(map(type, chain.from_iterable(out.values()))) - {int}:
        for p, reps in out.items():
            problem = _integer_problem(p, reps)
            if problem is not None:
                raise ReplicaAssignorError(problem)
    for p, reps in out.items():
        problem = _placeholder_leader_problem(p, reps)
        if problem is not None:
            raise ReplicaAssignorError(problem)
    return out


def _validate_batch(result: Mapping[int, Any], partitions: Sequence[int], replication_factor: int,
                    known: frozenset[int], current: Mapping[int, Sequence[int]]) -> Assignment | None:
    """Whole-batch checks done mostly in C; None when anything needs a closer look."""
    values = [result[p] for p in partitions]
    types = set(map(type, values))
    if not types <= {list, tuple}:
        return None
    if set(map(len, values)) - {replication_factor} or set(map(len, map(set, values))) - {replication_factor}:
        return None
    every = set(chain.from_iterable(values))
    if not every <= known or set(map(type, every)) - {int}:
        return None
    for p, kept in current.items():
        if p in result and not set(result[p]).issuperset(kept):
            return None
    # lists are taken over as they are (the assignor hands its answer over); tuples become lists
    return dict(zip(partitions, values if types == {list} else map(list, values), strict=True))


def check_placeholders(partition: int, replicas: Sequence[int], alive_ids: Container[int]) -> None:
    """Placeholders are numbered -1, -2, ... in order of appearance; the leader is alive."""
    expected = -1
    for b in replicas:
        if b < 0:
            if b != expected:
                raise ReplicaAssignorError(
                    f"partition {partition}: placeholders must be numbered -1, -2, ... in order, "
                    f"got {list(replicas)}"
                )
            expected -= 1
    if not replicas or replicas[0] not in alive_ids:
        raise ReplicaAssignorError(f"partition {partition}: the leader must be an alive broker")
