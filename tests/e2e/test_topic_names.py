"""A real server answers a broken topic name with INVALID_TOPIC_EXCEPTION (17) and Kafka's
message, and serves valid or absent names (the rule itself: tests/unit/test_topic_name.py)."""

from __future__ import annotations

import kafka.errors as kafka_errors
import pytest

from kafka_replica_assignor.protocol.client import ReplicaAssignorAdminClient
from tests.servers import ServerThread


def test_the_server_answers_invalid_topic_exception():
    with ServerThread() as server, ReplicaAssignorAdminClient(server.bootstrap) as client:
        with pytest.raises(kafka_errors.InvalidTopicError, match=r"Topic name is invalid: '\.\.' is not allowed"):
            client.create_replica_assignment(3, 2, topic="..")
        assert len(client.create_replica_assignment(3, 2, topic="orders.v2").assignments()) == 3
        assert len(client.create_replica_assignment(3, 2).assignments()) == 3
