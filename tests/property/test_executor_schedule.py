"""Property tests of :mod:`kafka_replica_assignor.planner.execution.executor_schedule`: generated plans run to the end with
moves finishing in a random order; at every step the caps hold, every reassignment is started
exactly once, and a started one never jumps an earlier one that fitted."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafka_replica_assignor.planner.execution.executor_schedule import (
    ORDERS,
    Reassignment,
    Schedule,
    order_key,
    peak_load,
)


@st.composite
def reassignments(draw: st.DrawFn) -> list[Reassignment]:
    brokers = draw(st.integers(2, 8))
    count = draw(st.integers(0, 40))
    out = []
    for i in range(count):
        rf = draw(st.integers(1, min(3, brokers)))
        start = draw(st.permutations(range(brokers)))[:rf]
        target = draw(st.permutations(range(brokers)))[:draw(st.integers(1, min(3, brokers)))]
        out.append(Reassignment(f"t{i % 3}", i, tuple(start), tuple(target), index=i,
                                size_bytes=draw(st.sampled_from([0, 10, 500, 10_000])),
                                under_min_isr=draw(st.booleans())))
    return out


def run_to_the_end(moves: list[Reassignment], k: int | None, n: int | None, order: str,
                   seed: int) -> list[Reassignment]:
    """Drive a schedule as the executor does; check the invariants at every step."""
    rng = random.Random(seed)
    schedule = Schedule(moves, per_broker=k, concurrent=n, order=order)
    key = order_key(order)
    started: list[Reassignment] = []
    for _ in range(10 * len(moves) + 2):
        wave = schedule.start()
        started += wave
        flying = list(schedule.in_flight.values())
        assert n is None or len(flying) <= n
        assert k is None or all(v <= k for v in peak_load(flying).values())
        assert schedule.load == peak_load(flying)
        for r in schedule.pending:              # nothing that fits is left behind a started move
            if wave and key(r) < key(wave[-1]):
                assert not schedule.fits(r), f"{r.name} fitted but {wave[-1].name} started first"
        assert [key(r) for r in wave] == sorted(key(r) for r in wave)
        if schedule.done:
            break
        assert flying, "nothing in flight and nothing can start: the schedule is stuck"
        for r in rng.sample(flying, rng.randint(1, len(flying))):
            schedule.finish(r.key)
    assert schedule.done
    return started


@given(reassignments(), st.sampled_from([None, 1, 2, 3]), st.sampled_from([None, 1, 2, 5]),
       st.sampled_from(ORDERS), st.integers(0, 2**16))
def test_caps_hold_every_move_starts_once_and_order_is_kept(moves: list[Reassignment], k: int | None,
                                                             n: int | None, order: str, seed: int) -> None:
    started = run_to_the_end(moves, k, n, order, seed)
    assert sorted(r.key for r in started) == sorted(r.key for r in moves)
    assert len({r.key for r in started}) == len(started)


@given(reassignments(), st.sampled_from(ORDERS))
def test_without_caps_everything_starts_at_once_in_order(moves: list[Reassignment], order: str) -> None:
    wave = Schedule(moves, order=order).start()
    assert wave == sorted(moves, key=order_key(order))


@given(reassignments(), st.integers(1, 3))
def test_in_flight_moves_of_a_resumed_run_count_against_the_cap(moves: list[Reassignment], k: int) -> None:
    half = len(moves) // 2
    schedule = Schedule(moves[half:], per_broker=k, in_flight=moves[:half])
    before = dict(schedule.load)
    wave = schedule.start()
    for r in wave:      # a new move only where every broker it involves had room
        assert all(before.get(b, 0) < k for b in r.involved)
    assert all(v <= max(k, before.get(b, 0)) for b, v in schedule.load.items())


def test_the_docstring_example() -> None:
    a = Reassignment("t", 0, (1, 2), (3, 2), index=0)
    b = Reassignment("t", 1, (1, 4), (2, 4), index=1)
    c = Reassignment("t", 2, (2, 4), (2, 3), index=2)
    schedule = Schedule([a, b, c], per_broker=1)
    assert schedule.start() == [a]
    assert schedule.start() == []
    schedule.finish(a.key)
    assert schedule.start() == [b, c]


def test_orders_sort_as_documented() -> None:
    big = Reassignment("t", 0, (1,), (2,), index=0, size_bytes=100)
    small = Reassignment("t", 1, (1,), (3,), index=1, size_bytes=5)
    urgent = Reassignment("t", 2, (1,), (4,), index=2, size_bytes=50, under_min_isr=True)
    assert Schedule([big, small, urgent], order="size").start() == [small, urgent, big]
    assert Schedule([big, small, urgent], order="under-min-isr").start() == [urgent, big, small]
    assert Schedule([big, small, urgent], order="plan").start() == [big, small, urgent]


def test_bad_input_is_refused() -> None:
    a = Reassignment("t", 0, (1,), (2,))
    with pytest.raises(ValueError, match="per-broker cap"):
        Schedule([a], per_broker=0)
    with pytest.raises(ValueError, match="order must be"):
        Schedule([a], order="random")
    with pytest.raises(ValueError, match="twice"):
        Schedule([a, a])
    with pytest.raises(ValueError, match="lists a broker twice"):
        Reassignment("t", 0, (1,), (2, 2))


@given(reassignments(), st.integers(1, 2), st.integers(0, 2**16))
def test_moves_put_back_start_again_and_each_finishes_once(moves: list[Reassignment], k: int, seed: int) -> None:
    rng = random.Random(seed)
    schedule = Schedule(moves, per_broker=k)
    finished: list[tuple[str, int]] = []
    for _ in range(20 * len(moves) + 2):
        schedule.start()
        assert all(v <= k for v in schedule.load.values())
        if schedule.done:
            break
        flying = sorted(schedule.in_flight)
        chosen = rng.sample(flying, rng.randint(1, len(flying)))
        if rng.random() < 0.3:
            schedule.put_back(chosen)       # their submission failed
        else:
            finished += [schedule.finish(key).key for key in chosen]
    assert schedule.done
    assert sorted(finished) == sorted(r.key for r in moves)
