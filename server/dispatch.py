"""The dispatch table: api key -> handler, supported versions and header flexibility."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .handlers import api_versions, create_replica_assignment, metadata


@dataclass(frozen=True, slots=True)
class Api:
    key: int
    min_version: int
    max_version: int
    flexible_from: int
    handle: Callable
    # below min / above max: answer anyway (ApiVersions' fallback) instead of closing
    answers_unsupported: bool = False

    def flexible(self, version: int) -> bool:
        return version >= self.flexible_from


APIS: dict[int, Api] = {
    api_versions.API_KEY: Api(api_versions.API_KEY, api_versions.MIN_VERSION, api_versions.MAX_VERSION,
                              api_versions.FLEXIBLE_FROM, api_versions.handle, answers_unsupported=True),
    metadata.API_KEY: Api(metadata.API_KEY, metadata.MIN_VERSION, metadata.MAX_VERSION,
                          metadata.FLEXIBLE_FROM, metadata.handle),
    create_replica_assignment.API_KEY: Api(
        create_replica_assignment.API_KEY, create_replica_assignment.MIN_VERSION,
        create_replica_assignment.MAX_VERSION, create_replica_assignment.FLEXIBLE_FROM,
        create_replica_assignment.handle),
}


def supported_versions() -> dict[int, tuple[int, int]]:
    return {k: (a.min_version, a.max_version) for k, a in APIS.items()}
