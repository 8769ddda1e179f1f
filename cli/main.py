"""``replica-assignor``: the operator's command line.

Subcommands: assign, create-topic, add-partitions, state, balance, verify-plan, execute, repair, watch, observed,
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
from typing import NoReturn

from kafka_replica_assignor.protocol.version import package_version

from .common import EXIT_CODES

# module exposing add_parser(subparsers) and run(args) -> int, in --help order
SUBCOMMAND_MODULES = (
    "kafka_replica_assignor.cli.assign",
    "kafka_replica_assignor.cli.topics",       # create-topic, add-partitions
    "kafka_replica_assignor.cli.state",
    "kafka_replica_assignor.cli.balance",
    "kafka_replica_assignor.cli.verify",       # verify-plan
    "kafka_replica_assignor.cli.execute",
    "kafka_replica_assignor.cli.repair",
    "kafka_replica_assignor.cli.watch",
    "kafka_replica_assignor.cli.observed",
    "kafka_replica_assignor.cli.conformance",
    "kafka_replica_assignor.cli.users",
)


class OneLineParser(argparse.ArgumentParser):
    """Argument errors as one line (``prog: error: message``) and exit code 2: the usage is
    what ``--help`` is for. Subcommand parsers are of this class too."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {' '.join(message.split())} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="replica-assignor",
                                     description="Kafka replica placement: assign, inspect and balance.",
                                     epilog=EXIT_CODES)
    parser.add_argument("--version", action="version", version=f"%(prog)s {package_version()}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module_name in SUBCOMMAND_MODULES:
        importlib.import_module(module_name).add_parser(sub)
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
    except RecursionError:  # input nested deeper than any parser here follows
        print(f"replica-assignor {args.command}: error: the input is nested too deeply", file=sys.stderr)
        return 2
    except MemoryError:
        print(f"replica-assignor {args.command}: error: out of memory", file=sys.stderr)
        return 1
    except Exception as exc:  # a bug: still one line, never a traceback
        print(f"replica-assignor {args.command}: error: unexpected {type(exc).__name__}: "
              f"{' '.join(str(exc).split())[:500]}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
