"""How a subcommand names its cluster, and reading it: ``--snapshot``, ``--bootstrap-server``
(a live cluster, with ``--command-config``), ``--describe`` with ``--racks``, and for ``balance``
``--fleet``. Shared by ``state``, ``balance``, ``verify`` and ``repair``.

Bad input (a missing file, a bad snapshot): :class:`kafka_replica_assignor.planner.inputs.sources.SourceError` (exit code 2);
a live cluster that cannot be reached or read: :class:`kafka_replica_assignor.cli.common.CommandError` (exit code 1).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from typing import TYPE_CHECKING

from kafka_replica_assignor.cluster.snapshot import ClusterSnapshot
from kafka_replica_assignor.planner.inputs.sources import SourceError, load_snapshot, read_describe
from kafka_replica_assignor.server.exit_codes import EXIT_USAGE

from .common import CommandError, add_connection_arguments, check_regular_file, host_port, security_options

if TYPE_CHECKING:
    from kafka_replica_assignor.protocol.cluster_reader import ClusterRead


def add_input_arguments(parser: argparse.ArgumentParser, *, fleet: bool = False) -> None:
    """The ways to name a cluster, shared with ``balance``."""
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--snapshot", metavar="FILE", help="a cluster snapshot (JSON, the shared format)")
    if fleet:
        group.add_argument("--fleet", metavar="DIR",
                           help="many snapshots: a directory of JSON files, JSON lines or Parquet "
                                "with a cluster_id column (planned by the Spark pipeline)")
    group.add_argument("--bootstrap-server", type=host_port, metavar="HOST:PORT", help="read a live Kafka cluster")
    group.add_argument("--describe", metavar="FILE",
                       help="the output of kafka-topics.sh --describe (needs --racks)")
    parser.add_argument("--racks", metavar="FILE",
                        help="with --describe: lines '<broker id> [<rack>] [dead]', every live broker")
    add_connection_arguments(parser, what="the Kafka cluster (with --bootstrap-server)")


def read_live(args: argparse.Namespace, *, with_sizes: bool = False,
              client_id: str = "replica-assignor") -> ClusterRead:
    """Read the live cluster of ``--bootstrap-server`` with ``--command-config`` and
    ``--timeout-ms``. Unreachable or unreadable: a :class:`CommandError` (exit 1)."""
    from kafka_replica_assignor.protocol.cluster_reader import ClusterReadError, read_live_cluster

    from .probe import ASSIGNOR, KAFKA, explain_failure, probe

    security = security_options(args.command_config)
    configs = {"client_id": client_id, **security.kafka_configs()}
    try:
        read = read_live_cluster(args.bootstrap_server, request_timeout_ms=args.timeout_ms,
                                 admin_configs=configs, with_sizes=with_sizes)
    except ClusterReadError as exc:
        better = explain_failure(exc, args.bootstrap_server, security, expect=KAFKA)
        raise better if isinstance(better, CommandError) else CommandError(str(exc), 1) from None
    snapshot = read.snapshot
    if len(snapshot.brokers) == 1 and not snapshot.partitions and probe(args.bootstrap_server) == ASSIGNOR:
        # a replica assignor server's Metadata lists itself alone, with no topics
        raise CommandError(f"{args.bootstrap_server} is a replica assignor server, not a Kafka broker: give "
                           "the Kafka cluster's address", EXIT_USAGE)
    return read


def check_local_input(args: argparse.Namespace) -> None:
    """What can be checked without reading anything big: the named files and directories
    exist and --command-config is valid (before, say, a Spark session starts)."""
    import os

    if args.command_config:
        security_options(args.command_config)
    for flag in ("fleet", "snapshot", "describe", "racks"):
        path = getattr(args, flag, None)
        if path and not os.path.exists(path):
            what = "directory or file" if flag == "fleet" else "file"
            raise SourceError(f"--{flag} {path}: no such {what}")


def load_input(args: argparse.Namespace, *, with_sizes: bool = False,
               fenced_down: bool = False) -> ClusterSnapshot:
    """The snapshot named by the input arguments (not a fleet). A live cluster is read with
    partition sizes when ``with_sizes``; what its snapshot could not hold (left-out topics,
    fenced brokers, unknown sizes) is printed on stderr as ``note:`` lines. With
    ``fenced_down`` a fenced broker (registered, but not heartbeating: stopped, or starting)
    is shown as not alive; the planners keep it alive (its replicas are not lost)."""
    if args.command_config:
        security_options(args.command_config)  # a bad file is refused whatever the input
    if args.snapshot:
        check_regular_file(args.snapshot, "snapshot")
        snapshot = load_snapshot(args.snapshot)
        if not snapshot.brokers:
            raise SourceError(f"{args.snapshot}: the snapshot lists no brokers (a cluster has at least one)")
        return snapshot
    if args.bootstrap_server:
        read = read_live(args, with_sizes=with_sizes, client_id="replica-assignor-planner")
        for note in read.notes():
            print(f"note: {note}", file=sys.stderr)
        if fenced_down and read.fenced:
            brokers = tuple(dataclasses.replace(b, alive=False) if b.id in read.fenced else b
                            for b in read.snapshot.brokers)
            return dataclasses.replace(read.snapshot, brokers=brokers)
        return read.snapshot
    if not args.racks:
        raise SourceError("--describe needs --racks FILE (which broker is on which rack)")
    return read_describe(args.describe, args.racks)


def input_name(args: argparse.Namespace) -> str:
    return (getattr(args, "snapshot", None) or getattr(args, "fleet", None)
            or getattr(args, "bootstrap_server", None) or getattr(args, "describe", None) or "")
