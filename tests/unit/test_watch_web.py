"""The watcher's web listener in this process, on port 0, against a status fed with a view (no
Kafka): who may ask what (401 without or with wrong credentials, 403 when none are configured,
read-only endpoints open only when configured so), plan requests refused with the very messages
of ``balance`` and ``execute``, dry runs written as proposals with their report, one action at a
time, requests to the running plan through its control file, the audit log filtered, TLS, and
the bad configurations refused at start-up. (The page in a real browser on a real cluster:
tests/kafka/test_watch_web.py.)"""

from __future__ import annotations

import argparse
import base64
import http.client
import json
import ssl
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kafka_replica_assignor.cli.main import main
from kafka_replica_assignor.cluster.snapshot import BrokerEntry, ClusterSnapshot, PartitionEntry
from kafka_replica_assignor.planner.execution.executor_state import CONTROL
from kafka_replica_assignor.watcher.audit import AuditLog
from kafka_replica_assignor.watcher.decisions import View
from kafka_replica_assignor.watcher.status import WatchStatus
from kafka_replica_assignor.web.api import ROUTES, Api
from kafka_replica_assignor.web.config import ConfigError, WebConfig, digest, web_config
from kafka_replica_assignor.web.operations import Operations
from kafka_replica_assignor.web.server import WebServer

TOKEN = "a-token-of-some-length"
ROOT = Path(__file__).resolve().parents[2]
RACKS = {0: "/dc1/r1", 1: "/dc1/r2", 2: "/dc2/r1", 3: "/dc2/r2", 4: "/dc2/r2"}


def snapshot() -> ClusterSnapshot:
    brokers = tuple(BrokerEntry(b, RACKS[b]) for b in range(5))
    parts = tuple(PartitionEntry("t", p, (p % 3, (p + 2) % 3 + (p % 2) * 2), p % 3, None, 1000 * (p + 1))
                  for p in range(12))
    return ClusterSnapshot(brokers, parts)


class Client:
    def __init__(self, port: int, tls: ssl.SSLContext | None = None) -> None:
        self.port = port
        self.tls = tls

    def __call__(self, method: str, path: str, params: dict[str, str] | None = None, *,
                 auth: str | None = f"Bearer {TOKEN}", headers: dict[str, str] | None = None,
                 ) -> tuple[int, Any, dict[str, str]]:
        conn: http.client.HTTPConnection = (http.client.HTTPSConnection("localhost", self.port, context=self.tls)
                                            if self.tls else http.client.HTTPConnection("127.0.0.1", self.port))
        sent = dict(headers or {})
        if auth:
            sent["Authorization"] = auth
        body = None
        if params is not None:
            body = urllib.parse.urlencode(params)
            sent["Content-Type"] = "application/x-www-form-urlencoded"
        conn.request(method, path, body=body, headers=sent)
        response = conn.getresponse()
        data = response.read()
        conn.close()
        kind = response.getheader("Content-Type") or ""
        return response.status, json.loads(data) if kind.startswith("application/json") else data, \
            dict(response.getheaders())


class Setup:
    def __init__(self, tmp_path: Path, *, dry_run: bool = False, open_reads: bool = False,
                 credentials: bool = True, tls: tuple[str, str] | None = None) -> None:
        self.state_dir = tmp_path / "watch"
        (self.state_dir / "plans").mkdir(parents=True)
        self.status = WatchStatus(dry_run=dry_run)
        self.audit = AuditLog(str(self.state_dir / "audit.jsonl"))
        self.operations = Operations(self.status, str(self.state_dir), dry_run, self.say, charts=False)
        config = WebConfig("127.0.0.1", 0, tls[0] if tls else None, tls[1] if tls else None,
                           ((digest("ops"), digest("secret")),) if credentials else (),
                           (digest(TOKEN),) if credentials else (), open_reads)
        self.server = WebServer(config, Api(self.status, str(self.state_dir), self.operations))
        self.port = self.server.start()

    def say(self, event: str, **fields: Any) -> dict[str, Any]:
        record = self.audit.write(event, **fields)
        self.status.record(record)
        return record

    def see(self) -> None:
        self.status.saw(View(snapshot(), frozenset({4}), frozenset(), time.time()), {4: time.time() - 5})

    def close(self) -> None:
        self.server.close()
        self.audit.close()


@pytest.fixture
def web(tmp_path: Path) -> Iterator[tuple[Setup, Client]]:
    setup = Setup(tmp_path)
    setup.see()
    try:
        yield setup, Client(setup.port)
    finally:
        setup.close()


def test_the_page_is_served_to_anyone_and_the_state_only_with_credentials(web: tuple[Setup, Client]) -> None:
    _, call = web
    code, page, _ = call("GET", "/", auth=None)
    assert code == 200 and b"replica-assignor watch" in page
    code, script, headers = call("GET", "/static/app.js", auth=None)
    assert code == 200 and headers["Content-Type"].startswith("text/javascript")
    code, body, headers = call("GET", "/api/state", auth=None)
    assert code == 401 and body == {"error": "credentials required (HTTP basic or a bearer token)"}
    assert headers["WWW-Authenticate"].startswith("Basic ")
    code, _, headers = call("GET", "/api/state", auth=None, headers={"X-Requested-With": "fetch"})
    assert code == 401 and headers["WWW-Authenticate"].startswith("Bearer ")   # no browser dialog for the page
    assert call("GET", "/api/state", auth="Bearer not-the-token")[0] == 401
    code, state, _ = call("GET", "/api/state")
    assert code == 200
    brokers = {b["id"]: b for b in state["cluster"]["brokers"]}
    assert sorted(brokers) == [0, 1, 2, 3, 4]
    assert brokers[2]["rack_path"] == ["dc2", "r1"] and brokers[4]["state"] == "fenced"
    assert sum(b["bytes"] for b in brokers.values()) == 2 * sum(1000 * (p + 1) for p in range(12))
    assert set(state["cluster"]["bands"]) == {"replicas", "leaders", "bytes"}
    basic = "Basic " + base64.b64encode(b"ops:secret").decode()
    assert call("GET", "/api/load", auth=basic)[0] == 200
    assert call("GET", "/api/load", auth="Basic " + base64.b64encode(b"ops:wrong").decode())[0] == 401
    assert call("GET", "/api/nothing")[0] == 404
    assert call("POST", "/api/state")[0] == 405


def test_read_only_endpoints_open_only_by_configuration_and_changing_ones_never(tmp_path: Path) -> None:
    setup = Setup(tmp_path, open_reads=True)
    setup.see()
    try:
        call = Client(setup.port)
        assert call("GET", "/api/state", auth=None)[0] == 200
        assert call("GET", "/api/proposals", auth=None)[0] == 401       # it plans: CPU for callers known only
        code, body, _ = call("POST", "/api/rebalance", {"dryrun": "true"}, auth=None)
        assert code == 401, body
        code, body, _ = call("POST", "/api/execution/cancel", {}, auth=None)
        assert code == 401, body
    finally:
        setup.close()
    setup = Setup(tmp_path / "none", open_reads=True, credentials=False)
    try:
        code, body, _ = Client(setup.port)("POST", "/api/rebalance", {"dryrun": "true"}, auth=None)
        assert code == 403 and "no credentials configured" in body["error"]
    finally:
        setup.close()


def cli_error(tmp_path: Path, capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    path = tmp_path / "cluster.json"
    path.write_text(json.dumps(snapshot().to_dict()))
    try:
        code = main(["balance", "--snapshot", str(path), "--out", str(tmp_path / "out"), "--no-charts", *argv])
    except SystemExit as exc:
        code = int(exc.code or 0)
    assert code == 2
    return capsys.readouterr().err.strip().splitlines()[-1]


@pytest.mark.parametrize(("endpoint", "params", "argv"), [
    ("rebalance", {"threshold": "200"}, ["--mode", "cluster", "--threshold", "200"]),
    ("rebalance", {"mode": "sideways"}, ["--mode", "sideways"]),
    ("rebalance", {"mode": "leader", "max_moves": "3"}, ["--mode", "leader", "--max-moves", "3"]),
    ("rebalance", {"topics": "("}, ["--mode", "cluster", "--topics", "("]),
    ("remove_broker", {"brokerid": "1,x"}, ["--mode", "replica", "--remove-brokers", "1,x"]),
    ("remove_broker", {"brokerid": "1", "add_brokers": "1"},
     ["--mode", "replica", "--remove-brokers", "1", "--add-brokers", "1"]),
    ("demote_broker", {"brokerid": "2", "mode": "replica"}, ["--mode", "replica", "--demote-brokers", "2"]),
    ("add_broker", {"brokerid": "9"}, ["--mode", "replica", "--add-brokers", "9"]),
])
def test_a_bad_plan_request_is_refused_with_the_command_lines_message(
        web: tuple[Setup, Client], tmp_path: Path, capsys: pytest.CaptureFixture[str], endpoint: str,
        params: dict[str, str], argv: list[str]) -> None:
    _, call = web
    code, body, _ = call("POST", f"/api/{endpoint}", params)
    assert code == 400, body
    said = cli_error(tmp_path, capsys, *argv).removesuffix(" (see replica-assignor balance --help)")
    assert said == f"replica-assignor balance: error: {body['error']}", (said, body)


def test_unknown_parameters_and_missing_brokers_are_refused(web: tuple[Setup, Client]) -> None:
    _, call = web
    code, body, _ = call("POST", "/api/rebalance", {"colour": "red"})
    assert code == 400 and body["error"] == "unrecognized arguments: --colour red"
    code, body, _ = call("POST", "/api/remove_broker", {})
    assert code == 400 and body["error"].startswith("the following arguments are required: brokerid")
    code, body, _ = call("POST", "/api/rebalance", {"dryrun": "perhaps"})
    assert code == 400 and body["error"] == "dryrun must be true or false, got 'perhaps'"
    code, body, _ = call("GET", "/api/audit?limit=0")
    assert code == 400 and body["error"] == "limit must be in 1..1000, got 0"


def test_a_dry_run_is_the_default_and_leaves_a_proposal_with_its_report(web: tuple[Setup, Client]) -> None:
    setup, call = web
    code, task, _ = call("POST", "/api/remove_broker", {"brokerid": "4"}, auth="Basic " +
                         base64.b64encode(b"ops:secret").decode())
    assert code == 200, task
    assert task["dryrun"] and task["status"] == "proposed" and task["user"] == "ops"
    assert task["summary"]["replica_moves"] > 0
    assert any(m["from"] == 4 for m in task["moves"]) and all(m["to"] != 4 for m in task["moves"])
    assert setup.operations.take() is None              # nothing handed to the watcher
    _, tasks, _ = call("GET", "/api/user_tasks")
    assert [t["id"] for t in tasks["user_tasks"]] == [task["id"]]
    _, plans, _ = call("GET", "/api/plans")
    (proposal,) = plans["proposals"]
    assert "report.md" in proposal["files"] and proposal["summary"]["replica_moves"] == task["summary"]["replica_moves"]
    code, report, headers = call("GET", f"/api/plans/proposals/{proposal['name']}/report.md")
    assert code == 200 and headers["Content-Type"].startswith("text/markdown") and b"#" in report
    assert call("GET", f"/api/plans/proposals/{proposal['name']}/..%2Fx.md")[0] == 404
    assert call("GET", "/api/plans/proposals/../audit.jsonl")[0] == 404
    _, found, _ = call("GET", "/api/audit?event=requested")
    assert [r["endpoint"] for r in found["records"]] == ["remove_broker"]
    assert found["records"][0]["user"] == "ops"
    code, proposed, _ = call("GET", "/api/proposals?mode=leader")
    assert code == 200 and proposed["dryrun"] and proposed["endpoint"] == "proposals"


def test_a_plan_is_handed_to_the_watcher_one_at_a_time(web: tuple[Setup, Client]) -> None:
    setup, call = web
    code, task, _ = call("POST", "/api/rebalance", {"dryrun": "false", "mode": "leader"})
    assert code == 202 and task["status"] == "queued", task
    code, body, _ = call("POST", "/api/rebalance", {"dryrun": "false"})
    assert code == 409 and body["error"] == f"task {task['id']} waits for the watcher: one action at a time"
    taken = setup.operations.take()
    assert taken is not None and taken.id == task["id"] and taken.made is not None
    setup.status.executing("operator", "rebalance", str(setup.state_dir / "plans" / "00001-operator"))
    code, body, _ = call("POST", "/api/demote_broker", {"brokerid": "1", "dryrun": "false"})
    assert code == 409 and body["error"].startswith("a plan is running (")
    setup.operations.finished(taken, "done")
    _, tasks, _ = call("GET", "/api/user_tasks")
    assert tasks["user_tasks"][0]["status"] == "done"


def test_a_watcher_in_dry_run_changes_nothing(tmp_path: Path) -> None:
    setup = Setup(tmp_path, dry_run=True)
    setup.see()
    try:
        code, body, _ = Client(setup.port)("POST", "/api/rebalance", {"dryrun": "false"})
        assert code == 409 and body["error"].startswith("the watcher runs with --dry-run")
    finally:
        setup.close()


def test_requests_to_the_running_plan_go_through_its_control_file(web: tuple[Setup, Client], tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    setup, call = web
    code, body, _ = call("POST", "/api/execution/pause", {})
    assert code == 409 and body["error"] == "no plan is running"
    plan_dir = setup.state_dir / "plans" / "00001-placement"
    plan_dir.mkdir()
    setup.status.executing("placement", "t", str(plan_dir))
    for action, params, request in (("pause", {}, {"pause": True}), ("resume", {}, {"resume": True}),
                                    ("throttle", {"rate": "5000"}, {"throttle": 5000}),
                                    ("cancel", {}, {"cancel": True})):
        code, body, _ = call("POST", f"/api/execution/{action}", params)
        assert code == 202 and body["requested"] == request
        assert json.loads((plan_dir / CONTROL).read_text()) == request
    code, body, _ = call("POST", "/api/execution/throttle", {"rate": "fast"})
    assert code == 400
    try:
        main(["execute", "--plan", str(plan_dir), "--throttle", "fast"])
    except SystemExit:
        pass
    said = capsys.readouterr().err.strip().removesuffix(" (see replica-assignor execute --help)")
    assert said == f"replica-assignor execute: error: {body['error']}"
    assert call("POST", "/api/execution/cancel", {}, auth=None)[0] == 401
    _, found, _ = call("GET", "/api/audit?event=requested&text=cancel")
    assert [r["request"] for r in found["records"]] == [{"cancel": True}]


def test_the_state_answers_tls_clients(tmp_path: Path) -> None:
    from tests.e2e.pki import Pki

    pki = Pki.create(tmp_path / "pki")
    setup = Setup(tmp_path, tls=(str(pki.server_keystore), str(pki.server_keystore)))
    setup.see()
    try:
        context = ssl.create_default_context(cafile=str(pki.ca.path))
        code, state, _ = Client(setup.port, context)("GET", "/api/state")
        assert code == 200 and len(state["cluster"]["brokers"]) == 5
    finally:
        setup.close()


def options(**given: Any) -> argparse.Namespace:
    base = {"http_listener": "127.0.0.1:0", "http_tls_cert": None, "http_tls_key": None, "http_users": None,
            "http_token_file": None, "http_open_reads": False}
    return argparse.Namespace(**{**base, **given})


def test_bad_web_configurations_are_refused_at_start_up(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("REPLICA_ASSIGNOR_WATCH_TOKEN", raising=False)
    monkeypatch.delenv("REPLICA_ASSIGNOR_WATCH_USER", raising=False)
    short = tmp_path / "short"
    short.write_text("abc\n")
    users = tmp_path / "users"
    users.write_text("# operators\nops\n")
    cases = [
        (options(), "--http-listener needs credentials"),
        (options(http_listener="0.0.0.0:8080", http_open_reads=True), "is not on the loopback interface"),
        (options(http_token_file=str(short)), "a token has at least 16 characters, got 3"),
        (options(http_users=str(users)), "expected NAME:PASSWORD"),
        (options(http_users=str(tmp_path / "missing")), "No such file or directory"),
        (options(http_tls_cert=str(short), http_open_reads=True), "--http-tls-cert and --http-tls-key go together"),
        (options(http_tls_cert=str(short), http_tls_key=str(short), http_open_reads=True), "--http-tls-cert"),
        (options(http_listener=None, http_users=str(users)), "--http-users needs --http-listener"),
    ]
    for args, message in cases:
        with pytest.raises(ConfigError, match=message.replace("(", r"\(")):
            web_config(args)
    monkeypatch.setenv("REPLICA_ASSIGNOR_WATCH_TOKEN", TOKEN)
    config = web_config(options())
    assert config is not None and config.tokens == (digest(TOKEN),) and config.host == "127.0.0.1"


def test_the_openapi_file_documents_every_route_with_its_method_and_nothing_else() -> None:
    documented: set[tuple[str, str]] = set()
    path = None
    for line in (ROOT / "docs" / "watch-api.yaml").read_text(encoding="utf-8").splitlines():
        if line.startswith("  /") and line.endswith(":"):
            path = line.strip().rstrip(":")
        elif path is not None and line.startswith("    ") and line.strip() in ("get:", "post:"):
            documented.add((line.strip().rstrip(":").upper(), path))
        elif not line.startswith(" "):
            path = None
    served = {(route.method, route.documented) for route in ROUTES} | {("GET", "/metrics")}
    assert documented == served
