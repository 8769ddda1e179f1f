"""The planner's modes: one rule each, the command line's order, and a mode without a rule refused."""

from __future__ import annotations

import pytest

from kafka_replica_assignor.cluster.snapshot import BrokerEntry, ClusterSnapshot, PartitionEntry
from kafka_replica_assignor.planner.goals.leader_flow import leader_balance
from kafka_replica_assignor.planner.settings import PlanSettings
from kafka_replica_assignor.planner.solving.cluster_balance import cluster_balance
from kafka_replica_assignor.planner.solving.modes import MODES, RULES, make_plan
from kafka_replica_assignor.planner.solving.repair_rule import repair
from kafka_replica_assignor.planner.solving.replica_balance import replica_balance

SNAPSHOT = ClusterSnapshot(brokers=(BrokerEntry(0, "a"), BrokerEntry(1, "b")),
                           partitions=(PartitionEntry("t", 0, (0, 1)), PartitionEntry("t", 1, (0, 1))))


def test_the_modes_are_the_rules_in_the_command_lines_order() -> None:
    assert MODES == ("leader", "replica", "cluster", "repair") == tuple(RULES)


def test_each_mode_runs_its_own_rule_with_the_settings() -> None:
    settings = {mode: PlanSettings(mode, threshold=0, max_moves=5, exact_seconds=0) for mode in MODES}
    expected = {
        "leader": leader_balance(SNAPSHOT),
        "replica": replica_balance(SNAPSHOT, threshold=0, max_moves=5, exact_seconds=0),
        "cluster": cluster_balance(SNAPSHOT, threshold=0, max_moves=5, exact_seconds=0),
        "repair": repair(SNAPSHOT, max_moves=5),
    }
    for mode in MODES:
        assert make_plan(SNAPSHOT, settings[mode]).moves == expected[mode].moves, mode
    assert make_plan(SNAPSHOT, settings["leader"]).leader_changes == 1  # t-1 led by broker 1 instead


def test_a_mode_without_a_rule_is_refused_before_planning() -> None:
    with pytest.raises(ValueError, match="mode must be one of leader, replica, cluster, repair, got 'disk'"):
        PlanSettings("disk")
