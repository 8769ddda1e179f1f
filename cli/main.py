"""``replica-assignor``: the operator's command line.

Subcommands: assign, state, balance, repair, observed, conformance, users. Results go to
stdout (Kafka's own JSON formats where Kafka has one); logs and errors to stderr. Bad
input is one line on stderr and a non-zero exit.
"""

from __future__ import annotations

import argparse
import importlib
import sys

# subcommand -> module exposing add_parser(subparsers) and run(args) -> int
SUBCOMMANDS = {
    "assign": "cli.assign",
    "state": "cli.state",
    "balance": "cli.balance",
    "repair": "cli.repair",
    "observed": "cli.observed",
    "conformance": "cli.conformance",
    "users": "cli.users",
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="replica-assignor",
                                     description="Kafka replica placement: assign, inspect and balance.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, module_name in SUBCOMMANDS.items():
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
    try:
        return int(args.run(args) or 0)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 1


if __name__ == "__main__":
    sys.exit(main())
