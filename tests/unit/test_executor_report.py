"""execution.json and the report section: per batch figures from the state file's times, the
section replaced (never appended twice); the progress output of the command line."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from kafka_replica_assignor.cli.execute import Progress
from kafka_replica_assignor.planner.execution.executor_report import REPORT_MARK, execution_report, write_report
from kafka_replica_assignor.planner.execution.executor_state import ExecutionState

START = {("t", 0): (1, 2), ("t", 1): (1, 3), ("t", 2): (4, 5)}
TARGET = {("t", 0): (3, 2), ("t", 1): (4, 3), ("t", 2): (5, 4)}


def state_with_times(tmp_path: Path) -> ExecutionState:
    state = ExecutionState.new(str(tmp_path), "x")
    state.status = "done"
    state.throttles_used = [100]
    state.mark_submitted([("t", 0), ("t", 1)], now=10.0)   # both involve broker 1 at once
    state.mark([("t", 0)], "finished", now=12.0)
    state.mark([("t", 1)], "finished", now=15.0)
    state.mark_submitted([("t", 2)], now=20.0)             # a reorder: no broker involved
    state.mark([("t", 2)], "finished", now=20.5)
    return state


def test_per_batch_figures_and_peaks(tmp_path: Path) -> None:
    report = execution_report(state_with_times(tmp_path), list(TARGET.items()), START,
                              {("t", 0): 10, ("t", 1): 20, ("t", 2): 30}, {("t", 0): 1, ("t", 1): 1, ("t", 2): 2},
                              {"throttle": 100}, end=30.0)
    first, second = report["batches"]
    assert (first["moves"], first["finished"], first["bytes"], first["seconds"]) == (2, 2, 30, 5.0)
    assert first["peak_moves_per_broker"] == {"1": 2, "3": 1, "4": 1}   # broker 2 stays: not involved
    assert (second["moves"], second["bytes"], second["seconds"], second["peak_moves_per_broker"]) == (1, 0, 0.5, {})
    assert report["total"]["seconds"] == 10.5 and report["remaining"] == []


def test_the_report_section_is_replaced_not_appended(tmp_path: Path) -> None:
    (tmp_path / "report.md").write_text("# Plan\n\ntext\n")
    report = execution_report(state_with_times(tmp_path), list(TARGET.items()), START, {}, {}, {}, end=30.0)
    write_report(str(tmp_path), report)
    write_report(str(tmp_path), report)
    text = (tmp_path / "report.md").read_text()
    assert text.startswith("# Plan\n\ntext\n\n") and text.count(REPORT_MARK) == 1 and "## Execution" in text
    assert json.loads((tmp_path / "execution.json").read_text())["status"] == "done"


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_is_a_bar_on_a_terminal_and_json_lines_otherwise(monkeypatch: pytest.MonkeyPatch) -> None:
    fields = {"moves_done": 3, "moves_total": 6, "in_flight": 2, "bytes_done": 3 * 1024 * 1024,
              "bytes_total": 6 * 1024 * 1024, "rate_bytes_per_s": 1024 * 1024, "eta_s": 3.0, "throttle": 1}
    out, err = io.StringIO(), Terminal()
    monkeypatch.setattr("sys.stdout", out)
    monkeypatch.setattr("sys.stderr", err)
    Progress()("progress", fields)
    assert out.getvalue() == ""
    assert err.getvalue().startswith("\r[" + "#" * 15 + "." * 15 + "] 3/6 moves 3 MiB/6 MiB 1 MiB/s")
    assert "ETA 3 s" in err.getvalue()
    plain = io.StringIO()
    monkeypatch.setattr("sys.stderr", plain)
    Progress()("progress", fields)
    line = json.loads(out.getvalue())
    assert line["event"] == "progress" and line["moves_done"] == 3 and plain.getvalue() == ""
