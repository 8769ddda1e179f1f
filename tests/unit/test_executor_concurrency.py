"""The adaptive per-broker cap (planner/execution/executor_concurrency.py): the rule as a table,
and the executor raising and lowering caps on an in-memory cluster."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafka_replica_assignor.planner.execution.executor import ExecutePlan, Executor
from kafka_replica_assignor.planner.execution.executor_concurrency import Adjuster, CapBounds, Look, adjust
from kafka_replica_assignor.planner.execution.executor_schedule import SMALL_MOVES_MAX, Reassignment, Schedule
from kafka_replica_assignor.planner.execution.executor_state import ExecutionState
from tests.unit.test_executor_run import START, TARGET, FakeCluster, Read

BOUNDS = CapBounds(floor=1, ceiling=8, step=1, divide_by=2, fast_s=10.0, slow_s=100.0)
A = Reassignment("t", 0, (1, 3), (1, 2), size_bytes=1000)      # involves 2 and 3
B = Reassignment("t", 1, (4, 5), (4, 6), size_bytes=1000)      # involves 5 and 6


@pytest.mark.parametrize(("caps", "look", "changes"), [
    # the module doc's example
    ({2: 4, 3: 4, 7: 4}, Look(finished=((A, 3.0),), out_of_isr=frozenset({7})),
     {2: (5, "moves finish fast, ISR whole"), 3: (5, "moves finish fast, ISR whole"),
      7: (2, "behind: a replica out of ISR")}),
    # slow finishes keep the cap; brokers with nothing finished keep theirs
    ({2: 4, 5: 4}, Look(finished=((A, 30.0),)), {}),
    # the bytes at the throttle are allowed: 1000 B at 100 B/s = 10 s more
    ({2: 4}, Look(finished=((A, 19.0),), throttle=100), {2: (5, "moves finish fast, ISR whole")}),
    # no raise while a partition is at or under its min.insync.replicas
    ({2: 4}, Look(finished=((A, 1.0),), at_min_isr=1), {}),
    # a move in flight too long: its brokers halve
    ({5: 6, 6: 3, 2: 4}, Look(in_flight=((B, 101.0),)),
     {5: (3, "behind: t-1 in flight for 101 s"), 6: (1, "behind: t-1 in flight for 101 s")}),
    # bounds: never over the ceiling nor under the floor
    ({2: 8, 7: 1}, Look(finished=((A, 1.0),), out_of_isr=frozenset({7})), {}),
])
def test_the_rule(caps: dict[int, int], look: Look, changes: dict[int, tuple[int, str]]) -> None:
    assert adjust(caps, look, BOUNDS) == changes


def test_bounds_are_checked() -> None:
    with pytest.raises(ValueError, match="floor"):
        CapBounds(floor=3, ceiling=2)
    with pytest.raises(ValueError, match="divisor"):
        CapBounds(divide_by=1)


def test_a_schedule_applies_per_broker_caps_to_new_moves_only() -> None:
    schedule = Schedule([A, B], per_broker=1)
    schedule.set_caps({2: 0 + 1})
    assert [r.key for r in schedule.start()] == [A.key, B.key]
    c = Reassignment("t", 2, (1, 3), (1, 5), size_bytes=1)        # involves 3 and 5, both at 1
    schedule = Schedule([c], per_broker=1, in_flight=[A, B])
    assert schedule.start() == []
    schedule.set_caps({3: 2, 5: 2})
    assert [r.key for r in schedule.start()] == [c.key]


class IsrCluster(FakeCluster):
    """Broker 4 keeps its replicas out of ISR for the first ``lagging`` reads (the executor's
    first read is its check before anything)."""

    lagging = 2

    def read(self, *, with_sizes: bool = True) -> Read:
        read = super().read(with_sizes=with_sizes)
        self.lagging -= 1
        if self.lagging < 0:
            return read
        parts = tuple(type(p)(p.topic, p.partition, p.replicas, p.leader, tuple(b for b in p.replicas if b != 4),
                              p.size_bytes) for p in read.snapshot.partitions)
        return Read(type(read.snapshot)(read.snapshot.brokers, parts))


def test_the_executor_raises_the_caps_of_brokers_that_keep_up_and_halves_one_that_falls_behind(
        tmp_path: Path) -> None:
    cluster = IsrCluster(START, polls=1)
    plan = ExecutePlan(plan_dir=str(tmp_path), plan_sha256="x", targets=tuple(TARGET.items()), starting=START,
                       per_broker=2, poll_interval_s=0.0,
                       adaptive=CapBounds(ceiling=4, every_s=0.0, fast_s=60.0))
    events: list[tuple[str, dict[str, object]]] = []
    ex = Executor(plan, cluster, ExecutionState.new(str(tmp_path), "x"), lambda e, f: events.append((e, f)))
    assert ex.run(*ex.prepare()) == "done"
    assert cluster.now == TARGET
    changed = [f["brokers"] for e, f in events if e == "caps_changed"]
    assert changed, "no cap ever changed"
    assert changed[0]["4"] == {"cap": 1, "why": "behind: a replica out of ISR"}      # halved: 2 -> 1
    assert all(v["cap"] <= 2 for v in changed[0].values())                         # none raised meanwhile
    assert changed[1]["4"]["cap"] == 2 and any(v["cap"] == 3 for v in changed[1].values())   # then raised
    assert isinstance(ex.adjuster, Adjuster) and max(ex.adjuster.caps.values()) <= 4


def test_a_byte_budget_lets_small_moves_past_the_cap_and_never_big_ones() -> None:
    small = [Reassignment("s", p, (1, 2), (1, 3), index=p, size_bytes=100) for p in range(6)]   # involve 2, 3
    schedule = Schedule(small, per_broker=2, bytes_per_broker=450)
    assert len(schedule.start()) == 4                   # 2 within K, 2 more within 450 bytes
    assert schedule.bytes_load == {2: 400, 3: 400} and schedule.load == {2: 4, 3: 4}
    schedule.finish(small[0].key)
    assert [r.key for r in schedule.start()] == [small[4].key]
    big = Reassignment("b", 0, (1, 2), (1, 3), size_bytes=1000)
    schedule = Schedule([big, *small], per_broker=2, bytes_per_broker=450)
    started = schedule.start()
    assert [r.key for r in started] == [big.key, small[0].key]   # over the budget: K is the bound
    schedule = Schedule(small, per_broker=2)             # no budget: K alone
    assert len(schedule.start()) == 2
    empty = [Reassignment("e", p, (1, 2), (1, 3), index=p) for p in range(SMALL_MOVES_MAX + 5)]
    assert len(Schedule(empty, per_broker=2, bytes_per_broker=1).start()) == SMALL_MOVES_MAX
    with pytest.raises(ValueError, match="byte budget"):
        Schedule(small, per_broker=2, bytes_per_broker=0)


@pytest.mark.parametrize(("budget", "peak"), [(None, 1), (1500, 1), (2000, 2)])
def test_the_executor_runs_moves_past_its_cap_within_the_byte_budget(tmp_path: Path, budget: int | None,
                                                                      peak: int) -> None:
    cluster = FakeCluster(START, polls=3)                 # every replica holds 1000 bytes
    plan = ExecutePlan(plan_dir=str(tmp_path), plan_sha256="x", targets=tuple(TARGET.items()), starting=START,
                       per_broker=1, bytes_per_broker=budget, throttle=1000, poll_interval_s=0.0)
    ex = Executor(plan, cluster, ExecutionState.new(str(tmp_path), "x"), lambda e, f: None)
    assert ex.run(*ex.prepare()) == "done"
    assert cluster.now == TARGET and cluster.configs == {}
    assert max(cluster.peak.values()) == peak
