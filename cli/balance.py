"""``replica-assignor balance``: plan leader-, replica- or cluster-balance (KIP-166).

    replica-assignor balance --snapshot cluster.json --mode cluster --out plan/
    replica-assignor balance --fleet snapshots/ --mode replica --threshold 5 --out plans/
    replica-assignor balance --bootstrap-server HOST:PORT --mode leader --out plan/

One snapshot is planned by the pure planner in this process (``--spark`` sends it through the
Spark pipeline instead); ``--fleet`` always uses the pipeline. The files written are described
in :mod:`kafka_replica_assignor.planner.report.outputs`; ``--batch-size``, ``--max-moves-per-broker`` and
``--max-bytes-per-batch`` split the plan into batches, ``--throttle`` times them
(:mod:`kafka_replica_assignor.planner.execution.batches`); ``replica-assignor verify-plan`` checks a cluster before it runs. Bad input: one line on stderr, exit code 2, nothing written.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import TYPE_CHECKING

from kafka_replica_assignor.planner.inputs.log_dirs import merge_log_dirs, read_log_dirs_text
from kafka_replica_assignor.planner.inputs.sources import SourceError
from kafka_replica_assignor.planner.plan import Scope
from kafka_replica_assignor.planner.settings import EXACT_SECONDS, PlanSettings
from kafka_replica_assignor.planner.solving.exact import EXACT_CELLS
from kafka_replica_assignor.planner.solving.modes import MODES, make_plan

if TYPE_CHECKING:
    from kafka_replica_assignor.cluster.snapshot import ClusterSnapshot

from .cluster_input import add_input_arguments, check_local_input, input_name, load_input
from .common import EXIT_CODES, CommandError, broker_ids, fail, positive, whole_number
from .fleet import check_fleet, keep_local_driver_on_loopback


def _percent(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 <= value < 100:
        raise argparse.ArgumentTypeError(f"must be in [0, 100), got {text}")
    return value


def _ids(text: str) -> tuple[int, ...]:
    try:
        return tuple(sorted(set(broker_ids(text, "--forget"))))
    except CommandError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("--forget ").removeprefix("--forget: ")) from None


def check_forget(forget: tuple[int, ...], snapshot: ClusterSnapshot) -> None:
    """``--forget`` names brokers of the cluster, and leaves at least one alive (bad input: exit 2)."""
    known = {b.id for b in snapshot.brokers}
    unknown = [b for b in forget if b not in known]
    if unknown:  # a broker the snapshot does not list but whose id holds replicas is known too
        known.update(r for p in snapshot.partitions for r in p.replicas)
        unknown = [b for b in unknown if b not in known]
    if unknown:
        raise SourceError(f"--forget {','.join(map(str, unknown))}: no such broker in the cluster")
    if forget and not any(b.alive and b.id not in forget for b in snapshot.brokers):
        raise SourceError("--forget names every alive broker: nothing would be left to hold the replicas")


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "balance", help="plan leader-, replica- or cluster-balance for Kafka's tools",
        description="Compute a reassignment plan with the fewest replica moves and leader changes. "
                    "Writes reassignment.json (kafka-reassign-partitions.sh), leader-election.json "
                    "(kafka-leader-election.sh), rollback.json, starting-replicas.json, summary.json, "
                    "moves.csv, report.md and charts.",
        epilog=EXIT_CODES,
    )
    add_input_arguments(parser, fleet=True)
    parser.add_argument("--mode", required=True, choices=MODES,
                        help="leader: reorder replicas only; replica: move replicas; cluster: both; "
                             "repair: only replace dead/unknown/forgotten replicas and placeholders")
    parser.add_argument("--threshold", type=_percent, default=10.0, metavar="PERCENT",
                        help="brokers within avg*(1 +- PERCENT/100) are balanced (default 10; "
                             "0 = the tightest balance reachable)")
    parser.add_argument("--max-moves", type=whole_number, metavar="N", help="at most N replica moves")
    parser.add_argument("--max-leader-changes", type=whole_number, metavar="N",
                        help="at most N preferred-leader changes")
    parser.add_argument("--batch-size", type=positive, metavar="N",
                        help="also split the reassignment into batches of at most N partitions "
                             "(reassignment-0001.json, ...)")
    parser.add_argument("--max-moves-per-broker", type=positive, metavar="K",
                        help="batches in which no broker is the source or destination of more than "
                             "K replica moves")
    parser.add_argument("--max-bytes-per-batch", type=positive, metavar="BYTES",
                        help="batches that copy at most BYTES (size_bytes; a bigger partition gets "
                             "a batch of its own)")
    parser.add_argument("--throttle", type=positive, metavar="BYTES_PER_S",
                        help="the --throttle you will pass to kafka-reassign-partitions.sh: the "
                             "report estimates each batch's time with it and writes the commands")
    parser.add_argument("--forget", type=_ids, default=(), metavar="IDS",
                        help="brokers being decommissioned (comma-separated): move everything off")
    parser.add_argument("--exact-seconds", type=float, default=EXACT_SECONDS, metavar="S",
                        help=f"on small clusters (partitions x brokers <= {EXACT_CELLS}) also solve the "
                             "balance exactly (a mixed-integer program, HiGHS) for at most S seconds and "
                             "keep the better plan; 0 = never (default %(default)s)")
    parser.add_argument("--topics", metavar="REGEX",
                        help="only partitions of topics whose whole name matches REGEX may move "
                             "(the others keep their replicas and still count in every figure)")
    parser.add_argument("--exclude-topics", metavar="REGEX",
                        help="partitions of topics whose whole name matches REGEX do not move")
    parser.add_argument("--exclude-brokers", type=_ids, default=(), metavar="IDS",
                        help="brokers that neither give nor take replicas (comma-separated)")
    parser.add_argument("--add-brokers", type=_ids, default=(), metavar="IDS",
                        help="new brokers: the only ones that take replicas, nothing reshuffled among "
                             "the others (repairs aside)")
    parser.add_argument("--demote-brokers", type=_ids, default=(), metavar="IDS",
                        help="preferred leaders off these brokers (modes leader and cluster); their "
                             "replicas stay")
    parser.add_argument("--remove-brokers", type=_ids, default=(), metavar="IDS",
                        help="brokers to drain: every replica leaves them and they take none (as --forget)")
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


def check_out(out: str) -> None:
    """``--out`` names a directory to create or reuse (bad input: exit 2, nothing written)."""
    import os

    if not out.strip():
        raise SourceError("--out must name a directory, got ''")
    if os.path.exists(out) and not os.path.isdir(out):
        raise SourceError(f"--out {out} is a file, not a directory")


def settings_of(args: argparse.Namespace) -> PlanSettings:
    threshold = args.threshold
    if float(threshold).is_integer():
        threshold = int(threshold)
    return PlanSettings(
        mode=args.mode, threshold=threshold, max_moves=args.max_moves,
        max_leader_changes=args.max_leader_changes, batch_size=args.batch_size,
        forgotten=tuple(sorted({*args.forget, *args.remove_brokers})), source=input_name(args),
        max_moves_per_broker=args.max_moves_per_broker, max_bytes_per_batch=args.max_bytes_per_batch,
        throttle=args.throttle, exact_seconds=args.exact_seconds,
        scope=Scope(args.topics, args.exclude_topics, tuple(args.exclude_brokers), tuple(args.add_brokers),
                    tuple(args.demote_brokers)),
    )


def run(args: argparse.Namespace) -> int:
    try:
        settings = settings_of(args)
        check_out(args.out)
        if getattr(args, "fleet", None) or args.spark:
            from kafka_replica_assignor.planner.fleet.pipeline import run_pipeline

            if args.log_dirs:
                raise SourceError("--log-dirs sizes the one cluster planned here, not with --fleet or --spark")
            if args.spark and args.snapshot is None and not args.fleet:
                raise SourceError("--spark plans a --snapshot FILE or a --fleet DIR")
            check_local_input(args)  # before Spark starts
            check_fleet(args.fleet or args.snapshot)
            keep_local_driver_on_loopback()
            summary = run_pipeline(args.fleet or args.snapshot, args.out, settings,
                                   charts=not args.no_charts, progress=True)
            print(summary)
            return 0 if "failed" not in summary else 1
        marks = [("start", time.perf_counter())]
        snapshot = load_input(args, with_sizes=True)
        check_forget(settings.forgotten, snapshot)
        marks.append(("load", time.perf_counter()))
        if args.log_dirs:
            snapshot = merge_log_dirs(snapshot, read_log_dirs_text(args.log_dirs), args.log_dirs)
            marks.append(("log_dirs", time.perf_counter()))
        plan = make_plan(snapshot, settings)
        marks.append(("plan", time.perf_counter()))
        try:  # the report and charts need the planner extras (numpy, matplotlib); --help does not
            from kafka_replica_assignor.planner.report.outputs import render_outputs, write_outputs
        except ModuleNotFoundError as exc:
            raise CommandError(f"the report needs the planner extras ({exc.name} is not installed): "
                               "pip install '.[planner]'", 2) from None
        files = render_outputs(plan, settings, charts=not args.no_charts)
        marks.append(("render", time.perf_counter()))
        write_outputs(files, args.out)
        marks.append(("write", time.perf_counter()))
    except CommandError as exc:  # an unreachable cluster (1), a bad --command-config (2)
        return fail("replica-assignor balance", exc)
    except (SourceError, ValueError, OSError) as exc:
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
