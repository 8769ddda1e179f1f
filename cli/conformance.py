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
import socket
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .common import add_connection_arguments, help_text, host_port, timeout_ms

if TYPE_CHECKING:
    from kafka_replica_assignor.conformance.vectors import VectorSet
    from kafka_replica_assignor.protocol.client_config import SecurityOptions


def add_parser(sub: Any) -> None:
    p = sub.add_parser("conformance", help="check a server or client against the published wire vectors",
                       description=help_text(__doc__), formatter_class=argparse.RawDescriptionHelpFormatter,
                       epilog="exit codes: 0 every check passed; 1 a check failed, or the server could not be "
                              "reached or authenticated with; 2 bad arguments, vectors file or --command-config")
    p.add_argument("--role", choices=("server", "client"), default="server",
                   help="what is under test (default: server)")
    p.add_argument("--bootstrap-server", type=host_port, metavar="HOST:PORT",
                   help="server role: the server under test")
    p.add_argument("--exact", action="store_true",
                   help="server role: compare bytes (the server runs with the vectors' reference properties)")
    add_connection_arguments(p, what="the server under test (server role)", timeout=False)
    p.add_argument("--timeout-ms", type=timeout_ms, default=5_000, metavar="MS",
                   help="server role: connecting and each request time out after this long (default 5000)")
    p.add_argument("--listen", metavar="HOST:PORT", help="client role: where to listen (port 0 picks one)")
    p.add_argument("--max-requests", type=int, metavar="N", help="client role: stop after N requests")
    p.add_argument("--vectors", metavar="FILE", help="a vectors file (default: the one shipped in the package)")
    p.add_argument("--list", action="store_true", help="list the vectors and exit")
    p.add_argument("--print-cluster", action="store_true",
                   help="print the vectors' cluster (snapshot JSON, for cluster.metadata.file) and exit")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from kafka.errors import KafkaError

    from kafka_replica_assignor.conformance.vectors import VectorFileError, load_vectors
    from kafka_replica_assignor.protocol.client import parse_bootstrap

    from .common import CommandError, fail, security_options

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
            security = security_options(args.command_config)
            host, port = parse_bootstrap(args.bootstrap_server)
    except (CommandError, VectorFileError, ValueError) as exc:
        return fail(prog, exc, 2)
    if args.role == "server":
        opener = _opener(args.bootstrap_server, security, args.timeout_ms)
        try:
            _probe(opener, args.bootstrap_server, args.timeout_ms)
        except (KafkaError, OSError) as exc:  # unreachable, silent, refusing the credentials
            return fail(prog, exc, 1)
        return _check_server(vectors, host, port, args.exact, args.timeout_ms / 1000.0,
                             opener if security.security_protocol != "PLAINTEXT" else None)
    try:
        if not args.listen:
            raise CommandError("the client role needs --listen HOST:PORT", 2)
        if args.command_config:
            raise CommandError("--command-config is for the server role (the client role listens on PLAINTEXT)", 2)
        host, port = parse_bootstrap(args.listen)
        if args.max_requests is not None and args.max_requests <= 0:
            raise CommandError("--max-requests must be positive", 2)
    except (CommandError, VectorFileError, ValueError) as exc:
        return fail(prog, exc, 2)
    try:
        return asyncio.run(_listen(vectors, host, port, args.max_requests))
    except OSError as exc:
        return fail(prog, CommandError(f"cannot listen on {args.listen}: {exc.strerror or exc}"), 1)


def _opener(bootstrap: str, security: SecurityOptions, timeout_ms: int) -> Callable[[], socket.socket]:
    """Sets up one connection to the server under test (TCP, TLS, SASL), nothing else sent."""
    from kafka_replica_assignor.protocol.client import ReplicaAssignorAdminClient

    def open_socket() -> socket.socket:
        client = ReplicaAssignorAdminClient(bootstrap, "replica-assignor-conformance", timeout_ms, security=security)
        return client.open_socket()

    return open_socket


def _probe(opener: Callable[[], socket.socket], where: str, timeout_ms: int) -> None:
    """One connection and an ApiVersions v0 that must get some answer in time: a server that
    is down or does not answer is one line, not a table of failures. What the answer says is
    for the checks to judge."""
    from kafka_replica_assignor.protocol.frame import recv_exactly
    from kafka_replica_assignor.protocol.messages import ApiVersionsRequest

    request = ApiVersionsRequest(version=0)
    request.with_header(correlation_id=1, client_id="replica-assignor-conformance")
    with opener() as sock:
        sock.settimeout(timeout_ms / 1000.0)
        try:
            sock.sendall(request.encode(header=True, framed=True))
            recv_exactly(sock, 4)
        except TimeoutError:
            raise TimeoutError(f"no answer from {where} within {timeout_ms} ms") from None
        except ConnectionError:
            pass  # closed: the checks say what was wrong with the request


def _check_server(vectors: Any, host: str, port: int, exact: bool, timeout: float,
                  opener: Callable[[], socket.socket] | None) -> int:
    from kafka_replica_assignor.conformance.runner import check_server

    report = check_server(vectors, host, port, exact=exact, timeout=timeout, opener=opener)
    print(report.format(), flush=True)
    return 0 if report.ok else 1


async def _listen(vectors: VectorSet, host: str, port: int, max_requests: int | None) -> int:
    from kafka_replica_assignor.conformance.listener import VectorListener

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


def _print_list(vectors: VectorSet) -> None:
    rows = [("VECTOR", "API", "ROLES", "SUMMARY")]
    rows += [(v.name, f"{v.api_name} v{v.api_version}", ",".join(v.roles), v.summary) for v in vectors.vectors]
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    for r in rows:
        sys.stdout.write("  ".join(r[i].ljust(widths[i]) for i in range(3)) + "  " + r[3] + "\n")
