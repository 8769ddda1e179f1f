"""Repair: placeholders and replicas on dead, unknown or removed brokers (``--mode repair``)."""

from __future__ import annotations

from kafka_replica_assignor.cluster.snapshot import BrokerEntry, ClusterSnapshot, PartitionEntry
from kafka_replica_assignor.planner.report.cluster_report import describe
from tests.planning import plan_of
from tests.property.plan_invariants import check_plan

BROKERS = (BrokerEntry(0, "a"), BrokerEntry(1, "b"), BrokerEntry(2, "c"), BrokerEntry(3, "c"),
           BrokerEntry(4, "b", alive=False))


def snap(*replicas, brokers=BROKERS):
    return ClusterSnapshot(brokers, tuple(PartitionEntry("t", i, r) for i, r in enumerate(replicas)))


def test_module_example_table():
    plan = plan_of(snap((0, 1, -1), (4, 0, 2), (9, 0, 1)), "repair")
    check_plan(plan)
    assert [p.replicas for p in plan.after.partitions] == [(0, 1, 3), (1, 0, 2), (2, 0, 1)]
    assert [(m.source, m.destination, m.kind) for m in plan.moves] == [
        (-1, 3, "repair"), (4, 1, "repair"), (9, 2, "repair")]
    assert plan.bound("repairs_needed") == 3
    after = describe(plan.after)
    assert not after.placeholders and not after.on_dead and not after.on_unknown


def test_dead_broker_is_replaced_in_its_rack_least_loaded_first():
    brokers = BROKERS + (BrokerEntry(5, "b"),)
    plan = plan_of(snap((4, 0, 2), (4, 0, 3), (1, 0, 2), brokers=brokers), "repair")
    # rack b: broker 1 holds one replica, broker 5 none -> 5, then 1 and 5 are even -> 1
    assert [p.replicas[0] for p in plan.after.partitions[:2]] == [5, 1]


def test_removed_brokers_are_drained_and_never_chosen():
    plan = plan_of(snap((0, 1, 2), (1, 2, 3), (3, 0, 1)), "repair", remove=(1,))
    check_plan(plan, removed={1})
    assert all(1 not in p.replicas for p in plan.after.partitions)


def test_a_partition_that_cannot_be_filled_is_left_whole_and_reported():
    small = (BrokerEntry(0), BrokerEntry(1))
    plan = plan_of(snap((0, 1, 7), (0, 7), brokers=small), "repair")
    check_plan(plan)
    assert plan.after.partitions[0].replicas == (0, 1, 7)     # RF 3 on 2 alive brokers
    assert plan.after.partitions[1].replicas == (0, 1)
    assert any("cannot be repaired" in n and "t-0" in n for n in plan.notes)


def test_move_budget_is_respected_per_partition():
    plan = plan_of(snap((-1, -2, 0), (4, 0, 1), (9, 0, 1)), "repair", max_moves=2)
    check_plan(plan, max_moves=2)
    assert plan.replica_moves == 2
    assert any("budget" in n for n in plan.notes)
