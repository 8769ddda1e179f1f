"""``kafka_replica_assignor.assignors.java_random.JavaRandom`` against numbers printed by ``java.util.Random`` (Java 17)."""

from __future__ import annotations

import random

import pytest

from kafka_replica_assignor.assignors.java_random import JavaRandom


def test_next_int_sequence_of_a_seed():
    rng = JavaRandom(42)  # new Random(42).nextInt(10) five times, then nextDouble()
    assert [rng.randrange(10) for _ in range(5)] == [0, 3, 8, 4, 0]
    assert rng.random() == 0.9420735430282128


def test_next_int_bounds_and_negative_seed():
    rng = JavaRandom(-7)  # powers of two, small bounds, and bounds where Java may reject a draw
    got = [rng.randrange(b) for b in (1, 2, 3, 1_000_000_007, 2**31 - 1, 2**30 + 1)]
    assert got == [0, 1, 1, 119890471, 314447087, 677675436]


def test_shuffle_is_collections_shuffle():
    items = list(range(10))
    JavaRandom(5).shuffle(items)  # Collections.shuffle(0..9, new Random(5))
    assert items == [3, 4, 2, 8, 5, 6, 9, 0, 1, 7]


def test_rejection_loop_matches_the_int_overflow_rule():
    """Java retries a 31-bit draw ``u`` when ``u - u % bound + bound - 1`` overflows an int; a
    draw is rejected at most as often as that happens, and the answers stay in range."""
    rng, replay = JavaRandom(3), JavaRandom(3)
    bound = 2**30 + 1
    for _ in range(200):
        value = rng.randrange(bound)
        assert 0 <= value < bound
        u = replay.next_bits(31)
        while u - u % bound + bound - 1 >= 2**31:
            u = replay.next_bits(31)
        assert value == u % bound
    assert rng.getstate() == replay.getstate()


def test_is_an_injectable_random_with_state():
    rng = JavaRandom(11)
    assert isinstance(rng, random.Random)
    state = rng.getstate()
    first = [rng.randrange(1000) for _ in range(5)]
    rng.setstate(state)
    assert [rng.randrange(1000) for _ in range(5)] == first
    assert rng.randrange(5, 8) in (5, 6, 7)
    assert 0 <= rng.getrandbits(40) < 2**40
    with pytest.raises(TypeError):
        JavaRandom("seed")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        rng.randrange(0)
