"""SASL gating of one connection on a ``SASL_PLAINTEXT`` or ``SASL_SSL`` listener.

Until its authentication completes, a connection follows Kafka's state machine
(``kafka_replica_assignor.server.security.sasl``): it accepts nothing but ApiVersions (once, first) and the SASL
APIs, and frames no larger than ``sasl.server.max.receive.size``; anything else closes it
("Unexpected Kafka request of type ... during SASL handshake/authentication", as Kafka says).
After SaslHandshake v0 the client sends bare tokens, without a Kafka header: :attr:`raw`.
A failed authentication is answered, then the connection closes (the connection's own
concern: the answer being built is its last).
"""

from __future__ import annotations

from typing import Any

import structlog

from .config import ServerConfig
from .handlers import api_versions
from .metrics import Metrics
from .security import SaslSession

log = structlog.get_logger("replica_assignor")


class SaslGate:
    """What one connection may send while its SASL authentication runs, and how it ends."""

    __slots__ = ("session", "_config", "_metrics")

    def __init__(self, session: SaslSession, config: ServerConfig, metrics: Metrics) -> None:
        self.session = session
        self._config = config
        self._metrics = metrics

    @property
    def frame_limit(self) -> int:
        """The largest frame accepted now."""
        cfg = self._config
        if self.session.complete:
            return cfg.socket_request_max_bytes
        return min(cfg.socket_request_max_bytes, cfg.sasl_server_max_receive_size)

    @property
    def limit_key(self) -> str:
        """The configuration key that limits frames now (named when a frame is refused)."""
        return "socket.request.max.bytes" if self.session.complete else "sasl.server.max.receive.size"

    def refuses(self, api_key: int) -> bool:
        """A request of ``api_key`` is not one the authentication expects now: close the connection."""
        session = self.session
        return not session.complete and api_key not in session.expected_api_keys()

    def answered(self, api_key: int) -> None:
        """A request of a supported version was answered."""
        if api_key == api_versions.API_KEY:
            self.session.api_versions_answered()

    def succeeded(self, conn_id: int, peer: str, principal: str, mechanism: str) -> None:
        self._metrics.authentication(mechanism, True)
        log.info("authentication_succeeded", conn_id=conn_id, peer=peer, principal=principal, mechanism=mechanism)

    def failed(self, conn_id: int, peer: str, reason: str, fields: dict[str, Any]) -> None:
        self._metrics.authentication(fields.get("mechanism"), False)
        log.warning("authentication_failed", conn_id=conn_id, peer=peer, reason=reason,
                    **{k: v for k, v in fields.items() if v is not None})
