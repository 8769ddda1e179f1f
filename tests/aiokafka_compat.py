"""Our schema-driven messages in the shape aiokafka's connection sends.

aiokafka 0.14 has its own request structs. ``AIOKafkaConnection.send(request)`` calls
``request.prepare(versions)`` with the ranges the broker listed in ApiVersions, and on
the struct it gets back uses ``build_request_header(correlation_id, client_id).encode()``,
``encode()``, ``parse_response_header(buffer)`` and ``RESPONSE_TYPE.decode(buffer)``.
:class:`AiokafkaRequest` offers exactly that surface over a kafka-python ``ApiMessage``
class, so aiokafka's client can send our requests::

    request = AiokafkaRequest(CreateReplicaAssignmentRequest, num_partitions=12,
                              replication_factor=3, node_id=[])
    response = await client.send(node_id, request)   # a CreateReplicaAssignmentResponse

The adapter is duck-typed: it does not import aiokafka, so ``protocol/`` keeps depending
on kafka-python and ``schemas/`` only. Bytes are produced and read by the schema codec.
"""

from __future__ import annotations

import io
from typing import Any

import kafka.errors as kafka_errors


class AiokafkaRequest:
    """A request to be sent through aiokafka: the message class and its field values.

    The version is negotiated at :meth:`prepare`: the highest version both this
    message class and the broker support, and at least ``min_version`` (pass 1 when a
    field only version 1 has matters, such as ``topic_name``).
    """

    ALLOW_UNKNOWN_API_VERSION = False

    # message classes are kafka-python ``ApiMessage`` subclasses, which carry no type information
    def __init__(self, message_class: type[Any], min_version: int | None = None, **fields: Any) -> None:
        self.message_class = message_class
        self.fields = fields
        self.min_version = min_version

    @property
    def API_KEY(self) -> int:  # noqa: N802 (aiokafka's attribute name)
        key: int = self.message_class.API_KEY
        return key

    def negotiate(self, versions: dict[int, tuple[int, int]]) -> int:
        ours_lo, ours_hi = self.message_class.valid_versions
        if self.min_version is not None:
            ours_lo = max(ours_lo, self.min_version)
        name = self.message_class.__name__
        if self.API_KEY not in versions:
            raise kafka_errors.IncompatibleBrokerVersion(
                f"{name}: the broker does not list apiKey {self.API_KEY} in ApiVersions")
        lo, hi = versions[self.API_KEY]
        version = min(ours_hi, hi)
        if version < max(ours_lo, lo):
            raise kafka_errors.IncompatibleBrokerVersion(
                f"{name}: the broker supports v{lo}-v{hi}, this request needs v{ours_lo}-v{ours_hi}")
        return int(version)

    def prepare(self, versions: dict[int, tuple[int, int]]) -> PreparedRequest:
        version = self.negotiate(versions)
        return PreparedRequest(self.message_class(version=version, **self.fields), version)

    def __repr__(self) -> str:
        return f"AiokafkaRequest({self.message_class.__name__}, {self.fields!r})"


class _EncodedHeader:
    __slots__ = ("_data",)

    def __init__(self, data: bytes) -> None:
        self._data = data

    def encode(self) -> bytes:
        return self._data


class _ResponseType:
    """``RESPONSE_TYPE``: ``decode(buffer)`` reads the body at the negotiated version."""

    __slots__ = ("response_class", "version")

    def __init__(self, response_class: type[Any], version: int) -> None:
        self.response_class = response_class
        self.version = version

    def decode(self, buffer: io.BytesIO | bytes) -> Any:
        data = buffer.read() if hasattr(buffer, "read") else buffer
        return self.response_class.decode(data, version=self.version)


class PreparedRequest:
    """One message at one version: what ``AIOKafkaConnection.send`` works with."""

    def __init__(self, message: Any, version: int) -> None:
        self.message = message
        self.API_KEY = message.API_KEY
        self.API_VERSION = version
        self.FLEXIBLE_VERSION = message.flexible_version_q(version)
        # the response class comes from the request's header, so a request that binds its
        # own response class (CreateReplicaAssignmentRequest) is decoded with it
        message.with_header(correlation_id=0, client_id="")
        self.RESPONSE_TYPE = _ResponseType(message.header.get_response_class(), version)

    def build_request_header(self, correlation_id: int, client_id: str) -> _EncodedHeader:
        self.message.with_header(correlation_id=correlation_id, client_id=client_id)
        return _EncodedHeader(self.message.encode_header(flexible=self.FLEXIBLE_VERSION))

    def encode(self) -> bytes:
        encoded: bytes = self.message.encode(version=self.API_VERSION)
        return encoded

    def parse_response_header(self, buffer: io.BytesIO | bytes) -> Any:
        if not hasattr(buffer, "read"):
            buffer = io.BytesIO(buffer)
        return self.RESPONSE_TYPE.response_class.parse_header(buffer, version=self.API_VERSION)

    def __repr__(self) -> str:
        return f"{self.message!r}"
