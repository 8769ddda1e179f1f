"""Message classes for the APIs this server speaks, all driven by JSON schemas.

``CreateReplicaAssignmentRequest`` / ``Response`` are empty shells over
``schemas/*.json`` (kafka-python 3's ``ApiMessage`` with ``load_json=``); ApiVersions and
Metadata are kafka-python's own classes over Kafka's schemas.

apiKey 68 is ConsumerGroupHeartbeat in Kafka 3.7+. kafka-python keeps one global
response class per apiKey, so defining our response class would take apiKey 68 over
for every kafka-python client in the process. We put the registry back the way we
found it, and bind our response class to our request through the request header
instead (``_AssignmentRequestHeader``), so kafka-python's ``KafkaClient.send`` still
decodes our responses and nothing else in the process changes.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from typing import Any

from kafka.protocol.api_header import RequestHeader, ResponseClassRegistry
from kafka.protocol.api_message import ApiMessage
from kafka.protocol.metadata import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    MetadataRequest,
    MetadataResponse,
)
from kafka.protocol.sasl import (
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)

from kafka_replica_assignor import schemas

from .structure import checked_decoder, checker

_registry = ResponseClassRegistry._response_class_registry
_before = dict(_registry)  # our api key is known once the schema is loaded: remember them all

with warnings.catch_warnings():
    # kafka-python's loader uses importlib.resources.read_text, deprecated in 3.11
    warnings.filterwarnings("ignore", message=r".*is deprecated.*", category=DeprecationWarning)

    class CreateReplicaAssignmentResponse(ApiMessage, load_json=schemas):
        pass

    class CreateReplicaAssignmentRequest(ApiMessage, load_json=schemas):
        @property
        def header_class(self) -> type[Any]:
            return _AssignmentRequestHeader

    # kafka-python registers every versioned class (Response[v]) as it is first built:
    # build them all now, while we still restore the registry afterwards
    for _v in range(CreateReplicaAssignmentResponse.max_version + 1):
        CreateReplicaAssignmentResponse[_v]
        CreateReplicaAssignmentRequest[_v]

CREATE_REPLICA_ASSIGNMENT_API_KEY: int = CreateReplicaAssignmentRequest.API_KEY
# the supported feature ApiVersions v3+ lists: how a client tells this server from a Kafka
# broker, where apiKey 68 is ConsumerGroupHeartbeat
REPLICA_ASSIGNMENT_FEATURE = "replica.assignment"

# restore the global registry: apiKey 68 stays whatever kafka-python (or nobody) had
if CREATE_REPLICA_ASSIGNMENT_API_KEY in _before:
    _registry[CREATE_REPLICA_ASSIGNMENT_API_KEY] = _before[CREATE_REPLICA_ASSIGNMENT_API_KEY]
else:
    _registry.pop(CREATE_REPLICA_ASSIGNMENT_API_KEY, None)


class _AssignmentRequestHeader(RequestHeader, init=False):
    """A request header whose response class is ours, whatever the global registry says."""

    def get_response_class(self) -> Any:
        return CreateReplicaAssignmentResponse[self.request_api_version]


# the header class is looked up on the class by with_header(); make it a plain attribute
CreateReplicaAssignmentRequest.header_class = _AssignmentRequestHeader

@functools.cache
def _body_decoder(cls: Any, version: int) -> Callable[..., Any]:
    flexible = cls.flexible_version_q(version)
    decoder: Callable[..., Any] = cls._struct.compiled_decode_from(version, compact=flexible, tagged=flexible,
                                                                 data_class=cls[None])
    return decoder


@functools.cache
def _checked_decoder(cls: Any, version: int) -> Callable[..., Any]:
    return checked_decoder(cls, version, _body_decoder(cls, version))


@functools.cache
def _checker(cls: Any, version: int) -> Callable[..., Any]:
    return checker(cls, version) or _checked_decoder(cls, version)


def decode_body(cls: Any, body: memoryview, version: int) -> Any:
    """Decode a request body (after the header) with the codec's compiled decoder for
    ``version``, looked up once: what ``cls.decode`` does, without its per-call set-up.

    The body's structure is checked first, in linear time (kafka_replica_assignor.protocol.structure): a body the
    codec would decode in more than linear time, or decode although a Kafka broker refuses it
    (an overlong varint, a length past the end, a repeated tag), raises
    :class:`kafka_replica_assignor.protocol.structure.StructureError` before the codec sees it. Raises on bytes that
    do not decode; ``version`` must be one the caller checked. The check and the decoder are
    one generated function per class and version."""
    return _checked_decoder(cls, version)(body)


def check_body(cls: Any, body: memoryview, version: int) -> None:
    """Refuse, as :func:`decode_body` would, a body whose content is not needed (ApiVersions):
    the same check, plus the UTF-8 of its strings, without building the message."""
    _checker(cls, version)(body)


__all__ = [
    "CREATE_REPLICA_ASSIGNMENT_API_KEY",
    "REPLICA_ASSIGNMENT_FEATURE",
    "SaslAuthenticateRequest",
    "SaslAuthenticateResponse",
    "SaslHandshakeRequest",
    "SaslHandshakeResponse",
    "check_body",
    "decode_body",
    "ApiVersionsRequest",
    "ApiVersionsResponse",
    "CreateReplicaAssignmentRequest",
    "CreateReplicaAssignmentResponse",
    "MetadataRequest",
    "MetadataResponse",
]
