"""Who may call CreateReplicaAssignment: ``authorizer.allowed.principals``.

Unset (the default) allows every principal, as a Kafka broker without an authorizer
does. Set, only the principals listed may ask for assignments; the others get
CLUSTER_AUTHORIZATION_FAILED. ApiVersions, Metadata and the SASL APIs are not
authorised (a Kafka broker answers them for any authenticated principal too).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..shared_state import ServerState


def authorize(state: ServerState, principal: str) -> bool:
    """True when ``principal`` may call CreateReplicaAssignment on this server."""
    allowed = state.config.authorizer_allowed_principals
    return not allowed or principal in allowed
