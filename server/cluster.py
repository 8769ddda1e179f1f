"""Choosing the cluster metadata source from the configuration.

``cluster.metadata.file`` (the embedded default when unset) or, with ``bootstrap.servers``,
a live Kafka cluster refreshed every ``metadata.refresh.interval.ms``. Brokers seen are
remembered in ``observed.brokers.path`` (KIP-409); following a live cluster, the store
defaults to ``observed-brokers.db`` in the working directory, so that what the server has
learned survives restarts. A snapshot that cannot be read, is over
``cluster.metadata.file.max.bytes`` or lists no broker fails start-up with one line.
"""

from __future__ import annotations

from typing import Any

from assignors import ClusterView
from cluster.snapshot import SnapshotError

from .cluster_source import ClusterSource, create_cluster_source
from .config import ConfigError, ServerConfig
from .observed import DEFAULT_OBSERVED_PATH, ObservedStoreError


class _StartupChecked:
    """Wraps a source so that a bad snapshot or store becomes a ConfigError naming the key."""

    def __init__(self, source: ClusterSource, config: ServerConfig) -> None:
        self._source = source
        self._config = config

    async def start(self) -> None:
        try:
            await self._source.start()
        except (OSError, SnapshotError, ValueError) as exc:
            detail = getattr(exc, "strerror", None) or exc
            raise ConfigError(f"cluster.metadata.file: {self._config.cluster_metadata_file}: {detail}") from None
        except ObservedStoreError as exc:
            raise ConfigError(f"observed.brokers.path: {exc}") from None

    async def stop(self) -> None:
        await self._source.stop()

    async def refresh(self) -> bool:
        return await self._source.refresh()

    def view(self) -> ClusterView:
        return self._source.view()

    def describe(self) -> dict[str, Any]:
        return self._source.describe()

    def health(self) -> tuple[bool, str]:
        return self._source.health()


def create_source(config: ServerConfig) -> _StartupChecked:
    path = config.observed_brokers_path
    if path is None and config.bootstrap_servers:
        path = DEFAULT_OBSERVED_PATH
    try:
        source = create_cluster_source(
            cluster_metadata_file=config.cluster_metadata_file,
            bootstrap_servers=config.bootstrap_servers,
            refresh_interval_ms=config.metadata_refresh_interval_ms,
            observed_brokers_path=path,
            max_file_bytes=config.cluster_metadata_file_max_bytes,
        )
    except (ObservedStoreError, OSError) as exc:
        raise ConfigError(f"observed.brokers.path: {path}: {exc}") from None
    return _StartupChecked(source, config)
