"""The execution state file and lock: round trip, atomic replacement, one execution per plan,
the lock released by ``kill -9``, control requests read once."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kafka_replica_assignor.planner.execution.executor_state import (
    STATE,
    ExecutionState,
    Locked,
    hold_lock,
    lock_holder,
    read_control,
    write_atomic,
    write_control,
)

REPO = Path(__file__).resolve().parents[2]


def test_state_round_trips_and_counts_submissions(tmp_path: Path) -> None:
    state = ExecutionState.new(str(tmp_path), "abc")
    state.runs.append({"pid": 1})
    state.mark_submitted([("t-x", 0), ("t", 1)], now=10.0)
    state.mark([("t-x", 0)], "finished", now=12.0)
    state.note_throttles(1000, [1, 2], ["t"])
    state.note_throttles(2000, [3], [])
    assert state.note_load({1: 2, 2: 1}) and not state.note_load({1: 1})
    loaded = ExecutionState.load(str(tmp_path))
    assert loaded is not None and loaded.to_dict() == state.to_dict()
    assert loaded.with_status("finished") == [("t-x", 0)] and loaded.with_status("submitted") == [("t", 1)]
    assert loaded.throttle == 2000 and loaded.throttles_used == [1000, 2000]
    assert loaded.throttled_brokers == {1, 2, 3} and loaded.peak_moves_per_broker == {1: 2, 2: 1}
    loaded.mark_submitted([("t", 1)])
    assert ExecutionState.load(str(tmp_path)).moves[("t", 1)].submissions == 2  # type: ignore[union-attr]


def test_a_missing_state_is_none_and_a_bad_one_is_named(tmp_path: Path) -> None:
    assert ExecutionState.load(str(tmp_path)) is None
    (tmp_path / STATE).write_text("{}")
    with pytest.raises(ValueError, match="not an execution state file"):
        ExecutionState.load(str(tmp_path))


def test_atomic_write_leaves_no_temporary_file(tmp_path: Path) -> None:
    target = tmp_path / "f.json"
    write_atomic(str(target), b"one")
    write_atomic(str(target), b"two")
    assert target.read_bytes() == b"two" and os.listdir(tmp_path) == ["f.json"]


def test_a_second_execution_of_the_plan_is_refused(tmp_path: Path) -> None:
    with hold_lock(str(tmp_path)):
        assert lock_holder(str(tmp_path)) == os.getpid()
        with pytest.raises(Locked, match=f"pid {os.getpid()}"), hold_lock(str(tmp_path)):
            pass
    assert lock_holder(str(tmp_path)) is None
    with hold_lock(str(tmp_path)):    # free again
        pass


def test_kill_9_releases_the_lock(tmp_path: Path) -> None:
    code = ("import sys, time; sys.path.insert(0, sys.argv[2]); from kafka_replica_assignor.planner.execution.executor_state import hold_lock\n"
            "with hold_lock(sys.argv[1]):\n    print('held', flush=True); time.sleep(60)\n")
    proc = subprocess.Popen([sys.executable, "-c", code, str(tmp_path), str(REPO)], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
        assert lock_holder(str(tmp_path)) == proc.pid
        with pytest.raises(Locked), hold_lock(str(tmp_path)):
            pass
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
        assert proc.stdout is not None
        proc.stdout.close()
    deadline = time.monotonic() + 5
    while lock_holder(str(tmp_path)) is not None and time.monotonic() < deadline:
        time.sleep(0.05)
    with hold_lock(str(tmp_path)):
        pass


def test_a_control_request_is_read_once(tmp_path: Path) -> None:
    assert read_control(str(tmp_path)) is None
    write_control(str(tmp_path), {"throttle": 5})
    assert json.loads((tmp_path / "execution-control.json").read_text()) == {"throttle": 5}
    assert read_control(str(tmp_path)) == {"throttle": 5}
    assert read_control(str(tmp_path)) is None
