"""The watcher's decision core against fake views: placement by profile, the ledger's topics,
dead brokers with their cluster-wide check, the ledger and the audit log on disk, the status."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kafka_replica_assignor.assignors.model import BrokerMetadata
from kafka_replica_assignor.cluster.snapshot import BrokerEntry, ClusterSnapshot, PartitionEntry
from kafka_replica_assignor.watcher.audit import AuditLog, read_audit
from kafka_replica_assignor.watcher.decisions import (
    MISSING_S,
    Candidate,
    Rules,
    View,
    heal_targets,
    judge_heal,
    judge_placement,
    placement_work,
    stale,
    track_down,
)
from kafka_replica_assignor.watcher.ledger import Ledger
from kafka_replica_assignor.watcher.profile import equivalent, levels
from kafka_replica_assignor.watcher.status import WatchStatus

#: the Kafka tests' racks: node i on RACKS[i % 3]
RACKS = ("/dc1/zone-a", "/dc1/zone-b", "/dc2/zone-a")
BROKERS = tuple(BrokerEntry(i, RACKS[i % 3]) for i in range(5))
TREE = levels([BrokerMetadata(b.id, b.rack) for b in BROKERS])
#: one replica per data centre (broker 2 is all of /dc2): the multi-level assignor's answer
MULTI = {p: ((0, 1, 3, 4)[p % 4], 2) if p % 2 == 0 else (2, (0, 1, 3, 4)[p % 4]) for p in range(4)}
#: Kafka's striped placer over three flat racks: some partitions in /dc1 only
STRIPED = {0: (0, 1), 1: (1, 2), 2: (2, 3), 3: (3, 4)}


def view(topics: dict[str, dict[int, tuple[int, ...]]], *, fenced: frozenset[int] = frozenset(),
         brokers: tuple[BrokerEntry, ...] = BROKERS, size: int | None = 0, ongoing: frozenset = frozenset(),
         read_at: float = 1000.0) -> View:
    parts = tuple(PartitionEntry(t, p, r, leader=r[0], size_bytes=size)
                  for t, a in sorted(topics.items()) for p, r in sorted(a.items()))
    return View(ClusterSnapshot(brokers, parts), fenced, ongoing, read_at)


# ---- profiles --------------------------------------------------------------------------------

def test_a_striped_placement_is_not_the_multi_level_ones_but_a_relabelled_one_is() -> None:
    assert not equivalent(STRIPED, MULTI, TREE)
    swapped = {p: tuple({0: 3, 3: 0, 1: 4, 4: 1}.get(b, b) for b in r) for p, r in MULTI.items()}
    assert swapped != MULTI and equivalent(swapped, MULTI, TREE)


def test_a_broker_the_assignor_keeps_away_from_counts() -> None:
    flat = levels([BrokerMetadata(i) for i in range(4)])
    avoid_3 = {0: (0, 1), 1: (1, 2), 2: (2, 0), 3: (0, 1)}
    uses_all = {0: (0, 1), 1: (1, 2), 2: (2, 3), 3: (3, 0)}
    assert not equivalent(uses_all, avoid_3, flat)


def test_brokers_without_racks_beside_racked_ones_are_read_flat() -> None:
    tree = levels([BrokerMetadata(0, "a"), BrokerMetadata(1), BrokerMetadata(2, "a")])
    assert tree[0] == {0: ("a",), 1: ("",), 2: ("a",)}


# ---- placement -------------------------------------------------------------------------------

def test_new_and_grown_topics_are_judged_the_others_settled() -> None:
    rules = Rules(exclude_topics="skip-.*")
    v = view({"new": STRIPED, "grown": STRIPED, "old": STRIPED, "skip-me": STRIPED, "__consumer_offsets": STRIPED,
              "ours": STRIPED})
    work, after, missing = placement_work(v, {"grown": 2, "old": 4, "deleted": 3}, rules, ours=["ours"],
                                          missing={"deleted": 1000.0 - MISSING_S}, now=1000.0)
    assert [(c.topic, c.settled) for c in work] == [("grown", 2), ("new", 0)]
    assert after == {"grown": 2, "old": 4, "skip-me": 4, "__consumer_offsets": 4, "ours": 4}
    assert missing == {}


def test_a_topic_missing_from_a_view_is_forgotten_only_after_the_grace_period() -> None:
    settled = {"t": 4, "u": 4}
    work, after, missing = placement_work(view({"u": STRIPED}), settled, Rules(), now=1000.0)
    assert work == [] and after == settled and missing == {"t": 1000.0}     # one view without it proves nothing
    work, after, missing = placement_work(view({"t": STRIPED, "u": STRIPED}), after, Rules(), missing=missing,
                                          now=1005.0)
    assert work == [] and after == settled and missing == {}                # back: settled as it was, not new
    _, after, missing = placement_work(view({"u": STRIPED}), after, Rules(), missing=missing, now=2000.0)
    _, after, missing = placement_work(view({"u": STRIPED}), after, Rules(), missing=missing,
                                       now=2000.0 + MISSING_S - 1)
    assert after == settled and missing == {"t": 2000.0}
    _, after, missing = placement_work(view({"u": STRIPED}), after, Rules(), missing=missing,
                                       now=2000.0 + MISSING_S)
    assert after == {"u": 4} and missing == {}                              # gone for the grace period: forgotten
    work, _, _ = placement_work(view({"t": STRIPED, "u": STRIPED}), after, Rules(), missing=missing, now=3000.0)
    assert [c.topic for c in work] == ["t"]                                 # and judged again as new


def test_a_topic_off_the_assignors_placement_is_moved_whole() -> None:
    v = view({"t": STRIPED})
    decision = judge_placement(Candidate("t", STRIPED, 0), MULTI, v, Rules())
    assert decision.action == "place" and decision.acts
    assert dict(decision.targets) == {("t", p): r for p, r in MULTI.items() if r != STRIPED[p]}
    assert all(decision.starting[k] == STRIPED[k[1]] for k in decision.targets)


def test_an_equivalent_placement_is_left_alone() -> None:
    swapped = {p: tuple({0: 3, 3: 0}.get(b, b) for b in r) for p, r in MULTI.items()}
    decision = judge_placement(Candidate("t", swapped, 0), MULTI, view({"t": swapped}), Rules())
    assert (decision.action, decision.acts) == ("leave", False)


def test_added_partitions_only_are_moved() -> None:
    current = {**MULTI, 4: (0, 1), 5: (1, 3)}
    desired = {**MULTI, 4: (0, 2), 5: (2, 1)}
    decision = judge_placement(Candidate("t", current, 4), desired, view({"t": current}), Rules())
    assert decision.action == "place" and decision.subject == "t partitions 4..5"
    assert dict(decision.targets) == {("t", 4): (0, 2), ("t", 5): (2, 1)}


def test_big_topics_are_left_and_unknown_sizes_wait() -> None:
    big = judge_placement(Candidate("t", STRIPED, 0), MULTI, view({"t": STRIPED}, size=2 << 20),
                          Rules(max_bytes_per_topic=3 << 20))
    assert big.action == "leave" and "--max-bytes-per-topic" in big.reason
    unknown = judge_placement(Candidate("t", STRIPED, 0), MULTI, view({"t": STRIPED}, size=None), Rules())
    assert unknown.action == "wait"


def test_an_answer_of_another_shape_is_not_applied() -> None:
    decision = judge_placement(Candidate("t", STRIPED, 0), {0: (0, 2)}, view({"t": STRIPED}), Rules())
    assert decision.action == "leave" and not decision.acts


def test_a_view_older_than_two_refresh_intervals_is_stale() -> None:
    v = view({}, read_at=100.0)
    assert not stale(v, Rules(refresh_s=2), 104.0)
    assert stale(v, Rules(refresh_s=2), 104.1)


@pytest.mark.parametrize("kwargs, message", [
    ({"refresh_s": 0}, "refresh interval"), ({"grace_s": -1}, "grace"), ({"max_heal_brokers": 0}, "at once"),
    ({"max_lost_share": 0}, "lost share"), ({"topics": "("}, "not a regular expression"),
])
def test_bad_rules_are_refused(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Rules(**kwargs)


# ---- dead brokers ----------------------------------------------------------------------------

SPREAD = {"t": {p: (p % 5, (p + 1) % 5, (p + 2) % 5) for p in range(10)}}


def test_down_brokers_keep_their_time_and_returning_ones_are_dropped() -> None:
    gone = tuple(b for b in BROKERS if b.id != 3)
    v = view(SPREAD, fenced=frozenset({4}), brokers=gone)
    assert v.down() == {3, 4}
    assert track_down(v, {4: 50.0, 1: 60.0}, 100.0) == {3: 100.0, 4: 50.0}


def test_a_broker_is_healed_after_the_grace_period_only() -> None:
    v = view(SPREAD, fenced=frozenset({4}))
    rules = Rules(grace_s=60)
    assert judge_heal(v, {4: 1000.0}, (), rules, 1059.0) is None
    decision = judge_heal(v, {4: 1000.0}, (), rules, 1060.0)
    assert decision is not None and (decision.action, decision.brokers) == ("heal", (4,))
    assert judge_heal(v, {4: 1000.0}, {4}, rules, 1060.0) is None  # healed already


def test_at_most_n_brokers_at_once_the_longest_down_first() -> None:
    brokers = tuple(BrokerEntry(i, RACKS[i % 3]) for i in range(8))
    v = view({"t": {p: (p % 8, (p + 1) % 8, (p + 2) % 8) for p in range(16)}}, fenced=frozenset({3, 5}),
             brokers=brokers)
    decision = judge_heal(v, {5: 10.0, 3: 20.0}, (), Rules(grace_s=0), 100.0)
    assert decision is not None and decision.brokers == (5,)
    decision = judge_heal(v, {5: 10.0, 3: 20.0}, (), Rules(grace_s=0, max_heal_brokers=2), 100.0)
    assert decision is not None and decision.brokers == (3, 5)


def test_no_heal_while_a_reassignment_runs_or_too_many_brokers_are_lost() -> None:
    busy = view(SPREAD, fenced=frozenset({4}), ongoing=frozenset({("t", 0)}))
    decision = judge_heal(busy, {4: 0.0}, (), Rules(grace_s=0), 100.0)
    assert decision is not None and decision.action == "refuse" and "in progress" in decision.reason
    lost = view(SPREAD, fenced=frozenset({3, 4}))
    decision = judge_heal(lost, {3: 0.0, 4: 0.0}, (), Rules(grace_s=0), 100.0)
    assert decision is not None and decision.action == "refuse" and "2 of 5 brokers down" in decision.reason
    decision = judge_heal(lost, {3: 0.0, 4: 0.0}, (), Rules(grace_s=0, max_lost_share=0.5), 100.0)
    assert decision is not None and decision.action == "heal"


def test_the_heal_moves_only_the_dead_brokers_replicas() -> None:
    v = view(SPREAD, fenced=frozenset({4}))
    targets, starting, _, left_out = heal_targets(v, [4])
    assert set(targets) == {("t", p) for p, r in SPREAD["t"].items() if 4 in r} and left_out == ()
    for key, target in targets.items():
        assert 4 not in target and len(target) == 3
        assert [b for b in starting[key] if b != 4] == [b for b in target if b in starting[key]]


def test_a_partition_with_no_live_replica_is_left_out_of_the_heal() -> None:
    # its only replica on the dead broker: a reassignment of it could never finish (nothing to copy from)
    topics = {**SPREAD, "__consumer_offsets": {0: (4,), 1: (2,)}}
    v = view(topics, fenced=frozenset({4}))
    targets, _, _, left_out = heal_targets(v, [4])
    assert left_out == (("__consumer_offsets", 0),)
    assert ("__consumer_offsets", 0) not in targets
    assert set(targets) == {("t", p) for p, r in SPREAD["t"].items() if 4 in r}


# ---- files and the status --------------------------------------------------------------------

def test_the_ledger_survives_a_restart(tmp_path: Path) -> None:
    ledger = Ledger.load(str(tmp_path))
    assert ledger.topics is None
    ledger.topics, ledger.down_since, ledger.healed = {"t": 3}, {4: 12.5}, {4}
    ledger.active = {"dir": ledger.next_plan_dir("placement"), "kind": "placement", "subject": "t"}
    ledger.save()
    again = Ledger.load(str(tmp_path))
    assert (again.topics, again.down_since, again.healed, again.active, again.plans) == (
        {"t": 3}, {4: 12.5}, {4}, ledger.active, 1)
    assert again.next_plan_dir("dead_brokers").endswith("plans/00002-dead_brokers")
    (tmp_path / "watch-state.json").write_text("[]")
    with pytest.raises(ValueError, match="not a watcher state"):
        Ledger.load(str(tmp_path))


def test_the_audit_log_appends_and_the_status_counts(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    path.write_text(json.dumps({"ts": 1, "event": "started"}) + "\n")
    log = AuditLog(str(path))
    status = WatchStatus()
    decision = judge_placement(Candidate("t", STRIPED, 0), MULTI, view({"t": STRIPED}), Rules())
    status.record(log.write("decided", **decision.to_json(), dry_run=False))
    status.record(log.write("executed", kind="placement", subject="t", plan_dir="p", status="done", moves=3))
    log.close()
    records = read_audit(str(path))
    assert [r["event"] for r in records] == ["started", "decided", "executed"]
    assert records[1]["moves"][0] == {"topic": "t", "partition": 0, "from": [0, 1], "to": list(MULTI[0])}
    status.saw(view({"t": STRIPED}, fenced=frozenset({4})), {4: 5.0})
    read = status.read()
    assert read["counters"]["decisions"] == [{"kind": "placement", "action": "place", "count": 1}]
    assert [b["state"] for b in read["cluster"]["brokers"]] == ["up", "up", "up", "up", "fenced"]
    names = {m.name: m for m in status.collector().collect()}
    samples = {(s.name, tuple(sorted(s.labels.items()))): s.value for m in names.values() for s in m.samples}
    assert samples[("replica_assignor_watch_decisions_total", (("action", "place"), ("kind", "placement")))] == 1
    assert samples[("replica_assignor_watch_brokers", (("state", "fenced"),))] == 1


# ---- ours left alone -------------------------------------------------------------------------

#: a balanced tree: two data centres of two zones of two brokers
BALANCED = tuple(BrokerEntry(i, f"/dc{i // 4 + 1}/zone-{'ab'[i // 2 % 2]}") for i in range(8))


@pytest.mark.parametrize("partitions, rf", [(1, 2), (6, 2), (12, 3), (16, 4), (24, 3)])
def test_a_topic_our_create_topic_placed_is_left_alone_on_a_balanced_tree(partitions: int, rf: int) -> None:
    """create-topic placed ``ours`` with the multi-level assignor; the watcher, which sees it as
    new (no intent record for a topic made with every broker up), asks the assignor again: a
    different draw over the same cluster (the server leaves the asked topic out of its view, so
    the cluster is the one create-topic saw). Every answer is equivalent: nothing moves."""
    import random

    from kafka_replica_assignor.assignors import ClusterView, create_assignor, place

    assignor = create_assignor("multi-level")
    metadata = tuple(BrokerMetadata(b.id, b.rack) for b in BALANCED)
    load = {"a": {p: (p % 8, (p + 4) % 8) for p in range(5)}, "b": {p: ((p * 3) % 8, (p * 3 + 5) % 8, (p + 2) % 8)
                                                                       for p in range(7)}}
    cluster = ClusterView(metadata, topics=load)
    ids = list(range(partitions))
    for seed in range(10):
        ours = {p: tuple(r) for p, r in place(assignor, "ours", ids, rf, cluster, rng=random.Random(seed)).items()}
        v = view({**load, "ours": ours}, brokers=BALANCED)
        (candidate,), _, _ = placement_work(v, {"a": 5, "b": 7}, Rules())
        assert candidate.topic == "ours"
        for other in range(seed + 1, seed + 6):
            asked = place(assignor, "ours", ids, rf, cluster, rng=random.Random(other))
            decision = judge_placement(candidate, {p: tuple(r) for p, r in asked.items()}, v, Rules())
            assert (decision.action, decision.acts) == ("leave", False), (seed, other, ours, asked)
