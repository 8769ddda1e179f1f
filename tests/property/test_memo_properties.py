"""The placement memo (kafka_replica_assignor.assignors.memo) answers exactly as the ordinary path, draw for draw."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_replica_assignor.assignors import ClusterView, PlacementSpec, ReplicaAssignorError, create_assignor, place
from kafka_replica_assignor.assignors.default import DefaultReplicaAssignor
from kafka_replica_assignor.assignors.memo import MemoEntry, PlacementMemo
from tests.property.invariants import check_placement
from tests.property.test_default_properties import brokers_lists

SETTINGS = settings(max_examples=150)


def _view(pairs) -> ClusterView:
    return ClusterView.of(pairs)


@st.composite
def memo_requests(draw):
    pairs = draw(brokers_lists(max_brokers=10))
    rf = draw(st.integers(1, len(pairs)))
    first = draw(st.sampled_from([0, 0, 3]))
    n = draw(st.integers(1, 30))
    return pairs, range(first, first + n), rf, draw(st.integers(0, 2**32))


@SETTINGS
@given(memo_requests(), st.integers(1, 4))
def test_same_answer_and_same_draws_as_place(request, repeats):
    """Every request: the memo's answer equals place()'s under the same rng, which is left in
    the same state; repeats come from the memo (one entry, the same object)."""
    pairs, partitions, rf, seed = request
    view = _view(pairs)
    assignor = DefaultReplicaAssignor()
    memo = PlacementMemo()
    entries = []
    for _ in range(repeats):
        ordinary_rng, memo_rng = random.Random(seed), random.Random(seed)
        expected = place(assignor, "t", partitions, rf, view, rng=ordinary_rng)
        entry = memo.place(assignor, PlacementSpec("t", partitions, rf), view, rng=memo_rng)
        assert isinstance(entry, MemoEntry)
        assert entry.assignment == expected
        assert memo_rng.getstate() == ordinary_rng.getstate()
        check_placement(entry.assignment, view, rf=rf, partitions=partitions)
        entries.append(entry)
    assert all(e is entries[0] for e in entries)
    assert (memo.misses, memo.hits) == (1, repeats - 1)


@SETTINGS
@given(memo_requests(), st.data())
def test_with_fenced_brokers_the_same_answer_and_draws_as_place_or_none(request, data):
    """Fenced brokers: the memo draws on the framework's view (the unfenced brokers) and answers
    as place() does, draw for draw; where they are too few it declines without drawing."""
    pairs, partitions, rf, seed = request
    ids = [b.id for b in pairs]
    fenced = data.draw(st.sets(st.sampled_from(ids), min_size=1, max_size=len(ids) - 1) if len(ids) > 1
                       else st.just(set()), label="fenced")
    view = ClusterView.of(pairs, fenced=fenced)
    assignor, memo = DefaultReplicaAssignor(), PlacementMemo()
    for _ in range(2):
        ordinary_rng, memo_rng = random.Random(seed), random.Random(seed)
        expected = place(assignor, "t", partitions, rf, view, rng=ordinary_rng)
        entry = memo.place(assignor, PlacementSpec("t", partitions, rf), view, rng=memo_rng)
        if rf > len(ids) - len(fenced):
            assert entry is None and memo_rng.getstate() == random.Random(seed).getstate()
            continue
        assert entry is not None and entry.assignment == expected
        assert memo_rng.getstate() == ordinary_rng.getstate()
        check_placement(entry.assignment, view, rf=rf, partitions=partitions, fenced_only_when_needed=True)


@SETTINGS
@given(memo_requests(), memo_requests())
def test_no_answer_crosses_layouts(first, second):
    """Two clusters: an entry made for one is never handed to the other, even when the draws,
    ids and replication factor coincide."""
    pairs_a, partitions, rf, seed = first
    pairs_b = second[0]
    if rf > len(pairs_b):
        rf = len(pairs_b)
    assignor = DefaultReplicaAssignor()
    memo = PlacementMemo()
    for pairs in (pairs_a, pairs_b, pairs_a):
        view = _view(pairs)
        entry = memo.place(assignor, PlacementSpec(None, partitions, rf), view, rng=random.Random(seed))
        assert entry.assignment == place(assignor, None, partitions, rf, view, rng=random.Random(seed))


def test_a_new_view_object_of_the_same_layout_hits():
    pairs = [(b, f"r{b % 3}") for b in range(6)]
    assignor, memo = DefaultReplicaAssignor(), PlacementMemo()
    a = memo.place(assignor, PlacementSpec("t", range(12), 3), _view(pairs), rng=random.Random(5))
    b = memo.place(assignor, PlacementSpec("t", range(12), 3), _view(list(reversed(pairs))), rng=random.Random(5))
    assert a is b and memo.hits == 1


@pytest.mark.parametrize("case", ["existing topic", "ids not a range", "rf above brokers", "mixed racks",
                                  "negative ids", "no partitions"])
def test_declines_without_drawing(case):
    """Declined requests leave the rng untouched, so the ordinary path draws what it would have."""
    pairs = [(b, f"r{b % 3}") for b in range(6)]
    view, partitions, rf = _view(pairs), range(12), 3
    if case == "existing topic":
        view = view.with_assignment("t", {0: [0, 1, 2]})
        partitions = range(1, 12)
    elif case == "ids not a range":
        partitions = (0, 1, 2, 5)
    elif case == "rf above brokers":
        rf = 7
    elif case == "mixed racks":
        view = _view(pairs[:5] + [(5, None)])
    elif case == "negative ids":
        partitions = range(-1, 3)
    else:
        partitions = range(0)
    rng = random.Random(9)
    state = rng.getstate()
    assert PlacementMemo().place(DefaultReplicaAssignor(), PlacementSpec("t", partitions, rf), view, rng=rng) is None
    assert rng.getstate() == state


def test_other_assignors_are_not_memoized():
    pairs = [(b, f"r{b % 3}") for b in range(6)]
    for name in ("striped", "multi-level"):
        rng = random.Random(1)
        state = rng.getstate()
        assert PlacementMemo().place(create_assignor(name), PlacementSpec("t", range(12), 3), _view(pairs), rng=rng) is None
        assert rng.getstate() == state


def test_bounds():
    pairs = [(b, None) for b in range(6)]
    assignor = DefaultReplicaAssignor()
    memo = PlacementMemo(max_entries=5, max_replicas=30)
    assert memo.place(assignor, PlacementSpec("t", range(11), 3), _view(pairs), rng=random.Random(0)) is None  # 33 > 30
    for seed in range(40):
        assert memo.place(assignor, PlacementSpec("t", range(10), 3), _view(pairs), rng=random.Random(seed)) is not None
        assert len(memo) <= 5
    assert PlacementMemo(max_entries=0).place(assignor, PlacementSpec("t", range(3), 1), _view(pairs),
                                              rng=random.Random(0)) is None


def test_derived_data_is_made_once_per_key():
    entry = PlacementMemo().place(DefaultReplicaAssignor(), PlacementSpec("t", range(4), 2), _view([(b, None) for b in range(4)]),
                                  rng=random.Random(3))
    calls = []

    def make(assignment):
        calls.append(1)
        return repr(sorted(assignment.items())).encode()

    assert entry.derived(0, make) is entry.derived(0, make)
    entry.derived(1, make)
    assert len(calls) == 2


class _BrokenDraws(DefaultReplicaAssignor):
    """Claims to be memoizable but answers wrongly: the memo validates like place()."""

    def assign_drawn(self, key, topic_name, partitions, replication_factor, cluster):
        out = super().assign_drawn(key, topic_name, partitions, replication_factor, cluster)
        return {p: [r[0]] * len(r) for p, r in out.items()}


def test_a_wrong_memoized_answer_is_refused():
    memo = PlacementMemo()
    with pytest.raises(ReplicaAssignorError, match="duplicate broker"):
        memo.place(_BrokenDraws(), PlacementSpec("t", range(6), 3), _view([(b, None) for b in range(6)]), rng=random.Random(0))
    assert len(memo) == 0
