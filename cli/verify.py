"""``replica-assignor verify-plan``: is the cluster still where the plan started?

    replica-assignor verify-plan --plan plan/ --bootstrap-server HOST:PORT
    replica-assignor verify-plan --plan plan/ --snapshot cluster.json

Reads ``starting-replicas.json`` of a plan written by ``replica-assignor balance`` (checked
against the ``starting_replicas_sha256`` of its ``summary.json``) and compares every planned
partition with the cluster. Exit 0 when every planned partition still has the replicas the
plan started from; exit 1 with one line per partition that drifted on stdout
(``topic-partition: planned from [..], now [..]``), or when the cluster cannot be reached
(the exit codes every connecting subcommand shares); exit 2 on bad input (a directory that
holds no plan, an unreadable snapshot or configuration).
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from kafka_replica_assignor.planner.execution.batches import drift, fingerprint, read_replicas
from kafka_replica_assignor.planner.inputs.sources import SourceError

from .cluster_input import add_input_arguments, load_input
from .common import CommandError, fail


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "verify-plan", help="check that a cluster still has the replicas a balance plan started from",
        description="Compare every partition of a balance plan with a cluster: exit 0 when none "
                    "changed since the plan was made, 1 (one line per partition) when some did.",
    )
    parser.add_argument("--plan", required=True, metavar="DIR", help="the --out directory of balance")
    add_input_arguments(parser)
    parser.set_defaults(run=run)
    return parser


def read_plan(plan_dir: str) -> dict[tuple[str, int], tuple[int, ...]]:
    """The starting replicas of a plan directory, checked against its summary's fingerprint."""
    start_path = os.path.join(plan_dir, "starting-replicas.json")
    summary_path = os.path.join(plan_dir, "summary.json")
    try:
        with open(start_path, encoding="utf-8") as f:
            starting = read_replicas(f.read(), start_path)
        with open(summary_path, encoding="utf-8") as f:
            summary = json.load(f)
    except OSError as exc:
        raise CommandError(f"--plan {plan_dir}: cannot read {exc.filename}: {exc.strerror}", 2) from None
    except (ValueError, json.JSONDecodeError) as exc:
        raise CommandError(f"--plan {plan_dir}: {exc}", 2) from None
    expected = summary.get("starting_replicas_sha256") if isinstance(summary, dict) else None
    actual = fingerprint(starting)
    if expected != actual:
        raise CommandError(f"--plan {plan_dir}: starting-replicas.json does not match summary.json "
                           f"(sha256 {actual}, summary says {expected})", 2)
    return starting


def run(args: argparse.Namespace) -> int:
    prog = "replica-assignor verify-plan"
    try:
        starting = read_plan(args.plan)
        snapshot = load_input(args)
    except CommandError as exc:
        return fail(prog, exc)
    except (SourceError, ValueError, OSError) as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 2
    lines = drift(starting, snapshot)
    for line in lines:
        print(line)
    if lines:
        print(f"{prog}: {len(lines)} of {len(starting)} planned partition(s) changed since the plan "
              "was made: plan again", file=sys.stderr)
        return 1
    print(f"{prog}: all {len(starting)} planned partition(s) still have the replicas the plan "
          "started from", file=sys.stderr)
    return 0
