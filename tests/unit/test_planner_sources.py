"""Inputs: ``kafka-topics.sh --describe`` text with a racks file (the live cluster source runs
against Tansu in ``tests/e2e/test_planner_live_tansu.py``)."""

from __future__ import annotations

import pytest

from kafka_replica_assignor.planner.inputs.sources import SourceError, from_describe, parse_racks
from kafka_replica_assignor.planner.report.cluster_report import describe

# kafka-topics.sh --bootstrap-server ... --describe, Kafka 3.7 (KRaft), tabs as printed
DESCRIBE = (
    "Topic: orders\tTopicId: 7Gx2Zq5hQ3KkVZr1m2lHfw\tPartitionCount: 3\tReplicationFactor: 3\t"
    "Configs: min.insync.replicas=2,segment.bytes=1073741824\n"
    "\tTopic: orders\tPartition: 0\tLeader: 1\tReplicas: 1,2,3\tIsr: 1,2,3\tElr: \tLastKnownElr: \n"
    "\tTopic: orders\tPartition: 1\tLeader: 2\tReplicas: 2,3,1\tIsr: 2,3\tElr: \tLastKnownElr: \n"
    "\tTopic: orders\tPartition: 2\tLeader: none\tReplicas: 3,1,4\tIsr: \tElr: \tLastKnownElr: \tOffline: 4\n"
    "Topic: payments.v2\tTopicId: Qm3b2c0nS1y9XHcQ0mX2Aw\tPartitionCount: 2\tReplicationFactor: 2\tConfigs: \n"
    "\tTopic: payments.v2\tPartition: 0\tLeader: 1\tReplicas: 1,3\tIsr: 1,3\tElr: \tLastKnownElr: \n"
    "\tTopic: payments.v2\tPartition: 1\tLeader: 3\tReplicas: 3,2\tIsr: 3,2\tElr: \tLastKnownElr: \n"
    # the pre-2.x header style, still seen in old runbooks
    "Topic:legacy\tPartitionCount:1\tReplicationFactor:2\tConfigs:\n"
    "\tTopic: legacy\tPartition: 0\tLeader: 2\tReplicas: 2,5\tIsr: 2\n"
)
RACKS = """\
# broker  rack
1 /dc1/r1
2=/dc1/r2
3, /dc2/r1
4 /dc2/r2 dead
"""


def test_describe_and_racks_make_a_snapshot():
    snap = from_describe(DESCRIBE, RACKS)
    assert [(b.id, b.rack, b.alive) for b in snap.brokers] == [
        (1, "/dc1/r1", True), (2, "/dc1/r2", True), (3, "/dc2/r1", True), (4, "/dc2/r2", False)]
    parts = {(p.topic, p.partition): p for p in snap.partitions}
    assert len(parts) == 6
    assert parts[("orders", 2)].replicas == (3, 1, 4) and parts[("orders", 2)].leader is None
    assert parts[("orders", 1)].isr == (2, 3)
    assert parts[("payments.v2", 1)].replicas == (3, 2)
    assert parts[("legacy", 0)].replicas == (2, 5)
    state = describe(snap)
    assert [m.broker for m in state.on_dead] == [4]
    assert [m.broker for m in state.on_unknown] == [5]


@pytest.mark.parametrize("text, message", [
    ("1 r1\nx r2\n", "line 2"),
    ("1 r1\n1 r2\n", "listed twice"),
    ("# nothing\n", "no broker"),
    ("1 a b c\n", "too many fields"),
])
def test_bad_racks_files(text, message):
    with pytest.raises(SourceError, match=message):
        parse_racks(text)


def test_bad_describe_text():
    with pytest.raises(SourceError, match="no 'Topic"):
        from_describe("nothing useful\n", RACKS)
    with pytest.raises(SourceError, match="twice"):
        from_describe("\tTopic: t\tPartition: 0\tLeader: 1\tReplicas: 1,1\tIsr: 1\n", RACKS)
    with pytest.raises(SourceError, match="not a list of broker ids"):
        from_describe("\tTopic: t\tPartition: 0\tLeader: 1\tReplicas: 1,x\tIsr: 1\n", RACKS)
