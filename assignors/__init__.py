"""Replica assignors: pure functions from (cluster view, request, random) to placements.

Standard library only. See ``kafka_replica_assignor.assignors.base`` for the plug-in interface.
"""

from .base import ANONYMOUS, PlacementSpec, ReplicaAssignor, check_preconditions, place, validate_assignment
from .errors import (
    AssignmentError,
    AssignmentTimeoutError,
    AuthorizationError,
    BrokerNotAvailableError,
    InvalidPartitionsError,
    InvalidReplicaAssignmentError,
    InvalidReplicationFactorError,
    ReplicaAssignorError,
)
from .model import Assignment, BrokerMetadata, ClusterView
from .registry import REGISTERED, UnknownAssignorError, create_assignor, load_assignor_class

__all__ = [
    "ANONYMOUS",
    "Assignment",
    "AssignmentError",
    "AssignmentTimeoutError",
    "AuthorizationError",
    "BrokerMetadata",
    "BrokerNotAvailableError",
    "ClusterView",
    "InvalidPartitionsError",
    "InvalidReplicaAssignmentError",
    "InvalidReplicationFactorError",
    "PlacementSpec",
    "REGISTERED",
    "ReplicaAssignor",
    "ReplicaAssignorError",
    "UnknownAssignorError",
    "check_preconditions",
    "create_assignor",
    "load_assignor_class",
    "place",
    "validate_assignment",
]
