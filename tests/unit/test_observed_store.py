"""The observed-broker store (SQLite, WAL) and the ``replica-assignor observed`` CLI."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

import pytest

from kafka_replica_assignor.assignors import BrokerMetadata
from kafka_replica_assignor.cli.main import main as cli_main
from kafka_replica_assignor.cluster.snapshot import BrokerEntry
from kafka_replica_assignor.server.observed import (
    DEFAULT_OBSERVED_PATH,
    ObservedBroker,
    ObservedBrokerStore,
    ObservedStoreError,
)


@dataclass
class Sighting:
    id: object
    rack: object


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "observed.db"


def test_record_then_list(path):
    with ObservedBrokerStore(path) as store:
        store.record([BrokerEntry(2, "b", True, "h2", 9092), BrokerMetadata(1, "a")], now=100.0)
        assert store.list() == [
            ObservedBroker(1, "a", None, None, 100.0, 100.0),
            ObservedBroker(2, "b", "h2", 9092, 100.0, 100.0),
        ]


def test_seen_again_keeps_first_seen_and_known_endpoint(path):
    with ObservedBrokerStore(path) as store:
        store.record([BrokerEntry(2, "b", True, "h2", 9092)], now=100.0)
        store.record([BrokerMetadata(2, "c")], now=150.0)
        store.record([BrokerMetadata(2, "c")], now=120.0)  # a clock step back does not rewind
        assert store.list() == [ObservedBroker(2, "c", "h2", 9092, 100.0, 150.0)]


def test_survives_reopening(path):
    with ObservedBrokerStore(path) as store:
        store.record([BrokerMetadata(i, f"r{i % 3}") for i in range(5)], now=1.0)
    with ObservedBrokerStore(path, create=False) as store:
        assert [b.id for b in store.list()] == [0, 1, 2, 3, 4]
        assert store.list()[4].rack == "r1"
        assert store.integrity_check() == "ok"


def test_file_is_in_wal_mode(path):
    ObservedBrokerStore(path).close()
    db = sqlite3.connect(path)
    try:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert db.execute("PRAGMA user_version").fetchone()[0] == 1
    finally:
        db.close()


def test_a_bad_sighting_writes_nothing(path):
    with ObservedBrokerStore(path) as store:
        store.record([BrokerMetadata(1, "a")], now=1.0)
        for bad, message in [(Sighting(True, None), "broker id"), (Sighting(-3, None), "broker id"),
                             (Sighting(3, 42), "rack and host"),
                             (BrokerEntry(3, "c", True, "h", "9092"), "port")]:
            with pytest.raises(ValueError, match=message):
                store.record([BrokerMetadata(2, "b"), bad], now=2.0)
        assert [b.id for b in store.list()] == [1]
        store.record([BrokerMetadata(2, "b")], now=4.0)
        assert [b.id for b in store.list()] == [1, 2]


def test_forget(path):
    with ObservedBrokerStore(path) as store:
        store.record([BrokerMetadata(1, "a"), BrokerMetadata(2, "b")], now=1.0)
        assert store.forget(1) is True
        assert store.forget(1) is False
        assert [b.id for b in store.list()] == [2]
        store.record([BrokerMetadata(1, "a")], now=9.0)  # a forgotten id that comes back is new
        assert store.list()[0] == ObservedBroker(1, "a", None, None, 9.0, 9.0)


def test_two_connections_see_each_others_writes(path):
    with ObservedBrokerStore(path) as server, ObservedBrokerStore(path, create=False) as cli:
        server.record([BrokerMetadata(7, "a")], now=1.0)
        assert [b.id for b in cli.list()] == [7]
        assert cli.forget(7)
        assert server.list() == []


def test_records_from_many_threads(path):
    with ObservedBrokerStore(path) as store:
        def worker(base: int) -> None:
            for i in range(20):
                store.record([BrokerMetadata(base + i)], now=float(i))

        threads = [threading.Thread(target=worker, args=(k * 100,)) for k in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(store.list()) == 80


def test_opening_without_create(tmp_path):
    with pytest.raises(ObservedStoreError, match="no observed broker store"):
        ObservedBrokerStore(tmp_path / "missing.db", create=False)
    assert not (tmp_path / "missing.db").exists()
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"not a database " * 100)
    with pytest.raises(ObservedStoreError, match="not a database"):
        ObservedBrokerStore(junk, create=False)
    other = tmp_path / "other.db"
    db = sqlite3.connect(other)
    db.execute("CREATE TABLE t (x)")
    db.close()
    with pytest.raises(ObservedStoreError, match="not an observed broker store"):
        ObservedBrokerStore(other, create=False)


# -- replica-assignor observed ------------------------------------------------------------------
@pytest.fixture
def observed(capsys):
    def run(*argv: str) -> tuple[int, str, str]:
        rc = cli_main(["observed", *argv])
        out, err = capsys.readouterr()
        return rc, out, err

    return run


@pytest.fixture
def filled(path) -> Path:
    with ObservedBrokerStore(path) as store:
        store.record([BrokerEntry(1, "zone-a", True, "10.0.0.1", 9092), BrokerMetadata(2)], now=0.0)
        store.record([BrokerMetadata(2)], now=86_400.5)
    return path


def test_cli_list_table(observed, filled):
    rc, out, err = observed("list", "--path", str(filled))
    assert (rc, err) == (0, "")
    lines = out.splitlines()
    assert lines[0].split() == ["ID", "RACK", "ENDPOINT", "FIRST", "SEEN", "LAST", "SEEN"]
    assert lines[1].split() == ["1", "zone-a", "10.0.0.1:9092", "1970-01-01T00:00:00.000Z",
                                "1970-01-01T00:00:00.000Z"]
    assert lines[2].split() == ["2", "-", "-", "1970-01-01T00:00:00.000Z", "1970-01-02T00:00:00.500Z"]


def test_cli_list_json(observed, filled):
    rc, out, _ = observed("list", "--json", "--path", str(filled))
    assert rc == 0
    assert json.loads(out) == [
        {"id": 1, "rack": "zone-a", "host": "10.0.0.1", "port": 9092,
         "first_seen": "1970-01-01T00:00:00.000Z", "last_seen": "1970-01-01T00:00:00.000Z"},
        {"id": 2, "rack": None, "host": None, "port": None,
         "first_seen": "1970-01-01T00:00:00.000Z", "last_seen": "1970-01-02T00:00:00.500Z"},
    ]


def test_cli_forget(observed, filled):
    rc, out, err = observed("forget", "2", "--path", str(filled))
    assert (rc, out, err) == (0, "forgot broker 2\n", "")
    with ObservedBrokerStore(filled) as store:
        assert [b.id for b in store.list()] == [1]


@pytest.mark.parametrize("argv, rc, message", [
    (("forget", "9"), 1, "broker 9 is not in"),
    (("forget", "x"), 2, "broker id must be an integer >= 0, got 'x'"),
    (("forget", "-1"), 2, "broker id must be an integer >= 0, got '-1'"),
])
def test_cli_forget_refusals_are_one_line(observed, filled, argv, rc, message):
    got_rc, out, err = observed(*argv, "--path", str(filled))
    assert got_rc == rc and out == ""
    assert len(err.splitlines()) == 1 and message in err


def test_cli_missing_store_is_one_line_and_not_created(observed, tmp_path):
    missing = tmp_path / "nope.db"
    rc, out, err = observed("list", "--path", str(missing))
    assert rc == 2 and out == ""  # a missing store is bad configuration
    assert err == f"replica-assignor observed list: error: no observed broker store at {missing}\n"
    assert not missing.exists()


def test_cli_default_path_from_the_working_directory(filled, tmp_path):
    assert DEFAULT_OBSERVED_PATH == "observed-brokers.db"
    filled.rename(tmp_path / DEFAULT_OBSERVED_PATH)
    done = subprocess.run([sys.executable, "-m", "kafka_replica_assignor.cli.main", "observed", "list", "--json"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])})
    assert done.returncode == 0, done.stderr
    assert [b["id"] for b in json.loads(done.stdout)] == [1, 2]
