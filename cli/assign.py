"""``replica-assignor assign``: ask a replica assignor server for an assignment and print
it as Kafka reassignment JSON, ready for ``kafka-reassign-partitions.sh --execute``."""

from __future__ import annotations

import argparse
import sys

from .common import CommandError, current_assignment_from_reassignment, fail, print_json, read_json, reassignment_json


def add_parser(sub) -> None:
    p = sub.add_parser("assign", help="get a replica assignment from the server (Kafka reassignment JSON)",
                       description=__doc__)
    p.add_argument("--bootstrap-server", required=True, metavar="HOST:PORT")
    p.add_argument("--partitions", type=int, required=True,
                   help="partition count (with --current-assignment: the topic's total after the change)")
    p.add_argument("--replication-factor", type=int, required=True)
    p.add_argument("--broker-list", metavar="1,2,3", help="place only on these brokers")
    p.add_argument("--disable-rack-aware", action="store_true",
                   help="Kafka's rack-unaware assignment (forceSimpleAssignment)")
    p.add_argument("--topic", help="topic name written in the output (default: new-topic)")
    p.add_argument("--current-assignment", metavar="FILE",
                   help="the topic's current assignment (Kafka reassignment JSON): add partitions or raise RF")
    p.add_argument("--timeout-ms", type=int, default=60_000)
    p.add_argument("--explain", action="store_true",
                   help="print per level of the rack tree how many replicas and leaders each node got (stderr)")
    p.add_argument("--explain-chart", metavar="PNG", help="write a chart of --explain's table")
    p.add_argument("--cluster", metavar="FILE",
                   help="cluster snapshot giving brokers' racks for --explain (default: the embedded example)")
    p.set_defaults(run=run)


def _broker_list(text: str | None) -> list[int] | None:
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
        current = None
        topic = args.topic
        if args.current_assignment:
            topic, current = current_assignment_from_reassignment(
                read_json(args.current_assignment, "current assignment"), args.topic)
        options = CreateReplicaAssignmentOptions(force_simple_assignment=args.disable_rack_aware,
                                                 timeout_ms=args.timeout_ms)
        with ReplicaAssignorAdminClient(args.bootstrap_server) as admin:
            result = admin.create_replica_assignment(
                args.partitions, args.replication_factor, _broker_list(args.broker_list), options,
                topic=topic if current is not None else None, current_assignment=current)
        assignment = result.assignments()
        print_json(reassignment_json(topic or "new-topic", assignment))
        if args.explain or args.explain_chart:
            _explain(args, assignment, current)
        return 0
    except (CommandError, KafkaError, ValueError, OSError) as exc:
        return fail("replica-assignor assign", exc)


def _explain(args, assignment, current) -> None:
    from assignors.snapshot import ClusterSnapshot
    from server.config import default_cluster_file

    from .common import read_json as _read

    snapshot = ClusterSnapshot.from_dict(_read(args.cluster or default_cluster_file(), "cluster snapshot"))
    whole = dict(current or {})
    whole.update(assignment)
    from assignors.explain import explain, format_levels

    levels = explain(whole, snapshot.cluster_view())
    sys.stderr.write(format_levels(levels) + "\n")
    if args.explain_chart:
        from .explain_chart import write_chart

        write_chart(levels, args.explain_chart)
