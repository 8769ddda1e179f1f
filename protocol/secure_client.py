"""The admin client over TLS and SASL: :class:`SecureReplicaAssignorAdminClient`.

:class:`kafka_replica_assignor.protocol.client.ReplicaAssignorAdminClient` itself connects over ``SSL``,
``SASL_PLAINTEXT`` or ``SASL_SSL`` when given ``security=``; this class keeps the older
call with the options second::

    options = SecurityOptions.from_properties({
        "security.protocol": "SASL_SSL",
        "ssl.truststore.location": "ca.pem",
        "sasl.mechanism": "SCRAM-SHA-256",
        "sasl.jaas.config": 'org.apache.kafka.common.security.scram.ScramLoginModule required '
                            'username="alice" password="alice-secret";',
    })
    with SecureReplicaAssignorAdminClient("host:9094", options) as admin:
        admin.create_replica_assignment(12, 3).assignments()

:meth:`SecurityOptions.from_properties` (:mod:`kafka_replica_assignor.protocol.client_config`) reads Kafka's client
property names (a ``--command-config`` file), with PEM files for the stores.
"""

from __future__ import annotations

from .client import ReplicaAssignorAdminClient
from .client_config import SecurityOptions


class SecureReplicaAssignorAdminClient(ReplicaAssignorAdminClient):
    """:class:`ReplicaAssignorAdminClient` with the security options as second argument."""

    def __init__(self, bootstrap_server: str, security: SecurityOptions | None = None,
                 client_id: str | None = None, request_timeout_ms: int = 30_000) -> None:
        super().__init__(bootstrap_server, client_id=client_id, request_timeout_ms=request_timeout_ms,
                         security=security)


__all__ = ["SecureReplicaAssignorAdminClient", "SecurityOptions"]
