"""The dispatch table: api key -> handler, supported versions and header flexibility."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .handlers import api_versions, create_replica_assignment, metadata, sasl_authenticate, sasl_handshake


@dataclass(frozen=True, slots=True)
class Api:
    key: int
    min_version: int
    max_version: int
    flexible_from: int
    handle: Callable
    # below min / above max: answer anyway (ApiVersions' fallback) instead of closing
    answers_unsupported: bool = False
    # the handler takes the connection as a fourth argument (authentication state), and an
    # awaitable it returns must complete before the connection reads its next request
    connection_bound: bool = False
    # the handler logs its own request_handled line (with assignor and duration)
    logs_requests: bool = False
    name: str = ""

    def flexible(self, version: int) -> bool:
        return version >= self.flexible_from


def _api(module, name: str, **kwargs) -> Api:
    return Api(module.API_KEY, module.MIN_VERSION, module.MAX_VERSION, module.FLEXIBLE_FROM, module.handle,
               name=name, **kwargs)


APIS: dict[int, Api] = {
    api_versions.API_KEY: _api(api_versions, "ApiVersions", answers_unsupported=True),
    metadata.API_KEY: _api(metadata, "Metadata"),
    create_replica_assignment.API_KEY: _api(create_replica_assignment, "CreateReplicaAssignment",
                                                      logs_requests=True),
    sasl_handshake.API_KEY: _api(sasl_handshake, "SaslHandshake", connection_bound=True),
    sasl_authenticate.API_KEY: _api(sasl_authenticate, "SaslAuthenticate", connection_bound=True),
}


def supported_versions() -> dict[int, tuple[int, int]]:
    return {k: (a.min_version, a.max_version) for k, a in APIS.items()}
