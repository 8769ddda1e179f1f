"""Stock Kafka clients against the real server on a real socket (port 0).

kafka-python's ``KafkaAdminClient`` and aiokafka's ``AIOKafkaClient`` bootstrap against
the server (ApiVersions, then Metadata) and send our schema-driven
``CreateReplicaAssignmentRequest`` through their own connection machinery.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path

import kafka.errors as kafka_errors
import pytest
from aiokafka.client import AIOKafkaClient
from kafka.admin import KafkaAdminClient
from kafka.protocol.api_header import ResponseClassRegistry

from kafka_replica_assignor.cluster.snapshot import ClusterSnapshot
from kafka_replica_assignor.protocol.messages import (
    CREATE_REPLICA_ASSIGNMENT_API_KEY,
    CreateReplicaAssignmentRequest,
    CreateReplicaAssignmentResponse,
)
from kafka_replica_assignor.server.config import default_cluster_file
from tests.aiokafka_compat import AiokafkaRequest

RACK_OF = ClusterSnapshot.from_json(
    Path(default_cluster_file()).read_text(encoding="utf-8")).cluster_view().rack_by_broker


def _assignment(response) -> dict[int, list[int]]:
    assert response.error_code == 0, response.error_message
    assert response.error_message is None
    return {e.partition_id: list(e.replicas) for e in response.replica_assignment}


def _assert_placement(assignment: dict[int, list[int]], n: int, rf: int) -> None:
    """RF distinct brokers of the cluster, every partition id once, racks spread, leaders even."""
    assert sorted(assignment) == list(range(n))
    for p, replicas in assignment.items():
        assert len(replicas) == rf and len(set(replicas)) == rf, (p, replicas)
        assert set(replicas) <= set(RACK_OF), (p, replicas)
        assert len({RACK_OF[b] for b in replicas}) == rf, (p, replicas)
    leaders = Counter(r[0] for r in assignment.values())
    assert max(leaders.values()) - min(leaders.values(), default=0) <= 1
    assert len(leaders) == min(n, len(RACK_OF))


def _kafka_python_send(admin: KafkaAdminClient, request, node_id: int):
    """Send on kafka-python's IO thread, through its connection to ``node_id``."""
    return admin._manager.run(admin._manager.send, request, node_id)


@pytest.fixture
def kafka_admin(server):
    admin = KafkaAdminClient(bootstrap_servers=server.bootstrap, client_id="e2e-kafka-python",
                             request_timeout_ms=10_000)
    try:
        yield admin
    finally:
        admin.close()


def test_kafka_python_admin_bootstraps_against_the_server(server, kafka_admin) -> None:
    cluster = kafka_admin.describe_cluster()
    assert cluster["cluster_id"] == "replica-assignor"
    assert cluster["controller_id"] == 0
    assert cluster["brokers"] == [{"broker_id": 0, "host": "127.0.0.1", "port": server.port, "rack": None}]
    versions = kafka_admin.get_broker_version_data(0).api_versions
    assert versions[CREATE_REPLICA_ASSIGNMENT_API_KEY] == CreateReplicaAssignmentRequest.valid_versions


NEWEST = CreateReplicaAssignmentRequest.valid_versions[1]


@pytest.mark.parametrize("version", [0, 1, 2, None])
def test_kafka_python_admin_gets_an_assignment(kafka_admin, version: int | None) -> None:
    """``None``: kafka-python negotiates the version from the server's ApiVersions (the newest)."""
    fields = dict(num_partitions=12, replication_factor=3, force_simple_assignment=False, node_id=[],
                  timeout_ms=10_000)
    request = (CreateReplicaAssignmentRequest(**fields) if version is None
               else CreateReplicaAssignmentRequest(version=version, **fields))
    response = _kafka_python_send(kafka_admin, request, 0)
    assert isinstance(response, CreateReplicaAssignmentResponse)
    assert response.API_VERSION == (NEWEST if version is None else version)
    _assert_placement(_assignment(response), 12, 3)


def test_kafka_python_admin_gets_error_fields(kafka_admin) -> None:
    for version in (0, 1):
        request = CreateReplicaAssignmentRequest(version=version, num_partitions=3, replication_factor=2,
                                                 node_id=[1, 99], timeout_ms=10_000)
        response = _kafka_python_send(kafka_admin, request, 0)
        assert response.error_code == kafka_errors.BrokerNotAvailableError.errno
        assert "99" in response.error_message
        assert response.replica_assignment == []
    request = CreateReplicaAssignmentRequest(version=0, num_partitions=3, replication_factor=7, node_id=[])
    response = _kafka_python_send(kafka_admin, request, 0)
    assert response.error_code == kafka_errors.InvalidReplicationFactorError.errno
    assert response.error_message.startswith("Replication factor: 7 larger than available brokers: 6")


def test_kafka_python_admin_node_id_list_is_honoured(kafka_admin) -> None:
    request = CreateReplicaAssignmentRequest(version=0, num_partitions=9, replication_factor=2,
                                             node_id=[1, 3, 5], timeout_ms=10_000)
    assignment = _assignment(_kafka_python_send(kafka_admin, request, 0))
    assert sorted(assignment) == list(range(9))
    assert Counter(b for r in assignment.values() for b in r) == {1: 6, 3: 6, 5: 6}


def test_importing_our_messages_keeps_kafka_pythons_response_registry() -> None:
    """kafka-python keeps one response class per apiKey; apiKey 68 is ConsumerGroupHeartbeat
    upstream. Whatever was registered before our import is still registered after it, and
    after our classes were used; nothing is registered when nothing was."""
    script = textwrap.dedent("""
        from kafka.protocol.api_header import ResponseClassRegistry
        registry = ResponseClassRegistry._response_class_registry
        sentinel = object()
        registry[68] = sentinel          # stands for kafka-python's ConsumerGroupHeartbeatResponse
        before = dict(registry)
        import kafka_replica_assignor.protocol.messages as m
        req = m.CreateReplicaAssignmentRequest(version=1, num_partitions=1, replication_factor=1)
        req.with_header(correlation_id=1, client_id="x")
        assert req.header.get_response_class() is m.CreateReplicaAssignmentResponse[1]
        assert registry[68] is sentinel, registry[68]
        assert dict(registry) == before
        print("ok")
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ok"
    # and in this process, where kafka-python has no class for 68: nothing got registered
    registered = ResponseClassRegistry._response_class_registry.get(CREATE_REPLICA_ASSIGNMENT_API_KEY)
    assert registered is None or "CreateReplicaAssignment" not in repr(registered)


async def test_aiokafka_client_bootstraps_and_gets_an_assignment(server) -> None:
    client = AIOKafkaClient(bootstrap_servers=server.bootstrap, client_id="e2e-aiokafka",
                            request_timeout_ms=10_000)
    try:
        await client.bootstrap()
        brokers = client.cluster.brokers()
        assert [(b.nodeId, b.host, b.port, b.rack) for b in brokers] == [(0, "127.0.0.1", server.port, None)]
        request = AiokafkaRequest(CreateReplicaAssignmentRequest, num_partitions=12, replication_factor=3,
                                  force_simple_assignment=False, node_id=[], timeout_ms=10_000)
        response = await client.send(0, request)
        assert isinstance(response, CreateReplicaAssignmentResponse)
        assert response.API_VERSION == NEWEST
        _assert_placement(_assignment(response), 12, 3)
        # an error response is decoded too, with its message
        refused = await client.send(0, AiokafkaRequest(CreateReplicaAssignmentRequest, num_partitions=0,
                                                       replication_factor=3, node_id=[]))
        assert refused.error_code == kafka_errors.InvalidPartitionsError.errno
        assert refused.error_message == "Number of partitions must be larger than 0."
        # several in flight on aiokafka's one connection, answered in order
        requests = [AiokafkaRequest(CreateReplicaAssignmentRequest, num_partitions=n, replication_factor=2,
                                    node_id=[]) for n in (1, 30, 2, 60, 3)]
        responses = await asyncio.gather(*(client.send(0, r) for r in requests))
        assert [len(r.replica_assignment) for r in responses] == [1, 30, 2, 60, 3]
    finally:
        await client.close()


def test_aiokafka_adapter_refuses_a_version_the_broker_lacks() -> None:
    request = AiokafkaRequest(CreateReplicaAssignmentRequest, min_version=1, num_partitions=1,
                              replication_factor=1)
    with pytest.raises(kafka_errors.IncompatibleBrokerVersion, match="v0-v0"):
        request.prepare({CREATE_REPLICA_ASSIGNMENT_API_KEY: (0, 0)})
    with pytest.raises(kafka_errors.IncompatibleBrokerVersion, match="apiKey 68"):
        request.prepare({18: (0, 3)})
    assert request.prepare({CREATE_REPLICA_ASSIGNMENT_API_KEY: (0, 7)}).API_VERSION == NEWEST
    assert request.prepare({CREATE_REPLICA_ASSIGNMENT_API_KEY: (0, 1)}).API_VERSION == 1
