"""The files a plan becomes, as bytes: Kafka's own formats first, then the report and charts.

- ``reassignment.json``: ``kafka-reassign-partitions.sh --execute --reassignment-json-file``
  input (version 1), only the partitions that change, in plan order. When the input names log
  directories (:mod:`kafka_replica_assignor.planner.solving.disks`), each entry carries Kafka's ``log_dirs`` (one per replica,
  ``"any"`` where unknown), and partitions that only change directories (intra-broker moves)
  follow, with their unchanged replicas; with batches they go into the last batch file. Written even when nothing
  changes (an empty ``partitions`` list). With a batch size, a per-broker move limit or a byte
  limit, also ``reassignment-0001.json``, ... (:mod:`kafka_replica_assignor.planner.execution.batches`; run them in order).
- ``rollback.json``: the partitions that change with their current replicas, those only whose
  replicas are all on live brokers (the others can only be repaired again: see the report).
- ``starting-replicas.json``: every partition that changes with its current replicas (the
  same format); ``replica-assignor verify-plan`` compares a cluster with it.
- ``summary.json``: the totals (bytes moved, replica moves, leader changes, batches, estimated
  seconds with a throttle) and ``starting_replicas_sha256`` (:func:`kafka_replica_assignor.planner.execution.batches.fingerprint`);
  with rates also ``traffic`` (:func:`traffic_summary`: each network figure's band and whether
  the plan reaches it, the report's rows as numbers).
- ``leader-election.json``: ``kafka-leader-election.sh --election-type preferred
  --path-to-json-file`` input: the partitions whose preferred leader changes.
- ``moves.csv``: every move (kind, topic, partition, source, destination).
- ``report.md``, ``replicas.png``, ``leaders.png``, ``disk.png`` (sized partitions),
  ``network-in.png`` and ``network-out.png`` (partitions with rates): see
  :mod:`kafka_replica_assignor.planner.report.plan_report`, :mod:`kafka_replica_assignor.planner.report.charts`.

:func:`render_outputs` is pure and deterministic (byte-identical for the same plan), so the
command line and the Spark pipeline produce the same files. :func:`write_outputs` writes them
all or nothing.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from collections.abc import Iterable, Mapping
from typing import Any

from kafka_replica_assignor.cluster.snapshot import PartitionEntry
from kafka_replica_assignor.planner.execution.batches import Execution, Limits, execution, fingerprint
from kafka_replica_assignor.planner.goals.traffic import UNIT, rated, snapshot_figures, within_bands
from kafka_replica_assignor.planner.plan import Plan
from kafka_replica_assignor.planner.report.charts import render_charts
from kafka_replica_assignor.planner.report.figures import plan_figures
from kafka_replica_assignor.planner.report.plan_report import render_report
from kafka_replica_assignor.planner.request import PlanRequest
from kafka_replica_assignor.planner.solving.disks import ANY, intra_only, report_lines

BATCH = re.compile(r"reassignment-\d{4}\.json")
# written by some plans only: an older copy is removed
OPTIONAL = frozenset({"disk.png", "network-in.png", "network-out.png"})


def _lines(head: str, items: Iterable[str], tail: str) -> str:
    body = ",\n".join(items)
    return f"{head}\n{body}\n{tail}\n" if body else f"{head}{tail}\n"


def _partition_line(p: PartitionEntry) -> str:
    if p.log_dirs is not None:
        dirs = ",".join(json.dumps(ANY if d is None else d) for d in p.log_dirs)
        return (f'{{"topic":{json.dumps(p.topic)},"partition":{p.partition},'
                f'"replicas":[{",".join(map(str, p.replicas))}],"log_dirs":[{dirs}]}}')
    return (f'{{"topic":{json.dumps(p.topic)},"partition":{p.partition},'
            f'"replicas":[{",".join(map(str, p.replicas))}]}}')


def reassignment_json(entries: Iterable[PartitionEntry], memo: dict[int, str] | None = None) -> str:
    """Kafka's partition reassignment JSON, version 1, one partition per line. ``memo`` keeps
    the line of each entry (by identity) for the next files of the same plan."""
    if memo is None:
        return _lines('{"version":1,"partitions":[', map(_partition_line, entries), "]}")
    items = []
    for p in entries:
        line = memo.get(id(p))
        if line is None:
            line = memo[id(p)] = _partition_line(p)
        items.append(line)
    return _lines('{"version":1,"partitions":[', items, "]}")


def leader_election_json(entries: Iterable[PartitionEntry]) -> str:
    """Input of ``kafka-leader-election.sh --path-to-json-file``."""
    items = (f'{{"topic":{json.dumps(p.topic)},"partition":{p.partition}}}' for p in entries)
    return _lines('{"partitions":[', items, "]}")


def moves_csv(plan: Plan) -> str:
    rows = ["kind,topic,partition,source,destination"]
    rows += [f"{m.kind},{_csv(m.topic)},{m.partition},{m.source},{m.destination}" for m in plan.moves]
    return "\n".join(rows) + "\n"


def _csv(text: str) -> str:
    return '"' + text.replace('"', '""') + '"' if any(c in text for c in ',"\n') else text


def limits_of(request: PlanRequest) -> Limits:
    return Limits(request.batch_size, request.max_moves_per_broker, request.max_bytes_per_batch)


#: the network figures of ``summary.json``'s ``traffic`` (:mod:`kafka_replica_assignor.planner.goals.traffic`)
TRAFFIC_FIGURES = ("network_in", "network_out", "leader_in")


def traffic_summary(plan: Plan, request: PlanRequest) -> dict[str, Any]:
    """Per network figure whose goal ran (its band in the plan's bounds): the band in bytes/s
    (``lo``, ``hi``: the report's), the figure per broker before and after over the alive brokers
    not removed (the report's row), and ``reached`` (every such broker inside the band after the
    plan; a broker's capacity below ``hi`` is its own limit and is not in the band)."""
    removed = request.scope.removed
    alive = [b.id for b in plan.before.brokers if b.alive and b.id not in removed]
    before, after = snapshot_figures(plan.before, alive), snapshot_figures(plan.after, alive)
    out: dict[str, Any] = {}
    for figure in TRAFFIC_FIGURES:
        lo, hi = plan.bound(f"{figure}_band_lo"), plan.bound(f"{figure}_band_hi")
        if lo is None or hi is None:
            continue
        out[figure] = {"band_lo": lo / UNIT, "band_hi": hi / UNIT,
                       "before": {str(b): v / UNIT for b, v in before[figure].items()},
                       "after": {str(b): v / UNIT for b, v in after[figure].items()},
                       "reached": within_bands(plan, figure, after[figure])}
    return out


def summary(plan: Plan, request: PlanRequest, run: Execution) -> dict[str, Any]:
    """``summary.json``: machine-readable totals of a plan and how it runs (with rates, the
    network bands: :func:`traffic_summary`)."""
    eta = run.eta_seconds
    totals: dict[str, Any] = {
        "version": 1,
        "mode": request.mode,
        "threshold_percent": request.percent,
        "partitions_reassigned": len(run.starting),
        "replica_moves": plan.replica_moves,
        "repairs": plan.repairs,
        "leader_changes": len(run.leader_changed),
        "bytes_moved": run.bytes_moved,
        "sizes_known": any(p.size_bytes is not None for p in plan.before.partitions),
        "batches": len(run.batches),
        "max_moves_per_broker": request.max_moves_per_broker,
        "max_bytes_per_batch": request.max_bytes_per_batch,
        "batch_size": request.batch_size,
        "throttle_bytes_per_second": request.throttle,
        "eta_seconds": None if eta is None else round(eta, 3),
        "not_rollbackable": len(run.not_rollbackable),
        "starting_replicas_sha256": run.fingerprint,
    }
    if rated(plan.before):
        totals["traffic"] = traffic_summary(plan, request)
    return totals


def render_outputs(plan: Plan, request: PlanRequest, *, charts: bool = True) -> dict[str, bytes]:
    """Every output file of a plan, by name, in a fixed order."""
    run = execution(plan, limits_of(request), request.throttle)
    memo: dict[int, str] = {}
    disks = intra_only(plan)     # empty without log directories
    files: dict[str, bytes] = {"reassignment.json": reassignment_json((*run.targets, *disks), memo).encode()}
    if run.limits.any:
        batches = run.batches or (None,)
        for n, batch in enumerate(batches, 1):
            entries = (*(batch.partitions if batch else ()), *(disks if n == len(batches) else ()))
            files[f"reassignment-{n:04d}.json"] = reassignment_json(entries, memo).encode()
    if disks:
        current = {(p.topic, p.partition): p for p in plan.before.partitions}
        back = tuple(current[(p.topic, p.partition)] for p in disks)
        files["rollback.json"] = reassignment_json((*run.rollback, *back), memo).encode()
        files["starting-replicas.json"] = reassignment_json((*run.starting, *back), memo).encode()
    else:
        files["rollback.json"] = reassignment_json(run.rollback, memo).encode()
        files["starting-replicas.json"] = reassignment_json(run.starting, memo).encode()
    files["leader-election.json"] = leader_election_json(run.leader_changed).encode()
    files["moves.csv"] = moves_csv(plan).encode()
    totals = summary(plan, request, run)
    if disks:   # verify-plan and execute check starting-replicas.json against this fingerprint
        totals["starting_replicas_sha256"] = fingerprint(
            {(p.topic, p.partition): p.replicas for p in (*run.starting, *disks)})
        totals["partitions_only_changing_log_dirs"] = len(disks)
    files["summary.json"] = (json.dumps(totals, indent=2) + "\n").encode()
    before, after = plan_figures(plan, request.scope.removed)
    report = render_report(plan, request, figures=(before, after), run=run)
    section = report_lines(plan, request.percent)
    files["report.md"] = (report + "\n" + "\n".join(section) if section else report).encode()
    if charts:
        files.update(render_charts(plan, request, figures=(before, after)))
    return files


def write_outputs(files: Mapping[str, bytes], out_dir: str) -> None:
    """Write all files into ``out_dir`` (created if needed), or none: everything goes to a
    temporary directory beside it first, then each file is renamed into place."""
    out_dir = os.path.abspath(out_dir)
    parent = os.path.dirname(out_dir)
    os.makedirs(parent, exist_ok=True)
    staging = tempfile.mkdtemp(prefix=".plan-", dir=parent)
    try:
        for name, data in files.items():
            with open(os.path.join(staging, name), "wb") as f:
                f.write(data)
        os.makedirs(out_dir, exist_ok=True)
        for old in os.listdir(out_dir):   # batches of an earlier, longer plan
            if (BATCH.fullmatch(old) or old in OPTIONAL) and old not in files:
                os.remove(os.path.join(out_dir, old))
        for name in files:
            os.replace(os.path.join(staging, name), os.path.join(out_dir, name))
    finally:
        shutil.rmtree(staging, ignore_errors=True)
