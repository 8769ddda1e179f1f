"""The one table from typed exceptions to Kafka wire error codes.

Handlers raise or catch domain exceptions (``kafka_replica_assignor.assignors.errors``); only this module knows
which Kafka error each stands for. Codes come from kafka-python's error classes, plus
REPLICA_ASSIGNOR_FAILED (KIP-660), which Kafka never shipped: it gets code 1000, far
outside Kafka's range (-1..133 today), so an upstream code can never collide with it.
"""

from __future__ import annotations

import kafka.errors as kafka_errors

from kafka_replica_assignor.assignors import errors as domain


class ReplicaAssignorFailedError(kafka_errors.BrokerResponseError):
    """KIP-660: the replica assignor could not compute an assignment. Not retriable."""

    errno = 1000
    message = "REPLICA_ASSIGNOR_FAILED"
    description = "The replica assignor could not compute an assignment for the topic or partition."
    retriable = False


REPLICA_ASSIGNOR_FAILED = ReplicaAssignorFailedError

# domain exception -> Kafka error class (checked in order: subclasses first)
_TABLE: tuple[tuple[type[Exception], type[kafka_errors.BrokerResponseError]], ...] = (
    (domain.InvalidTopicError, kafka_errors.InvalidTopicError),
    (domain.InvalidPartitionsError, kafka_errors.InvalidPartitionsError),
    (domain.InvalidReplicationFactorError, kafka_errors.InvalidReplicationFactorError),
    (domain.InvalidReplicaAssignmentError, kafka_errors.InvalidReplicationAssignmentError),
    (domain.BrokerNotAvailableError, kafka_errors.BrokerNotAvailableError),
    (domain.AssignmentTimeoutError, kafka_errors.RequestTimedOutError),
    (domain.AuthorizationError, kafka_errors.ClusterAuthorizationFailedError),
    (domain.ReplicaAssignorError, ReplicaAssignorFailedError),
)

_BY_CODE: dict[int, type[kafka_errors.BrokerResponseError]] = {}
for _cls in [kafka_errors.NoError, *(k for _, k in _TABLE), kafka_errors.UnknownError,
             kafka_errors.UnsupportedVersionError, kafka_errors.ClusterAuthorizationFailedError]:
    if _cls.errno in _BY_CODE and _BY_CODE[_cls.errno] is not _cls:
        raise RuntimeError(f"error code {_cls.errno} used twice: {_BY_CODE[_cls.errno]} and {_cls}")
    _BY_CODE[_cls.errno] = _cls


def error_for_exception(exc: BaseException) -> type[kafka_errors.BrokerResponseError]:
    """The Kafka error class a raised exception maps to; anything unknown is a plug-in failure."""
    for domain_cls, kafka_cls in _TABLE:
        if isinstance(exc, domain_cls):
            return kafka_cls
    return ReplicaAssignorFailedError


def error_for_code(code: int) -> type[kafka_errors.BrokerResponseError]:
    """The error class for a wire code (ours first, then kafka-python's full table)."""
    return _BY_CODE.get(code) or kafka_errors.for_code(code)
