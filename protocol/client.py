"""Admin client for CreateReplicaAssignment, mirroring KIP-879's Java API in Python.

::

    with ReplicaAssignorAdminClient("127.0.0.1:9095") as admin:
        result = admin.create_replica_assignment(12, 3)
        result.assignments()        # {0: [3, 1, 5], 1: [1, 5, 4], ...}

``AsyncReplicaAssignorAdminClient`` is the asyncio twin. Both first ask ApiVersions:
a server that does not advertise the ``replica.assignment`` feature (a Kafka broker,
where apiKey 68 is ConsumerGroupHeartbeat) is refused with
:class:`NotAReplicaAssignorError` before anything else is sent. Error responses raise
kafka-python's error class for the code (ours for REPLICA_ASSIGNOR_FAILED), carrying
the server's message.
"""

from __future__ import annotations

import asyncio
import itertools
import socket
import struct
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import kafka.errors as kafka_errors

from .errors import error_for_code
from .frame import recv_exactly, skip_tagged_fields
from .messages import (
    CREATE_REPLICA_ASSIGNMENT_API_KEY,
    ApiVersionsRequest,
    ApiVersionsResponse,
    CreateReplicaAssignmentRequest,
    CreateReplicaAssignmentResponse,
)

FEATURE_NAME = "replica.assignment"
_LEN = struct.Struct(">i")


class NotAReplicaAssignorError(kafka_errors.KafkaError):
    """The far end speaks Kafka but is not a replica assignor server."""


class NoBrokersAvailable(kafka_errors.KafkaConnectionError):
    """The bootstrap server could not be reached."""


class ProtocolViolationError(kafka_errors.KafkaError):
    """The far end answered with something that is not a valid response."""


@dataclass(frozen=True, slots=True)
class CreateReplicaAssignmentOptions:
    force_simple_assignment: bool = False
    timeout_ms: int = 60_000


class CreateReplicaAssignmentResult:
    """Holds the answer; ``assignments()`` gives ``{partition: [broker, ...]}``."""

    def __init__(self, assignments: Mapping[int, list[int]], version: int) -> None:
        self._assignments = {int(p): list(r) for p, r in assignments.items()}
        self.api_version = version

    def assignments(self) -> dict[int, list[int]]:
        return {p: list(r) for p, r in self._assignments.items()}


def parse_bootstrap(server: str) -> tuple[str, int]:
    first = server.split(",")[0].strip()
    host, sep, port = first.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"bootstrap server must be HOST:PORT, got {server!r}")
    return host.strip("[]") or "127.0.0.1", int(port)


class _Session:
    """Sans-IO: builds request frames and interprets response frames."""

    def __init__(self, client_id: str, max_version: int | None = None) -> None:
        self.client_id = client_id
        self.max_version = max_version
        self._ids = itertools.count(1)
        self.assignment_version: int | None = None
        self.api_versions_version = 3

    def _frame(self, request) -> tuple[int, bytes]:
        cid = next(self._ids)
        request.with_header(correlation_id=cid, client_id=self.client_id)
        return cid, request.encode(header=True, framed=True)

    def api_versions_request(self) -> tuple[int, bytes]:
        v = self.api_versions_version
        kwargs = {"client_software_name": "kafka-replica-assignor", "client_software_version": "0.1.0"} if v >= 3 else {}
        return self._frame(ApiVersionsRequest(version=v, **kwargs))

    def on_api_versions(self, cid: int, payload: bytes, where: str) -> bool:
        """Digest the ApiVersions answer; True when it must be re-sent at version 0."""
        response = _decode(ApiVersionsResponse, payload, 0 if self.api_versions_version == 0 else self.api_versions_version,
                           cid, where, flexible_header=False)
        if response.error_code == kafka_errors.UnsupportedVersionError.errno and self.api_versions_version > 0:
            self.api_versions_version = 0
            return True
        if response.error_code:
            raise error_for_code(response.error_code)(f"ApiVersions failed at {where}")
        versions = {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}
        features = {f.name for f in (getattr(response, "supported_features", None) or [])}
        if FEATURE_NAME not in features or CREATE_REPLICA_ASSIGNMENT_API_KEY not in versions:
            what = ("apiKey 68 is ConsumerGroupHeartbeat there"
                    if CREATE_REPLICA_ASSIGNMENT_API_KEY in versions else "it does not offer apiKey 68")
            raise NotAReplicaAssignorError(
                f"{where} is a Kafka-protocol server but not a replica assignor: it does not advertise the "
                f"'{FEATURE_NAME}' feature and {what}. Point --bootstrap-server at replica-assignor-server.")
        lo, hi = versions[CREATE_REPLICA_ASSIGNMENT_API_KEY]
        ours = CreateReplicaAssignmentRequest.valid_versions
        if hi < ours[0] or lo > ours[1]:
            raise NotAReplicaAssignorError(
                f"{where} supports CreateReplicaAssignment v{lo}-v{hi}; this client speaks v{ours[0]}-v{ours[1]}.")
        cap = ours[1] if self.max_version is None else self.max_version
        if cap < lo:
            raise NotAReplicaAssignorError(
                f"{where} supports CreateReplicaAssignment v{lo}-v{hi}, not v{cap} or below.")
        self.assignment_version = min(hi, ours[1], cap)
        return False

    def assignment_request(self, num_partitions: int, replication_factor: int, node_ids: Iterable[int] | None,
                           options: CreateReplicaAssignmentOptions, topic: str | None,
                           current_assignment: Mapping[int, list[int]] | None) -> tuple[int, bytes, int]:
        version = self.assignment_version
        wants_v1 = topic is not None or bool(current_assignment)
        if wants_v1 and version < 1:
            raise NotAReplicaAssignorError(
                "the server only speaks CreateReplicaAssignment v0, which cannot continue an existing topic")
        R = CreateReplicaAssignmentRequest
        kwargs = dict(num_partitions=num_partitions, replication_factor=replication_factor,
                      force_simple_assignment=options.force_simple_assignment,
                      node_id=list(node_ids or []), timeout_ms=options.timeout_ms)
        if version >= 1:
            kwargs["topic_name"] = topic
            kwargs["current_assignment"] = [R.CurrentPartition(partition_id=p, replicas=list(r))
                                            for p, r in sorted((current_assignment or {}).items())]
        cid, data = self._frame(R(version=version, **kwargs))
        return cid, data, version

    def on_assignment(self, cid: int, payload: bytes, version: int, where: str) -> CreateReplicaAssignmentResult:
        response = _decode(CreateReplicaAssignmentResponse, payload, version, cid, where, flexible_header=True)
        if response.error_code:
            raise error_for_code(response.error_code)(response.error_message or "")
        return CreateReplicaAssignmentResult(
            {e.partition_id: list(e.replicas) for e in response.replica_assignment}, version)


def _decode(cls, payload: bytes, version: int, cid: int, where: str, flexible_header: bool):
    if len(payload) < 4:
        raise ProtocolViolationError(f"{where} sent a response of {len(payload)} bytes")
    (got,) = _LEN.unpack_from(payload, 0)
    if got != cid:
        raise ProtocolViolationError(f"{where} answered correlation id {got}, expected {cid}")
    try:
        pos = skip_tagged_fields(payload, 4) if flexible_header else 4
        return cls.decode(payload[pos:], version=version)
    except Exception as exc:
        raise ProtocolViolationError(f"{where} sent an undecodable {cls.__name__}: {exc}") from None


class ReplicaAssignorAdminClient:
    """Blocking client over one TCP connection."""

    def __init__(self, bootstrap_server: str, client_id: str = "replica-assignor-admin",
                 request_timeout_ms: int = 30_000, api_version: int | None = None) -> None:
        self.host, self.port = parse_bootstrap(bootstrap_server)
        self.where = f"{self.host}:{self.port}"
        self.timeout = request_timeout_ms / 1000.0
        self._session = _Session(client_id, api_version)
        self._sock: socket.socket | None = None

    def _connect(self) -> None:
        if self._sock is not None:
            return
        try:
            self._sock = socket.create_connection((self.host, self.port), timeout=self.timeout)
        except OSError as exc:
            raise NoBrokersAvailable(f"cannot connect to {self.where}: {exc.strerror or exc}") from None
        try:
            while True:
                cid, data = self._session.api_versions_request()
                if not self._session.on_api_versions(cid, self._roundtrip(data), self.where):
                    break
        except BaseException:
            self.close()
            raise

    def _roundtrip(self, data: bytes, timeout: float | None = None) -> bytes:
        sock = self._sock
        sock.settimeout(timeout or self.timeout)
        try:
            sock.sendall(data)
            size = _LEN.unpack(self._read(4))[0]
            return self._read(size)
        except socket.timeout:
            self.close()
            raise kafka_errors.KafkaTimeoutError(f"no response from {self.where} in time") from None

    def _read(self, n: int) -> bytes:
        try:
            return recv_exactly(self._sock, n)
        except ConnectionError:
            self.close()
            raise kafka_errors.KafkaConnectionError(f"{self.where} closed the connection") from None

    def create_replica_assignment(self, num_partitions: int, replication_factor: int,
                                  node_ids: Iterable[int] | None = None,
                                  options: CreateReplicaAssignmentOptions | None = None, *,
                                  topic: str | None = None,
                                  current_assignment: Mapping[int, list[int]] | None = None,
                                  ) -> CreateReplicaAssignmentResult:
        options = options or CreateReplicaAssignmentOptions()
        self._connect()
        cid, data, version = self._session.assignment_request(
            num_partitions, replication_factor, node_ids, options, topic, current_assignment)
        payload = self._roundtrip(data, timeout=max(self.timeout, options.timeout_ms / 1000.0 + 5))
        return self._session.on_assignment(cid, payload, version, self.where)

    @property
    def api_version(self) -> int | None:
        return self._session.assignment_version

    def close(self) -> None:
        if self._sock is not None:
            try:
                self._sock.close()
            finally:
                self._sock = None

    def __enter__(self) -> ReplicaAssignorAdminClient:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class AsyncReplicaAssignorAdminClient:
    """asyncio client over one TCP connection; requests are sent one at a time."""

    def __init__(self, bootstrap_server: str, client_id: str = "replica-assignor-admin",
                 request_timeout_ms: int = 30_000, api_version: int | None = None) -> None:
        self.host, self.port = parse_bootstrap(bootstrap_server)
        self.where = f"{self.host}:{self.port}"
        self.timeout = request_timeout_ms / 1000.0
        self._session = _Session(client_id, api_version)
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._lock = asyncio.Lock()

    async def _connect(self) -> None:
        if self._writer is not None:
            return
        try:
            self._reader, self._writer = await asyncio.wait_for(
                asyncio.open_connection(self.host, self.port), self.timeout)
        except (OSError, asyncio.TimeoutError) as exc:
            raise NoBrokersAvailable(f"cannot connect to {self.where}: {exc}") from None
        try:
            while True:
                cid, data = self._session.api_versions_request()
                if not self._session.on_api_versions(cid, await self._roundtrip(data), self.where):
                    break
        except BaseException:
            await self.close()
            raise

    async def _roundtrip(self, data: bytes, timeout: float | None = None) -> bytes:
        self._writer.write(data)
        try:
            await self._writer.drain()
            size = _LEN.unpack(await asyncio.wait_for(self._reader.readexactly(4), timeout or self.timeout))[0]
            return await asyncio.wait_for(self._reader.readexactly(size), timeout or self.timeout)
        except asyncio.IncompleteReadError:
            await self.close()
            raise kafka_errors.KafkaConnectionError(f"{self.where} closed the connection") from None
        except asyncio.TimeoutError:
            await self.close()
            raise kafka_errors.KafkaTimeoutError(f"no response from {self.where} in time") from None

    async def create_replica_assignment(self, num_partitions: int, replication_factor: int,
                                        node_ids: Iterable[int] | None = None,
                                        options: CreateReplicaAssignmentOptions | None = None, *,
                                        topic: str | None = None,
                                        current_assignment: Mapping[int, list[int]] | None = None,
                                        ) -> CreateReplicaAssignmentResult:
        options = options or CreateReplicaAssignmentOptions()
        async with self._lock:
            await self._connect()
            cid, data, version = self._session.assignment_request(
                num_partitions, replication_factor, node_ids, options, topic, current_assignment)
            payload = await self._roundtrip(data, timeout=max(self.timeout, options.timeout_ms / 1000.0 + 5))
            return self._session.on_assignment(cid, payload, version, self.where)

    async def close(self) -> None:
        if self._writer is not None:
            w, self._writer, self._reader = self._writer, None, None
            w.close()
            try:
                await w.wait_closed()
            except OSError:
                pass

    async def __aenter__(self) -> AsyncReplicaAssignorAdminClient:
        return self

    async def __aexit__(self, *exc) -> None:
        await self.close()
