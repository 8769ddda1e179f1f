"""The plug-in surface (KIP-660, in Python) and the framework around every assignor.

An assignor implements one method, :meth:`ReplicaAssignor.assign_replicas_to_brokers`.
The framework (:func:`place`) checks the shared preconditions once, before any
assignor runs, calls it, and validates its answer before anyone may send it:
an assignor can refuse (raise :class:`ReplicaAssignorError`) but can never hand a
wrong answer to a client.
"""

from __future__ import annotations

import abc
import random
from itertools import chain
from collections.abc import Hashable, Mapping, Sequence

from .errors import (
    AssignmentError,
    InvalidPartitionsError,
    InvalidReplicationFactorError,
    ReplicaAssignorError,
)
from .model import Assignment, ClusterView

ANONYMOUS = "User:ANONYMOUS"


class ReplicaAssignor(abc.ABC):
    """Computes replica placements for partitions of one topic.

    Implementations are pure: the answer depends only on the arguments and on
    ``rng`` (never the global random module, the clock or I/O), so the same seed
    gives the same answer.
    """

    #: the short name it is registered under (``replica.assignor.class.name``)
    name: str = ""

    @abc.abstractmethod
    def assign_replicas_to_brokers(
        self,
        topic_name: str | None,
        partitions: Sequence[int],
        replication_factor: int,
        cluster: ClusterView,
        principal: str = ANONYMOUS,
        *,
        rng: random.Random,
    ) -> Mapping[int, Sequence[int]]:
        """Return ``{partition: [broker, ...]}`` for exactly ``partitions``.

        ``cluster.topic_assignment(topic_name)`` holds the topic's current
        assignment: partitions listed there and in ``partitions`` are having
        their replication factor raised and must keep their current replicas.
        Raise :class:`ReplicaAssignorError` to refuse with a message.
        """

    # -- optional: memoization (assignors.memo) ------------------------------------------
    def draw(
        self,
        topic_name: str | None,
        partitions: Sequence[int],
        replication_factor: int,
        cluster: ClusterView,
        *,
        rng: random.Random,
    ) -> Hashable | None:
        """Make this request's random draws and return a key its answer is a pure function of.

        Optional. An assignor whose answer depends only on a few random draws and on a
        small part of its input can return a hashable key holding all of it; then
        ``assign_drawn(key, ...)`` must return exactly what ``assign_replicas_to_brokers``
        would have returned with the same ``rng``. Return None, *without drawing*, where
        that does not hold (the default): the request is then placed the ordinary way.
        """
        return None

    def assign_drawn(
        self,
        key: Hashable,
        topic_name: str | None,
        partitions: Sequence[int],
        replication_factor: int,
        cluster: ClusterView,
    ) -> Mapping[int, Sequence[int]]:
        """The answer for a key returned by :meth:`draw` (only called for such keys)."""
        raise NotImplementedError


def check_preconditions(n_partitions: int, replication_factor: int, cluster: ClusterView,
                        placeholders_allowed: int = 0) -> None:
    """The checks every request passes once, before any assignor runs (Kafka's order)."""
    if n_partitions <= 0:
        raise InvalidPartitionsError("Number of partitions must be larger than 0.")
    if replication_factor <= 0:
        raise InvalidReplicationFactorError("Replication factor must be larger than 0.")
    available = len(cluster.brokers)
    if replication_factor > available + placeholders_allowed:
        raise InvalidReplicationFactorError(
            f"Replication factor: {replication_factor} larger than available brokers: {available}."
        )


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
    under-replicated feature allows it, never as leader); current replicas kept.
    Any violation raises :class:`ReplicaAssignorError` naming the partition.
    """
    if not isinstance(result, Mapping):
        raise ReplicaAssignorError(f"assignor returned {type(result).__name__}, not a partition map")
    keys = result.keys()
    if set(map(type, keys)) - {int}:
        bad = sorted((repr(p) for p in keys if type(p) is not int))[:10]
        raise ReplicaAssignorError(f"assignor returned non-integer partition ids: {bad}")
    # the same ids: as many, and every requested one present (a range needs no set)
    distinct = len(partitions) if isinstance(partitions, range) else len(set(partitions))
    if len(keys) != distinct or not all(map(keys.__contains__, partitions)):
        wanted, got = set(partitions), set(keys)
        missing = sorted(wanted - got)[:10]
        extra = sorted(got - wanted)[:10]
        raise ReplicaAssignorError(
            f"assignor returned the wrong partition ids (missing {missing}, unexpected {extra})"
        )
    known = frozenset(cluster.broker_ids)
    current = current or {}
    fast = _validate_batch(result, partitions, replication_factor, known, current)
    if fast is not None:
        return fast
    # slow path: find and name the first partition that is wrong
    out: Assignment = {}
    for p in partitions:
        replicas = result[p]
        if isinstance(replicas, (str, bytes)) or not isinstance(replicas, Sequence):
            raise ReplicaAssignorError(f"partition {p}: replicas must be a list of broker ids")
        reps = list(replicas)
        if len(reps) != replication_factor:
            raise ReplicaAssignorError(
                f"partition {p}: {len(reps)} replicas returned, replication factor is {replication_factor}"
            )
        distinct = set(reps)
        if len(distinct) != len(reps):
            raise ReplicaAssignorError(f"partition {p}: duplicate broker in replicas {reps}")
        if not distinct <= known:
            _check_unknown(p, reps, known, allow_placeholders)
        kept = current.get(p)
        if kept is not None and not distinct.issuperset(kept):
            raise ReplicaAssignorError(
                f"partition {p}: current replicas {list(kept)} must be kept, got {reps}"
            )
        out[p] = reps
    # one pass over every replica: ints only (True == 1 and 1.0 == 1 would pass the set checks)
    if set(map(type, chain.from_iterable(out.values()))) - {int}:
        for p, reps in out.items():
            if any(type(b) is not int for b in reps):
                raise ReplicaAssignorError(f"partition {p}: replicas must be integers, got {reps[:10]}")
    for p, reps in out.items():
        if reps and reps[0] < 0:
            raise ReplicaAssignorError(f"partition {p}: the leader may not be a placeholder")
    return out


def _validate_batch(result: Mapping, partitions: Sequence[int], replication_factor: int,
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
    return dict(zip(partitions, values if types == {list} else map(list, values)))


def _check_unknown(p: int, reps: list, known: frozenset[int], allow_placeholders: bool) -> None:
    for b in reps:
        if isinstance(b, bool) or not isinstance(b, int):
            raise ReplicaAssignorError(f"partition {p}: replicas must be integers, got {reps[:10]}")
        if b < 0:
            if not allow_placeholders:
                raise ReplicaAssignorError(f"partition {p}: placeholder {b} not allowed")
        elif b not in known:
            raise ReplicaAssignorError(f"partition {p}: broker {b} is not in the cluster view")


def place(
    assignor: ReplicaAssignor,
    topic_name: str | None,
    partitions: Sequence[int],
    replication_factor: int,
    cluster: ClusterView,
    principal: str = ANONYMOUS,
    *,
    rng: random.Random | None = None,
) -> Assignment:
    """Preconditions, the assignor, then validation: the only way assignments are made."""
    check_preconditions(len(partitions), replication_factor, cluster)
    current = cluster.topic_assignment(topic_name)
    try:
        result = assignor.assign_replicas_to_brokers(
            topic_name, partitions, replication_factor, cluster, principal,
            rng=rng if rng is not None else random.Random(),
        )
    except AssignmentError:
        raise
    except Exception as exc:  # a plug-in's bug must become an error response, not a crash
        raise ReplicaAssignorError(
            f"assignor {type(assignor).__name__} failed: {type(exc).__name__}: {exc}"
        ) from exc
    return validate_assignment(result, partitions, replication_factor, cluster, current)
