"""``replica-assignor verify-plan``: is the cluster still where the plan started?

    replica-assignor verify-plan --plan plan/ --bootstrap-server HOST:PORT
    replica-assignor verify-plan --plan plan/ --snapshot cluster.json

Reads ``starting-replicas.json`` of a plan written by ``replica-assignor balance`` (checked
against the ``starting_replicas_sha256`` of its ``summary.json``) and compares every planned
partition with the cluster. A partition at its planned replicas (``reassignment.json``, order
included) is no drift: ``execute`` ran it (a partial execution); ``execute`` applies the same
rule. Exit 0 when every planned partition has the replicas the plan started from or its
planned ones; exit 1 with one line per partition that drifted on stdout
(``topic-partition: planned from [..], now [..]``), or when the cluster cannot be reached
(the exit codes every connecting subcommand shares); exit 2 on bad input (a directory that
holds no plan, an unreadable snapshot or configuration).
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from kafka_replica_assignor.cluster.files import NotARegularFile, read_regular
from kafka_replica_assignor.planner.execution.batches import applied, drift, fingerprint, read_replicas
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


#: the largest plan file read (a million partitions' reassignment JSON is about 80 MB)
PLAN_FILE_MAX_BYTES = 256 << 20


def plan_file_text(path: str) -> str:
    """A file of a plan directory: a regular file of at most :data:`PLAN_FILE_MAX_BYTES`, UTF-8
    (a FIFO or a device is refused, never read); bad input (exit 2) otherwise."""
    try:
        _, data = read_regular(path, PLAN_FILE_MAX_BYTES)
        return data.decode("utf-8")
    except NotARegularFile as exc:
        raise CommandError(f"cannot read {exc}", 2) from None
    except OSError as exc:
        raise CommandError(f"cannot read {path}: {exc.strerror or exc}", 2) from None
    except UnicodeDecodeError:
        raise CommandError(f"cannot read {path}: not UTF-8 text", 2) from None


def read_plan(plan_dir: str) -> dict[tuple[str, int], tuple[int, ...]]:
    """The starting replicas of a plan directory, checked against its summary's fingerprint."""
    start_path = os.path.join(plan_dir, "starting-replicas.json")
    summary_path = os.path.join(plan_dir, "summary.json")
    try:
        starting = read_replicas(plan_file_text(start_path), start_path)
        summary = json.loads(plan_file_text(summary_path))
    except (ValueError, RecursionError) as exc:
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
        targets = read_targets(args.plan)   # before reading the cluster: bad input first
        snapshot = load_input(args)
    except CommandError as exc:
        return fail(prog, exc)
    except (SourceError, ValueError, OSError) as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 2
    lines = drift(starting, snapshot, targets)
    done = applied(targets, snapshot)
    for line in lines:
        print(line)
    if lines:
        print(f"{prog}: {len(lines)} of {len(starting)} planned partition(s) changed since the plan "
              "was made (neither at the starting nor at the planned replicas): plan again", file=sys.stderr)
        return 1
    if done:
        print(f"{prog}: {len(done)} of {len(starting)} planned partition(s) already at their planned "
              f"replicas (a partial execution), {len(starting) - len(done)} still at the replicas the plan "
              "started from", file=sys.stderr)
        return 0
    print(f"{prog}: all {len(starting)} planned partition(s) still have the replicas the plan "
          "started from", file=sys.stderr)
    return 0


def read_targets(plan_dir: str) -> dict[tuple[str, int], tuple[int, ...]]:
    """The planned replicas (``reassignment.json``); bad input when it cannot be read."""
    path = os.path.join(plan_dir, "reassignment.json")
    try:
        return read_replicas(plan_file_text(path), path)
    except (ValueError, RecursionError) as exc:
        raise CommandError(f"--plan {plan_dir}: {exc}", 2) from None
