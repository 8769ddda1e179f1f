"""The watcher's status as a reader sees it: a read is a consistent state that later updates
never change (the status replaces what it updates, so a read copies only the top of each part),
and the figures a web page draws: rack paths, bytes and the bands of the goals that own them."""

from __future__ import annotations

import copy
import time
from fractions import Fraction

from kafka_replica_assignor.cluster.snapshot import BrokerEntry, ClusterSnapshot, PartitionEntry
from kafka_replica_assignor.planner.goals.replica_bytes import byte_band
from kafka_replica_assignor.planner.goals.replica_counts import band
from kafka_replica_assignor.watcher.decisions import View
from kafka_replica_assignor.watcher.status import WatchStatus


def view(read_at: float) -> View:
    brokers = (BrokerEntry(0, "/dc1/r1"), BrokerEntry(1, "/dc1/r2"), BrokerEntry(2, "/dc2"))
    parts = tuple(PartitionEntry("t", p, (p % 3, (p + 1) % 3), p % 3, None, 100 * (p + 1)) for p in range(6))
    return View(ClusterSnapshot(brokers, parts), frozenset({2}), frozenset(), read_at)


def test_a_read_is_never_changed_by_later_updates() -> None:
    status = WatchStatus()
    status.saw(view(time.time()), {})
    record = {"ts": 1.0, "event": "decided", "kind": "placement", "action": "place", "subject": "t",
              "moves": [{"topic": "t", "partition": 0, "from": [0, 1], "to": [1, 2]}]}
    status.record(record)
    record["moves"].append({"changed": "by the caller"})       # the caller's dict is not the status's
    status.executing("placement", "t", "/plans/00001-placement")
    status.progress("progress", {"moves_done": 1, "moves_total": 4})
    before = status.read()
    frozen = copy.deepcopy(before)
    status.progress("progress", {"moves_done": 2, "moves_total": 4})
    status.lost()
    status.record({"ts": 2.0, "event": "executed", "kind": "placement", "subject": "t", "status": "done"})
    status.executed("done")
    status.saw(view(time.time()), {2: 1.0})
    assert before == frozen
    assert len(before["decisions"][0]["moves"]) == 1
    after = status.read()
    assert after["execution"] is None and after["last_execution"]["status"] == "done"
    assert after["last_execution"]["progress"] == {"moves_done": 2, "moves_total": 4}


def test_the_cluster_has_rack_paths_bytes_and_the_goals_bands() -> None:
    status = WatchStatus()
    status.saw(view(time.time()), {2: 5.0})
    cluster = status.read()["cluster"]
    brokers = {b["id"]: b for b in cluster["brokers"]}
    assert [brokers[b]["rack_path"] for b in range(3)] == [["dc1", "r1"], ["dc1", "r2"], ["dc2", "dc2"]]
    assert brokers[2]["state"] == "fenced" and brokers[2]["down_since"] == 5.0
    assert sum(b["bytes"] for b in brokers.values()) == 2 * sum(100 * (p + 1) for p in range(6))
    ten = Fraction(1, 10)
    assert cluster["bands"] == {"replicas": list(band(12, 2, ten)), "leaders": list(band(6, 2, ten)),
                                "bytes": list(byte_band(2 * 2100, 2, ten, 600))}
