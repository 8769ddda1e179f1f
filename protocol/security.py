"""Kafka's security protocols, and which of them use TLS and which SASL.

The one place both sides read them: the server's listeners (:mod:`server.config`) and the
admin client's ``security.protocol`` (:mod:`protocol.secure_client`).
"""

from __future__ import annotations

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
_TLS = frozenset({"SSL", "SASL_SSL"})
_SASL = frozenset({"SASL_PLAINTEXT", "SASL_SSL"})


def uses_tls(security_protocol: str) -> bool:
    """``SSL`` and ``SASL_SSL``: the connection starts with a TLS handshake."""
    return security_protocol in _TLS


def uses_sasl(security_protocol: str) -> bool:
    """``SASL_PLAINTEXT`` and ``SASL_SSL``: SaslHandshake and SaslAuthenticate come first."""
    return security_protocol in _SASL
