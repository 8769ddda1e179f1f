"""``replica-assignor watch``: follow a Kafka cluster and keep it where the assignor wants it.

    replica-assignor watch --bootstrap-server HOST:PORT --assignor HOST:PORT --state-dir DIR
        [--intent-file FILE] [--refresh-interval-ms MS] [--grace-period-s S]
        [--max-bytes-per-topic BYTES] [--topics REGEX] [--exclude-topics REGEX]
        [--max-brokers-to-heal N] [--max-lost-share SHARE] [--throttle BYTES_PER_S]
        [--max-moves-per-broker K] [--metrics-listener HOST:PORT] [--dry-run]
        [--command-config FILE] [--assignor-command-config FILE] [--timeout-ms MS]
        [--http-listener [HOST:]PORT [--http-tls-cert FILE --http-tls-key FILE]
         [--http-users FILE] [--http-token-file FILE] [--http-open-reads]]

Every refresh it reads the cluster and decides (kafka_replica_assignor.watcher.decisions): a topic
created by any client, or partitions added to one, that the assignor would have placed
elsewhere are moved to the assignor's placement while small; placeholders of the intent
record are filled when their brokers are back; a broker down past the grace period has its
replicas re-placed (repair mode, the broker removed) after a cluster-wide check. Each action is
a plan directory under DIR/plans run by the executor of ``execute`` (throttles, caps, state,
resume), one at a time; every decision is a line of DIR/audit.jsonl. SIGINT or SIGTERM: the
plan in flight is stopped (its moves cancelled) and the watcher exits 0; started again, it
resumes the plan first. With --http-listener it serves a REST API and a web page (the cluster as it
sees it, its plans and their reports, the execution in progress with pause, cancel and throttle,
the audit log; rebalance, remove_broker, add_broker and demote_broker plans, dry runs unless
asked otherwise, run one at a time like its own). Exit 2 with one line for bad options; 1 when
it cannot start.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from kafka_replica_assignor.web.config import add_web_arguments

from .common import (
    EXIT_CODES,
    CommandError,
    add_connection_arguments,
    check_writable_dir,
    fail,
    help_text,
    host_port,
    listener,
    positive,
    security_options,
)

PROG = "replica-assignor watch"
DEFAULT_MAX_BYTES = 4 * 1024 * 1024


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not 0 <= value < 10**9:
        raise argparse.ArgumentTypeError(f"must be in 0..1e9 seconds, got {text}")
    return value


def _share(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"must be in (0, 1], got {text}")
    return value


def _bytes(text: str) -> int:
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"not a whole number of bytes: {text!r}")
    return int(text)


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "watch", help="follow a cluster: place new topics, fill placeholders, heal dead brokers",
        description=help_text(__doc__.split("\n\n", 2)[2] if __doc__ else ""), epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bootstrap-server", required=True, type=host_port, metavar="HOST:PORT",
                        help="the Kafka cluster")
    parser.add_argument("--assignor", required=True, type=host_port, metavar="HOST:PORT",
                        help="the replica assignor server asked for placements (CreateReplicaAssignment)")
    add_connection_arguments(parser, what="the Kafka cluster")
    parser.add_argument("--assignor-command-config", metavar="FILE",
                        help="client properties for connecting to the assignor server")
    parser.add_argument("--state-dir", required=True, metavar="DIR",
                        help="the watcher's ledger, audit log and plan directories (created if missing)")
    parser.add_argument("--intent-file", metavar="FILE",
                        help="the KIP-409 intent record of create-topic: placeholders filled when brokers return; "
                             "its topics are already placed")
    parser.add_argument("--refresh-interval-ms", type=positive, default=5000, metavar="MS",
                        help="how often the cluster is read (default 5000); a view older than two intervals "
                             "is never acted on")
    parser.add_argument("--grace-period-s", type=_seconds, default=1800.0, metavar="S",
                        help="how long a broker may be fenced or gone before its replicas are re-placed "
                             "(default 1800)")
    parser.add_argument("--max-bytes-per-topic", type=_bytes, default=DEFAULT_MAX_BYTES, metavar="BYTES",
                        help=f"a topic (or added partitions) is moved only up to this size (default {DEFAULT_MAX_BYTES})")
    parser.add_argument("--topics", metavar="REGEX", help="only topics whose whole name matches")
    parser.add_argument("--exclude-topics", metavar="REGEX", help="never topics whose whole name matches")
    parser.add_argument("--max-brokers-to-heal", type=positive, default=1, metavar="N",
                        help="brokers re-placed by one plan at most (default 1)")
    parser.add_argument("--max-lost-share", type=_share, default=0.34, metavar="SHARE",
                        help="no healing while more than this share of the brokers is down (default 0.34)")
    parser.add_argument("--throttle", type=positive, metavar="BYTES_PER_S",
                        help="replication throttle on the moving replicas of the watcher's plans")
    parser.add_argument("--max-moves-per-broker", type=positive, default=5, metavar="K",
                        help="moves in flight a broker may be source or destination of (default 5)")
    parser.add_argument("--metrics-listener", type=listener, metavar="HOST:PORT",
                        help="serve Prometheus metrics at http://HOST:PORT/metrics (port 0: any free port, "
                             "said on start-up)")
    parser.add_argument("--dry-run", action="store_true", help="decide and log; change nothing")
    add_web_arguments(parser)
    parser.set_defaults(run=run)
    return parser


def settings(args: argparse.Namespace) -> Any:
    """The decisions' rules and the checked files, or a :class:`CommandError` (exit 2)."""
    from kafka_replica_assignor.watcher.decisions import Rules

    try:
        rules = Rules(refresh_s=args.refresh_interval_ms / 1000, grace_s=args.grace_period_s,
                      max_bytes_per_topic=args.max_bytes_per_topic, topics=args.topics,
                      exclude_topics=args.exclude_topics, max_heal_brokers=args.max_brokers_to_heal,
                      max_lost_share=args.max_lost_share)
    except ValueError as exc:
        raise CommandError(str(exc), 2) from None
    security_options(args.command_config)
    security_options(args.assignor_command_config)
    if os.path.exists(args.state_dir) and not os.path.isdir(args.state_dir):
        raise CommandError(f"--state-dir {args.state_dir} is a file, not a directory", 2)
    try:
        os.makedirs(os.path.join(args.state_dir, "plans"), exist_ok=True)
    except OSError as exc:
        raise CommandError(f"--state-dir {args.state_dir}: {exc.strerror or exc}", 2) from None
    check_writable_dir(args.state_dir, "--state-dir")
    from kafka_replica_assignor.web.config import ConfigError, web_config

    try:
        args.web = web_config(args)
    except ConfigError as exc:
        raise CommandError(str(exc), 2) from None
    if args.intent_file is not None:
        from .intent import read_record

        read_record(args.intent_file, missing_ok=True)
    return rules


def run(args: argparse.Namespace) -> int:
    from kafka_replica_assignor.watcher.ledger import Ledger

    from .watch_runtime import Watcher

    try:
        rules = settings(args)
        try:
            ledger = Ledger.load(args.state_dir, dry_run=args.dry_run)
        except ValueError as exc:
            raise CommandError(str(exc), 2) from None
        watcher = Watcher(args, rules, ledger)
    except CommandError as exc:
        return fail(PROG, exc)
    return watcher.serve()


if __name__ == "__main__":
    from .main import main

    sys.exit(main(["watch", *sys.argv[1:]]))
