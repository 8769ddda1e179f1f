"""Kafka's topic name rule (``Topic.validate``): 1-249 characters of ``[a-zA-Z0-9._-]``, not ``.``
or ``..``; a broken name is INVALID_TOPIC_EXCEPTION (17) with Kafka's message, checked before
anything else of the request; no name (v0, or a null TopicName in v1) is allowed. Over the wire: tests/e2e/test_topic_names.py."""

from __future__ import annotations

import kafka.errors as kafka_errors
import pytest

from kafka_replica_assignor.assignors import ClusterView
from kafka_replica_assignor.assignors.errors import InvalidTopicError
from kafka_replica_assignor.assignors.validate import check_topic_name
from kafka_replica_assignor.protocol.errors import error_for_exception
from kafka_replica_assignor.protocol.messages import CreateReplicaAssignmentRequest
from kafka_replica_assignor.server.handlers.create_replica_assignment import interpret

VIEW = ClusterView.of([(0, None), (1, None), (2, None)])


@pytest.mark.parametrize("name", ["t", "orders", "a.b_c-D9", "x" * 249, "...", ".a", "__consumer_offsets", None])
def test_valid_names_and_no_name_pass(name):
    check_topic_name(name)


@pytest.mark.parametrize("name, message", [
    ("", "Topic name is invalid: the empty string is not allowed"),
    (".", "Topic name is invalid: '.' is not allowed"),
    ("..", "Topic name is invalid: '..' is not allowed"),
    ("x" * 250, f"Topic name is invalid: the length of '{'x' * 250}' is longer than the max allowed length 249"),
    ("a b", "Topic name is invalid: 'a b' contains one or more characters other than ASCII alphanumerics, "
            "'.', '_' and '-'"),
    ("t/1", "Topic name is invalid: 't/1' contains one or more characters other than ASCII alphanumerics, "
            "'.', '_' and '-'"),
    ("café", "Topic name is invalid: 'café' contains one or more characters other than ASCII alphanumerics, "
             "'.', '_' and '-'"),
    # Java counts UTF-16 code units: 125 characters outside the BMP are 250 of them
    ("\U0001F600" * 125, f"Topic name is invalid: the length of '{chr(0x1F600) * 125}' is longer than the "
                         f"max allowed length 249"),
])
def test_invalid_names_get_kafkas_message_and_code_17(name, message):
    with pytest.raises(InvalidTopicError) as caught:
        check_topic_name(name)
    assert caught.value.message == message
    assert error_for_exception(caught.value) is kafka_errors.InvalidTopicError
    assert kafka_errors.InvalidTopicError.errno == 17


def test_the_request_reader_checks_the_name_first_and_lets_null_through():
    bad = CreateReplicaAssignmentRequest(version=1, num_partitions=0, replication_factor=9, node_id=[7],
                                         topic_name="no spaces", current_assignment=[], timeout_ms=1000)
    with pytest.raises(InvalidTopicError):  # before the partition count, the NodeId list, ...
        interpret(bad, 1, VIEW, 100)
    null = CreateReplicaAssignmentRequest(version=1, num_partitions=3, replication_factor=2, node_id=[],
                                          topic_name=None, current_assignment=[], timeout_ms=1000)
    assert interpret(null, 1, VIEW, 100).spec.topic_name == ""  # placed under no name
    v0 = CreateReplicaAssignmentRequest(version=0, num_partitions=3, replication_factor=2, node_id=[],
                                        timeout_ms=1000)
    assert interpret(v0, 0, VIEW, 100).spec.topic_name == ""
