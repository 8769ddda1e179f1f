"""KIP-409 placement: placeholders for offline observed brokers, refusals, leaders."""

from __future__ import annotations

import random

import pytest

from kafka_replica_assignor.assignors import (
    BrokerMetadata,
    ClusterView,
    InvalidPartitionsError,
    InvalidReplicationFactorError,
    PlacementSpec,
    ReplicaAssignor,
    ReplicaAssignorError,
    place,
)
from kafka_replica_assignor.assignors.default import DefaultReplicaAssignor
from kafka_replica_assignor.assignors.striped import StripedReplicaAssignor
from kafka_replica_assignor.assignors.under_replicated import observed_view, place_under_replicated
from kafka_replica_assignor.assignors.validate import check_placeholders

B = BrokerMetadata


class FixedAssignor(ReplicaAssignor):
    """Answers a fixed placement, to drive the leader and placeholder rewriting exactly."""

    name = "fixed"

    def __init__(self, answer: dict[int, list[int]]) -> None:
        self.answer = answer
        self.seen: list[ClusterView] = []

    def assign_replicas_to_brokers(self, topic_name, partitions, replication_factor, cluster,
                                   principal="User:ANONYMOUS", *, rng):
        self.seen.append(cluster)
        return {p: list(self.answer[p]) for p in partitions}


def three_zones(offline: int = 1) -> ClusterView:
    """Brokers 0..2 on zones a, b, c; the last ``offline`` of them are down."""
    brokers = [B(0, "a"), B(1, "b"), B(2, "c")]
    return ClusterView(brokers=tuple(brokers[:3 - offline]), offline=tuple(brokers[3 - offline:]))


def under(assignor, partitions, rf, cluster, *, enabled=True, min_isr=1, seed=7, topic="t"):
    return place_under_replicated(assignor, PlacementSpec(topic, partitions, rf), cluster, rng=random.Random(seed),
                                  enabled=enabled, min_insync_replicas=min_isr)


def test_enough_alive_brokers_is_exactly_place():
    cluster = ClusterView(brokers=(B(0, "a"), B(1, "b"), B(2, "c"), B(3, "a")), offline=(B(4, "b"),))
    for enabled in (False, True):
        got = under(DefaultReplicaAssignor(), range(8), 3, cluster, enabled=enabled, seed=3)
        assert got == place(DefaultReplicaAssignor(), "t", range(8), 3, cluster, rng=random.Random(3))
        assert all(b >= 0 for r in got.values() for b in r)


def test_disabled_refuses_with_alive_observed_rf_and_min_isr():
    with pytest.raises(InvalidReplicationFactorError) as err:
        under(DefaultReplicaAssignor(), range(3), 3, three_zones(offline=2), enabled=False, min_isr=2)
    assert err.value.message == (
        "Replication factor: 3 larger than available brokers: 1. Under-replicated creation: "
        "observed: 3, min.insync.replicas: 2, enable.under.replicated.topic.creation: false."
    )


def test_below_min_isr_refuses_even_when_enabled():
    with pytest.raises(InvalidReplicationFactorError) as err:
        under(DefaultReplicaAssignor(), range(3), 3, three_zones(offline=2), min_isr=2)
    assert "available brokers: 1. Under-replicated creation: observed: 3, min.insync.replicas: 2" in err.value.message
    assert "enable.under.replicated.topic.creation: true" in err.value.message
    assert "needs at least 2 alive broker(s)" in err.value.message


def test_min_isr_above_rf_only_needs_rf_alive_brokers():
    # min(min.insync.replicas, RF): RF 2 with min ISR 3 needs 2 alive brokers, not 3
    cluster = ClusterView(brokers=(B(0, "a"),), offline=(B(1, "b"), B(2, "c")))
    with pytest.raises(InvalidReplicationFactorError):
        under(DefaultReplicaAssignor(), range(2), 2, cluster, min_isr=3)
    got = under(DefaultReplicaAssignor(), range(2), 2, three_zones(offline=1), min_isr=3)
    assert all(len(r) == 2 for r in got.values())


def test_observed_brokers_must_cover_rf():
    with pytest.raises(InvalidReplicationFactorError) as err:
        under(DefaultReplicaAssignor(), range(2), 4, three_zones(offline=1), min_isr=1)
    assert "available brokers: 2. Under-replicated creation: observed: 3," in err.value.message
    assert "do not cover the replication factor" in err.value.message


def test_partition_and_rf_checks_come_first():
    with pytest.raises(InvalidPartitionsError):
        under(DefaultReplicaAssignor(), [], 3, three_zones())
    with pytest.raises(InvalidReplicationFactorError) as err:
        under(DefaultReplicaAssignor(), range(2), 0, three_zones())
    assert err.value.message == "Replication factor must be larger than 0."


def test_one_zone_down_keeps_three_zones_with_a_placeholder():
    cluster = three_zones(offline=1)
    got = under(DefaultReplicaAssignor(), range(6), 3, cluster, min_isr=2)
    for p, replicas in got.items():
        assert sorted(replicas) == [-1, 0, 1], (p, replicas)
        assert replicas[0] >= 0
    leaders = [r[0] for r in got.values()]
    assert sorted(leaders.count(b) for b in (0, 1)) == [3, 3]


def test_the_assignor_sees_only_the_alive_unfenced_brokers():
    # the framework's fenced rule: the offline broker (fenced in the observed view) is out of
    # the assignor's view; it takes the one replica the alive brokers are too few for
    fixed = FixedAssignor({0: [0, 1]})
    got = under(fixed, [0], 3, three_zones(offline=1))
    (seen,) = fixed.seen
    assert seen.broker_ids == (0, 1) and seen.fenced == frozenset() and seen.offline == ()
    assert seen.rack_by_broker == {0: "a", 1: "b"}
    assert got == {0: [0, 1, -1]}
    assert observed_view(three_zones(offline=1)).fenced == frozenset({2})


def test_an_offline_broker_never_leads_and_every_alive_broker_is_in_every_partition():
    fixed = FixedAssignor({0: [1, 0], 1: [0, 1]})
    got = under(fixed, [0, 1], 3, three_zones(offline=1))
    assert got == {0: [1, 0, -1], 1: [0, 1, -1]}


def test_placeholders_are_numbered_in_order_of_appearance():
    cluster = ClusterView(brokers=(B(0, "a"), B(1, "b")), offline=(B(5, "c"), B(6, "d"), B(7, "e")))
    fixed = FixedAssignor({0: [0, 1], 1: [1, 0]})
    got = under(fixed, [0, 1], 5, cluster, min_isr=2)
    assert got == {0: [0, 1, -1, -2, -3], 1: [1, 0, -1, -2, -3]}


def test_a_partition_short_of_alive_replicas_takes_a_fenced_alive_broker_from_the_rack():
    # broker 9 is alive but fenced: the framework's fallback may put offline brokers 3 and 4
    # first (lower ids, new racks); min ISR 2 then needs broker 9, which replaces broker 3
    # (rack b, its own)
    cluster = ClusterView(brokers=(B(0, "a"), B(9, "b")), fenced=frozenset({9}),
                          offline=(B(3, "b"), B(4, "c")))
    fixed = FixedAssignor({0: [0], 1: [0]})
    got = under(fixed, [0, 1], 3, cluster, min_isr=2)
    assert got == {0: [0, 9, -1], 1: [0, 9, -1]}


def test_current_replicas_on_offline_brokers_are_refused_like_the_normal_path():
    cluster = ClusterView(brokers=(B(0, "a"), B(1, "b")), offline=(B(2, "c"),),
                          topics={"t": {0: (2, 0)}})
    # the assignor sees the alive kept replica (broker 0) and adds one; broker 2 stays first
    fixed = FixedAssignor({0: [0, 1]})
    with pytest.raises(ReplicaAssignorError, match="broker 2 is not in the cluster view"):
        under(fixed, [0], 3, cluster)


def test_a_wrong_assignor_answer_is_still_refused():
    fixed = FixedAssignor({0: [0, 0]})
    with pytest.raises(ReplicaAssignorError, match="duplicate broker"):
        under(fixed, [0], 3, three_zones(offline=1))


def test_striped_assignor_never_leads_with_an_offline_broker():
    cluster = ClusterView(brokers=(B(0, "a"), B(1, "b")), offline=(B(2, "c"), B(3, "a"), B(4, "c")))
    got = under(StripedReplicaAssignor(), range(30), 3, cluster, min_isr=2)
    leaders = [r[0] for r in got.values()]
    assert set(leaders) == {0, 1}
    assert abs(leaders.count(0) - leaders.count(1)) <= 1
    for replicas in got.values():
        # zone c is down: it is always a placeholder, and zones a and b are both used
        assert sorted(b for b in replicas if b >= 0) == [0, 1]
        assert replicas.count(-1) == 1


def test_check_placeholders_rejects_bad_numbering_and_placeholder_leaders():
    alive = three_zones(offline=1).broker_ids
    check_placeholders(0, [0, -1, 1], alive)
    with pytest.raises(ReplicaAssignorError, match="numbered"):
        check_placeholders(0, [0, -2, -1], alive)
    with pytest.raises(ReplicaAssignorError, match="leader"):
        check_placeholders(0, [-1, 0, 1], alive)
    with pytest.raises(ReplicaAssignorError, match="leader"):
        check_placeholders(0, [2, 0, 1], alive)


def test_same_seed_same_answer():
    cluster = ClusterView(brokers=(B(0, "a"), B(1, "b"), B(3, "a"), B(4, "b")), offline=(B(2, "c"), B(5, "c")))
    a = under(DefaultReplicaAssignor(), range(12), 3, cluster, seed=11)
    b = under(DefaultReplicaAssignor(), range(12), 3, cluster, seed=11)
    assert a == b
