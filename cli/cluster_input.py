"""How a subcommand names its cluster, and reading it: ``--snapshot``, ``--bootstrap-server``
(a live cluster, with ``--command-config``), ``--describe`` with ``--racks``, and for ``balance``
``--fleet``. Shared by ``state``, ``balance``, ``verify`` and ``repair``; ``state`` and
``balance`` also take traffic options: ``--sample-seconds`` (rates measured on a live cluster,
:mod:`kafka_replica_assignor.protocol.traffic_sampler`) and ``--network-capacity``.

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
from kafka_replica_assignor.planner.request import whole_number
from kafka_replica_assignor.server.exit_codes import EXIT_USAGE

from .common import (
    CommandError,
    add_connection_arguments,
    check_regular_file,
    host_port,
    security_options,
)

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


#: ``--sample-seconds`` bounds: a window long enough for a few offset commits, short enough to wait for
SAMPLE_SECONDS = (1, 3600)


def sample_seconds(text: str) -> int:
    """``--sample-seconds``: a whole number of seconds in :data:`SAMPLE_SECONDS`."""
    least, most = SAMPLE_SECONDS
    value = whole_number(text, least)
    if value > most:
        raise argparse.ArgumentTypeError(f"must be <= {most} seconds, got {value}")
    return value


def network_capacity(text: str) -> tuple[int, int]:
    """``--network-capacity IN[,OUT]``: bytes per second, whole numbers >= 1 (OUT defaults to IN)."""
    parts = text.split(",")
    if len(parts) > 2:
        raise argparse.ArgumentTypeError(f"expected IN or IN,OUT (bytes per second), got {text!r}")
    numbers = [whole_number(part.strip(), 1) for part in parts]
    return numbers[0], numbers[-1]


def add_traffic_arguments(parser: argparse.ArgumentParser) -> None:
    """``--sample-seconds`` and ``--network-capacity``, shared by ``state`` and ``balance``."""
    least, most = SAMPLE_SECONDS
    parser.add_argument("--sample-seconds", type=sample_seconds, metavar="N",
                        help=f"with --bootstrap-server: measure each partition's produce and consume bytes/s "
                             f"from two samples of offsets N seconds apart ({least}..{most}; consume rates come "
                             "from committed offsets, so give several of the consumers' commit intervals)")
    parser.add_argument("--network-capacity", type=network_capacity, metavar="IN[,OUT]",
                        help="every broker's network_in_capacity and network_out_capacity in bytes/s "
                             "(OUT defaults to IN), replacing the snapshot's")


def check_traffic_arguments(args: argparse.Namespace) -> None:
    """``--sample-seconds`` reads a live cluster (exit 2 otherwise, before anything is read)."""
    if getattr(args, "sample_seconds", None) is not None and not args.bootstrap_server:
        raise SourceError("--sample-seconds samples a live cluster: give --bootstrap-server HOST:PORT")


def with_network_capacity(snapshot: ClusterSnapshot, capacity: tuple[int, int] | None) -> ClusterSnapshot:
    """Every broker's network capacities set to ``capacity`` (in, out); unchanged when None."""
    if capacity is None:
        return snapshot
    brokers = tuple(dataclasses.replace(b, network_in_capacity=capacity[0], network_out_capacity=capacity[1])
                    for b in snapshot.brokers)
    return dataclasses.replace(snapshot, brokers=brokers)


def read_live(args: argparse.Namespace, *, with_sizes: bool = False,
              client_id: str = "replica-assignor", sample_seconds: int | None = None) -> ClusterRead:
    """Read the live cluster of ``--bootstrap-server`` with ``--command-config`` and
    ``--timeout-ms``, its traffic sampled over ``sample_seconds`` when given. Unreachable or
    unreadable: a :class:`CommandError` (exit 1)."""
    from kafka_replica_assignor.protocol.cluster_reader import ClusterReadError, read_live_cluster
    from kafka_replica_assignor.protocol.traffic_sampler import sampled

    from .probe import ASSIGNOR, KAFKA, explain_failure, probe

    security = security_options(args.command_config)
    configs = {"client_id": client_id, **security.kafka_configs()}
    try:
        read = read_live_cluster(args.bootstrap_server, request_timeout_ms=args.timeout_ms,
                                 admin_configs=configs, with_sizes=with_sizes,
                                 then=None if sample_seconds is None else sampled(sample_seconds))
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
    """The snapshot named by the input arguments (not a fleet), with the traffic options
    (:func:`add_traffic_arguments`) applied when the command has them."""
    check_traffic_arguments(args)
    return with_network_capacity(_load(args, with_sizes, fenced_down), getattr(args, "network_capacity", None))


def _load(args: argparse.Namespace, with_sizes: bool, fenced_down: bool) -> ClusterSnapshot:
    """A live cluster is read with partition sizes when ``with_sizes``; what its snapshot could
    not hold (left-out topics, fenced brokers, unknown sizes) is printed on stderr as ``note:``
    lines, with how its traffic was sampled. With ``fenced_down`` a fenced broker (registered,
    but not heartbeating: stopped, or starting) is shown as not alive; the planners keep it
    alive (its replicas are not lost)."""
    if args.command_config:
        security_options(args.command_config)  # a bad file is refused whatever the input
    if args.snapshot:
        check_regular_file(args.snapshot, "snapshot")
        snapshot = load_snapshot(args.snapshot)
        if not snapshot.brokers:
            raise SourceError(f"{args.snapshot}: the snapshot lists no brokers (a cluster has at least one)")
        return snapshot
    if args.bootstrap_server:
        seconds = getattr(args, "sample_seconds", None)
        if seconds is not None:
            print(f"sampling traffic: two samples of offsets {seconds} s apart", file=sys.stderr)
        read = read_live(args, with_sizes=with_sizes, client_id="replica-assignor-planner", sample_seconds=seconds)
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
