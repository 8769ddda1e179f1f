"""The admin client over TLS and SASL: :class:`SecureReplicaAssignorAdminClient`.

Same API as :class:`protocol.client.ReplicaAssignorAdminClient`; the connection is set
up the way Kafka's clients do it: TCP, TLS (``SSL``/``SASL_SSL``), ApiVersions, then
SaslHandshake v1 and SaslAuthenticate round trips (``SASL_*``), using kafka-python's own
client-side mechanisms (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512)::

    options = SecurityOptions.from_properties({
        "security.protocol": "SASL_SSL",
        "ssl.truststore.location": "ca.pem",
        "sasl.mechanism": "SCRAM-SHA-256",
        "sasl.jaas.config": 'org.apache.kafka.common.security.scram.ScramLoginModule required '
                            'username="alice" password="alice-secret";',
    })
    with SecureReplicaAssignorAdminClient("host:9094", options) as admin:
        admin.create_replica_assignment(12, 3).assignments()

:meth:`SecurityOptions.from_properties` reads Kafka's client property names (a
``--command-config`` file), with PEM files for the stores.
"""

from __future__ import annotations

import re
import socket
import ssl
import struct
from collections.abc import Mapping
from dataclasses import dataclass

import kafka.errors as kafka_errors
from kafka.net.sasl import get_sasl_mechanism
from kafka.protocol.sasl import (
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)

from .client import ProtocolViolationError, ReplicaAssignorAdminClient
from .security import SECURITY_PROTOCOLS, uses_sasl, uses_tls

_LEN = struct.Struct(">i")
_JAAS_OPTION = re.compile(r'(\w+)\s*=\s*"((?:[^"\\]|\\.)*)"')


@dataclass(frozen=True, slots=True)
class SecurityOptions:
    security_protocol: str = "PLAINTEXT"
    ssl_cafile: str | None = None
    ssl_certfile: str | None = None  # PEM: the client certificate (chain), may also hold the key
    ssl_keyfile: str | None = None
    ssl_password: str | None = None
    ssl_check_hostname: bool = True
    sasl_mechanism: str = "SCRAM-SHA-256"
    sasl_username: str | None = None
    sasl_password: str | None = None

    def __post_init__(self) -> None:
        if self.security_protocol not in SECURITY_PROTOCOLS:
            raise ValueError(f"security.protocol {self.security_protocol!r} is not supported")
        if self.uses_sasl and (not self.sasl_username or self.sasl_password is None):
            raise ValueError(f"{self.security_protocol} needs a SASL user name and password")

    @property
    def uses_tls(self) -> bool:
        return uses_tls(self.security_protocol)

    @property
    def uses_sasl(self) -> bool:
        return uses_sasl(self.security_protocol)

    @classmethod
    def from_properties(cls, props: Mapping[str, str]) -> SecurityOptions:
        """Kafka client properties: ``security.protocol``, ``ssl.truststore.location``,
        ``ssl.keystore.location`` (PEM: key and certificate), ``ssl.key.password``,
        ``ssl.endpoint.identification.algorithm`` (empty: no host name check),
        ``sasl.mechanism``, ``sasl.jaas.config`` (``username="..." password="..."``)."""
        username = password = None
        jaas = props.get("sasl.jaas.config", "")
        if jaas:
            options = {k: v.replace('\\"', '"').replace("\\\\", "\\") for k, v in _JAAS_OPTION.findall(jaas)}
            username, password = options.get("username"), options.get("password")
        keystore = props.get("ssl.keystore.location") or None
        return cls(
            security_protocol=props.get("security.protocol", "PLAINTEXT").strip().upper(),
            ssl_cafile=props.get("ssl.truststore.location") or None,
            ssl_certfile=keystore, ssl_keyfile=keystore,
            ssl_password=props.get("ssl.key.password") or None,
            ssl_check_hostname=props.get("ssl.endpoint.identification.algorithm", "https").strip() != "",
            sasl_mechanism=props.get("sasl.mechanism", "SCRAM-SHA-256").strip().upper(),
            sasl_username=username, sasl_password=password,
        )

    def ssl_context(self) -> ssl.SSLContext:
        ctx = ssl.create_default_context(cafile=self.ssl_cafile)
        ctx.check_hostname = self.ssl_check_hostname
        if self.ssl_certfile:
            ctx.load_cert_chain(self.ssl_certfile, self.ssl_keyfile, password=self.ssl_password)
        return ctx


class SecureReplicaAssignorAdminClient(ReplicaAssignorAdminClient):
    """:class:`ReplicaAssignorAdminClient` over ``SSL``, ``SASL_PLAINTEXT`` or ``SASL_SSL``."""

    def __init__(self, bootstrap_server: str, security: SecurityOptions | None = None,
                 client_id: str = "replica-assignor-admin", request_timeout_ms: int = 30_000) -> None:
        super().__init__(bootstrap_server, client_id=client_id, request_timeout_ms=request_timeout_ms)
        self.security = security or SecurityOptions()
        self.client_id = client_id
        self._cid = 1 << 30  # our own correlation ids for the SASL exchange

    def _connect(self) -> None:
        if self._sock is not None:
            return
        try:
            sock = socket.create_connection((self.host, self.port), timeout=self.timeout)
        except OSError as exc:
            raise kafka_errors.KafkaConnectionError(f"cannot connect to {self.where}: {exc.strerror or exc}") from None
        try:
            if self.security.uses_tls:
                sock = self.security.ssl_context().wrap_socket(sock, server_hostname=self.host)
        except (ssl.SSLError, OSError) as exc:
            sock.close()
            raise kafka_errors.KafkaConnectionError(f"TLS handshake with {self.where} failed: {exc}") from None
        self._sock = sock
        try:
            while True:
                cid, data = self._session.api_versions_request()
                if not self._session.on_api_versions(cid, self._roundtrip(data), self.where):
                    break
            if self.security.uses_sasl:
                self._authenticate()
        except BaseException:
            self.close()
            raise

    def _request(self, request, response_class, version: int, flexible_response: bool):
        self._cid += 1
        cid = self._cid
        request.with_header(correlation_id=cid, client_id=self.client_id)
        payload = self._roundtrip(request.encode(header=True, framed=True))
        (got,) = _LEN.unpack_from(payload, 0)
        if got != cid:
            raise ProtocolViolationError(f"{self.where} answered correlation id {got}, expected {cid}")
        pos = 5 if flexible_response else 4
        return response_class.decode(payload[pos:], version=version)

    def _authenticate(self) -> None:
        sec = self.security
        handshake = self._request(SaslHandshakeRequest(version=1, mechanism=sec.sasl_mechanism),
                                  SaslHandshakeResponse, 1, False)
        if handshake.error_code:
            raise kafka_errors.for_code(handshake.error_code)(
                f"{self.where} does not offer SASL mechanism {sec.sasl_mechanism}: enabled {handshake.mechanisms}")
        mechanism = get_sasl_mechanism(sec.sasl_mechanism)(
            host=self.host, security_protocol=sec.security_protocol, sasl_mechanism=sec.sasl_mechanism,
            sasl_plain_username=sec.sasl_username, sasl_plain_password=sec.sasl_password)
        version = 2
        while not mechanism.is_done():
            response = self._request(SaslAuthenticateRequest(version=version, auth_bytes=mechanism.auth_bytes()),
                                     SaslAuthenticateResponse, version, version >= 2)
            if response.error_code:
                raise kafka_errors.for_code(response.error_code)(response.error_message or "")
            try:
                mechanism.receive(response.auth_bytes)
            except ValueError as exc:  # e.g. the server's SCRAM signature is wrong
                raise kafka_errors.SaslAuthenticationFailedError(f"{self.where}: {exc}") from None
        if not mechanism.is_authenticated():
            raise kafka_errors.SaslAuthenticationFailedError(
                f"{self.where}: SASL {sec.sasl_mechanism} authentication did not complete")
