"""``replica-assignor execute`` on a real Apache Kafka cluster (the session's 5 brokers).

Topics are filled with incompressible records so that a move copies megabytes, and the
throttle is low enough that a move takes seconds: what an operator sees on a real cluster,
in miniature. Each test makes its plan directory with the planner's own writer
(:func:`kafka_replica_assignor.planner.report.outputs.render_outputs`), so the executor reads exactly what ``balance``
writes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from kafka_replica_assignor.cluster.snapshot import ClusterSnapshot
from kafka_replica_assignor.planner.execution.executor_throttles import BROKER_THROTTLES, TOPIC_REPLICAS
from kafka_replica_assignor.planner.plan import MoveKind, Working
from kafka_replica_assignor.planner.report.outputs import render_outputs, write_outputs
from kafka_replica_assignor.planner.request import PlanRequest
from kafka_replica_assignor.protocol.cluster_reader import open_admin_client, read_cluster
from kafka_replica_assignor.protocol.reassignment import ReassignmentAdmin
from scripts.kafka_cluster import KafkaCluster
from tests.kafka.conftest import Topics

REPO = Path(__file__).resolve().parents[2]
Key = tuple[str, int]


# ---- helpers (also used by bench/execute_throttled.py) ------------------------------------------

def admin_for(bootstrap: str) -> Any:
    return open_admin_client(bootstrap, 30_000)


def create_topic(bootstrap: str, name: str, assignment: Mapping[int, Sequence[int]]) -> None:
    from kafka.admin import NewTopic

    admin = admin_for(bootstrap)
    try:
        admin.create_topics([NewTopic(name, replica_assignments={p: list(r) for p, r in assignment.items()})],
                            timeout_ms=30_000)
    finally:
        admin.close()


def fill(bootstrap: str, topic: str, partitions: Sequence[int], bytes_per_partition: int,
         record_bytes: int = 64 * 1024) -> None:
    """Incompressible records, ``bytes_per_partition`` (rounded up to records) in each partition."""
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, acks=1, linger_ms=20, max_request_size=2 * 1024 * 1024,
                             batch_size=512 * 1024, request_timeout_ms=60_000)
    try:
        count = -(-bytes_per_partition // record_bytes)
        for p in partitions:
            for _ in range(count):
                producer.send(topic, os.urandom(record_bytes), partition=p)
        producer.flush(120)
    finally:
        producer.close(10)


def snapshot_of(bootstrap: str, topics: Sequence[str]) -> ClusterSnapshot:
    admin = admin_for(bootstrap)
    try:
        snap = read_cluster(admin, with_sizes=True).snapshot
    finally:
        admin.close()
    return ClusterSnapshot(snap.brokers, tuple(p for p in snap.partitions if p.topic in topics))


def write_plan(out: Path, snapshot: ClusterSnapshot, targets: Mapping[Key, Sequence[int]],
               request: PlanRequest | None = None) -> Path:
    """A plan directory exactly as ``balance --out`` writes it, moving ``targets``."""
    work = Working(snapshot)
    index = {(p.topic, p.partition): i for i, p in enumerate(snapshot.partitions)}
    for key, target in targets.items():
        i = index[key]
        old = list(work.original[i])
        came = [b for b in target if b not in old]
        went = [b for b in old if b not in target]
        for src, dst in zip(went, came, strict=True):
            work.record(i, src, dst, MoveKind.REPLICA)
        if not came and old[0] != target[0]:
            work.record(i, old[0], target[0], MoveKind.LEADER)
        work.replicas[i] = list(target)
    plan = work.plan()
    write_outputs(render_outputs(plan, request or PlanRequest("replica"), charts=False), str(out))
    return out


def execute(*args: str, timeout: float = 170) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kafka_replica_assignor.cli.main", "execute", *args], cwd=REPO,
                          capture_output=True, text=True, timeout=timeout)


def start_execute(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "kafka_replica_assignor.cli.main", "execute", *args], cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def events(stdout: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]


def throttle_configs(bootstrap: str, topics: Sequence[str]) -> dict[str, dict[str, str]]:
    admin = admin_for(bootstrap)
    try:
        return ReassignmentAdmin(admin).configs(range(5), topics, BROKER_THROTTLES + TOPIC_REPLICAS)
    finally:
        admin.close()


def replicas_of(bootstrap: str, topics: Sequence[str]) -> dict[Key, tuple[int, ...]]:
    admin = admin_for(bootstrap)
    try:
        return ReassignmentAdmin(admin).replicas(topics)
    finally:
        admin.close()


def ongoing(bootstrap: str) -> dict[Key, Any]:
    admin = admin_for(bootstrap)
    try:
        return dict(ReassignmentAdmin(admin).ongoing())
    finally:
        admin.close()


def leaders_of(bootstrap: str, topic: str) -> dict[int, int]:
    admin = admin_for(bootstrap)
    try:
        [t] = admin.describe_topics([topic])
    finally:
        admin.close()
    return {p["partition_index"]: p["leader_id"] for p in t["partitions"]}


def wait_for(what: str, check: Callable[[], bool], timeout: float = 90, every: float = 0.1) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(every)


class Run:
    """An execution in the background, its JSON lines in a file the test reads as it goes."""

    started: list[Run] = []

    def __init__(self, out: Path, *args: str) -> None:
        Run.started.append(self)
        self.out = out
        self.stdout = open(out, "w")  # noqa: SIM115 - closed in wait()
        self.proc = subprocess.Popen([sys.executable, "-m", "kafka_replica_assignor.cli.main", "execute", *args], cwd=REPO,
                                     stdout=self.stdout, stderr=subprocess.PIPE, text=True)

    def events(self, name: str | None = None) -> list[dict[str, Any]]:
        found = events(self.out.read_text()) if self.out.exists() else []
        return [e for e in found if name is None or e["event"] == name]

    def running(self) -> bool:
        return self.proc.poll() is None

    def wait(self, timeout: float = 150) -> tuple[int, str]:
        try:
            _, err = self.proc.communicate(timeout=timeout)
        finally:
            self.stdout.close()
        return self.proc.returncode, err


@pytest.fixture(autouse=True)
def no_execution_outlives_its_test() -> Iterator[None]:
    """A test that fails while an execution runs stops it (by its pid) and closes its files."""
    yield
    for run in Run.started:
        if run.running():
            run.proc.kill()
        run.proc.communicate(timeout=30)   # reaped, its stderr pipe closed
        run.stdout.close()
    Run.started.clear()


# ---- the tests --------------------------------------------------------------------------------

PARTITIONS = 8
SIZE = 1_500_000          # bytes per partition: 1.5 s per copy at 1 MB/s


def ring_topic(kafka: KafkaCluster, topics: Topics, stem: str, size: int = SIZE,
               partitions: int = PARTITIONS) -> tuple[str, dict[Key, tuple[int, ...]], dict[Key, tuple[int, ...]]]:
    """A topic of RF 2 around the ring of brokers, filled; the starting replicas, and targets
    that move each partition's follower one broker on (every other one also taking the lead)."""
    name = topics.name(stem)
    start = {p: (p % 5, (p + 1) % 5) for p in range(partitions)}
    create_topic(kafka.bootstrap, name, start)
    fill(kafka.bootstrap, name, range(partitions), size)
    targets = {(name, p): ((p % 5, (p + 2) % 5) if p % 2 else ((p + 2) % 5, p % 5)) for p in range(partitions)}
    return name, {(name, p): r for p, r in start.items()}, targets


def assert_no_throttles(kafka: KafkaCluster, topic: str) -> None:
    assert throttle_configs(kafka.bootstrap, [topic]) == {}


def assert_moving_replicas_only(seen_throttles: list[dict[str, dict[str, str]]], name: str,
                                start: dict[tuple[str, int], tuple[int, ...]],
                                targets: dict[tuple[str, int], tuple[int, ...]]) -> None:
    """Kafka's format, on the moving replicas only: every value is partition:broker of a move
    (leaders: a starting replica; followers: a new one)."""
    topic_values = [c[f"topic {name}"] for c in seen_throttles if f"topic {name}" in c]
    assert topic_values, "no topic throttle was ever seen"
    for value in topic_values:
        for key, allowed in (("leader.replication.throttled.replicas", lambda p, b: b in start[(name, p)]),
                             ("follower.replication.throttled.replicas",
                              lambda p, b: b in targets[(name, p)] and b not in start[(name, p)])):
            for entry in filter(None, value.get(key, "").split(",")):
                p, b = map(int, entry.split(":"))
                assert allowed(p, b), (key, entry)


def test_a_whole_plan_ends_in_the_planned_state_within_the_cap_and_without_throttles(
        kafka: KafkaCluster, topics: Topics, tmp_path: Path) -> None:
    name, start, targets = ring_topic(kafka, topics, "whole")
    plan = write_plan(tmp_path / "plan", snapshot_of(kafka.bootstrap, [name]), targets,
                      PlanRequest("replica", throttle=1_000_000))
    run = Run(tmp_path / "out.jsonl", "--plan", str(plan), "--bootstrap-server", kafka.bootstrap,
              "--max-moves-per-broker", "1", "--poll-interval-ms", "300")
    peaks: dict[int, int] = {}
    polls = 0
    seen_throttles: list[dict[str, dict[str, str]]] = []
    changed = None
    while run.running():
        load: dict[int, int] = {}
        for (topic, _), r in ongoing(kafka.bootstrap).items():
            if topic == name:
                for b in (*r.adding, *r.removing):
                    load[b] = load.get(b, 0) + 1
        polls += 1
        assert all(v <= 1 for v in load.values()), f"a broker in more than one move at once: {load}"
        for b, v in load.items():
            peaks[b] = max(peaks.get(b, 0), v)
        configs = throttle_configs(kafka.bootstrap, [name])
        if configs:
            seen_throttles.append(configs)
        if changed is None and seen_throttles:   # change it in flight, once throttles are on
            changed = execute("--plan", str(plan), "--throttle", "2000000", timeout=60)
        time.sleep(0.1)
    code, err = run.wait()
    assert code == 0, err
    assert polls >= 5 and peaks and max(peaks.values()) == 1
    assert replicas_of(kafka.bootstrap, [name]) == targets
    assert_no_throttles(kafka, name)
    assert ongoing(kafka.bootstrap) == {}
    assert_moving_replicas_only(seen_throttles, name, start, targets)
    rates = {c[k].get("leader.replication.throttled.rate") for c in seen_throttles for k in c if k.startswith("broker")}
    assert "1000000" in rates
    assert changed is not None and changed.returncode == 0, changed.stderr if changed else "never changed"
    assert "2000000" in rates or any(e["rate"] == 2000000 for e in run.events("throttle_changed"))
    leaders = leaders_of(kafka.bootstrap, name)
    assert all(leaders[p] == t[0] for (_, p), t in targets.items())
    report = json.loads((plan / "execution.json").read_text())
    assert report["status"] == "done" and report["total"]["finished"] == PARTITIONS
    assert report["total"]["bytes_copied"] > PARTITIONS * SIZE * 0.9
    assert max(report["total"]["peak_moves_per_broker"].values()) == 1
    assert report["throttles_used"] == [1_000_000, 2_000_000]
    assert "## Execution" in (plan / "report.md").read_text()


def test_a_byte_budget_runs_small_moves_past_the_cap_and_ends_in_the_planned_state(
        kafka: KafkaCluster, topics: Topics, tmp_path: Path) -> None:
    name, start, targets = ring_topic(kafka, topics, "budget", size=200_000, partitions=10)
    plan = write_plan(tmp_path / "plan", snapshot_of(kafka.bootstrap, [name]), targets,
                      PlanRequest("replica", throttle=1_000_000))
    run = Run(tmp_path / "out.jsonl", "--plan", str(plan), "--bootstrap-server", kafka.bootstrap,
              "--max-moves-per-broker", "1", "--max-bytes-in-flight-per-broker", "1000000",
              "--poll-interval-ms", "300")
    code, err = run.wait()
    assert code == 0, err
    assert replicas_of(kafka.bootstrap, [name]) == targets
    assert_no_throttles(kafka, name)
    assert ongoing(kafka.bootstrap) == {}
    report = json.loads((plan / "execution.json").read_text())
    assert report["status"] == "done" and report["total"]["finished"] == 10
    assert max(report["total"]["peak_moves_per_broker"].values()) > 1      # past K = 1, within 1 MB
    state = json.loads((plan / "execution-state.json").read_text())
    assert all(m["submissions"] == 1 for m in state["moves"].values())


def test_dry_run_changes_nothing(kafka: KafkaCluster, topics: Topics, tmp_path: Path) -> None:
    name, start, targets = ring_topic(kafka, topics, "dry", size=100_000, partitions=4)
    plan = write_plan(tmp_path / "plan", snapshot_of(kafka.bootstrap, [name]), targets,
                      PlanRequest("replica", throttle=1_000_000))
    files = sorted(os.listdir(plan))
    out = execute("--plan", str(plan), "--bootstrap-server", kafka.bootstrap, "--dry-run")
    assert out.returncode == 0, out.stderr
    shown = json.loads(out.stdout)
    assert shown["pending"] == 4 and shown["topic_throttles"][name]
    assert sorted(os.listdir(plan)) == files
    assert replicas_of(kafka.bootstrap, [name]) == start
    assert_no_throttles(kafka, name)
    assert ongoing(kafka.bootstrap) == {}


def test_a_plan_made_before_a_concurrent_change_is_refused(kafka: KafkaCluster, topics: Topics,
                                                           tmp_path: Path) -> None:
    name, start, targets = ring_topic(kafka, topics, "drift", size=100_000, partitions=4)
    plan = write_plan(tmp_path / "plan", snapshot_of(kafka.bootstrap, [name]), targets)
    admin = admin_for(kafka.bootstrap)
    try:   # someone else moves partition 2 after the plan was made
        assert ReassignmentAdmin(admin).reassign({(name, 2): (3, 4)}) == {}
    finally:
        admin.close()
    wait_for("the concurrent move", lambda: replicas_of(kafka.bootstrap, [name])[(name, 2)] == (3, 4))
    out = execute("--plan", str(plan), "--bootstrap-server", kafka.bootstrap)
    assert out.returncode == 1, out.stderr
    assert out.stdout.splitlines() == [f"{name}-2: planned from [2, 3], now [3, 4]"]
    assert "changed since the plan was made" in out.stderr
    now = replicas_of(kafka.bootstrap, [name])
    assert {k: v for k, v in now.items() if k != (name, 2)} == {k: v for k, v in start.items() if k != (name, 2)}
    assert not (plan / "execution-state.json").exists() or json.loads(
        (plan / "execution-state.json").read_text())["moves"] == {}
    assert_no_throttles(kafka, name)


def test_kill_9_mid_plan_then_a_second_run_finishes_without_submitting_a_move_twice(
        kafka: KafkaCluster, topics: Topics, tmp_path: Path) -> None:
    name, start, targets = ring_topic(kafka, topics, "kill", partitions=2 * PARTITIONS)
    plan = write_plan(tmp_path / "plan", snapshot_of(kafka.bootstrap, [name]), targets,
                      PlanRequest("replica", throttle=250_000))
    args = ("--plan", str(plan), "--bootstrap-server", kafka.bootstrap, "--max-moves-per-broker", "1",
            "--poll-interval-ms", "300")
    first = Run(tmp_path / "first.jsonl", *args)
    wait_for("moves in flight", lambda: bool(first.events("moves_submitted")) or not first.running())
    assert first.running(), first.wait()[1]
    changed = execute("--plan", str(plan), "--throttle", "300000", timeout=60)   # the operator's, in flight
    assert changed.returncode == 0, changed.stderr

    def recorded(status: str) -> set[str]:
        try:
            moves = json.loads((plan / "execution-state.json").read_text())["moves"]
        except (OSError, ValueError, KeyError):
            return set()
        return {n for n, r in moves.items() if r["status"] == status}

    def sent() -> set[str]:
        return {p for e in first.events("moves_submitted") for p in e["partitions"]}

    # The kill follows the state file and the event stream: the moment a move has finished and
    # another is in flight in Kafka (recorded before it is sent, reported after). Each copy takes
    # seconds; reading and killing take milliseconds.
    wait_for("a move finished and another in flight",
             lambda: bool(recorded("finished")) and bool(recorded("submitted") & sent()) or not first.running(),
             every=0.02)
    assert first.running(), first.wait()[1]
    os.kill(first.proc.pid, signal.SIGKILL)
    code, _ = first.wait()
    assert code == -signal.SIGKILL
    status = json.loads(execute("--plan", str(plan), "--status").stdout)
    assert status["status"] == "stopped (no process holds the lock)" and status["running_pid"] is None
    state = json.loads((plan / "execution-state.json").read_text())
    in_flight_at_kill = {n for n, r in state["moves"].items() if r["status"] == "submitted"}
    finished_at_kill = {n for n, r in state["moves"].items() if r["status"] == "finished"}
    assert in_flight_at_kill and finished_at_kill
    assert throttle_configs(kafka.bootstrap, [name]) != {}      # left behind by the kill
    cleanup = execute("--plan", str(plan), "--bootstrap-server", kafka.bootstrap, "--cleanup-throttles")
    assert cleanup.returncode == 0, cleanup.stderr
    assert_no_throttles(kafka, name)
    second = Run(tmp_path / "second.jsonl", *args)
    code, err = second.wait()
    assert code == 0, err
    assert second.events("execution_started")[0]["throttle"] == 300_000     # not the plan's 250 000
    sent_first = {p for e in first.events("moves_submitted") for p in e["partitions"]}
    sent_second = {p for e in second.events("moves_submitted") for p in e["partitions"]}
    assert not sent_first & sent_second, "a move was submitted twice"
    assert sent_first | sent_second == {f"{t}-{p}" for t, p in targets}
    assert second.events("execution_started")[0]["in_flight"] + second.events("execution_started")[0]["finished"] \
        >= len(in_flight_at_kill | finished_at_kill)
    final = json.loads((plan / "execution-state.json").read_text())
    assert all(r["submissions"] == 1 and r["status"] == "finished" for r in final["moves"].values())
    assert replicas_of(kafka.bootstrap, [name]) == targets
    assert_no_throttles(kafka, name)


def test_cancel_mid_plan_leaves_old_or_planned_replicas_and_no_throttles(
        kafka: KafkaCluster, topics: Topics, tmp_path: Path) -> None:
    name, start, targets = ring_topic(kafka, topics, "cancel")
    plan = write_plan(tmp_path / "plan", snapshot_of(kafka.bootstrap, [name]), targets,
                      PlanRequest("replica", throttle=500_000))
    run = Run(tmp_path / "out.jsonl", "--plan", str(plan), "--bootstrap-server", kafka.bootstrap,
              "--max-moves-per-broker", "1", "--poll-interval-ms", "300")
    wait_for("moves in flight", lambda: bool(run.events("moves_submitted")) or not run.running())
    assert run.running(), run.wait()[1]
    second = execute("--plan", str(plan), "--bootstrap-server", kafka.bootstrap)   # refused: one runs
    assert second.returncode == 1 and "another execution of this plan is running" in second.stderr
    status = execute("--plan", str(plan), "--status")
    assert status.returncode == 0, status.stderr
    shown = json.loads(status.stdout)
    assert shown["running_pid"] == run.proc.pid and shown["status"] == "running" and shown["moves"] == PARTITIONS
    assert shown["submitted"] + shown["finished"] >= 1 and shown["throttle"] == 500_000
    cancel = execute("--plan", str(plan), "--cancel")
    code, err = run.wait()
    assert code == 1 and "cancelled" in err
    assert cancel.returncode == 0, cancel.stderr
    now = replicas_of(kafka.bootstrap, [name])
    for key, target in targets.items():
        assert now[key] == target or set(now[key]) == set(start[key]), f"{key}: {now[key]}"
    assert any(set(now[k]) == set(start[k]) for k in targets), "the cancel came after the end"
    assert ongoing(kafka.bootstrap) == {}
    assert_no_throttles(kafka, name)
    report = json.loads((plan / "execution.json").read_text())
    assert report["status"] == "cancelled" and report["remaining"]


def test_a_plan_is_refused_while_a_reassignment_it_did_not_start_runs(
        kafka: KafkaCluster, topics: Topics, tmp_path: Path) -> None:
    """A reassignment started by Kafka's own tool, throttled so that it stays in flight: the
    executor refuses (as Kafka's tool does without --additional), names it and moves nothing."""
    # 6 MB a partition: a throttled follower's first fetches (up to 1 MB a partition each) pass
    # before Kafka's quota, a rate over sampled windows, holds them back
    slow, slow_start, slow_targets = ring_topic(kafka, topics, "foreign", size=6_000_000, partitions=2)
    other, other_start, other_targets = ring_topic(kafka, topics, "other", size=10_000, partitions=2)
    other_plan = write_plan(tmp_path / "other", snapshot_of(kafka.bootstrap, [other]), other_targets)
    foreign = tmp_path / "foreign.json"
    foreign.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": t, "partition": p, "replicas": list(r)} for (t, p), r in slow_targets.items()]}))
    tool = ("org.apache.kafka.tools.reassign.ReassignPartitionsCommand", "--bootstrap-server", kafka.bootstrap,
            "--reassignment-json-file", str(foreign))
    started = kafka.tool(*tool, "--execute", "--throttle", "10000")   # 10 kB/s: minutes for 6 MB
    assert started.returncode == 0, started.stdout + started.stderr
    try:
        refused = execute("--plan", str(other_plan), "--bootstrap-server", kafka.bootstrap)
        assert refused.returncode == 1 and "not started by this plan are in progress" in refused.stderr, \
            (refused.stdout, refused.stderr)
        named = {line.split(":")[0] for line in refused.stdout.splitlines()}
        assert named and all(n.startswith(slow) for n in named)
        assert replicas_of(kafka.bootstrap, [other]) == other_start
        # refused, never cancelled: each foreign move still in flight, or ended at its target
        still, now = set(ongoing(kafka.bootstrap)), replicas_of(kafka.bootstrap, [slow])
        ended = {k for k in slow_targets if k not in still}
        assert len(ended) < len(slow_targets), "no foreign reassignment left in flight"
        assert all(now[k] == slow_targets[k] for k in ended), now
    finally:
        cancelled = kafka.tool(*tool, "--cancel")
        assert cancelled.returncode == 0, cancelled.stdout + cancelled.stderr
    wait_for("the foreign reassignment to be cancelled", lambda: not ongoing(kafka.bootstrap), every=1.0)
    now = replicas_of(kafka.bootstrap, [slow])
    assert all(set(now[k]) == set(slow_start[k]) for k in slow_start if k not in ended)


def test_a_broker_restarted_mid_plan_is_waited_for(kafka: KafkaCluster, topics: Topics, tmp_path: Path,
                                                   restarted: list[int]) -> None:
    name, start, targets = ring_topic(kafka, topics, "restart", partitions=6)
    plan = write_plan(tmp_path / "plan", snapshot_of(kafka.bootstrap, [name]), targets,
                      PlanRequest("replica", throttle=700_000))
    run = Run(tmp_path / "out.jsonl", "--plan", str(plan), "--bootstrap-server", kafka.bootstrap,
              "--max-moves-per-broker", "1", "--poll-interval-ms", "300", "--timeout-ms", "5000")
    wait_for("moves in flight", lambda: bool(run.events("moves_submitted")) or not run.running())
    first = run.events("moves_submitted")[0]["partitions"][0]
    key = (name, int(first.rsplit("-", 1)[1]))
    victim = next(b for b in targets[key] if b not in start[key] and b != 0)   # node 0 is the controller
    kafka.stop_node(victim)
    restarted.append(victim)
    time.sleep(8)
    assert run.running(), run.wait()[1]
    kafka.start_node(victim)
    kafka.wait_ready(timeout=120)
    restarted.remove(victim)
    code, err = run.wait(timeout=170)
    assert code == 0, err
    assert replicas_of(kafka.bootstrap, [name]) == targets
    assert_no_throttles(kafka, name)


def test_sigterm_cancels_the_moves_in_flight_and_removes_the_throttles(kafka: KafkaCluster, topics: Topics,
                                                                       tmp_path: Path) -> None:
    name, start, targets = ring_topic(kafka, topics, "sigterm", partitions=6)
    plan = write_plan(tmp_path / "plan", snapshot_of(kafka.bootstrap, [name]), targets,
                      PlanRequest("replica", throttle=400_000))
    run = Run(tmp_path / "out.jsonl", "--plan", str(plan), "--bootstrap-server", kafka.bootstrap,
              "--max-moves-per-broker", "1", "--poll-interval-ms", "300")
    wait_for("moves in flight", lambda: bool(run.events("moves_submitted")) or not run.running())
    assert run.running(), run.wait()[1]
    run.proc.send_signal(signal.SIGTERM)
    code, err = run.wait()
    assert code == 1 and "stopped" in err
    now = replicas_of(kafka.bootstrap, [name])
    for key, target in targets.items():
        assert now[key] == target or set(now[key]) == set(start[key]), f"{key}: {now[key]}"
    assert ongoing(kafka.bootstrap) == {}
    assert_no_throttles(kafka, name)
    assert [e["reason"] for e in run.events("cancelling")] == ["SIGTERM"]


# ---- the cluster is the truth, the state file a hint (issue 31) ---------------------------------

def _state_file(plan: Path, moves: Mapping[Key, str]) -> None:
    """An execution state file for ``plan`` saying what ``moves`` gives, as a killed run leaves it."""
    from kafka_replica_assignor.planner.execution.executor_state import ExecutionState

    sha = json.loads((plan / "summary.json").read_text())["starting_replicas_sha256"]
    state = ExecutionState.new(str(plan), sha)
    state.runs.append({"pid": 1, "started_at": time.time()})
    state.mark_submitted(list(moves))
    finished = [k for k, status in moves.items() if status == "finished"]
    if finished:
        state.mark(finished, "finished")


def test_a_state_file_that_says_finished_with_nothing_moved_runs_the_moves(
        kafka: KafkaCluster, topics: Topics, tmp_path: Path) -> None:
    name, start, targets = ring_topic(kafka, topics, "liar", size=100_000, partitions=4)
    plan = write_plan(tmp_path / "plan", snapshot_of(kafka.bootstrap, [name]), targets)
    _state_file(plan, dict.fromkeys(targets, "finished"))
    run = execute("--plan", str(plan), "--bootstrap-server", kafka.bootstrap, "--poll-interval-ms", "300")
    assert run.returncode == 0, run.stderr
    assert replicas_of(kafka.bootstrap, [name]) == targets
    [corrected] = [e for e in events(run.stdout) if e["event"] == "state_corrected"]
    assert sorted(corrected["partitions"]) == sorted(f"{t}-{p}" for t, p in targets)
    assert {p for e in events(run.stdout) if e["event"] == "moves_submitted" for p in e["partitions"]} == \
        {f"{t}-{p}" for t, p in targets}


def test_a_foreign_reassignment_of_a_planned_partition_is_neither_adopted_nor_cancelled(
        kafka: KafkaCluster, topics: Topics, tmp_path: Path) -> None:
    """The state file says this plan submitted partition 0 (an honest resume), but the reassignment
    in flight is another tool's, to other brokers: refused, named, and left running by execute
    and by execute --cancel."""
    name, start, targets = ring_topic(kafka, topics, "adopt", partitions=2)
    plan = write_plan(tmp_path / "plan", snapshot_of(kafka.bootstrap, [name]), targets)
    _state_file(plan, {(name, 0): "submitted"})
    elsewhere = tuple(b for b in range(5) if b not in start[(name, 0)] and b not in targets[(name, 0)])[:2]
    foreign = tmp_path / "foreign.json"
    foreign.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": name, "partition": 0, "replicas": list(elsewhere)}]}))
    tool = ("org.apache.kafka.tools.reassign.ReassignPartitionsCommand", "--bootstrap-server", kafka.bootstrap,
            "--reassignment-json-file", str(foreign))
    started = kafka.tool(*tool, "--execute", "--throttle", "10000")   # 10 kB/s: minutes for 6 MB
    assert started.returncode == 0, started.stdout + started.stderr
    try:
        refused = execute("--plan", str(plan), "--bootstrap-server", kafka.bootstrap)
        assert refused.returncode == 1 and "neither adopts nor cancels" in refused.stderr, refused.stderr
        assert refused.stdout.startswith(f"{name}-0: reassignment in progress to {list(elsewhere)}"), refused.stdout
        cancel = execute("--plan", str(plan), "--bootstrap-server", kafka.bootstrap, "--cancel")
        assert cancel.returncode == 1 and f"left alone: {name}-0" in cancel.stdout, (cancel.stdout, cancel.stderr)
        assert (name, 0) in ongoing(kafka.bootstrap)                  # still the other tool's
        assert replicas_of(kafka.bootstrap, [name])[(name, 1)] == start[(name, 1)]
    finally:
        cancelled = kafka.tool(*tool, "--cancel")
        assert cancelled.returncode == 0, cancelled.stdout + cancelled.stderr
    wait_for("the foreign reassignment to be cancelled", lambda: not ongoing(kafka.bootstrap), every=1.0)


def test_cancel_after_a_kill_restores_the_exact_starting_order_from_the_state_file(
        kafka: KafkaCluster, topics: Topics, tmp_path: Path) -> None:
    """Targets that make the follower lead ([a, b] -> [b, c]): Kafka's cancel puts back [b, a];
    execute --cancel (after kill -9, without --bootstrap-server: the state file names the
    cluster) ends every partition at its exact starting list, or its planned one."""
    name = topics.name("order")
    start = {p: (p % 5, (p + 1) % 5) for p in range(6)}
    create_topic(kafka.bootstrap, name, start)
    fill(kafka.bootstrap, name, range(6), SIZE)
    targets = {(name, p): ((p + 1) % 5, (p + 2) % 5) for p in range(6)}
    plan = write_plan(tmp_path / "plan", snapshot_of(kafka.bootstrap, [name]), targets,
                      PlanRequest("replica", throttle=100_000))
    run = Run(tmp_path / "out.jsonl", "--plan", str(plan), "--bootstrap-server", kafka.bootstrap,
              "--max-moves-per-broker", "1", "--poll-interval-ms", "300")
    wait_for("moves in flight", lambda: bool(run.events("moves_submitted")) or not run.running())
    assert run.running(), run.wait()[1]
    os.kill(run.proc.pid, signal.SIGKILL)
    assert run.wait()[0] == -signal.SIGKILL
    in_flight = set(ongoing(kafka.bootstrap))
    assert in_flight & set(targets), "nothing in flight at the kill"
    cancel = execute("--plan", str(plan), "--cancel")
    assert cancel.returncode == 0, cancel.stderr
    [restored] = [e for e in events(cancel.stdout) if e["event"] == "order_restored"]   # Kafka reordered them
    assert restored["partitions"] and all(v["was"] != v["now"] for v in restored["partitions"].values())
    now = replicas_of(kafka.bootstrap, [name])
    for p, first in start.items():
        assert now[(name, p)] in (first, targets[(name, p)]), f"{name}-{p}: {now[(name, p)]}"
    assert any(now[k] == (start[k[1]]) for k in in_flight if k in targets)
    assert ongoing(kafka.bootstrap) == {}
    assert_no_throttles(kafka, name)
