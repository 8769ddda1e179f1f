"""What an operator can trust of a plan: every mode honoured on every path, the same plan files
for the same cluster in any order and at any load, and a plan's result planned again moves
nothing. The small clusters below are the cases of the planner's rebuild (add, demote and
remove ignored on one path, refusals that were accepted), each with its known answer."""

from __future__ import annotations

from random import Random

import pytest

from kafka_replica_assignor.cluster.snapshot import BrokerEntry, ClusterSnapshot, PartitionEntry
from kafka_replica_assignor.planner.report.outputs import render_outputs
from kafka_replica_assignor.planner.request import PlanError, PlanRequest, RequestError, Scope
from kafka_replica_assignor.planner.solving.planning import make_plan
from tests.property.plan_invariants import check_plan

GIB = 1 << 30
PATHS = {"heuristic": 0, "exact": 400}


def nine_brokers_three_new() -> ClusterSnapshot:
    """Brokers 0-8 without racks, 6-8 new and empty; topic t0: 18 partitions of RF 2 (1 GiB
    each) spread evenly over 0-5 (6 replicas each). The count band is [4, 4]: each old broker
    gives 2, each new one takes 4, so the add-only optimum is 12 moves, 12 GiB."""
    brokers = tuple(BrokerEntry(b) for b in range(9))
    parts = tuple(PartitionEntry("t0", p, (p % 6, (p + 1 + p // 6) % 6), size_bytes=GIB) for p in range(18))
    return ClusterSnapshot(brokers, parts)


def arrivals(before: ClusterSnapshot, after: ClusterSnapshot) -> list[tuple[str, int, int]]:
    old = {(p.topic, p.partition): set(p.replicas) for p in before.partitions}
    return [(p.topic, p.partition, b) for p in after.partitions for b in p.replicas if b not in old[(p.topic, p.partition)]]


@pytest.mark.parametrize("path", sorted(PATHS))
def test_add_brokers_moves_only_onto_them_at_the_add_only_optimum(path: str) -> None:
    snap = nine_brokers_three_new()
    request = PlanRequest(mode="cluster", scope=Scope(add_brokers=(6, 7, 8)), exact_nodes=PATHS[path])
    plan = make_plan(snap, request)
    landed = arrivals(plan.before, plan.after)
    assert {b for _, _, b in landed} <= {6, 7, 8}, landed
    assert len(landed) == 12 and plan.replica_moves == 12     # the optimum: 2 from each old broker
    check_plan(plan, scope=request.scope)


@pytest.mark.parametrize("mode", ["leader", "cluster"])
@pytest.mark.parametrize("path", sorted(PATHS))
def test_demoted_brokers_lead_nothing_another_alive_replica_can_lead(mode: str, path: str) -> None:
    # brokers 1-5; 1 and 5 lead most partitions; t3-0 [1, 3] must become [3, 1]; t4-0 [1, 5]
    # keeps a demoted leader (both replicas demoted)
    brokers = tuple(BrokerEntry(b) for b in range(1, 6))
    lists = [(1, 3), (1, 2), (5, 4), (5, 2), (1, 5), (2, 3), (1, 4), (5, 3)]
    parts = tuple(PartitionEntry(f"t{k}", 0, reps) for k, reps in enumerate(lists))
    request = PlanRequest(mode=mode, scope=Scope(demote_brokers=(1, 5)), exact_nodes=PATHS[path])
    plan = make_plan(ClusterSnapshot(brokers, parts), request)
    after = {p.topic: p.replicas for p in plan.after.partitions}
    led = [t for t, reps in after.items() if reps[0] in (1, 5) and any(b not in (1, 5) for b in reps)]
    assert led == []
    assert after["t0"][0] not in (1, 5)
    if mode == "leader":        # reordered only
        assert after["t0"] == (3, 1) and after["t4"] == (1, 5)
    check_plan(plan, scope=request.scope, data_moves=mode != "leader")


def rf3_cluster(brokers: int = 9, partitions: int = 12) -> ClusterSnapshot:
    return ClusterSnapshot(tuple(BrokerEntry(b) for b in range(brokers)),
                           tuple(PartitionEntry("t", p, (p % brokers, (p + 1) % brokers, (p + 2) % brokers),
                                                size_bytes=GIB) for p in range(partitions)))


@pytest.mark.parametrize("path", sorted(PATHS))
def test_removed_brokers_end_empty(path: str) -> None:
    snap = rf3_cluster()
    plan = make_plan(snap, PlanRequest(mode="cluster", scope=Scope(remove_brokers=(4,)), exact_nodes=PATHS[path]))
    assert not [p for p in plan.after.partitions if 4 in p.replicas]
    check_plan(plan, scope=Scope(remove_brokers=(4,)))


def test_removing_more_brokers_than_replicas_allow_is_refused_naming_what_stays() -> None:
    # 7 of 9 brokers removed at RF 3: two brokers cannot hold three replicas of a partition
    with pytest.raises(PlanError, match=r"stay on removed broker\(s\).*t-0.*fewer brokers that may take a replica "
                                        r"\(2\) than the replicas of a partition \(3\)"):
        make_plan(rf3_cluster(), PlanRequest(mode="replica", scope=Scope(remove_brokers=tuple(range(7)))))


def test_a_removed_broker_out_of_scope_is_refused_naming_the_scope() -> None:
    with pytest.raises(PlanError, match="out of the plan's scope"):
        make_plan(rf3_cluster(), PlanRequest(mode="replica", scope=Scope(remove_brokers=(4,), exclude_topics="t")))


@pytest.mark.parametrize(("request_", "words"), [
    (lambda: PlanRequest(mode="cluster", scope=Scope(add_brokers=(99,))), "--add-brokers 99: no such broker"),
    (lambda: PlanRequest(mode="cluster", scope=Scope(remove_brokers=(3,), add_brokers=(3,))), "both name broker(s) 3"),
    (lambda: PlanRequest(mode="cluster", scope=Scope(remove_brokers=(0, 1), add_brokers=(0,))), "both name broker(s) 0"),
    (lambda: PlanRequest(mode="replica", scope=Scope(demote_brokers=(1,))), "ignored by --mode replica"),
    (lambda: PlanRequest(mode="leader", scope=Scope(remove_brokers=(1,))), "ignored by --mode leader"),
    (lambda: PlanRequest(mode="leader", threshold=5), "ignored by --mode leader"),
    (lambda: PlanRequest(mode="repair", max_leader_changes=1), "ignored by --mode repair"),
])
def test_a_request_the_planner_cannot_honour_as_given_is_refused(request_, words) -> None:
    with pytest.raises(RequestError) as refused:
        make_plan(rf3_cluster(), request_())
    assert words in str(refused.value)


def shuffled(snap: ClusterSnapshot, seed: int) -> ClusterSnapshot:
    rng = Random(seed)
    return ClusterSnapshot(tuple(rng.sample(snap.brokers, len(snap.brokers))),
                           tuple(rng.sample(snap.partitions, len(snap.partitions))))


def uneven(seed: int) -> ClusterSnapshot:
    """Two racks, a hot broker, a dead one, sizes: a cluster every path has work on."""
    rng = Random(seed)
    brokers = tuple(BrokerEntry(b, f"r{b % 2}", alive=b != 5) for b in range(8))
    parts = []
    for p in range(24):
        reps = rng.sample(range(8), 2)
        if p % 4 == 0 and 0 not in reps:
            reps[0] = 0
        parts.append(PartitionEntry(f"t{p % 3}", p, tuple(reps), size_bytes=rng.randint(1, 40) * GIB))
    return ClusterSnapshot(brokers, tuple(parts))


@pytest.mark.parametrize("mode", ["cluster", "replica", "leader", "repair"])
@pytest.mark.parametrize("path", sorted(PATHS))
def test_the_same_cluster_in_any_order_gives_the_same_plan_files(mode: str, path: str) -> None:
    snap = uneven(3)
    request = PlanRequest(mode=mode, exact_nodes=PATHS[path])
    files = render_outputs(make_plan(snap, request), request, charts=False)
    for seed in (1, 2):
        assert render_outputs(make_plan(shuffled(snap, seed), request), request, charts=False) == files


@pytest.mark.parametrize("seed", range(3))
def test_a_safety_net_reached_ends_the_plan_never_another_plan(seed: int) -> None:
    snap = uneven(seed)
    full = make_plan(snap, PlanRequest(mode="replica"))
    try:
        cut = make_plan(snap, PlanRequest(mode="replica", exact_seconds=1e-9))
    except PlanError as exc:
        assert "safety net" in str(exc)
    else:
        assert cut == full      # nothing reached the net: the same plan


@pytest.mark.parametrize("mode", ["cluster", "replica", "leader", "repair"])
@pytest.mark.parametrize("path", sorted(PATHS))
@pytest.mark.parametrize("seed", range(3))
def test_planning_a_plans_result_moves_nothing(mode: str, path: str, seed: int) -> None:
    snap = uneven(seed)
    request = PlanRequest(mode=mode, exact_nodes=PATHS[path])
    plan = make_plan(snap, request)
    again = make_plan(plan.after, request)
    assert again.moves == (), [(m.kind.value, m.topic, m.partition, m.source, m.destination) for m in again.moves]
