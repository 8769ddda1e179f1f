"""``replica-assignor execute`` under faults (issue 31): while a plan of 60 moves runs and an
idempotent producer (``acks=all``, ``min.insync.replicas=2``) writes numbered records that a
consumer reads, a broker in a move in flight is killed (SIGKILL) and restarted, then the active
controller, then the executor (``kill -9``), which is started again and left to finish or
cancelled. Every acknowledged record is in the log, no partition stays below
``min.insync.replicas`` longer than a restart, every partition ends at its planned replicas
(or, cancelled, at its starting or planned ones, order included), and no throttle is left.

A number the log holds twice fails the run unless Kafka's own dump of the log shows its two
copies written by one producer id in two epochs: the client sent it again after bumping its
epoch, which librdkafka does on an out-of-order-sequence answer during a leader change (its
issue 4953) and no broker can tell from a new record (:class:`tests.kafka.chaos.Twice`; the second
test proves the tell on records written so on purpose). The steps are in tests/kafka/chaos.py;
``bench/execute_chaos.py`` runs them in a row."""

from __future__ import annotations

from pathlib import Path

import pytest

from scripts.kafka_cluster import KafkaCluster
from tests.kafka.chaos import chaos_run, find_twice, problems
from tests.kafka.conftest import Topics
from tests.kafka.test_execute import create_topic


@pytest.mark.timeout(420)
@pytest.mark.parametrize("mode", ["finish", "cancel"])
def test_no_acknowledged_record_is_lost_while_brokers_the_controller_and_the_executor_crash(
        kafka: KafkaCluster, topics: Topics, tmp_path: Path, mode: str) -> None:
    outcome = chaos_run(kafka, tmp_path, topics.name(f"chaos-{mode}"), mode=mode)
    assert problems(outcome) == [], outcome
    assert outcome.acked > 1000 and outcome.lost == 0 and outcome.duplicated == outcome.client_duplicated
    assert [role for role, _, _ in outcome.restarts] == ["broker", "controller"]


def test_a_number_written_twice_is_told_apart_by_its_producer_epoch(kafka: KafkaCluster, topics: Topics) -> None:
    """Two copies written by one producer id in two epochs (a transactional producer started
    again under its transactional.id: Kafka bumps the epoch, as a client's epoch bump does) are
    the client's resend; two copies from two producers are not."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

    name = topics.name("twice")
    create_topic(kafka.bootstrap, name, {0: (0, 1, 2)})
    txn = f"twice-{name}"
    for _ in range(2):                   # one producer id, epochs e and e + 1
        producer = Producer({"bootstrap.servers": kafka.bootstrap, "transactional.id": txn})
        producer.init_transactions(60)
        producer.begin_transaction()
        producer.produce(name, key=b"7", value=b"7", partition=0)
        producer.commit_transaction(60)
    for _ in range(2):                   # two producer ids
        producer = Producer({"bootstrap.servers": kafka.bootstrap, "enable.idempotence": True})
        producer.produce(name, key=b"8", value=b"8", partition=0)
        assert producer.flush(60) == 0
    consumer = Consumer({"bootstrap.servers": kafka.bootstrap, "group.id": f"g-{name}", "enable.auto.commit": False,
                         "isolation.level": "read_committed"})
    consumer.assign([TopicPartition(name, 0, OFFSET_BEGINNING)])
    numbers: dict[tuple[int, int], int] = {}
    try:
        while len(numbers) < 4:
            msgs = consumer.consume(10, timeout=5)
            assert msgs, f"only {numbers} read"
            for msg in msgs:
                assert msg.error() is None, msg.error()
                numbers[(msg.partition(), msg.offset())] = int(msg.key())
    finally:
        consumer.close()
    found = {t.number: t for t in find_twice(kafka, name, numbers, {7, 8})}
    assert set(found) == {7, 8}
    seven, eight = found[7], found[8]
    assert all(b is not None for b in seven.batches + eight.batches), (seven, eight)
    assert seven.epoch_bump and seven.batches[0][0] == seven.batches[1][0]                    # type: ignore[index]
    assert seven.batches[1][1] == seven.batches[0][1] + 1                                     # type: ignore[index]
    assert not eight.epoch_bump and eight.batches[0][0] != eight.batches[1][0]                # type: ignore[index]
    assert "the client's epoch bump" in seven.text() and "not the client's" in eight.text()
