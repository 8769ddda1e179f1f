"""``replica-assignor users add|list|delete --file FILE``: the SASL users file
(``sasl.users.file``). Only salted SCRAM credentials are written (RFC 5802: salt,
iterations, StoredKey, ServerKey); the password itself is never stored. PLAIN logins are
checked against the same credentials. A running server picks up changes without a restart.

The password comes from ``--password-stdin`` (first line of standard input), or a prompt
when standard input is a terminal. ``--password`` exists for scripts that have no better
choice; it is visible to other users in the process list.

Exit codes: 0 done; 1 the user to delete is not in the file; 2 bad input (arguments, an
unreadable or unwritable users file, no password).
"""

from __future__ import annotations

import argparse
import getpass
import json
import sys
from pathlib import Path
from typing import Any

from .common import CommandError, bounded, check_regular_file, fail, help_text

MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")


def add_parser(sub: Any) -> None:
    p = sub.add_parser("users", help="manage the SASL users file (salted SCRAM credentials)",
                       description=help_text(__doc__), formatter_class=argparse.RawDescriptionHelpFormatter)
    actions = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    add = actions.add_parser("add", help="add a user, or replace its credentials")
    add.add_argument("--file", required=True, metavar="FILE", help="the users file (created if missing)")
    add.add_argument("--user", required=True, help="the SASL user name")
    add.add_argument("--mechanism", action="append", choices=MECHANISMS,
                     help="credential to store (repeatable; default: both SCRAM mechanisms)")
    add.add_argument("--iterations", type=_iterations, default=None,
                     help="PBKDF2 iterations (default 8192, from 4096 to 1000000)")
    source = add.add_mutually_exclusive_group()
    source.add_argument("--password-stdin", action="store_true", help="read the password from standard input")
    source.add_argument("--password", help="the password on the command line (visible to other users)")
    listing = actions.add_parser("list", help="list users and their mechanisms (JSON)")
    listing.add_argument("--file", required=True, metavar="FILE", help="the users file")
    delete = actions.add_parser("delete", help="remove a user")
    delete.add_argument("--file", required=True, metavar="FILE", help="the users file")
    delete.add_argument("--user", required=True, help="the SASL user name")
    p.set_defaults(run=run)


def _iterations(text: str) -> int:
    """``--iterations``: checked here, before any hash is computed."""
    from kafka_replica_assignor.server.security.users import MAX_ITERATIONS, MIN_ITERATIONS

    return bounded(MIN_ITERATIONS, MAX_ITERATIONS, "SCRAM iterations")(text)


def _read(path: str, must_exist: bool) -> Any:
    from kafka_replica_assignor.server.security.users import UsersFileError, read_users_file

    if not Path(path).exists() and not must_exist:
        return {}
    check_regular_file(path, "users file")
    try:
        return read_users_file(path)
    except UsersFileError as exc:
        raise CommandError(str(exc), 2) from None
    except UnicodeDecodeError as exc:
        raise CommandError(f"users file {path} is not UTF-8 text ({exc.reason} at byte {exc.start})", 2) from None
    except (ValueError, RecursionError) as exc:
        raise CommandError(f"users file {path} is not usable: {type(exc).__name__}", 2) from None


def _password(args: argparse.Namespace) -> str:
    if args.password is not None:
        password = args.password
    elif args.password_stdin:
        password = sys.stdin.readline().rstrip("\r\n")
    elif not sys.stdin.isatty():
        raise CommandError("no terminal to ask for the password: pipe it with --password-stdin "
                           "(or give --password)", 2)
    else:
        password = getpass.getpass(f"Password for {args.user}: ")
        if getpass.getpass("Again: ") != password:
            raise CommandError("the passwords differ", 2)
    if not password:
        raise CommandError("the password is empty" + (" (--password-stdin read an empty first line)"
                                                      if args.password_stdin else ""), 2)
    return str(password)


def _write(path: str, users: Any) -> None:
    """Write the users file; a failure names the user's path, not the temporary file beside it."""
    from kafka_replica_assignor.server.security.users import write_users_file

    try:
        write_users_file(path, users)
    except OSError as exc:
        raise CommandError(f"cannot write {path}: {exc.strerror or type(exc).__name__}", 2) from None


def run(args: argparse.Namespace) -> int:
    from kafka_replica_assignor.server.security.users import DEFAULT_ITERATIONS, scram_credential

    try:
        if args.action == "list":
            users = _read(args.file, must_exist=True)
            print(json.dumps({name: sorted(creds) for name, creds in sorted(users.items())}))
            return 0
        if args.action == "delete":
            users = _read(args.file, must_exist=True)
            if args.user not in users:
                raise CommandError(f"no user {args.user!r} in {args.file}", 1)
            del users[args.user]
            _write(args.file, users)
            return 0
        if not args.user or any(c in args.user for c in "\x00\r\n"):
            raise CommandError("the user name must be non-empty and on one line", 2)
        users = _read(args.file, must_exist=False)
        password = _password(args)
        iterations = DEFAULT_ITERATIONS if args.iterations is None else args.iterations
        try:
            creds = {m: scram_credential(m, password, iterations=iterations) for m in (args.mechanism or MECHANISMS)}
        except ValueError as exc:
            raise CommandError(str(exc), 2) from None
        users[args.user] = creds
        _write(args.file, users)
        return 0
    except CommandError as exc:
        return fail(f"replica-assignor users {args.action}", exc)
    except OSError as exc:
        name = f" {exc.filename}" if exc.filename == args.file else ""
        return fail(f"replica-assignor users {args.action}",
                    CommandError(f"cannot use{name or ' ' + args.file}: {exc.strerror or exc}", 2))
