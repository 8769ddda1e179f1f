"""Typed refusals raised by assignors and by the framework around them.

Each class names the Kafka error it stands for; ``kafka_replica_assignor.protocol.errors`` is the one
table that turns them into wire error codes. Nothing here knows a number.
"""

from __future__ import annotations


class AssignmentError(Exception):
    """Base class: an assignment could not be produced. Carries a message for the client."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class InvalidTopicError(AssignmentError):
    """Kafka's InvalidTopicException (INVALID_TOPIC_EXCEPTION): the topic name breaks Kafka's rule."""


class InvalidPartitionsError(AssignmentError):
    """Kafka's InvalidPartitionsException (INVALID_PARTITIONS)."""


class InvalidReplicationFactorError(AssignmentError):
    """Kafka's InvalidReplicationFactorException (INVALID_REPLICATION_FACTOR)."""


class InvalidReplicaAssignmentError(AssignmentError):
    """Kafka's InvalidReplicaAssignmentException (INVALID_REPLICA_ASSIGNMENT)."""


class BrokerNotAvailableError(AssignmentError):
    """Kafka's BrokerNotAvailableException: a requested broker id is not in the cluster view."""


class ReplicaAssignorError(AssignmentError):
    """KIP-660's ReplicaAssignorException (REPLICA_ASSIGNOR_FAILED).

    Raised by an assignor that refuses, and by the framework when an assignor's
    output is invalid, it raised something unexpected, or it ran too long.
    """


class AuthorizationError(AssignmentError):
    """Kafka's ClusterAuthorizationException (CLUSTER_AUTHORIZATION_FAILED): the principal
    may not ask for assignments (the server's ``authorizer.allowed.principals``, or an
    assignor that refuses the principal it was given)."""


class AssignmentTimeoutError(AssignmentError):
    """The assignor did not finish within the request's timeout (REQUEST_TIMED_OUT)."""
