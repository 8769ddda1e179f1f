"""``replica-assignor assign``: ask a replica assignor server for an assignment and print
it as Kafka reassignment JSON, ready for ``kafka-reassign-partitions.sh --execute``.

``--explain`` needs the brokers' racks: from ``--cluster FILE`` (a cluster snapshot), or else
from the server's Metadata answer; when neither names every broker of the assignment, it says
so instead of guessing.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from typing import Any

from .common import (
    EXIT_CODES,
    CommandError,
    add_connection_arguments,
    current_assignment_from_reassignment,
    fail,
    help_text,
    host_port,
    print_json,
    read_json,
    reassignment_json,
    security_options,
)


def add_parser(sub: Any) -> None:
    p = sub.add_parser("assign", help="get a replica assignment from the server (Kafka reassignment JSON)",
                       description=help_text(__doc__), epilog=EXIT_CODES,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bootstrap-server", required=True, type=host_port, metavar="HOST:PORT", help="the replica assignor server")
    p.add_argument("--partitions", type=int, required=True,
                   help="partition count (with --current-assignment: the topic's total after the change)")
    p.add_argument("--replication-factor", type=int, required=True, help="replicas per partition")
    p.add_argument("--broker-list", metavar="1,2,3", help="place only on these brokers")
    p.add_argument("--disable-rack-aware", action="store_true",
                   help="Kafka's rack-unaware assignment (forceSimpleAssignment)")
    p.add_argument("--topic", help="the topic's name: sent to the server (CreateReplicaAssignment v1) and "
                                   "written in the output (default: new-topic)")
    p.add_argument("--current-assignment", metavar="FILE",
                   help="the topic's current assignment (Kafka reassignment JSON): add partitions or raise RF")
    add_connection_arguments(p, what="the replica assignor server")
    p.add_argument("--explain", action="store_true",
                   help="print per level of the rack tree how many replicas and leaders each node got (stderr)")
    p.add_argument("--explain-chart", metavar="PNG", help="write a chart of --explain's table")
    p.add_argument("--cluster", metavar="FILE",
                   help="cluster snapshot giving the brokers' racks for --explain "
                        "(default: the racks in the server's Metadata)")
    p.set_defaults(run=run)


def broker_list(text: str | None) -> list[int] | None:
    if not text:
        return None
    try:
        return [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise CommandError(f"--broker-list must be comma-separated broker ids, got {text!r}", 2) from None


def run(args: argparse.Namespace) -> int:
    from kafka.errors import KafkaError

    from protocol.client import CreateReplicaAssignmentOptions, ReplicaAssignorAdminClient

    try:
        security = security_options(args.command_config)
        current = None
        topic = args.topic
        if args.current_assignment:
            topic, current = current_assignment_from_reassignment(
                read_json(args.current_assignment, "current assignment"), args.topic)
        options = CreateReplicaAssignmentOptions(force_simple_assignment=args.disable_rack_aware,
                                                 timeout_ms=args.timeout_ms)
        racks: dict[int, str | None] | None = None
        with ReplicaAssignorAdminClient(args.bootstrap_server, request_timeout_ms=args.timeout_ms,
                                        security=security) as admin:
            result = admin.create_replica_assignment(
                args.partitions, args.replication_factor, broker_list(args.broker_list), options,
                topic=topic, current_assignment=current)
            if (args.explain or args.explain_chart) and not args.cluster:
                racks = dict(admin.metadata_brokers())
        assignment = result.assignments()
        print_json(reassignment_json(topic or "new-topic", assignment))
        if args.explain or args.explain_chart:
            sys.stdout.flush()
            explain_assignment(args, assignment, current, racks)
        return 0
    except (CommandError, KafkaError, ValueError, OSError) as exc:
        return fail("replica-assignor assign", exc)


def explain_assignment(args: argparse.Namespace, assignment: Mapping[int, list[int]],
                       current: Mapping[int, list[int]] | None, racks: Mapping[int, str | None] | None) -> None:
    """Print the per-level table (and write the chart) of the topic after the change."""
    from assignors.explain import explain, format_levels
    from assignors.snapshot import BrokerEntry, ClusterSnapshot, SnapshotError

    whole = dict(current or {})
    whole.update(assignment)
    used = sorted({b for replicas in whole.values() for b in replicas if b >= 0})
    if args.cluster:
        try:
            snapshot = ClusterSnapshot.from_dict(read_json(args.cluster, "cluster snapshot"))
        except SnapshotError as exc:
            raise CommandError(f"cluster snapshot {args.cluster}: {exc}", 2) from None
        source = f"--cluster {args.cluster}"
    else:
        racks = racks or {}
        snapshot = ClusterSnapshot(brokers=tuple(BrokerEntry(b, r, True) for b, r in sorted(racks.items())),
                                   partitions=())
        source = f"the Metadata of {args.bootstrap_server}"
    known = {b.id for b in snapshot.brokers}
    missing = [b for b in used if b not in known]
    if missing:
        shown = ", ".join(map(str, missing[:10])) + (" ..." if len(missing) > 10 else "")
        raise CommandError(f"--explain needs the rack of every broker used, and {source} does not list "
                           f"broker(s) {shown}: give the server's cluster snapshot with --cluster FILE")
    levels = explain(whole, snapshot.cluster_view())
    sys.stderr.write(format_levels(levels) + "\n")
    if args.explain_chart:
        from .explain_chart import write_chart

        write_chart(levels, args.explain_chart)
