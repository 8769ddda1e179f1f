"""Choosing the cluster metadata source from the configuration."""

from __future__ import annotations

from pathlib import Path

from assignors import ClusterView
from assignors.snapshot import ClusterSnapshot, SnapshotError

from .config import ConfigError, ServerConfig


class StaticSnapshotSource:
    """The brokers of a snapshot file, read once at start-up."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._view: ClusterView | None = None

    async def start(self) -> None:
        try:
            text = Path(self.path).read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"cluster.metadata.file: cannot read {self.path}: {exc.strerror or exc}") from None
        try:
            self._view = ClusterSnapshot.from_json(text).cluster_view()
        except (SnapshotError, ValueError) as exc:
            raise ConfigError(f"cluster.metadata.file: {self.path}: {exc}") from None

    async def stop(self) -> None:
        pass

    def view(self) -> ClusterView:
        assert self._view is not None, "source not started"
        return self._view


def create_source(config: ServerConfig):
    return StaticSnapshotSource(config.cluster_metadata_file)
