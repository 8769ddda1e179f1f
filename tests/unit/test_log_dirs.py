"""Partition sizes from ``kafka-log-dirs.sh --describe`` and ``balance --log-dirs``; bad sizes in a
snapshot on the command line."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import pytest

from kafka_replica_assignor.cli import balance
from kafka_replica_assignor.cluster.snapshot import BrokerEntry, ClusterSnapshot, PartitionEntry
from kafka_replica_assignor.planner.inputs.log_dirs import merge_sizes, parse_log_dirs
from kafka_replica_assignor.planner.inputs.sources import SourceError

HEADER = ("Querying brokers for log directories information\n"
          "Received log directory information from brokers 0,1,2\n")


def replica(name: str, size: int, future: bool = False) -> dict[str, Any]:
    return {"partition": name, "size": size, "offsetLag": 0, "isFuture": future}


def describe(*brokers: tuple[int, list[dict[str, Any]]]) -> dict[str, Any]:
    return {"version": 1, "brokers": [
        {"broker": b, "logDirs": [{"logDir": "/var/kafka", "error": None, "partitions": parts}]}
        for b, parts in brokers]}


OUTPUT = describe(
    (0, [replica("orders-0", 100), replica("payments-events-eu-12", 7)]),
    (1, [replica("orders-0", 90), replica("payments-events-eu-12", 9)]),
    (2, [replica("orders-0", 5000, future=True), replica("orders-1", 0)]),
)
SIZES = {("orders", 0): 100, ("payments-events-eu", 12): 9, ("orders", 1): 0}


# -- parsing -------------------------------------------------------------------------------
@pytest.mark.parametrize("text", [
    HEADER + json.dumps(OUTPUT) + "\n",
    json.dumps(OUTPUT),
    HEADER + json.dumps(OUTPUT, indent=2),
    "\r\n".join(HEADER.splitlines()) + "\r\n  " + json.dumps(OUTPUT) + "\r\n\r\n",
])
def test_sizes_with_or_without_the_tool_s_text_lines(text):
    assert parse_log_dirs(text) == SIZES


def test_the_largest_report_wins_futures_and_failed_dirs_are_ignored():
    data = describe((0, [replica("t-0", 10)]), (1, [replica("t-0", 30)]), (2, [replica("t-0", 20)]),
                    (3, [replica("t-0", 99, future=True)]))
    data["brokers"].append({"broker": 4, "logDirs": [
        {"logDir": "/bad", "error": "org.apache.kafka.common.errors.KafkaStorageException", "partitions": []},
        {"logDir": "/gone", "error": "KafkaStorageException"}]})
    assert parse_log_dirs(json.dumps(data)) == {("t", 0): 30}


def test_topic_names_split_at_the_last_dash_and_one_partition_under_two_names():
    data = describe((0, [replica("a-b-c-7", 1), replica("-x-3", 2), replica("t-01", 5)]),
                    (1, [replica("t-1", 4)]))
    assert parse_log_dirs(json.dumps(data)) == {("a-b-c", 7): 1, ("-x", 3): 2, ("t", 1): 5}


def test_an_entry_with_unusual_types_is_read_entry_by_entry():
    data = describe((0, [replica("t-0", 3), {"partition": "t-1", "size": 4}]))
    assert parse_log_dirs(json.dumps(data)) == {("t", 0): 3, ("t", 1): 4}


def test_no_brokers_reporting_is_no_sizes():
    assert parse_log_dirs(HEADER + '{"version":1,"brokers":[]}') == {}


@pytest.mark.parametrize(("text", "message"), [
    ("", "no JSON document found"),
    ("Querying brokers for log directories information\nError: timed out\n", "no JSON document found"),
    ("{not json", "not valid JSON"),
    ('{"brokers": []} trailing', "text after the JSON document"),
    ("[1, 2]", "no JSON document found"),
    ('{"brokers": {"0": []}}', "no 'brokers' list"),
    ('{"version": 1}', "no 'brokers' list"),
    ('{"brokers": [{"id": 0, "rack": "r0"}], "partitions": []}', "brokers[0]: not the output of "
                                                                 "kafka-log-dirs.sh --describe (no integer 'broker')"),
    ('{"brokers": [{"broker": true, "logDirs": []}]}', "no integer 'broker'"),
    ('{"brokers": [{"broker": 0}]}', "brokers[0]: not the output of kafka-log-dirs.sh --describe (no 'logDirs' list)"),
    ('{"brokers": [{"broker": 0, "logDirs": [{"logDir": "/d"}]}]}', "brokers[0].logDirs[0]: not the output"),
    (json.dumps(describe((0, [replica("t-0", 1), 7]))), "brokers[0].logDirs[0].partitions[1]: not the output"),
    (json.dumps(describe((0, [replica("t-0", 1), replica("t-1", -1)]))),
     "brokers[0].logDirs[0].partitions[1]: size must be an integer >= 0, got -1"),
    (json.dumps(describe((0, [replica("t-0", 1.5)]))), "partitions[0]: size must be an integer >= 0, got 1.5"),
    (json.dumps(describe((0, [replica("t-0", True)]))), "partitions[0]: size must be an integer >= 0, got True"),
    (json.dumps(describe((0, [{"partition": "t-0"}]))), "partitions[0]: size must be an integer >= 0, got None"),
    (json.dumps(describe((0, [{"partition": 3, "size": 1}]))),
     "partitions[0]: partition must be a string '<topic>-<partition>', got 3"),
    (json.dumps(describe((0, [{"partition": "t-0", "size": 1, "isFuture": "no"}]))),
     "partitions[0]: isFuture must be true or false, got 'no'"),
    (json.dumps(describe((0, [replica("orders", 1)]))), "partition must be '<topic>-<partition>', got 'orders'"),
    (json.dumps(describe((0, [replica("-3", 1)]))), "got '-3'"),
    (json.dumps(describe((0, [replica("t-x", 1)]))), "got 't-x'"),
    (json.dumps(describe((0, [replica("t-٣", 1)]))), "got 't-٣'"),
])
def test_what_is_not_kafka_s_format_is_one_line_naming_the_place(text, message):
    with pytest.raises(SourceError) as info:
        parse_log_dirs(text, "dirs.txt")
    text_of_error = str(info.value)
    assert text_of_error.startswith("dirs.txt: ") and message in text_of_error
    assert "\n" not in text_of_error


# -- merging ----------------------------------------------------------------------------
SNAPSHOT = ClusterSnapshot(
    brokers=(BrokerEntry(0, "r0"), BrokerEntry(1, "r1"), BrokerEntry(2, "r2")),
    partitions=(PartitionEntry("orders", 0, (0, 1), 0, (0, 1), 1),
                PartitionEntry("orders", 1, (2, 0)),
                PartitionEntry("payments-events-eu", 12, (1, 0), size_bytes=9),
                PartitionEntry("audit", 0, (0, 2), size_bytes=55)),
)


def test_sizes_replace_the_snapshot_s_and_others_are_kept():
    merged = merge_sizes(SNAPSHOT, {**SIZES, ("deleted-topic", 0): 1})
    assert [p.size_bytes for p in merged.partitions] == [100, 0, 9, 55]
    assert merged.partitions[0] == PartitionEntry("orders", 0, (0, 1), 0, (0, 1), 100)
    assert merged.partitions[2] is SNAPSHOT.partitions[2]
    assert merged.brokers == SNAPSHOT.brokers


def test_sizes_of_another_cluster_are_refused():
    with pytest.raises(SourceError, match=r"^dirs: names none of the cluster's 4 partitions$"):
        merge_sizes(SNAPSHOT, {("other", 0): 1}, "dirs")
    assert merge_sizes(ClusterSnapshot(SNAPSHOT.brokers), {}).partitions == ()


# -- the command line ----------------------------------------------------------------------
def run(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="replica-assignor")
    balance.add_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(list(argv))
    return args.run(args)


@pytest.fixture
def snapshot_file(tmp_path: Path) -> str:
    path = tmp_path / "cluster.json"
    path.write_text(json.dumps(SNAPSHOT.to_dict()))
    return str(path)


def test_balance_reads_the_sizes_and_prints_timings(snapshot_file, tmp_path, capsys):
    dirs = tmp_path / "dirs.txt"
    dirs.write_text(HEADER + json.dumps(OUTPUT) + "\n")
    out = tmp_path / "plan"
    assert run("balance", "--snapshot", snapshot_file, "--log-dirs", str(dirs), "--mode", "replica",
               "--no-charts", "--timings", "--out", str(out)) == 0
    captured = capsys.readouterr()
    reminder, line = captured.err.splitlines()
    assert reminder.startswith("before executing, check that nothing moved since")
    timings = json.loads(line)
    assert list(timings) == ["load_s", "log_dirs_s", "plan_s", "render_s", "write_s"]
    assert all(isinstance(v, float) and v >= 0 for v in timings.values())
    assert (out / "reassignment.json").exists()


def test_without_timings_only_the_verify_reminder_is_printed_on_stderr(snapshot_file, tmp_path, capsys):
    assert run("balance", "--snapshot", snapshot_file, "--mode", "leader", "--no-charts",
               "--out", str(tmp_path / "plan")) == 0
    (reminder,) = capsys.readouterr().err.splitlines()
    assert reminder.startswith("before executing, check that nothing moved since: replica-assignor verify-plan")


@pytest.mark.parametrize(("content", "message"), [
    ("Querying brokers for log directories information\n", "not the output of kafka-log-dirs.sh --describe"),
    (json.dumps(SNAPSHOT.to_dict()), "no integer 'broker'"),
    (json.dumps(describe((0, [replica("orders-0", -5)]))), "size must be an integer >= 0, got -5"),
    (json.dumps(describe((0, [replica("elsewhere-0", 5)]))), "names none of the cluster's 4 partitions"),
    (None, "cannot read log dirs"),
])
def test_a_bad_log_dirs_file_is_one_line_exit_2_nothing_written(snapshot_file, tmp_path, capsys, content, message):
    dirs = tmp_path / "dirs.txt"
    if content is not None:
        dirs.write_text(content)
    out = tmp_path / "plan"
    assert run("balance", "--snapshot", snapshot_file, "--log-dirs", str(dirs), "--mode", "cluster",
               "--timings", "--out", str(out)) == 2
    err = capsys.readouterr().err
    assert err.startswith("replica-assignor balance: error: ") and message in err and err.count("\n") == 1
    assert not out.exists()


def test_log_dirs_is_refused_with_the_pipeline(snapshot_file, tmp_path, capsys):
    dirs = tmp_path / "dirs.txt"
    dirs.write_text(json.dumps(OUTPUT))
    out = tmp_path / "plan"
    assert run("balance", "--snapshot", snapshot_file, "--spark", "--log-dirs", str(dirs), "--mode", "cluster",
               "--out", str(out)) == 2
    assert "--log-dirs" in capsys.readouterr().err
    assert not out.exists()


@pytest.mark.parametrize(("change", "message"), [
    ({"size_bytes": -1}, "partitions[1].size_bytes must be >= 0, got -1"),
    ({"size_bytes": 2.5}, "partitions[1].size_bytes must be an integer, got 2.5"),
    ({"size_bytes": True}, "partitions[1].size_bytes must be an integer, got True"),
    ({"size_bytes": "10GB"}, "partitions[1].size_bytes must be an integer, got '10GB'"),
    ({"capacity_bytes": -1}, "brokers[1].capacity_bytes must be >= 0, got -1"),
    ({"capacity_bytes": 1e12}, "brokers[1].capacity_bytes must be an integer, got 1000000000000.0"),
])
def test_bad_sizes_in_a_snapshot_are_one_line_exit_2_nothing_written(tmp_path, capsys, change, message):
    data = SNAPSHOT.to_dict()
    if "size_bytes" in change:
        data["partitions"][1].update(change)
    else:
        data["brokers"][1].update(change)
    path = tmp_path / "cluster.json"
    path.write_text(json.dumps(data))
    out = tmp_path / "plan"
    assert run("balance", "--snapshot", str(path), "--mode", "cluster", "--out", str(out)) == 2
    err = capsys.readouterr().err
    assert err == f"replica-assignor balance: error: {path}: {message}\n"
    assert not out.exists()
