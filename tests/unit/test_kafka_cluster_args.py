"""The Kafka kit's command line refuses bad arguments before it resolves, creates or starts
anything: one line, exit 2 (``scripts/kafka_cluster.py``; no Java needed). The cluster itself
is tested in ``tests/kafka/test_kit.py``."""

from __future__ import annotations

from pathlib import Path

import pytest

from scripts import kafka_cluster, kafka_tools
from scripts.kafka_cluster import MARKER, ClusterError, check_directory, heap_mib, main, node_limit, node_memory_mib


def refused(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    try:
        code = main(list(argv))
    except SystemExit as exc:  # argparse's one line
        code = int(exc.code or 0)
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1, captured.err
    assert lines[0].startswith("kafka-cluster: ")
    return code, lines[0]


@pytest.mark.parametrize("argv, words", [
    (("up", "--brokers", "-1"), "--brokers: must be 0 or more, got -1"),
    (("up", "--brokers", "x"), "--brokers: must be a whole number"),
    (("up", "--timeout", "-5"), "--timeout: must be more than 0"),
    (("up", "--timeout", "nan"), "--timeout: must be more than 0"),
    (("up", "--timeout", "inf"), "--timeout: must be more than 0"),
    (("up", "--racks", ",,,"), "--racks: must be comma-separated non-empty rack names"),
    (("up", "--racks", "a,,b"), "--racks: must be comma-separated non-empty rack names"),
    (("stop-node", "-1"), "must be 0 or more"),
    (("start-node", "one"), "must be a whole number"),
    (("frob",), "invalid choice: 'frob'"),
    (("tool",), "tool needs a name first"),
    (("tool", "--describe"), "tool needs a name first"),
    (("tool", "kafka-nope"), "unknown tool 'kafka-nope'"),
])
def test_bad_arguments_are_one_line_and_exit_2(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                               argv: tuple[str, ...], words: str) -> None:
    code, line = refused(capsys, *argv, *(("--dir", str(tmp_path / "c")) if argv[0] != "tool" else ()))
    assert code == 2 and words in line, line
    assert not (tmp_path / "c").exists()


def test_more_brokers_than_the_machine_holds_is_refused_with_the_bound(capsys: pytest.CaptureFixture[str],
                                                                       tmp_path: Path) -> None:
    limit = node_limit()
    code, line = refused(capsys, "up", "--brokers", str(limit), "--dir", str(tmp_path / "c"))
    assert code == 2
    assert f"--brokers {limit} is more than this machine holds" in line
    assert f"at most --brokers {limit - 1}" in line and f"{node_memory_mib()} MiB each" in line
    assert not (tmp_path / "c").exists()


def test_the_node_bound_is_memory_over_what_a_node_is_counted_at() -> None:
    assert heap_mib("-Xms96m -Xmx320m") == 320
    assert heap_mib("-Xmx1g") == 1024 and heap_mib("-Xmx524288k") == 512 and heap_mib("-Xms1m") == 1024
    assert node_memory_mib("-Xmx320m") == 320 + kafka_cluster.NON_HEAP_MIB
    # 24 GiB, 2 GiB kept: (24576 - 2048) // 416 = 54 nodes
    assert node_limit(total_mib=24 * 1024, heap="-Xmx320m") == 54
    assert node_limit(total_mib=1024, heap="-Xmx320m") == 0


def test_a_non_empty_directory_it_did_not_make_is_refused_and_left_alone(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "precious.txt").write_text("keep me")
    code, line = refused(capsys, "up", "--brokers", "1", "--dir", str(mine))
    assert code == 2 and f"--dir {mine} is not empty and was not made by kafka-cluster.sh" in line
    assert sorted(p.name for p in mine.iterdir()) == ["precious.txt"]
    assert (mine / "precious.txt").read_text() == "keep me"
    a_file = tmp_path / "file"
    a_file.write_text("x")
    code, line = refused(capsys, "up", "--dir", str(a_file))
    assert code == 2 and "is a file, not a directory" in line


def test_which_directories_up_may_use(tmp_path: Path) -> None:
    check_directory(tmp_path / "absent")   # created
    (tmp_path / "empty").mkdir()
    check_directory(tmp_path / "empty")    # adopted
    marked = tmp_path / "marked"
    marked.mkdir()
    (marked / MARKER).write_text("created\n")
    (marked / "node-0").mkdir()            # left by a failed up: cleared
    check_directory(marked)
    (marked / "cluster.json").write_text("{}")
    with pytest.raises(ClusterError, match="already recorded") as info:
        check_directory(marked)
    assert info.value.code == 1


def test_a_relative_dir_is_taken_from_the_current_folder(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "here").mkdir()
    (tmp_path / "here" / "junk").write_text("x")
    monkeypatch.chdir(tmp_path)
    code, line = refused(capsys, "up", "--dir", "here")
    assert code == 2 and f"--dir {tmp_path / 'here'} is not empty" in line


def test_status_and_down_without_a_record_are_refused(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    for command in ("status", "down", "stop-node", "start-node"):
        code, line = refused(capsys, command, *(["1"] if command.endswith("node") else []), "--dir", str(tmp_path))
        assert code == 1 and f"no cluster recorded in {tmp_path}" in line


def test_tool_names_map_to_main_classes() -> None:
    assert kafka_tools.main_class("kafka-topics") == "org.apache.kafka.tools.TopicCommand"
    assert kafka_tools.main_class("kafka-topics.sh") == "org.apache.kafka.tools.TopicCommand"
    assert kafka_tools.main_class("bin/kafka-configs.sh") == "kafka.admin.ConfigCommand"
    assert kafka_tools.main_class("kafka-cluster") == "org.apache.kafka.tools.ClusterTool"
    assert (kafka_tools.main_class("kafka-reassign-partitions")
            == "org.apache.kafka.tools.reassign.ReassignPartitionsCommand")
    with pytest.raises(kafka_tools.UnknownTool, match="kafka-topics"):
        kafka_tools.main_class("kafka-server-start")
