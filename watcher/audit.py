"""The watcher's audit log: ``audit.jsonl`` in ``--state-dir``, append-only, one JSON object a line.

Every record has ``ts`` (seconds since the epoch), ``event`` and the fields of its event:

- ``decided``: ``kind`` (placement, placeholders, dead_brokers, cluster), ``action`` (place,
  fill, heal, leave, wait, refuse), ``subject`` (a topic, or the brokers), ``reason``,
  ``brokers``, ``moves`` (``topic``, ``partition``, ``from``, ``to``), ``seen`` (what the view
  showed: brokers registered, fenced, down, topics, reassignments in progress, its age) and
  ``dry_run``;
- ``executed``: the same ``kind`` and ``subject``, ``plan_dir``, ``status`` (the executor's:
  done, failed, cancelled, stopped, refused) and ``moves``;
- ``resumed``: a plan found running at start-up, continued (``plan_dir``);
- ``cluster_lost`` / ``cluster_back``: the cluster could not be read (``error``, ``since``),
  once a minute while it lasts; ``started`` / ``stopped``: the watcher's own life.

A line is written and flushed (``fsync``) before the action it announces starts; a crash
never loses a decision that was acted on. The file is opened in append mode only: nothing in
it is ever rewritten.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any


class AuditLog:
    def __init__(self, path: str) -> None:
        self.path = path
        self._file = open(path, "a", encoding="utf-8")  # noqa: SIM115 - held for the watcher's life

    def write(self, event: str, **fields: Any) -> dict[str, Any]:
        record = {"ts": round(time.time(), 3), "event": event, **fields}
        self._file.write(json.dumps(record, separators=(",", ":"), sort_keys=False) + "\n")
        self._file.flush()
        os.fsync(self._file.fileno())
        return record

    def close(self) -> None:
        self._file.close()


def read_audit(path: str) -> list[dict[str, Any]]:
    """The records of an audit log (for tests and readers)."""
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]
