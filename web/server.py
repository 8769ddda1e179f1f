"""The web listener of ``replica-assignor watch``: the REST API (:mod:`.api`), the page
(``static/``: plain HTML, CSS and a script, no build step) and ``/metrics``, on one HTTP(S) server.

:class:`WebServer` owns start-up (bind, port 0 said back), serving (a thread per connection, at
most :data:`MAX_CONNECTIONS` at once, the TLS handshake in the connection's thread) and a bounded
shutdown. What a client may hold is :mod:`.admission`'s: a request (TLS handshake, headers and
body) is read whole within :data:`READ_DEADLINE_S` and :data:`MAX_REQUEST` bytes, an answer is
written within :data:`WRITE_DEADLINE_S`, a connection still sending its request gives its slot to a
new one when all are taken, and wrong credentials are answered :data:`FAILED_AUTH_RATE` a second,
in turns fair between addresses. Every request under
``/api/`` and ``/metrics`` is authenticated (:mod:`.auth`) before it is routed: a changing one
always (401 without or with wrong credentials, 403 when the listener has none configured), a
read-only one unless ``--http-open-reads`` (but ``proposals``, which plans, always). The page itself holds no data and is served to anyone.
"""

from __future__ import annotations

import io
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import orjson

from kafka_replica_assignor.planner.request import RequestError

from .admission import Connection, DeadlineReader, FailedAuthRate, Slots
from .api import Api, Request, Response, error
from .auth import Auth
from .config import WebConfig, tls_context

MAX_CONNECTIONS = 64
MAX_BODY = 64 * 1024
MAX_REQUEST = 2 * MAX_BODY        # request line, headers and body (and what the reader buffered ahead)
READ_DEADLINE_S = 10.0            # a whole request read within it (from the connection's wait for it)
WRITE_DEADLINE_S = 10.0           # an answer written within it
FAILED_AUTH_RATE = 10.0           # wrong credentials answered a second, all addresses together
FAILED_AUTH_WAIT_S = 5.0          # a wrong credential waiting longer for its turn: closed unanswered
REALM = 'realm="replica-assignor watch"'
STATIC = {"/": ("index.html", "text/html; charset=utf-8"),
          "/static/app.js": ("app.js", "text/javascript; charset=utf-8"),
          "/static/style.css": ("style.css", "text/css; charset=utf-8")}


def _static(name: str) -> bytes:
    return resources.files(__package__).joinpath("static", name).read_bytes()


class _Unanswered(Exception):
    """The request is not answered: its connection closes."""


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    web: WebServer

    def process_request(self, request: Any, client_address: Any) -> None:
        conn = self.web.slots.admit(request, str(client_address[0]))
        if conn is None:          # full, none to evict: closed at once, nothing read
            self.shutdown_request(request)
            return
        thread = threading.Thread(target=self._serve_connection, args=(request, client_address, conn),
                                  name="watch-web-conn", daemon=True)
        try:
            thread.start()
        except Exception:
            self.web.slots.release(conn)
            self.shutdown_request(request)
            raise

    def _serve_connection(self, request: Any, client_address: Any, conn: Connection) -> None:
        try:
            request.settimeout(max(conn.deadline - time.monotonic(), 0.001))
            if self.web.tls is not None:
                try:
                    request = conn.sock = self.web.tls.wrap_socket(request, server_side=True)
                except (OSError, ValueError):
                    return
            if not conn.evicted:
                _Handler(request, client_address, self, conn)
        except OSError:
            pass          # the client went, or its connection was evicted
        finally:
            self.web.slots.release(conn)
            self.shutdown_request(request)


class WebServer:
    def __init__(self, config: WebConfig, api: Api, metrics: Any = None) -> None:
        self.config = config
        self.api = api
        self.auth = Auth(config)
        self.metrics = metrics          # a prometheus_client registry, or None
        self.tls = tls_context(config) if config.tls else None
        self.slots = Slots(MAX_CONNECTIONS, READ_DEADLINE_S, MAX_REQUEST)
        self.failed_auth = FailedAuthRate(FAILED_AUTH_RATE, FAILED_AUTH_WAIT_S)
        self.pages = {path: (_static(name), kind) for path, (name, kind) in STATIC.items()}
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> int:
        """Bind and serve in a thread of its own; the port bound."""
        family = socket.AF_INET6 if ":" in self.config.host else socket.AF_INET
        server_class = type("_Bound", (_Server,), {"address_family": family})
        self._server = server = server_class((self.config.host, self.config.port), _Handler)
        server.web = self
        self._thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.2},
                                        name="watch-web", daemon=True)
        self._thread.start()
        return int(server.server_address[1])

    def close(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)

    # ---- one request --------------------------------------------------------------------
    def respond(self, method: str, target: str, headers: Any, body: bytes,
                conn: Connection | None = None) -> Response:
        """The answer to one request; raises :class:`_Unanswered` when there is none (wrong
        credentials that waited too long for their turn, or their connection evicted meanwhile)."""
        url = urlsplit(target)
        path = url.path
        if method == "GET" and path in self.pages:
            data, kind = self.pages[path]
            return Response(200, data, kind, {"Cache-Control": "no-cache"})
        if path == "/metrics" and self.metrics is not None:
            return self._metrics(method, headers, conn)
        if not path.startswith("/api/"):
            return error(404, f"no such page: {path}")
        route, groups, allowed = self.api.route(method, path)
        if route is None:
            if allowed:
                return Response(405, orjson.dumps({"error": f"{method} not allowed"}), "application/json",
                                {"Allow": ", ".join(allowed)})
            return error(404, f"no such endpoint: {path}")
        user = self.auth.user(headers.get("Authorization"))
        refused = self._refused(route.changes, user, headers, conn, costly=route.costly)
        if refused is not None:
            return refused
        try:
            params = _params(url.query, body, headers.get("Content-Type", ""))
        except RequestError as exc:
            return error(400, str(exc))
        return self.api.handle(route, Request(method, path, params, user or "anonymous"), groups)

    def _refused(self, changes: bool, user: str | None, headers: Any, conn: Connection | None,
                 costly: bool = False) -> Response | None:
        if user is not None or (not changes and not costly and self.config.open_reads):
            return None
        if (changes or costly) and not self.config.has_credentials:
            return error(403, "this listener has no credentials configured: it changes nothing "
                              "(start the watcher with --http-users or --http-token-file)")
        challenge = f"Bearer {REALM}"
        if headers.get("X-Requested-With") is None:      # a script's fetch asks without a browser dialog
            challenge = f"Basic {REALM}, {challenge}"
        wrong = bool(headers.get("Authorization"))
        if wrong and not self.failed_auth.turn(conn.ip if conn else "", self.slots if conn else None, conn):
            raise _Unanswered
        response = error(401, "wrong credentials" if wrong else "credentials required (HTTP basic or a bearer token)")
        response.headers["WWW-Authenticate"] = challenge
        return response

    def _metrics(self, method: str, headers: Any, conn: Connection | None) -> Response:
        from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

        if method != "GET":
            return Response(405, b'{"error": "GET only"}', "application/json", {"Allow": "GET"})
        refused = self._refused(False, self.auth.user(headers.get("Authorization")), headers, conn)
        return refused or Response(200, generate_latest(self.metrics), CONTENT_TYPE_LATEST)


def _params(query: str, body: bytes, content_type: str) -> dict[str, str]:
    """The query's parameters and the body's (a form or a JSON object); a name given twice is refused."""
    pairs = parse_qsl(query, keep_blank_values=True)
    if body:
        if content_type.startswith("application/json"):
            try:
                data = orjson.loads(body)
            except orjson.JSONDecodeError:
                raise RequestError("the body is not JSON") from None
            if not isinstance(data, dict):
                raise RequestError("the body must be a JSON object of parameters")
            pairs += [(str(k), str(v).lower() if isinstance(v, bool) else str(v)) for k, v in data.items()]
        else:
            pairs += parse_qsl(body.decode("utf-8", "replace"), keep_blank_values=True)
    params: dict[str, str] = {}
    for name, value in pairs:
        if name in params:
            raise RequestError(f"parameter {name!r} given twice")
        params[name] = value
    return params


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"
    server_version = "replica-assignor-watch"
    sys_version = ""

    def __init__(self, request: Any, client_address: Any, server: _Server, conn: Connection) -> None:
        self.conn = conn
        self.requests = 0
        super().__init__(request, client_address, server)

    def setup(self) -> None:
        super().setup()
        self.rfile = io.BufferedReader(DeadlineReader(self.connection, self.conn))

    def handle_one_request(self) -> None:
        if self.requests:       # a kept-alive connection waits for its next request: a new deadline
            self.server.web.slots.reading(self.conn)
        self.requests += 1
        super().handle_one_request()

    def do_GET(self) -> None:  # noqa: N802 - http.server's names
        self._serve("GET")

    def do_POST(self) -> None:  # noqa: N802
        self._serve("POST")

    def do_PUT(self) -> None:  # noqa: N802
        self._serve("PUT")

    def do_DELETE(self) -> None:  # noqa: N802
        self._serve("DELETE")

    def _serve(self, method: str) -> None:
        started = time.perf_counter()
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            length = -1
        if not 0 <= length <= MAX_BODY:
            self._send(error(413, f"a body of at most {MAX_BODY} bytes"), close=True)
            return
        body = self.rfile.read(length) if length else b""
        if len(body) < length:
            self.close_connection = True
            return
        self.server.web.slots.serving(self.conn)
        self.connection.settimeout(WRITE_DEADLINE_S)    # (sendall's timeout is for the whole of its bytes)
        try:
            response = self.server.web.respond(method, self.path, self.headers, body, self.conn)
        except _Unanswered:
            self.close_connection = True
            return
        except Exception as exc:  # noqa: BLE001 - one request failed, the listener goes on
            response = error(500, f"{type(exc).__name__}: {exc}")
        response.headers["Server-Timing"] = f"total;dur={(time.perf_counter() - started) * 1000:.1f}"
        self._send(response)

    def _send(self, response: Response, close: bool = False) -> None:
        self.send_response(response.code)
        self.send_header("Content-Type", response.content_type)
        self.send_header("Content-Length", str(len(response.body)))
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Content-Security-Policy", "default-src 'self'; img-src 'self' data: blob:")
        for name, value in response.headers.items():
            self.send_header(name, value)
        if close:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        self.wfile.write(response.body)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - http.server's signature
        pass      # the audit log says what changed; requests themselves are not logged


__all__ = ["WebServer"]
