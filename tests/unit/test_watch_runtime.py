"""The watcher's loop (cli/watch_runtime.py) against fake clusters, a fake clock and real files:
placeholders filled when their brokers return (and a dry run that decides without acting), the
lost cluster said once a minute, a view gone stale while deciding never acted on, the metrics
endpoint scraped over HTTP."""

from __future__ import annotations

import argparse
import json
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from itertools import product
from pathlib import Path
from time import gmtime
from time import time as real_time
from types import SimpleNamespace
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from kafka_replica_assignor.cli import watch, watch_runtime
from kafka_replica_assignor.cli.execute import load_plan
from kafka_replica_assignor.cli.intent import TopicIntent, read_record, write_record
from kafka_replica_assignor.cluster.snapshot import BrokerEntry, ClusterSnapshot, PartitionEntry
from kafka_replica_assignor.watcher.audit import read_audit
from kafka_replica_assignor.watcher.decisions import ACTIONS, KINDS, Decision, View
from kafka_replica_assignor.watcher.ledger import Ledger
from kafka_replica_assignor.watcher.status import EXECUTION_KINDS, STATUSES

RACKS = ("/dc1/zone-a", "/dc1/zone-b", "/dc2/zone-a")
ALL = tuple(BrokerEntry(i, RACKS[i % 3]) for i in range(5))
WITHOUT_4 = ALL[:4]
#: made by create-topic while broker 4 was unregistered: partition 1's third replica was meant for it
INTENT = TopicIntent("orders", {0: (0, 1, 2), 1: (2, 0, -1)}, frozenset({0, 1, 2, 3}), "2026-01-01T00:00:00Z")
CREATED = {0: (0, 1, 2), 1: (2, 0)}
FILLED = {0: (0, 1, 2), 1: (2, 0, 4)}


class Clock:
    def __init__(self, now: float = 1_800_000_000.0) -> None:   # 2027, after the records were made
        self.now = now

    def time(self) -> float:
        return self.now


class FakeCluster:
    """What the watcher reads (``read``, ``ongoing``, ``close``); ``snapshot`` None: unreachable."""

    def __init__(self, snapshot: ClusterSnapshot | None, fenced: frozenset[int] = frozenset()) -> None:
        self.snapshot, self.fenced = snapshot, fenced
        self.reads: list[bool] = []       # with_sizes of each read

    def read(self, with_sizes: bool = True) -> Any:
        self.reads.append(with_sizes)
        if self.snapshot is None:
            raise OSError("Connection refused")
        return SimpleNamespace(snapshot=self.snapshot, fenced=self.fenced)

    def ongoing(self) -> list[tuple[str, int]]:
        return []

    def close(self) -> None:
        pass


def snapshot(topics: dict[str, dict[int, tuple[int, ...]]], brokers: tuple[BrokerEntry, ...] = ALL) -> ClusterSnapshot:
    return ClusterSnapshot(brokers, tuple(PartitionEntry(t, p, r, leader=r[0], size_bytes=0)
                                          for t, a in sorted(topics.items()) for p, r in sorted(a.items())))


@pytest.fixture
def make_watcher(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., watch_runtime.Watcher]]:
    """Watchers as ``replica-assignor watch`` builds them (its own parser and settings), on a
    fake clock; their audit logs closed at the end."""
    made: list[watch_runtime.Watcher] = []

    def build(*extra: str, clock: Clock | None = None) -> watch_runtime.Watcher:
        parser = argparse.ArgumentParser()
        watch.add_parser(parser.add_subparsers())
        args = parser.parse_args(["watch", "--bootstrap-server", "kafka:9092", "--assignor", "assignor:9092",
                                  "--state-dir", str(tmp_path / "state"), *extra])
        rules = watch.settings(args)
        now = (clock or Clock()).time
        monkeypatch.setattr(watch_runtime, "time", SimpleNamespace(
            time=now, strftime=watch_runtime.time.strftime, localtime=watch_runtime.time.localtime))
        made.append(watch_runtime.Watcher(args, rules, Ledger.load(args.state_dir, dry_run=args.dry_run)))
        return made[-1]

    yield build
    for w in made:
        w.audit.close()


def view_of(snap: ClusterSnapshot, clock: Clock, fenced: frozenset[int] = frozenset()) -> View:
    return View(snap, fenced, frozenset(), clock.now)


def audit(w: watch_runtime.Watcher, event: str = "decided") -> list[dict[str, Any]]:
    return [r for r in read_audit(w.audit.path) if r["event"] == event]


def plans(w: watch_runtime.Watcher) -> list[str]:
    return sorted(p.name for p in (Path(w.args.state_dir) / "plans").iterdir())


# ---- returning brokers (KIP-409) -------------------------------------------------------------

@pytest.fixture
def intent_file(tmp_path: Path) -> Path:
    path = tmp_path / "intent.json"
    write_record(path, [INTENT])
    return path


def test_a_placeholder_is_filled_when_its_broker_returns(
        make_watcher: Any, monkeypatch: pytest.MonkeyPatch, intent_file: Path) -> None:
    clock = Clock()
    w = make_watcher("--intent-file", str(intent_file), clock=clock)
    ran: list[Any] = []

    def run_plan(kind: str, subject: str, plan_dir: str, moves: int) -> str:
        plan = load_plan(watch_runtime.execute_options(plan_dir, w.args))   # what execute reads
        ran.append((kind, subject, dict(plan.targets), dict(plan.starting)))
        return "done"

    monkeypatch.setattr(w, "run_plan", run_plan)
    # broker 4 still unregistered, then back but fenced: nothing to fill
    assert not w.fill(view_of(snapshot({"orders": CREATED}, WITHOUT_4), clock))
    assert not w.fill(view_of(snapshot({"orders": CREATED}), clock, fenced=frozenset({4})))
    assert audit(w) == [] and ran == []
    # broker 4 registered and unfenced: the placeholder is its
    assert w.fill(view_of(snapshot({"orders": CREATED}), clock))
    (decided,) = audit(w)
    assert (decided["kind"], decided["action"], decided["subject"], decided["brokers"]) == (
        "placeholders", "fill", "orders", [4])
    assert decided["moves"] == [{"topic": "orders", "partition": 1, "from": [2, 0], "to": [2, 0, 4]}]
    assert decided["dry_run"] is False and decided["seen"]["brokers"] == [0, 1, 2, 3, 4]
    assert ran == [("placeholders", "orders", {("orders", 1): (2, 0, 4)}, {("orders", 1): (2, 0)})]
    assert plans(w) == ["00001-placeholders"]
    assert read_record(intent_file) == [INTENT]      # complete only once the cluster shows it
    # the next view shows the topic complete: it leaves the record, and nothing more is done
    assert not w.fill(view_of(snapshot({"orders": FILLED}), clock))
    assert audit(w)[-1]["action"] == "leave" and read_record(intent_file) == []
    assert len(ran) == 1


def test_a_dry_run_decides_the_fill_and_changes_nothing(make_watcher: Any, intent_file: Path) -> None:
    clock = Clock()
    done = TopicIntent("done", {0: (1, -1)}, frozenset({0, 1, 2, 3}), "2026-01-01T00:00:00Z")
    write_record(intent_file, [done, INTENT])
    before = intent_file.read_bytes()
    w = make_watcher("--intent-file", str(intent_file), "--dry-run", clock=clock)
    w.cluster = FakeCluster(snapshot({"orders": CREATED, "done": {0: (1, 4)}}))
    w.round()
    w.round()
    decided = audit(w)
    # each said once: the complete topic (it would leave the record), the fill
    assert [(d["subject"], d["action"], d["dry_run"]) for d in decided] == [
        ("done", "leave", True), ("orders", "fill", True)]
    assert decided[1]["moves"] == [{"topic": "orders", "partition": 1, "from": [2, 0], "to": [2, 0, 4]}]
    assert intent_file.read_bytes() == before
    assert plans(w) == [] and w.ledger.active is None
    assert audit(w, "executed") == []


def test_an_intent_topic_missing_from_the_cluster_is_dropped_only_after_a_while(
        make_watcher: Any, intent_file: Path) -> None:
    """create-topic writes the record before it creates the topic: a watcher reading in between
    must not drop it."""
    clock = Clock()
    w = make_watcher("--intent-file", str(intent_file), clock=clock)
    empty = snapshot({})
    start = clock.now
    assert not w.fill(view_of(empty, clock))
    assert [(d["subject"], d["action"]) for d in audit(w)] == [("orders", "wait")]
    clock.now = start + 250     # create-topic records "fresh", then creates it
    stamp = watch_runtime.time.strftime("%Y-%m-%dT%H:%M:%SZ", gmtime(clock.now))
    fresh = TopicIntent("fresh", {0: (0, -1)}, frozenset({0, 1, 2, 3}), stamp)
    write_record(intent_file, [INTENT, fresh])
    assert not w.fill(view_of(empty, clock))
    clock.now = start + watch_runtime.MISSING_S
    assert not w.fill(view_of(empty, clock))
    # "orders" missing for 300 s and made long ago: dropped; "fresh" made 50 s ago: kept
    assert [i.topic for i in read_record(intent_file)] == ["fresh"]
    assert [(d["subject"], d["action"]) for d in audit(w)] == [
        ("orders", "wait"), ("fresh", "wait"), ("orders", "refuse")]
    there = view_of(snapshot({"fresh": {0: (0,)}}, WITHOUT_4), clock)
    assert not w.fill(there)
    clock.now += 2 * watch_runtime.MISSING_S
    assert not w.fill(there)
    assert [i.topic for i in read_record(intent_file)] == ["fresh"]   # waits for broker 4


def test_a_fill_that_did_not_finish_is_tried_again_a_minute_later(
        make_watcher: Any, monkeypatch: pytest.MonkeyPatch, intent_file: Path) -> None:
    clock = Clock()
    w = make_watcher("--intent-file", str(intent_file), clock=clock)
    monkeypatch.setattr(w, "run_plan", lambda *a: "refused")
    back = snapshot({"orders": CREATED})
    assert w.fill(view_of(back, clock))
    assert not w.fill(view_of(back, clock))
    clock.now += watch_runtime.RETRY_S
    assert w.fill(view_of(back, clock))
    assert [d["action"] for d in audit(w)] == ["fill", "fill"] and len(plans(w)) == 2


# ---- a lost cluster, a stale view ------------------------------------------------------------

def test_a_lost_cluster_is_said_once_a_minute_and_its_return_once(
        make_watcher: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    clock = Clock()
    w = make_watcher(clock=clock)
    cluster = FakeCluster(None)
    monkeypatch.setattr(w, "open_cluster", lambda: cluster)
    start = clock.now
    said = []
    for offset in (0, 2, 30, 59.9, 60, 62, 119, 121, 150):
        clock.now = start + offset
        assert w.read() is None
        said.append(len(audit(w, "cluster_lost")))
    assert said == [1, 1, 1, 1, 2, 2, 2, 3, 3]      # at 0, 60 and 121 s
    lost = audit(w, "cluster_lost")
    assert all(r["since"] == start and "Connection refused" in r["error"] for r in lost)
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 3 and all("cannot read kafka:9092" in line and "waiting" in line for line in err)
    assert w.status.read()["counters"]["refresh_failures"] == 9
    cluster.snapshot = snapshot({})
    clock.now = start + 200
    assert w.read() is not None and w.read() is not None
    (back,) = audit(w, "cluster_back")
    assert back["lost_s"] == 200
    cluster.snapshot = None
    clock.now += 1
    assert w.read() is None and len(audit(w, "cluster_lost")) == 4   # a new loss is said at once


def test_a_view_gone_stale_while_deciding_is_not_acted_on(make_watcher: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The assignor answers after more than two refresh intervals: the placement is decided,
    logged and not acted on."""
    clock = Clock()
    w = make_watcher("--refresh-interval-ms", "1000", clock=clock)
    w.ledger.topics = {}
    w.cluster = FakeCluster(snapshot({"t": {0: (0, 1), 1: (1, 3)}}))

    def slow_answer(candidate: Any) -> dict[int, tuple[int, ...]]:
        clock.now += 2.5
        return {0: (0, 2), 1: (2, 1)}

    monkeypatch.setattr(w, "ask", slow_answer)
    monkeypatch.setattr(w, "run_plan", lambda *a: pytest.fail("a stale view was acted on"))
    w.round()
    decided = audit(w)
    assert [(d["action"], d["subject"]) for d in decided] == [("place", "t"), ("wait", "t")]
    assert "older than two refresh intervals" in decided[1]["reason"]
    assert plans(w) == [] and w.ledger.active is None
    # fresh: acted on
    view = view_of(snapshot({"t": {0: (0, 1)}}), clock)
    clock.now += 2.0
    monkeypatch.setattr(w, "run_plan", lambda *a: "done")
    decision = Decision("placement", "place", "u", "test", {("t", 0): (0, 2)}, {("t", 0): (0, 1)})
    assert w.decide(decision, view) == "done" and len(plans(w)) == 1
    clock.now += 0.1
    assert w.decide(decision, view) == "stale" and len(plans(w)) == 1


def test_at_rest_no_size_is_read(make_watcher: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """DescribeLogDirs to every broker is most of a read: a round with nothing to judge reads
    Metadata only; a new topic in scope gets one read with sizes, and the ledger file is written
    only when it changes."""
    w = make_watcher()
    w.cluster = cluster = FakeCluster(snapshot({"old": {0: (0, 1)}}))
    for _ in range(3):
        w.round()
    assert cluster.reads == [False, False, False]
    ledger = Path(w.ledger.path)
    written = ledger.stat().st_mtime_ns
    w.round()
    assert ledger.stat().st_mtime_ns == written
    cluster.snapshot = snapshot({"old": {0: (0, 1)}, "new": {0: (0, 1)}})
    monkeypatch.setattr(w, "ask", lambda candidate: {0: (1, 0)})     # equivalent: left alone
    w.round()
    assert cluster.reads == [False] * 4 + [False, True]
    assert audit(w)[-1]["action"] == "leave"
    w.round()
    assert cluster.reads[-1] is False and json.loads(ledger.read_text())["topics"] == {"old": 1, "new": 1}


def test_a_dry_run_keeps_its_ledger_apart_so_a_real_run_still_places(
        make_watcher: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """A dry run judges a new topic and records it in its own ledger only: a real run started
    later on the same state directory judges and places that topic (its baseline is its own)."""
    old: dict[str, dict[int, tuple[int, ...]]] = {"old": {0: (0, 1)}}
    new: dict[str, dict[int, tuple[int, ...]]] = {**old, "new": {0: (0, 1), 1: (1, 3)}}
    dry = make_watcher("--dry-run")
    dry.cluster = FakeCluster(snapshot(old))
    dry.round()                                                      # the dry run's baseline
    dry.cluster.snapshot = snapshot(new)
    monkeypatch.setattr(dry, "ask", lambda candidate: {0: (0, 2), 1: (2, 1)})
    monkeypatch.setattr(dry, "run_plan", lambda *a: pytest.fail("a dry run acted"))
    dry.round()
    assert [(d["action"], d["subject"], d["dry_run"]) for d in audit(dry)] == [("place", "new", True)]
    state = Path(dry.args.state_dir)
    assert not (state / "watch-state.json").exists()
    assert json.loads((state / "watch-state.dry-run.json").read_text())["topics"] == {"old": 1, "new": 2}
    real = make_watcher()
    real.cluster = FakeCluster(snapshot(old))
    real.round()                                                     # its own baseline: "new" is not in it
    real.cluster.snapshot = snapshot(new)
    ran: list[str] = []
    monkeypatch.setattr(real, "ask", lambda candidate: {0: (0, 2), 1: (2, 1)})

    def run_plan(kind: str, subject: str, *rest: Any) -> str:
        ran.append(subject)
        return "done"

    monkeypatch.setattr(real, "run_plan", run_plan)
    real.round()
    assert ran == ["new"]
    assert json.loads((state / "watch-state.json").read_text())["topics"] == {"old": 1, "new": 2}
    again = make_watcher("--dry-run")                                # a dry run again: from its own file
    assert again.ledger.topics == {"old": 1, "new": 2} and again.ledger.path.endswith("watch-state.dry-run.json")


def test_execute_pause_and_resume_reach_the_running_execution_of_a_plan(
        make_watcher: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """``execute --pause`` / ``--resume`` write the control file the executor reads at its next
    poll (here this test plays the executor), as ``--cancel`` does; no running execution: refused."""
    from kafka_replica_assignor.cli.main import main
    from kafka_replica_assignor.planner.execution.executor_state import hold_lock, read_control

    clock = Clock()
    w = make_watcher(clock=clock)
    dirs: list[str] = []
    monkeypatch.setattr(w, "run_plan", lambda kind, subject, plan_dir, moves: dirs.append(plan_dir) or "done")
    decision = Decision("placement", "place", "t", "test", {("t", 0): (0, 2)}, {("t", 0): (0, 1)})
    assert w.decide(decision, view_of(snapshot({"t": {0: (0, 1)}}), clock)) == "done"
    plan_dir = dirs[0]
    assert main(["execute", "--plan", plan_dir, "--pause"]) == 1
    assert "no execution of this plan is running" in capsys.readouterr().err
    for flag, request in (("--pause", {"pause": True}), ("--resume", {"resume": True})):
        seen: list[Any] = []
        stop = threading.Event()

        def executor(seen: list[Any] = seen, stop: threading.Event = stop) -> None:
            while not stop.is_set() and not seen:
                got = read_control(plan_dir)
                if got is not None:
                    seen.append(got)
                time.sleep(0.05)

        with hold_lock(plan_dir):
            thread = threading.Thread(target=executor)
            thread.start()
            try:
                assert main(["execute", "--plan", plan_dir, flag]) == 0
            finally:
                stop.set()
                thread.join()
        assert seen == [request]
        assert ("is paused" if flag == "--pause" else "is resumed") in capsys.readouterr().err


# ---- the metrics endpoint --------------------------------------------------------------------

def scrape(port: int) -> dict[str, dict[tuple[tuple[str, str], ...], float]]:
    """``{sample name: {sorted labels: value}}`` as Prometheus reads the endpoint."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as answer:
        assert answer.status == 200 and answer.headers["Content-Type"].startswith("text/plain")
        text = answer.read().decode()
    out: dict[str, dict[tuple[tuple[str, str], ...], float]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out.setdefault(sample.name, {})[tuple(sorted(sample.labels.items()))] = sample.value
    return out


def test_the_metrics_endpoint_answers_with_fixed_labels(make_watcher: Any) -> None:
    clock = Clock(real_time())      # the status ages its view by the real clock
    w = make_watcher("--metrics-listener", "127.0.0.1:0", clock=clock)
    port = w.serve_metrics()
    assert port and w.metrics_server is not None
    try:
        first = scrape(port)
        decided = first["replica_assignor_watch_decisions_total"]
        assert set(decided) == {(("action", a), ("kind", k)) for k, a in product(KINDS, ACTIONS)}
        assert set(decided.values()) == {0.0}
        assert set(first["replica_assignor_watch_executions_total"]) == {
            (("kind", k), ("status", s)) for k, s in product(EXECUTION_KINDS, STATUSES)}
        assert first["replica_assignor_watch_view_age_seconds"][()] == float("inf")
        assert first["replica_assignor_watch_refreshes_total"][()] == 0
        # a decision about a topic of any name: counted, never a label of its own
        subject = 'evil"} 1\nreplica_assignor_watch_placements_total 99'
        w.say("decided", **Decision("placeholders", "fill", subject, "x").to_json(), dry_run=False)
        w.say("executed", kind="placeholders", subject=subject, plan_dir="p", status="done", moves=1)
        w.status.saw(view_of(snapshot({"t": {0: (0, 4)}}), clock, fenced=frozenset({4})), {4: clock.now})
        then = scrape(port)
        assert then["replica_assignor_watch_decisions_total"][(("action", "fill"), ("kind", "placeholders"))] == 1
        assert len(then["replica_assignor_watch_decisions_total"]) == len(KINDS) * len(ACTIONS)
        assert then["replica_assignor_watch_executions_total"][(("kind", "placeholders"), ("status", "done"))] == 1
        assert then["replica_assignor_watch_placements_total"][()] == 0
        assert then["replica_assignor_watch_brokers"] == {
            (("state", "up"),): 4, (("state", "fenced"),): 1, (("state", "gone"),): 0}
        assert then["replica_assignor_watch_refreshes_total"][()] == 1
        assert 0 <= then["replica_assignor_watch_view_age_seconds"][()] < 60
        labels = {k for family in then.values() for labelset in family for k, _ in labelset}
        assert labels == {"kind", "action", "status", "state"}
    finally:
        w.metrics_server.shutdown()
        w.metrics_server.server_close()
        w.audit.close()
    assert json.loads(Path(w.audit.path).read_text().splitlines()[0])["subject"] == subject
