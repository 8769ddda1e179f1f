"""Server configuration: a Kafka-style properties file plus ``--override key=value``.

Names follow Kafka's where Kafka has one (``listeners``, ``advertised.listeners``,
``socket.request.max.bytes``, ``min.insync.replicas``, ``ssl.*``, ``sasl.*``, ...). Unknown
keys are refused, so a typo fails at start-up with its name instead of being silently
ignored; so are combinations that cannot work (an ``SSL`` listener without a keystore, a
``SASL_*`` listener without a users file). docs/security.md describes the security keys.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from kafka_replica_assignor.assignors.registry import REGISTERED
from kafka_replica_assignor.protocol.client_config import ClientConfigError
from kafka_replica_assignor.protocol.client_config import parse_properties as read_properties_text
from kafka_replica_assignor.protocol.security import (
    SASL_MECHANISMS,
    SCRAM_HASHES,
    SECURITY_PROTOCOLS,
    uses_sasl,
    uses_tls,
)


class ConfigError(ValueError):
    """The configuration is unusable; the message names the key."""


TLS_VERSIONS = ("TLSv1.2", "TLSv1.3")
MAX_WORKER_PROCESSES = 256  # a typo (1000) must not start a thousand interpreters


@dataclass(frozen=True, slots=True)
class Listener:
    security_protocol: str
    host: str
    port: int

    @classmethod
    def parse(cls, text: str, key: str = "listeners") -> Listener:
        text = text.strip()
        if "://" not in text:
            raise ConfigError(f"{key}: expected PROTOCOL://host:port, got {text!r}")
        proto, _, rest = text.partition("://")
        proto = proto.upper()
        if proto not in SECURITY_PROTOCOLS:
            raise ConfigError(f"{key}: security protocol {proto} is not supported "
                              f"(use one of {', '.join(SECURITY_PROTOCOLS)})")
        try:
            parts = urlsplit("//" + rest)
            host, port = parts.hostname, parts.port
        except ValueError as exc:
            raise ConfigError(f"{key}: {exc} in {text!r}") from None
        if port is None:
            raise ConfigError(f"{key}: no port in {text!r}")
        # no host: the wildcard, every interface of both families, as Kafka (kafka_replica_assignor.server.binding)
        return cls(proto, host or "", port)

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.security_protocol}://{host}:{self.port}"

    @property
    def uses_tls(self) -> bool:
        return uses_tls(self.security_protocol)

    @property
    def uses_sasl(self) -> bool:
        return uses_sasl(self.security_protocol)


def default_cluster_file() -> str:
    return str(resources.files("kafka_replica_assignor.server").joinpath("default-cluster.json"))


# --- the types of values (Kafka's ConfigDef.Type with its validator): each parses one
# property's text, refuses a bad one naming the key, and describes what it accepts ---

class _Type:
    """Parses one property value, refusing a bad one with a message that names the key."""

    __slots__ = ()

    def describe(self) -> str:
        """What the docs table says it accepts."""
        raise NotImplementedError

    def parse(self, key: str, text: str, base_dir: Path | None) -> Any:
        raise NotImplementedError

    def show(self, value: Any) -> str:
        """A default value as the properties file would spell it."""
        if isinstance(value, tuple):
            return ",".join(str(v) for v in value)
        if isinstance(value, bool):
            return str(value).lower()
        return str(value)


@dataclass(frozen=True, slots=True)
class _Int(_Type):
    minimum: int | None = None
    maximum: int | None = None
    unbounded: int | None = None  # a value below ``minimum`` that means "no limit" (Kafka's -1)

    def describe(self) -> str:
        if self.minimum is None:
            return "an integer"
        bounds = f"[{self.minimum}, {self.maximum}]" if self.maximum is not None else f">= {self.minimum}"
        return bounds if self.unbounded is None else f"{self.unbounded} (unbounded) or {bounds}"

    def parse(self, key: str, text: str, base_dir: Path | None) -> int:
        try:
            n = int(text.strip())
        except ValueError:
            raise ConfigError(f"{key}: expected an integer, got {text!r}") from None
        if n == self.unbounded:
            return n
        if self.minimum is not None and n < self.minimum:
            if self.unbounded is not None:
                raise ConfigError(f"{key}: must be {self.unbounded} (unbounded) or >= {self.minimum}, got {n}")
            raise ConfigError(f"{key}: must be >= {self.minimum}, got {n}")
        if self.maximum is not None and n > self.maximum:
            raise ConfigError(f"{key}: must be <= {self.maximum}, got {n}")
        return n


@dataclass(frozen=True, slots=True)
class _OptionalInt(_Type):
    def describe(self) -> str:
        return "an integer, or empty"

    def parse(self, key: str, text: str, base_dir: Path | None) -> int | None:
        return None if text.strip() == "" else _Int().parse(key, text, base_dir)


@dataclass(frozen=True, slots=True)
class _Bool(_Type):
    def describe(self) -> str:
        return "true, false"

    def parse(self, key: str, text: str, base_dir: Path | None) -> bool:
        v = text.strip().lower()
        if v in {"true", "1", "yes"}:
            return True
        if v in {"false", "0", "no"}:
            return False
        raise ConfigError(f"{key}: expected true or false, got {text!r}")


@dataclass(frozen=True, slots=True)
class _Choice(_Type):
    """One of ``choices``, compared in lower case (upper case with ``upper``)."""

    choices: tuple[str, ...]
    upper: bool = False
    refusal: str = ""  # in place of "expected a, b or c"

    def describe(self) -> str:
        return ", ".join(self.choices)

    def parse(self, key: str, text: str, base_dir: Path | None) -> str:
        v = text.strip().upper() if self.upper else text.strip().lower()
        if v not in self.choices:
            *first, last = self.choices
            if self.refusal:
                raise ConfigError(self.refusal.format(key=key, text=text))
            raise ConfigError(f"{key}: expected {', '.join(first)} or {last}, got {text!r}")
        return v


@dataclass(frozen=True, slots=True)
class _ChoiceList(_Type):
    """A non-empty comma-separated list of ``choices``; duplicates keep their first place."""

    choices: tuple[str, ...]
    upper: bool = False
    refusal: str = "expected a list of"

    def describe(self) -> str:
        return "a list of " + ", ".join(self.choices)

    def parse(self, key: str, text: str, base_dir: Path | None) -> tuple[str, ...]:
        items = tuple(v.strip().upper() if self.upper else v.strip() for v in text.split(",") if v.strip())
        if not items or any(v not in self.choices for v in items):
            raise ConfigError(f"{key}: {self.refusal} {', '.join(self.choices)}, got {text!r}")
        return tuple(dict.fromkeys(items))


@dataclass(frozen=True, slots=True)
class _Listeners(_Type):
    required: bool

    def describe(self) -> str:
        return "a list of PROTOCOL://host:port" + ("" if self.required else ", or empty")

    def parse(self, key: str, text: str, base_dir: Path | None) -> tuple[Listener, ...]:
        specs = [v for v in text.split(",") if v.strip()]
        if self.required and not specs:
            raise ConfigError(f"{key}: at least one listener is required")
        return tuple(Listener.parse(v, key) for v in specs)

    def show(self, value: Any) -> str:
        return ",".join(str(listener) for listener in value)


@dataclass(frozen=True, slots=True)
class _Path(_Type):
    """A file; relative to the properties file it is read from (to the working directory in overrides)."""

    def describe(self) -> str:
        return "a path"

    def parse(self, key: str, text: str, base_dir: Path | None) -> str:
        v = text.strip()
        if not v:
            raise ConfigError(f"{key}: a path is required")
        p = Path(os.path.expanduser(v))
        if not p.is_absolute() and base_dir is not None:
            p = base_dir / p
        return str(p)


@dataclass(frozen=True, slots=True)
class _Text(_Type):
    """Free text; empty means unset, unless ``required``."""


    required: str = ""  # what the refusal of an empty value calls the missing thing

    def describe(self) -> str:
        return "text" if self.required else "text, or empty"

    def parse(self, key: str, text: str, base_dir: Path | None) -> str | None:
        v = text.strip()
        if not v and self.required:
            raise ConfigError(f"{key}: {self.required} is required")
        return v or None


@dataclass(frozen=True, slots=True)
class _Principals(_Type):
    def describe(self) -> str:
        return "a list of User:name"

    def parse(self, key: str, text: str, base_dir: Path | None) -> tuple[str, ...]:
        return parse_principals(key, text)


@dataclass(frozen=True, slots=True)
class _HttpListener(_Type):
    def describe(self) -> str:
        return "http://host:port, or empty"

    def parse(self, key: str, text: str, base_dir: Path | None) -> str | None:
        return _metrics_listener(key, text)


@dataclass(frozen=True, slots=True)
class ConfigKey:
    """One property, declared once: parsing, the default, the refusal and the docs come from here."""

    name: str
    type: _Type
    doc: str
    # the default as the docs table shows it, when not the value itself ("the bound address")
    default_doc: str | None = None
    # documented in docs/security.md's tables instead of the README's
    security: bool = False


_KEY = "config_key"


def _setting(name: str, type_: _Type, default: Any, doc: str, *, default_doc: str | None = None,
             security: bool = False, default_factory: Any = None, secret: bool = False) -> Any:
    """A :class:`ServerConfig` field declaring the property ``name`` (typed ``Any`` for the dataclass)."""
    metadata = {_KEY: ConfigKey(name, type_, doc, default_doc, security)}
    if default_factory is not None:
        return field(default_factory=default_factory, metadata=metadata, repr=not secret)
    return field(default=default, metadata=metadata, repr=not secret)


_PEM = _Choice(("PEM",), upper=True, refusal="{key}: only PEM is supported, got {text!r} "
                                             "(convert a JKS or PKCS12 store with keytool and openssl)")


@dataclass(frozen=True, slots=True)
class ServerConfig:
    """Every server property, each declared once (name, type and range, default, doc).

    The fields are in the order of the docs tables; :data:`CONFIG_KEYS` indexes them by
    property name, :func:`load_config` parses through them, :func:`property_table` writes
    the README's table from them (``tests/unit/test_config_declaration.py`` keeps it so).
    """

    listeners: tuple[Listener, ...] = _setting(
        "listeners", _Listeners(required=True), (Listener("PLAINTEXT", "127.0.0.1", 9095),),
        "where to listen: one listener per security protocol, each bound with its own; an empty host "
        "(`PLAINTEXT://:9095`) or `[::]`: every interface, IPv4 and IPv6; `0.0.0.0`: IPv4 only (docs/security.md)")
    advertised_listeners: tuple[Listener, ...] = _setting(
        "advertised.listeners", _Listeners(required=False), (), "what Metadata tells clients",
        default_doc="the bound address")
    replica_assignor_class_name: str = _setting(
        "replica.assignor.class.name", _Text(required="a class name"), "default",
        ", ".join(f"`{name}`" for name in REGISTERED) + ", or `package.module.Class`")
    replica_assignor_random_seed: int | None = _setting(
        "replica.assignor.random.seed", _OptionalInt(), None,
        "deterministic mode: the same request always gets the same bytes",
        default_doc="unset (random, as Kafka)")
    cluster_metadata_file: str = _setting(
        "cluster.metadata.file", _Path(), None,
        "cluster snapshot (format below); re-read every `metadata.refresh.interval.ms` only when it changed, "
        "parsed off the event loop; an invalid file, or one without brokers, keeps the last good view",
        default_doc="the embedded 6-broker example", default_factory=default_cluster_file)
    cluster_metadata_file_max_bytes: int = _setting(
        "cluster.metadata.file.max.bytes", _Int(1), 256 * 1024 * 1024,
        "a larger snapshot file is refused: at start-up with one line, later by keeping the last good view "
        "(`metadata_refresh_failed`)", default_doc="268435456 (256 MiB)")
    bootstrap_servers: str | None = _setting(
        "bootstrap.servers", _Text(), None, "follow a live Kafka cluster instead of a file")
    metadata_refresh_interval_ms: int = _setting(
        "metadata.refresh.interval.ms", _Int(1), 30_000, "live-cluster or snapshot-file refresh")
    observed_brokers_path: str | None = _setting(
        "observed.brokers.path", _Path(), None, "SQLite store of every broker ever seen (KIP-409)")
    enable_under_replicated_topic_creation: bool = _setting(
        "enable.under.replicated.topic.creation", _Bool(), False, "allow placeholders when brokers are down")
    min_insync_replicas: int = _setting(
        "min.insync.replicas", _Int(1), 1, "alive brokers needed per partition for placeholders")
    socket_request_max_bytes: int = _setting(
        "socket.request.max.bytes", _Int(1), 104_857_600, "larger frames close the connection, as in Kafka")
    queued_max_request_bytes: int = _setting(
        "queued.max.request.bytes", _Int(1, unbounded=-1), 512 * 1024 * 1024,
        "request bytes all connections may buffer together; over it the server stops reading until requests "
        "are processed (Kafka's name; its default -1, unbounded, is accepted; at least "
        "`socket.request.max.bytes`)")
    queued_max_response_bytes: int = _setting(
        "queued.max.response.bytes", _Int(1, unbounded=-1), 256 * 1024 * 1024,
        "answer bytes all connections may hold unread by their clients; over it the connections holding the "
        "most are closed (docs/security.md)", default_doc="268435456 (256 MiB)")
    max_connections: int = _setting(
        "max.connections", _Int(1), 2_000, "a new connection over it is closed at once")
    max_connection_creation_rate: int = _setting(
        "max.connection.creation.rate", _Int(1, unbounded=-1), 100,
        "new connections per second, after a burst of as many (KIP-612): a connection over the rate waits for "
        "its turn as in a listen backlog (a socket, not a `max.connections` slot; at most "
        "`max.connection.creation.wait.ms`, and at most "
        "`max.connections` of them), the address served least recently first; one that closes while it "
        "waits, or is refused in its turn, takes no turn (docs/security.md)")
    max_connection_creation_wait_ms: int = _setting(
        "max.connection.creation.wait.ms", _Int(1), 10_000,
        "a connection waiting for its turn of `max.connection.creation.rate` is refused after this long (a "
        "Kafka client gives up on a connection after 10 s, `socket.connection.setup.timeout.ms`)")
    max_connection_creation_rate_per_ip: int = _setting(
        "max.connection.creation.rate.per.ip", _Int(1, unbounded=-1), -1,
        "the same, per client address (Kafka's connection_creation_rate quota of an address, unbounded there "
        "by default too): a connection over it is refused at once. Clients behind one address (NAT, a "
        "Kubernetes node) share it (docs/security.md)")
    max_connections_per_ip: int = _setting(
        "max.connections.per.ip", _Int(1), 1_000, "the same, per client address")
    connections_max_idle_ms: int = _setting(
        "connections.max.idle.ms", _Int(1), 600_000, "a connection idle for that long is closed")
    request_receive_timeout_ms: int = _setting(
        "request.receive.timeout.ms", _Int(1), 30_000,
        "a request frame not received whole that long after its first bytes closes its connection; more "
        "bytes do not extend it, and time waiting for `queued.max.request.bytes` counts (docs/security.md)")
    large_request_stall_timeout_ms: int = _setting(
        "large.request.stall.timeout.ms", _Int(1), 1_000,
        "a request frame of 1 MiB or more whose bytes stop coming for that long while other large frames wait "
        "for their share of `queued.max.request.bytes` closes its connection (docs/security.md)")
    max_inflight_requests_per_connection: int = _setting(
        "max.inflight.requests.per.connection", _Int(1), 64,
        "the server stops reading a connection with that many requests unanswered")
    metadata_max_topics_per_request: int = _setting(
        "metadata.max.topics.per.request", _Int(0), 10_000,
        "a Metadata request naming more topics (or larger than that many can be) closes the connection before "
        "it is decoded (docs/security.md)")
    max_partitions_per_request: int = _setting(
        "max.partitions.per.request", _Int(1), 1_000_000, "more partitions are refused (INVALID_PARTITIONS)")
    assignor_max_workers: int = _setting(
        "replica.assignor.max.workers", _Int(1), 4,
        "placements running off the event loop at once (worker processes or threads)")
    assignor_max_queued_placements: int = _setting(
        "replica.assignor.max.queued.placements", _Int(0), 64,
        "placements waiting for a worker; more are refused at once (REPLICA_ASSIGNOR_FAILED); one connection "
        "runs at most half the workers at once (docs/security.md)")
    inline_assignment_max_replicas: int = _setting(
        "replica.assignor.inline.max.replicas", _Int(0), 3_000,
        "a built-in assignor's placement of at most this many replicas runs on the event loop "
        "(docs/architecture.md)")
    memo_max_entries: int = _setting(
        "replica.assignor.memo.max.entries", _Int(0), 4_096,
        "small placements (at most 1,024 replicas) kept per distinct random draw and broker layout, already "
        "validated and encoded; 0 turns it off (docs/architecture.md)")
    assignor_isolation: str = _setting(
        "replica.assignor.isolation", _Choice(("process", "thread")), "process",
        "where other placements run: killable worker processes, or threads for debugging (docs/security.md)")
    assignor_worker_max_memory_bytes: int = _setting(
        "replica.assignor.worker.max.memory.bytes", _Int(0), 2 * 1024 ** 3,
        "address-space cap of each worker process; 0: none", default_doc="2147483648 (2 GiB)")
    shutdown_timeout_ms: int = _setting(
        "shutdown.timeout.ms", _Int(1), 10_000, "on SIGTERM, in-flight requests get this long to finish")
    authorizer_allowed_principals: tuple[str, ...] = _setting(
        "authorizer.allowed.principals", _Principals(), (),
        "who may call CreateReplicaAssignment (others get CLUSTER_AUTHORIZATION_FAILED)",
        default_doc="unset (everyone)")
    metrics_listener: str | None = _setting(
        "metrics.listener", _HttpListener(), None, "Prometheus `/metrics` and `/health` over HTTP")
    num_worker_processes: int = _setting(
        "num.worker.processes", _Int(1, maximum=MAX_WORKER_PROCESSES), 1,
        "worker processes sharing the listener with `SO_REUSEPORT`, up to one per core (docs/architecture.md); "
        "refused with `metrics.listener`")
    log_format: str = _setting(
        "log.format", _Choice(("auto", "json", "console")), "auto", "`console` only on a TTY with `auto`")
    log_level: str = _setting(
        "log.level", _Choice(("debug", "info", "warning", "error")), "info", "the least severe line logged")
    event_loop: str = _setting(
        "event.loop", _Choice(("uvloop", "asyncio")), "uvloop", "the event loop (`--loop` overrides it)")
    node_id: int = _setting(
        "node.id", _Int(0), 0, "the broker id this server gives itself in Metadata")
    # TLS (listeners SSL:// and SASL_SSL://); PEM files only: docs/security.md
    ssl_keystore_location: str | None = _setting(
        "ssl.keystore.location", _Path(), None,
        "PEM file: the server's private key and its certificate chain (leaf first)",
        default_doc="required for `SSL`, `SASL_SSL`", security=True)
    ssl_keystore_type: str = _setting(
        "ssl.keystore.type", _PEM, "PEM", "only `PEM`", security=True)
    ssl_key_password: str | None = _setting(
        "ssl.key.password", _Text(), None, "password of the private key, if it is encrypted", security=True,
        secret=True)  # never in a log line
    ssl_truststore_location: str | None = _setting(
        "ssl.truststore.location", _Path(), None, "PEM file of the CA certificates that sign *client* certificates",
        security=True)
    ssl_truststore_type: str = _setting(
        "ssl.truststore.type", _PEM, "PEM", "only `PEM`", security=True)
    ssl_client_auth: str = _setting(
        "ssl.client.auth", _Choice(("required", "requested", "none")), "none", "whether client certificates "
        "are asked for", security=True)
    ssl_enabled_protocols: tuple[str, ...] = _setting(
        "ssl.enabled.protocols", _ChoiceList(TLS_VERSIONS), TLS_VERSIONS, "nothing older is offered",
        security=True)
    ssl_cipher_suites: str | None = _setting(
        "ssl.cipher.suites", _Text(), None, "OpenSSL cipher list for TLS 1.2", default_doc="Python's defaults",
        security=True)
    ssl_handshake_timeout_ms: int = _setting(
        "ssl.handshake.timeout.ms", _Int(1), 10_000, "a TLS handshake must complete within this", security=True)
    # SASL (listeners SASL_PLAINTEXT:// and SASL_SSL://): docs/security.md
    sasl_enabled_mechanisms: tuple[str, ...] = _setting(
        "sasl.enabled.mechanisms", _ChoiceList(SASL_MECHANISMS, upper=True, refusal="supported mechanisms are"),
        tuple(SCRAM_HASHES), "PLAIN is opt-in", security=True)
    sasl_users_file: str | None = _setting(
        "sasl.users.file", _Path(), None, "the users file", default_doc="required for `SASL_*`", security=True)
    sasl_server_max_receive_size: int = _setting(
        "sasl.server.max.receive.size", _Int(1), 524_288, "largest frame accepted before authentication",
        security=True)
    connection_failed_authentication_delay_ms: int = _setting(
        "connection.failed.authentication.delay.ms", _Int(0), 100,
        "a failed authentication is answered (then the connection closed) after this delay", security=True)
    max_failed_authentication_rate: int = _setting(
        "max.failed.authentication.rate", _Int(1, unbounded=-1), 20,
        "failed authentications answered per second, all addresses together (after a burst of as many): a "
        "failure over it is answered (then its connection closed) in its turn, the address served least "
        "recently first, after at most `max.failed.authentication.wait.ms`; so a password guesser gets that "
        "many answers however many addresses it has (not a Kafka key)", security=True)
    max_failed_authentication_wait_ms: int = _setting(
        "max.failed.authentication.wait.ms", _Int(1), 10_000,
        "a failed authentication waiting for its turn of `max.failed.authentication.rate` longer than this "
        "closes its connection unanswered (not a Kafka key)", security=True)

    @property
    def advertised(self) -> tuple[Listener, ...]:
        return self.advertised_listeners or self.listeners


# property name -> (ServerConfig attribute, declaration), in declaration order
CONFIG_KEYS: dict[str, tuple[str, ConfigKey]] = {
    f.metadata[_KEY].name: (f.name, f.metadata[_KEY]) for f in fields(ServerConfig)}


_DEFAULTS = ServerConfig()


def default_value(name: str) -> Any:
    """The default of property ``name``, as :class:`ServerConfig` holds it."""
    return getattr(_DEFAULTS, CONFIG_KEYS[name][0])


def property_table(*, security: bool = False) -> str:
    """The docs table of the properties (the README's, or with ``security`` those of docs/security.md)."""
    rows = ["| property | default | valid values | meaning |", "|---|---|---|---|"]
    for name, (_, key) in CONFIG_KEYS.items():
        if key.security != security:
            continue
        value = default_value(name)
        shown = key.default_doc or ("unset" if value is None or value == () else f"`{key.type.show(value)}`")
        rows.append(f"| `{name}` | {shown} | {key.type.describe()} | {key.doc} |")
    return "\n".join(rows) + "\n"


def parse_principals(key: str, value: str) -> tuple[str, ...]:
    """``User:alice,User:CN=client,O=Example``: a comma starts a new entry only before
    ``User:``, so certificate subjects (which contain commas) can be listed as they are."""
    items = tuple(v.strip() for v in re.split(r",(?=\s*User:)", value) if v.strip())
    bad = [v for v in items if not v.startswith("User:") or len(v) == len("User:")]
    if bad:
        raise ConfigError(f"{key}: principals look like User:name, got {bad[0]!r}")
    return items


def _metrics_listener(key: str, value: str) -> str | None:
    v = value.strip()
    if not v:
        return None
    parts = urlsplit(v)
    try:
        port = parts.port
    except ValueError as exc:
        raise ConfigError(f"{key}: {exc} in {v!r}") from None
    if parts.scheme != "http" or port is None or parts.path not in ("", "/"):
        raise ConfigError(f"{key}: expected http://host:port, got {v!r}")
    return f"http://{parts.netloc}"


def metrics_address(config: ServerConfig) -> tuple[str, int] | None:
    """(host, port) of ``metrics.listener``, or None when metrics are off."""
    if not config.metrics_listener:
        return None
    parts = urlsplit(config.metrics_listener)
    return parts.hostname or "127.0.0.1", parts.port or 0


def _check(config: ServerConfig) -> ServerConfig:
    """Combinations that cannot work fail at start-up, naming the keys involved."""
    protocols = [listener.security_protocol for listener in config.listeners]
    if len(set(protocols)) < len(protocols):
        # listeners are named by their security protocol (there is no listener.security.protocol.map)
        raise ConfigError(f"listeners: at most one listener per security protocol, got "
                          f"{', '.join(map(str, config.listeners))}")
    if len(config.listeners) > 1 and config.num_worker_processes > 1:
        raise ConfigError(f"listeners: {len(config.listeners)} listeners cannot be combined with "
                          f"num.worker.processes={config.num_worker_processes} (the workers share one listener)")
    if any(listener.uses_tls for listener in config.listeners) and not config.ssl_keystore_location:
        raise ConfigError("ssl.keystore.location: an SSL or SASL_SSL listener needs a PEM file with the "
                          "server's private key and certificate chain")
    if config.ssl_client_auth != "none" and not config.ssl_truststore_location:
        raise ConfigError(f"ssl.client.auth={config.ssl_client_auth} needs ssl.truststore.location "
                          f"(the CA certificates that sign client certificates)")
    if any(listener.uses_sasl for listener in config.listeners) and not config.sasl_users_file:
        raise ConfigError("sasl.users.file: a SASL_PLAINTEXT or SASL_SSL listener needs a users file "
                          "(create one with: replica-assignor users add --file FILE --user NAME)")
    if 0 < config.queued_max_request_bytes < config.socket_request_max_bytes:
        # as Kafka: one frame of the largest size must fit in the budget
        raise ConfigError(f"queued.max.request.bytes ({config.queued_max_request_bytes}) must be -1 or at least "
                          f"socket.request.max.bytes ({config.socket_request_max_bytes})")
    if config.num_worker_processes > 1 and config.metrics_listener:
        # each worker would count only its own share of the requests; refused until the
        # supervisor aggregates them (docs/architecture.md, "Worker processes")
        raise ConfigError(f"metrics.listener cannot be combined with num.worker.processes="
                          f"{config.num_worker_processes}: metrics are per process (unset one of them)")
    return config


def parse_properties(text: str, source: str = "<config>") -> dict[str, str]:
    """The server's properties file, in the one Java-properties reader the clients use too."""
    try:
        return read_properties_text(text, source)
    except ClientConfigError as exc:
        raise ConfigError(str(exc)) from None


def load_config(path: str | os.PathLike[str] | None = None,
                overrides: Iterable[str] | Mapping[str, str] = ()) -> ServerConfig:
    """Read ``path`` (if any), apply ``key=value`` overrides, and return a frozen config.

    Relative paths in the file are relative to the file; in overrides, to the working directory.
    """
    entries: dict[str, tuple[str, Path | None]] = {}
    if path is not None:
        p = Path(path)
        try:
            text = p.read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"cannot read config file {path}: {exc.strerror or exc}") from None
        base_dir = p.resolve().parent
        entries.update((k, (v, base_dir)) for k, v in parse_properties(text, str(path)).items())
    items = overrides.items() if isinstance(overrides, Mapping) else map(_split_override, overrides)
    entries.update((k.strip(), (v.strip(), None)) for k, v in items)
    values = {}
    for name, (value, base) in entries.items():
        if name not in CONFIG_KEYS:
            raise ConfigError(f"unknown configuration key {name!r}")
        attribute, key = CONFIG_KEYS[name]
        values[attribute] = key.type.parse(name, value, base)
    return _check(ServerConfig(**values))


def _split_override(item: str) -> tuple[str, str]:
    if "=" not in item:
        raise ConfigError(f"--override expects key=value, got {item!r}")
    key, _, value = item.partition("=")
    return key, value
