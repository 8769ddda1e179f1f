"""``replica-assignor balance``: plan leader-, replica- or cluster-balance (KIP-166).

    replica-assignor balance --snapshot cluster.json --mode cluster --out plan/
    replica-assignor balance --fleet snapshots/ --mode replica --threshold 5 --out plans/
    replica-assignor balance --bootstrap-server HOST:PORT --mode leader --out plan/

One snapshot is planned by the pure planner in this process (``--spark`` sends it through the
Spark pipeline instead); ``--fleet`` always uses the pipeline. The files written are described
in :mod:`kafka_replica_assignor.planner.report.outputs`; ``--batch-size``, ``--max-moves-per-broker`` and
``--max-bytes-per-batch`` split the plan into batches, ``--throttle`` times them
(:mod:`kafka_replica_assignor.planner.execution.batches`); ``replica-assignor verify-plan`` checks a cluster before it runs. Bad input: one line on stderr, exit code 2, nothing written; it is
checked before the cluster is read: the planner extra installed, ``--out`` writable (and the
folder beside it, where the plan is staged), and ``--out`` not holding a plan that ``execute``
ran (its execution state would otherwise sit beside a new plan).
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from kafka_replica_assignor.planner.inputs.log_dirs import merge_log_dirs, read_log_dirs_text
from kafka_replica_assignor.planner.inputs.sources import SourceError
from kafka_replica_assignor.planner.request import (
    PlanError,
    PlanRequest,
    RequestError,
    add_request_arguments,
    request_from_args,
)

from .cluster_input import add_input_arguments, check_local_input, input_name, load_input
from .common import EXIT_CODES, CommandError, check_writable_dir, fail
from .fleet import check_fleet, keep_local_driver_on_loopback


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "balance", help="plan leader-, replica- or cluster-balance for Kafka's tools",
        description="Compute a reassignment plan with the fewest replica moves and leader changes. "
                    "Writes reassignment.json (kafka-reassign-partitions.sh), leader-election.json "
                    "(kafka-leader-election.sh), rollback.json, starting-replicas.json, summary.json, "
                    "moves.csv, report.md and charts.",
        epilog=EXIT_CODES + ". A plan that cannot keep a promise of the request (--remove-brokers, "
               "--demote-brokers, capacity_bytes) exits 1 and writes nothing.",
    )
    add_input_arguments(parser, fleet=True)
    add_request_arguments(parser)
    parser.add_argument("--out", required=True, metavar="DIR", help="where to write the plan")
    parser.add_argument("--spark", action="store_true",
                        help="plan through the Spark pipeline even for one snapshot")
    parser.add_argument("--no-charts", action="store_true", help="skip the PNG charts")
    parser.add_argument("--log-dirs", metavar="FILE",
                        help="partition sizes and replica log directories from the output of "
                             "kafka-log-dirs.sh --describe (replacing the snapshot's size_bytes; "
                             "bytes are then balanced across each broker's directories too)")
    parser.add_argument("--timings", action="store_true",
                        help="print the seconds of each phase to stderr as one JSON line")
    parser.set_defaults(run=run)
    return parser


#: what ``replica-assignor execute`` leaves in a plan's folder (planner/execution/executor_state.py)
EXECUTION_FILES = ("execution-state.json", "execution.json")


def check_out(out: str) -> None:
    """``--out`` names a directory to create or reuse (bad input: exit 2, nothing written): one
    that can be written (with the folder beside it, where the plan is staged) and that holds no
    execution of an earlier plan, which would then read as the new plan's."""
    import os

    if not out.strip():
        raise SourceError("--out must name a directory, got ''")
    if os.path.exists(out) and not os.path.isdir(out):
        raise SourceError(f"--out {out} is a file, not a directory")
    stage = os.path.dirname(os.path.abspath(out))
    while not os.path.isdir(stage):   # created by the write: the nearest folder that exists must be writable
        if os.path.exists(stage):
            raise SourceError(f"--out {out}: {stage} is a file, not a directory")
        stage = os.path.dirname(stage)
    check_writable_dir(stage, f"--out {out}: the folder")
    if os.path.isdir(out):
        check_writable_dir(out, "--out")
        refuse_executed(out)


def refuse_executed(out: str) -> None:
    """An earlier plan in ``out`` (or, for a fleet, in a folder under it) that ``execute`` ran
    or runs: refused, so that an execution state never sits beside a plan it does not belong to."""
    import os

    folders = [out] + [os.path.join(out, name) for name in sorted(os.listdir(out))
                       if os.path.isdir(os.path.join(out, name))]
    for folder in folders:
        found = [name for name in EXECUTION_FILES if os.path.exists(os.path.join(folder, name))]
        if found:
            raise SourceError(f"--out {out}: {os.path.join(folder, found[0])} records an execution of the plan "
                              "already there; a new plan beside it would be mistaken for the executed one: "
                              "write the new plan to another folder (or move that folder away first)")


def check_extras(args: argparse.Namespace) -> None:
    """The planner extra's packages that this run imports, found before anything is read or
    written (exit 2, one line naming the extra)."""
    from importlib.util import find_spec

    needed = ["numpy", "highspy"] + ([] if args.no_charts else ["matplotlib"])
    if getattr(args, "fleet", None) or args.spark:
        needed += ["pyspark", "pandas", "pyarrow"]
    missing = [name for name in needed if find_spec(name) is None]
    if missing:
        raise CommandError(f"balance needs the planner extra ({', '.join(missing)} not installed): "
                           "pip install 'kafka-replica-assignor[planner]' (from a checkout: pip install '.[planner]')",
                           2)


def run_fleet(args: argparse.Namespace, request: PlanRequest) -> int:
    """``--fleet`` or ``--spark``: the Spark pipeline plans with the same request."""
    from kafka_replica_assignor.planner.fleet.pipeline import run_pipeline

    if args.log_dirs:
        raise SourceError("--log-dirs sizes the one cluster planned here, not with --fleet or --spark")
    if args.spark and args.snapshot is None and not args.fleet:
        raise SourceError("--spark plans a --snapshot FILE or a --fleet DIR")
    check_local_input(args)  # before Spark starts
    check_fleet(args.fleet or args.snapshot)
    keep_local_driver_on_loopback()
    summary = run_pipeline(args.fleet or args.snapshot, args.out, request, charts=not args.no_charts, progress=True)
    print(summary)
    return 0 if "failed" not in summary else 1


def run(args: argparse.Namespace) -> int:
    try:
        check_extras(args)
        request = request_from_args(args, input_name(args))
        check_out(args.out)
        if getattr(args, "fleet", None) or args.spark:
            return run_fleet(args, request)
        marks = [("start", time.perf_counter())]
        snapshot = load_input(args, with_sizes=True)
        marks.append(("load", time.perf_counter()))
        if args.log_dirs:
            snapshot = merge_log_dirs(snapshot, read_log_dirs_text(args.log_dirs), args.log_dirs)
            marks.append(("log_dirs", time.perf_counter()))
        try:  # planning and the report need the planner extras (numpy, highspy, matplotlib); --help does not
            from kafka_replica_assignor.planner.report.outputs import render_outputs, write_outputs
            from kafka_replica_assignor.planner.solving.planning import make_plan
        except ModuleNotFoundError as exc:
            raise CommandError(f"balance needs the planner extra ({exc.name} not installed): "
                               "pip install 'kafka-replica-assignor[planner]' (from a checkout: pip install "
                               "'.[planner]')", 2) from None
        plan = make_plan(snapshot, request)
        marks.append(("plan", time.perf_counter()))
        files = render_outputs(plan, request, charts=not args.no_charts)
        marks.append(("render", time.perf_counter()))
        write_outputs(files, args.out)
        marks.append(("write", time.perf_counter()))
    except CommandError as exc:  # an unreachable cluster (1), a bad --command-config (2)
        return fail("replica-assignor balance", exc)
    except PlanError as exc:    # the plan cannot keep a promise of the request: nothing written
        print(f"replica-assignor balance: error: {exc}", file=sys.stderr)
        return 1
    except (SourceError, RequestError, ValueError, OSError) as exc:
        print(f"replica-assignor balance: error: {exc}", file=sys.stderr)
        return 2
    print(f"{plan.replica_moves} replica move(s) ({plan.repairs} repairs), "
          f"{plan.leader_changes} leader change(s), {len(plan.changed())} partition(s) reassigned; "
          f"wrote {len(files)} files to {args.out}")
    for note in plan.notes:
        print(f"note: {note}")
    print(f"before executing, check that nothing moved since: replica-assignor verify-plan --plan {args.out} "
          f"(--bootstrap-server HOST:PORT | --snapshot FILE)", file=sys.stderr)
    if args.timings:
        seconds = {f"{name}_s": round(end - begin, 3) for (_, begin), (name, end) in zip(marks, marks[1:], strict=False)}
        print(json.dumps(seconds), file=sys.stderr)
    return 0
