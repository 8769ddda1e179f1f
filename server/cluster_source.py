"""Where the server learns what the cluster looks like: a snapshot file or a live Kafka cluster.

Both sources share one small interface (:class:`ClusterSource`, the server's only one):
``start()`` loads a first view, ``view()`` returns the current :class:`assignors.ClusterView`
without blocking, ``refresh()`` fetches a new one now, ``stop()`` ends the refresh task,
``describe()`` is for logs, ``figures()`` for ``/metrics`` (:class:`ClusterFigures`).
``offline`` in the view holds the brokers observed before (in the :class:`kafka_replica_assignor.server.observed.ObservedBrokerStore`, or marked ``"alive": false`` in the
snapshot) that are not alive now: the KIP-409 placeholders stand for them.

Rules of the live source (reading the cluster and mapping its answers to a snapshot, with the
rules for fenced brokers and metadata errors, is :mod:`kafka_replica_assignor.protocol.cluster_reader`'s, shared with
the planner and the CLI):

- a fenced broker is alive in the view and in ``fenced`` (a follower if needed, never a leader);
- topics or partitions the reader leaves out are logged as ``metadata_entries_left_out``
  whenever that list changes;
- a broker absent from a *successful* DescribeCluster is offline (if it was ever observed);
- a refresh that fails (cluster unreachable, timeout, store error) is logged as
  ``metadata_refresh_failed`` and the last good view is kept, so a network blip does not make
  the whole cluster look offline;
- each successful refresh records the brokers it saw in the store (one transaction);
- **health** (:meth:`health`, for ``/health`` and the server's readiness): a live source is
  unhealthy while its last refresh failed (the cluster is unreachable: the last good view is
  kept, but it may be stale) or its view has no alive broker; it is healthy again at the first
  refresh that sees an alive broker. Each change is logged once as ``cluster_health_changed``
  with the reason. A snapshot source is unhealthy only without an alive broker.

Blocking work (the kafka-python admin client, SQLite with ``synchronous=FULL``) runs in worker
threads; the snapshot file is read only when it changed, within a size cap, and parsed in a
child process when large (:mod:`kafka_replica_assignor.server.snapshot_file`); a new view is built in a worker thread
and the event loop only swaps it in (one assignment).

Choosing the source from the configuration (:func:`create_source`): ``cluster.metadata.file``
(the embedded default when unset) or, with ``bootstrap.servers``, a live Kafka cluster
refreshed every ``metadata.refresh.interval.ms``. Brokers seen are remembered in
``observed.brokers.path`` (KIP-409); following a live cluster, the store defaults to
``observed-brokers.db`` in the working directory, so that what the server has learned survives
restarts. A snapshot that cannot be read, is over ``cluster.metadata.file.max.bytes`` or lists
no broker fails start-up with one line.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import structlog

from kafka_replica_assignor.assignors.model import BrokerMetadata, ClusterView
from kafka_replica_assignor.cluster.snapshot import BrokerEntry, ClusterSnapshot, SnapshotError
from kafka_replica_assignor.protocol.cluster_reader import ClusterRead, open_admin_client, read_cluster

from .config import ConfigError, ServerConfig
from .observed import DEFAULT_OBSERVED_PATH, ObservedBroker, ObservedBrokerStore, ObservedStoreError
from .snapshot_file import DEFAULT_MAX_BYTES, IN_PROCESS_MAX_BYTES, SnapshotContent, SnapshotFile


@dataclass(frozen=True, slots=True)
class ClusterFigures:
    """The cluster the server follows, in numbers (``/metrics``, :mod:`kafka_replica_assignor.server.metrics`).

    ``alive`` counts every alive broker of the view, the ``fenced`` ones among them included;
    ``offline`` the observed brokers not alive now. ``refresh_failures`` counts the refreshes
    that failed since start (the last good view was kept). ``view_age_seconds`` is the time since
    the last good view was fetched, None before the first one."""

    alive: int
    fenced: int
    offline: int
    refreshes: int
    refresh_failures: int
    view_age_seconds: float | None


class ClusterSource(Protocol):
    """What the server needs from a metadata source."""

    async def start(self) -> None: ...

    async def stop(self) -> None: ...

    async def refresh(self) -> bool: ...

    def view(self) -> ClusterView: ...

    def describe(self) -> dict[str, Any]: ...

    def health(self) -> tuple[bool, str]: ...

    def figures(self) -> ClusterFigures: ...


def merge_observed(snapshot: ClusterSnapshot, observed: Iterable[ObservedBroker] = (),
                   fenced: Iterable[int] = ()) -> ClusterView:
    """The view of ``snapshot`` with every observed broker that is not alive added as offline.

    A broker the snapshot itself lists (alive or not) keeps the snapshot's rack.
    """
    return _merged_view(snapshot.brokers, snapshot.assignments(), observed, fenced)


def _alive_and_offline(brokers: Sequence[BrokerEntry], observed: Iterable[ObservedBroker] = ()
                       ) -> tuple[list[BrokerMetadata], list[BrokerMetadata]]:
    listed = {b.id for b in brokers}
    alive = [b.metadata for b in brokers if b.alive]
    offline = [b.metadata for b in brokers if not b.alive]
    offline += [o.metadata for o in observed if o.id not in listed]
    return alive, offline


def _merged_view(brokers: Sequence[BrokerEntry], topics: Mapping[str, Mapping[int, tuple[int, ...]]],
                 observed: Iterable[ObservedBroker] = (), fenced: Iterable[int] = ()) -> ClusterView:
    alive, offline = _alive_and_offline(brokers, observed)
    alive_ids = {b.id for b in alive}
    return ClusterView(
        brokers=tuple(alive),
        fenced=frozenset(fenced) & alive_ids,
        offline=tuple(offline),
        topics=topics,
    )


class _RefreshingSource:
    """Shared lifecycle: a first refresh in ``start()``, then one every ``refresh_interval_ms``."""

    kind = ""
    #: whether a failed refresh makes the source unhealthy (its view may be stale)
    fresh_view_required = False

    def __init__(self, store: ObservedBrokerStore | None, refresh_interval_ms: int | None,
                 logger: Any, clock: Callable[[], float]) -> None:
        if refresh_interval_ms is not None and refresh_interval_ms <= 0:
            raise ValueError(f"refresh interval must be > 0 ms, got {refresh_interval_ms}")
        self._store = store
        self._interval_ms = refresh_interval_ms
        self._log = logger if logger is not None else structlog.get_logger("kafka_replica_assignor.server.cluster_source")
        self._clock = clock
        self._view = ClusterView(brokers=())
        self._task: asyncio.Task[None] | None = None
        self._refresh_lock = asyncio.Lock()
        self._refreshes = 0
        self._failures = 0
        self._consecutive_failures = 0
        self._last_error: str | None = None
        self._last_success: float | None = None
        self._owned_store: ObservedBrokerStore | None = None  # closed by stop()
        self._healthy = True  # as last logged: an unhealthy first state is logged too

    # -- interface ----------------------------------------------------------------------------
    def view(self) -> ClusterView:
        return self._view

    async def start(self) -> None:
        await self.refresh()
        if self._interval_ms is not None:
            self._task = asyncio.create_task(self._run(), name=f"{self.kind}-metadata-refresh")

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await self._close()
        store, self._owned_store = self._owned_store, None
        if store is not None:
            await asyncio.to_thread(store.close)

    async def refresh(self) -> bool:
        """Fetch a new view now; False (logged, last good view kept) when that fails."""
        async with self._refresh_lock:
            self._refreshes += 1
            try:
                view = await self._fetch_view()
            except Exception as exc:  # any failure keeps the last good view
                self._failures += 1
                self._consecutive_failures += 1
                name, text = type(exc).__name__, str(exc).strip()
                self._last_error = text if text.startswith(f"{name}:") else f"{name}: {text}"
                self._log.warning("metadata_refresh_failed", source=self.kind, error=self._last_error,
                                  consecutive_failures=self._consecutive_failures)
                self._log_health()
                return False
            self._consecutive_failures = 0
            self._last_error = None
            self._last_success = self._clock()
            old, self._view = self._view, view
            if (old.brokers, old.offline, old.fenced) != (view.brokers, view.offline, view.fenced):
                self._log.info(
                    "cluster_view_changed", source=self.kind,
                    alive=[b.id for b in view.brokers], offline=[b.id for b in view.offline],
                    fenced=sorted(view.fenced),
                )
            self._log_health()
            return True

    def health(self) -> tuple[bool, str]:
        """(healthy, one line saying why): see the module doc."""
        if self.fresh_view_required and self._consecutive_failures:
            return False, (f"the {self.kind} cluster did not answer the last {self._consecutive_failures} "
                           f"refresh(es): {self._last_error}")
        alive = len(self._view.brokers)
        if not alive:
            return False, f"no alive broker in the {self.kind} cluster view"
        return True, f"{alive} alive broker(s) in the {self.kind} cluster view"

    def _log_health(self) -> None:
        healthy, reason = self.health()
        if healthy != self._healthy:
            self._healthy = healthy
            (self._log.info if healthy else self._log.warning)(
                "cluster_health_changed", source=self.kind, healthy=healthy, reason=reason)

    def figures(self) -> ClusterFigures:
        """The numbers ``/metrics`` shows, read without blocking (a scrape may come at any time)."""
        view, last = self._view, self._last_success
        return ClusterFigures(
            alive=len(view.brokers), fenced=len(view.fenced), offline=len(view.offline),
            refreshes=self._refreshes, refresh_failures=self._failures,
            view_age_seconds=None if last is None else max(0.0, self._clock() - last))

    def describe(self) -> dict[str, Any]:
        return {
            "source": self.kind,
            "refresh_interval_ms": self._interval_ms,
            "alive": [b.id for b in self._view.brokers],
            "offline": [b.id for b in self._view.offline],
            "fenced": sorted(self._view.fenced),
            "topics": len(self._view.topics),
            "refreshes": self._refreshes,
            "failures": self._failures,
            "consecutive_failures": self._consecutive_failures,
            "last_error": self._last_error,
            "last_success": self._last_success,
            "observed_store": str(self._store.path) if self._store is not None else None,
            "healthy": self.health()[0],
        }

    # -- for subclasses ---------------------------------------------------------------------
    async def _fetch_view(self) -> ClusterView:
        raise NotImplementedError

    async def _close(self) -> None:
        return None

    async def _observe(self, snapshot: ClusterSnapshot) -> list[ObservedBroker]:
        """Record the alive brokers of ``snapshot`` and return every observed broker."""
        store = self._store
        if store is None:
            return []
        seen = [b for b in snapshot.brokers if b.alive]
        now = self._clock()

        def record_and_list() -> list[ObservedBroker]:
            store.record(seen, now)
            return store.list()

        return await asyncio.to_thread(record_and_list)

    async def _run(self) -> None:
        assert self._interval_ms is not None
        while True:
            await asyncio.sleep(self._interval_ms / 1000)
            await self.refresh()


class SnapshotSource(_RefreshingSource):
    """The cluster described by a snapshot file (``kafka_replica_assignor.cluster.snapshot``), re-read on refresh.

    Brokers marked ``"alive": false`` are offline. With a store, the alive brokers are recorded
    on each refresh and every stored broker not alive in the snapshot is offline too. ``start()``
    raises when the file cannot be read or parsed (a configuration error); later refreshes that
    fail are logged and keep the last good view.

    The file is read through :class:`kafka_replica_assignor.server.snapshot_file.SnapshotFile`: only when it changed,
    never over ``max_file_bytes``, parsed off the event loop (large files in a child process),
    and a snapshot without brokers is refused like an invalid one. When the file is unchanged
    and the observed brokers too, the view is kept as it is (no new view is built).
    """

    kind = "snapshot"

    def __init__(self, path: str | Path, store: ObservedBrokerStore | None = None, *,
                 refresh_interval_ms: int | None = None, logger: Any = None,
                 clock: Callable[[], float] = time.time, max_file_bytes: int = DEFAULT_MAX_BYTES,
                 in_process_max_bytes: int = IN_PROCESS_MAX_BYTES) -> None:
        super().__init__(store, refresh_interval_ms, logger, clock)
        self.path = Path(path)
        self.file = SnapshotFile(self.path, max_file_bytes, in_process_max_bytes=in_process_max_bytes)
        self._brokers: tuple[BrokerEntry, ...] = ()  # of the file the current view was built from
        self._pending: SnapshotContent | None = None  # read, but no view built from it yet

    async def start(self) -> None:
        self._view = await self._fetch_view()
        self._last_success = self._clock()
        self._refreshes = 1
        if self._interval_ms is not None:
            self._task = asyncio.create_task(self._run(), name="snapshot-metadata-refresh")

    async def _fetch_view(self) -> ClusterView:
        content = await self.file.read()
        if content is not None:
            self._pending = content
        content = self._pending
        view = self._view
        brokers = content.brokers if content is not None else self._brokers
        observed = await self._observe(ClusterSnapshot(brokers=brokers))
        if content is None:  # the file is what the current view was built from
            alive, offline = _alive_and_offline(brokers, observed)
            if (view.brokers, view.offline) == (_by_id(alive), _by_id(offline)):
                return view  # nothing changed: no new view to build
            content = SnapshotContent(brokers, view.topics)
        # in a worker thread: freezing every partition's replicas is Python code, which gives
        # the GIL back to the event loop every switch interval
        view = await asyncio.to_thread(_merged_view, content.brokers, content.topics, observed)
        self._pending, self._brokers = None, content.brokers  # the parsed topics are dropped
        return view

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "path": str(self.path), "file": self.file.describe()}


def _by_id(brokers: Iterable[BrokerMetadata]) -> tuple[BrokerMetadata, ...]:
    return tuple(sorted(brokers, key=lambda b: b.id))


class LiveClusterSource(_RefreshingSource):
    """A live cluster through kafka-python's admin client (DescribeCluster, and Metadata for topics).

    The client is created lazily (the cluster may be down when the server starts), kept across
    successful refreshes and replaced after a failed one. ``admin_configs`` is
    passed to ``KafkaAdminClient`` as is (security settings, client id, ...).
    """

    kind = "live"
    fresh_view_required = True

    def __init__(self, bootstrap_servers: str | Sequence[str], refresh_interval_ms: int,
                 store: ObservedBrokerStore | None, logger: Any = None, *,
                 request_timeout_ms: int = 5000, include_topics: bool = True,
                 admin_configs: Mapping[str, Any] | None = None,
                 clock: Callable[[], float] = time.time) -> None:
        super().__init__(store, refresh_interval_ms, logger, clock)
        self.bootstrap_servers = bootstrap_servers
        self._request_timeout_ms = request_timeout_ms
        self._include_topics = include_topics
        self._admin_configs = dict(admin_configs or {})
        self._admin: Any = None
        self._left_out: tuple[str, ...] = ()
        self._client_lock = threading.Lock()  # one blocking call at a time; close waits for it
        self._remembered: dict[int, ObservedBroker] = {}  # without a store: seen since start

    async def _fetch_view(self) -> ClusterView:
        read = await asyncio.to_thread(self._describe)
        snapshot = read.snapshot
        if read.left_out != self._left_out:
            self._left_out = read.left_out
            if read.left_out:
                self._log.warning("metadata_entries_left_out", source=self.kind, left_out=list(read.left_out))
        if self._store is not None:
            observed = await self._observe(snapshot)
        else:
            now = self._clock()
            for b in snapshot.brokers:
                first = self._remembered.get(b.id)
                self._remembered[b.id] = ObservedBroker(
                    b.id, b.rack, b.host, b.port, first.first_seen if first else now, now)
            observed = list(self._remembered.values())
        return merge_observed(snapshot, observed, read.fenced)

    def _describe(self) -> ClusterRead:
        with self._client_lock:
            if self._admin is None:
                self._admin = open_admin_client(self.bootstrap_servers, self._request_timeout_ms,
                                                self._admin_configs)
            try:
                return read_cluster(self._admin, include_topics=self._include_topics)
            except BaseException:
                # start afresh next time: a client left reconnecting with a growing backoff
                # could take long to notice that the cluster is back
                admin, self._admin = self._admin, None
                with contextlib.suppress(Exception):
                    admin.close()
                raise

    async def _close(self) -> None:
        await asyncio.to_thread(self._close_admin)

    def _close_admin(self) -> None:
        with self._client_lock:
            admin, self._admin = self._admin, None
            if admin is not None:
                admin.close()

    def describe(self) -> dict[str, Any]:
        servers = self.bootstrap_servers
        return {**super().describe(),
                "bootstrap_servers": servers if isinstance(servers, str) else ",".join(servers)}


def create_cluster_source(*, cluster_metadata_file: str, bootstrap_servers: str | None,
                          refresh_interval_ms: int, observed_brokers_path: str | None,
                          logger: Any = None, max_file_bytes: int = DEFAULT_MAX_BYTES) -> ClusterSource:
    """The source the configuration asks for: the live cluster when ``bootstrap.servers`` is
    set, else the snapshot file (re-read every ``refresh_interval_ms``). With an
    ``observed.brokers.path``, the store is opened here and closed by the source's ``stop()``.
    """
    store = ObservedBrokerStore(observed_brokers_path) if observed_brokers_path else None
    source: _RefreshingSource
    if bootstrap_servers:
        source = LiveClusterSource(bootstrap_servers, refresh_interval_ms, store, logger)
    else:
        source = SnapshotSource(cluster_metadata_file, store, refresh_interval_ms=refresh_interval_ms,
                                logger=logger, max_file_bytes=max_file_bytes)
    source._owned_store = store
    return source


def observed_offline(snapshot: ClusterSnapshot, observed: Iterable[ObservedBroker]) -> ClusterSnapshot:
    """``snapshot`` with every observed broker it does not list added as not alive."""
    listed = {b.id for b in snapshot.brokers}
    extra = tuple(BrokerEntry(o.id, o.rack, False, o.host, o.port) for o in observed if o.id not in listed)
    return ClusterSnapshot(brokers=snapshot.brokers + extra, partitions=snapshot.partitions)


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

    def figures(self) -> ClusterFigures:
        return self._source.figures()


def create_source(config: ServerConfig) -> ClusterSource:
    """The source ``config`` asks for (see the module doc), with start-up errors as ConfigError."""
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


__all__ = [
    "ClusterFigures",
    "ClusterSource",
    "LiveClusterSource",
    "SnapshotSource",
    "create_cluster_source",
    "create_source",
    "merge_observed",
    "observed_offline",
]
