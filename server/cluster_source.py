"""Where the server learns what the cluster looks like: a snapshot file or a live Kafka cluster.

Both sources share one small interface (:class:`ClusterSource`): ``start()`` loads a first view,
``view()`` returns the current :class:`assignors.ClusterView` without blocking, ``stop()`` ends
the refresh task, ``describe()`` is for logs. ``offline`` in the view holds the brokers observed
before (in the :class:`server.observed.ObservedBrokerStore`, or marked ``"alive": false`` in the
snapshot) that are not alive now: the KIP-409 placeholders stand for them.

Rules of the live source:

- a broker absent from a *successful* DescribeCluster is offline (if it was ever observed);
- a refresh that fails (cluster unreachable, timeout, store error) is logged as
  ``metadata_refresh_failed`` and the last good view is kept, so a network blip does not make
  the whole cluster look offline;
- each successful refresh records the brokers it saw in the store (one transaction).

Blocking work (the kafka-python admin client, SQLite with ``synchronous=FULL``, reading the
snapshot file) runs in worker threads; the event loop only swaps an immutable view.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

import structlog

from assignors.model import ClusterView
from assignors.snapshot import BrokerEntry, ClusterSnapshot, PartitionEntry

from .observed import ObservedBroker, ObservedBrokerStore


class ClusterSource(Protocol):
    """What the server needs from a metadata source."""

    async def start(self) -> None: ...

    async def stop(self) -> None: ...

    async def refresh(self) -> bool: ...

    def view(self) -> ClusterView: ...

    def describe(self) -> dict[str, Any]: ...


def merge_observed(snapshot: ClusterSnapshot, observed: Iterable[ObservedBroker] = (),
                   fenced: Iterable[int] = ()) -> ClusterView:
    """The view of ``snapshot`` with every observed broker that is not alive added as offline.

    A broker the snapshot itself lists (alive or not) keeps the snapshot's rack.
    """
    listed = {b.id for b in snapshot.brokers}
    alive = [b.metadata for b in snapshot.brokers if b.alive]
    offline = [b.metadata for b in snapshot.brokers if not b.alive]
    offline += [o.metadata for o in observed if o.id not in listed]
    alive_ids = {b.id for b in alive}
    return ClusterView(
        brokers=tuple(alive),
        fenced=frozenset(fenced) & alive_ids,
        offline=tuple(offline),
        topics=snapshot.assignments(),
    )


def snapshot_from_metadata(cluster: Mapping[str, Any],
                           topics: Sequence[Mapping[str, Any]] = ()) -> tuple[ClusterSnapshot, frozenset[int]]:
    """Turn kafka-python's ``describe_cluster()`` and ``describe_topics()`` answers into a
    snapshot (every listed broker alive) and the set of fenced broker ids.

    Topics or partitions reported with an error, or without replicas, are left out.
    """
    brokers = []
    fenced = set()
    for b in cluster.get("brokers") or ():
        rack = b.get("rack") or None
        brokers.append(BrokerEntry(int(b["broker_id"]), rack, True, b.get("host"), b.get("port")))
        if b.get("is_fenced"):
            fenced.add(int(b["broker_id"]))
    partitions = []
    for t in topics:
        if t.get("error_code") or not t.get("name"):
            continue
        for p in t.get("partitions") or ():
            replicas = tuple(p.get("replica_nodes") or ())
            if p.get("error_code") or not replicas or len(set(replicas)) != len(replicas):
                continue
            leader = p.get("leader_id")
            partitions.append(PartitionEntry(
                topic=t["name"], partition=int(p["partition_index"]), replicas=replicas,
                leader=leader if leader is not None and leader >= 0 else None,
                isr=tuple(p.get("isr_nodes") or ()),
            ))
    return ClusterSnapshot(brokers=tuple(brokers), partitions=tuple(partitions)), frozenset(fenced)


class _RefreshingSource:
    """Shared lifecycle: a first refresh in ``start()``, then one every ``refresh_interval_ms``."""

    kind = ""

    def __init__(self, store: ObservedBrokerStore | None, refresh_interval_ms: int | None,
                 logger: Any, clock: Callable[[], float]) -> None:
        if refresh_interval_ms is not None and refresh_interval_ms <= 0:
            raise ValueError(f"refresh interval must be > 0 ms, got {refresh_interval_ms}")
        self._store = store
        self._interval_ms = refresh_interval_ms
        self._log = logger if logger is not None else structlog.get_logger("server.cluster_source")
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
                self._last_error = f"{type(exc).__name__}: {exc}"
                self._log.warning("metadata_refresh_failed", source=self.kind, error=self._last_error,
                                  consecutive_failures=self._consecutive_failures)
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
            return True

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
    """The cluster described by a snapshot file (``assignors.snapshot``), re-read on refresh.

    Brokers marked ``"alive": false`` are offline. With a store, the alive brokers are recorded
    on each refresh and every stored broker not alive in the snapshot is offline too. ``start()``
    raises when the file cannot be read or parsed (a configuration error); later refreshes that
    fail are logged and keep the last good view.
    """

    kind = "snapshot"

    def __init__(self, path: str | Path, store: ObservedBrokerStore | None = None, *,
                 refresh_interval_ms: int | None = None, logger: Any = None,
                 clock: Callable[[], float] = time.time) -> None:
        super().__init__(store, refresh_interval_ms, logger, clock)
        self.path = Path(path)

    async def start(self) -> None:
        self._view = await self._fetch_view()
        self._last_success = self._clock()
        self._refreshes = 1
        if self._interval_ms is not None:
            self._task = asyncio.create_task(self._run(), name="snapshot-metadata-refresh")

    async def _fetch_view(self) -> ClusterView:
        snapshot = ClusterSnapshot.from_json(await asyncio.to_thread(self.path.read_bytes))
        return merge_observed(snapshot, await self._observe(snapshot))

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "path": str(self.path)}


class LiveClusterSource(_RefreshingSource):
    """A live cluster through kafka-python's admin client (DescribeCluster, and Metadata for topics).

    The client is created lazily (the cluster may be down when the server starts), kept across
    successful refreshes and replaced after a failed one. ``admin_configs`` is
    passed to ``KafkaAdminClient`` as is (security settings, client id, ...).
    """

    kind = "live"

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
        self._client_lock = threading.Lock()  # one blocking call at a time; close waits for it
        self._remembered: dict[int, ObservedBroker] = {}  # without a store: seen since start

    async def _fetch_view(self) -> ClusterView:
        snapshot, fenced = await asyncio.to_thread(self._describe)
        if self._store is not None:
            observed = await self._observe(snapshot)
        else:
            now = self._clock()
            for b in snapshot.brokers:
                first = self._remembered.get(b.id)
                self._remembered[b.id] = ObservedBroker(
                    b.id, b.rack, b.host, b.port, first.first_seen if first else now, now)
            observed = list(self._remembered.values())
        return merge_observed(snapshot, observed, fenced)

    def _describe(self) -> tuple[ClusterSnapshot, frozenset[int]]:
        with self._client_lock:
            if self._admin is None:
                self._admin = open_admin_client(self.bootstrap_servers, self._request_timeout_ms,
                                                self._admin_configs)
            try:
                cluster = self._admin.describe_cluster()
                topics = self._admin.describe_topics() if self._include_topics else []
            except BaseException:
                # start afresh next time: a client left reconnecting with a growing backoff
                # could take long to notice that the cluster is back
                admin, self._admin = self._admin, None
                with contextlib.suppress(Exception):
                    admin.close()
                raise
        return snapshot_from_metadata(cluster, topics)

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
                          logger: Any = None) -> ClusterSource:
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
                                logger=logger)
    source._owned_store = store
    return source


def open_admin_client(bootstrap_servers: str | Sequence[str], request_timeout_ms: int,
                      admin_configs: Mapping[str, Any] | None = None) -> Any:
    """A kafka-python admin client whose bootstrap and requests give up after the timeout."""
    from kafka.admin import KafkaAdminClient

    configs = {
        "bootstrap_servers": bootstrap_servers,
        "client_id": "replica-assignor",
        "request_timeout_ms": request_timeout_ms,
        "bootstrap_timeout_ms": request_timeout_ms,
        **(admin_configs or {}),
    }
    admin = KafkaAdminClient.__new__(KafkaAdminClient)
    try:
        admin.__init__(**configs)
    except BaseException:
        # kafka-python 3.0.12 starts its I/O thread before the eager bootstrap and leaves it
        # running when the bootstrap fails: stop it, or every failed refresh leaks a thread.
        if hasattr(admin, "_net"):
            admin._closed = False
            with contextlib.suppress(Exception):
                admin.close()
        raise
    return admin


def describe_live_cluster(bootstrap_servers: str | Sequence[str], request_timeout_ms: int = 10000,
                          admin_configs: Mapping[str, Any] | None = None,
                          ) -> tuple[ClusterSnapshot, frozenset[int]]:
    """One blocking DescribeCluster + Metadata round trip (for the CLI): snapshot and fenced ids."""
    admin = open_admin_client(bootstrap_servers, request_timeout_ms, admin_configs)
    try:
        return snapshot_from_metadata(admin.describe_cluster(), admin.describe_topics())
    finally:
        admin.close()


def observed_offline(snapshot: ClusterSnapshot, observed: Iterable[ObservedBroker]) -> ClusterSnapshot:
    """``snapshot`` with every observed broker it does not list added as not alive."""
    listed = {b.id for b in snapshot.brokers}
    extra = tuple(BrokerEntry(o.id, o.rack, False, o.host, o.port) for o in observed if o.id not in listed)
    return ClusterSnapshot(brokers=snapshot.brokers + extra, partitions=snapshot.partitions)


__all__ = [
    "ClusterSource",
    "LiveClusterSource",
    "SnapshotSource",
    "create_cluster_source",
    "describe_live_cluster",
    "merge_observed",
    "observed_offline",
    "open_admin_client",
    "snapshot_from_metadata",
]
