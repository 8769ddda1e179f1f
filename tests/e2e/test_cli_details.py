"""Smaller promises of the command line, against a real server where one is involved:
``--explain`` takes racks from ``--cluster`` or the server's Metadata and never silently from
the embedded example; ``--topic`` reaches the server without ``--current-assignment``; errors
name the user's paths; ``balance --fleet`` checks its directory before Spark starts; ``users add``
without a terminal says what to do; ``observed forget`` warns about a broker seen alive."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kafka_replica_assignor.assignors import BrokerMetadata
from kafka_replica_assignor.cli.observed import recently_seen_warning
from kafka_replica_assignor.server.observed import ObservedBrokerStore
from tests.servers import ServerThread

ROOT = Path(__file__).resolve().parents[2]
RACKS = {11: "r1", 12: "r1", 13: "r2", 14: "r2"}


def cli(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kafka_replica_assignor.cli.main", *args], capture_output=True, text=True, timeout=120,
                          cwd=ROOT, input=stdin)


@pytest.fixture(scope="module")
def cluster_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("cluster") / "cluster.json"
    path.write_text(json.dumps({"brokers": [{"id": b, "rack": r} for b, r in RACKS.items()]}))
    return path


@pytest.fixture(scope="module")
def server(cluster_file: Path) -> Iterator[ServerThread]:
    with ServerThread({"cluster.metadata.file": str(cluster_file)}) as running:
        yield running


def test_explain_with_the_servers_cluster_file(server: ServerThread, cluster_file: Path) -> None:
    proc = cli("assign", "--bootstrap-server", server.bootstrap, "--partitions", "4", "--replication-factor", "2",
               "--explain", "--cluster", str(cluster_file))
    assert proc.returncode == 0, proc.stderr
    assert len(json.loads(proc.stdout)["partitions"]) == 4
    for broker in RACKS:
        assert f"broker {broker}" in proc.stderr
    assert "/r1" in proc.stderr and "/r2" in proc.stderr


def test_explain_without_racks_says_so_instead_of_using_the_example(server: ServerThread) -> None:
    """The server's Metadata lists only the server itself (not one of the placed brokers):
    --explain names the missing brokers and asks for --cluster (exit 2, nothing on stdout),
    rather than explaining it against a cluster it was not made for."""
    proc = cli("assign", "--bootstrap-server", server.bootstrap, "--partitions", "4", "--replication-factor", "2",
               "--explain")
    assert proc.returncode == 2
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("replica-assignor assign: error: --explain needs the rack of every broker used, "
                               f"and the Metadata of {server.bootstrap} does not list broker(s) ")
    assert lines[0].endswith("give the server's cluster snapshot with --cluster FILE")


def test_topic_is_sent_without_a_current_assignment(server: ServerThread) -> None:
    """An invalid name is refused by the server: proof that it was sent (v1, TopicName set)."""
    proc = cli("assign", "--bootstrap-server", server.bootstrap, "--partitions", "2", "--replication-factor", "1",
               "--topic", "..")
    assert proc.returncode == 1
    assert proc.stderr.splitlines() == [
        "replica-assignor assign: error: InvalidTopicError (17): Topic name is invalid: '..' is not allowed"]
    named = cli("assign", "--bootstrap-server", server.bootstrap, "--partitions", "2", "--replication-factor", "1",
                "--topic", "orders")
    assert named.returncode == 0, named.stderr
    assert {p["topic"] for p in json.loads(named.stdout)["partitions"]} == {"orders"}


def test_users_file_errors_name_the_users_path(tmp_path: Path) -> None:
    target = tmp_path / "missing-dir" / "users.json"
    proc = cli("users", "add", "--file", str(target), "--user", "u", "--password-stdin", stdin="secret\n")
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [f"replica-assignor users add: error: cannot write {target}: "
                                        "No such file or directory"]
    assert ".users-" not in proc.stderr


def test_users_add_without_a_terminal_says_how_to_give_the_password(tmp_path: Path) -> None:
    proc = cli("users", "add", "--file", str(tmp_path / "users.json"), "--user", "u", stdin="")
    assert proc.returncode == 2
    assert "no terminal to ask for the password: pipe it with --password-stdin" in proc.stderr
    assert not (tmp_path / "users.json").exists()
    empty = cli("users", "add", "--file", str(tmp_path / "users.json"), "--user", "u", "--password-stdin", stdin="\n")
    assert empty.returncode == 2 and "the password is empty" in empty.stderr


def test_balance_fleet_checks_the_directory_before_spark(tmp_path: Path) -> None:
    started = time.monotonic()
    proc = cli("balance", "--fleet", str(tmp_path / "nope"), "--mode", "replica", "--out", str(tmp_path / "out"))
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [f"replica-assignor balance: error: --fleet {tmp_path / 'nope'}: "
                                        "no such directory or file"]
    assert time.monotonic() - started < 20  # no Spark session was started
    assert not (tmp_path / "out").exists()


def test_observed_forget_warns_about_a_broker_seen_alive(tmp_path: Path) -> None:
    path = tmp_path / "observed.db"
    now = time.time()
    with ObservedBrokerStore(path) as store:
        store.record([BrokerMetadata(1, "a")], now=now - 5)
        store.record([BrokerMetadata(2, "b")], now=now - 3600)
    proc = cli("observed", "forget", "1", "--path", str(path))
    assert proc.returncode == 0
    assert proc.stdout == "forgot broker 1\n"
    assert proc.stderr.startswith("replica-assignor observed forget: warning: broker 1 was seen alive ")
    assert "next metadata refresh" in proc.stderr
    old = cli("observed", "forget", "2", "--path", str(path))
    assert (old.returncode, old.stdout, old.stderr) == (0, "forgot broker 2\n", "")


def test_recently_seen_warning_boundary() -> None:
    from kafka_replica_assignor.server.observed import ObservedBroker

    broker = ObservedBroker(7, None, None, None, first_seen=0.0, last_seen=1000.0)
    assert recently_seen_warning(broker, 1000.0 + 299) is not None
    assert recently_seen_warning(broker, 1000.0 + 301) is None
