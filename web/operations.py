"""What an operator asks of the watcher through the web API: plans (``rebalance``,
``remove_broker``, ``add_broker``, ``demote_broker``, ``proposals``) and requests to the running
execution (``pause``, ``resume``, ``cancel``, ``throttle``).

A plan request is read by the command line's own parser (:func:`add_request_arguments` of
``balance``) and checked by :class:`PlanRequest` and the goals, so a bad one is refused with the
very message ``balance`` prints; it is planned on the watcher's last view, one at a time, off the
watcher's thread. A dry run (the default) ends there, with the plan written under
``STATE_DIR/proposals`` for its report and charts; otherwise the plan is handed to the watcher,
which runs it at its next round through the executor of ``execute``, one action at a time, like
its own decisions. Each request is a user task (Cruise Control's ``user_tasks``) and a
``requested`` line of the audit log.
"""

from __future__ import annotations

import argparse
import itertools
import os
import shutil
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, NoReturn

from kafka_replica_assignor.planner.request import (
    PlanError,
    PlanRequest,
    RequestError,
    add_request_arguments,
    request_from_args,
    whole_number,
)
from kafka_replica_assignor.watcher.status import WatchStatus

KEEP_TASKS = 100
KEEP_PROPOSALS = 10
MOVES_SHOWN = 1000

#: per endpoint: the options set before the operator's (theirs may override ``--mode``) and
#: the option ``brokerid`` stands for (Cruise Control's parameter name)
PRESETS: Mapping[str, tuple[tuple[str, ...], str | None]] = {
    "proposals": (("--mode", "cluster"), None),
    "rebalance": (("--mode", "cluster"), None),
    "remove_broker": (("--mode", "replica"), "--remove-brokers"),
    "add_broker": (("--mode", "replica"), "--add-brokers"),
    "demote_broker": (("--mode", "leader"), "--demote-brokers"),
}
CONTROLS = ("pause", "resume", "cancel", "throttle")


class Refused(Exception):
    """A request refused: ``code`` is the HTTP status, the message one line."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise RequestError(message)


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="replica-assignor balance", add_help=False, allow_abbrev=False)
    add_request_arguments(parser)
    return parser


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def parse_bool(name: str, text: str) -> bool:
    if text.lower() in ("true", "1", "yes"):
        return True
    if text.lower() in ("false", "0", "no"):
        return False
    raise RequestError(f"{name} must be true or false, got {text!r}")


def plan_request(endpoint: str, params: Mapping[str, str], source: str) -> PlanRequest:
    """The :class:`PlanRequest` of an endpoint's parameters, by the command line's parser and
    checks (:class:`RequestError` with their messages). Parameters are the options of ``balance``
    by name (``max_moves`` or ``max-moves``); ``brokerid`` names the brokers of the
    ``*_broker`` endpoints."""
    preset, broker_flag = PRESETS[endpoint]
    argv = list(preset)
    for name, value in params.items():
        if name == "brokerid":
            if broker_flag is None:
                raise RequestError(f"unrecognized arguments: brokerid={value} ({endpoint} takes no brokerid)")
            argv += [broker_flag, value]
        else:
            argv += [_flag(name), value]
    if broker_flag is not None and "brokerid" not in params:
        raise RequestError(f"the following arguments are required: brokerid ({endpoint} names the brokers "
                           f"of {broker_flag})")
    return request_from_args(_parser().parse_args(argv), source)


def throttle_rate(text: str) -> int:
    """``throttle``'s ``rate``: read as ``execute --throttle`` reads it (its message)."""
    try:
        return whole_number(text, 1)
    except argparse.ArgumentTypeError as exc:
        raise RequestError(f"argument --throttle: {exc}") from None


@dataclass(slots=True)
class Task:
    """One request of an operator (what ``user_tasks`` lists)."""

    id: int
    endpoint: str
    params: dict[str, str]
    user: str
    dryrun: bool
    created_at: float = field(default_factory=time.time)
    status: str = "planning"        # planning, proposed, queued, running, done, failed, refused, ...
    summary: dict[str, Any] | None = None
    plan_dir: str | None = None
    error: str | None = None
    ended_at: float | None = None
    made: Any = None                 # (plan, request) while queued

    def to_json(self, moves: bool = False) -> dict[str, Any]:
        out = {"id": self.id, "endpoint": self.endpoint, "params": self.params, "user": self.user,
               "dryrun": self.dryrun, "created_at": round(self.created_at, 3), "status": self.status,
               "summary": self.summary, "plan_dir": self.plan_dir, "error": self.error,
               "ended_at": None if self.ended_at is None else round(self.ended_at, 3)}
        if moves and self.made is not None:
            out["moves"] = _moves(self.made[0])
        return out


def _summary(plan: Any) -> dict[str, Any]:
    return {"replica_moves": plan.replica_moves, "repairs": plan.repairs, "leader_changes": plan.leader_changes,
            "partitions_reassigned": len(plan.changed()), "notes": list(plan.notes)}


def _moves(plan: Any) -> list[dict[str, Any]]:
    return [{"topic": m.topic, "partition": m.partition, "from": m.source, "to": m.destination,
             "kind": m.kind.value if hasattr(m.kind, "value") else str(m.kind)} for m in plan.moves[:MOVES_SHOWN]]


class Operations:
    """The user tasks, the planning lock and the one plan handed to the watcher (module doc).
    ``say`` writes an audit record (the watcher's, thread-safe)."""

    def __init__(self, status: WatchStatus, state_dir: str, dry_run: bool,
                 say: Callable[..., dict[str, Any]], charts: bool = True) -> None:
        self.status = status
        self.state_dir = state_dir
        self.dry_run = dry_run
        self.say = say
        self.charts = charts
        self._lock = threading.Lock()
        self._planning = threading.Lock()
        self._tasks: deque[Task] = deque(maxlen=KEEP_TASKS)
        self._ids = itertools.count(1)
        self._queued: Task | None = None

    # ---- plans ----------------------------------------------------------------------------
    def propose(self, endpoint: str, params: Mapping[str, str], user: str, *, changes: bool) -> Task:
        """Plan what ``endpoint`` asks (:class:`Refused` or :class:`RequestError` when refused)."""
        params = dict(params)
        dryrun = parse_bool("dryrun", params.pop("dryrun", "true")) if changes else True
        request = plan_request(endpoint, params, f"replica-assignor watch: {endpoint} by {user}")
        if not dryrun:
            self._check_free()
        view = self.status.view()
        if view is None:
            raise Refused(503, "no view of the cluster yet: ask again after the watcher's first refresh")
        if not self._planning.acquire(blocking=False):
            raise Refused(429, "another plan is being made: one at a time, ask again when it ends")
        task = Task(next(self._ids), endpoint, dict(params), user, dryrun)
        try:
            with self._lock:
                self._tasks.append(task)
            if changes:
                self.say("requested", endpoint=endpoint, task=task.id, user=user, params=task.params, dryrun=dryrun)
            self._plan(task, view, request)
        except Exception as exc:
            if task.status == "planning":     # not ended by a refusal (a full disk, a bug): said in the task
                self._end(task, "failed", f"{type(exc).__name__}: {exc}")
            raise
        finally:
            self._planning.release()
        return task

    def _plan(self, task: Task, view: Any, request: PlanRequest) -> None:
        from kafka_replica_assignor.planner.report.outputs import render_outputs, write_outputs
        from kafka_replica_assignor.planner.solving.planning import make_plan

        try:
            plan = make_plan(view.snapshot, request)
        except RequestError as exc:
            self._end(task, "refused", str(exc))
            raise
        except PlanError as exc:
            self._end(task, "failed", str(exc))
            raise Refused(422, str(exc)) from None
        task.summary, task.made = _summary(plan), (plan, request)
        if not task.dryrun:
            with self._lock:
                if self._queued is not None or self.status.running() is not None:
                    self._end(task, "refused", "a plan started meanwhile: one action at a time")
                    raise Refused(409, "a plan started meanwhile: one action at a time")
                task.status, self._queued = "queued", task
            return
        out = os.path.join(self.state_dir, "proposals", f"{task.id:05d}-{task.endpoint}")
        write_outputs(render_outputs(plan, request, charts=self.charts), out)
        task.plan_dir = out
        self._end(task, "proposed")
        self._forget_old_proposals()

    def _check_free(self) -> None:
        if self.dry_run:
            raise Refused(409, "the watcher runs with --dry-run: it changes nothing (ask with dryrun=true)")
        running = self.status.running()
        if running is not None:
            raise Refused(409, f"a plan is running ({running['plan_dir']}): one action at a time")
        with self._lock:
            if self._queued is not None:
                raise Refused(409, f"task {self._queued.id} waits for the watcher: one action at a time")

    def _forget_old_proposals(self) -> None:
        folder = os.path.join(self.state_dir, "proposals")
        names = sorted(n for n in os.listdir(folder) if not n.startswith("."))
        for name in names[:-KEEP_PROPOSALS]:
            shutil.rmtree(os.path.join(folder, name), ignore_errors=True)

    def _end(self, task: Task, status: str, error: str | None = None) -> None:
        task.status, task.error, task.ended_at = status, error, time.time()
        if status in ("refused", "failed") and not task.dryrun:
            task.made = None

    # ---- the watcher's side ---------------------------------------------------------------
    def take(self) -> Task | None:
        """The plan to run now, if any (called by the watcher's thread)."""
        with self._lock:
            task, self._queued = self._queued, None
            if task is not None:
                task.status = "running"
            return task

    def started(self, task: Task, plan_dir: str) -> None:
        task.plan_dir = plan_dir

    def finished(self, task: Task, status: str, error: str | None = None) -> None:
        with self._lock:
            self._end(task, status, error)
            task.made = None

    # ---- the running execution --------------------------------------------------------------
    def control(self, action: str, params: Mapping[str, str], user: str) -> dict[str, Any]:
        """A request to the running plan, through its control file as ``execute --cancel`` and
        ``execute --throttle`` send theirs."""
        from kafka_replica_assignor.planner.execution.executor_state import write_control

        params = dict(params)
        request: dict[str, Any] = {action: True}
        if action == "throttle":
            if "rate" not in params:
                raise RequestError("the following arguments are required: rate (bytes per second)")
            request = {"throttle": throttle_rate(params.pop("rate"))}
        if params:
            raise RequestError(f"unrecognized arguments: {' '.join(sorted(params))}")
        running = self.status.running()
        if running is None:
            raise Refused(409, "no plan is running")
        self.say("requested", endpoint=f"execution/{action}", user=user, plan_dir=running["plan_dir"],
                 request=request)
        write_control(running["plan_dir"], request)
        return {"plan_dir": running["plan_dir"], "requested": request,
                "note": "applied by the executor at its next poll"}

    def tasks(self) -> list[dict[str, Any]]:
        with self._lock:
            return [t.to_json() for t in reversed(self._tasks)]
