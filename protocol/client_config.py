"""Kafka client properties (a ``--command-config`` file): how a client connects.

The same file works for the assignor server (:class:`kafka_replica_assignor.protocol.client.ReplicaAssignorAdminClient`)
and for a Kafka cluster read or changed through kafka-python (:meth:`SecurityOptions.kafka_configs`),
so an operator writes it once, the way Kafka's own tools read it::

    security.protocol=SASL_SSL
    sasl.mechanism=SCRAM-SHA-512
    sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \\
        username="alice" password="alice-secret";
    ssl.truststore.type=PEM
    ssl.truststore.location=/etc/kafka/ca.pem

Goals
    Kafka's property names and meanings, no new ones; anything this client would not honour
    is refused by name rather than ignored (a setting silently dropped is a connection made
    with less security than the operator asked for).

Constraints
    - ``security.protocol``: ``PLAINTEXT``, ``SSL``, ``SASL_PLAINTEXT``, ``SASL_SSL``.
    - ``sasl.mechanism``: ``PLAIN`` (with ``PlainLoginModule``), ``SCRAM-SHA-256`` or
      ``SCRAM-SHA-512`` (with ``ScramLoginModule``), given in ``sasl.jaas.config`` as Kafka
      writes it: ``<module> required username="..." password="...";``.
    - Stores are PEM files only (``ssl.truststore.type`` and ``ssl.keystore.type`` must be
      ``PEM`` when given): ``ssl.truststore.location`` (CA certificates),
      ``ssl.keystore.location`` (the client's private key and certificate chain, one file),
      ``ssl.key.password`` (the key's password).
    - ``ssl.endpoint.identification.algorithm``: ``https`` (the default: the server's
      certificate must name the host) or empty (no host name check).
    - ``client.id`` is accepted and used as the client id.

Algorithm
    :func:`parse_properties` reads the Java-properties text; :meth:`SecurityOptions.from_properties`
    checks every key and value and builds the frozen options; :meth:`SecurityOptions.kafka_configs`
    maps them to kafka-python's ``KafkaAdminClient`` settings.

Example
    =========================================== =================================================
    property                                    kafka-python setting
    =========================================== =================================================
    ``security.protocol=SASL_SSL``              ``security_protocol="SASL_SSL"``
    ``sasl.mechanism=SCRAM-SHA-512``            ``sasl_mechanism="SCRAM-SHA-512"``
    ``sasl.jaas.config=... username="u" ...``   ``sasl_plain_username="u"``, ``sasl_plain_password``
    ``ssl.truststore.location=ca.pem``          ``ssl_cafile="ca.pem"``
    ``ssl.keystore.location=me.pem``            ``ssl_certfile="me.pem"``, ``ssl_keyfile="me.pem"``
    ``ssl.key.password=k``                      ``ssl_password="k"``
    ``ssl.endpoint.identification.algorithm=``  ``ssl_check_hostname=False``
    =========================================== =================================================
"""

from __future__ import annotations

import re
import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .security import SASL_MECHANISMS, SECURITY_PROTOCOLS, uses_sasl, uses_tls

_LOGIN_MODULES = {
    "PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
    "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule",
}
KNOWN_PROPERTIES = frozenset({
    "security.protocol", "sasl.mechanism", "sasl.jaas.config",
    "ssl.truststore.type", "ssl.truststore.location",
    "ssl.keystore.type", "ssl.keystore.location", "ssl.key.password",
    "ssl.endpoint.identification.algorithm", "client.id",
})
_JAAS = re.compile(r'^\s*(?P<module>[\w.$]+)\s+(?P<flag>required|requisite|sufficient|optional)'
                   r'(?P<options>(?:\s+\w+\s*=\s*"(?:[^"\\]|\\.)*")*)\s*;\s*$')
_JAAS_OPTION = re.compile(r'(\w+)\s*=\s*"((?:[^"\\]|\\.)*)"')


class ClientConfigError(ValueError):
    """A client properties file that cannot be honoured; the message names the key, on one line."""


def parse_properties(text: str, source: str = "<properties>") -> dict[str, str]:
    """Java-properties subset: ``key=value`` or ``key: value``, ``#``/``!`` comments,
    ``\\`` line continuations."""
    props: dict[str, str] = {}
    pending = ""
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = pending + raw.strip()
        pending = ""
        if not line or line[0] in "#!":
            continue
        if line.endswith("\\"):
            pending = line[:-1]
            continue
        sep = min((i for i in (line.find("="), line.find(":")) if i > 0), default=-1)
        if sep < 0:
            raise ClientConfigError(f"{source} line {lineno}: expected key=value, got {raw.strip()!r}")
        props[line[:sep].strip()] = line[sep + 1:].strip()
    if pending:
        raise ClientConfigError(f"{source}: the last line ends with a continuation backslash")
    return props


def read_properties(path: str) -> dict[str, str]:
    """The properties of the file at ``path``; any failure is a :class:`ClientConfigError`
    naming ``path``."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise ClientConfigError(f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}") from None
    return parse_properties(text, path)


def _unescape(value: str) -> str:
    return re.sub(r"\\(.)", r"\1", value)


def parse_jaas(text: str, mechanism: str) -> tuple[str, str]:
    """(user name, password) of a ``sasl.jaas.config`` value for ``mechanism``."""
    match = _JAAS.match(text)
    if match is None:
        raise ClientConfigError(
            'sasl.jaas.config must read <LoginModule> required username="..." password="...";')
    module = match["module"]
    if module != _LOGIN_MODULES[mechanism]:
        raise ClientConfigError(f"sasl.jaas.config: {module} is not the login module of sasl.mechanism "
                                f"{mechanism} (use {_LOGIN_MODULES[mechanism]})")
    options = {k: _unescape(v) for k, v in _JAAS_OPTION.findall(match["options"])}
    extra = sorted(set(options) - {"username", "password"})
    if extra:
        raise ClientConfigError(f"sasl.jaas.config: option {extra[0]!r} is not supported (only username, password)")
    if not options.get("username") or "password" not in options:
        raise ClientConfigError("sasl.jaas.config needs username=\"...\" and password=\"...\"")
    return options["username"], options["password"]


@dataclass(frozen=True, slots=True)
class SecurityOptions:
    """How to connect: the security protocol, TLS files and SASL credentials."""

    security_protocol: str = "PLAINTEXT"
    ssl_cafile: str | None = None
    ssl_certfile: str | None = None  # PEM: the client certificate (chain), may also hold the key
    ssl_keyfile: str | None = None
    ssl_password: str | None = None
    ssl_check_hostname: bool = True
    sasl_mechanism: str = "SCRAM-SHA-256"
    sasl_username: str | None = None
    sasl_password: str | None = None
    client_id: str | None = None

    def __post_init__(self) -> None:
        if self.security_protocol not in SECURITY_PROTOCOLS:
            raise ClientConfigError(f"security.protocol {self.security_protocol!r} is not supported "
                                    f"(one of {', '.join(SECURITY_PROTOCOLS)})")
        if self.sasl_mechanism not in SASL_MECHANISMS:
            raise ClientConfigError(f"sasl.mechanism {self.sasl_mechanism!r} is not supported "
                                    f"(one of {', '.join(SASL_MECHANISMS)})")
        if self.uses_sasl and (not self.sasl_username or self.sasl_password is None):
            raise ClientConfigError(f"security.protocol {self.security_protocol} needs a SASL user name and "
                                    "password (sasl.jaas.config)")

    @property
    def uses_tls(self) -> bool:
        return uses_tls(self.security_protocol)

    @property
    def uses_sasl(self) -> bool:
        return uses_sasl(self.security_protocol)

    @classmethod
    def from_properties(cls, props: Mapping[str, str]) -> SecurityOptions:
        """Check Kafka client properties (see the module docstring) and build the options."""
        for key in props:
            if key not in KNOWN_PROPERTIES:
                raise ClientConfigError(f"client property {key!r} is not supported "
                                        f"(supported: {', '.join(sorted(KNOWN_PROPERTIES))})")
        for key in ("ssl.truststore.type", "ssl.keystore.type"):
            value = props.get(key, "PEM").strip().upper()
            if value != "PEM":
                raise ClientConfigError(f"{key}={props[key]} is not supported: only PEM files "
                                        "(convert with keytool -importkeystore and openssl pkcs12)")
        endpoint = props.get("ssl.endpoint.identification.algorithm", "https").strip()
        if endpoint.lower() not in ("https", ""):
            raise ClientConfigError(f"ssl.endpoint.identification.algorithm={endpoint} is not supported "
                                    "(https, or empty for no host name check)")
        protocol = props.get("security.protocol", "PLAINTEXT").strip().upper()
        mechanism = props.get("sasl.mechanism", "").strip().upper() or ("GSSAPI" if uses_sasl(protocol) else "")
        if mechanism and mechanism not in SASL_MECHANISMS:
            raise ClientConfigError(f"sasl.mechanism {mechanism} is not supported (one of "
                                    f"{', '.join(SASL_MECHANISMS)}; Kafka's default is GSSAPI: set sasl.mechanism)")
        username = password = None
        jaas = props.get("sasl.jaas.config", "").strip()
        if jaas and uses_sasl(protocol):
            username, password = parse_jaas(jaas, mechanism)
        keystore = props.get("ssl.keystore.location", "").strip() or None
        if props.get("ssl.key.password") and keystore is None:
            raise ClientConfigError("ssl.key.password is set but ssl.keystore.location is not")
        return cls(
            security_protocol=protocol,
            ssl_cafile=props.get("ssl.truststore.location", "").strip() or None,
            ssl_certfile=keystore, ssl_keyfile=keystore,
            ssl_password=props.get("ssl.key.password") or None,
            ssl_check_hostname=endpoint != "",
            sasl_mechanism=mechanism or "SCRAM-SHA-256",
            sasl_username=username, sasl_password=password,
            client_id=props.get("client.id", "").strip() or None,
        )

    @classmethod
    def from_file(cls, path: str | None) -> SecurityOptions:
        """The options of a ``--command-config`` file (PLAINTEXT when ``path`` is None)."""
        if path is None:
            return cls()
        try:
            return cls.from_properties(read_properties(path))
        except ClientConfigError as exc:
            message = str(exc)
            raise ClientConfigError(message if path in message else f"{path}: {message}") from None

    def ssl_context(self) -> ssl.SSLContext:
        """The client TLS context: the truststore (or the system's CAs), the host name check,
        and the client certificate when a keystore is given."""
        ctx = ssl.create_default_context(cafile=self.ssl_cafile)
        ctx.check_hostname = self.ssl_check_hostname
        if self.ssl_certfile:
            ctx.load_cert_chain(self.ssl_certfile, self.ssl_keyfile, password=self.ssl_password)
        return ctx

    def kafka_configs(self) -> dict[str, Any]:
        """kafka-python ``KafkaAdminClient`` settings for these options."""
        configs: dict[str, Any] = {"security_protocol": self.security_protocol}
        if self.client_id:
            configs["client_id"] = self.client_id
        if self.uses_tls:
            configs.update(ssl_cafile=self.ssl_cafile, ssl_certfile=self.ssl_certfile,
                           ssl_keyfile=self.ssl_keyfile, ssl_password=self.ssl_password,
                           ssl_check_hostname=self.ssl_check_hostname)
        if self.uses_sasl:
            configs.update(sasl_mechanism=self.sasl_mechanism, sasl_plain_username=self.sasl_username,
                           sasl_plain_password=self.sasl_password)
        return configs


__all__ = [
    "KNOWN_PROPERTIES",
    "SASL_MECHANISMS",
    "ClientConfigError",
    "SecurityOptions",
    "parse_jaas",
    "parse_properties",
    "read_properties",
]
