"""``create-topic`` with several topics: one batch, each topic placed with the earlier ones in the
server's view (CreateReplicaAssignment v2's PendingTopics), shown with a load-aware plug-in
(examples.least_loaded) on a snapshot cluster of five brokers and no topics, in dry-run mode (no
Kafka cluster needed; tests/kafka creates batches on Apache Kafka)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.servers import ServerThread

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def least_loaded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerThread]:
    path = tmp_path_factory.mktemp("cluster") / "cluster.json"
    path.write_text(json.dumps({"brokers": [{"id": i} for i in range(5)]}))
    with ServerThread({"cluster.metadata.file": str(path),
                       "replica.assignor.class.name": "examples.least_loaded.LeastLoadedAssignor"}) as server:
        yield server


def create(server: ServerThread, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kafka_replica_assignor.cli.main", "create-topic", "--bootstrap-server", "127.0.0.1:1",
                           "--assignor", server.bootstrap, "--dry-run", *args],
                          capture_output=True, text=True, timeout=60, cwd=ROOT)


def counts(proc: subprocess.CompletedProcess[str]) -> tuple[Counter[int], Counter[int], list[str]]:
    partitions = json.loads(proc.stdout)["partitions"]
    replicas = Counter(b for p in partitions for b in p["replicas"])
    leaders = Counter(p["replicas"][0] for p in partitions)
    return replicas, leaders, list(dict.fromkeys(p["topic"] for p in partitions))


def test_a_batch_of_topics_is_spread_as_one(least_loaded: ServerThread) -> None:
    names = [f"batch-{i}" for i in range(5)]
    proc = create(least_loaded, *[a for n in names for a in ("--topic", n)], "--partitions", "2",
                  "--replication-factor", "1")
    assert proc.returncode == 0, proc.stderr
    replicas, leaders, topics = counts(proc)
    assert topics == names
    # ten single-replica partitions on five brokers: two each, only if every topic saw the earlier ones
    assert replicas == leaders == Counter({b: 2 for b in range(5)})


def test_a_topics_file_gives_each_topic_its_size(least_loaded: ServerThread, tmp_path: Path) -> None:
    path = tmp_path / "topics.txt"
    path.write_text("# name partitions replication-factor\norders 3 2\n\npayments 2 1  # small\n")
    proc = create(least_loaded, "--topics-file", str(path))
    assert proc.returncode == 0, proc.stderr
    partitions = json.loads(proc.stdout)["partitions"]
    sizes = {t: (len([p for p in partitions if p["topic"] == t]),
                 {len(p["replicas"]) for p in partitions if p["topic"] == t}) for t in ("orders", "payments")}
    assert sizes == {"orders": (3, {2}), "payments": (2, {1})}
    replicas = Counter(b for p in partitions for b in p["replicas"])
    assert max(replicas.values()) - min(replicas[b] for b in range(5)) <= 1


@pytest.mark.parametrize("content, message", [
    ("orders 3\n", "line 1: expected 'NAME PARTITIONS REPLICATION_FACTOR'"),
    ("orders 0 1\n", "line 1: expected"),
    ("# nothing\n", "names no topic"),
    ("a 1 1\na 2 1\n", "topic a is named twice"),
])
def test_a_bad_topics_file_is_one_line_and_exit_2(least_loaded: ServerThread, tmp_path: Path, content: str,
                                                  message: str) -> None:
    path = tmp_path / "topics.txt"
    path.write_text(content)
    proc = create(least_loaded, "--topics-file", str(path))
    assert proc.returncode == 2
    assert proc.stdout == ""
    [line] = proc.stderr.splitlines()
    assert message in line


def test_topic_needs_a_size_and_a_file_takes_none(least_loaded: ServerThread, tmp_path: Path) -> None:
    proc = create(least_loaded, "--topic", "x")
    assert proc.returncode == 2 and "--topic needs --partitions and --replication-factor" in proc.stderr
    path = tmp_path / "topics.txt"
    path.write_text("x 1 1\n")
    proc = create(least_loaded, "--topics-file", str(path), "--partitions", "3")
    assert proc.returncode == 2 and "leave out --partitions" in proc.stderr
