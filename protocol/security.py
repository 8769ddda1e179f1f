"""Kafka's security protocols, which of them use TLS and which SASL, and the SASL mechanisms.

The one place both sides read them: the server's listeners and ``sasl.enabled.mechanisms``
(:mod:`kafka_replica_assignor.server.config`), its SCRAM users (:mod:`kafka_replica_assignor.server.security.users`), and the admin
client's ``security.protocol`` and ``sasl.mechanism`` (:mod:`kafka_replica_assignor.protocol.client_config`).
"""

from __future__ import annotations

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
_TLS = frozenset({"SSL", "SASL_SSL"})
_SASL = frozenset({"SASL_PLAINTEXT", "SASL_SSL"})

# SCRAM mechanisms and the hash each is built on (RFC 5802, RFC 7677)
SCRAM_HASHES = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}
SASL_MECHANISMS = ("PLAIN", *SCRAM_HASHES)


def uses_tls(security_protocol: str) -> bool:
    """``SSL`` and ``SASL_SSL``: the connection starts with a TLS handshake."""
    return security_protocol in _TLS


def uses_sasl(security_protocol: str) -> bool:
    """``SASL_PLAINTEXT`` and ``SASL_SSL``: SaslHandshake and SaslAuthenticate come first."""
    return security_protocol in _SASL
