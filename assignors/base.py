"""The plug-in surface (KIP-660, in Python) and the framework around every assignor.

An assignor implements one method, :meth:`ReplicaAssignor.assign_replicas_to_brokers`.
The framework (:func:`place`) checks the shared preconditions once, before any
assignor runs, calls it on the brokers it may use, and validates its answer before anyone
may send it (both rules live in :mod:`kafka_replica_assignor.assignors.validate`; they are
re-exported here for plug-ins): an assignor can refuse (raise :class:`ReplicaAssignorError`)
but can never hand a wrong answer to a client. Fenced brokers are the framework's too
(:mod:`kafka_replica_assignor.assignors.fencing`): an assignor never sees one in its view, and a
fenced broker takes a replica only where the unfenced brokers are too few, never as leader.
"""

from __future__ import annotations

import abc
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from .errors import AssignmentError, ReplicaAssignorError
from .fencing import AssignorCall, place_around_fenced
from .model import Assignment, ClusterView
from .validate import check_preconditions, check_request, validate_assignment

__all__ = ["ANONYMOUS", "PlacementSpec", "ReplicaAssignor", "check_preconditions", "framework", "place",
           "validate_assignment"]

ANONYMOUS = "User:ANONYMOUS"


@dataclass(frozen=True, slots=True)
class PlacementSpec:
    """What to place (Kafka's ``PlacementSpec``): some partitions of one topic, and how many
    replicas each gets. What the cluster looks like is apart (:class:`ClusterView`).

    A request becomes one of these once, where it is read (the server's handler, the command
    line), and travels whole to the framework; the plug-in method receives its fields.
    """

    topic_name: str | None
    partitions: Sequence[int]  # a range for the usual request; any ascending ids
    replication_factor: int


class ReplicaAssignor(abc.ABC):
    """Computes replica placements for partitions of one topic.

    Implementations are pure: the answer depends only on the arguments and on
    ``rng`` (never the global random module, the clock or I/O), so the same seed
    gives the same answer. Speed-ups are optional capabilities declared apart
    (:class:`kafka_replica_assignor.assignors.memo.MemoizableAssignor`); this interface stays one method.
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
        Current replicas may be on brokers that are not in ``cluster.brokers``: fenced
        brokers, which the framework keeps out of every assignor's view; keep them, and
        place nothing new on them. Raise :class:`ReplicaAssignorError` to refuse with a message.
        """


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
    """Preconditions, the assignor, then validation: the only way assignments are made.

    The arguments are the plug-in method's; :func:`framework` does the rest.
    """
    drawn = rng if rng is not None else random.Random()
    return framework(assignor, PlacementSpec(topic_name, partitions, replication_factor), cluster,
                     lambda ids, rf, view: assignor.assign_replicas_to_brokers(topic_name, ids, rf, view, principal,
                                                                               rng=drawn))


def framework(assignor: object, spec: PlacementSpec, cluster: ClusterView, call: AssignorCall) -> Assignment:
    """The framework around an assignor (:func:`place`, or the memo's ``assign_drawn``): the
    request is checked once (:func:`kafka_replica_assignor.assignors.validate.check_request`), so
    assignors assume valid input; ``call(partitions, replication_factor, view)`` runs the
    assignor on the brokers it may use (:func:`kafka_replica_assignor.assignors.fencing.place_around_fenced`:
    the view itself unless brokers are fenced, once unless the unfenced brokers are too few); a
    plug-in's bug becomes :class:`ReplicaAssignorError`, never a crash; the answer is checked by
    :func:`kafka_replica_assignor.assignors.validate.validate_assignment`."""
    current = cluster.topic_assignment(spec.topic_name)
    check_request(spec.topic_name, spec.partitions, spec.replication_factor, cluster, current)
    try:
        result = place_around_fenced(spec.topic_name, spec.partitions, spec.replication_factor, cluster, current,
                                     call)
    except AssignmentError:
        raise
    except Exception as exc:  # a plug-in's bug must become an error response, not a crash
        raise ReplicaAssignorError(
            f"assignor {type(assignor).__name__} failed: {type(exc).__name__}: {exc}"
        ) from exc
    return validate_assignment(result, spec.partitions, spec.replication_factor, cluster, current)
