"""The ``state`` and ``balance`` subcommands, driven through argparse as ``kafka_replica_assignor.cli.main`` will."""

from __future__ import annotations

import argparse
import json
import os

import pytest

from kafka_replica_assignor.cli import balance, state

SNAPSHOT = {
    "brokers": [{"id": i, "rack": f"r{i % 2}"} for i in range(1, 7)] + [{"id": 7, "rack": "r0", "alive": False}],
    "partitions": [
        {"topic": "orders", "partition": p, "replicas": [1 + p % 4, 1 + (p + 1) % 4 if p % 3 else 7]}
        for p in range(24)
    ],
}


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="replica-assignor")
    sub = p.add_subparsers(dest="command", required=True)
    state.add_parser(sub)
    balance.add_parser(sub)
    return p


def run(*argv: str) -> int:
    args = parser().parse_args(list(argv))
    return args.run(args)


@pytest.fixture
def snapshot_file(tmp_path):
    path = tmp_path / "cluster.json"
    path.write_text(json.dumps(SNAPSHOT))
    return str(path)


def test_state_table_and_json(snapshot_file, capsys):
    assert run("state", "--snapshot", snapshot_file) == 0
    out = capsys.readouterr().out
    assert "replicas on dead brokers: 8" in out and "rack" in out
    assert run("state", "--snapshot", snapshot_file, "--json") == 0
    data = json.loads(capsys.readouterr().out)
    assert len(data["replicas_on_dead_brokers"]) == 8
    assert {b["id"]: b["replicas"] for b in data["brokers"]}[5] == 0


def test_balance_writes_the_plan_and_rerunning_it_is_empty(snapshot_file, tmp_path, capsys):
    out = tmp_path / "plan"
    assert run("balance", "--snapshot", snapshot_file, "--mode", "cluster", "--threshold", "0",
               "--batch-size", "5", "--out", str(out)) == 0
    files = sorted(os.listdir(out))
    assert {"reassignment.json", "reassignment-0001.json", "leader-election.json", "rollback.json",
            "moves.csv", "report.md", "replicas.png", "leaders.png"} <= set(files)
    assert "8 repairs" in capsys.readouterr().out
    plan = json.loads((out / "reassignment.json").read_text())
    new = {(p["topic"], p["partition"]): p["replicas"] for p in plan["partitions"]}
    after = dict(SNAPSHOT, partitions=[
        dict(p, replicas=new.get((p["topic"], p["partition"]), p["replicas"])) for p in SNAPSHOT["partitions"]])
    again = tmp_path / "after.json"
    again.write_text(json.dumps(after))
    out2 = tmp_path / "plan2"
    assert run("balance", "--snapshot", str(again), "--mode", "cluster", "--threshold", "0",
               "--out", str(out2), "--no-charts") == 0
    assert json.loads((out2 / "reassignment.json").read_text()) == {"version": 1, "partitions": []}


@pytest.mark.parametrize("content, message", [
    ("{not json", "not valid JSON"),
    ('{"brokers": [{"id": 1}], "partitions": [{"topic": "t", "partition": 0, "replicas": [1, 1]}]}',
     "lists a broker twice"),
])
def test_bad_input_is_one_line_exit_2_and_nothing_written(tmp_path, capsys, content, message):
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    out = tmp_path / "plan"
    assert run("balance", "--snapshot", str(bad), "--mode", "replica", "--out", str(out)) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
    assert not out.exists()


def test_missing_file_and_missing_racks(tmp_path, capsys):
    assert run("state", "--snapshot", str(tmp_path / "nope.json")) == 2
    assert "cannot read snapshot" in capsys.readouterr().err
    (tmp_path / "d.txt").write_text("\tTopic: t\tPartition: 0\tLeader: 1\tReplicas: 1\tIsr: 1\n")
    assert run("state", "--describe", str(tmp_path / "d.txt")) == 2
    assert "--racks" in capsys.readouterr().err


def test_argument_errors_exit_2():
    for argv in (["balance", "--snapshot", "x", "--mode", "replica", "--out", "o", "--max-moves", "-1"],
                 ["balance", "--snapshot", "x", "--mode", "replica", "--out", "o", "--threshold", "abc"],
                 ["balance", "--snapshot", "x", "--mode", "sideways", "--out", "o"]):
        with pytest.raises(SystemExit) as exc:
            parser().parse_args(argv)
        assert exc.value.code == 2


def test_capacity_smaller_than_what_must_stay_is_a_clear_error(tmp_path, capsys):
    snap = {"brokers": [{"id": 1, "capacity_bytes": 100}, {"id": 2, "capacity_bytes": 100}],
            "partitions": [{"topic": "t", "partition": 0, "replicas": [1, 2], "size_bytes": 150}]}
    path = tmp_path / "cluster.json"
    path.write_text(json.dumps(snap))
    out = tmp_path / "plan"
    assert run("balance", "--snapshot", str(path), "--mode", "cluster", "--out", str(out)) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "capacity infeasible" in err
    assert not out.exists()


def test_scope_options_keep_what_is_out_of_scope(snapshot_file, tmp_path, capsys):
    out = tmp_path / "plan"
    assert run("balance", "--snapshot", snapshot_file, "--mode", "replica", "--exclude-brokers", "2,3",
               "--no-charts", "--out", str(out)) == 0
    plan = json.loads((out / "reassignment.json").read_text())
    before = {(p["topic"], p["partition"]): p["replicas"] for p in SNAPSHOT["partitions"]}
    for p in plan["partitions"]:
        old = before[(p["topic"], p["partition"])]
        assert [b for b in old if b in (2, 3)] == [b for b in p["replicas"] if b in (2, 3)]
    assert "brokers 2, 3 neither give nor take" in (out / "report.md").read_text()
    assert run("balance", "--snapshot", snapshot_file, "--mode", "replica", "--topics", "other",
               "--no-charts", "--out", str(tmp_path / "none")) == 0
    moved = json.loads((tmp_path / "none" / "reassignment.json").read_text())["partitions"]
    assert moved == []       # orders is out of scope: not even its dead replicas are repaired
    capsys.readouterr()
    assert run("balance", "--snapshot", snapshot_file, "--mode", "replica", "--topics", "ord[",
               "--out", str(tmp_path / "bad")) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not a regular expression" in err


@pytest.mark.parametrize("options, message", [
    (("--mode", "leader", "--threshold", "5"), "--threshold is ignored by --mode leader"),
    (("--mode", "repair", "--threshold", "5"), "--threshold is ignored by --mode repair"),
    (("--mode", "leader", "--max-moves", "3"), "--max-moves is ignored by --mode leader"),
    (("--mode", "replica", "--max-leader-changes", "3"), "--max-leader-changes is ignored by --mode replica"),
    (("--mode", "repair", "--max-leader-changes", "3"), "--max-leader-changes is ignored by --mode repair"),
    (("--mode", "leader", "--forget", "6"), "--remove-brokers is ignored by --mode leader"),
    (("--mode", "replica", "--forget", "6", "--exclude-brokers", "6"), "a broker takes one of these roles"),
])
def test_an_option_the_mode_ignores_is_refused(snapshot_file, tmp_path, capsys, options, message):
    out = tmp_path / "plan"
    assert run("balance", "--snapshot", snapshot_file, *options, "--no-charts", "--out", str(out)) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err
    assert not out.exists()


def test_forget_is_remove_brokers_and_nothing_may_stay(snapshot_file, tmp_path, capsys):
    outs = {}
    for flag in ("--forget", "--remove-brokers"):
        out = outs[flag] = tmp_path / flag.strip("-")
        assert run("balance", "--snapshot", snapshot_file, "--mode", "cluster", flag, "1", "--no-charts",
                   "--out", str(out)) == 0
    files = sorted(os.listdir(outs["--forget"]))
    assert files == sorted(os.listdir(outs["--remove-brokers"]))
    for name in files:
        assert (outs["--forget"] / name).read_bytes() == (outs["--remove-brokers"] / name).read_bytes()
    moved = json.loads((outs["--forget"] / "reassignment.json").read_text())["partitions"]
    before = {(p["topic"], p["partition"]): p["replicas"] for p in SNAPSHOT["partitions"]}
    assert {k for k, v in before.items() if 1 in v} <= {(p["topic"], p["partition"]) for p in moved}
    assert all(1 not in p["replicas"] for p in moved)
    capsys.readouterr()
    # a partition out of scope cannot leave the removed broker: the promise is not kept (exit 1)
    out = tmp_path / "kept"
    assert run("balance", "--snapshot", snapshot_file, "--mode", "replica", "--remove-brokers", "1",
               "--topics", "other", "--no-charts", "--out", str(out)) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "stay on removed broker(s) 1" in err and "orders-0" in err
    assert not out.exists()


def test_exact_nodes_is_the_work_limit_and_exact_seconds_a_safety_net(snapshot_file, tmp_path, capsys):
    def plan(name: str, *options: str) -> tuple[dict[str, bytes], str]:
        out = tmp_path / name
        assert run("balance", "--snapshot", snapshot_file, "--mode", "cluster", *options, "--no-charts",
                   "--out", str(out)) == 0
        return {f: (out / f).read_bytes() for f in os.listdir(out)}, capsys.readouterr().out

    default, said = plan("default")
    assert "exact program (HiGHS)" in said                      # small enough: the exact path ran
    assert plan("again")[0] == default                          # a work limit: the same plan every time
    assert plan("limit", "--exact-nodes", "400")[0] == default  # the default limit
    heuristic, said = plan("heuristic", "--exact-nodes", "0")
    assert "exact program" not in said and "exact path" not in said
    assert plan("no-net", "--exact-seconds", "0")[0] == heuristic    # 0: the exact path never runs
    for bad in (("--exact-nodes", "-1"), ("--exact-nodes", "1.5"), ("--exact-seconds", "-1"),
                ("--exact-seconds", "inf")):
        with pytest.raises(SystemExit) as exc:
            parser().parse_args(["balance", "--snapshot", "x", "--mode", "cluster", "--out", "o", *bad])
        assert exc.value.code == 2
