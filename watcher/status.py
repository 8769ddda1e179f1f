"""The watcher as a reader sees it: one object holding its view, its decisions and the
execution in progress, and the Prometheus metrics drawn from it.

:class:`WatchStatus` is the interface a reader in the same process uses (the metrics
collector below, the web listener of ``web/``): :meth:`WatchStatus.read` returns a plain,
JSON-ready ``dict`` taken under a lock, so the reader never sees a half-updated state. Nothing
stored is changed afterwards (each update replaces what it changes; a record is copied as it
comes in), so a read copies no more than the top of each part and costs microseconds whatever
the cluster's size; what it returns is shared with later reads and must not be changed:

- ``cluster``: ``read_at``, ``age_s``, ``reachable``, ``brokers`` (``id``, ``rack``,
  ``rack_path``: its rack at every level of the rack tree, top first, ``state``: up, fenced or
  gone, ``down_since``, ``replicas``, ``leaders``, ``bytes``), ``bands`` (``replicas``,
  ``leaders``, ``bytes``: the ``[lo, hi]`` a broker may hold at the planner's default threshold,
  by the rules of the replica-count and replica-bytes goals, over the brokers up), ``topics``,
  ``partitions``, ``reassignments_in_progress``;
- ``decisions``: the last :data:`KEEP` audit records (``decided``, ``executed`` and
  ``requested``: an operator's request through the web API), oldest first;
- ``execution``: None, or the plan running: ``kind``, ``subject``, ``plan_dir``, ``started_at``
  and the executor's last ``progress`` (``moves_done``, ``moves_total``, ``in_flight``,
  ``bytes_done``, ``bytes_total``, ``rate_bytes_per_s``, ``eta_s``, ``throttle``, ``paused``);
- ``last_execution``: the plan that ran last, as ``execution`` with its final ``status`` and
  ``ended_at`` (None before the first);
- ``counters``: decisions by ``kind`` and ``action``, executions by ``kind`` and ``status``,
  refreshes and refresh failures; ``dry_run``, ``started_at``.

Metrics (fixed label sets: the kinds, actions and statuses are the closed lists of
:mod:`.decisions` and :data:`STATUSES`): ``replica_assignor_watch_decisions_total{kind, action}``,
``replica_assignor_watch_executions_total{kind, status}``, ``replica_assignor_watch_refreshes_total``,
``replica_assignor_watch_refresh_failures_total``, ``replica_assignor_watch_view_age_seconds``
(``+Inf`` before the first view), ``replica_assignor_watch_brokers{state}`` (up, fenced, gone),
``replica_assignor_watch_execution_running``, ``replica_assignor_watch_execution_moves{state}``
(done, total), ``replica_assignor_watch_placement_seconds_sum`` and
``replica_assignor_watch_placements_total``: from a topic first seen to its placement done (their
ratio is the mean placement latency).
"""

from __future__ import annotations

import copy
import threading
import time
from collections import deque
from collections.abc import Iterator
from typing import Any

from kafka_replica_assignor.assignors.errors import ReplicaAssignorError
from kafka_replica_assignor.assignors.model import BrokerMetadata
from kafka_replica_assignor.assignors.multi_level import rack_paths

from .decisions import ACTIONS, KINDS, View

KEEP = 200
STATUSES = ("done", "failed", "cancelled", "stopped", "refused")
BROKER_STATES = ("up", "fenced", "gone")
OPERATOR = "operator"
"""The kind of the plans an operator asked for through the web API (rebalance, remove_broker, ...)."""
EXECUTION_KINDS = (*KINDS, OPERATOR)


class WatchStatus:
    def __init__(self, dry_run: bool = False) -> None:
        self._lock = threading.Lock()
        self._cluster: dict[str, Any] = {"read_at": None, "reachable": False, "brokers": [], "bands": None, "topics": 0,
                                          "partitions": 0, "reassignments_in_progress": 0}
        self._decisions: deque[dict[str, Any]] = deque(maxlen=KEEP)
        self._execution: dict[str, Any] | None = None
        self._last_execution: dict[str, Any] | None = None
        self._view: View | None = None
        self._decided = {(k, a): 0 for k in KINDS for a in ACTIONS}
        self._executed = {(k, s): 0 for k in EXECUTION_KINDS for s in STATUSES}
        self._refreshes = 0
        self._refresh_failures = 0
        self._placement = [0.0, 0]
        self._dry_run = dry_run
        self._started_at = time.time()

    # ---- written by the watcher ------------------------------------------------------------
    def saw(self, view: View, down_since: dict[int, float]) -> None:
        fenced, registered = view.fenced, view.registered()
        replicas: dict[int, int] = {}
        leaders: dict[int, int] = {}
        sizes: dict[int, int] = {}
        for p in view.snapshot.partitions:
            size = p.size_bytes or 0
            for b in p.replicas:
                replicas[b] = replicas.get(b, 0) + 1
                sizes[b] = sizes.get(b, 0) + size
            if p.leader is not None and p.leader >= 0:
                leaders[p.leader] = leaders.get(p.leader, 0) + 1
        racks = {b.id: b.rack for b in view.snapshot.brokers}
        paths = _rack_paths(view)
        brokers = [{"id": b, "rack": racks.get(b), "rack_path": list(paths.get(b, ())),
                    "state": "gone" if b not in registered else "fenced" if b in fenced else "up",
                    "down_since": down_since.get(b), "replicas": replicas.get(b, 0), "leaders": leaders.get(b, 0),
                    "bytes": sizes.get(b, 0)}
                   for b in sorted(registered | view.named())]
        cluster = {"read_at": view.read_at, "reachable": True, "brokers": brokers, "bands": _bands(view, brokers),
                   "topics": len({p.topic for p in view.snapshot.partitions}),
                   "partitions": len(view.snapshot.partitions), "reassignments_in_progress": len(view.ongoing)}
        with self._lock:
            self._refreshes += 1
            self._cluster = cluster
            self._view = view

    def lost(self) -> None:
        with self._lock:
            self._refresh_failures += 1
            self._cluster = {**self._cluster, "reachable": False}

    def record(self, record: dict[str, Any]) -> None:
        """An audit record (``decided`` and ``executed`` ones are counted and kept)."""
        record = copy.deepcopy(record)
        with self._lock:
            if record.get("event") == "decided":
                self._decided[(record["kind"], record["action"])] += 1
            elif record.get("event") == "executed":
                self._executed[(record["kind"], record["status"])] += 1
            elif record.get("event") != "requested":
                return
            self._decisions.append(record)

    def executing(self, kind: str, subject: str, plan_dir: str) -> None:
        with self._lock:
            self._execution = {"kind": kind, "subject": subject, "plan_dir": plan_dir,
                               "started_at": time.time(), "progress": None}

    def progress(self, event: str, fields: dict[str, Any]) -> None:
        """The executor's ``emit``: its ``progress`` events are kept."""
        if event != "progress":
            return
        with self._lock:
            if self._execution is not None:
                self._execution = {**self._execution, "progress": dict(fields)}

    def executed(self, status: str | None = None) -> None:
        with self._lock:
            if self._execution is not None and status is not None:
                self._last_execution = {**self._execution, "status": status, "ended_at": time.time()}
            self._execution = None

    def placed_after(self, seconds: float) -> None:
        with self._lock:
            self._placement[0] += seconds
            self._placement[1] += 1

    # ---- read by anyone --------------------------------------------------------------------
    def view(self) -> View | None:
        """The last good view (immutable), for a planner asked through the web API."""
        with self._lock:
            return self._view

    def running(self) -> dict[str, Any] | None:
        """The plan running (``kind``, ``subject``, ``plan_dir``, ...), or None."""
        with self._lock:
            return None if self._execution is None else dict(self._execution)

    def read(self) -> dict[str, Any]:
        with self._lock:
            read_at = self._cluster["read_at"]
            cluster = {**self._cluster, "age_s": None if read_at is None else round(time.time() - read_at, 3)}
            return {
                "cluster": cluster, "decisions": list(self._decisions),
                "execution": self._execution,
                "last_execution": self._last_execution,
                "counters": {"decisions": [{"kind": k, "action": a, "count": n}
                                           for (k, a), n in self._decided.items() if n],
                             "executions": [{"kind": k, "status": s, "count": n}
                                            for (k, s), n in self._executed.items() if n],
                             "refreshes": self._refreshes, "refresh_failures": self._refresh_failures,
                             "placement_seconds_sum": self._placement[0],
                             "placements": self._placement[1]},
                "dry_run": self._dry_run, "started_at": self._started_at,
            }

    def collector(self) -> StatusCollector:
        return StatusCollector(self)


def _rack_paths(view: View) -> dict[int, tuple[str, ...]]:
    """Each broker's rack at every level (the multi-level assignor's rule; a cluster it refuses,
    some brokers without a rack, shows each rack as one level)."""
    brokers = [BrokerMetadata(b.id, b.rack) for b in view.snapshot.brokers]
    try:
        return dict(rack_paths(brokers))
    except ReplicaAssignorError:
        return {b.id: (b.rack,) if b.rack else () for b in brokers}


def _bands(view: View, brokers: list[dict[str, Any]]) -> dict[str, list[int] | None]:
    """The band of each figure over the brokers up, by the goals that own them."""
    from kafka_replica_assignor.planner.goals.replica_bytes import byte_band
    from kafka_replica_assignor.planner.goals.replica_counts import band
    from kafka_replica_assignor.planner.request import DEFAULT_THRESHOLD, parse_threshold

    up = [b for b in brokers if b["state"] == "up"]
    if not up:
        return {"replicas": None, "leaders": None, "bytes": None}
    threshold = parse_threshold(DEFAULT_THRESHOLD)
    partitions = view.snapshot.partitions
    total_replicas = sum(len(p.replicas) for p in partitions)
    largest = max((p.size_bytes or 0 for p in partitions), default=0)
    return {"replicas": list(band(total_replicas, len(up), threshold)),
            "leaders": list(band(len(partitions), len(up), threshold)),
            "bytes": list(byte_band(sum(b["bytes"] for b in brokers), len(up), threshold, largest))}


class StatusCollector:
    """The metrics of module doc, drawn from :meth:`WatchStatus.read` at scrape time."""

    def __init__(self, status: WatchStatus) -> None:
        self._status = status

    def describe(self) -> list[Any]:
        return []

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

        s = self._status.read()
        counters = s["counters"]
        decided = {(d["kind"], d["action"]): d["count"] for d in counters["decisions"]}
        family = CounterMetricFamily("replica_assignor_watch_decisions", "Decisions of the watcher, by kind and "
                                     "action.", labels=["kind", "action"])
        for kind in KINDS:
            for action in ACTIONS:
                family.add_metric([kind, action], decided.get((kind, action), 0))
        yield family
        executed = {(d["kind"], d["status"]): d["count"] for d in counters["executions"]}
        family = CounterMetricFamily("replica_assignor_watch_executions", "Plans the watcher executed, by kind "
                                     "and the executor's final status.", labels=["kind", "status"])
        for kind in EXECUTION_KINDS:
            for status in STATUSES:
                family.add_metric([kind, status], executed.get((kind, status), 0))
        yield family
        yield CounterMetricFamily("replica_assignor_watch_refreshes", "Views of the cluster read.",
                                  value=counters["refreshes"])
        yield CounterMetricFamily("replica_assignor_watch_refresh_failures", "Reads of the cluster that failed.",
                                  value=counters["refresh_failures"])
        age = s["cluster"]["age_s"]
        yield GaugeMetricFamily("replica_assignor_watch_view_age_seconds", "Seconds since the last good view.",
                                value=float("inf") if age is None else age)
        states = {state: 0 for state in BROKER_STATES}
        for broker in s["cluster"]["brokers"]:
            states[broker["state"]] += 1
        gauge = GaugeMetricFamily("replica_assignor_watch_brokers", "Brokers of the last view, by state.",
                                   labels=["state"])
        for state, n in states.items():
            gauge.add_metric([state], n)
        yield gauge
        execution = s["execution"]
        yield GaugeMetricFamily("replica_assignor_watch_execution_running", "1 while a plan of the watcher runs.",
                                value=0 if execution is None else 1)
        progress = (execution or {}).get("progress") or {}
        gauge = GaugeMetricFamily("replica_assignor_watch_execution_moves", "Moves of the running plan.",
                                  labels=["state"])
        gauge.add_metric(["done"], progress.get("moves_done", 0))
        gauge.add_metric(["total"], progress.get("moves_total", 0))
        yield gauge
        yield GaugeMetricFamily("replica_assignor_watch_placement_seconds_sum", "Seconds from a topic first seen "
                                "to its placement done, summed over the placements.",
                                value=counters["placement_seconds_sum"])
        yield CounterMetricFamily("replica_assignor_watch_placements", "Placements done.",
                                  value=counters["placements"])
