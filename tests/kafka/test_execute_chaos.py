"""``replica-assignor execute`` under faults (issue 31): while a plan of 60 moves runs and an
idempotent producer (``acks=all``, ``min.insync.replicas=2``) writes numbered records that a
consumer reads, a broker in a move in flight is killed (SIGKILL) and restarted, then the active
controller, then the executor (``kill -9``), which is started again and left to finish or
cancelled. Every acknowledged record is read exactly once, no partition stays below
``min.insync.replicas`` longer than a restart, every partition ends at its planned replicas
(or, cancelled, at its starting or planned ones, order included), and no throttle is left.
The steps are in tests/kafka/chaos.py; ``bench/execute_chaos.py`` runs them in a row."""

from __future__ import annotations

from pathlib import Path

import pytest

from scripts.kafka_cluster import KafkaCluster
from tests.kafka.chaos import chaos_run, problems
from tests.kafka.conftest import Topics


@pytest.mark.timeout(420)
@pytest.mark.parametrize("mode", ["finish", "cancel"])
def test_no_acknowledged_record_is_lost_while_brokers_the_controller_and_the_executor_crash(
        kafka: KafkaCluster, topics: Topics, tmp_path: Path, mode: str) -> None:
    outcome = chaos_run(kafka, tmp_path, topics.name(f"chaos-{mode}"), mode=mode)
    assert problems(outcome) == [], outcome
    assert outcome.acked > 1000 and outcome.lost == 0 and outcome.duplicated == 0
    assert [role for role, _, _ in outcome.restarts] == ["broker", "controller"]
