"""``replica-assignor``: the operator's command line.

Subcommands: assign, create-topic, add-partitions, state, balance, verify-plan, repair, observed,
conformance, users. Results go to stdout (Kafka's own JSON formats where Kafka has one);
logs and errors to stderr, one line per error. Every subcommand exits 0 when it succeeded,
1 when the operation failed (a server or cluster unreachable or refusing, failed
authentication) and 2 on bad input or configuration (arguments, files, --command-config).
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys

from protocol.version import package_version

from .common import EXIT_CODES

# module exposing add_parser(subparsers) and run(args) -> int, in --help order
SUBCOMMAND_MODULES = (
    "cli.assign",
    "cli.topics",       # create-topic, add-partitions
    "cli.state",
    "cli.balance",
    "cli.verify",       # verify-plan
    "cli.execute",
    "cli.repair",
    "cli.observed",
    "cli.conformance",
    "cli.users",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="replica-assignor",
                                     description="Kafka replica placement: assign, inspect and balance.",
                                     epilog=EXIT_CODES)
    parser.add_argument("--version", action="version", version=f"%(prog)s {package_version()}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module_name in SUBCOMMAND_MODULES:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name != module_name:
                raise
            continue
        module.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    # kafka-python logs its retries; errors reach the operator as one line from the subcommand
    logging.getLogger("kafka").addHandler(logging.NullHandler())
    logging.getLogger("kafka").propagate = False
    try:
        return int(args.run(args) or 0)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 1


if __name__ == "__main__":
    sys.exit(main())
