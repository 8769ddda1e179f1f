"""Properties of Kafka's default assignment over random clusters (Hypothesis, derandomized).

The optimised implementation is also compared with a literal, slow transcription of
Kafka's loop (reference section 1.5 and 1.7), for random start indexes, shifts and
start partition ids.
"""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_replica_assignor.assignors import BrokerMetadata, ClusterView, place, validate_assignment
from kafka_replica_assignor.assignors.default import (
    DefaultReplicaAssignor,
    assign_replicas_to_brokers,
    rack_alternated_broker_list,
)
from tests.property.invariants import (
    balance_violations,
    check_placement,
    leader_counts,
    replica_counts,
)

SETTINGS = settings(max_examples=250)


class ScriptedRandom:
    """Returns the scripted draws for ``randrange``, in order."""

    def __init__(self, *draws: int) -> None:
        self.draws = list(draws)

    def randrange(self, n: int) -> int:
        return self.draws.pop(0) % n


def literal_kafka(brokers, n_partitions, rf, start, shift, start_partition_id):
    """Kafka's loop written out plainly: one probe at a time, sets for the used racks."""
    def replica_index(first, second_shift, j, n):
        return (first + 1 + (second_shift + j) % (n - 1)) % n

    out = {}
    p = max(0, start_partition_id)
    if all(b.rack is None for b in brokers):
        ids = [b.id for b in brokers]
        n = len(ids)
        for _ in range(n_partitions):
            if p > 0 and p % n == 0:
                shift += 1
            first = (p + start) % n
            out[p] = [ids[first]] + [ids[replica_index(first, shift, j, n)] for j in range(rf - 1)]
            p += 1
        return out
    rack_of = {b.id: b.rack for b in brokers}
    n_racks = len(set(rack_of.values()))
    arranged = rack_alternated_broker_list(rack_of)
    n = len(arranged)
    for _ in range(n_partitions):
        if p > 0 and p % n == 0:
            shift += 1
        first = (p + start) % n
        leader = arranged[first]
        chosen, racks_used, brokers_used = [leader], {rack_of[leader]}, {leader}
        k = 0
        for _ in range(rf - 1):
            while True:
                b = arranged[replica_index(first, shift * n_racks, k, n)]
                k += 1
                if ((rack_of[b] not in racks_used or len(racks_used) == n_racks)
                        and (b not in brokers_used or len(brokers_used) == n)):
                    chosen.append(b)
                    racks_used.add(rack_of[b])
                    brokers_used.add(b)
                    break
        out[p] = chosen
        p += 1
    return out


@st.composite
def brokers_lists(draw, max_brokers=12, even_racks=False):
    """Distinct ids in a random order; either no racks at all or a rack for every broker."""
    if even_racks:
        n_racks = draw(st.integers(1, 4))
        per_rack = draw(st.integers(1, 4))
        n = n_racks * per_rack
        racks = [f"rack-{i % n_racks}" for i in range(n)]
    else:
        n = draw(st.integers(1, max_brokers))
        if draw(st.booleans()):
            racks = [None] * n
        else:
            n_racks = draw(st.integers(1, n))
            racks = draw(st.lists(st.sampled_from([f"rack-{i}" for i in range(n_racks)]),
                                  min_size=n, max_size=n))
    ids = draw(st.lists(st.integers(0, 99), min_size=n, max_size=n, unique=True))
    return [BrokerMetadata(i, r) for i, r in zip(ids, racks, strict=True)]


@st.composite
def requests(draw, even_racks=False):
    brokers = draw(brokers_lists(even_racks=even_racks))
    n = len(brokers)
    rf = draw(st.integers(1, n))
    n_partitions = draw(st.integers(1, 40))
    start = draw(st.integers(0, 2 * n))
    shift = draw(st.integers(0, 2 * n))
    start_partition_id = draw(st.integers(-1, 30))
    return brokers, n_partitions, rf, start, shift, start_partition_id


@SETTINGS
@given(requests())
def test_matches_the_literal_kafka_loop(request):
    brokers, n_partitions, rf, start, shift, spid = request
    got = assign_replicas_to_brokers(brokers, n_partitions, rf, start_partition_id=spid,
                                     rng=ScriptedRandom(start, shift))
    assert got == literal_kafka(brokers, n_partitions, rf, start % len(brokers), shift % len(brokers), spid)
    # a fixed start index is both start and shift
    fixed = assign_replicas_to_brokers(brokers, n_partitions, rf, fixed_start_index=start, start_partition_id=spid)
    assert fixed == literal_kafka(brokers, n_partitions, rf, start, start, spid)


@SETTINGS
@given(requests())
def test_placement_invariants(request):
    brokers, n_partitions, rf, start, shift, spid = request
    got = assign_replicas_to_brokers(brokers, n_partitions, rf, start_partition_id=spid,
                                     rng=ScriptedRandom(start, shift))
    cluster = ClusterView(brokers=tuple(brokers))
    p0 = max(0, spid)
    # rf distinct known brokers, min(rf, #racks) racks each, leaders within 1 of each other
    check_placement(got, cluster, rf, range(p0, p0 + n_partitions), rack_spread=True, leader_balance=True)


@SETTINGS
@given(st.data())
def test_exact_replica_balance(data):
    brokers = data.draw(st.one_of(
        brokers_lists(even_racks=True),
        brokers_lists().map(lambda bs: [BrokerMetadata(b.id) for b in bs]),
    ))
    n = len(brokers)
    racks = {b.rack for b in brokers if b.rack is not None}
    rf = len(racks) if racks else data.draw(st.integers(1, n))
    n_partitions = n * data.draw(st.integers(1, 5))
    start, shift = data.draw(st.integers(0, n - 1)), data.draw(st.integers(0, n - 1))
    spid = data.draw(st.sampled_from([-1, 0]))
    got = assign_replicas_to_brokers(brokers, n_partitions, rf, start_partition_id=spid,
                                     rng=ScriptedRandom(start, shift))
    counts = replica_counts(got, [b.id for b in brokers])
    assert balance_violations(counts, "replica", tolerance=0) == []
    assert set(leader_counts(got, [b.id for b in brokers]).values()) == {n_partitions // n}


@SETTINGS
@given(requests(), st.integers(0, 2**32))
def test_same_seed_same_answer(request, seed):
    brokers, n_partitions, rf, _, _, spid = request
    a = assign_replicas_to_brokers(brokers, n_partitions, rf, start_partition_id=spid, rng=random.Random(seed))
    b = assign_replicas_to_brokers(brokers, n_partitions, rf, start_partition_id=spid, rng=random.Random(seed))
    assert a == b


@SETTINGS
@given(requests(), st.integers(0, 2**32))
def test_place_and_validation_accept_the_assignor(request, seed):
    brokers, n_partitions, rf, _, _, spid = request
    cluster = ClusterView(brokers=tuple(brokers))
    partitions = list(range(max(0, spid), max(0, spid) + n_partitions))
    got = place(DefaultReplicaAssignor(), "t", partitions, rf, cluster, rng=random.Random(seed))
    assert validate_assignment(got, partitions, rf, cluster) == got
    # and it is Kafka's answer for the id-sorted brokers, with the same draws
    assert got == assign_replicas_to_brokers(cluster.brokers, n_partitions, rf, start_partition_id=spid,
                                             rng=random.Random(seed))


@SETTINGS
@given(requests(), st.data())
def test_non_consecutive_ids_are_placed_as_in_one_run(request, data):
    brokers, _, rf, start, shift, _ = request
    wanted = sorted(data.draw(st.sets(st.integers(0, 60), min_size=1, max_size=15)))
    cluster = ClusterView(brokers=tuple(brokers))
    got = DefaultReplicaAssignor().assign_replicas_to_brokers("t", wanted, rf, cluster,
                                                             rng=ScriptedRandom(start, shift))
    full = literal_kafka(list(cluster.brokers), wanted[-1] - wanted[0] + 1, rf,
                         start % len(brokers), shift % len(brokers), wanted[0])
    assert got == {p: full[p] for p in wanted}


@SETTINGS
@given(requests(), st.data())
def test_continuation_keeps_invariants_on_new_partitions(request, data):
    brokers, n_partitions, rf, start, shift, _ = request
    cluster = ClusterView(brokers=tuple(brokers))
    assignor = DefaultReplicaAssignor()
    created = assignor.assign_replicas_to_brokers("t", range(n_partitions), rf, cluster,
                                                  rng=ScriptedRandom(start, shift))
    grown = cluster.with_assignment("t", created)
    more = data.draw(st.integers(1, 30))
    new_rf = data.draw(st.integers(rf, len(brokers)))
    wanted = list(range(n_partitions + more))
    got = place(assignor, "t", wanted, new_rf, grown, rng=random.Random(0))
    check_placement(got, cluster, new_rf, wanted, current=created)
    added = {p: got[p] for p in range(n_partitions, n_partitions + more)}
    check_placement(added, cluster, new_rf, rack_spread=True, leader_balance=True)
    if cluster.racks:
        # raised partitions gain every rack they can
        for p, replicas in got.items():
            spanned = len({cluster.rack_by_broker[b] for b in replicas})
            assert spanned >= min(new_rf, len(cluster.racks)), (p, replicas)


def test_invariant_checker_reports_each_violation():
    cluster = ClusterView.of([(0, "a"), (1, "a"), (2, "b"), (3, "b")], fenced={3})
    good = {0: [0, 2], 1: [2, 1], 2: [1, 2], 3: [2, 0]}
    check_placement(good, cluster, 2, range(4), rack_spread=True)
    cases = {
        "missing [3]": ({0: [0, 2], 1: [2, 1], 2: [1, 2]}, {}),
        "unexpected [4]": ({**good, 4: [0, 2]}, {}),
        "1 replicas": ({**good, 0: [0]}, {}),
        "duplicate broker": ({**good, 0: [0, 0]}, {}),
        "broker 9 is not in the cluster view": ({**good, 0: [0, 9]}, {}),
        "fenced broker 3 leads": ({**good, 0: [3, 0]}, {}),
        "spans 1 racks": ({**good, 0: [0, 1]}, {"rack_spread": True}),
        "leader counts": ({0: [0, 2], 1: [0, 2], 2: [0, 2], 3: [1, 2]}, {"leader_balance": True}),
        "replica counts": (good, {"replica_balance": 0}),
        "not a prefix": (good, {"current": {1: [1]}}),
        "the leader may not be a placeholder": ({**good, 0: [-1, 0]}, {"placeholders": True}),
    }
    for expected, (assignment, options) in cases.items():
        try:
            check_placement(assignment, cluster, 2, range(4), **options)
        except AssertionError as exc:
            assert expected in str(exc), (expected, str(exc))
        else:
            raise AssertionError(f"no violation reported, expected {expected!r}")
    check_placement({**good, 0: [0, -1]}, cluster, 2, range(4), rack_spread=True, placeholders=True)
