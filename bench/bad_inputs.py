#!/usr/bin/env python3
"""Bad input to the ``replica-assignor`` command line, many cases, one table.

Runs the cases of ``tests/e2e/test_cli_bad_inputs.py`` and more (every snapshot reader with
every kind of broken file, number limits, broker lists, client properties, wrong listeners),
each in an empty working directory against real servers on 127.0.0.1, and prints per case:
the exit code (and the expected one), whether a traceback was printed, the number of stderr
lines, whether anything was written, the seconds taken; then the totals.

    python bench/bad_inputs.py [--root CHECKOUT] [--only SUBSTRING] [--timeout S]

``--root`` runs the command of another checkout (``python -m kafka_replica_assignor.cli.main`` with that directory
first on ``PYTHONPATH``), to compare before and after a change with the same cases and servers.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from tests.e2e import test_cli_bad_inputs as table  # noqa: E402
from tests.e2e.test_cli_bad_inputs import CASES, Case, Outcome, plans, run_case, servers, write_inputs  # noqa: E402

# broken snapshot files: name -> content (bytes or JSON-able)
BROKEN_SNAPSHOTS: dict[str, object] = {
    "not_object": [],
    "brokers_missing": {"partitions": []},
    "brokers_not_list": {"brokers": {"id": 1}},
    "broker_not_object": {"brokers": [1]},
    "broker_no_id": {"brokers": [{"rack": "a"}]},
    "broker_id_text": {"brokers": [{"id": "1"}]},
    "broker_id_negative": {"brokers": [{"id": -1}]},
    "broker_id_float": {"brokers": [{"id": 1.5}]},
    "broker_id_bool": {"brokers": [{"id": True}]},
    "broker_duplicate": {"brokers": [{"id": 1}, {"id": 1}]},
    "rack_number": {"brokers": [{"id": 1, "rack": 7}]},
    "alive_text": {"brokers": [{"id": 1, "alive": "no"}]},
    "capacity_negative": {"brokers": [{"id": 1, "capacity_bytes": -1}]},
    "partitions_not_list": {"brokers": [{"id": 1}], "partitions": {}},
    "partition_no_topic": {"brokers": [{"id": 1}], "partitions": [{"partition": 0, "replicas": [1]}]},
    "partition_empty_replicas": {"brokers": [{"id": 1}], "partitions": [{"topic": "t", "partition": 0,
                                                                         "replicas": []}]},
    "replica_twice": {"brokers": [{"id": 1}], "partitions": [{"topic": "t", "partition": 0, "replicas": [1, 1]}]},
    "replica_2_63": {"brokers": [{"id": 1}], "partitions": [{"topic": "t", "partition": 0, "replicas": [2**63]}]},
    "partition_duplicate": {"brokers": [{"id": 1}], "partitions": [{"topic": "t", "partition": 0, "replicas": [1]},
                                                                   {"topic": "t", "partition": 0, "replicas": [1]}]},
    "size_negative": {"brokers": [{"id": 1}], "partitions": [{"topic": "t", "partition": 0, "replicas": [1],
                                                              "size_bytes": -5}]},
    "huge_number": b'{"brokers": [{"id": 1e400}]}',
    "nan": b'{"brokers": [{"id": NaN}]}',
    "truncated": b'{"brokers": [{"id": 1}',
}
# the broken files the test's inputs already hold
SHARED = ("random", "bad_utf8", "nested", "empty", "no_brokers", "broker_2_63", "leader_not_replica", "missing",
          "directory", "fifo", "partition_2_31")


def more_cases() -> list[Case]:
    cases: list[Case] = []
    readers = {
        "state": "state --snapshot {%s}",
        "balance": "balance --snapshot {%s} --mode cluster --out out",
        "repair": "repair --snapshot {%s}",
        "assign-cluster": "assign --bootstrap-server {assignor} --partitions 2 --replication-factor 1 --explain "
                          "--cluster {%s}",
    }
    for name in (*SHARED, *BROKEN_SNAPSHOTS):
        for reader, template in readers.items():
            case_id = f"{reader}-{name}"
            if any(c.id == case_id for c in CASES):
                continue
            if reader == "assign-cluster" and name == "no_brokers":
                continue  # a cluster file with no brokers is a valid --cluster; --explain then names them
            cases.append(Case(case_id, template % name, 2))
    for name in ("random", "nested", "bad_utf8", "empty", "missing", "directory", "not_object"):
        cases.append(Case(f"assign-current-{name}-2", "assign --bootstrap-server {assignor} --partitions 2 "
                          "--replication-factor 1 --current-assignment {" + name + "}", 2))
    assign = "assign --bootstrap-server {assignor} "
    for value, code in (("2147483648", 2), ("-2147483649", 2), ("1.5", 2), ("''", 2), ("0x10", 2), ("1e3", 2)):
        cases.append(Case(f"assign-partitions-{value}", assign + f"--partitions {value} --replication-factor 1", code))
    for value, code in (("32768", 2), ("-40000", 2), ("x", 2), ("''", 2)):
        cases.append(Case(f"assign-rf-{value}", assign + f"--partitions 1 --replication-factor {value}", code))
    for value in ("0", "-1", "x", "100000000000000000000"):
        cases.append(Case(f"assign-timeout-{value}", assign + f"--partitions 1 --replication-factor 1 "
                          f"--timeout-ms {value}", 2))
    for value in (",", "' '", "a", "1,a", "1;2", "-5", "2147483648,1"):
        cases.append(Case(f"assign-broker-list-{value}", assign + f"--partitions 1 --replication-factor 1 "
                          f"--broker-list {value}", 2))
    for value in ("nohost", "h:0", "h:99999", ":9092", "''", "h:x"):
        cases.append(Case(f"assign-bootstrap-{value}", f"assign --bootstrap-server {value} --partitions 1 "
                          "--replication-factor 1", 2))
    # client properties
    for name, code in (("missing", 2), ("directory", 2), ("random", 2), ("fifo", 2),
                       ("ssl_missing_truststore", 2), ("ssl_bad_truststore", 2), ("ssl_dir_truststore", 2),
                       ("ssl_missing_keystore", 2), ("bad_protocol", 2)):
        for command in ("assign --bootstrap-server {tls} --partitions 1 --replication-factor 1",
                        "state --bootstrap-server {tls}"):
            verb = command.split()[0]
            case_id = f"{verb}-command-config-{name}"
            if any(c.id == case_id for c in CASES):
                continue
            cases.append(Case(case_id, f"{command} --timeout-ms 3000 --command-config {{{name}}}", code))
    # balance options
    ok = "balance --snapshot {ok} --mode cluster"
    for flag, value in (("--threshold", "-1"), ("--threshold", "100"), ("--threshold", "nan"), ("--threshold", "x"),
                        ("--max-moves", "-1"), ("--batch-size", "0"), ("--max-moves-per-broker", "0"),
                        ("--max-bytes-per-batch", "-3"), ("--throttle", "0"), ("--mode", "everything"),
                        ("--forget", "a"), ("--forget", "-1"), ("--forget", "1,999")):
        cases.append(Case(f"balance{flag}-{value}", f"{ok} {flag} {value} --out out", 2))
    for name in ("random", "missing", "directory", "nested"):
        cases.append(Case(f"balance-log-dirs-{name}", f"{ok} --log-dirs {{{name}}} --out out", 2))
    cases.append(Case("balance-fleet-missing", "balance --fleet {missing} --mode replica --out out", 2))
    cases.append(Case("balance-fleet-nested", "balance --fleet {nested_fleet} --mode replica --out out", 2))
    cases.append(Case("balance-spark-log-dirs", f"{ok} --spark --log-dirs {{ok}} --out out", 2))
    cases.append(Case("balance-describe-no-racks", "balance --describe {ok} --mode cluster --out out", 2))
    # observed and users
    for value in ("x", "-1", "2147483648", "9223372036854775808", "''"):
        cases.append(Case(f"observed-forget-{value}", f"observed forget {value} --path {{store}}", 2))
    cases.append(Case("observed-forget-unknown", "observed forget 77 --path {store}", 1))
    for name in ("other_db", "fifo", "empty", "bad_utf8"):
        cases.append(Case(f"observed-list-{name}", f"observed list --path {{{name}}}", 2))
    users = "users add --file users.json --user u --password-stdin"
    for value in ("1", "4095", "1000001", "-1", "x", "99999999999999999999"):
        cases.append(Case(f"users-iterations-{value}", f"{users} --iterations {value}", 2, stdin="secret\n"))
    cases.append(Case("users-empty-name", "users add --file users.json --user '' --password-stdin", 2,
                      stdin="secret\n"))
    cases.append(Case("users-empty-password", f"{users}", 2, stdin="\n"))
    for name in ("nested", "bad_utf8", "fifo", "missing", "empty"):
        cases.append(Case(f"users-list-{name}", f"users list --file {{{name}}}", 2))
        cases.append(Case(f"users-delete-{name}", f"users delete --file {{{name}}} --user u", 2))
    # wrong listeners
    for where, code in (("assignor", 2), ("tls", 1), ("sasl", 1), ("closed", 1)):
        cases.append(Case(f"balance-live-{where}", f"balance --bootstrap-server {{{where}}} --mode cluster "
                          "--timeout-ms 3000 --out out", code))
        cases.append(Case(f"repair-live-{where}", f"repair --bootstrap-server {{{where}}} --timeout-ms 3000", code))
    cases.append(Case("state-live-closed", "state --bootstrap-server {closed} --timeout-ms 3000", 1))
    topics = "--topic t --timeout-ms 3000"
    for kafka, assignor, code in (("tls", "assignor", 1), ("sasl", "assignor", 1), ("closed", "assignor", 1),
                                  ("assignor", "tls", 1), ("assignor", "closed", 1)):
        cases.append(Case(f"create-topic-{kafka}-{assignor}", f"create-topic --bootstrap-server {{{kafka}}} "
                          f"--assignor {{{assignor}}} {topics} --partitions 1 --replication-factor 1", code))
    cases.append(Case("create-topic-config-bad", "create-topic --bootstrap-server {assignor} --assignor {assignor} "
                      f"{topics} --partitions 1 --replication-factor 1 --config nokey", 2))
    return cases


def write_more_inputs(directory: Path, files: dict[str, str]) -> dict[str, str]:
    for name, content in BROKEN_SNAPSHOTS.items():
        path = directory / f"{name}.json"
        path.write_bytes(content if isinstance(content, bytes) else json.dumps(content).encode())
        files[name] = str(path)
    (directory / "ca-dir").mkdir(exist_ok=True)
    extra = {
        "ssl_dir_truststore": f"security.protocol=SSL\nssl.truststore.location={directory / 'ca-dir'}\n",
        "ssl_missing_keystore": f"security.protocol=SSL\nssl.keystore.location={directory / 'no-key.pem'}\n",
        "bad_protocol": "security.protocol=CARRIER_PIGEON\n",
    }
    for name, text in extra.items():
        path = directory / f"{name}.properties"
        path.write_text(text)
        files[name] = str(path)
    fleet = directory / "nested-fleet"
    fleet.mkdir(exist_ok=True)
    (fleet / "deep.json").write_text("[" * 100_000)
    files["nested_fleet"] = str(fleet)
    return files


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", help="the checkout whose command to run (default: this one)")
    parser.add_argument("--only", default="", help="run only the cases whose id contains this")
    parser.add_argument("--timeout", type=float, default=table.TIMEOUT_S, help="seconds per case")
    args = parser.parse_args()
    if args.root:
        root = Path(args.root).resolve()
        table.ROOT = root
        table.command = lambda: [sys.executable, "-m", "kafka_replica_assignor.cli.main"]  # the checkout's code, not the installed one
    import logging

    import structlog

    # the servers' logs would interleave with the table
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.CRITICAL))
    cases = [c for c in (*CASES, *more_cases()) if args.only in c.id]
    base = Path(tempfile.mkdtemp(prefix="bad-inputs-"))
    outcomes: list[Outcome] = []
    try:
        files = write_more_inputs(base / "inputs", write_inputs(base / "inputs"))
        with servers(base / "servers", files) as addresses, plans(base / "inputs" / "plans", files) as written:
            inputs = {**files, **addresses, **written}
            for n, case in enumerate(cases):
                outcomes.append(run_case(case, inputs, base / "cwd" / str(n), timeout=args.timeout))
    finally:
        shutil.rmtree(base, ignore_errors=True)
    print(f"{'input':<44} {'exit':>4} {'want':>4} {'traceback':>9} {'lines':>5} {'wrote':>5} {'s':>5}  problems")
    for o in outcomes:
        code = "hang" if o.code is None else str(o.code)
        problems = "; ".join(o.problems()) or "-"
        print(f"{o.case.id[:44]:<44} {code:>4} {o.case.code:>4} {'yes' if o.traceback else 'no':>9} {o.lines:>5} "
              f"{'yes' if o.written else 'no':>5} {o.seconds:>5.1f}  {problems[:110]}")
    total = len(outcomes)
    tracebacks = sum(o.traceback for o in outcomes)
    wrong = sum(o.code != o.case.code for o in outcomes)
    hangs = sum(o.code is None for o in outcomes)
    multi = sum(o.lines != 1 for o in outcomes)
    wrote = sum(bool(o.written) for o in outcomes)
    silent = sum(o.code == 0 for o in outcomes)
    clean = sum(not o.problems() for o in outcomes)
    print(f"\n{total} inputs: {tracebacks} tracebacks, {wrong} wrong exit codes ({silent} accepted with exit 0, "
          f"{hangs} hangs past {args.timeout:g} s), {multi} not one stderr line, {wrote} wrote something; "
          f"{clean} clean; load average {', '.join(f'{x:.1f}' for x in os.getloadavg())}; {time.strftime('%H:%M')}")
    return 0 if clean == total else 1


if __name__ == "__main__":
    sys.exit(main())
