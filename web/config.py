"""The web listener's configuration: declared once (the options below), checked once (bad
input: exit 2, one line), then one frozen value.

A listener off the loopback interface needs TLS (credentials never travel in clear); a listener
needs credentials for the requests that change something (``--http-users``,
``--http-token-file`` or :data:`TOKEN_ENV`), and its read-only endpoints take them too unless
``--http-open-reads`` says otherwise; with neither credentials nor ``--http-open-reads`` it
would serve nothing, and is refused.
"""

from __future__ import annotations

import argparse
import hashlib
import ipaddress
import os
import ssl
from dataclasses import dataclass

from kafka_replica_assignor.cluster.files import read_regular

TOKEN_ENV = "REPLICA_ASSIGNOR_WATCH_TOKEN"
USER_ENV = "REPLICA_ASSIGNOR_WATCH_USER"
CREDENTIALS_MAX_BYTES = 64 * 1024
MIN_TOKEN = 16


class ConfigError(ValueError):
    """A bad web configuration: one line (the command exits 2 with it)."""


def listener(text: str) -> str:
    """``[HOST:]PORT``: a port alone listens on the loopback interface."""
    host, sep, port = text.rpartition(":")
    if not sep:
        host = "127.0.0.1"
    if not port.isdigit() or not 0 <= int(port) < 65536 or (sep and not host.strip("[]")):
        raise argparse.ArgumentTypeError(f"expected [HOST:]PORT, got {text!r}")
    return f"{host}:{int(port)}"


def add_web_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--http-listener", type=listener, metavar="[HOST:]PORT",
                        help="serve the REST API, the web page and /metrics here (a port alone: 127.0.0.1; "
                             "port 0: any free port, said on start-up); off loopback it needs --http-tls-cert")
    parser.add_argument("--http-tls-cert", metavar="FILE", help="the listener's certificate chain (PEM): HTTPS")
    parser.add_argument("--http-tls-key", metavar="FILE", help="the certificate's private key (PEM)")
    parser.add_argument("--http-users", metavar="FILE",
                        help=f"HTTP basic credentials, one NAME:PASSWORD a line (also ${USER_ENV}=NAME:PASSWORD)")
    parser.add_argument("--http-token-file", metavar="FILE",
                        help=f"bearer tokens, one a line, at least {MIN_TOKEN} characters (also ${TOKEN_ENV})")
    parser.add_argument("--http-open-reads", action="store_true",
                        help="read-only endpoints answer without credentials (changing ones never do)")


@dataclass(frozen=True, slots=True)
class WebConfig:
    host: str
    port: int
    cert: str | None = None
    key: str | None = None
    users: tuple[tuple[bytes, bytes], ...] = ()     # sha256 of name and of password
    tokens: tuple[bytes, ...] = ()                  # sha256 of each token
    open_reads: bool = False

    @property
    def tls(self) -> bool:
        return self.cert is not None

    @property
    def has_credentials(self) -> bool:
        return bool(self.users or self.tokens)


def digest(text: str | bytes) -> bytes:
    return hashlib.sha256(text.encode() if isinstance(text, str) else text).digest()


def _lines(path: str, option: str) -> list[str]:
    try:
        _, raw = read_regular(path, CREDENTIALS_MAX_BYTES, nofollow=False)
        text = raw.decode("utf-8")
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{option} {path}: {getattr(exc, 'strerror', None) or exc}") from None
    return [line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#")]


def _user(entry: str, where: str) -> tuple[bytes, bytes]:
    name, sep, password = entry.partition(":")
    if not sep or not name or not password:
        raise ConfigError(f"{where}: expected NAME:PASSWORD, got a line without both")
    return digest(name), digest(password)


def _token(token: str, where: str) -> bytes:
    if len(token) < MIN_TOKEN:
        raise ConfigError(f"{where}: a token has at least {MIN_TOKEN} characters, got {len(token)}")
    return digest(token)


def is_loopback(host: str) -> bool:
    host = host.strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def web_config(args: argparse.Namespace) -> WebConfig | None:
    """The checked configuration, None without ``--http-listener`` (:class:`ConfigError`)."""
    if args.http_listener is None:
        for name in ("http_tls_cert", "http_tls_key", "http_users", "http_token_file"):
            if getattr(args, name):
                raise ConfigError(f"--{name.replace('_', '-')} needs --http-listener")
        return None
    host, _, port = args.http_listener.rpartition(":")
    if (args.http_tls_cert is None) != (args.http_tls_key is None):
        raise ConfigError("--http-tls-cert and --http-tls-key go together")
    if args.http_tls_cert is None and not is_loopback(host):
        raise ConfigError(f"--http-listener {args.http_listener} is not on the loopback interface: "
                           "it needs --http-tls-cert and --http-tls-key")
    users = [_user(u, args.http_users) for u in _lines(args.http_users, "--http-users")] if args.http_users else []
    tokens = ([_token(t, args.http_token_file) for t in _lines(args.http_token_file, "--http-token-file")]
              if args.http_token_file else [])
    if os.environ.get(USER_ENV):
        users.append(_user(os.environ[USER_ENV], f"${USER_ENV}"))
    if os.environ.get(TOKEN_ENV):
        tokens.append(_token(os.environ[TOKEN_ENV], f"${TOKEN_ENV}"))
    config = WebConfig(host.strip("[]"), int(port), args.http_tls_cert, args.http_tls_key, tuple(users),
                       tuple(tokens), args.http_open_reads)
    if not config.has_credentials and not config.open_reads:
        raise ConfigError(f"--http-listener needs credentials (--http-users, --http-token-file or ${TOKEN_ENV}) "
                           "or --http-open-reads (then nothing can be changed through it)")
    if config.tls:
        tls_context(config)      # a bad certificate or key: said now
    return config


def tls_context(config: WebConfig) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        context.load_cert_chain(str(config.cert), str(config.key))
    except (OSError, ssl.SSLError) as exc:
        raise ConfigError(f"--http-tls-cert {config.cert} / --http-tls-key {config.key}: "
                           f"{getattr(exc, 'strerror', None) or exc}") from None
    return context
