"""The files a plan becomes, as bytes: Kafka's own formats first, then the report and charts.

- ``reassignment.json``: ``kafka-reassign-partitions.sh --execute --reassignment-json-file``
  input (version 1), only the partitions that change, in plan order; with a batch size also
  ``reassignment-0001.json``, ... of at most that many partitions each (run them in order).
  Written even when nothing changes (an empty ``partitions`` list).
- ``rollback.json``: the same partitions with their current replicas.
- ``leader-election.json``: ``kafka-leader-election.sh --election-type preferred
  --path-to-json-file`` input: the partitions whose preferred leader changes.
- ``moves.csv``: every move (kind, topic, partition, source, destination).
- ``report.md``, ``replicas.png``, ``leaders.png``: see :mod:`planner.report`, :mod:`planner.charts`.

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

from assignors.snapshot import PartitionEntry

from .charts import render_charts
from .plan import Plan
from .report import render_report
from .settings import PlanSettings

BATCH = re.compile(r"reassignment-\d{4}\.json")


def _lines(head: str, items: Iterable[str], tail: str) -> str:
    body = ",\n".join(items)
    return f"{head}\n{body}\n{tail}\n" if body else f"{head}{tail}\n"


def reassignment_json(entries: Iterable[PartitionEntry]) -> str:
    """Kafka's partition reassignment JSON, version 1, one partition per line."""
    items = (json.dumps({"topic": p.topic, "partition": p.partition, "replicas": list(p.replicas)},
                        separators=(",", ":"))
             for p in entries)
    return _lines('{"version":1,"partitions":[', items, "]}")


def leader_election_json(entries: Iterable[PartitionEntry]) -> str:
    """Input of ``kafka-leader-election.sh --path-to-json-file``."""
    items = (json.dumps({"topic": p.topic, "partition": p.partition}, separators=(",", ":"))
             for p in entries)
    return _lines('{"partitions":[', items, "]}")


def moves_csv(plan: Plan) -> str:
    rows = ["kind,topic,partition,source,destination"]
    rows += [f"{m.kind},{_csv(m.topic)},{m.partition},{m.source},{m.destination}" for m in plan.moves]
    return "\n".join(rows) + "\n"


def _csv(text: str) -> str:
    return '"' + text.replace('"', '""') + '"' if any(c in text for c in ',"\n') else text


def render_outputs(plan: Plan, settings: PlanSettings, *, charts: bool = True) -> dict[str, bytes]:
    """Every output file of a plan, by name, in a fixed order."""
    changed = plan.changed()
    before = {(p.topic, p.partition): p for p in plan.before.partitions} if changed else {}
    files: dict[str, bytes] = {"reassignment.json": reassignment_json(changed).encode()}
    if settings.batch_size:
        size = settings.batch_size
        batches = [changed[k:k + size] for k in range(0, len(changed), size)] or [()]
        for n, batch in enumerate(batches, 1):
            files[f"reassignment-{n:04d}.json"] = reassignment_json(batch).encode()
    files["rollback.json"] = reassignment_json(before[(p.topic, p.partition)] for p in changed).encode()
    files["leader-election.json"] = leader_election_json(plan.leader_changed()).encode()
    files["moves.csv"] = moves_csv(plan).encode()
    files["report.md"] = render_report(plan, settings).encode()
    if charts:
        files.update(render_charts(plan))
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
            if BATCH.fullmatch(old) and old not in files:
                os.remove(os.path.join(out_dir, old))
        for name in files:
            os.replace(os.path.join(staging, name), os.path.join(out_dir, name))
    finally:
        shutil.rmtree(staging, ignore_errors=True)
