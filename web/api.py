"""The REST API of ``replica-assignor watch`` (docs/watch-api.yaml): one table of routes, one
function per endpoint, in Cruise Control's spirit.

Read-only (``GET``): ``state`` (:meth:`WatchStatus.read`), ``load`` (per broker, with the
bands), ``proposals`` (a dry-run plan), ``user_tasks``, ``audit`` (filtered), ``plans`` (the
watcher's and the proposals, with their reports and charts), ``execution``. Changing (``POST``):
``rebalance``, ``remove_broker``, ``add_broker``, ``demote_broker`` (``dryrun`` true unless
given false) and ``execution/{pause,resume,cancel,throttle}``. Whether the caller may ask is the
server's business (:mod:`.server`); what is asked is checked here, with the command line's
messages (:mod:`.operations`).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from kafka_replica_assignor.cluster.files import read_regular
from kafka_replica_assignor.planner.request import RequestError
from kafka_replica_assignor.watcher.status import WatchStatus

from .operations import CONTROLS, PRESETS, Operations, Refused

AUDIT_TAIL_BYTES = 8 << 20
AUDIT_LIMIT = 1000
PLAN_FILE_MAX_BYTES = 32 << 20
PLANS_SHOWN = 20
NAME = re.compile(r"[0-9A-Za-z][0-9A-Za-z._-]{0,99}")
PLAN_FILES = re.compile(r"(report\.md|summary\.json|execution\.json|reassignment\.json|moves\.csv|[0-9a-z_-]+\.png)")
TYPES = {".md": "text/markdown; charset=utf-8", ".json": "application/json", ".csv": "text/csv; charset=utf-8",
         ".png": "image/png"}


@dataclass(frozen=True, slots=True)
class Request:
    method: str
    path: str
    params: Mapping[str, str]
    user: str


@dataclass(slots=True)
class Response:
    code: int
    body: bytes
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)


def answer(data: Any, code: int = 200) -> Response:
    return Response(code, orjson.dumps(data, option=orjson.OPT_NON_STR_KEYS))


def error(code: int, message: str) -> Response:
    return answer({"error": message}, code)


Handler = Callable[["Api", Request, tuple[str, ...]], Response]


@dataclass(frozen=True, slots=True)
class Route:
    method: str
    pattern: re.Pattern[str]
    handler: Handler
    changes: bool
    documented: str          # its path in docs/watch-api.yaml
    costly: bool = False     # read-only but plans (CPU): credentials even with --http-open-reads


class Api:
    """The shared state the endpoints read (the status, the state directory, the operations)."""

    def __init__(self, status: WatchStatus, state_dir: str, operations: Operations) -> None:
        self.status = status
        self.state_dir = state_dir
        self.operations = operations

    def route(self, method: str, path: str) -> tuple[Route | None, tuple[str, ...], list[str]]:
        """The route of a request, its path groups, and the methods the path allows (for 405)."""
        allowed = []
        for route in ROUTES:
            match = route.pattern.fullmatch(path)
            if match:
                if route.method == method:
                    return route, match.groups(), []
                allowed.append(route.method)
        return None, (), allowed

    def handle(self, route: Route, request: Request, groups: tuple[str, ...]) -> Response:
        try:
            return route.handler(self, request, groups)
        except RequestError as exc:
            return error(400, str(exc))
        except Refused as exc:
            return error(exc.code, str(exc))


# ---- read-only ------------------------------------------------------------------------------
def _no_params(request: Request, *allowed: str) -> None:
    unknown = sorted(set(request.params) - set(allowed))
    if unknown:
        raise RequestError(f"unrecognized arguments: {' '.join(unknown)}")


def state(api: Api, request: Request, _: tuple[str, ...]) -> Response:
    _no_params(request)
    return answer(api.status.read())


def load(api: Api, request: Request, _: tuple[str, ...]) -> Response:
    _no_params(request)
    cluster = api.status.read()["cluster"]
    return answer({"read_at": cluster["read_at"], "bands": cluster.get("bands"),
                   "brokers": [{k: b[k] for k in ("id", "rack", "state", "replicas", "leaders", "bytes") if k in b}
                               for b in cluster["brokers"]]})


def proposals(api: Api, request: Request, _: tuple[str, ...]) -> Response:
    task = api.operations.propose("proposals", request.params, request.user, changes=False)
    return answer(task.to_json(moves=True))


def execution(api: Api, request: Request, _: tuple[str, ...]) -> Response:
    _no_params(request)
    s = api.status.read()
    return answer({"execution": s["execution"], "last_execution": s["last_execution"]})


def user_tasks(api: Api, request: Request, _: tuple[str, ...]) -> Response:
    _no_params(request)
    return answer({"user_tasks": api.operations.tasks()})


def audit(api: Api, request: Request, _: tuple[str, ...]) -> Response:
    """The audit log's last records, newest first, filtered: ``event``, ``kind``, ``action``
    (exact), ``text`` (anywhere in the record), ``since`` (seconds since the epoch), ``limit``."""
    _no_params(request, "event", "kind", "action", "text", "since", "limit")
    p = request.params
    try:
        limit = int(p.get("limit", "200"))
        since = float(p.get("since", "0"))
    except ValueError:
        raise RequestError("limit must be a whole number and since a number of seconds") from None
    if not 1 <= limit <= AUDIT_LIMIT:
        raise RequestError(f"limit must be in 1..{AUDIT_LIMIT}, got {limit}")
    exact = {k: p[k] for k in ("event", "kind", "action") if k in p}
    text = p.get("text", "").lower()
    out: list[dict[str, Any]] = []
    for line in reversed(_audit_tail(os.path.join(api.state_dir, "audit.jsonl"))):
        if text and text not in line.lower():
            continue
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if record.get("ts", 0) < since or any(str(record.get(k)) != v for k, v in exact.items()):
            continue
        out.append(record)
        if len(out) >= limit:
            break
    return answer({"records": out})


def _audit_tail(path: str) -> list[str]:
    try:
        with open(path, "rb") as f:
            size = f.seek(0, os.SEEK_END)
            f.seek(max(0, size - AUDIT_TAIL_BYTES))
            data = f.read(AUDIT_TAIL_BYTES)
    except FileNotFoundError:
        return []
    lines = data.decode("utf-8", "replace").splitlines()
    return lines[1:] if size > AUDIT_TAIL_BYTES else lines


def plans(api: Api, request: Request, _: tuple[str, ...]) -> Response:
    """The last plans of the watcher (``plans``) and the operators' dry runs (``proposals``), newest first."""
    _no_params(request)
    out: dict[str, list[dict[str, Any]]] = {}
    for group in ("plans", "proposals"):
        folder = os.path.join(api.state_dir, group)
        names = sorted((n for n in _listdir(folder) if NAME.fullmatch(n)), reverse=True)[:PLANS_SHOWN]
        out[group] = [_plan_entry(folder, group, name) for name in names]
    return answer(out)


def _listdir(folder: str) -> list[str]:
    try:
        return os.listdir(folder)
    except FileNotFoundError:
        return []


def _plan_entry(folder: str, group: str, name: str) -> dict[str, Any]:
    path = os.path.join(folder, name)
    files = sorted(n for n in _listdir(path) if PLAN_FILES.fullmatch(n))
    entry: dict[str, Any] = {"group": group, "name": name, "files": files, "summary": None, "execution": None}
    for file, key in (("summary.json", "summary"), ("execution.json", "execution")):
        if file in files:
            try:
                data = json.loads(read_regular(os.path.join(path, file), PLAN_FILE_MAX_BYTES, nofollow=True)[1])
            except (OSError, ValueError):
                continue
            if key == "summary" and isinstance(data, dict):
                data = {k: data[k] for k in ("mode", "replica_moves", "leader_changes", "repairs", "source")
                        if k in data}
            elif key == "execution" and isinstance(data, dict):
                data = {k: data[k] for k in ("status", "started_at", "ended_at", "moves") if k in data}
            entry[key] = data
    return entry


def plan_file(api: Api, request: Request, groups: tuple[str, ...]) -> Response:
    _no_params(request)
    group, name, file = groups
    if not NAME.fullmatch(name) or not PLAN_FILES.fullmatch(file):
        return error(404, "no such plan file")
    try:
        _, data = read_regular(os.path.join(api.state_dir, group, name, file), PLAN_FILE_MAX_BYTES, nofollow=True)
    except FileNotFoundError:
        return error(404, "no such plan file")
    except (OSError, ValueError) as exc:
        return error(404, f"not served: {exc}")
    return Response(200, data, TYPES[os.path.splitext(file)[1]])


# ---- changing ---------------------------------------------------------------------------------
def plan_endpoint(endpoint: str) -> Handler:
    def handle(api: Api, request: Request, _: tuple[str, ...]) -> Response:
        task = api.operations.propose(endpoint, request.params, request.user, changes=True)
        return answer(task.to_json(moves=task.dryrun), 200 if task.dryrun else 202)
    handle.__name__ = endpoint
    return handle


def control(api: Api, request: Request, groups: tuple[str, ...]) -> Response:
    return answer(api.operations.control(groups[0], request.params, request.user), 202)


def _route(method: str, path: str, handler: Handler, changes: bool = False, documented: str | None = None,
           costly: bool = False) -> Route:
    return Route(method, re.compile(path), handler, changes, documented or path, costly)


ROUTES: tuple[Route, ...] = (
    _route("GET", "/api/state", state),
    _route("GET", "/api/load", load),
    _route("GET", "/api/proposals", proposals, costly=True),
    _route("GET", "/api/user_tasks", user_tasks),
    _route("GET", "/api/audit", audit),
    _route("GET", "/api/plans", plans),
    _route("GET", r"/api/plans/(plans|proposals)/([^/]+)/([^/]+)", plan_file,
           documented="/api/plans/{group}/{name}/{file}"),
    _route("GET", "/api/execution", execution),
    *(_route("POST", f"/api/{name}", plan_endpoint(name), changes=True) for name in PRESETS if name != "proposals"),
    _route("POST", f"/api/execution/({'|'.join(CONTROLS)})", control, changes=True,
           documented="/api/execution/{action}"),
)
