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

Both connect the way Kafka's clients do (:class:`kafka_replica_assignor.protocol.client_config.SecurityOptions`,
read from a ``--command-config`` file): TCP, TLS for ``SSL``/``SASL_SSL``, ApiVersions,
then SaslHandshake v1 and SaslAuthenticate round trips for ``SASL_*`` with kafka-python's
client-side mechanisms (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512). The steps are one sans-IO
generator (:meth:`_Session.handshake`) driven by a blocking and an asyncio loop; the whole
connection set-up must finish within ``request_timeout_ms``.
"""

from __future__ import annotations

import asyncio
import itertools
import socket
import ssl
import struct
import time
from collections.abc import Generator, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import kafka.errors as kafka_errors
from kafka.net.sasl import get_sasl_mechanism
from kafka.protocol.sasl import (
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)

from .client_config import SecurityOptions
from .errors import error_for_code
from .frame import recv_exactly, skip_tagged_fields
from .messages import (
    CREATE_REPLICA_ASSIGNMENT_API_KEY,
    REPLICA_ASSIGNMENT_FEATURE,
    ApiVersionsRequest,
    ApiVersionsResponse,
    CreateReplicaAssignmentRequest,
    CreateReplicaAssignmentResponse,
    MetadataRequest,
    MetadataResponse,
)
from .version import package_version

FEATURE_NAME = REPLICA_ASSIGNMENT_FEATURE
_METADATA_VERSION = 12
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

    def _frame(self, request: Any) -> tuple[int, bytes]:
        cid = next(self._ids)
        request.with_header(correlation_id=cid, client_id=self.client_id)
        return cid, bytes(request.encode(header=True, framed=True))

    def api_versions_request(self) -> tuple[int, bytes]:
        v = self.api_versions_version
        kwargs = ({"client_software_name": "kafka-replica-assignor", "client_software_version": package_version()}
                  if v >= 3 else {})
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

    def handshake(self, security: SecurityOptions, host: str, where: str,
                  api_versions: bool = True) -> Generator[bytes, bytes, None]:
        """The connection's set-up after TCP and TLS: yields request frames, is sent the
        response payloads (ApiVersions unless ``api_versions`` is False, then SASL when
        ``security`` uses it)."""
        while api_versions:
            cid, data = self.api_versions_request()
            if not self.on_api_versions(cid, (yield data), where):
                break
        if not security.uses_sasl:
            return
        mechanism_name = security.sasl_mechanism
        cid, data = self._frame(SaslHandshakeRequest(version=1, mechanism=mechanism_name))
        handshake = _decode(SaslHandshakeResponse, (yield data), 1, cid, where, flexible_header=False)
        if handshake.error_code:
            raise error_for_code(handshake.error_code)(
                f"{where} does not offer SASL mechanism {mechanism_name}: enabled {list(handshake.mechanisms)}")
        mechanism = get_sasl_mechanism(mechanism_name)(
            host=host, security_protocol=security.security_protocol, sasl_mechanism=mechanism_name,
            sasl_plain_username=security.sasl_username, sasl_plain_password=security.sasl_password)
        while not mechanism.is_done():
            cid, data = self._frame(SaslAuthenticateRequest(version=2, auth_bytes=mechanism.auth_bytes()))
            response = _decode(SaslAuthenticateResponse, (yield data), 2, cid, where, flexible_header=True)
            if response.error_code:
                error = error_for_code(response.error_code)
                if error is kafka_errors.SaslAuthenticationFailedError:
                    raise error(f"authentication failed at {where}: {response.error_message or 'no reason given'}")
                raise error(response.error_message or f"SASL authentication at {where} failed")
            try:
                mechanism.receive(response.auth_bytes)
            except ValueError as exc:  # e.g. the server's SCRAM signature is wrong
                raise kafka_errors.SaslAuthenticationFailedError(
                    f"authentication failed at {where}: {exc}") from None
        if not mechanism.is_authenticated():
            raise kafka_errors.SaslAuthenticationFailedError(
                f"authentication failed at {where}: SASL {mechanism_name} did not complete")

    def metadata_request(self) -> tuple[int, bytes]:
        return self._frame(MetadataRequest(version=_METADATA_VERSION, topics=[], allow_auto_topic_creation=False))

    def on_metadata(self, cid: int, payload: bytes, where: str) -> list[tuple[int, str | None]]:
        response = _decode(MetadataResponse, payload, _METADATA_VERSION, cid, where, flexible_header=True)
        return [(b.node_id, b.rack) for b in response.brokers]

    def assignment_request(self, num_partitions: int, replication_factor: int, node_ids: Iterable[int] | None,
                           options: CreateReplicaAssignmentOptions, topic: str | None,
                           current_assignment: Mapping[int, list[int]] | None,
                           pending_topics: Mapping[str, Mapping[int, list[int]]] | None = None,
                           ) -> tuple[int, bytes, int]:
        version = self.assignment_version
        assert version is not None, "ApiVersions first"
        if current_assignment and version < 1:
            raise NotAReplicaAssignorError(
                "the server only speaks CreateReplicaAssignment v0, which cannot continue an existing topic")
        if pending_topics and version < 2:
            raise NotAReplicaAssignorError(
                f"the server speaks CreateReplicaAssignment up to v{version}, which cannot place several topics as "
                "one batch (v2): create them one at a time")
        R = CreateReplicaAssignmentRequest
        kwargs: dict[str, Any] = dict(num_partitions=num_partitions, replication_factor=replication_factor,
                      force_simple_assignment=options.force_simple_assignment,
                      node_id=list(node_ids or []), timeout_ms=options.timeout_ms)
        if version >= 1:
            kwargs["topic_name"] = topic
            kwargs["current_assignment"] = [R.CurrentPartition(partition_id=p, replicas=list(r))
                                            for p, r in sorted((current_assignment or {}).items())]
        if version >= 2:
            kwargs["pending_topics"] = [
                R.PendingTopic(topic_name=name, partitions=[R.PendingTopic.PendingPartition(
                    partition_id=p, replicas=list(r)) for p, r in sorted(assignment.items())])
                for name, assignment in (pending_topics or {}).items()]
        cid, data = self._frame(R(version=version, **kwargs))
        return cid, data, version

    def on_assignment(self, cid: int, payload: bytes, version: int, where: str) -> CreateReplicaAssignmentResult:
        response = _decode(CreateReplicaAssignmentResponse, payload, version, cid, where, flexible_header=True)
        if response.error_code:
            raise error_for_code(response.error_code)(response.error_message or "")
        return CreateReplicaAssignmentResult(
            {e.partition_id: list(e.replicas) for e in response.replica_assignment}, version)


def _decode(cls: Any, payload: bytes, version: int, cid: int, where: str, flexible_header: bool) -> Any:
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
    """Blocking client over one TCP (or TLS) connection, authenticated with SASL when
    ``security`` asks for it."""

    def __init__(self, bootstrap_server: str, client_id: str | None = None,
                 request_timeout_ms: int = 30_000, api_version: int | None = None,
                 security: SecurityOptions | None = None) -> None:
        self.host, self.port = parse_bootstrap(bootstrap_server)
        self.where = f"{self.host}:{self.port}"
        self.timeout = request_timeout_ms / 1000.0
        self.security = security or SecurityOptions()
        self.client_id = client_id or self.security.client_id or "replica-assignor-admin"
        self._session = _Session(self.client_id, api_version)
        self._sock: socket.socket | None = None

    def _connect(self, api_versions: bool = True) -> None:
        if self._sock is not None:
            return
        deadline = time.monotonic() + self.timeout
        try:
            sock = socket.create_connection((self.host, self.port), timeout=self.timeout)
        except TimeoutError:
            raise kafka_errors.KafkaTimeoutError(
                f"cannot connect to {self.where}: no answer within {self.timeout:g} s") from None
        except OSError as exc:
            raise NoBrokersAvailable(f"cannot connect to {self.where}: {exc.strerror or exc}") from None
        if self.security.uses_tls:
            try:
                sock.settimeout(_remaining(deadline, self.where))
                sock = self.security.ssl_context().wrap_socket(sock, server_hostname=self.host)
            except (ssl.SSLError, OSError) as exc:
                sock.close()
                if isinstance(exc, TimeoutError):
                    raise kafka_errors.KafkaTimeoutError(
                        f"TLS handshake with {self.where}: no answer within {self.timeout:g} s") from None
                raise kafka_errors.KafkaConnectionError(
                    f"TLS handshake with {self.where} failed: {_ssl_reason(exc)}") from None
        self._sock = sock
        try:
            steps = self._session.handshake(self.security, self.host, self.where, api_versions)
            data = next(steps, None)
            while data is not None:
                payload = self._roundtrip(data, _remaining(deadline, self.where))
                try:
                    data = steps.send(payload)
                except StopIteration:
                    break
        except BaseException:
            self.close()
            raise

    def open_socket(self) -> socket.socket:
        """A connection set up (TCP, TLS, SASL) but with nothing else asked, handed over to
        the caller: for tools that send their own requests (the conformance kit)."""
        self._connect(api_versions=False)
        sock, self._sock = self._sock, None
        assert sock is not None
        sock.settimeout(self.timeout)
        return sock

    def _roundtrip(self, data: bytes, timeout: float | None = None) -> bytes:
        sock = self._sock
        assert sock is not None
        sock.settimeout(timeout or self.timeout)
        try:
            sock.sendall(data)
            size = _LEN.unpack(self._read(4))[0]
            return self._read(size)
        except TimeoutError:
            self.close()
            raise kafka_errors.KafkaTimeoutError(
                f"no response from {self.where} within {timeout or self.timeout:g} s") from None
        except (ConnectionError, ssl.SSLError) as exc:
            self.close()
            raise kafka_errors.KafkaConnectionError(f"{self.where} closed the connection ({exc})") from None

    def _read(self, n: int) -> bytes:
        assert self._sock is not None
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
                                  pending_topics: Mapping[str, Mapping[int, list[int]]] | None = None,
                                  ) -> CreateReplicaAssignmentResult:
        options = options or CreateReplicaAssignmentOptions()
        self._connect()
        cid, data, version = self._session.assignment_request(
            num_partitions, replication_factor, node_ids, options, topic, current_assignment, pending_topics)
        payload = self._roundtrip(data, timeout=max(self.timeout, options.timeout_ms / 1000.0 + 5))
        return self._session.on_assignment(cid, payload, version, self.where)

    def metadata_brokers(self) -> list[tuple[int, str | None]]:
        """(node id, rack) of every broker the server's Metadata answer lists."""
        self._connect()
        cid, data = self._session.metadata_request()
        return self._session.on_metadata(cid, self._roundtrip(data), self.where)

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

    def __exit__(self, *exc: object) -> None:
        self.close()


def _remaining(deadline: float, where: str) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise kafka_errors.KafkaTimeoutError(f"connecting to {where} did not complete in time")
    return left


def _ssl_reason(exc: BaseException) -> str:
    if isinstance(exc, ssl.SSLCertVerificationError):
        return exc.verify_message or str(exc)
    return getattr(exc, "reason", None) or getattr(exc, "strerror", None) or str(exc)


class AsyncReplicaAssignorAdminClient:
    """asyncio client over one TCP (or TLS) connection; requests are sent one at a time."""

    def __init__(self, bootstrap_server: str, client_id: str | None = None,
                 request_timeout_ms: int = 30_000, api_version: int | None = None,
                 security: SecurityOptions | None = None) -> None:
        self.host, self.port = parse_bootstrap(bootstrap_server)
        self.where = f"{self.host}:{self.port}"
        self.timeout = request_timeout_ms / 1000.0
        self.security = security or SecurityOptions()
        self.client_id = client_id or self.security.client_id or "replica-assignor-admin"
        self._session = _Session(self.client_id, api_version)
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._lock = asyncio.Lock()

    async def _connect(self) -> None:
        if self._writer is not None:
            return
        deadline = time.monotonic() + self.timeout
        context = self.security.ssl_context() if self.security.uses_tls else None
        try:
            self._reader, self._writer = await asyncio.wait_for(
                asyncio.open_connection(self.host, self.port, ssl=context,
                                        server_hostname=self.host if context is not None else None),
                self.timeout)
        except TimeoutError:
            raise kafka_errors.KafkaTimeoutError(
                f"cannot connect to {self.where}: no answer within {self.timeout:g} s") from None
        except ssl.SSLError as exc:
            raise kafka_errors.KafkaConnectionError(
                f"TLS handshake with {self.where} failed: {_ssl_reason(exc)}") from None
        except OSError as exc:
            raise NoBrokersAvailable(f"cannot connect to {self.where}: {exc.strerror or exc}") from None
        try:
            steps = self._session.handshake(self.security, self.host, self.where)
            data = next(steps)
            while True:
                payload = await self._roundtrip(data, _remaining(deadline, self.where))
                try:
                    data = steps.send(payload)
                except StopIteration:
                    break
        except BaseException:
            await self.close()
            raise

    async def _roundtrip(self, data: bytes, timeout: float | None = None) -> bytes:
        reader, writer = self._reader, self._writer
        assert reader is not None and writer is not None
        writer.write(data)
        try:
            await writer.drain()
            size = _LEN.unpack(await asyncio.wait_for(reader.readexactly(4), timeout or self.timeout))[0]
            return await asyncio.wait_for(reader.readexactly(size), timeout or self.timeout)
        except (asyncio.IncompleteReadError, ConnectionError, ssl.SSLError):
            await self.close()
            raise kafka_errors.KafkaConnectionError(f"{self.where} closed the connection") from None
        except TimeoutError:
            await self.close()
            raise kafka_errors.KafkaTimeoutError(
                f"no response from {self.where} within {timeout or self.timeout:g} s") from None

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
            except (OSError, ssl.SSLError):
                pass

    async def __aenter__(self) -> AsyncReplicaAssignorAdminClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
