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
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from urllib.parse import urlsplit

from protocol.client_config import ClientConfigError
from protocol.client_config import parse_properties as read_properties_text
from protocol.security import SECURITY_PROTOCOLS, uses_sasl, uses_tls


class ConfigError(ValueError):
    """The configuration is unusable; the message names the key."""


SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
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
        return cls(proto, host or "127.0.0.1", port)

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.security_protocol}://{host}:{self.port}"

    @property
    def uses_tls(self) -> bool:
        return uses_tls(self.security_protocol)

    @property
    def uses_sasl(self) -> bool:
        return uses_sasl(self.security_protocol)


def _bool(key: str, value: str) -> bool:
    v = value.strip().lower()
    if v in {"true", "1", "yes"}:
        return True
    if v in {"false", "0", "no"}:
        return False
    raise ConfigError(f"{key}: expected true or false, got {value!r}")


def _int(key: str, value: str, minimum: int | None = None) -> int:
    try:
        n = int(value.strip())
    except ValueError:
        raise ConfigError(f"{key}: expected an integer, got {value!r}") from None
    if minimum is not None and n < minimum:
        raise ConfigError(f"{key}: must be >= {minimum}, got {n}")
    return n


def default_cluster_file() -> str:
    return str(resources.files("server").joinpath("default-cluster.json"))


@dataclass(frozen=True, slots=True)
class ServerConfig:
    listeners: tuple[Listener, ...] = (Listener("PLAINTEXT", "127.0.0.1", 9095),)
    advertised_listeners: tuple[Listener, ...] = ()
    replica_assignor_class_name: str = "default"
    replica_assignor_random_seed: int | None = None
    cluster_metadata_file: str = field(default_factory=default_cluster_file)
    # a larger snapshot file is refused (the last good view is kept): server/snapshot_file.py
    cluster_metadata_file_max_bytes: int = 256 * 1024 * 1024
    bootstrap_servers: str | None = None
    metadata_refresh_interval_ms: int = 30_000
    observed_brokers_path: str | None = None
    enable_under_replicated_topic_creation: bool = False
    min_insync_replicas: int = 1
    socket_request_max_bytes: int = 104_857_600
    # all connections' buffered request bytes together (Kafka's default -1 is unbounded);
    # at least socket.request.max.bytes, as Kafka requires
    queued_max_request_bytes: int = 512 * 1024 * 1024
    max_connections: int = 2_000
    max_connections_per_ip: int = 1_000
    connections_max_idle_ms: int = 600_000
    max_inflight_requests_per_connection: int = 64
    max_partitions_per_request: int = 1_000_000
    assignor_max_workers: int = 4
    inline_assignment_max_replicas: int = 3_000
    # assignors.memo: small placements kept per distinct draw (0 disables the memo)
    memo_max_entries: int = 4_096
    shutdown_timeout_ms: int = 10_000
    log_format: str = "auto"
    log_level: str = "info"
    event_loop: str = "uvloop"
    node_id: int = 0
    # TLS (listeners SSL:// and SASL_SSL://); PEM files only
    ssl_keystore_location: str | None = None
    ssl_key_password: str | None = field(default=None, repr=False)  # never in a log line
    ssl_truststore_location: str | None = None
    ssl_client_auth: str = "none"
    ssl_enabled_protocols: tuple[str, ...] = TLS_VERSIONS
    ssl_cipher_suites: str | None = None
    ssl_handshake_timeout_ms: int = 10_000
    # SASL (listeners SASL_PLAINTEXT:// and SASL_SSL://)
    sasl_enabled_mechanisms: tuple[str, ...] = ("SCRAM-SHA-256", "SCRAM-SHA-512")
    sasl_users_file: str | None = None
    sasl_server_max_receive_size: int = 524_288
    connection_failed_authentication_delay_ms: int = 100
    # who may call CreateReplicaAssignment (empty: everyone)
    authorizer_allowed_principals: tuple[str, ...] = ()
    # plug-in isolation: non-inline assignments run in killable worker processes
    assignor_isolation: str = "process"
    assignor_worker_max_memory_bytes: int = 2 * 1024 ** 3
    # Prometheus /metrics and /health over HTTP (off when unset)
    metrics_listener: str | None = None
    # > 1: that many server processes share the listener port (SO_REUSEPORT); server/workers.py
    num_worker_processes: int = 1

    @property
    def advertised(self) -> tuple[Listener, ...]:
        return self.advertised_listeners or self.listeners


# property name -> (attribute, parser)
_KEYS = {
    "listeners": "listeners",
    "advertised.listeners": "advertised_listeners",
    "replica.assignor.class.name": "replica_assignor_class_name",
    "replica.assignor.random.seed": "replica_assignor_random_seed",
    "cluster.metadata.file": "cluster_metadata_file",
    "cluster.metadata.file.max.bytes": "cluster_metadata_file_max_bytes",
    "bootstrap.servers": "bootstrap_servers",
    "metadata.refresh.interval.ms": "metadata_refresh_interval_ms",
    "observed.brokers.path": "observed_brokers_path",
    "enable.under.replicated.topic.creation": "enable_under_replicated_topic_creation",
    "min.insync.replicas": "min_insync_replicas",
    "socket.request.max.bytes": "socket_request_max_bytes",
    "queued.max.request.bytes": "queued_max_request_bytes",
    "max.connections": "max_connections",
    "max.connections.per.ip": "max_connections_per_ip",
    "connections.max.idle.ms": "connections_max_idle_ms",
    "max.inflight.requests.per.connection": "max_inflight_requests_per_connection",
    "max.partitions.per.request": "max_partitions_per_request",
    "replica.assignor.max.workers": "assignor_max_workers",
    "replica.assignor.inline.max.replicas": "inline_assignment_max_replicas",
    "replica.assignor.memo.max.entries": "memo_max_entries",
    "shutdown.timeout.ms": "shutdown_timeout_ms",
    "log.format": "log_format",
    "log.level": "log_level",
    "event.loop": "event_loop",
    "node.id": "node_id",
    "ssl.keystore.location": "ssl_keystore_location",
    "ssl.keystore.type": "ssl_keystore_type",
    "ssl.key.password": "ssl_key_password",
    "ssl.truststore.location": "ssl_truststore_location",
    "ssl.truststore.type": "ssl_truststore_type",
    "ssl.client.auth": "ssl_client_auth",
    "ssl.enabled.protocols": "ssl_enabled_protocols",
    "ssl.cipher.suites": "ssl_cipher_suites",
    "ssl.handshake.timeout.ms": "ssl_handshake_timeout_ms",
    "sasl.enabled.mechanisms": "sasl_enabled_mechanisms",
    "sasl.users.file": "sasl_users_file",
    "sasl.server.max.receive.size": "sasl_server_max_receive_size",
    "connection.failed.authentication.delay.ms": "connection_failed_authentication_delay_ms",
    "authorizer.allowed.principals": "authorizer_allowed_principals",
    "replica.assignor.isolation": "assignor_isolation",
    "replica.assignor.worker.max.memory.bytes": "assignor_worker_max_memory_bytes",
    "metrics.listener": "metrics_listener",
    "num.worker.processes": "num_worker_processes",
}

# accepted for Kafka compatibility, checked, not stored: only PEM files are read
_PEM_ONLY = {"ssl_keystore_type", "ssl_truststore_type"}


def _convert(key: str, value: str, base_dir: Path | None):
    attr = _KEYS[key]
    if attr in {"listeners", "advertised_listeners"}:
        specs = [v for v in value.split(",") if v.strip()]
        if attr == "listeners" and not specs:
            raise ConfigError("listeners: at least one listener is required")
        return tuple(Listener.parse(v, key) for v in specs)
    if attr == "replica_assignor_random_seed":
        return None if value.strip() == "" else _int(key, value)
    if attr in {"enable_under_replicated_topic_creation"}:
        return _bool(key, value)
    if attr == "min_insync_replicas":
        return _int(key, value, 1)
    if attr == "queued_max_request_bytes":
        n = _int(key, value, -1)
        if n == 0:
            raise ConfigError(f"{key}: must be -1 (unbounded) or positive, got 0")
        return n
    if attr in {"metadata_refresh_interval_ms", "socket_request_max_bytes", "max_connections",
                "max_connections_per_ip", "max_inflight_requests_per_connection",
                "max_partitions_per_request", "assignor_max_workers", "connections_max_idle_ms",
                "shutdown_timeout_ms", "ssl_handshake_timeout_ms", "sasl_server_max_receive_size",
                "cluster_metadata_file_max_bytes"}:
        return _int(key, value, 1)
    if attr == "num_worker_processes":
        n = _int(key, value, 1)
        if n > MAX_WORKER_PROCESSES:
            raise ConfigError(f"{key}: must be <= {MAX_WORKER_PROCESSES}, got {n}")
        return n
    if attr in {"inline_assignment_max_replicas", "node_id", "connection_failed_authentication_delay_ms",
                "assignor_worker_max_memory_bytes", "memo_max_entries"}:
        return _int(key, value, 0)
    if attr in _PEM_ONLY:
        if value.strip().upper() != "PEM":
            raise ConfigError(f"{key}: only PEM is supported, got {value!r} "
                              f"(convert a JKS or PKCS12 store with keytool and openssl)")
        return "PEM"
    if attr == "ssl_client_auth":
        v = value.strip().lower()
        if v not in {"required", "requested", "none"}:
            raise ConfigError(f"{key}: expected required, requested or none, got {value!r}")
        return v
    if attr == "ssl_enabled_protocols":
        items = tuple(v.strip() for v in value.split(",") if v.strip())
        bad = [v for v in items if v not in TLS_VERSIONS]
        if bad or not items:
            raise ConfigError(f"{key}: expected a list of {', '.join(TLS_VERSIONS)}, got {value!r}")
        return items
    if attr == "sasl_enabled_mechanisms":
        items = tuple(v.strip().upper() for v in value.split(",") if v.strip())
        bad = [v for v in items if v not in SASL_MECHANISMS]
        if bad or not items:
            raise ConfigError(f"{key}: supported mechanisms are {', '.join(SASL_MECHANISMS)}, got {value!r}")
        return tuple(dict.fromkeys(items))
    if attr == "authorizer_allowed_principals":
        return parse_principals(key, value)
    if attr == "assignor_isolation":
        v = value.strip().lower()
        if v not in {"process", "thread"}:
            raise ConfigError(f"{key}: expected process or thread, got {value!r}")
        return v
    if attr == "metrics_listener":
        return _metrics_listener(key, value)
    if attr in {"cluster_metadata_file", "observed_brokers_path", "ssl_keystore_location",
                "ssl_truststore_location", "sasl_users_file"}:
        v = value.strip()
        if not v:
            raise ConfigError(f"{key}: a path is required")
        p = Path(os.path.expanduser(v))
        if not p.is_absolute() and base_dir is not None:
            p = base_dir / p
        return str(p)
    if attr == "log_format":
        v = value.strip().lower()
        if v not in {"auto", "json", "console"}:
            raise ConfigError(f"{key}: expected auto, json or console, got {value!r}")
        return v
    if attr == "log_level":
        v = value.strip().lower()
        if v not in {"debug", "info", "warning", "error"}:
            raise ConfigError(f"{key}: expected debug, info, warning or error, got {value!r}")
        return v
    if attr == "event_loop":
        v = value.strip().lower()
        if v not in {"uvloop", "asyncio"}:
            raise ConfigError(f"{key}: expected uvloop or asyncio, got {value!r}")
        return v
    v = value.strip()
    if attr == "replica_assignor_class_name" and not v:
        raise ConfigError(f"{key}: a class name is required")
    return v or None


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


def load_config(path: str | os.PathLike | None = None,
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
    for key, (value, base) in entries.items():
        if key not in _KEYS:
            raise ConfigError(f"unknown configuration key {key!r}")
        converted = _convert(key, value, base)
        if _KEYS[key] not in _PEM_ONLY:
            values[_KEYS[key]] = converted
    return _check(ServerConfig(**values))


def _split_override(item: str) -> tuple[str, str]:
    if "=" not in item:
        raise ConfigError(f"--override expects key=value, got {item!r}")
    key, _, value = item.partition("=")
    return key, value
