"""``replica-assignor observed list|forget``: the brokers the server has seen (KIP-409).

``forget ID`` is the documented step when a broker id will never return (decommissioned):
placeholders then stop standing for it, and ``replica-assignor repair`` moves its replicas.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from datetime import UTC, datetime

from kafka_replica_assignor.server.exit_codes import EXIT_USAGE
from kafka_replica_assignor.server.observed import (
    DEFAULT_OBSERVED_PATH,
    ObservedBroker,
    ObservedBrokerStore,
    ObservedStoreError,
)

from .common import INT32_MAX, CommandError, check_regular_file, fail, print_json


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    """Add ``observed`` (with ``list`` and ``forget``) to the CLI; ``args.run`` is :func:`run`."""
    parser = subparsers.add_parser(
        "observed", help="list or forget the brokers seen so far",
        description="The brokers seen so far (observed.brokers.path). Forget a broker id "
                    "that will never return, so that placeholders stop standing for it.",
    )
    commands = parser.add_subparsers(dest="observed_command", metavar="{list,forget}", required=True)
    listing = commands.add_parser("list", help="list every observed broker")
    listing.add_argument("--json", action="store_true", help="print JSON instead of a table")
    forget = commands.add_parser("forget", help="forget a broker id that will never return")
    forget.add_argument("broker_id", metavar="ID", help="the broker id (warns when it was seen alive recently)")
    for sub in (listing, forget):
        sub.add_argument("--path", default=DEFAULT_OBSERVED_PATH, metavar="FILE",
                         help=f"the observed broker store (default: {DEFAULT_OBSERVED_PATH})")
    parser.set_defaults(run=run)
    return parser


def run(args: argparse.Namespace) -> int:
    """Run ``observed list`` or ``observed forget``; returns the exit status."""
    try:
        if args.observed_command == "forget":
            broker_id = _broker_id(args.broker_id)
        with open_store(args.path) as store:
            if args.observed_command == "list":
                _print_list(store.list(), args.json)
                return 0
            seen = {b.id: b for b in store.list()}.get(broker_id)
            if seen is None or not store.forget(broker_id):
                raise CommandError(f"broker {broker_id} is not in {args.path}")
            warning = recently_seen_warning(seen, time.time())
            if warning:
                print(f"replica-assignor observed forget: warning: {warning}", file=sys.stderr)
            print(f"forgot broker {broker_id}")
            return 0
    except (CommandError, ObservedStoreError) as exc:
        return fail(f"replica-assignor observed {args.observed_command}", exc)


SQLITE_HEADER = b"SQLite format 3\x00"


def open_store(path: str) -> ObservedBrokerStore:
    """The observed broker store at ``path``, opened for reading and forgetting. A path that is
    missing, not a regular file or not an SQLite database is bad input (exit 2), refused
    before SQLite opens it (which could leave a journal beside a file that is not its own)."""
    if not os.path.lexists(path):
        raise CommandError(f"no observed broker store at {path}", EXIT_USAGE)
    check_regular_file(path, "observed broker store")
    try:
        with open(path, "rb") as f:
            header = f.read(len(SQLITE_HEADER))
    except OSError as exc:
        raise CommandError(f"cannot read observed broker store {path}: {exc.strerror or exc}", EXIT_USAGE) from None
    if header != SQLITE_HEADER:
        raise CommandError(f"{path} is not an observed broker store (not an SQLite database)", EXIT_USAGE)
    _check_tables(path)
    try:
        return ObservedBrokerStore(path, create=False)
    except ObservedStoreError as exc:
        raise CommandError(str(exc), EXIT_USAGE) from None


def _check_tables(path: str) -> None:
    """An SQLite database without the store's table is refused read-only (the store itself
    would switch the file to WAL mode before looking, changing someone else's database)."""
    import sqlite3
    from pathlib import Path

    try:
        db = sqlite3.connect(Path(path).resolve().as_uri() + "?mode=ro", uri=True, timeout=10.0)
        try:
            found = db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'observed_brokers'"
                               ).fetchone()
        finally:
            db.close()
    except sqlite3.Error as exc:
        raise CommandError(f"cannot open observed broker store {path}: {exc}", EXIT_USAGE) from None
    if found is None:
        raise CommandError(f"{path} is not an observed broker store", EXIT_USAGE)


#: a broker seen this recently is probably alive: the server records alive brokers at every
#: metadata refresh (metadata.refresh.interval.ms, 30 s by default)
RECENTLY_SEEN_S = 300.0


def recently_seen_warning(broker: ObservedBroker, now: float) -> str | None:
    """A warning when ``broker`` was seen alive within :data:`RECENTLY_SEEN_S`: forgetting
    a live broker does not last (the server records it again at its next refresh)."""
    age = now - broker.last_seen
    if age > RECENTLY_SEEN_S:
        return None
    return (f"broker {broker.id} was seen alive {max(age, 0):.0f} s ago ({_iso(broker.last_seen)}): if it is "
            "still running, the server records it again at its next metadata refresh; forget a broker "
            "after it has been shut down for good")


def _broker_id(text: str) -> int:
    try:
        broker_id = int(text)
    except ValueError:
        broker_id = -1
    if broker_id < 0:
        raise CommandError(f"broker id must be an integer >= 0, got {text[:40]!r}", 2)
    if broker_id > INT32_MAX:
        raise CommandError(f"broker id must be <= {INT32_MAX} (Kafka ids are int32), got {text[:40]!r}", 2)
    return broker_id


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _print_list(brokers: list[ObservedBroker], as_json: bool) -> None:
    if as_json:
        print_json([{**b.to_dict(), "first_seen": _iso(b.first_seen), "last_seen": _iso(b.last_seen)}
                    for b in brokers])
        return
    table = [("ID", "RACK", "ENDPOINT", "FIRST SEEN", "LAST SEEN")]
    for b in brokers:
        endpoint = f"{b.host}:{b.port}" if b.host else "-"
        table.append((str(b.id), b.rack or "-", endpoint, _iso(b.first_seen), _iso(b.last_seen)))
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    for row in table:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())


if __name__ == "__main__":
    from .main import main

    sys.exit(main(["observed", *sys.argv[1:]]))
