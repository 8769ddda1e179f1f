"""The watcher's memory between views and across restarts: ``watch-state.json`` in ``--state-dir``.

- ``topics``: each topic's partition count the watcher has settled (judged, placed, or left
  alone); a topic, or partitions, beyond it are new. The first start with no file settles
  every topic there is (the watcher places what is created after it starts). ``missing``: since
  when each of them has been missing from the views; forgotten after
  :data:`~.decisions.MISSING_S` (a single view without it, from a broker behind, proves nothing).
- ``down_since``: when each down broker was first seen down (seconds since the epoch, so the
  grace period survives a restart); ``healed``: brokers whose replicas were re-placed, not
  healed again until they return.
- ``active``: the plan being executed (its directory under ``plans/``, kind and subject): a
  restart resumes it through the executor's own state file before deciding anything new.

Written atomically after every change (the executor's :func:`write_atomic`).

A dry run keeps its ledger apart, in ``watch-state.dry-run.json`` (:data:`DRY_RUN_STATE`): it
starts from its own file, else from the real one (so it judges what a real run would), and never
writes the real one; a later real run judges every topic the dry run judged, as if it had not run.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any

from kafka_replica_assignor.planner.execution.executor_state import write_atomic

STATE = "watch-state.json"
DRY_RUN_STATE = "watch-state.dry-run.json"
VERSION = 1


@dataclass(slots=True)
class Ledger:
    path: str
    topics: dict[str, int] | None = None          # None: no baseline yet
    missing: dict[str, float] = field(default_factory=dict)   # a settled topic missing since (epoch s)
    down_since: dict[int, float] = field(default_factory=dict)
    healed: set[int] = field(default_factory=set)
    active: dict[str, Any] | None = None          # {"dir", "kind", "subject", "started_at"}
    plans: int = 0                                # plans made so far (names the next directory)
    saved: bytes = b""                            # what the file holds, as last written

    @classmethod
    def load(cls, state_dir: str, dry_run: bool = False) -> Ledger:
        """The ledger of ``state_dir`` (a fresh one when there is none); ValueError when the
        file is not one. A dry run's is written to :data:`DRY_RUN_STATE`, and read from it when
        there is one, else from the real one."""
        path = os.path.join(state_dir, DRY_RUN_STATE if dry_run else STATE)
        data, read = None, path
        for read in (path, os.path.join(state_dir, STATE)) if dry_run else (path,):
            try:
                with open(read, encoding="utf-8") as f:
                    data = json.load(f)
                break
            except FileNotFoundError:
                continue
            except (OSError, json.JSONDecodeError) as exc:
                raise ValueError(f"cannot read {read}: {exc}") from None
        if data is None:
            return cls(path)
        if not isinstance(data, dict) or data.get("version") != VERSION:
            raise ValueError(f"{read} is not a watcher state of version {VERSION}")
        try:
            topics = data.get("topics")
            return cls(path, None if topics is None else {str(t): int(n) for t, n in topics.items()},
                       {str(t): float(s) for t, s in (data.get("missing") or {}).items()},
                       {int(b): float(s) for b, s in (data.get("down_since") or {}).items()},
                       {int(b) for b in data.get("healed") or ()}, data.get("active"), int(data.get("plans", 0)))
        except (AttributeError, TypeError, ValueError) as exc:
            raise ValueError(f"{read}: {exc}") from None

    def save(self) -> None:
        """Written when it changed since the last save (a refresh at rest writes nothing)."""
        data = {"version": VERSION, "topics": self.topics, "missing": self.missing,
                "down_since": {str(b): s for b, s in sorted(self.down_since.items())},
                "healed": sorted(self.healed), "active": self.active, "plans": self.plans}
        text = (json.dumps(data, indent=1, sort_keys=True) + "\n").encode()
        if text != self.saved:
            write_atomic(self.path, text)
            self.saved = text

    def next_plan_dir(self, kind: str) -> str:
        self.plans += 1
        return os.path.join(os.path.dirname(self.path), "plans", f"{self.plans:05d}-{kind}")
