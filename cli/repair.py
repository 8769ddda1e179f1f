"""``replica-assignor repair``: a reassignment that fills KIP-409 placeholders.

Reads the cluster from a snapshot file or a live cluster, replaces placeholders (negative ids)
and replicas on forgotten or unknown brokers with alive ones (:func:`kafka_replica_assignor.planner.replica_repair.repair`,
the algorithm the balance planner's repair uses too, with the brokers expected back as
``keep``), and prints Kafka's reassignment JSON for ``kafka-reassign-partitions.sh --execute``.

With ``--intent-file FILE --bootstrap-server KAFKA`` it completes the topics ``create-topic``
created under-replicated (:mod:`kafka_replica_assignor.cli.intent`): each placeholder of the recorded placement is
filled by a broker that came back since, and ``--execute`` applies that through
AlterPartitionReassignments, waits for it and drops the completed topics from the record.

Which brokers are expected back (their replicas stay):

- without ``--observed-path``: the brokers a snapshot lists as ``"alive": false`` (their
  replicas stay); a live cluster lists only alive brokers, so every replica on a broker that
  is not alive is replaced;
- with ``--observed-path``: those, and the brokers in the observed store that are not alive.
  A broker the snapshot lists is known whether the store saw it or not; only ``observed
  forget`` (and a snapshot that no longer lists it) makes one unknown, and its replicas move.

Bad input (a snapshot or store that cannot be read): one line, exit 2; an unreachable
cluster: exit 1.
"""

from __future__ import annotations

import argparse
import sys

from kafka_replica_assignor.cluster.snapshot import ClusterSnapshot, SnapshotError
from kafka_replica_assignor.planner.replica_repair import RepairPlan, expected_back, repair
from kafka_replica_assignor.server.exit_codes import EXIT_USAGE

from .common import (
    EXIT_CODES,
    CommandError,
    add_connection_arguments,
    fail,
    host_port,
    print_json,
    read_json,
    security_options,
)


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    """Add ``repair`` to the CLI; ``args.run`` is :func:`run`."""
    parser = subparsers.add_parser(
        "repair", help="print a reassignment that fills placeholders",
        description="Print Kafka reassignment JSON (version 1) replacing placeholder replicas "
                    "and replicas on forgotten or unknown brokers with alive brokers. With --intent-file: "
                    "complete the topics create-topic created under-replicated (placeholders filled by "
                    "the brokers back since), applied with --execute.",
        epilog=EXIT_CODES,
    )
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--snapshot", metavar="FILE", help="a cluster snapshot JSON file")
    source.add_argument("--bootstrap-server", type=host_port, metavar="HOST:PORT", help="a live Kafka cluster")
    parser.add_argument("--observed-path", metavar="FILE",
                        help="the observed broker store: its offline brokers are expected back")
    parser.add_argument("--intent-file", metavar="FILE",
                        help="complete the topics create-topic recorded here (KIP-409; needs --bootstrap-server)")
    parser.add_argument("--execute", action="store_true",
                        help="with --intent-file: apply the reassignment, wait for it, update the record")
    add_connection_arguments(parser, what="the Kafka cluster (with --bootstrap-server)")
    parser.set_defaults(run=run)
    return parser


def run(args: argparse.Namespace) -> int:
    """Print the plan on stdout and a summary on stderr. Exit 0 even when some partitions could
    not be repaired (not enough alive brokers): they are named on stderr and left out."""
    if args.intent_file is not None or args.execute:
        return run_intent(args)
    try:
        snapshot, forgotten = load_cluster(args)
    except (CommandError, SnapshotError, OSError, ValueError) as exc:  # bad file or store (2), cluster (1)
        return fail("replica-assignor repair", exc, EXIT_USAGE)
    plan = repair(snapshot, forgotten, keep=expected_back(snapshot, forgotten))
    print_json(plan.to_reassignment())
    print(summary(plan), file=sys.stderr)
    return 0


def run_intent(args: argparse.Namespace) -> int:
    """``--intent-file``: complete the recorded topics (:func:`kafka_replica_assignor.cli.intent.run_complete`)."""
    from .intent import run_complete

    prog = "replica-assignor repair"
    if args.intent_file is None:
        return fail(prog, CommandError("--execute needs --intent-file (a plain repair plan is for "
                                       "kafka-reassign-partitions.sh --execute)", 2))
    if args.bootstrap_server is None or args.observed_path is not None:
        return fail(prog, CommandError("--intent-file needs --bootstrap-server (the live cluster) and "
                                       "no --snapshot or --observed-path", 2))
    try:
        return run_complete(args)
    except Exception as exc:  # bad record, unreachable cluster, refused reassignment: one line
        return fail(prog, exc)


def load_cluster(args: argparse.Namespace) -> tuple[ClusterSnapshot, frozenset[int]]:
    """The cluster to repair, with the observed store's offline brokers added, and the brokers
    that were forgotten (listed as not alive but no longer in the store)."""
    if args.command_config:
        security_options(args.command_config)
    if args.snapshot is not None:
        try:
            snapshot = ClusterSnapshot.from_dict(read_json(args.snapshot, "snapshot"))
        except SnapshotError as exc:
            raise CommandError(f"snapshot {args.snapshot}: {exc}", 2) from None
        if not snapshot.brokers:
            raise CommandError(f"snapshot {args.snapshot}: lists no brokers (a cluster has at least one)", 2)
    else:
        from .cluster_input import read_live

        read = read_live(args)
        for note in read.notes():
            print(f"replica-assignor repair: note: {note}", file=sys.stderr)
        snapshot = read.snapshot
    if args.observed_path is None:
        return snapshot, frozenset()
    from kafka_replica_assignor.server.cluster_source import observed_offline
    from kafka_replica_assignor.server.observed import ObservedStoreError

    from .observed import open_store

    try:
        with open_store(args.observed_path) as store:
            observed = store.list()
    except ObservedStoreError as exc:
        raise CommandError(str(exc), EXIT_USAGE) from None
    # a broker the snapshot lists is known (expected back when not alive): none is forgotten here
    return observed_offline(snapshot, observed), frozenset()


def summary(plan: RepairPlan) -> str:
    placeholders = sum(1 for r in plan.replacements if r.old < 0)
    line = (f"replica-assignor repair: {len(plan.assignments)} partition(s) repaired "
            f"({placeholders} placeholder(s) filled, {len(plan.replacements) - placeholders} "
            f"replica(s) moved off forgotten or unknown brokers)")
    if plan.unrepaired:
        shown = ", ".join(f"{t}-{p}" for t, p in plan.unrepaired[:10])
        more = f" and {len(plan.unrepaired) - 10} more" if len(plan.unrepaired) > 10 else ""
        line += (f"; {len(plan.unrepaired)} partition(s) left out, not enough alive brokers: "
                 f"{shown}{more}")
    return line


if __name__ == "__main__":
    from .main import main

    sys.exit(main(["repair", *sys.argv[1:]]))
