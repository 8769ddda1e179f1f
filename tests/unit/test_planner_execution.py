"""The operator's kit around a plan: batches, summary.json, verify-plan, rollback, the report's
notes agreeing with its figures, the charts (asserted on the figures, not pixels), the explain
chart's level names, and the fast figures agreeing with ``kafka_replica_assignor.planner.report.cluster_report.describe``."""

from __future__ import annotations

import argparse
import json
import os
from collections import Counter

import pytest

from kafka_replica_assignor.assignors.explain import explain
from kafka_replica_assignor.cli import balance, state, verify
from kafka_replica_assignor.cluster.snapshot import BrokerEntry, ClusterSnapshot, PartitionEntry
from kafka_replica_assignor.planner.execution.batches import Limits, execution, fingerprint
from kafka_replica_assignor.planner.racks import RackTree
from kafka_replica_assignor.planner.replica_repair import repair as assignors_repair
from kafka_replica_assignor.planner.report.charts import chart_figures
from kafka_replica_assignor.planner.report.cluster_report import describe
from kafka_replica_assignor.planner.report.figures import figures, plan_figures
from kafka_replica_assignor.planner.report.outputs import render_outputs
from kafka_replica_assignor.planner.report.plan_report import render_report
from kafka_replica_assignor.planner.request import PlanRequest, Scope
from kafka_replica_assignor.planner.solving.planning import make_plan


def cluster(sized: bool = True) -> ClusterSnapshot:
    brokers = tuple(BrokerEntry(i, f"r{i % 2}") for i in range(6)) + (BrokerEntry(6, "r0", alive=False),)
    parts = tuple(
        PartitionEntry(f"t{p % 3}", p, ((p % 4), 4 if p % 2 else 5, 6 if p % 5 == 0 else (p + 1) % 4),
                       size_bytes=((p * 7919) % 13) << 28 if sized else None)
        for p in range(30))
    return ClusterSnapshot(brokers, tuple(p for p in parts if len(set(p.replicas)) == 3))


def skewed() -> ClusterSnapshot:
    """9 brokers in 3 racks; most partitions have two replicas in rack r0."""
    brokers = tuple(BrokerEntry(i, f"r{i % 3}") for i in range(9))
    parts = tuple(PartitionEntry("t", p, (p % 3 * 3 % 9, (p % 3 * 3 + 3) % 9, (p + 1) % 9)) for p in range(30))
    return ClusterSnapshot(brokers, tuple(p for p in parts if len(set(p.replicas)) == 3))


def run_cli(module, *argv: str) -> int:
    parser = argparse.ArgumentParser(prog="replica-assignor")
    module.add_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(list(argv))
    return int(args.run(args))


# --- execution kit ------------------------------------------------------------------------------

def test_batches_limit_moves_per_broker_and_summary_has_the_totals():
    snap = cluster()
    request = PlanRequest("cluster", threshold=0, max_moves_per_broker=2, throttle=50_000_000)
    plan = make_plan(snap, request)
    files = render_outputs(plan, request, charts=False)
    batches = sorted(k for k in files if k.startswith("reassignment-"))
    summary = json.loads(files["summary.json"])
    assert summary["batches"] == len(batches) > 1
    entries = [p for k in batches for p in json.loads(files[k])["partitions"]]
    assert sorted((p["topic"], p["partition"]) for p in entries) == sorted(
        (p.topic, p.partition) for p in plan.changed())
    sizes = {(p.topic, p.partition): p.size_bytes or 0 for p in snap.partitions}
    before = {(p.topic, p.partition): p.replicas for p in snap.partitions}
    moved = sum(sizes[(p["topic"], p["partition"])] * len(set(p["replicas"]) - set(before[(p["topic"], p["partition"])]))
                for p in entries)
    assert summary["bytes_moved"] == moved > 0
    assert summary["replica_moves"] == plan.replica_moves
    assert summary["leader_changes"] == plan.leader_changes
    assert summary["eta_seconds"] >= moved / 50_000_000 / len(batches) - 1e-3
    starting = {(p["topic"], p["partition"]): tuple(p["replicas"])
                for p in json.loads(files["starting-replicas.json"])["partitions"]}
    assert summary["starting_replicas_sha256"] == fingerprint(starting)
    report = files["report.md"].decode()
    assert "--throttle 50000000" in report and "reassignment-0002.json" in report
    assert "verify-plan" in report


def test_unsized_plans_move_zero_bytes_and_have_no_eta_without_throttle():
    request = PlanRequest("cluster", threshold=0)
    summary = json.loads(render_outputs(make_plan(cluster(sized=False), request), request,
                                        charts=False)["summary.json"])
    assert summary["bytes_moved"] == 0 and summary["eta_seconds"] is None and summary["batches"] == 1


def test_rollback_names_live_brokers_only_and_the_report_lists_the_others():
    snap = cluster()
    request = PlanRequest("cluster", threshold=0)
    plan = make_plan(snap, request)
    files = render_outputs(plan, request, charts=False)
    alive = {b.id for b in snap.brokers if b.alive}
    rollback = json.loads(files["rollback.json"])["partitions"]
    assert rollback and all(alive.issuperset(p["replicas"]) for p in rollback)
    run = execution(plan)
    assert run.not_rollbackable and all(6 in p.replicas for p in run.not_rollbackable)
    p = run.not_rollbackable[0]
    assert f"{p.topic}-{p.partition} {list(p.replicas)}" in files["report.md"].decode()
    assert "cannot be rolled back, only repaired again" in files["report.md"].decode()


def test_leader_only_changes_come_last_in_their_batch():
    snap = cluster()
    plan = make_plan(snap, PlanRequest("cluster", threshold=10))
    run = execution(plan, Limits(batch_size=50))
    before = {(p.topic, p.partition): set(p.replicas) for p in snap.partitions}
    kinds = [set(p.replicas) == before[(p.topic, p.partition)] for p in run.batches[0].partitions]
    assert True in kinds and kinds == sorted(kinds)


def test_verify_plan_passes_on_the_start_and_names_a_drifted_partition(tmp_path, capsys):
    snap = cluster()
    path = tmp_path / "cluster.json"
    path.write_text(json.dumps(snap.to_dict() if hasattr(snap, "to_dict") else {
        "brokers": [{"id": b.id, "rack": b.rack, "alive": b.alive} for b in snap.brokers],
        "partitions": [{"topic": p.topic, "partition": p.partition, "replicas": list(p.replicas)}
                       for p in snap.partitions]}))
    out = tmp_path / "plan"
    assert run_cli(balance, "balance", "--snapshot", str(path), "--mode", "cluster", "--out", str(out),
                   "--no-charts") == 0
    assert "verify-plan" in capsys.readouterr().err
    assert run_cli(verify, "verify-plan", "--plan", str(out), "--snapshot", str(path)) == 0
    capsys.readouterr()
    data = json.loads(path.read_text())
    first = json.loads((out / "starting-replicas.json").read_text())["partitions"][0]
    for p in data["partitions"]:
        if (p["topic"], p["partition"]) == (first["topic"], first["partition"]):
            p["replicas"] = list(reversed(p["replicas"]))
    path.write_text(json.dumps(data))
    assert run_cli(verify, "verify-plan", "--plan", str(out), "--snapshot", str(path)) == 1
    lines = capsys.readouterr().out.splitlines()
    reps = first["replicas"]
    assert lines == [f"{first['topic']}-{first['partition']}: planned from [{', '.join(map(str, reps))}], "
                     f"now [{', '.join(map(str, reversed(reps)))}]"]
    os.remove(out / "summary.json")
    assert run_cli(verify, "verify-plan", "--plan", str(out), "--snapshot", str(path)) == 2


def test_verify_plan_counts_a_partial_execution_as_done_not_drift(tmp_path, capsys):
    """The plan's own finished moves are no drift (the rule execute applies too); a partition at
    neither its starting nor its planned replicas is."""
    snap = cluster()
    path = tmp_path / "cluster.json"
    path.write_text(json.dumps({
        "brokers": [{"id": b.id, "rack": b.rack, "alive": b.alive} for b in snap.brokers],
        "partitions": [{"topic": p.topic, "partition": p.partition, "replicas": list(p.replicas)}
                       for p in snap.partitions]}))
    out = tmp_path / "plan"
    assert run_cli(balance, "balance", "--snapshot", str(path), "--mode", "cluster", "--out", str(out),
                   "--no-charts") == 0
    planned = json.loads((out / "reassignment.json").read_text())["partitions"]
    assert len(planned) >= 2
    data = json.loads(path.read_text())
    done = {(p["topic"], p["partition"]): p["replicas"] for p in planned[: len(planned) // 2]}
    for p in data["partitions"]:
        p["replicas"] = done.get((p["topic"], p["partition"]), p["replicas"])
    path.write_text(json.dumps(data))
    capsys.readouterr()
    assert run_cli(verify, "verify-plan", "--plan", str(out), "--snapshot", str(path)) == 0
    captured = capsys.readouterr()
    assert captured.out == "" and f"{len(done)} of {len(planned)} planned partition(s) already at their planned" \
        in captured.err
    last = planned[-1]
    for p in data["partitions"]:       # at neither: drift
        if (p["topic"], p["partition"]) == (last["topic"], last["partition"]):
            p["replicas"] = list(reversed(last["replicas"]))
    path.write_text(json.dumps(data))
    starting = {(p["topic"], p["partition"]): p["replicas"]
                for p in json.loads((out / "starting-replicas.json").read_text())["partitions"]}
    assert list(reversed(last["replicas"])) != starting[(last["topic"], last["partition"])] or len(last["replicas"]) < 2
    assert run_cli(verify, "verify-plan", "--plan", str(out), "--snapshot", str(path)) == 1
    assert capsys.readouterr().out.startswith(f"{last['topic']}-{last['partition']}: planned from")


# --- reports agree with their figures ---------------------------------------------------------

def test_report_does_not_claim_targets_it_misses_and_blames_the_budget():
    snap = skewed()
    request = PlanRequest("cluster", threshold=10, max_moves=0)
    report = render_report(make_plan(snap, request), request)
    assert "every target was reached" not in report
    line = next(x for x in report.splitlines() if x.startswith("- partitions lacking rack diversity"))
    assert "move budget is spent (--max-moves 0)" in line
    assert "band at threshold 10%" in report
    assert "replica moves lower bound at threshold 10%" in report


def test_report_of_a_reached_plan_says_so():
    request = PlanRequest("cluster", threshold=10)
    report = render_report(make_plan(skewed(), request), request)
    assert "- none: every target was reached." in report


def test_leader_mode_blames_the_mode_for_rack_diversity():
    request = PlanRequest("leader")
    report = render_report(make_plan(skewed(), request), request)
    line = next(x for x in report.splitlines() if x.startswith("- partitions lacking rack diversity"))
    assert "leader mode moves no replicas" in line


ONE_ALIVE = {"brokers": [{"id": 1, "rack": "a"}, {"id": 2, "rack": "b", "alive": False},
                         {"id": 3, "rack": "c", "alive": False}],
             "partitions": [{"topic": "t", "partition": p, "replicas": [1, 2, 3]} for p in range(2)]}


def test_state_and_report_say_the_ideal_is_unreachable_and_state_their_threshold(tmp_path, capsys):
    path = tmp_path / "one.json"
    path.write_text(json.dumps(ONE_ALIVE))
    assert run_cli(state, "state", "--snapshot", str(path)) == 0
    out = capsys.readouterr().out
    assert "to reach the ideal band (threshold 0%)" in out
    assert "is unreachable: 2 partition(s) have more replicas (up to 3) than the 1 alive broker(s)" in out
    assert run_cli(state, "state", "--snapshot", str(path), "--json") == 0
    data = json.loads(capsys.readouterr().out)
    assert data["lower_bounds"]["threshold_percent"] == 0 and data["ideal_unreachable"]["partitions"] == 2
    snap = ClusterSnapshot.from_dict(ONE_ALIVE)
    request = PlanRequest("cluster")
    report = render_report(make_plan(snap, request), request)
    assert "is unreachable: 2 partition(s) have more replicas than the 1 alive broker(s)" in report


# --- charts ---------------------------------------------------------------------------------------

def test_charts_name_cluster_and_mode_mark_dead_brokers_and_use_integer_ticks():
    request = PlanRequest("cluster", threshold=0, source="/data/prod-eu.json", scope=Scope(remove_brokers=(5,)))
    plan = make_plan(cluster(), request)
    charts = chart_figures(plan, request)
    assert set(charts) == {"replicas.png", "leaders.png", "disk.png"}
    for name, fig in charts.items():
        ax = fig.axes[0]
        assert "prod-eu.json" in ax.get_title(loc="left") and "mode cluster" in ax.get_title(loc="left")
        labels = [t.get_text() for t in ax.get_xticklabels()]
        assert "6\u2020" in labels and "5\u2021" in labels and "0" in labels
        assert "\u2020 dead" in ax.get_xlabel() and "\u2021 forgotten" in ax.get_xlabel()
        legend = ax.get_legend()
        assert legend is not None and legend.get_bbox_to_anchor().x0 > ax.get_window_extent().x1 - 1
        if name != "disk.png":
            ticks = ax.get_yticks()
            assert all(float(t).is_integer() for t in ticks)
    assert charts["replicas.png"].axes[0].get_ylabel() == "replicas per broker"
    assert charts["disk.png"].axes[0].get_ylabel() == "GiB per broker"
    # the y tick labels fit inside the figure (not clipped on the left)
    fig = charts["replicas.png"]
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    assert all(t.get_window_extent(renderer).x0 >= 0 for t in fig.axes[0].get_yticklabels())


def test_no_dead_mark_without_dead_brokers_and_a_histogram_for_many_brokers():
    brokers = tuple(BrokerEntry(i, f"r{i % 3}") for i in range(400))
    parts = tuple(PartitionEntry("t", p, (p % 400, (p + 1) % 400, (p * 7 + 3) % 400 if (p * 7 + 3) % 400 not in
                                                                      (p % 400, (p + 1) % 400) else (p + 2) % 400))
                  for p in range(1000))
    snap = ClusterSnapshot(brokers, parts)
    request = PlanRequest("leader")
    fig = chart_figures(make_plan(snap, request), request)["replicas.png"]
    ax = fig.axes[0]
    assert "\u2020" not in ax.get_xlabel() and ax.get_ylabel() == "alive brokers"
    assert fig.get_size_inches()[0] <= 14
    small = chart_figures(make_plan(skewed(), request), request)["leaders.png"].axes[0]
    assert "dead" not in small.get_xlabel() and small.get_ylabel() == "preferred leaders per broker"


def test_explain_chart_names_its_levels_and_has_a_title():
    from kafka_replica_assignor.assignors.model import BrokerMetadata, ClusterView
    from kafka_replica_assignor.cli.explain_chart import chart_figure

    racks = {b: f"/dc{b % 2 + 1}/zone-{'ab'[b // 2 % 2]}/rack-{b % 4}" for b in range(8)}
    view = ClusterView(tuple(BrokerMetadata(b, racks[b]) for b in range(8)))
    levels = explain({p: [p % 8, (p + 1) % 8] for p in range(8)}, view)
    assert [lv.kind for lv in levels] == ["data centre", "zone", "rack", "broker"]
    fig = chart_figure(levels, title="Topic orders")
    assert fig.get_suptitle() == "Topic orders"
    titles = [ax.get_title(loc="left") for ax in fig.axes]
    assert titles[0].startswith("level 1: data centre") and titles[-1].startswith("broker")


# --- the fast figures agree with describe ----------------------------------------------------------

def broker_cap_excess(snap: ClusterSnapshot) -> int:
    """The topic-spread cap at a broker, counted plainly from its definition: ``cap(t, g) =
    E(t, g) + 1`` with ``E(t, root) = R_t`` (the topic's replicas) and ``E(t, g) = max(ceil(E(t,
    parent) * m_g / m_parent), S_t(g))``, ``m_g`` the alive brokers under node ``g`` and, for a rack
    node, ``S_t(g)`` the topic's partitions that can be repaired (no more replicas than alive
    brokers) with at least as many replicas as there are groups at ``g``'s level (0 for a broker).
    The figure: the most replicas of a topic on one alive broker above its cap there, 0 if none."""
    alive = sorted(b.id for b in snap.brokers if b.alive)
    if not alive:
        return 0
    tree = RackTree.of({b.id: b.rack for b in snap.brokers})
    groups = tree.groups(alive)
    total: Counter[str] = Counter()
    spanning: Counter[tuple[str, int]] = Counter()
    on: Counter[tuple[str, int]] = Counter()
    for p in snap.partitions:
        total[p.topic] += len(p.replicas)
        for level, g in enumerate(groups):
            if g <= len(p.replicas) <= len(alive):
                spanning[(p.topic, level)] += 1
        for b in p.replicas:
            if b in alive:
                on[(p.topic, b)] += 1
    worst = 0
    for (t, b), n in on.items():
        share, above = total[t], len(alive)                 # the root
        for level, key in enumerate(tree.keys[b]):          # its data centre, ..., its rack
            under = sum(1 for x in alive if tree.keys[x][level] == key)
            share = max(-(-share * under // above), spanning[(t, level)])
            above = under
        share = -(-share // above)                          # the broker itself: m_g = 1
        worst = max(worst, n - (share + 1))
    return worst


@pytest.mark.parametrize("snap", [cluster(), skewed(), ClusterSnapshot.from_dict(ONE_ALIVE), ClusterSnapshot(
    (BrokerEntry(1, "/dc1/a"), BrokerEntry(2, "/dc1/b"), BrokerEntry(3, "/dc2/a"), BrokerEntry(4, None)),
    (PartitionEntry("x", 0, (1, 2, -1)), PartitionEntry("x", 1, (9, 1)), PartitionEntry("y", 0, (3, 4, 2))))])
def test_figures_agree_with_describe(snap):
    fast, plain = figures(snap), describe(snap)
    assert fast.brokers == plain.brokers and fast.unknown_brokers == plain.unknown_brokers
    assert fast.racks == plain.racks
    assert fast.replicas_spread == plain.replicas_spread and fast.leaders_spread == plain.leaders_spread
    assert (fast.not_diverse, fast.on_dead, fast.on_unknown, fast.placeholders) == (
        len(plain.not_diverse), len(plain.on_dead), len(plain.on_unknown), len(plain.placeholders))
    assert fast.topic_excess == broker_cap_excess(snap)
    plan = make_plan(snap, PlanRequest("cluster", threshold=0))
    assert plan_figures(plan) == (figures(plan.before), figures(plan.after))


# --- repair picks the least loaded broker -----------------------------------------------------------

def test_repair_does_not_pile_a_dead_brokers_replicas_onto_the_fullest_broker():
    # rack a: 1 (full) and 3 (dead); racks b and c have room; partitions [3, 4] may use a or c
    brokers = (BrokerEntry(1, "a"), BrokerEntry(3, "a", alive=False), BrokerEntry(4, "b"),
               BrokerEntry(5, "b"), BrokerEntry(6, "c"), BrokerEntry(7, "c"))
    parts = [PartitionEntry("full", i, (1, 5)) for i in range(10)]
    parts += [PartitionEntry("t", i, (3, 4)) for i in range(6)]
    snap = ClusterSnapshot(brokers, tuple(parts))
    new = Counter(r.new for r in assignors_repair(snap).replacements)
    assert new[1] == 0 and new[6] + new[7] == 6 and abs(new[6] - new[7]) <= 1
