"""Against Tansu, a real third-party Kafka-protocol broker (node 111, no rack): our
clients refuse fast and clearly, since there apiKey 68 is not CreateReplicaAssignment;
and kafka-python's own clients keep working against it in a process that loaded our
message classes.
"""

from __future__ import annotations

import subprocess
import sys
import time

import pytest
from kafka.admin import KafkaAdminClient

from kafka_replica_assignor.protocol.client import (
    AsyncReplicaAssignorAdminClient,
    NotAReplicaAssignorError,
    ReplicaAssignorAdminClient,
)
from kafka_replica_assignor.protocol.messages import CreateReplicaAssignmentRequest

pytestmark = pytest.mark.tansu

FAST_S = 5.0


def test_sync_client_refuses_fast_with_a_clear_message(tansu) -> None:
    started = time.monotonic()
    with pytest.raises(NotAReplicaAssignorError) as raised:
        with ReplicaAssignorAdminClient(tansu.bootstrap, request_timeout_ms=30_000) as admin:
            admin.create_replica_assignment(12, 1)
    assert time.monotonic() - started < FAST_S
    message = str(raised.value)
    assert "not a replica assignor" in message
    assert tansu.bootstrap in message


async def test_async_client_refuses_fast_with_a_clear_message(tansu) -> None:
    started = time.monotonic()
    with pytest.raises(NotAReplicaAssignorError) as raised:
        async with AsyncReplicaAssignorAdminClient(tansu.bootstrap, request_timeout_ms=30_000) as admin:
            await admin.create_replica_assignment(12, 1)
    assert time.monotonic() - started < FAST_S
    assert "not a replica assignor" in str(raised.value)


def test_cli_assign_against_tansu_fails_with_one_line(tansu) -> None:
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "kafka_replica_assignor.cli.main", "assign", "--bootstrap-server", tansu.bootstrap,
         "--partitions", "3", "--replication-factor", "1"],
        capture_output=True, text=True, timeout=60)
    assert time.monotonic() - started < FAST_S + 5  # includes interpreter start-up
    assert proc.returncode != 0
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "not a replica assignor" in lines[0]


def test_kafka_python_admin_still_works_against_tansu_and_our_server_in_one_process(tansu, server) -> None:
    with_tansu = KafkaAdminClient(bootstrap_servers=tansu.bootstrap, client_id="e2e-tansu",
                                  request_timeout_ms=10_000)
    with_ours = KafkaAdminClient(bootstrap_servers=server.bootstrap, client_id="e2e-ours",
                                 request_timeout_ms=10_000)
    try:
        cluster = with_tansu.describe_cluster()
        assert [b["broker_id"] for b in cluster["brokers"]] == [111]
        assert cluster["controller_id"] == 111
        assert with_ours.describe_cluster()["controller_id"] == 0
        request = CreateReplicaAssignmentRequest(version=0, num_partitions=4, replication_factor=2, node_id=[])
        response = with_ours._manager.run(with_ours._manager.send, request, 0)
        assert response.error_code == 0
        assert len(response.replica_assignment) == 4
        # kafka-python's own request/response pairs still decode against Tansu
        assert [b["broker_id"] for b in with_tansu.describe_cluster()["brokers"]] == [111]
        assert "e2e-tansu-topic" not in with_tansu.list_topics()
    finally:
        with_tansu.close()
        with_ours.close()
