"""Prometheus metrics and the health endpoint, served over HTTP on ``metrics.listener``.

Off by default: without ``metrics.listener`` every recording method returns at once, so
the request path pays one attribute check. With it, ``GET /metrics`` answers in
Prometheus' text format and ``GET /health`` answers ``200 {"status": "ok", ...}`` while
the server serves (``503`` once it is shutting down); both are served by the event loop
itself, so an answer also proves the loop is not stuck.

- ``replica_assignor_requests_total{api, error_code}``
- ``replica_assignor_request_duration_seconds{api, error_code}``: histogram, from the
  request's arrival to its response being queued;
- ``replica_assignor_assignment_duration_seconds{assignor, error_code}``: histogram;
- ``replica_assignor_connections``: gauge of open connections;
- ``replica_assignor_connections_refused_total{reason}``, ``..._connections_closed_total{reason}``
  (closed by the server for cause: malformed frame, idle, authentication failed, ...);
- ``replica_assignor_authentications_total{mechanism, result}``: ``mechanism`` is one of
  Kafka's SASL mechanisms (:data:`kafka_replica_assignor.protocol.security.SASL_MECHANISMS`), ``none`` or
  ``unknown``: a name a client sends is never a label of its own (2,015 made-up names once grew
  ``/metrics`` to 121 MB and each scrape held the loop 7 s);
- ``replica_assignor_worker_restarts_total{reason}``: plug-in worker processes replaced;
- the cluster the server follows (:meth:`kafka_replica_assignor.server.cluster_source.ClusterSource.figures`,
  read at scrape time, no labels): ``replica_assignor_cluster_alive_brokers`` (fenced ones
  included), ``replica_assignor_cluster_fenced_brokers``, ``replica_assignor_cluster_offline_brokers``,
  ``replica_assignor_cluster_refreshes_total``, ``replica_assignor_cluster_refresh_failures_total``
  and ``replica_assignor_cluster_view_age_seconds`` (since the last good view; ``+Inf`` before
  the first);
- ``process_*``: the server's resident memory, CPU time and open file descriptors.

Handlers whose response carries an error code report it with :meth:`Metrics.note_error_code`
(or :meth:`Metrics.assignment_handled`); the connection labels the request with it.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kafka_replica_assignor.protocol.security import SASL_MECHANISMS

if TYPE_CHECKING:
    from kafka_replica_assignor.assignors.memo import PlacementMemo

    from .cluster_source import ClusterFigures

_LATENCY_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
                    1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


@dataclass(slots=True)
class RequestOutcome:
    """One request in flight; a handler sets ``error_code`` through :data:`request_outcome`."""

    api_key: int
    started: float
    error_code: int = 0


request_outcome: ContextVar[RequestOutcome | None] = ContextVar("request_outcome", default=None)


def mechanism_label(mechanism: str | None) -> str:
    """The ``mechanism`` label of a name a client sent: labels come from a fixed set only."""
    if mechanism is None:
        return "none"
    return mechanism if mechanism in SASL_MECHANISMS else "unknown"


class _MemoCollector:
    """``replica_assignor_memo_lookups_total{result=hit|miss}`` and ``replica_assignor_memo_entries``."""

    def __init__(self, memo: PlacementMemo) -> None:
        self._memo = memo

    def describe(self) -> list[Any]:
        return []  # collected at scrape time only

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

        lookups = CounterMetricFamily("replica_assignor_memo_lookups",
                                      "Small placements looked up in the placement memo, by result.",
                                      labels=["result"])
        lookups.add_metric(["hit"], self._memo.hits)
        lookups.add_metric(["miss"], self._memo.misses)
        yield lookups
        yield GaugeMetricFamily("replica_assignor_memo_entries", "Placements held by the placement memo.",
                                value=len(self._memo))


class _ClusterCollector:
    """The cluster the server follows, from its source's figures at scrape time (no labels)."""

    def __init__(self, figures: Callable[[], ClusterFigures]) -> None:
        self._figures = figures

    def describe(self) -> list[Any]:
        return []  # collected at scrape time only

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

        now = self._figures()
        yield GaugeMetricFamily("replica_assignor_cluster_alive_brokers",
                                "Alive brokers in the cluster view, fenced ones included.", value=now.alive)
        yield GaugeMetricFamily("replica_assignor_cluster_fenced_brokers",
                                "Alive brokers the cluster reports fenced (never leaders; replicas only "
                                "where no unfenced broker can take them).", value=now.fenced)
        yield GaugeMetricFamily("replica_assignor_cluster_offline_brokers",
                                "Brokers observed before that are not alive now.", value=now.offline)
        yield CounterMetricFamily("replica_assignor_cluster_refreshes",
                                  "Refreshes of the cluster view, failed ones included.", value=now.refreshes)
        yield CounterMetricFamily("replica_assignor_cluster_refresh_failures",
                                  "Refreshes of the cluster view that failed (the last good view was kept).",
                                  value=now.refresh_failures)
        age = now.view_age_seconds
        yield GaugeMetricFamily("replica_assignor_cluster_view_age_seconds",
                                "Seconds since the last good cluster view (+Inf before the first).",
                                value=float("inf") if age is None else age)


class Metrics:
    """The server's metrics; a disabled instance records nothing."""

    def __init__(self, enabled: bool, connections: Callable[[], int] = lambda: 0,
                 api_names: Mapping[int, str] | None = None) -> None:
        self.enabled = enabled
        # the ``api`` label of each api key: the dispatch table's names (kafka_replica_assignor.server.dispatch)
        self._api_names = dict(api_names or {})
        self._children: dict[tuple[int, int], tuple[Any, Any]] = {}
        if not enabled:
            return
        from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, ProcessCollector

        self.registry = registry = CollectorRegistry(auto_describe=True)
        ProcessCollector(registry=registry)
        self.requests = Counter("replica_assignor_requests", "Requests answered, by API and error code.",
                                ["api", "error_code"], registry=registry)
        self.request_duration = Histogram(
            "replica_assignor_request_duration_seconds",
            "Time from a request's arrival to its response being queued, by API and error code.",
            ["api", "error_code"], buckets=_LATENCY_BUCKETS, registry=registry)
        self.assignment_duration = Histogram(
            "replica_assignor_assignment_duration_seconds",
            "Time to answer a CreateReplicaAssignment request, by assignor and error code.",
            ["assignor", "error_code"], buckets=_LATENCY_BUCKETS, registry=registry)
        self.connections = Gauge("replica_assignor_connections", "Open client connections.", registry=registry)
        self.connections.set_function(connections)
        self.refused = Counter("replica_assignor_connections_refused",
                               "Connections refused at accept time, by reason.", ["reason"], registry=registry)
        self.closed = Counter("replica_assignor_connections_closed",
                              "Connections the server closed for cause, by reason.", ["reason"], registry=registry)
        self.authentications = Counter("replica_assignor_authentications",
                                       "SASL authentications, by mechanism and result.",
                                       ["mechanism", "result"], registry=registry)
        self.worker_restarts = Counter("replica_assignor_worker_restarts",
                                       "Assignor worker processes replaced, by reason.", ["reason"],
                                       registry=registry)

    def watch_memo(self, memo: PlacementMemo) -> None:
        """Expose the placement memo's (kafka_replica_assignor.assignors.memo) lookups and size, read at scrape time."""
        if self.enabled:
            self.registry.register(_MemoCollector(memo))

    def watch_cluster(self, figures: Callable[[], ClusterFigures]) -> None:
        """Expose the cluster the server follows (its source's :meth:`figures`), read at scrape time."""
        if self.enabled:
            self.registry.register(_ClusterCollector(figures))

    # -- recording (all no-ops when disabled) -------------------------------------------
    def begin(self, api_key: int, track: bool = False) -> RequestOutcome | None:
        """The outcome of a request starting now (None when metrics are off, unless ``track``:
        the caller wants the error code its handler reports, for a log line)."""
        if not (self.enabled or track):
            return None
        outcome = RequestOutcome(api_key, time.perf_counter())
        request_outcome.set(outcome)
        return outcome

    def finish(self, outcome: RequestOutcome | None) -> None:
        if outcome is None or not self.enabled:
            return
        key = (outcome.api_key, outcome.error_code)
        children = self._children.get(key)
        if children is None:
            labels = (self._api_names.get(outcome.api_key, str(outcome.api_key)), str(outcome.error_code))
            children = self._children[key] = (self.requests.labels(*labels),
                                              self.request_duration.labels(*labels))
        children[0].inc()
        children[1].observe(time.perf_counter() - outcome.started)

    def note_error_code(self, code: int) -> None:
        """The error code of the response being built for the current request."""
        outcome = request_outcome.get()
        if outcome is not None:
            outcome.error_code = code

    def assignment_handled(self, assignor: str, error_code: int, seconds: float) -> None:
        """CreateReplicaAssignment's handler: one call per answered request."""
        if self.enabled:
            self.note_error_code(error_code)
            self.assignment_duration.labels(assignor, str(error_code)).observe(seconds)

    def connection_refused(self, reason: str) -> None:
        if self.enabled:
            self.refused.labels(reason).inc()

    def connection_closed(self, reason: str) -> None:
        if self.enabled:
            self.closed.labels(reason).inc()

    def authentication(self, mechanism: str | None, succeeded: bool) -> None:
        if self.enabled:
            self.authentications.labels(mechanism_label(mechanism), "success" if succeeded else "failure").inc()

    def worker_restarted(self, reason: str) -> None:
        if self.enabled:
            self.worker_restarts.labels(reason).inc()

    def render(self) -> tuple[bytes, str]:
        from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

        return generate_latest(self.registry), CONTENT_TYPE_LATEST


class MetricsServer:
    """``GET /metrics`` and ``GET /health`` over HTTP/1.1 (one request per connection)."""

    MAX_HEADER_BYTES = 8192
    READ_TIMEOUT_S = 5.0

    def __init__(self, metrics: Metrics, health: Callable[[], tuple[bool, dict[str, Any]]]) -> None:
        self.metrics = metrics
        self.health = health  # () -> (healthy: bool, details: dict)
        self._server: asyncio.base_events.Server | None = None
        self.host: str | None = None
        self.port: int | None = None

    async def start(self, host: str, port: int) -> None:
        self._server = await asyncio.start_server(self._serve, host, port, limit=self.MAX_HEADER_BYTES,
                                                  reuse_address=True)
        self.host, self.port = self._server.sockets[0].getsockname()[:2]

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            try:
                await asyncio.wait_for(self._server.wait_closed(), 2.0)
            except TimeoutError:
                pass

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            status, ctype, body = await asyncio.wait_for(self._answer(reader), self.READ_TIMEOUT_S)
        except (TimeoutError, asyncio.LimitOverrunError, ValueError, ConnectionError, asyncio.IncompleteReadError):
            status, ctype, body = "400 Bad Request", "text/plain; charset=utf-8", b"bad request\n"
        try:
            writer.write(f"HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {len(body)}\r\n"
                         f"Connection: close\r\n\r\n".encode("latin-1") + body)
            await writer.drain()
        except ConnectionError:
            pass
        finally:
            writer.close()

    async def _answer(self, reader: asyncio.StreamReader) -> tuple[str, str, bytes]:
        request_line = (await reader.readuntil(b"\n")).decode("latin-1").split()
        while (await reader.readuntil(b"\n")).strip():  # headers: bounded by the reader's limit each
            pass
        if len(request_line) != 3 or request_line[0] not in ("GET", "HEAD"):
            return "405 Method Not Allowed", "text/plain; charset=utf-8", b"only GET\n"
        path = request_line[1].split("?", 1)[0]
        if path == "/metrics":
            body, ctype = self.metrics.render()
            return "200 OK", ctype, body
        if path in ("/health", "/healthz"):
            healthy, details = self.health()
            body = (json.dumps({"status": "ok" if healthy else "unavailable", **details}) + "\n").encode()
            return ("200 OK" if healthy else "503 Service Unavailable"), "application/json", body
        return "404 Not Found", "text/plain; charset=utf-8", b"try /metrics or /health\n"
