"""Who is calling: TLS, SASL, and the principal handed to the assignor.

- :mod:`.tls`: the server's ``ssl.SSLContext`` from Kafka's ``ssl.*`` keys (PEM files).
- :mod:`.principal`: principals as Kafka writes them (``User:alice``, ``User:CN=...``,
  ``User:ANONYMOUS``) and :data:`current_principal`, the request's principal.
- :mod:`.users`: the users file: salted SCRAM credentials (RFC 5802 / 7677), never passwords.
- :mod:`.sasl`: the server side of PLAIN and SCRAM-SHA-256/512, and the per-connection
  authentication state machine Kafka brokers follow.
- :mod:`.authorizer`: who may call CreateReplicaAssignment.

docs/security.md is the operator's guide.
"""

from kafka_replica_assignor.assignors import ANONYMOUS

from .authorizer import authorize
from .principal import current_principal, principal_from_certificate, user_principal
from .sasl import AuthenticationFailed, SaslSession
from .tls import build_ssl_context
from .users import ScramCredential, UsersFileError, UserStore, scram_credential

__all__ = [
    "ANONYMOUS",
    "AuthenticationFailed",
    "SaslSession",
    "ScramCredential",
    "UserStore",
    "UsersFileError",
    "authorize",
    "build_ssl_context",
    "current_principal",
    "principal_from_certificate",
    "scram_credential",
    "user_principal",
]
