"""The KIP-409 intent workflow's pure parts (cli/intent.py): what CreateTopics gets, when a
partition is complete, which broker fills a placeholder, and the record on disk."""

from __future__ import annotations

import json

import pytest

from kafka_replica_assignor.cli.common import CommandError
from kafka_replica_assignor.cli.intent import (
    TopicIntent,
    creatable,
    is_complete,
    plan_completion,
    read_record,
    with_topic,
    write_record,
)
from kafka_replica_assignor.cli.main import main
from kafka_replica_assignor.cluster.snapshot import BrokerEntry, ClusterSnapshot, PartitionEntry

RACKS = {0: "a", 1: "b", 2: "c", 3: "a", 4: "b"}


def cluster(up, partitions=()) -> ClusterSnapshot:
    return ClusterSnapshot(tuple(BrokerEntry(b, RACKS[b]) for b in sorted(up)),
                           tuple(PartitionEntry("t", p, tuple(r)) for p, r in partitions))


def intent(replicas, alive=(0, 1, 2, 3)) -> TopicIntent:
    return TopicIntent("t", {p: tuple(r) for p, r in enumerate(replicas)}, frozenset(alive))


def test_create_with_the_fewest_alive_replicas_leader_first():
    answer = {0: [0, 1, 2], 1: [2, 0, -1], 2: [1, -1, 3]}
    assert creatable(answer) == {0: [0, 1], 1: [2, 0], 2: [1, 3]}


def test_complete_means_named_replicas_in_place_and_placeholders_filled():
    assert is_complete((2, 0, -1), (2, 0, 4))
    assert not is_complete((2, 0, -1), (2, 0))          # not filled yet
    assert not is_complete((2, 0, -1), (0, 2, 4))       # the leader moved
    assert is_complete((0, 1, 2), (0, 1, 2))


def test_right_after_creation_the_alive_replicas_come_back_and_placeholders_wait():
    record = intent([[0, 1, 2], [2, 0, -1]])
    done = plan_completion(record, cluster({0, 1, 2, 3}, [(0, [0, 1]), (1, [2, 0])]))
    assert dict(done.targets) == {0: (0, 1, 2)}
    assert done.complete == () and list(done.waiting) == [1]
    assert "no broker back" in done.waiting[1]


def test_a_broker_back_fills_the_placeholder_on_the_rack_the_partition_lacks():
    # 4 (rack b) was down at creation; partition 1 spans c and a: b is new, so 4
    record = intent([[0, 1, 2], [2, 0, -1]])
    done = plan_completion(record, cluster({0, 1, 2, 3, 4}, [(0, [0, 1, 2]), (1, [2, 0])]))
    assert dict(done.targets) == {1: (2, 0, 4)} and done.complete == (0,) and not done.waiting
    assert dict(done.filled) == {1: (4,)}


def test_only_brokers_back_fill_placeholders_and_fenced_ones_do_not_count():
    record = intent([[2, 0, -1]], alive=(0, 1, 2))  # 3 and 4 were down
    snapshot = cluster({0, 1, 2, 3, 4}, [(0, [2, 0])])
    assert dict(plan_completion(record, snapshot).targets) == {0: (2, 0, 4)}  # rack b is new: 4, not 3
    fenced = plan_completion(record, snapshot, fenced={4})
    assert dict(fenced.targets) == {0: (2, 0, 3)}  # 4 is not back yet; 3 is
    nobody = plan_completion(record, snapshot, fenced={3, 4})
    assert not nobody.targets and list(nobody.waiting) == [0]


def test_a_named_broker_down_now_makes_its_partition_wait():
    record = intent([[0, 1, -1]], alive=(0, 1, 2))
    done = plan_completion(record, cluster({0, 2, 3, 4}, [(0, [0, 1])]))
    assert not done.targets and done.waiting == {0: "broker(s) [1] down"}


def test_a_complete_partition_is_never_moved_again():
    record = intent([[2, 0, -1], [0, 1, -1]], alive=(0, 1, 2))
    # partition 0 was completed with 3 earlier; 4 is emptier now, but 0 stays as it is
    done = plan_completion(record, cluster({0, 1, 2, 3, 4}, [(0, [2, 0, 3]), (1, [0, 1])]))
    assert done.complete == (0,) and set(done.targets) == {1}


def test_a_deleted_topic_is_one_line():
    with pytest.raises(CommandError, match=r"lacks partitions \[1\]"):
        plan_completion(intent([[0, 1], [1, 0]]), cluster({0, 1}, [(0, [0, 1])]))


def test_record_round_trip_and_several_topics(tmp_path):
    path = tmp_path / "intent.json"
    first = TopicIntent("a", {0: (0, -1)}, frozenset({0, 1}), "2026-11-26T04:00:00Z")
    second = TopicIntent("b", {0: (1, -1), 1: (0, 1)}, frozenset({0, 1}))
    write_record(path, [first])
    write_record(path, with_topic(read_record(path), second))
    assert read_record(path) == [first, second]
    replaced = TopicIntent("a", {0: (1, -1)}, frozenset({1}))
    assert with_topic([first, second], replaced) == [second, replaced]
    assert read_record(tmp_path / "none.json", missing_ok=True) == []


@pytest.mark.parametrize("body, message", [
    ("not json", "intent file"),
    (json.dumps({"version": 2, "topics": []}), "version 1"),
    (json.dumps({"version": 1, "topics": [{"topic": "t", "alive_brokers": [0],
                                            "partitions": [{"partition": 0, "replicas": [-1, 0]}]}]}),
     "need a broker first"),
    (json.dumps({"version": 1, "topics": [{"topic": "t", "alive_brokers": [0],
                                            "partitions": [{"partition": 1, "replicas": [0]}]}]}),
     "partitions must be 0..N-1"),
])
def test_a_bad_record_is_bad_input(tmp_path, body, message):
    path = tmp_path / "intent.json"
    path.write_text(body)
    with pytest.raises(CommandError, match=message) as caught:
        read_record(path)
    assert caught.value.code == 2


def test_repair_flags_that_do_not_go_together(tmp_path, capsys):
    assert main(["repair", "--snapshot", str(tmp_path / "s.json"), "--execute"]) == 2
    assert "--execute needs --intent-file" in capsys.readouterr().err
    assert main(["repair", "--snapshot", str(tmp_path / "s.json"), "--intent-file", str(tmp_path / "i")]) == 2
    assert "--intent-file needs --bootstrap-server" in capsys.readouterr().err
    assert main(["repair", "--bootstrap-server", "127.0.0.1:1", "--intent-file", str(tmp_path / "none")]) == 2
    assert "no such file" in capsys.readouterr().err


class _RefusingAdmin:
    """CreateTopics answers TOPIC_ALREADY_EXISTS; nothing else is asked."""

    def create_topics(self, *_args, **_kwargs):
        return {"topics": [{"name": "t", "error_code": 36, "error_message": "Topic 't' already exists."}]}

    def close(self):
        pass


def test_a_refused_creation_leaves_the_record_as_it_was(tmp_path, monkeypatch, capsys):
    import argparse

    import kafka_replica_assignor.cli.intent as intent_module
    from kafka_replica_assignor.protocol.cluster_reader import ClusterRead

    path = tmp_path / "intent.json"
    kept = TopicIntent("other", {0: (0, -1)}, frozenset({0}))
    write_record(path, [kept])
    before = path.read_text()
    monkeypatch.setattr(intent_module, "open_admin", lambda *_: _RefusingAdmin())
    monkeypatch.setattr(intent_module, "_read", lambda _admin: ClusterRead(cluster({0, 1, 2})))
    args = argparse.Namespace(topic="t", intent_file=str(path), dry_run=False, bootstrap_server="k:9092",
                              timeout_ms=1000, command_config=None)
    with pytest.raises(CommandError, match=r"refused to create topic t: TopicAlreadyExistsError \(36\)"):
        intent_module.create_under_replicated(args, {0: [0, 1, -1]}, {})
    assert path.read_text() == before
    path.unlink()
    with pytest.raises(CommandError):
        intent_module.create_under_replicated(args, {0: [0, 1, -1]}, {})
    assert not path.exists()
    # without a record to write to, nothing is asked of the cluster: exit 2
    args.intent_file = None
    with pytest.raises(CommandError, match="give --intent-file") as caught:
        intent_module.create_under_replicated(args, {0: [0, 1, -1]}, {})
    assert caught.value.code == 2
    args.dry_run = True
    assert intent_module.create_under_replicated(args, {0: [0, 1, -1], 1: [1, 2, 0]}, {}) == 0
    out = capsys.readouterr()
    assert json.loads(out.out)["partitions"][0]["replicas"] == [0, 1] and "dry run: 1 placeholder(s)" in out.err
