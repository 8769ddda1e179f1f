"""``replica-assignor state``: show a cluster's balance state (KIP-166's show-cluster-state).

    replica-assignor state --snapshot cluster.json [--json]
    replica-assignor state --bootstrap-server HOST:PORT
    replica-assignor state --describe topics.txt --racks racks.txt

A live cluster is read with kafka-python; --command-config takes the Kafka client properties
of a secured cluster (SSL, SASL_PLAINTEXT, SASL_SSL). Bad input: one line on stderr, exit
code 2; a cluster that cannot be reached or read: one line, exit code 1.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from typing import TYPE_CHECKING

from cluster.snapshot import ClusterSnapshot
from planner.cluster_report import ClusterState, describe, render
from planner.sources import SourceError, load_snapshot, read_describe

from .common import (
    EXIT_CODES,
    EXIT_USAGE,
    CommandError,
    add_connection_arguments,
    check_regular_file,
    fail,
    help_text,
    host_port,
    security_options,
)

if TYPE_CHECKING:
    from protocol.cluster_reader import ClusterRead


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
    from protocol.cluster_reader import ClusterReadError, read_live_cluster

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


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "state", help="show replicas, leaders, racks and skew of a cluster",
        description="Per broker replicas and preferred leaders, per rack totals, skew, partitions "
                    "lacking rack diversity, replicas on dead or unknown brokers, placeholders. "
                    + help_text(__doc__.split("\n\n", 2)[2] if __doc__ else ""),
        epilog=EXIT_CODES,
    )
    add_input_arguments(parser)
    parser.add_argument("--json", action="store_true", help="print JSON instead of tables")
    parser.add_argument("--save-snapshot", metavar="FILE",
                        help="also write the cluster as a snapshot file (brokers, racks, replicas, leaders, "
                             "ISR, sizes): a live cluster captured for offline planning")
    parser.set_defaults(run=run)
    return parser


def run(args: argparse.Namespace) -> int:
    try:
        snapshot = load_input(args, with_sizes=True, fenced_down=True)
        if args.save_snapshot:
            save_snapshot(snapshot, args.save_snapshot)
    except SourceError as exc:
        return fail("replica-assignor state", exc, 2)
    except CommandError as exc:
        return fail("replica-assignor state", exc)
    state = describe(snapshot)
    unreachable = _unreachable(snapshot)
    sized = _has_bytes(snapshot)
    if args.json:
        data = state.to_dict()
        data["lower_bounds"]["threshold_percent"] = 0   # the ideal bands
        data["ideal_unreachable"] = unreachable
        if sized:
            for entry, broker in zip(data["brokers"], state.brokers, strict=True):
                entry["bytes"] = broker.bytes
                entry["capacity_bytes"] = broker.capacity_bytes
        json.dump(data, sys.stdout, separators=(",", ":"))
        sys.stdout.write("\n")
    else:
        sys.stdout.write(render(state) + "".join(line + "\n" for line in _bound_notes(state, unreachable)))
        if sized:
            sys.stdout.write("\n" + _bytes_table(state, snapshot))
    return 0


def save_snapshot(snapshot: ClusterSnapshot, path: str) -> None:
    """Write ``snapshot`` in the shared format, atomically (a failure leaves no file)."""
    import os

    tmp = f"{path}.tmp-{os.getpid()}"
    try:
        with open(tmp, "w") as out:
            json.dump(snapshot.to_dict(), out, separators=(",", ":"))
        os.replace(tmp, path)
    except OSError as exc:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise CommandError(f"--save-snapshot {path}: {exc.strerror or exc}", 1) from None


def _has_bytes(snapshot: ClusterSnapshot) -> bool:
    return (any(b.capacity_bytes is not None for b in snapshot.brokers)
            or any(p.size_bytes is not None for p in snapshot.partitions))


def _human(count: int | None) -> str:
    if count is None:
        return "-"
    value = float(count)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{count} B"  # not reached


def _bytes_table(state: ClusterState, snapshot: ClusterSnapshot) -> str:
    """Bytes on each broker (sum of its replicas' size_bytes) against its capacity_bytes."""
    unsized = sum(1 for p in snapshot.partitions if p.size_bytes is None)
    rows = [("broker", "bytes", "capacity", "used")]
    for b in state.brokers:
        used = f"{100 * b.bytes / b.capacity_bytes:.1f}%" if b.capacity_bytes else "-"
        rows.append((str(b.id), _human(b.bytes), _human(b.capacity_bytes), used))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.rjust(w) if i else cell.ljust(w) for i, (cell, w) in enumerate(zip(row, widths, strict=True)))
             for row in rows]
    total = sum(b.bytes for b in state.brokers)
    lines.append(f"bytes on brokers: {_human(total)}"
                 + (f"; {unsized} partition(s) without size_bytes count 0" if unsized else ""))
    return "\n".join(lines) + "\n"


def _unreachable(snapshot: ClusterSnapshot) -> dict[str, int] | None:
    """Partitions with more replicas than alive brokers: no plan reaches the ideal band."""
    alive = sum(b.alive for b in snapshot.brokers)
    wide = [len(p.replicas) for p in snapshot.partitions if len(p.replicas) > alive]
    if not wide:
        return None
    return {"partitions": len(wide), "largest_replication_factor": max(wide), "alive_brokers": alive}


def _bound_notes(state: ClusterState, unreachable: dict[str, int] | None) -> list[str]:
    lines = ["these bounds are for the ideal bands (threshold 0%); balance --threshold PERCENT aims at a "
             "wider band, may need fewer moves, and its report states its bound at that threshold"]
    if unreachable:
        rs = state.replicas_spread
        lines.append(f"the ideal {rs.floor}-{rs.ceil} replicas per alive broker is unreachable: "
                     f"{unreachable['partitions']} partition(s) have more replicas (up to "
                     f"{unreachable['largest_replication_factor']}) than the {unreachable['alive_brokers']} "
                     f"alive broker(s), and a broker holds at most one replica of a partition")
    return lines
