"""What an execution did, for people and scripts: ``execution.json`` and a report section.

Per batch of the plan (``reassignment-NNNN.json``; one batch when the plan has none) and in
total: moves finished, cancelled, failed and not started; bytes copied (one replica's size per
new replica); seconds from the first submission to the last finish; the peak number of moves
in flight per broker (from the submission and finish times in the state file); throttles
used; leader changes of the final election.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from typing import Any

from kafka_replica_assignor.cluster.files import NotARegularFile, read_regular
from kafka_replica_assignor.planner.execution.executor_state import ExecutionState, MoveRecord, write_atomic

__all__ = ["REPORT_MARK", "execution_report", "report_section", "write_report"]

Key = tuple[str, int]
REPORT_MARK = "<!-- replica-assignor execute -->"
REPORT_MAX_BYTES = 64 << 20


def _peak(moves: Iterable[tuple[tuple[int, ...], MoveRecord]], end: float) -> dict[int, int]:
    """The most moves in flight at once per broker, by a sweep over [submitted, finished)."""
    events: list[tuple[float, int, tuple[int, ...]]] = []
    for involved, r in moves:
        if r.submitted_at is None or not involved:
            continue
        events.append((r.submitted_at, 1, involved))
        events.append((r.finished_at if r.finished_at is not None else end, -1, involved))
    events.sort(key=lambda e: (e[0], e[1]))     # a finish before a start at the same instant
    load: dict[int, int] = {}
    peak: dict[int, int] = {}
    for _, step, involved in events:
        for b in involved:
            load[b] = load.get(b, 0) + step
            peak[b] = max(peak.get(b, 0), load[b])
    return dict(sorted(peak.items()))


def _summary(keys: list[Key], state: ExecutionState, involved: Mapping[Key, tuple[int, ...]],
             copy_bytes: Mapping[Key, int], end: float) -> dict[str, Any]:
    records = {k: state.moves[k] for k in keys if k in state.moves}
    by_status = {s: sorted(k for k, r in records.items() if r.status == s)
                 for s in ("finished", "cancelled", "failed", "submitted")}
    starts = [r.submitted_at for r in records.values() if r.submitted_at is not None]
    ends = [r.finished_at for r in records.values() if r.finished_at is not None and r.submitted_at is not None]
    return {
        "moves": len(keys),
        "finished": len(by_status["finished"]),
        "cancelled": len(by_status["cancelled"]),
        "failed": len(by_status["failed"]),
        "not_started": len(keys) - len(records),
        "bytes": sum(copy_bytes.get(k, 0) for k in keys),
        "bytes_copied": sum(copy_bytes.get(k, 0) for k in by_status["finished"]),
        "seconds": round(max(ends) - min(starts), 3) if starts and ends else 0.0,
        "peak_moves_per_broker": {str(b): v for b, v in
                                  _peak(((involved[k], r) for k, r in records.items()), end).items()},
    }


def execution_report(state: ExecutionState, targets: Iterable[tuple[Key, tuple[int, ...]]],
                     starting: Mapping[Key, tuple[int, ...]], sizes: Mapping[Key, int],
                     batches: Mapping[Key, int], settings: Mapping[str, Any], end: float) -> dict[str, Any]:
    """``execution.json``'s content (module doc)."""
    order = [k for k, _ in targets]
    target = dict(targets)
    involved = {k: tuple(b for b in target[k] if b not in starting[k])
                + tuple(b for b in starting[k] if b not in target[k]) for k in order}
    copy_bytes = {k: sizes.get(k, 0) * sum(1 for b in target[k] if b not in starting[k]) for k in order}
    numbers = sorted(set(batches.get(k, 1) for k in order)) or [1]
    per_batch = []
    for n in numbers:
        keys = [k for k in order if batches.get(k, 1) == n]
        per_batch.append({"batch": n, **_summary(keys, state, involved, copy_bytes, end)})
    remaining = [f"{t}-{p}" for t, p in order
                 if state.moves.get((t, p)) is None or state.moves[(t, p)].status != "finished"]
    return {
        "version": 1,
        "status": state.status,
        "plan_sha256": state.plan_sha256,
        **settings,
        "throttles_used": state.throttles_used,
        "runs": state.runs,
        "total": _summary(order, state, involved, copy_bytes, end),
        "batches": per_batch,
        "leader_election": state.leader_election,
        "remaining": remaining,
    }


def report_section(report: Mapping[str, Any]) -> str:
    """The Markdown section appended to the plan's ``report.md``."""
    total = report["total"]
    throttles = ", ".join(f"{t} B/s" for t in report["throttles_used"]) or "none"
    election = report.get("leader_election") or {}
    lines = [REPORT_MARK, "## Execution", "",
             f"Status **{report['status']}**: {total['finished']} of {total['moves']} partition(s) moved "
             f"({total['bytes_copied']} of {total['bytes']} bytes) in {total['seconds']} s; throttle {throttles}; "
             f"{election.get('leader_changes', 0)} leader change(s).", "",
             "| batch | moves | finished | cancelled | failed | not started | bytes | seconds | peak moves per broker |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for b in report["batches"]:
        peak = ", ".join(f"{k}: {v}" for k, v in b["peak_moves_per_broker"].items()) or "-"
        lines.append(f"| {b['batch']} | {b['moves']} | {b['finished']} | {b['cancelled']} | {b['failed']} | "
                     f"{b['not_started']} | {b['bytes']} | {b['seconds']} | {peak} |")
    if report["remaining"]:
        lines += ["", f"Not applied ({len(report['remaining'])}): " + ", ".join(report["remaining"][:50])
                  + (" ..." if len(report["remaining"]) > 50 else "")]
    return "\n".join(lines) + "\n"


def write_report(plan_dir: str, report: Mapping[str, Any]) -> None:
    """``execution.json``, and the section in ``report.md`` (replacing an earlier one)."""
    write_atomic(os.path.join(plan_dir, "execution.json"), (json.dumps(report, indent=1) + "\n").encode())
    path = os.path.join(plan_dir, "report.md")
    try:
        text = read_regular(path, REPORT_MAX_BYTES)[1].decode("utf-8", errors="replace")
    except FileNotFoundError:
        text = ""
    except NotARegularFile:       # a FIFO or a device in its place: replaced, never read
        text = ""
    if REPORT_MARK in text:
        text = text[:text.index(REPORT_MARK)]
    text = text.rstrip("\n") + ("\n\n" if text else "") + report_section(report)
    write_atomic(path, text.encode())
