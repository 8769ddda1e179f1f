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

from kafka_replica_assignor.cluster.files import NotARegularFile, read_regular
from kafka_replica_assignor.planner.execution.executor_state import (
    CONTROL,
    LOCK,
    STATE,
    BadState,
    ExecutionState,
    Locked,
    hold_lock,
    lock_holder,
    read_control,
    state_limit,
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


# ---- the state, lock and control files as untrusted input (issue 31) --------------------------

def _good_state(tmp_path: Path) -> ExecutionState:
    state = ExecutionState.new(str(tmp_path), "abc")
    state.mark_submitted([("t", 0)], now=1.0)
    return state


def test_a_state_file_of_another_plan_or_naming_other_partitions_is_bad_input(tmp_path: Path) -> None:
    _good_state(tmp_path)
    assert ExecutionState.load(str(tmp_path), "abc", {("t", 0), ("t", 1)}) is not None
    with pytest.raises(BadState, match="belongs to another plan"):
        ExecutionState.load(str(tmp_path), "other", {("t", 0)})
    with pytest.raises(BadState, match=r"names 1 partition\(s\) outside the plan: t-0"):
        ExecutionState.load(str(tmp_path), "abc", {("u", 0)})


@pytest.mark.parametrize("moves", [[], [["t-0", {"status": "finished"}]], "x", {"t-0": {"status": "done"}},
                                   {"t-0": {"status": "finished", "submissions": -1}},
                                   {"t-0": {"status": "finished", "evil": 1}}, {"t": {"status": "finished"}},
                                   {"t-0": ["finished"]}])
def test_a_state_file_with_moves_of_the_wrong_shape_is_bad_input(tmp_path: Path, moves: object) -> None:
    (tmp_path / STATE).write_text(json.dumps({"plan_sha256": "abc", "status": "running", "moves": moves}))
    with pytest.raises(BadState, match="not an execution state file"):
        ExecutionState.load(str(tmp_path), "abc", {("t", 0)})


@pytest.mark.parametrize("content", [b"", b"{", b"[]", b"\xff\xfe", b"[" * 100_000,
                                     b'{"plan_sha256": "abc", "status": "running", "throttle": -5}',
                                     b'{"plan_sha256": "abc", "status": "sleeping"}'])
def test_a_state_file_that_does_not_parse_is_bad_input(tmp_path: Path, content: bytes) -> None:
    (tmp_path / STATE).write_bytes(content)
    with pytest.raises(BadState):
        ExecutionState.load(str(tmp_path), "abc", {("t", 0)})


def test_a_state_file_linked_fifo_device_or_oversized_is_refused_at_once(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere.json"
    target.write_text(json.dumps(_good_state(tmp_path).to_dict()))
    (tmp_path / STATE).unlink()
    (tmp_path / STATE).symlink_to(target)
    with pytest.raises(BadState, match="symbolic link"):
        ExecutionState.load(str(tmp_path), "abc", {("t", 0)})
    (tmp_path / STATE).unlink()
    (tmp_path / STATE).symlink_to("/dev/zero")     # refused as a link, never read
    with pytest.raises(BadState, match="symbolic link"):
        ExecutionState.load(str(tmp_path), "abc", {("t", 0)})
    (tmp_path / STATE).unlink()
    os.mkfifo(tmp_path / STATE)                    # opened without blocking, refused
    started = time.monotonic()
    with pytest.raises(BadState, match="a FIFO, not a regular file"):
        ExecutionState.load(str(tmp_path), "abc", {("t", 0)})
    assert time.monotonic() - started < 2
    (tmp_path / STATE).unlink()
    with open(tmp_path / STATE, "wb") as f:        # sparse: over the limit without the disk
        f.truncate(state_limit(1) + 1)
    with pytest.raises(BadState, match="over the limit"):
        ExecutionState.load(str(tmp_path), "abc", {("t", 0)})


def test_a_device_is_refused_by_the_regular_file_reader(tmp_path: Path) -> None:
    with pytest.raises(NotARegularFile, match="a device"):
        read_regular("/dev/zero", 1024)


def test_a_lock_file_that_is_a_link_or_a_fifo_is_refused_and_its_target_untouched(tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    plan = tmp_path / "plan"
    plan.mkdir()
    (plan / LOCK).symlink_to(victim)
    with pytest.raises(BadState, match="symbolic link"), hold_lock(str(plan)):
        pass
    with pytest.raises(BadState, match="symbolic link"):
        lock_holder(str(plan))
    assert victim.read_text() == "precious\n"
    (plan / LOCK).unlink()
    (plan / LOCK).symlink_to(tmp_path / "missing")     # a dangling link is not created through either
    with pytest.raises(BadState, match="symbolic link"), hold_lock(str(plan)):
        pass
    assert not (tmp_path / "missing").exists()
    (plan / LOCK).unlink()
    os.mkfifo(plan / LOCK)
    with pytest.raises(BadState, match="FIFO"), hold_lock(str(plan)):
        pass
    with pytest.raises(BadState, match="FIFO"):
        lock_holder(str(plan))


def test_a_control_file_that_is_a_fifo_or_a_link_is_dropped_without_blocking(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / CONTROL)
    assert read_control(str(tmp_path)) is None and not (tmp_path / CONTROL).exists()
    (tmp_path / "x.json").write_text('{"cancel": true}')
    (tmp_path / CONTROL).symlink_to(tmp_path / "x.json")
    assert read_control(str(tmp_path)) is None and (tmp_path / "x.json").exists()
