"""The server's TLS context, from Kafka's ``ssl.*`` keys adapted to PEM files.

- ``ssl.keystore.location``: PEM file with the server's private key and certificate chain
  (leaf first), as Kafka reads it with ``ssl.keystore.type=PEM``;
- ``ssl.key.password``: the private key's password, if it is encrypted;
- ``ssl.truststore.location``: PEM file of the CA certificates that sign client certificates;
- ``ssl.client.auth``: ``required``, ``requested`` or ``none`` (Kafka's default);
- ``ssl.enabled.protocols``: ``TLSv1.2,TLSv1.3`` (nothing older is offered);
- ``ssl.cipher.suites``: OpenSSL cipher list for TLS 1.2 (unset: Python's defaults).
"""

from __future__ import annotations

import ssl

from kafka_replica_assignor.cluster.files import NotARegularFile, stat_regular

from ..config import ConfigError, ServerConfig

_VERSIONS = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}
_CLIENT_AUTH = {"none": ssl.CERT_NONE, "requested": ssl.CERT_OPTIONAL, "required": ssl.CERT_REQUIRED}


# a PEM file larger than this is refused (a chain of a hundred certificates takes about 200 KB)
PEM_MAX_BYTES = 16 * 1024 * 1024


def _check_pem(key: str, path: str) -> None:
    """A regular file of at most PEM_MAX_BYTES: OpenSSL would wait forever on a FIFO."""
    try:
        stat_regular(path, PEM_MAX_BYTES)
    except NotARegularFile as exc:
        raise ConfigError(f"{key}: {exc}") from None
    except OSError as exc:
        raise ConfigError(f"{key}: cannot read {path}: {exc.strerror or exc}") from None


def build_ssl_context(config: ServerConfig) -> ssl.SSLContext:
    """A server-side context; any unreadable file fails start-up naming its key."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    versions = sorted(_VERSIONS[v] for v in config.ssl_enabled_protocols)
    ctx.minimum_version, ctx.maximum_version = versions[0], versions[-1]
    ctx.options |= ssl.OP_NO_COMPRESSION | ssl.OP_NO_RENEGOTIATION | ssl.OP_CIPHER_SERVER_PREFERENCE
    path = config.ssl_keystore_location
    # load_config's checks refuse a TLS listener without ssl.keystore.location
    assert path is not None
    _check_pem("ssl.keystore.location", path)
    try:
        ctx.load_cert_chain(path, password=config.ssl_key_password)
    except ssl.SSLError as exc:  # (an OSError too: first)
        raise ConfigError(f"ssl.keystore.location: {path} is not a PEM private key and certificate chain "
                          f"(or ssl.key.password is wrong): {exc.reason or exc}") from None
    except OSError as exc:
        raise ConfigError(f"ssl.keystore.location: cannot read {path}: {exc.strerror or exc}") from None
    if config.ssl_truststore_location:
        trust = config.ssl_truststore_location
        _check_pem("ssl.truststore.location", trust)
        try:
            ctx.load_verify_locations(cafile=trust)
        except ssl.SSLError as exc:
            raise ConfigError(f"ssl.truststore.location: {trust} holds no PEM CA certificate: "
                              f"{exc.reason or exc}") from None
        except OSError as exc:
            raise ConfigError(f"ssl.truststore.location: cannot read {trust}: {exc.strerror or exc}") from None
    ctx.verify_mode = _CLIENT_AUTH[config.ssl_client_auth]
    if config.ssl_cipher_suites:
        try:
            ctx.set_ciphers(config.ssl_cipher_suites)
        except ssl.SSLError:
            raise ConfigError(f"ssl.cipher.suites: no usable cipher in {config.ssl_cipher_suites!r}") from None
    return ctx
