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
from collections.abc import Mapping, Sequence

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
    wanted = set(partitions)
    try:
        got = {int(p) if not isinstance(p, bool) else p for p in result.keys()}
    except (TypeError, ValueError) as exc:
        raise ReplicaAssignorError(f"assignor returned a non-integer partition id: {exc}") from None
    if got != wanted:
        missing = sorted(wanted - got, key=repr)[:10]
        extra = sorted(got - wanted, key=repr)[:10]
        raise ReplicaAssignorError(
            f"assignor returned the wrong partition ids (missing {missing}, unexpected {extra})"
        )
    known = set(cluster.broker_ids)
    current = current or {}
    out: Assignment = {}
    for p in partitions:
        replicas = result[p]
        if isinstance(replicas, (str, bytes)) or not isinstance(replicas, Sequence):
            raise ReplicaAssignorError(f"partition {p}: replicas must be a list of broker ids")
        reps = list(replicas)
        if any(isinstance(b, bool) or not isinstance(b, int) for b in reps):
            raise ReplicaAssignorError(f"partition {p}: replicas must be integers, got {reps[:10]}")
        if len(reps) != replication_factor:
            raise ReplicaAssignorError(
                f"partition {p}: {len(reps)} replicas returned, replication factor is {replication_factor}"
            )
        if len(set(reps)) != len(reps):
            raise ReplicaAssignorError(f"partition {p}: duplicate broker in replicas {reps}")
        for b in reps:
            if b < 0:
                if not allow_placeholders:
                    raise ReplicaAssignorError(f"partition {p}: placeholder {b} not allowed")
            elif b not in known:
                raise ReplicaAssignorError(f"partition {p}: broker {b} is not in the cluster view")
        if reps[0] < 0:
            raise ReplicaAssignorError(f"partition {p}: the leader may not be a placeholder")
        kept = current.get(p)
        if kept is not None and not set(kept) <= set(reps):
            raise ReplicaAssignorError(
                f"partition {p}: current replicas {list(kept)} must be kept, got {reps}"
            )
        out[p] = reps
    return out


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
