"""The dispatch table: api key -> handler, supported versions and header flexibility.

Each handler module names its request class (``REQUEST``) and the versions it serves
(``MIN_VERSION``, ``MAX_VERSION``); the api key, the name and which versions carry a
flexible request header (v2, with tagged fields) come from that class, that is from the
message's JSON schema.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from .handlers import api_versions, create_replica_assignment, metadata, sasl_authenticate, sasl_handshake
from .shared_state import ServerState


@dataclass(frozen=True, slots=True)
class Api:
    key: int
    min_version: int
    max_version: int
    flexible_versions: frozenset[int]  # request header v2 (tagged fields) in these versions
    handle: Callable[..., Any]
    # below min / above max: answer anyway (ApiVersions' fallback) instead of closing
    answers_unsupported: bool = False
    # the handler takes the connection as a fourth argument (authentication state), and an
    # awaitable it returns must complete before the connection reads its next request
    connection_bound: bool = False
    # the handler logs its own request_handled line (with assignor and duration)
    logs_requests: bool = False
    # the largest frame of this api worth reading (from the config), when below socket.request.max.bytes:
    # a larger one closes the connection as soon as its api key is read, before its body
    max_request_bytes: Callable[[Any], int] | None = None
    name: str = ""
    # answers encoded once at start-up, per version (only the correlation id is patched per
    # request): the server stores them in ServerState.templates under (key, version)
    templates: Callable[[ServerState], dict[int, bytes]] | None = None

    def flexible(self, version: int) -> bool:
        return version in self.flexible_versions


def _api(module: ModuleType, **kwargs: Any) -> Api:
    request = module.REQUEST
    served = range(module.MIN_VERSION, module.MAX_VERSION + 1)
    return Api(request.API_KEY, module.MIN_VERSION, module.MAX_VERSION,
               frozenset(v for v in served if request.flexible_version_q(v)), module.handle,
               name=request.name.removesuffix("Request"), **kwargs)


APIS: dict[int, Api] = {
    api.key: api for api in (
        _api(api_versions, answers_unsupported=True,
             templates=lambda state: api_versions.build_templates(supported_versions())),
        _api(metadata, templates=metadata.build_templates, max_request_bytes=metadata.max_request_bytes),
        _api(create_replica_assignment, logs_requests=True),
        _api(sasl_handshake, connection_bound=True),
        _api(sasl_authenticate, connection_bound=True),
    )
}


def supported_versions() -> dict[int, tuple[int, int]]:
    return {k: (a.min_version, a.max_version) for k, a in APIS.items()}
