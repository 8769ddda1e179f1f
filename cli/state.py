"""``replica-assignor state``: show a cluster's balance state (KIP-166's show-cluster-state).

    replica-assignor state --snapshot cluster.json [--json]
    replica-assignor state --bootstrap-server HOST:PORT
    replica-assignor state --describe topics.txt --racks racks.txt

Bad input: one line on stderr, exit code 2.
"""

from __future__ import annotations

import argparse
import json
import sys

from assignors.snapshot import ClusterSnapshot
from planner.sources import SourceError, load_snapshot, read_bootstrap, read_describe
from planner.state import describe, render


def add_input_arguments(parser: argparse.ArgumentParser, *, fleet: bool = False) -> None:
    """The ways to name a cluster, shared with ``balance``."""
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--snapshot", metavar="FILE", help="a cluster snapshot (JSON, the shared format)")
    if fleet:
        group.add_argument("--fleet", metavar="DIR",
                           help="many snapshots: a directory of JSON files, JSON lines or Parquet "
                                "with a cluster_id column (planned by the Spark pipeline)")
    group.add_argument("--bootstrap-server", metavar="HOST:PORT", help="read a live cluster")
    group.add_argument("--describe", metavar="FILE",
                       help="the output of kafka-topics.sh --describe (needs --racks)")
    parser.add_argument("--racks", metavar="FILE",
                        help="with --describe: lines '<broker id> [<rack>] [dead]', every live broker")


def load_input(args: argparse.Namespace, *, with_sizes: bool = False) -> ClusterSnapshot:
    """The snapshot named by the input arguments (not a fleet). A live cluster is read with
    partition sizes when ``with_sizes``; what its snapshot could not hold (left-out topics,
    fenced brokers, unknown sizes) is printed on stderr as ``note:`` lines."""
    if args.snapshot:
        return load_snapshot(args.snapshot)
    if args.bootstrap_server:
        read = read_bootstrap(args.bootstrap_server, with_sizes=with_sizes)
        for note in read.notes():
            print(f"note: {note}", file=sys.stderr)
        return read.snapshot
    if not args.racks:
        raise SourceError("--describe needs --racks FILE (which broker is on which rack)")
    return read_describe(args.describe, args.racks)


def input_name(args: argparse.Namespace) -> str:
    return (getattr(args, "snapshot", None) or getattr(args, "fleet", None)
            or getattr(args, "bootstrap_server", None) or getattr(args, "describe", None) or "")


def add_parser(subparsers) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "state", help="show replicas, leaders, racks and skew of a cluster",
        description="Per broker replicas and preferred leaders, per rack totals, skew, partitions "
                    "lacking rack diversity, replicas on dead or unknown brokers, placeholders.",
    )
    add_input_arguments(parser)
    parser.add_argument("--json", action="store_true", help="print JSON instead of tables")
    parser.set_defaults(run=run)
    return parser


def run(args: argparse.Namespace) -> int:
    try:
        snapshot = load_input(args)
    except SourceError as exc:
        print(f"replica-assignor state: error: {exc}", file=sys.stderr)
        return 2
    state = describe(snapshot)
    if args.json:
        json.dump(state.to_dict(), sys.stdout, separators=(",", ":"))
        sys.stdout.write("\n")
    else:
        sys.stdout.write(render(state))
    return 0
