"""``replica-assignor state``: show a cluster's balance state (KIP-166's show-cluster-state).

    replica-assignor state --snapshot cluster.json [--json]
    replica-assignor state --bootstrap-server HOST:PORT
    replica-assignor state --bootstrap-server HOST:PORT --sample-seconds 60 --network-capacity 125000000
    replica-assignor state --describe topics.txt --racks racks.txt

A live cluster is read with kafka-python; --command-config takes the Kafka client properties
of a secured cluster (SSL, SASL_PLAINTEXT, SASL_SSL). With --sample-seconds N each partition's
produce and consume bytes/s are measured from two samples of its offsets N seconds apart, and
a traffic table shows each broker's network in and out (``--save-snapshot`` keeps the rates).
Bad input: one line on stderr, exit
code 2; a cluster that cannot be reached or read: one line, exit code 1.
"""

from __future__ import annotations

import argparse
import json
import sys

from kafka_replica_assignor.cluster.snapshot import ClusterSnapshot
from kafka_replica_assignor.cluster.traffic import broker_traffic, has_traffic
from kafka_replica_assignor.planner.inputs.sources import SourceError
from kafka_replica_assignor.planner.report.cluster_report import ClusterState, describe, render

from .cluster_input import add_input_arguments, add_traffic_arguments, load_input
from .common import EXIT_CODES, CommandError, check_output_file, fail, help_text


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "state", help="show replicas, leaders, racks and skew of a cluster",
        description="Per broker replicas and preferred leaders, per rack totals, skew, partitions "
                    "lacking rack diversity, replicas on dead or unknown brokers, placeholders. "
                    + help_text(__doc__.split("\n\n", 2)[2] if __doc__ else ""),
        epilog=EXIT_CODES,
    )
    add_input_arguments(parser)
    add_traffic_arguments(parser)
    parser.add_argument("--json", action="store_true", help="print JSON instead of tables")
    parser.add_argument("--save-snapshot", metavar="FILE",
                        help="also write the cluster as a snapshot file (brokers, racks, replicas, leaders, "
                             "ISR, sizes, sampled rates): a live cluster captured for offline planning")
    parser.set_defaults(run=run)
    return parser


def run(args: argparse.Namespace) -> int:
    try:
        if args.save_snapshot is not None:  # before the cluster is read: bad input, exit 2
            check_output_file(args.save_snapshot, "--save-snapshot")
        snapshot = load_input(args, with_sizes=True, fenced_down=True)
        if args.save_snapshot is not None:
            save_snapshot(snapshot, args.save_snapshot)
    except SourceError as exc:
        return fail("replica-assignor state", exc, 2)
    except CommandError as exc:
        return fail("replica-assignor state", exc)
    show(snapshot, as_json=args.json)
    return 0


def show(snapshot: ClusterSnapshot, *, as_json: bool) -> None:
    """The state on stdout: tables, or one JSON line."""
    state = describe(snapshot)
    unreachable = _unreachable(snapshot)
    sized = _has_bytes(snapshot)
    traffic = has_traffic(snapshot)
    if as_json:
        data = state.to_dict()
        data["lower_bounds"]["threshold_percent"] = 0   # the ideal bands
        data["ideal_unreachable"] = unreachable
        if sized:
            for entry, broker in zip(data["brokers"], state.brokers, strict=True):
                entry["bytes"] = broker.bytes
                entry["capacity_bytes"] = broker.capacity_bytes
        if traffic:
            _traffic_fields(data["brokers"], snapshot)
        json.dump(data, sys.stdout, separators=(",", ":"))
        sys.stdout.write("\n")
    else:
        sys.stdout.write(render(state) + "".join(line + "\n" for line in _bound_notes(state, unreachable)))
        if sized:
            sys.stdout.write("\n" + _bytes_table(state, snapshot))
        if traffic:
            sys.stdout.write("\n" + _traffic_table(snapshot))


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


def _rate(value: float | None) -> str:
    if value is None:
        return "-"
    for unit in ("B/s", "KiB/s", "MiB/s", "GiB/s"):
        if value < 1024 or unit == "GiB/s":
            return f"{value:.0f} {unit}" if unit == "B/s" else f"{value:.1f} {unit}"
        value /= 1024
    return "-"  # not reached


def _used(value: float, capacity: float | None) -> str:
    return f"{100 * value / capacity:.1f}%" if capacity else "-"


def _traffic_fields(entries: list[dict[str, object]], snapshot: ClusterSnapshot) -> None:
    """``state --json``: each broker's traffic (:mod:`kafka_replica_assignor.cluster.traffic`)."""
    traffic = broker_traffic(snapshot)
    capacities = {b.id: b for b in snapshot.brokers}
    for entry in entries:
        broker_id = entry["id"]
        assert isinstance(broker_id, int)
        t = traffic[broker_id]
        b = capacities.get(broker_id)
        entry.update(leader_bytes_in_per_s=t.leader_in, network_in_per_s=t.network_in,
                     network_out_per_s=t.network_out,
                     network_in_capacity=b.network_in_capacity if b else None,
                     network_out_capacity=b.network_out_capacity if b else None)


def _traffic_table(snapshot: ClusterSnapshot) -> str:
    """Each broker's network in (produce it leads, replication it follows) and out (consumers and
    replication of what it leads), against its capacities; busiest in first."""
    traffic = broker_traffic(snapshot)
    brokers = {b.id: b for b in snapshot.brokers}
    rows = [("broker", "leader in", "follower in", "in", "in used", "out", "out used")]
    for broker_id, t in sorted(traffic.items(), key=lambda item: (-item[1].network_in, item[0])):
        b = brokers.get(broker_id)
        rows.append((str(broker_id), _rate(t.leader_in), _rate(t.follower_in), _rate(t.network_in),
                     _used(t.network_in, b.network_in_capacity if b else None), _rate(t.network_out),
                     _used(t.network_out, b.network_out_capacity if b else None)))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.rjust(w) if i else cell.ljust(w) for i, (cell, w) in enumerate(zip(row, widths, strict=True)))
             for row in rows]
    produced = sum(p.bytes_in_per_s or 0.0 for p in snapshot.partitions)
    consumed = sum(p.bytes_out_per_s or 0.0 for p in snapshot.partitions)
    unrated = sum(1 for p in snapshot.partitions if p.bytes_in_per_s is None)
    lines.append(f"produced {_rate(produced)}, consumed {_rate(consumed)} (replication excluded)"
                 + (f"; {unrated} partition(s) without rates count 0" if unrated else ""))
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
