"""``replica-assignor conformance``: hold another implementation to the published wire vectors.

Server role (default): send every vector's request to the server under test and print a
pass/fail table; the exit status is 1 when anything failed. ``--exact`` compares bytes
(a server in the reference's deterministic mode); without it, properties are checked.

Client role: ``--role client --listen HOST:PORT`` answers a client under test with the
vectors' responses until interrupted (or ``--max-requests``), then prints the table.
See docs/conformance.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys


def add_parser(sub) -> None:
    p = sub.add_parser("conformance", help="check a server or client against the published wire vectors",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--role", choices=("server", "client"), default="server",
                   help="what is under test (default: server)")
    p.add_argument("--bootstrap-server", metavar="HOST:PORT", help="server role: the server under test")
    p.add_argument("--exact", action="store_true",
                   help="server role: compare bytes (the server runs with the vectors' reference properties)")
    p.add_argument("--timeout-ms", type=int, default=5_000, help="server role: per-request timeout (default 5000)")
    p.add_argument("--listen", metavar="HOST:PORT", help="client role: where to listen (port 0 picks one)")
    p.add_argument("--max-requests", type=int, metavar="N", help="client role: stop after N requests")
    p.add_argument("--vectors", metavar="FILE", help="a vectors file (default: the one shipped in the package)")
    p.add_argument("--list", action="store_true", help="list the vectors and exit")
    p.add_argument("--print-cluster", action="store_true",
                   help="print the vectors' cluster (snapshot JSON, for cluster.metadata.file) and exit")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from protocol.client import parse_bootstrap
    from conformance.vectors import VectorFileError, load_vectors

    from .common import CommandError, fail

    prog = "replica-assignor conformance"
    try:
        vectors = load_vectors(args.vectors)
        if args.list:
            _print_list(vectors)
            return 0
        if args.print_cluster:
            print(json.dumps(vectors.reference["cluster"], indent=2))
            return 0
        if args.role == "server":
            if not args.bootstrap_server:
                raise CommandError("the server role needs --bootstrap-server HOST:PORT", 2)
            if args.timeout_ms <= 0:
                raise CommandError("--timeout-ms must be positive", 2)
            host, port = parse_bootstrap(args.bootstrap_server)
            return _check_server(vectors, host, port, args.exact, args.timeout_ms / 1000.0)
        if not args.listen:
            raise CommandError("the client role needs --listen HOST:PORT", 2)
        host, port = parse_bootstrap(args.listen)
        if args.max_requests is not None and args.max_requests <= 0:
            raise CommandError("--max-requests must be positive", 2)
    except (CommandError, VectorFileError, ValueError) as exc:
        return fail(prog, exc, 2)
    try:
        return asyncio.run(_listen(vectors, host, port, args.max_requests))
    except OSError as exc:
        return fail(prog, CommandError(f"cannot listen on {args.listen}: {exc.strerror or exc}"), 1)


def _check_server(vectors, host: str, port: int, exact: bool, timeout: float) -> int:
    from conformance.runner import check_server

    report = check_server(vectors, host, port, exact=exact, timeout=timeout)
    print(report.format(), flush=True)
    return 0 if report.ok else 1


async def _listen(vectors, host: str, port: int, max_requests: int | None) -> int:
    from conformance.listener import VectorListener

    listener = VectorListener(vectors, host, port, max_requests=max_requests,
                              on_event=lambda line: print(line, flush=True))
    await listener.start()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, listener.request_stop)
    print(f"listening on {listener.host}:{listener.port}", flush=True)
    await listener.serve()
    report = listener.report()
    print(report.format(), flush=True)
    return 0 if report.ok else 1


def _print_list(vectors) -> None:
    rows = [("VECTOR", "API", "ROLES", "SUMMARY")]
    rows += [(v.name, f"{v.api_name} v{v.api_version}", ",".join(v.roles), v.summary) for v in vectors.vectors]
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    for r in rows:
        sys.stdout.write("  ".join(r[i].ljust(widths[i]) for i in range(3)) + "  " + r[3] + "\n")
