"""``replica-assignor assign``: ask a replica assignor server for an assignment and print
it as Kafka reassignment JSON, ready for ``kafka-reassign-partitions.sh --execute``.

``--explain`` needs the brokers' racks: from ``--cluster FILE`` (a cluster snapshot), or else
from the server's Metadata answer; when neither names every broker of the assignment, it says
so instead of guessing, and prints nothing else (exit 2: give --cluster). ``--cluster`` and
the ``--explain-chart`` path are checked before anything is asked.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from typing import Any

from kafka_replica_assignor.server.exit_codes import EXIT_USAGE

from .common import (
    EXIT_CODES,
    INT16_MAX,
    INT32_MAX,
    CommandError,
    add_connection_arguments,
    bounded,
    broker_ids,
    check_output_file,
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
    p.add_argument("--partitions", type=bounded(1, INT32_MAX, "int32"), required=True,
                   help="partition count (with --current-assignment: the topic's total after the change)")
    p.add_argument("--replication-factor", type=bounded(1, INT16_MAX, "int16"), required=True,
                   help="replicas per partition")
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
    """``--broker-list``: None when not given; an empty or malformed list is refused (exit 2)."""
    if text is None:
        return None
    return broker_ids(text, "--broker-list")


def run(args: argparse.Namespace) -> int:
    from kafka.errors import KafkaError

    from kafka_replica_assignor.protocol.client import CreateReplicaAssignmentOptions, ReplicaAssignorAdminClient

    try:
        security = security_options(args.command_config)
    except CommandError as exc:
        return fail("replica-assignor assign", exc)
    try:
        nodes = broker_list(args.broker_list)
        current = None
        topic = args.topic
        if args.current_assignment:
            topic, current = current_assignment_from_reassignment(
                read_json(args.current_assignment, "current assignment"), args.topic)
        explaining = bool(args.explain or args.explain_chart)
        cluster = read_cluster(args.cluster) if explaining and args.cluster else None
        if args.explain_chart is not None:
            check_output_file(args.explain_chart, "--explain-chart")
            chart_libraries()
        options = CreateReplicaAssignmentOptions(force_simple_assignment=args.disable_rack_aware,
                                                 timeout_ms=args.timeout_ms)
        with ReplicaAssignorAdminClient(args.bootstrap_server, request_timeout_ms=args.timeout_ms,
                                        security=security) as admin:
            result = admin.create_replica_assignment(
                args.partitions, args.replication_factor, nodes, options,
                topic=topic, current_assignment=current)
            if explaining and cluster is None:
                cluster = metadata_cluster(admin.metadata_brokers())
        assignment = result.assignments()
        levels = explain_levels(args, assignment, current, cluster) if explaining else None
        print_json(reassignment_json(topic or "new-topic", assignment))
        if levels is not None:
            sys.stdout.flush()
            write_explanation(args, levels)
        return 0
    except (KafkaError, OSError) as exc:
        from .probe import ASSIGNOR, explain_failure

        return fail("replica-assignor assign", explain_failure(exc, args.bootstrap_server, security, expect=ASSIGNOR))
    except (CommandError, ValueError) as exc:
        return fail("replica-assignor assign", exc)


def read_cluster(path: str) -> Any:
    """The ``--cluster`` snapshot (bad file: exit 2, before anything is asked)."""
    from kafka_replica_assignor.cluster.snapshot import ClusterSnapshot, SnapshotError

    try:
        return ClusterSnapshot.from_dict(read_json(path, "cluster snapshot"))
    except SnapshotError as exc:
        raise CommandError(f"cluster snapshot {path}: {exc}", EXIT_USAGE) from None


def metadata_cluster(racks: Any) -> Any:
    from kafka_replica_assignor.cluster.snapshot import BrokerEntry, ClusterSnapshot

    return ClusterSnapshot(brokers=tuple(BrokerEntry(b, r, True) for b, r in sorted(dict(racks).items())),
                           partitions=())


def chart_libraries() -> None:
    try:
        import matplotlib  # noqa: F401
    except ModuleNotFoundError:
        raise CommandError("--explain-chart needs matplotlib: pip install '.[planner]'", EXIT_USAGE) from None


def explain_levels(args: argparse.Namespace, assignment: Mapping[int, list[int]],
                   current: Mapping[int, list[int]] | None, cluster: Any) -> Any:
    """The per-level table of the topic after the change; a broker of unknown rack is refused
    (exit 2) before anything is printed."""
    from kafka_replica_assignor.assignors.explain import explain

    whole = dict(current or {})
    whole.update(assignment)
    used = sorted({b for replicas in whole.values() for b in replicas if b >= 0})
    source = f"--cluster {args.cluster}" if args.cluster else f"the Metadata of {args.bootstrap_server}"
    known = {b.id for b in cluster.brokers}
    missing = [b for b in used if b not in known]
    if missing:
        shown = ", ".join(map(str, missing[:10])) + (" ..." if len(missing) > 10 else "")
        raise CommandError(f"--explain needs the rack of every broker used, and {source} does not list "
                           f"broker(s) {shown}: give the server's cluster snapshot with --cluster FILE",
                           EXIT_USAGE)
    return explain(whole, cluster.cluster_view())


def write_explanation(args: argparse.Namespace, levels: Any) -> None:
    """Print the per-level table (and write the chart)."""
    from kafka_replica_assignor.assignors.explain import format_levels

    sys.stderr.write(format_levels(levels) + "\n")
    if args.explain_chart:
        from .explain_chart import write_chart

        write_chart(levels, args.explain_chart)
