"""Bad input to the real ``replica-assignor`` command: one line on stderr, the documented exit
code (2 bad input or configuration, 1 a failed operation), no traceback, nothing written.

Each case runs the installed command (``python -m kafka_replica_assignor.cli.main`` where the script is missing) in an
empty working directory of its own, against real servers on 127.0.0.1 (a replica assignor, a
SASL listener, a TLS listener) where it needs one. Afterwards the working directory must still
be empty and every input file unchanged. ``bench/bad_inputs.py`` runs these cases and more and
prints the table.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT_S = 90


@dataclass(frozen=True)
class Case:
    """``argv`` is a shell-quoted template: ``{name}`` is an input file, ``{assignor}``,
    ``{sasl}``, ``{tls}``, ``{closed}`` addresses; ``expect`` a piece of the error line."""

    id: str
    argv: str
    code: int
    expect: str = ""
    stdin: str = ""
    #: run as if the planner extra were not installed (its packages hidden from imports)
    without_planner: bool = False


CASES: tuple[Case, ...] = (
    # assign: Kafka's int32 and int16 limits, broker lists, --explain, files, listeners
    Case("assign-partitions-2^31", "assign --bootstrap-server {assignor} --partitions 2147483648 "
         "--replication-factor 1", 2, "int32"),
    Case("assign-partitions-10^12", "assign --bootstrap-server {assignor} --partitions 1000000000000 "
         "--replication-factor 1", 2, "int32"),
    Case("assign-rf-40000", "assign --bootstrap-server {assignor} --partitions 1 --replication-factor 40000",
         2, "int16"),
    # below 1: bad input here, as for create-topic (nothing is asked)
    Case("assign-partitions-0", "assign --bootstrap-server {assignor} --partitions 0 --replication-factor 1", 2,
         "--partitions: must be >= 1, got 0"),
    Case("assign-partitions-negative", "assign --bootstrap-server {assignor} --partitions -5 "
         "--replication-factor 1", 2, "must be >= 1"),
    Case("assign-partitions-text", "assign --bootstrap-server {assignor} --partitions many --replication-factor 1",
         2),
    Case("assign-rf-0", "assign --bootstrap-server {assignor} --partitions 1 --replication-factor 0", 2,
         "--replication-factor: must be >= 1"),
    # create-topic and add-partitions: Kafka's int32 and int16, checked before anything is asked
    Case("create-topic-partitions-99999999999", "create-topic --bootstrap-server {assignor} --assignor {assignor} "
         "--topic t --partitions 99999999999 --replication-factor 1", 2, "int32"),
    Case("create-topic-rf-40000", "create-topic --bootstrap-server {assignor} --assignor {assignor} --topic t "
         "--partitions 1 --replication-factor 40000", 2, "int16"),
    Case("create-topic-partitions-0", "create-topic --bootstrap-server {assignor} --assignor {assignor} --topic t "
         "--partitions 0 --replication-factor 1", 2, "must be >= 1"),
    Case("create-topic-topics-file-10^12", "create-topic --bootstrap-server {assignor} --assignor {assignor} "
         "--topics-file {huge_topics}", 2, "int32"),
    Case("add-partitions-10^12", "add-partitions --bootstrap-server {assignor} --assignor {assignor} --topic t "
         "--partitions 1000000000000", 2, "int32"),
    Case("assign-broker-list-empty", "assign --bootstrap-server {assignor} --partitions 1 --replication-factor 1 "
         "--broker-list ''", 2, "--broker-list"),
    Case("assign-broker-list-hole", "assign --bootstrap-server {assignor} --partitions 1 --replication-factor 1 "
         "--broker-list 11,,12", 2, "--broker-list"),
    Case("assign-broker-2^63", "assign --bootstrap-server {assignor} --partitions 1 --replication-factor 1 "
         "--broker-list 9223372036854775808", 2, "int32"),
    Case("assign-broker-2^31", "assign --bootstrap-server {assignor} --partitions 1 --replication-factor 1 "
         "--broker-list 2147483648", 2, "int32"),
    Case("assign-broker-negative", "assign --bootstrap-server {assignor} --partitions 1 --replication-factor 1 "
         "--broker-list -1", 2),
    Case("assign-broker-twice", "assign --bootstrap-server {assignor} --partitions 1 --replication-factor 1 "
         "--broker-list 11,11", 2, "twice"),
    Case("assign-explain-no-cluster", "assign --bootstrap-server {assignor} --partitions 4 --replication-factor 2 "
         "--explain", 2, "--cluster FILE"),
    Case("assign-explain-chart-no-dir", "assign --bootstrap-server {assignor} --partitions 4 --replication-factor 2 "
         "--cluster {cluster} --explain-chart {missing_dir}/chart.png", 2, "no such directory"),
    Case("assign-explain-chart-empty", "assign --bootstrap-server {assignor} --partitions 4 --replication-factor 2 "
         "--cluster {cluster} --explain-chart ''", 2, "--explain-chart"),
    Case("assign-explain-chart-dir", "assign --bootstrap-server {assignor} --partitions 4 --replication-factor 2 "
         "--cluster {cluster} --explain-chart {directory}", 2, "is a directory"),
    Case("assign-cluster-random", "assign --bootstrap-server {assignor} --partitions 1 --replication-factor 1 "
         "--explain --cluster {random}", 2, "not valid JSON"),
    Case("assign-cluster-nested", "assign --bootstrap-server {assignor} --partitions 1 --replication-factor 1 "
         "--explain --cluster {nested}", 2, "nested too deeply"),
    Case("assign-current-random", "assign --bootstrap-server {assignor} --partitions 2 --replication-factor 1 "
         "--current-assignment {random}", 2, "not valid JSON"),
    Case("assign-current-nested", "assign --bootstrap-server {assignor} --partitions 2 --replication-factor 1 "
         "--current-assignment {nested}", 2, "nested too deeply"),
    Case("assign-current-utf8", "assign --bootstrap-server {assignor} --partitions 2 --replication-factor 1 "
         "--current-assignment {bad_utf8}", 2, "UTF-8"),
    Case("assign-current-fifo", "assign --bootstrap-server {assignor} --partitions 2 --replication-factor 1 "
         "--current-assignment {fifo}", 2, "not a regular file"),
    Case("assign-truststore-missing", "assign --bootstrap-server {tls} --partitions 1 --replication-factor 1 "
         "--command-config {ssl_missing_truststore}", 2, "ssl.truststore.location"),
    Case("assign-truststore-not-pem", "assign --bootstrap-server {tls} --partitions 1 --replication-factor 1 "
         "--command-config {ssl_bad_truststore}", 2, "ssl.truststore.location"),
    Case("assign-plaintext-to-tls", "assign --bootstrap-server {tls} --partitions 1 --replication-factor 1 "
         "--timeout-ms 3000", 1, "TLS"),
    Case("assign-plaintext-to-sasl", "assign --bootstrap-server {sasl} --partitions 1 --replication-factor 1 "
         "--timeout-ms 3000", 1, "SASL"),
    Case("assign-nothing-listens", "assign --bootstrap-server {closed} --partitions 1 --replication-factor 1 "
         "--timeout-ms 3000", 1, "cannot connect"),
    # state: snapshots that are not snapshots, listeners that are not Kafka
    Case("state-random-bytes", "state --snapshot {random}", 2, "not valid JSON"),
    Case("state-bad-utf8", "state --snapshot {bad_utf8}", 2, "UTF-8"),
    Case("state-nested", "state --snapshot {nested}", 2, "nested too deeply"),
    Case("state-empty-file", "state --snapshot {empty}", 2, "not valid JSON"),
    Case("state-no-brokers", "state --snapshot {no_brokers}", 2, "no brokers"),
    Case("state-broker-2^63", "state --snapshot {broker_2_63}", 2, "int32"),
    Case("state-leader-not-replica", "state --snapshot {leader_not_replica}", 2, "not one of its replicas"),
    Case("state-missing", "state --snapshot {missing}", 2, "No such file"),
    Case("state-directory", "state --snapshot {directory}", 2, "directory"),
    Case("state-fifo", "state --snapshot {fifo}", 2, "not a regular file"),
    Case("state-our-assignor", "state --bootstrap-server {assignor} --timeout-ms 3000", 2,
         "is a replica assignor server, not a Kafka broker"),
    Case("state-plaintext-to-tls", "state --bootstrap-server {tls} --timeout-ms 3000", 1, "TLS"),
    Case("state-plaintext-to-sasl", "state --bootstrap-server {sasl} --timeout-ms 3000", 1, "SASL"),
    Case("state-bad-command-config", "state --snapshot {ok} --command-config {ssl_missing_truststore}", 2,
         "ssl.truststore.location"),
    Case("state-command-config-fifo", "state --snapshot {ok} --command-config {fifo}", 2, "not a regular file"),
    Case("state-partition-2^31", "state --snapshot {partition_2_31}", 2, "int32"),
    # --save-snapshot: checked before the cluster is read (a closed port is never tried)
    Case("state-save-snapshot-no-dir", "state --snapshot {ok} --save-snapshot {missing_dir}/s.json", 2,
         "no such directory"),
    Case("state-save-snapshot-directory", "state --snapshot {ok} --save-snapshot {directory}", 2, "is a directory"),
    Case("state-save-snapshot-empty", "state --snapshot {ok} --save-snapshot ''", 2, "--save-snapshot"),
    Case("state-save-snapshot-read-only", "state --snapshot {ok} --save-snapshot {read_only}/s.json", 2,
         "is not writable"),
    Case("state-save-snapshot-before-reading", "state --bootstrap-server {closed} --timeout-ms 3000 "
         "--save-snapshot {missing_dir}/s.json", 2, "no such directory"),
    # balance: outputs, --forget (= --remove-brokers), the fleet
    Case("balance-nested", "balance --snapshot {nested} --mode replica --out out", 2, "nested too deeply"),
    Case("balance-random", "balance --snapshot {random} --mode replica --out out", 2, "not valid JSON"),
    Case("balance-out-empty", "balance --snapshot {ok} --mode replica --out ''", 2, "--out"),
    Case("balance-out-is-file", "balance --snapshot {ok} --mode replica --out {ok}", 2, "not a directory"),
    Case("balance-out-read-only", "balance --snapshot {ok} --mode replica --out {read_only_plan}", 2,
         "is not writable"),
    Case("balance-out-in-read-only", "balance --snapshot {ok} --mode replica --out {read_only}/new/plan", 2,
         "is not writable"),
    Case("balance-out-executed-plan", "balance --snapshot {ok} --mode replica --out {executed_plan}", 2,
         "records an execution of the plan already there"),
    Case("balance-without-planner-extra", "balance --snapshot {ok} --mode replica --out out", 2,
         "needs the planner extra (numpy", without_planner=True),
    Case("balance-spark-without-planner-extra", "balance --snapshot {ok} --spark --mode replica --out out", 2,
         "pyspark", without_planner=True),
    Case("balance-fleet-without-planner-extra", "balance --fleet {garbage_fleet} --mode replica --out out", 2,
         "needs the planner extra", without_planner=True),
    Case("execute-plan-read-only", "execute --plan {read_only_plan} --bootstrap-server {closed} --timeout-ms 3000",
         2, "--plan"),
    Case("balance-forget-unknown", "balance --snapshot {ok} --mode replica --forget 999 --out out", 2,
         "no such broker"),
    Case("balance-forget-everyone", "balance --snapshot {ok} --mode replica --forget 1,2,3 --out out", 2,
         "every alive broker"),
    Case("balance-forget-2^63", "balance --snapshot {ok} --mode replica --forget 9223372036854775808 --out out",
         2, "int32"),
    Case("balance-forget-empty", "balance --snapshot {ok} --mode replica --forget '' --out out", 2, "--forget"),
    Case("balance-forget-leader", "balance --snapshot {ok} --mode leader --forget 1 --out out", 2,
         "--remove-brokers is ignored by --mode leader"),
    Case("balance-remove-out-of-scope", "balance --snapshot {ok} --mode replica --remove-brokers 1 --topics other "
         "--out out", 1, "stay on removed broker(s) 1"),
    # an option the mode ignores is refused; the exact path's work limit and safety net
    Case("balance-threshold-leader", "balance --snapshot {ok} --mode leader --threshold 5 --out out", 2,
         "--threshold is ignored by --mode leader"),
    Case("balance-threshold-repair", "balance --snapshot {ok} --mode repair --threshold 5 --out out", 2,
         "--threshold is ignored by --mode repair"),
    Case("balance-max-moves-leader", "balance --snapshot {ok} --mode leader --max-moves 3 --out out", 2,
         "--max-moves is ignored by --mode leader"),
    Case("balance-max-leader-changes-replica", "balance --snapshot {ok} --mode replica --max-leader-changes 3 "
         "--out out", 2, "--max-leader-changes is ignored by --mode replica"),
    Case("balance-max-leader-changes-repair", "balance --snapshot {ok} --mode repair --max-leader-changes 3 "
         "--out out", 2, "--max-leader-changes is ignored by --mode repair"),
    Case("balance-exact-nodes-negative", "balance --snapshot {ok} --mode replica --exact-nodes -1 --out out", 2,
         "--exact-nodes"),
    Case("balance-exact-seconds-negative", "balance --snapshot {ok} --mode replica --exact-seconds -1 --out out", 2,
         "--exact-seconds"),
    Case("balance-no-brokers", "balance --snapshot {no_brokers} --mode replica --out out", 2, "no brokers"),
    Case("balance-fleet-garbage", "balance --fleet {garbage_fleet} --mode replica --out out", 2, "junk.json"),
    # repair and the observed store
    Case("repair-random", "repair --snapshot {random}", 2, "not valid JSON"),
    Case("repair-nested", "repair --snapshot {nested}", 2, "nested too deeply"),
    Case("repair-no-brokers", "repair --snapshot {no_brokers}", 2, "no brokers"),
    Case("repair-store-missing", "repair --snapshot {ok} --observed-path {missing}", 2, "no observed broker store"),
    Case("repair-store-not-sqlite", "repair --snapshot {ok} --observed-path {random}", 2, "not an SQLite"),
    Case("repair-store-directory", "repair --snapshot {ok} --observed-path {directory}", 2, "directory"),
    Case("repair-store-other-db", "repair --snapshot {ok} --observed-path {other_db}", 2,
         "not an observed broker store"),
    Case("observed-list-missing", "observed list --path {missing}", 2, "no observed broker store"),
    Case("observed-list-not-sqlite", "observed list --path {random}", 2, "not an SQLite"),
    Case("observed-list-directory", "observed list --path {directory}", 2, "directory"),
    Case("observed-forget-2^31", "observed forget 2147483648 --path {store}", 2, "int32"),
    # users
    Case("users-iterations-10^9", "users add --file users.json --user u --password-stdin --iterations 1000000000",
         2, "1000000", stdin="secret\n"),
    Case("users-iterations-0", "users add --file users.json --user u --password-stdin --iterations 0", 2,
         "4096", stdin="secret\n"),
    Case("users-iterations-100", "users add --file users.json --user u --password-stdin --iterations 100", 2,
         "4096", stdin="secret\n"),
    Case("users-list-random", "users list --file {random}", 2),
    Case("users-list-directory", "users list --file {directory}", 2, "directory"),
    # create-topic aimed at our own server, verify-plan without a plan
    Case("create-topic-on-assignor", "create-topic --bootstrap-server {assignor} --assignor {assignor} --topic t "
         "--partitions 1 --replication-factor 1 --timeout-ms 3000", 2,
         "is a replica assignor server, not a Kafka broker"),
    Case("add-partitions-on-assignor", "add-partitions --bootstrap-server {assignor} --assignor {assignor} "
         "--topic t --partitions 2 --timeout-ms 3000", 2, "is a replica assignor server, not a Kafka broker"),
    Case("verify-plan-missing", "verify-plan --plan {missing_dir} --snapshot {ok}", 2, "cannot read"),
)

RACKS = {11: "/dc1/r1", 12: "/dc1/r2", 13: "/dc2/r1", 14: "/dc2/r2"}
#: the import names of pyproject.toml's planner extra
PLANNER_EXTRA = ("pyspark", "pandas", "pyarrow", "numpy", "matplotlib", "highspy")


def write_inputs(directory: Path) -> dict[str, str]:
    """The input files the cases name, created in ``directory``."""
    d = directory
    d.mkdir(parents=True, exist_ok=True)
    files: dict[str, str] = {}

    def put(name: str, content: bytes | str, key: str | None = None) -> None:
        path = d / name
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
        files[key or path.stem] = str(path)

    ok = {"brokers": [{"id": 1, "rack": "a", "capacity_bytes": 10**12}, {"id": 2, "rack": "b", "capacity_bytes": 10**12},
                      {"id": 3, "rack": "c", "capacity_bytes": 2 * 10**12}],
          "partitions": [{"topic": "t", "partition": p, "replicas": [1 + p % 3, 1 + (p + 1) % 3],
                          "size_bytes": 1000 * (p + 1)} for p in range(6)]}
    put("ok.json", json.dumps(ok))
    put("random.bin", bytes((i * 7919 + 13) % 256 for i in range(4096)), "random")
    put("bad_utf8.json", b'{"brokers": [{"id": 1, "rack": "\xff\xfe"}]}')
    put("nested.json", "[" * 100_000)
    put("empty.json", "")
    put("no_brokers.json", json.dumps({"brokers": [], "partitions": []}))
    put("broker_2_63.json", json.dumps({"brokers": [{"id": 2**63}]}))
    put("leader_not_replica.json", json.dumps({"brokers": [{"id": 1}, {"id": 2}],
                                               "partitions": [{"topic": "t", "partition": 0, "replicas": [1],
                                                               "leader": 2}]}))
    put("partition_2_31.json", json.dumps({"brokers": [{"id": 1}], "partitions": [
        {"topic": "t", "partition": 2**31, "replicas": [1]}]}))
    put("cluster.json", json.dumps({"brokers": [{"id": b, "rack": r} for b, r in RACKS.items()]}))
    put("ssl_missing_truststore.properties",
        f"security.protocol=SSL\nssl.truststore.location={d / 'no-such-ca.pem'}\n")
    put("not_pem.pem", "this is not a certificate\n")
    put("ssl_bad_truststore.properties", f"security.protocol=SSL\nssl.truststore.location={d / 'not_pem.pem'}\n")
    (d / "a-directory").mkdir(exist_ok=True)
    files["directory"] = str(d / "a-directory")
    files["missing"] = str(d / "no-such-file.json")
    files["missing_dir"] = str(d / "no-such-dir")
    fifo = d / "a-fifo"
    if not fifo.exists():
        os.mkfifo(fifo)
    files["fifo"] = str(fifo)
    put("huge_topics.txt", "t 1000000000000 1\n")
    hide = d / "no-planner"
    hide.mkdir(exist_ok=True)
    (hide / "sitecustomize.py").write_text(  # what Python sees when a package is not installed
        "import sys\nfor name in " + repr(PLANNER_EXTRA) + ":\n    sys.modules[name] = None\n")
    files["no_planner"] = str(hide)
    fleet = d / "fleet"
    fleet.mkdir(exist_ok=True)
    (fleet / "good.json").write_text(json.dumps(ok))
    (fleet / "junk.json").write_bytes(bytes((i * 31 + 7) % 256 for i in range(2048)))
    files["garbage_fleet"] = str(fleet)
    other = d / "other.db"
    if not other.exists():
        with sqlite3.connect(other) as db:
            db.execute("CREATE TABLE things (x INTEGER)")
        db.close()
    files["other_db"] = str(other)
    store = d / "observed.db"
    if not store.exists():
        from kafka_replica_assignor.assignors import BrokerMetadata
        from kafka_replica_assignor.server.observed import ObservedBrokerStore

        with ObservedBrokerStore(store) as s:
            s.record([BrokerMetadata(1, "a")], now=1.0)
    files["store"] = str(store)
    return files


def fingerprint(directory: Path) -> dict[str, str]:
    """Every regular file under ``directory`` with its sha256 (FIFOs by name only)."""
    out = {}
    for path in sorted(directory.rglob("*")):
        if path.is_fifo() or path.is_dir():
            out[str(path)] = "-"
        else:
            out[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def command() -> list[str]:
    script = Path(sys.executable).with_name("replica-assignor")
    return [str(script)] if script.exists() else [sys.executable, "-m", "kafka_replica_assignor.cli.main"]


@dataclass(frozen=True)
class Outcome:
    case: Case
    code: int | None  # None: timed out
    stdout: str
    stderr: str
    seconds: float
    written: tuple[str, ...]

    @property
    def traceback(self) -> bool:
        return "Traceback (most recent call last)" in self.stderr

    @property
    def lines(self) -> int:
        return len([line for line in self.stderr.splitlines() if line.strip()])

    def problems(self) -> list[str]:
        found = []
        if self.code != self.case.code:
            found.append(f"exit {self.code}, expected {self.case.code}")
        if self.traceback:
            found.append("traceback")
        if self.lines != 1:
            found.append(f"{self.lines} stderr lines")
        elif not self.stderr.startswith("replica-assignor") or "error:" not in self.stderr:
            found.append("the line is not 'replica-assignor ...: error: ...'")
        if self.case.expect and self.case.expect not in self.stderr:
            found.append(f"no {self.case.expect!r} in the line")
        if self.stdout:
            found.append("wrote to stdout")
        if self.written:
            found.append(f"wrote {list(self.written)}")
        return found


def run_case(case: Case, inputs: Mapping[str, str], workdir: Path, timeout: float = TIMEOUT_S) -> Outcome:
    """Run one case in the empty ``workdir``; what it leaves there, or changes among the
    inputs, is ``written``."""
    workdir.mkdir(parents=True, exist_ok=False)
    inputs_dir = Path(inputs["ok"]).parent
    before = fingerprint(inputs_dir)
    argv = [part.format(**inputs) for part in shlex.split(case.argv)]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    if case.without_planner:
        env.update(PYTHONPATH=os.pathsep.join((str(ROOT), inputs["no_planner"])), PYTHONDONTWRITEBYTECODE="1")
    started = time.monotonic()
    try:
        proc = subprocess.run([*command(), *argv], capture_output=True, text=True, timeout=timeout, cwd=workdir,
                              input=case.stdin, env=env, errors="replace")
        code, stdout, stderr = proc.returncode, proc.stdout, proc.stderr
    except subprocess.TimeoutExpired as exc:
        code = None
        stdout = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        stderr = exc.stderr.decode(errors="replace") if isinstance(exc.stderr, bytes) else (exc.stderr or "")
    seconds = time.monotonic() - started
    written = [str(p.relative_to(workdir)) for p in workdir.rglob("*")]
    after = fingerprint(inputs_dir)
    written += [path for path in sorted(set(before) | set(after)) if before.get(path) != after.get(path)]
    return Outcome(case, code, stdout, stderr, seconds, tuple(written))


# -- plans: read-only and executed ---------------------------------------------------------------
@contextmanager
def plans(directory: Path, inputs: Mapping[str, str]) -> Iterator[dict[str, str]]:
    """A plan (``balance --out``) in a read-only folder, and a plan that ``execute`` ran
    (its ``execution-state.json`` beside it). Read-only as the file system says it: as root (whom
    permission bits do not stop) the folder is a tmpfs mounted read-only once the plan is in it;
    otherwise its permission bits are taken away. Undone at the end."""
    from kafka_replica_assignor.planner.execution.executor_state import ExecutionState

    def balance(out: Path) -> None:
        done = subprocess.run([*command(), "balance", "--snapshot", inputs["ok"], "--mode", "cluster", "--out",
                               str(out), "--no-charts"], capture_output=True, text=True, timeout=TIMEOUT_S,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
        assert done.returncode == 0, done.stderr

    executed = directory / "executed-plan"
    balance(executed)
    summary = json.loads((executed / "summary.json").read_text())
    ExecutionState.new(str(executed), summary["starting_replicas_sha256"]).save()
    read_only = directory / "read-only"
    read_only.mkdir(parents=True)
    root = os.geteuid() == 0
    if root:
        mount = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(read_only)],
                               capture_output=True, text=True)
        assert mount.returncode == 0, f"cannot mount a tmpfs for the read-only folder: {mount.stderr.strip()}"
    try:
        balance(read_only / "plan")
        if root:
            subprocess.run(["mount", "-o", "remount,ro", str(read_only)], check=True)
        else:
            for folder in (read_only / "plan", read_only):
                folder.chmod(0o555)
        yield {"read_only": str(read_only), "read_only_plan": str(read_only / "plan"),
               "executed_plan": str(executed)}
    finally:
        if root:
            subprocess.run(["umount", str(read_only)], check=False)
        else:
            for folder in (read_only, read_only / "plan"):
                folder.chmod(0o755)


# -- servers -----------------------------------------------------------------------------------
def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def servers(directory: Path, inputs: Mapping[str, str]) -> Iterator[dict[str, str]]:
    """A replica assignor (PLAINTEXT), a SASL_PLAINTEXT and an SSL listener on 127.0.0.1."""
    from tests.e2e.pki import Pki
    from tests.servers import ServerThread

    pki = Pki.create(directory / "pki")
    users = directory / "users.json"
    users.write_text(json.dumps({"version": 1, "users": {}}))
    with ExitStack() as stack:
        plain = stack.enter_context(ServerThread({"cluster.metadata.file": inputs["cluster"]}))
        sasl = stack.enter_context(ServerThread({"listeners": "SASL_PLAINTEXT://127.0.0.1:0",
                                                 "sasl.users.file": str(users)}))
        tls = stack.enter_context(ServerThread({"listeners": "SSL://127.0.0.1:0",
                                                "ssl.keystore.location": str(pki.server_keystore)}))
        yield {"assignor": plain.bootstrap, "sasl": sasl.bootstrap, "tls": tls.bootstrap,
               "closed": f"127.0.0.1:{closed_port()}"}


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    base = tmp_path_factory.mktemp("bad-inputs")
    files = write_inputs(base / "inputs")
    with servers(base / "servers", files) as addresses, plans(base / "inputs" / "plans", files) as written:
        yield {**files, **addresses, **written}


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input_is_one_line_and_the_documented_exit_code(case: Case, inputs: dict[str, str],
                                                             tmp_path: Path) -> None:
    outcome = run_case(case, inputs, tmp_path / "cwd")
    assert outcome.problems() == [], (outcome.code, outcome.stderr[-2000:], outcome.stdout[:500])


def test_users_iterations_are_refused_before_any_hash(inputs: dict[str, str], tmp_path: Path) -> None:
    """10^9 PBKDF2 iterations would take minutes; refused at once. A baseline from the same run:
    the whole command with a valid count that hashes (4096) takes longer than the refusal."""
    refused = run_case(CASES[[c.id for c in CASES].index("users-iterations-10^9")], inputs, tmp_path / "a")
    valid = Case("users-ok", "users add --file users.json --user u --password-stdin --iterations 4096", 0,
                 stdin="secret\n")
    accepted = run_case(valid, inputs, tmp_path / "b")
    assert accepted.code == 0 and accepted.written == ("users.json",)
    assert refused.code == 2 and refused.seconds < 3 * accepted.seconds + 5


def test_state_shows_bytes_and_capacity(inputs: dict[str, str], tmp_path: Path) -> None:
    proc = subprocess.run([*command(), "state", "--snapshot", inputs["ok"]], capture_output=True, text=True,
                          timeout=TIMEOUT_S, cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stderr
    table = proc.stdout[proc.stdout.index("broker  "):]
    assert "capacity" in table and "931.3 GiB" in table and "1.8 TiB" in table
    as_json = subprocess.run([*command(), "state", "--snapshot", inputs["ok"], "--json"], capture_output=True,
                             text=True, timeout=TIMEOUT_S, cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(ROOT)})
    brokers = {b["id"]: b for b in json.loads(as_json.stdout)["brokers"]}
    # partition p (size 1000 * (p + 1)) is on brokers 1 + p % 3 and 1 + (p + 1) % 3
    expected = {b: sum(1000 * (p + 1) for p in range(6) if b in (1 + p % 3, 1 + (p + 1) % 3)) for b in (1, 2, 3)}
    assert {b: brokers[b]["bytes"] for b in brokers} == expected
    assert brokers[3]["capacity_bytes"] == 2 * 10**12


def test_the_local_spark_driver_is_kept_on_loopback(monkeypatch: pytest.MonkeyPatch) -> None:
    from kafka_replica_assignor.cli.fleet import keep_local_driver_on_loopback

    monkeypatch.delenv("PYSPARK_SUBMIT_ARGS", raising=False)
    monkeypatch.delenv("MASTER", raising=False)
    keep_local_driver_on_loopback()
    args = os.environ["PYSPARK_SUBMIT_ARGS"].split()
    assert "spark.driver.host=127.0.0.1" in args and "spark.driver.bindAddress=127.0.0.1" in args
    assert args[-1] == "pyspark-shell"
    monkeypatch.setenv("PYSPARK_SUBMIT_ARGS", "--master spark://elsewhere:7077 pyspark-shell")
    keep_local_driver_on_loopback()  # a master was named: left alone
    assert os.environ["PYSPARK_SUBMIT_ARGS"] == "--master spark://elsewhere:7077 pyspark-shell"
