"""The executor's decisions against an in-memory cluster: refusals, resume classification,
caps and throttles while running, stop with cancel. (The real thing: tests/kafka/test_execute.py.)"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from kafka_replica_assignor.cluster.snapshot import BrokerEntry, ClusterSnapshot, PartitionEntry
from kafka_replica_assignor.planner.execution.executor import ExecutePlan, Executor, Refused
from kafka_replica_assignor.planner.execution.executor_schedule import Schedule
from kafka_replica_assignor.planner.execution.executor_state import ExecutionState
from kafka_replica_assignor.planner.execution.executor_throttles import BROKER_RATES, LOG_DIR_RATE
from kafka_replica_assignor.protocol.reassignment import Ongoing

Key = tuple[str, int]


@dataclass
class Read:
    snapshot: ClusterSnapshot


def ongoing_entry(current: Sequence[int], target: Sequence[int]) -> Ongoing:
    """ListPartitionReassignments' entry as KRaft shows it: the target, then the replicas
    leaving (the merged list), with what is added and removed."""
    leaving = tuple(b for b in current if b not in target)
    return Ongoing(tuple(target) + leaving, tuple(b for b in target if b not in current), leaving)


class FakeCluster:
    """Reassignments finish after ``polls`` looks at them; configs kept as a dict."""

    def __init__(self, replicas: dict[Key, tuple[int, ...]], polls: int = 2) -> None:
        self.now = dict(replicas)
        self.polls = polls
        self.moving: dict[Key, list[Any]] = {}     # key -> [target, polls left]
        self.configs: dict[tuple[str, Any], dict[str, str]] = {}
        self.sent: list[Key] = []
        self.peak: dict[int, int] = {}
        self.elected: list[Key] = []

    def read(self, *, with_sizes: bool = True) -> Read:
        parts = tuple(PartitionEntry(t, p, r, r[0], r, 1000) for (t, p), r in sorted(self.now.items()))
        return Read(ClusterSnapshot(tuple(BrokerEntry(b) for b in range(5)), parts))

    def ongoing(self) -> dict[Key, Any]:
        for key, entry in list(self.moving.items()):
            entry[1] -= 1
            if entry[1] <= 0:
                self.now[key] = entry[0]
                del self.moving[key]
        return {k: ongoing_entry(self.now.get(k, ()), v[0]) for k, v in self.moving.items()}

    def replicas(self, topics: Sequence[str]) -> dict[Key, tuple[int, ...]]:
        return {k: v for k, v in self.now.items() if k[0] in topics}

    def reassign(self, targets: Mapping[Key, Sequence[int] | None]) -> dict[Key, str]:
        for key, target in targets.items():
            if target is None:
                self.moving.pop(key, None)
            else:
                self.sent.append(key)
                self.moving[key] = [tuple(target), self.polls]
        load: dict[int, int] = {}
        for key, (target, _) in self.moving.items():
            for b in set(target) ^ set(self.now[key]):
                load[b] = load.get(b, 0) + 1
        for b, v in load.items():
            self.peak[b] = max(self.peak.get(b, 0), v)
        return {}

    def alter_configs(self, brokers: Mapping[int, Mapping[str, str | None]] = {},
                      topics: Mapping[str, Mapping[str, str | None]] = {}) -> dict[str, str]:
        for kind, changes in (("broker", brokers), ("topic", topics)):
            for name, configs in changes.items():
                current = self.configs.setdefault((kind, name), {})
                for k, v in configs.items():
                    if v is None:
                        current.pop(k, None)
                    else:
                        current[k] = v
                if not current:
                    del self.configs[(kind, name)]
        return {}

    def min_isr(self, topics: Sequence[str]) -> dict[str, int]:
        return dict.fromkeys(topics, 1)

    def elect_preferred(self, keys: Sequence[Key]) -> tuple[list[Key], dict[Key, str]]:
        self.elected = list(keys)
        return list(keys), {}


START = {("t", p): (p % 5, (p + 1) % 5) for p in range(8)}
TARGET = {("t", p): (p % 5, (p + 2) % 5) for p in range(8)}


def plan_for(tmp_path: Path, **kw: Any) -> ExecutePlan:
    return ExecutePlan(plan_dir=str(tmp_path), plan_sha256="x", targets=tuple(TARGET.items()), starting=START,
                       leader_election=(("t", 0),), poll_interval_s=0.0, **kw)


def executor(tmp_path: Path, cluster: FakeCluster, **kw: Any) -> Executor:
    events: list[tuple[str, dict[str, Any]]] = []
    ex = Executor(plan_for(tmp_path, **kw), cluster, ExecutionState.new(str(tmp_path), "x"),
                  lambda e, f: events.append((e, f)))
    ex.events = events  # type: ignore[attr-defined]
    return ex


def test_a_whole_run_keeps_the_cap_throttles_moving_replicas_and_removes_them(tmp_path: Path) -> None:
    cluster = FakeCluster(START)
    ex = executor(tmp_path, cluster, throttle=1000, per_broker=1)
    seen_topic_configs: list[dict[str, str]] = []
    real_alter = cluster.alter_configs

    def spy(brokers: Mapping[int, Any] = {}, topics: Mapping[str, Any] = {}) -> dict[str, str]:
        out = real_alter(brokers, topics)
        if ("topic", "t") in cluster.configs:
            seen_topic_configs.append(dict(cluster.configs[("topic", "t")]))
        return out

    cluster.alter_configs = spy  # type: ignore[method-assign]
    status = ex.run(*ex.prepare())
    assert status == "done"
    assert cluster.now == TARGET and sorted(cluster.sent) == sorted(TARGET)
    assert max(cluster.peak.values()) == 1
    assert cluster.configs == {} and ex.state.throttled_brokers == set()
    assert seen_topic_configs and all(
        all(int(e.split(":")[1]) in START[("t", int(e.split(":")[0]))]
            for e in c["leader.replication.throttled.replicas"].split(",")) for c in seen_topic_configs)
    assert cluster.elected == [("t", 0)]
    assert all(r.status == "finished" and r.submissions == 1 for r in ex.state.moves.values())


def test_a_foreign_reassignment_or_a_drifted_partition_is_refused(tmp_path: Path) -> None:
    cluster = FakeCluster(START)
    cluster.moving[("other", 0)] = [(1, 2), 100]
    with pytest.raises(Refused, match="not started by this plan") as refused:
        executor(tmp_path, cluster).prepare()
    assert refused.value.lines == ["other-0: reassignment in progress to [1, 2] (adding [1, 2], removing []), "
                                   "not in this plan"]
    drifted = dict(START)
    drifted[("t", 3)] = (0, 4)
    with pytest.raises(Refused, match="changed since the plan was made") as refused:
        executor(tmp_path, FakeCluster(drifted)).prepare()
    assert refused.value.lines == ["t-3: planned from [3, 4], now [0, 4]"]
    assert cluster.sent == [] and cluster.configs == {}


def test_a_resumed_run_watches_in_flight_moves_and_skips_finished_ones(tmp_path: Path) -> None:
    now = dict(START)
    now[("t", 0)] = TARGET[("t", 0)]                 # finished before the kill
    cluster = FakeCluster(now)
    cluster.moving[("t", 1)] = [TARGET[("t", 1)], 3]  # in flight at the kill
    ex = executor(tmp_path, cluster)
    ex.state.mark_submitted([("t", 0), ("t", 1), ("t", 2)])   # t-2: marked, never sent
    ex.state.mark([("t", 0)], "finished")
    pending, flying, done = ex.prepare()
    assert [r.key for r in flying] == [("t", 1)] and done == [("t", 0)]
    assert [r.key for r in pending] == [("t", p) for p in range(2, 8)]
    assert ex.run(pending, flying, done) == "done"
    assert ("t", 0) not in cluster.sent and ("t", 1) not in cluster.sent
    assert cluster.now == TARGET


def test_a_stop_cancels_the_moves_in_flight(tmp_path: Path) -> None:
    cluster = FakeCluster(START, polls=1000)
    ex = executor(tmp_path, cluster, throttle=1000, per_broker=1)
    pending, flying, done = ex.prepare()
    original = cluster.reassign

    def stop_after_first_wave(targets: Any) -> dict[Key, str]:
        out = original(targets)
        ex.stop_reason = "SIGTERM"
        ex.stop.set()
        return out

    cluster.reassign = stop_after_first_wave  # type: ignore[method-assign]
    assert ex.run(pending, flying, done) == "stopped"
    assert cluster.moving == {} and cluster.now == START and cluster.configs == {}
    assert ex.state.with_status("cancelled") and not ex.state.with_status("submitted")
    assert ("cancelling", {"reason": "SIGTERM", "partitions": ["t-0", "t-2"]}) in ex.events  # type: ignore[attr-defined]


def test_order_under_min_isr_starts_the_partitions_at_min_isr_first(tmp_path: Path) -> None:
    cluster = FakeCluster(START)
    cluster.min_isr = lambda topics: dict.fromkeys(topics, 2)  # type: ignore[method-assign]
    real_read = cluster.read

    def shrunk(*, with_sizes: bool = True) -> Read:
        snap = real_read().snapshot
        parts = tuple(PartitionEntry(p.topic, p.partition, p.replicas, p.leader,
                                     p.replicas[:1] if p.partition == 6 else p.replicas, p.size_bytes)
                      for p in snap.partitions)
        return Read(ClusterSnapshot(snap.brokers, parts))

    cluster.read = shrunk  # type: ignore[method-assign]
    ex = executor(tmp_path, cluster, order="under-min-isr", per_broker=1)
    pending, _, _ = ex.prepare()
    assert [r.partition for r in pending if r.under_min_isr] == [0, 1, 2, 3, 4, 5, 6, 7]  # ISR 2 <= min 2
    cluster.min_isr = lambda topics: dict.fromkeys(topics, 1)  # type: ignore[method-assign]
    pending, _, _ = executor(tmp_path, cluster, order="under-min-isr").prepare()
    assert [r.partition for r in pending if r.under_min_isr] == [6]
    ex = executor(tmp_path, cluster, order="under-min-isr", per_broker=1)
    ex.run(*ex.prepare())
    assert cluster.sent[0] == ("t", 6)
    assert BROKER_RATES  # the names are Kafka's (see test_executor_throttles)


class FakeJbodCluster(FakeCluster):
    """Two directories per broker; an intra-broker move takes ``polls`` looks (a future copy
    meanwhile); replicas arriving on a broker start in ``/d0``."""

    def __init__(self, replicas: dict[Key, tuple[int, ...]], refuse: frozenset[int] = frozenset()) -> None:
        super().__init__(replicas)
        self.dirs: dict[tuple[str, int, int], str] = {(t, p, b): "/d0" for (t, p), r in replicas.items() for b in r}
        self.copying: dict[tuple[str, int, int], list[Any]] = {}
        self.refuse = refuse
        self.asked: list[tuple[str, int, int]] = []

    def log_dirs(self, topics: Sequence[str]) -> tuple[dict[tuple[str, int, int], str], set[tuple[str, int, int]]]:
        for key, entry in list(self.copying.items()):
            entry[1] -= 1
            if entry[1] <= 0:
                self.dirs[key] = entry[0]
                del self.copying[key]
        where = {}
        for (t, p), r in self.now.items():
            for b in r:
                where[(t, p, b)] = self.dirs.setdefault((t, p, b), "/d0")
        return where, set(self.copying)

    def alter_log_dirs(self, replicas: Mapping[tuple[str, int, int], str]) -> dict[tuple[str, int, int], str]:
        refused = {k: "KafkaStorageError" for k in replicas if k[2] in self.refuse}
        for key, d in replicas.items():
            if key not in refused:
                self.asked.append(key)
                self.copying[key] = [d, 2]
        return refused


def test_log_dirs_are_placed_after_the_moves_and_waited_for(tmp_path: Path) -> None:
    wanted = {("t", p, TARGET[("t", p)][1]): "/d1" for p in range(8)}     # every arriving replica
    wanted[("t", 0, 0)] = "/d1"                                            # one that stays: intra-broker
    cluster = FakeJbodCluster(START)
    ex = executor(tmp_path, cluster, log_dirs=wanted)
    assert ex.run(*ex.prepare()) == "done"
    assert cluster.now == TARGET and {k: cluster.dirs[k] for k in wanted} == wanted
    assert sorted(cluster.asked) == sorted(wanted)                         # each asked once
    names = [e for e, _ in ex.events]  # type: ignore[attr-defined]
    assert names.index("log_dir_moves_submitted") > names.index("moves_finished")
    assert names.index("log_dirs_placed") < names.index("leaders_elected")
    refusing = FakeJbodCluster(START, refuse=frozenset({0}))
    (tmp_path / "again").mkdir()
    ex = executor(tmp_path / "again", refusing, log_dirs=wanted)
    assert ex.run(*ex.prepare()) == "failed"
    [refused] = [f for e, f in ex.events if e == "log_dir_moves_refused"]  # type: ignore[attr-defined]
    assert refused == {"replicas": {"t-0@0": "KafkaStorageError", "t-3@0": "KafkaStorageError"}}
    assert refusing.configs == {}


def test_the_throttle_also_limits_the_moves_between_directories_of_a_broker(tmp_path: Path) -> None:
    wanted = {("t", 0, 0): "/d1", ("t", 1, 1): "/d1"}                     # intra-broker moves only
    cluster = FakeJbodCluster(START)
    seen: list[dict[tuple[str, Any], dict[str, str]]] = []
    real_alter_log_dirs = cluster.alter_log_dirs

    def spy(replicas: Mapping[tuple[str, int, int], str]) -> dict[tuple[str, int, int], str]:
        seen.append({k: dict(v) for k, v in cluster.configs.items()})
        return real_alter_log_dirs(replicas)

    cluster.alter_log_dirs = spy  # type: ignore[method-assign]
    ex = executor(tmp_path, cluster, log_dirs=wanted, throttle=3000)
    assert ex.run(*ex.prepare()) == "done"
    assert seen and seen[0][("broker", 0)][LOG_DIR_RATE] == "3000" and seen[0][("broker", 1)][LOG_DIR_RATE] == "3000"
    assert cluster.configs == {} and ex.state.throttled_brokers == set()  # removed at the end


# ---- the cluster is the truth, the state file a hint (issue 31) ---------------------------------

def test_a_move_the_state_file_calls_finished_is_run_when_the_cluster_shows_its_starting_replicas(
        tmp_path: Path) -> None:
    cluster = FakeCluster(START)
    ex = executor(tmp_path, cluster)
    ex.state.mark_submitted(list(TARGET))
    ex.state.mark(list(TARGET), "finished")          # a lie: nothing moved
    pending, flying, done = ex.prepare()
    assert sorted(r.key for r in pending) == sorted(TARGET) and not flying and not done
    assert ex.run(pending, flying, done) == "done"
    assert cluster.now == TARGET and sorted(cluster.sent) == sorted(TARGET)
    [corrected] = [f for e, f in ex.events if e == "state_corrected"]  # type: ignore[attr-defined]
    assert len(corrected["partitions"]) == len(TARGET)


def test_a_reassignment_of_a_planned_partition_this_plan_did_not_start_is_refused_not_adopted(
        tmp_path: Path) -> None:
    for recorded in (False, True):       # not in the state file; or 'submitted' there, another target
        cluster = FakeCluster(START)
        cluster.moving[("t", 2)] = [(4, 3), 100]     # planned: (2, 4)
        (tmp_path / str(recorded)).mkdir()
        ex = executor(tmp_path / str(recorded), cluster)
        if recorded:
            ex.state.mark_submitted([("t", 2)])
        with pytest.raises(Refused, match=r"not started by this plan .*\(t-2\).*neither adopts nor cancels") as why:
            ex.prepare()
        assert why.value.lines[0].startswith("t-2: reassignment in progress to [4, 3] (adding [4], removing [2])")
        assert cluster.moving[("t", 2)][0] == (4, 3) and cluster.sent == []      # left alone


def test_a_reassignment_this_plan_submitted_is_adopted(tmp_path: Path) -> None:
    cluster = FakeCluster(START)
    cluster.moving[("t", 2)] = [TARGET[("t", 2)], 3]
    ex = executor(tmp_path, cluster)
    ex.state.mark_submitted([("t", 2)])
    pending, flying, done = ex.prepare()
    assert [r.key for r in flying] == [("t", 2)]


class ReorderingCluster(FakeCluster):
    """A cancel puts back the starting replica set in the order of the merged list (target
    first), as KRaft does: [a, b] -> [b, c] cancelled is [b, a]."""

    def reassign(self, targets: Mapping[Key, Sequence[int] | None]) -> dict[Key, str]:
        for key, target in targets.items():
            if target is None and key in self.moving:
                merged = ongoing_entry(self.now[key], self.moving.pop(key)[0])
                self.now[key] = tuple(b for b in merged.replicas if b not in merged.adding)
        rest = {k: v for k, v in targets.items() if v is not None}
        if rest and all(set(v) == set(self.now[k]) for k, v in rest.items()):   # a reorder: at once
            self.now.update({k: tuple(v) for k, v in rest.items() if v is not None})
            return {}
        return super().reassign(rest) if rest else {}


def test_a_cancel_ends_at_the_exact_starting_order(tmp_path: Path) -> None:
    start = {("t", p): (p % 5, (p + 1) % 5) for p in range(4)}
    target = {("t", p): ((p + 1) % 5, (p + 2) % 5) for p in range(4)}     # the follower leads
    cluster = ReorderingCluster(start, polls=1000)
    plan = ExecutePlan(plan_dir=str(tmp_path), plan_sha256="x", targets=tuple(target.items()), starting=start,
                       poll_interval_s=0.0, per_broker=1)
    events: list[tuple[str, dict[str, Any]]] = []
    ex = Executor(plan, cluster, ExecutionState.new(str(tmp_path), "x"), lambda e, f: events.append((e, f)))
    pending, flying, done = ex.prepare()
    real = cluster.reassign

    def stop_after_first_wave(targets: Any) -> dict[Key, str]:
        out = real(targets)
        ex.stop.set()
        return out

    cluster.reassign = stop_after_first_wave  # type: ignore[method-assign]
    assert ex.run(pending, flying, done) == "stopped"
    assert cluster.now == start                                            # order included
    restored = [f for e, f in events if e == "order_restored"]
    assert restored and restored[0]["partitions"]["t-0"] == {"was": [1, 0], "now": [0, 1]}
    assert ex.state.with_status("cancelled") and not ex.state.with_status("failed")


class SizedCluster(FakeCluster):
    """DescribeLogDirs sizes: an adding replica gains ``step`` bytes a look (0: stalled)."""

    def __init__(self, replicas: dict[Key, tuple[int, ...]], step: int, polls: int = 2) -> None:
        super().__init__(replicas, polls)
        self.step = step
        self.held: dict[tuple[str, int, int], int] = {}

    def replica_bytes(self, topics: Sequence[str]) -> dict[tuple[str, int, int], int]:
        for key, (target, _) in self.moving.items():
            for b in target:
                if b not in self.now[key]:
                    self.held[(*key, b)] = min(self.held.get((*key, b), 0) + self.step, 1000)
        return dict(self.held)


def test_a_move_that_copies_nothing_is_cancelled_after_the_stall_timeout_and_named(tmp_path: Path) -> None:
    cluster = SizedCluster(START, step=0, polls=10**9)
    ex = executor(tmp_path, cluster, per_broker=1, stall_timeout_s=0.05)
    pending, flying, done = ex.prepare()
    assert ex.run(pending, flying, done) == "failed"
    stalled = [f for e, f in ex.events if e == "move_stalled"]  # type: ignore[attr-defined]
    assert stalled and stalled[0]["adding_brokers"] == [2] and stalled[0]["partition"] == "t-0"
    assert cluster.moving == {} and cluster.now == START and cluster.configs == {}
    assert set(ex.state.with_status("failed")) == set(TARGET)


def test_progress_counts_bytes_in_flight_and_a_resumed_run_rates_only_its_own_bytes(tmp_path: Path) -> None:
    cluster = SizedCluster(START, step=400, polls=4)
    ex = executor(tmp_path, cluster, per_broker=1, throttle=1000)
    earlier = [("t", 0), ("t", 1), ("t", 2), ("t", 3)]
    ex.state.mark_submitted(earlier)
    ex.state.mark(earlier, "finished")                        # an earlier run's work, really done
    cluster.now.update({k: TARGET[k] for k in earlier})
    pending, flying, done = ex.prepare()
    assert sorted(done) == earlier
    assert ex.run(pending, flying, done) == "done"
    assert ex.bytes_at_start == 4000                          # 4 moves of one 1000-byte copy
    shown = [f for e, f in ex.events if e == "progress"]  # type: ignore[attr-defined]
    assert any(f["bytes_done"] % 1000 for f in shown), "the bytes of moves in flight were never counted"
    # the ETA: bytes left at this run's rate (bytes since it started over its time)
    ex.started = time.monotonic() - 10.0
    ex.bytes_at_start = 4000
    ex.state.mark(pending_keys := [r.key for r in pending], "submitted")
    assert ex.schedule is not None
    ex.schedule = Schedule([], in_flight=pending[:1])
    ex.copied = {pending[0].key: 500}
    shown_now = ex.progress()
    assert shown_now["bytes_done"] == 4500 and shown_now["bytes_total"] == 8000 and pending_keys
    assert shown_now["rate_bytes_per_s"] == 50 and 69 <= shown_now["eta_s"] <= 71


def test_a_pause_starts_no_move_until_resumed_while_the_moves_in_flight_go_on(tmp_path: Path) -> None:
    from kafka_replica_assignor.planner.execution.executor_state import write_control

    cluster = FakeCluster(START)
    ex = executor(tmp_path, cluster, per_broker=1)
    polls: list[int] = []
    real_ongoing = cluster.ongoing

    def spy() -> dict[Key, Any]:
        polls.append(len(cluster.sent))
        if len(polls) == 2:
            write_control(str(tmp_path), {"pause": True})
        if len(polls) == 8:
            write_control(str(tmp_path), {"resume": True})
        return real_ongoing()

    cluster.ongoing = spy  # type: ignore[method-assign]
    assert ex.run(*ex.prepare()) == "done"
    events = [e for e, _ in ex.events]  # type: ignore[attr-defined]
    assert events.index("paused") < events.index("resumed")
    # asked during the second poll, applied before the third wave: nothing submitted until resumed
    assert polls[1:8] == [polls[1]] * 7 and polls[1] < len(TARGET), polls
    assert polls[-1] == len(TARGET) and cluster.now == TARGET


class SilentCluster(FakeCluster):
    """Answers until ``after`` reassignment lists were asked, then never again (every broker gone)."""

    def __init__(self, replicas: dict[Key, tuple[int, ...]], after: int) -> None:
        super().__init__(replicas, polls=10**9)
        self.after = after

    def ongoing(self) -> dict[Key, Any]:
        self.after -= 1
        if self.after < 0:
            raise ConnectionError("111 ECONNREFUSED")
        return super().ongoing()


def test_a_cluster_that_stops_answering_is_said_once_per_interval_then_the_run_fails_naming_what_is_left(
        tmp_path: Path) -> None:
    cluster = SilentCluster(START, after=2)
    ex = executor(tmp_path, cluster, per_broker=1, patience_s=1.0, say_every_s=0.4, stall_timeout_s=None)
    ex.plan = ExecutePlan(**{**{f: getattr(ex.plan, f) for f in ex.plan.__dataclass_fields__},
                             "poll_interval_s": 0.02})
    pending, flying, done = ex.prepare()
    with pytest.raises(RuntimeError, match=r"did not answer for 1 s .*ECONNREFUSED.*move\(s\) left in flight"):
        ex.run(pending, flying, done)
    said = [f for e, f in ex.events if e == "poll_failed"]  # type: ignore[attr-defined]
    assert 2 <= len(said) <= 4, f"{len(said)} lines for one outage of 1 s said every 0.4 s"
    assert all(f["gives_up_at"] and "waiting_for" in f for f in said)
    assert cluster.configs == {}                      # the throttles went in the end all the same


class LaggingCluster(FakeCluster):
    """Metadata behind the controller: a partition whose reassignment ended shows the merged
    list (target, then the replicas leaving) for ``lag`` more looks."""

    def __init__(self, replicas: dict[Key, tuple[int, ...]], merged: dict[Key, tuple[int, ...]], lag: int) -> None:
        super().__init__(replicas)
        self.merged, self.lag = merged, lag

    def shown(self) -> dict[Key, tuple[int, ...]]:
        return {**self.now, **self.merged} if self.lag > 0 else dict(self.now)

    def read(self, *, with_sizes: bool = True) -> Read:
        parts = tuple(PartitionEntry(t, p, r, r[0], r, 1000) for (t, p), r in sorted(self.shown().items()))
        return Read(ClusterSnapshot(tuple(BrokerEntry(b) for b in range(5)), parts))

    def replicas(self, topics: Sequence[str]) -> dict[Key, tuple[int, ...]]:
        shown = self.shown()
        self.lag -= 1
        return {k: v for k, v in shown.items() if k[0] in topics}


def test_a_resumed_move_that_ended_while_metadata_still_shows_its_merged_list_is_watched_not_drift(
        tmp_path: Path) -> None:
    """Found by the chaos run (bench/execute_chaos.py): kill -9 while a move ends, resumed while the
    answering broker's Metadata lags the controller (or the move ends between the two reads)."""
    key = ("t", 2)
    merged = ongoing_entry(START[key], TARGET[key]).replicas
    cluster = LaggingCluster({**START, key: TARGET[key]}, {key: merged}, lag=3)
    ex = executor(tmp_path, cluster)
    ex.state.mark_submitted([key])
    pending, flying, done = ex.prepare()
    assert [r.key for r in flying] == [key] and key not in done
    assert ex.run(pending, flying, done) == "done"
    assert cluster.now == TARGET and key not in cluster.sent       # finished, never submitted again
    assert ex.state.moves[key].status == "finished" and ex.state.moves[key].submissions == 1
