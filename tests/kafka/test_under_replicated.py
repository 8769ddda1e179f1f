"""KIP-409 on Apache Kafka 4.3.1, end to end (cli/intent.py): brokers 3 and 4 stop and are
unregistered with Kafka's own ClusterTool (a stopped KRaft broker otherwise stays registered,
fenced, and Kafka accepts replicas on it: no placeholder is needed then, see
test_live_server.py); our server, following the cluster with
``enable.under.replicated.topic.creation=true``, answers placeholders for them; ``create-topic
--intent-file`` creates the topic with its alive replicas and records the placement; once the
brokers are back, ``repair --intent-file --execute`` adds the missing replicas through
AlterPartitionReassignments, and DescribeTopics shows every replica the assignor named in its
place, every placeholder filled by a broker that came back, the preferred leaders unchanged and
the ISR full."""

from __future__ import annotations

import json
from pathlib import Path

from scripts.kafka_cluster import KafkaCluster
from tests.kafka.conftest import Topics
from tests.kafka.following import (
    by_partition,
    cli,
    follower,
    refused_sockets,  # noqa: F401 - autouse fixture
    source,
    topic_state,
    unregister,
    wait_for,
)

DOWN = (3, 4)  # racks /dc1/zone-a and /dc1/zone-b: each has another broker (0 and 1) alive


def test_create_under_replicated_then_complete_when_the_brokers_are_back(
        kafka: KafkaCluster, topics: Topics, restarted: list[int], tmp_path: Path) -> None:
    topic, second = topics.name("kip409"), topics.name("kip409-tool")
    intent_file = tmp_path / "intent.json"
    with follower(kafka, tmp_path, enable_under_replicated_topic_creation="true",
                  min_insync_replicas="2") as server:
        assert set(source(server).view().broker_ids) == {0, 1, 2, 3, 4}  # observed, so expected back
        for broker in DOWN:
            kafka.stop_node(broker)
            restarted.append(broker)
        for broker in DOWN:
            kafka.wait_fenced(broker)
            unregister(kafka, broker, *DOWN)
        wait_for(lambda: {b.id for b in source(server).view().offline} == set(DOWN), what="3 and 4 offline")

        create = ["create-topic", "--bootstrap-server", kafka.bootstrap, "--assignor", server.bootstrap,
                  "--topic", topic, "--partitions", "6", "--replication-factor", "4"]
        refused = cli(*create)
        assert refused.returncode == 2 and "placeholder(s)" in refused.stderr and "--intent-file" in refused.stderr
        assert topic not in topic_state(kafka, topic, *DOWN) and not intent_file.exists()

        created = cli(*create, "--intent-file", str(intent_file))
        assert created.returncode == 0, created.stderr
        assert "created topic" in created.stderr and "under-replicated" in created.stderr
        # a second topic in the same record, completed below by Kafka's own reassignment tool
        also = cli(*create[:5], "--topic", second, "--partitions", "3", "--replication-factor", "4",
                   "--intent-file", str(intent_file))
        assert also.returncode == 0, also.stderr

    record = json.loads(intent_file.read_text())
    entry, other = record["topics"]
    assert other["topic"] == second and len(other["partitions"]) == 3
    assert entry["topic"] == topic and entry["alive_brokers"] == [0, 1, 2]
    intended = {p["partition"]: p["replicas"] for p in entry["partitions"]}
    assert sorted(intended) == list(range(6)) and all(len(r) == 4 for r in intended.values())
    assert any(b < 0 for r in intended.values() for b in r)
    assert all(r[0] >= 0 and {b for b in r if b >= 0} <= {0, 1, 2} for r in intended.values())
    alive_only = {p: [b for b in r if b >= 0] for p, r in intended.items()}
    assert by_partition(json.loads(created.stdout)) == alive_only

    # during the outage: every partition holds exactly its alive replicas, led by the intended leader
    during = wait_for(lambda: (s := topic_state(kafka, topic, *DOWN)) and all(
        list(s[p][0]) == alive_only[p] and s[p][1] == alive_only[p][0] for p in alive_only) and s,
        what="the alive replicas in place")
    assert set(during) == set(intended)

    early = cli("repair", "--intent-file", str(intent_file), "--bootstrap-server", kafka.bootstrap)
    assert early.returncode == 0, early.stderr
    assert json.loads(early.stdout)["partitions"] == [] and "6 waiting" in early.stderr
    assert "3 waiting" in early.stderr

    for broker in DOWN:
        kafka.start_node(broker)
    kafka.wait_ready(timeout=120)
    restarted.clear()

    # the plan without --execute is Kafka's reassignment JSON: Kafka's own tool applies the second topic's
    plan = cli("repair", "--intent-file", str(intent_file), "--bootstrap-server", kafka.bootstrap)
    assert plan.returncode == 0, plan.stderr
    planned = json.loads(plan.stdout)
    assert {p["topic"] for p in planned["partitions"]} <= {topic, second}
    tool_file = tmp_path / "second.json"
    tool_file.write_text(json.dumps({"version": 1, "partitions": [
        p for p in planned["partitions"] if p["topic"] == second]}))
    reassign = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"
    executed = kafka.tool(reassign, "--bootstrap-server", kafka.bootstrap, "--reassignment-json-file",
                          str(tool_file), "--execute")
    assert executed.returncode == 0, executed.stdout + executed.stderr
    wait_for(lambda: "is still in progress" not in (v := kafka.tool(
        reassign, "--bootstrap-server", kafka.bootstrap, "--reassignment-json-file", str(tool_file),
        "--verify")).stdout and v.returncode == 0, what="Kafka's tool: reassignment complete")

    repaired = cli("repair", "--intent-file", str(intent_file), "--bootstrap-server", kafka.bootstrap,
                   "--execute", "--timeout-ms", "60000")
    assert repaired.returncode == 0, repaired.stderr
    assert f"complete, removed from {intent_file}: {topic}, {second}" in repaired.stderr
    assert f"topic {second}: 0 partition(s) to reassign" in repaired.stderr  # Kafka's tool did it
    done_by_tool = topic_state(kafka, second)
    for p in other["partitions"]:
        replicas = done_by_tool[p["partition"]][0]
        assert [b for b, i in zip(replicas, p["replicas"], strict=True) if i >= 0] == [
            b for b in p["replicas"] if b >= 0] and set(replicas) - set(p["replicas"]) <= set(DOWN)
    assert json.loads(intent_file.read_text())["topics"] == []

    final = wait_for(lambda: (s := topic_state(kafka, topic)) and all(
        sorted(s[p][2]) == sorted(s[p][0]) for p in s) and s, what="a full ISR")
    for p, reps in intended.items():
        replicas, leader, _ = final[p]
        assert len(replicas) == 4 and len(set(replicas)) == 4, (p, replicas)
        assert [b for b, i in zip(replicas, reps, strict=True) if i >= 0] == alive_only[p], (p, replicas, reps)
        fills = [b for b, i in zip(replicas, reps, strict=True) if i < 0]
        assert set(fills) <= set(DOWN), (p, replicas, reps)  # the placeholders went to the brokers back
        assert leader == reps[0]
        # a rack-aware answer: each partition spans the three racks once complete
        assert {kafka.node(b).rack for b in replicas} == {"/dc1/zone-a", "/dc1/zone-b", "/dc2/zone-a"}

    again = cli("repair", "--intent-file", str(intent_file), "--bootstrap-server", kafka.bootstrap, "--execute")
    assert again.returncode == 0 and json.loads(again.stdout)["partitions"] == []
