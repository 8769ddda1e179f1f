"""The I/O of ``replica-assignor watch``: read the cluster, ask the assignor, run the executor.

One thread, one loop (:meth:`Watcher.serve`): resume the plan the ledger names as active; read
a view; decide (:mod:`kafka_replica_assignor.watcher.decisions`); act on one decision at a time
through a plan directory and the executor of ``execute`` (its lock, state file, throttles and
report); sleep until the next refresh. Everything it decides goes to the audit log, the status
(:class:`kafka_replica_assignor.watcher.status.WatchStatus`) and a JSON line on stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import time
from typing import Any

from kafka_replica_assignor.watcher.audit import AuditLog
from kafka_replica_assignor.watcher.decisions import (
    MISSING_S,
    Candidate,
    Decision,
    Rules,
    View,
    heal_targets,
    judge_heal,
    judge_placement,
    placement_work,
    stale,
    track_down,
)
from kafka_replica_assignor.watcher.ledger import Ledger
from kafka_replica_assignor.watcher.status import OPERATOR, WatchStatus

from .common import error_message, kafka_admin_configs, security_options

LOST_EVERY_S = 60.0     # how often a lost cluster is said again
RETRY_S = 60.0          # a fill that did not finish is tried again after this


class Watcher:
    def __init__(self, args: argparse.Namespace, rules: Rules, ledger: Ledger) -> None:
        self.args = args
        self.rules = rules
        self.ledger = ledger
        self.status = WatchStatus(dry_run=args.dry_run)
        self.audit = AuditLog(os.path.join(args.state_dir, "audit.jsonl"))
        self.stop = threading.Event()
        self.executor: Any = None
        self.cluster: Any = None
        self.metrics_server: Any = None
        self.first_seen: dict[str, float] = {}
        self.said: dict[tuple[str, str], tuple[Any, ...]] = {}
        self.lost_since: float | None = None
        self.lost_said = 0.0
        self.saying = threading.Lock()         # the web listener's threads say too
        self.operations: Any = None            # the web API's requests (web/operations.py)
        self.missing_since: dict[str, float] = {}
        self.fill_retry_at: dict[str, float] = {}

    # ---- life ------------------------------------------------------------------------------
    def serve(self) -> int:
        def on_signal(signum: int, _frame: Any) -> None:
            self.stop.set()
            if self.executor is not None:
                self.executor.stop_reason = signal.Signals(signum).name
                self.executor.stop.set()

        previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
        metrics = self.serve_metrics()
        web = self.serve_web()
        self.say("started", bootstrap=self.args.bootstrap_server, assignor=self.args.assignor,
                 dry_run=self.args.dry_run, metrics_port=metrics,
                 **({"http_port": web[1]} if web is not None else {}), pid=os.getpid())
        try:
            while not self.stop.is_set():
                self.round()
                self.stop.wait(self.rules.refresh_s)
        finally:
            for s, handler in previous.items():
                signal.signal(s, handler)
            if web is not None:
                web[0].close()
            self.say("stopped")
            self.audit.close()
            if self.metrics_server is not None:
                self.metrics_server.shutdown()
                self.metrics_server.server_close()
            if self.cluster is not None:
                self.cluster.close()
        return 0

    def serve_metrics(self) -> int | None:
        if not self.args.metrics_listener:
            return None
        from prometheus_client import CollectorRegistry, start_http_server

        host, _, port = self.args.metrics_listener.rpartition(":")
        registry = CollectorRegistry()
        registry.register(self.status.collector())
        self.metrics_server, _thread = start_http_server(int(port), addr=host.strip("[]"), registry=registry)
        return int(self.metrics_server.server_port)

    def serve_web(self) -> tuple[Any, int] | None:
        """The REST API and the page (web/), started when ``--http-listener`` is given."""
        config = getattr(self.args, "web", None)
        if config is None:
            return None
        from prometheus_client import CollectorRegistry

        from kafka_replica_assignor.web.api import Api
        from kafka_replica_assignor.web.operations import Operations
        from kafka_replica_assignor.web.server import WebServer

        registry = CollectorRegistry()
        registry.register(self.status.collector())
        self.operations = Operations(self.status, self.args.state_dir, self.args.dry_run, self.say)
        server = WebServer(config, Api(self.status, self.args.state_dir, self.operations), registry)
        return server, server.start()

    def say(self, event: str, **fields: Any) -> dict[str, Any]:
        with self.saying:
            record = self.audit.write(event, **fields)
            self.status.record(record)
            sys.stdout.write(json.dumps(record, separators=(",", ":")) + "\n")
            sys.stdout.flush()
        return record

    # ---- one round ---------------------------------------------------------------------------
    def round(self) -> None:
        if self.ledger.active is not None and not self.args.dry_run:
            active = self.ledger.active
            self.say("resumed", kind=active["kind"], subject=active["subject"], plan_dir=active["dir"])
            self.run_plan(active["kind"], active["subject"], active["dir"], active.get("moves", 0))
            return
        view = self.read()
        if view is None:
            return
        now = time.time()
        self.ledger.down_since = track_down(view, self.ledger.down_since, now)
        self.ledger.healed &= set(self.ledger.down_since)     # a returning broker may be healed again
        if self.ledger.topics is None:
            self.ledger.topics = {t: len(a) for t, a in view.topics().items()}
            self.say("baseline", topics=len(self.ledger.topics),
                     note="topics existing at the first start are settled; later ones are placed")
        self.ledger.save()
        self.status.saw(view, self.ledger.down_since)
        if self.operate(view):
            return
        for step in (self.place, self.fill, self.heal):
            if self.stop.is_set() or stale(view, self.rules, time.time()):
                return
            if step(view):
                return      # one action a round: the next round reads a fresh view

    def read(self, sized: bool = False) -> View | None:
        """A view (with partition sizes when ``sized``), or None when the cluster cannot be read
        (said once a minute)."""
        try:
            if self.cluster is None:
                self.cluster = self.open_cluster()
            read = self.cluster.read(with_sizes=sized)
            ongoing = frozenset(self.cluster.ongoing())
        except Exception as exc:  # noqa: BLE001 - kafka-python raises many kinds: wait and say so
            self.status.lost()
            if self.cluster is not None:
                self.cluster.close()
                self.cluster = None
            now = time.time()
            if self.lost_since is None:
                self.lost_since = now
            if now - self.lost_said >= LOST_EVERY_S:
                self.lost_said = now
                self.say("cluster_lost", error=error_message(exc), since=round(self.lost_since, 3),
                         note="state kept; waiting for the cluster")
                print(f"replica-assignor watch: cannot read {self.args.bootstrap_server} since "
                      f"{time.strftime('%H:%M:%S', time.localtime(self.lost_since))}: {error_message(exc)}; "
                      "waiting", file=sys.stderr)
            return None
        if self.lost_since is not None:
            self.say("cluster_back", lost_s=round(time.time() - self.lost_since, 1))
            self.lost_since, self.lost_said = None, 0.0
        return View(read.snapshot, read.fenced, ongoing, time.time(), sized)

    def sized(self, view: View) -> View | None:
        """``view`` with partition sizes: read again (a fresh view) when it has none."""
        return view if view.sized else self.read(sized=True)

    def open_cluster(self) -> Any:
        from kafka_replica_assignor.protocol.cluster_reader import open_admin_client
        from kafka_replica_assignor.protocol.reassignment import ReassignmentAdmin

        configs = kafka_admin_configs(security_options(self.args.command_config), "replica-assignor-watch")
        bootstrap, timeout = self.args.bootstrap_server, self.args.timeout_ms
        return ReassignmentAdmin(open_admin_client(bootstrap, timeout, configs),
                                 lambda: open_admin_client(bootstrap, timeout, configs))

    # ---- the three jobs (True: acted, end the round) ---------------------------------------------
    def place(self, view: View) -> bool:
        ours = self.intent_topics()
        assert self.ledger.topics is not None
        now = time.time()
        work, settled, missing = placement_work(view, self.ledger.topics, self.rules, ours,
                                                missing=self.ledger.missing, now=now)
        if work and not view.sized:     # sizes read only when a topic is to be judged
            sized = self.sized(view)
            if sized is None:
                return True
            view = sized
            work, settled, missing = placement_work(view, self.ledger.topics, self.rules, ours,
                                                    missing=self.ledger.missing, now=now)
        self.ledger.topics, self.ledger.missing = settled, missing
        for candidate in work:
            self.first_seen.setdefault(candidate.topic, time.time())
            try:
                desired = self.ask(candidate)
            except Exception as exc:  # noqa: BLE001 - the assignor down or refusing: try next round
                self.decide(Decision("placement", "wait", candidate.topic,
                                     f"the assignor at {self.args.assignor} did not answer: {error_message(exc)}"),
                            view)
                continue
            decision = judge_placement(candidate, desired, view, self.rules)
            if decision.action == "wait":
                self.decide(decision, view)
                continue
            status = self.decide(decision, view)
            self.ledger.topics[candidate.topic] = len(candidate.current)
            self.ledger.save()
            if status == "done":
                self.status.placed_after(time.time() - self.first_seen.pop(candidate.topic, time.time()))
            if decision.acts:
                return True
        return False

    def ask(self, candidate: Candidate) -> dict[int, tuple[int, ...]]:
        from kafka_replica_assignor.protocol.client import CreateReplicaAssignmentOptions, ReplicaAssignorAdminClient

        current = candidate.current
        kept = {p: list(r) for p, r in current.items() if p < candidate.settled}
        timeout = self.args.timeout_ms
        with ReplicaAssignorAdminClient(self.args.assignor, request_timeout_ms=timeout,
                                        security=security_options(self.args.assignor_command_config)) as client:
            answer = client.create_replica_assignment(
                len(current), len(current[0]), None, CreateReplicaAssignmentOptions(timeout_ms=timeout),
                topic=candidate.topic, current_assignment=kept or None).assignments()
        return {p: tuple(r) for p, r in answer.items()}

    def intent_topics(self) -> set[str]:
        if self.args.intent_file is None:
            return set()
        from .intent import read_record

        return {t.topic for t in read_record(self.args.intent_file, missing_ok=True)}

    def fill(self, view: View) -> bool:
        """Placeholders of the intent record whose brokers are back (``repair --intent-file
        --execute``), one topic a round. A complete topic leaves the record, and so does one gone
        from the cluster for :data:`MISSING_S` (create-topic writes the record before it creates
        the topic); in a dry run the record is never rewritten. A fill that does not finish is
        tried again :data:`RETRY_S` later."""
        if self.args.intent_file is None:
            return False
        from .intent import read_record

        now = time.time()
        for intent in read_record(self.args.intent_file, missing_ok=True):
            completion = self.completion(intent, view, now)
            if completion is None or not completion.filled or now < self.fill_retry_at.get(intent.topic, 0.0):
                continue
            if not view.sized:              # the plan's report counts the bytes the fill copies
                sized = self.sized(view)
                if sized is None:
                    return True
                view = sized
                completion = self.completion(intent, view, now)
                if completion is None or not completion.filled:
                    return True             # changed between the two reads: judged next round
            status = self.decide(fill_decision(completion, view), view)
            if status == "dry_run":
                continue        # decided and logged; the next intent is judged too
            if status != "done":
                self.fill_retry_at[intent.topic] = time.time() + RETRY_S
            return True         # the next round's view says whether the topic is complete
        return False

    def completion(self, intent: Any, view: View, now: float) -> Any:
        """What completing ``intent`` means on ``view``; None when there is nothing to fill: a
        topic missing from the cluster (dropped from the record after :data:`MISSING_S`) or
        complete (dropped at once)."""
        from .common import CommandError
        from .intent import plan_completion

        topic = intent.topic
        try:
            completion = plan_completion(intent, view.snapshot, view.fenced)
        except CommandError as exc:      # partitions missing: not created yet, or deleted
            since = self.missing_since.setdefault(topic, now)
            if now - max(since, created_at(intent.created_at, 0.0)) < MISSING_S:
                self.decide(Decision("placeholders", "wait", topic, f"{exc}: not acted on before it is "
                                     f"missing for {MISSING_S:.0f} s"), view)
            else:
                self.decide(Decision("placeholders", "refuse", topic, f"{exc}: dropped from the record"), view)
                self.forget_intent(topic)
            return None
        self.missing_since.pop(topic, None)
        if not completion.waiting and not completion.targets:
            self.decide(Decision("placeholders", "leave", topic, "complete: removed from the record"), view)
            self.forget_intent(topic)
            return None
        return completion

    def forget_intent(self, topic: str) -> None:
        """``topic`` out of the intent record (read again just before: create-topic may have
        added one since); never in a dry run."""
        if self.args.dry_run:
            return
        from .intent import read_record, write_record

        left = read_record(self.args.intent_file, missing_ok=True)
        if any(i.topic == topic for i in left):
            write_record(self.args.intent_file, [i for i in left if i.topic != topic])

    def heal(self, view: View) -> bool:
        decision = judge_heal(view, self.ledger.down_since, self.ledger.healed, self.rules, time.time())
        if decision is None:
            return False
        if decision.action != "heal":
            self.decide(decision, view)
            return False
        sized = self.sized(view)        # the planner weighs bytes
        if sized is None:
            return True
        view = sized
        try:
            targets, starting, made, left_out = heal_targets(view, decision.brokers)
        except Exception as exc:  # noqa: BLE001 - the planner refused (RequestError, PlanError): said, retried later
            self.decide(Decision("dead_brokers", "refuse", decision.subject, f"the planner: {exc}",
                                 brokers=decision.brokers), view)
            self.restart_grace(decision.brokers)
            return False
        reason = decision.reason
        if left_out:
            named = ", ".join(f"{t}-{p}" for t, p in left_out[:10]) + (" ..." if len(left_out) > 10 else "")
            reason += (f"; {len(left_out)} partition(s) with no live replica left as they are until one "
                       f"returns: {named}")
        decision = Decision("dead_brokers", "heal", decision.subject, reason, targets, starting,
                            decision.brokers)
        status = self.decide(decision, view, made)
        if status in ("done", "dry_run"):
            self.ledger.healed |= set(decision.brokers)
        else:
            self.restart_grace(decision.brokers)
        self.ledger.save()
        return True

    def operate(self, view: View) -> bool:
        """Run the plan an operator asked for through the web API, if one waits (True: acted)."""
        task = self.operations.take() if self.operations is not None else None
        if task is None:
            return False
        from kafka_replica_assignor.planner.report.outputs import render_outputs, write_outputs

        if stale(view, self.rules, time.time()):
            self.operations.finished(task, "refused", "the view is older than two refresh intervals: not acted on")
            return False
        plan, request = task.made
        plan_dir = self.ledger.next_plan_dir(OPERATOR)
        try:
            write_outputs(render_outputs(plan, request, charts=True), plan_dir)
        except Exception as exc:  # noqa: BLE001 - a full disk: the task fails, the watcher goes on
            self.operations.finished(task, "failed", error_message(exc))
            return False
        self.operations.started(task, plan_dir)
        subject = f"{task.endpoint} task {task.id}"
        self.ledger.active = {"dir": plan_dir, "kind": OPERATOR, "subject": subject,
                              "moves": len(plan.changed()), "started_at": time.time()}
        self.ledger.save()
        status = self.run_plan(OPERATOR, subject, plan_dir, len(plan.changed()))
        self.operations.finished(task, status)
        return True

    def restart_grace(self, brokers: tuple[int, ...]) -> None:
        """A heal that could not be done is tried again one grace period later."""
        now = time.time()
        self.ledger.down_since.update({b: now for b in brokers if b in self.ledger.down_since})
        self.ledger.save()

    # ---- deciding and acting -----------------------------------------------------------------
    def decide(self, decision: Decision, view: View, made: Any = None) -> str:
        """Log ``decision`` (a repeated non-acting one only when it changes) and act on it:
        the executor's final status, ``dry_run``, or ``logged``."""
        key = (decision.kind, decision.subject)
        said = (decision.action, decision.reason, tuple(sorted(decision.targets.items())))
        if self.said.get(key) == said and (not decision.acts or self.args.dry_run):
            return "dry_run" if decision.acts else "logged"     # a dry run repeats no decision either
        self.said[key] = said
        self.say("decided", **decision.to_json(), seen=seen(view), dry_run=self.args.dry_run)
        if not decision.acts:
            return "logged"
        if self.args.dry_run:
            return "dry_run"
        if stale(view, self.rules, time.time()):
            self.say("decided", kind=decision.kind, action="wait", subject=decision.subject,
                     reason="the view is older than two refresh intervals: not acted on", dry_run=False)
            return "stale"
        plan_dir = self.ledger.next_plan_dir(decision.kind)
        write_plan(plan_dir, view, decision, made)
        self.ledger.active = {"dir": plan_dir, "kind": decision.kind, "subject": decision.subject,
                              "moves": len(decision.targets), "started_at": time.time()}
        self.ledger.save()
        return self.run_plan(decision.kind, decision.subject, plan_dir, len(decision.targets))

    def run_plan(self, kind: str, subject: str, plan_dir: str, moves: int) -> str:
        """Run a plan directory through the executor of ``execute``, as ``execute --plan`` does."""
        from kafka_replica_assignor.planner.execution.executor import Executor, Refused
        from kafka_replica_assignor.planner.execution.executor_state import ExecutionState, Locked, hold_lock

        from .execute import _report, load_plan

        options = execute_options(plan_dir, self.args)
        status, error = "failed", None
        self.status.executing(kind, subject, plan_dir)
        try:
            plan = load_plan(options)
            with hold_lock(plan_dir):
                state = ExecutionState.load(plan_dir) or ExecutionState.new(plan_dir, plan.plan_sha256)
                if self.cluster is None:
                    self.cluster = self.open_cluster()
                self.executor = executor = Executor(plan, self.cluster, state, self.status.progress)
                try:
                    pending, flying, done = executor.prepare()
                except Refused as exc:
                    status, error = "refused", f"{exc}: {'; '.join(exc.lines[:5])}"
                else:
                    state.status = "running"
                    state.runs.append({"pid": os.getpid(), "started_at": time.time(), "throttle": plan.throttle,
                                       "max_moves_per_broker": plan.per_broker, "by": "watch"})
                    state.save()
                    try:
                        status = executor.run(pending, flying, done)
                    finally:
                        state.finish(status)
                        _report(plan, state, cluster_sizes=executor.sizes)
        except Locked as exc:
            status, error = "refused", str(exc)
        except Exception as exc:  # noqa: BLE001 - the cluster lost mid-plan: the ledger keeps it active
            error = error_message(exc)
            self.executor = None
            self.status.executed("failed")
            self.say("executed", kind=kind, subject=subject, plan_dir=plan_dir, status="failed", moves=moves,
                     error=error, note="kept active: resumed on the next round")
            if self.cluster is not None:
                self.cluster.close()
                self.cluster = None
            return "failed"
        self.executor = None
        self.status.executed(status)
        if status == "stopped" and self.stop.is_set():
            self.say("executed", kind=kind, subject=subject, plan_dir=plan_dir, status=status, moves=moves,
                     note="the watcher stops: resumed at its next start")
            return status
        self.ledger.active = None
        self.ledger.save()
        self.say("executed", kind=kind, subject=subject, plan_dir=plan_dir, status=status, moves=moves,
                 **({"error": error} if error else {}))
        return status


def execute_options(plan_dir: str, args: argparse.Namespace) -> argparse.Namespace:
    """``execute --plan DIR`` as its own parser reads it (every default of execute, so an option
    execute gains is never missing here), with the watcher's throttle, cap and poll interval."""
    from . import execute

    parser = argparse.ArgumentParser(add_help=False)
    execute.add_parser(parser.add_subparsers())
    line = ["execute", "--plan", plan_dir, "--max-moves-per-broker", str(args.max_moves_per_broker),
            "--poll-interval-ms", str(min(1000, args.refresh_interval_ms))]
    if args.throttle:
        line += ["--throttle", str(args.throttle)]
    return parser.parse_args(line)


def fill_decision(completion: Any, view: View) -> Decision:
    """The ``fill`` of a topic's :class:`~kafka_replica_assignor.cli.intent.Completion`: every
    partition it reassigns, the brokers that take placeholders."""
    topic = completion.topic
    current = {(p.topic, p.partition): tuple(p.replicas) for p in view.snapshot.partitions}
    targets = {(topic, p): tuple(r) for p, r in completion.targets.items()}
    brokers = tuple(sorted({b for f in completion.filled.values() for b in f}))
    return Decision("placeholders", "fill", topic, f"broker(s) {list(brokers)} back: "
                    f"{sum(map(len, completion.filled.values()))} placeholder(s) to fill", targets,
                    {k: current[k] for k in targets}, brokers)


def created_at(stamp: str, default: float) -> float:
    """An intent record's ``created_at`` in seconds since the epoch (``default`` when absent)."""
    from datetime import UTC, datetime

    try:
        return datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC).timestamp()
    except ValueError:
        return default


def seen(view: View) -> dict[str, Any]:
    """What the view showed, for the audit log."""
    return {"brokers": sorted(view.registered()), "fenced": sorted(view.fenced), "down": sorted(view.down()),
            "topics": len({p.topic for p in view.snapshot.partitions}),
            "reassignments_in_progress": len(view.ongoing), "age_s": round(time.time() - view.read_at, 3)}


def write_plan(plan_dir: str, view: View, decision: Decision, made: Any = None) -> None:
    """A plan directory exactly as ``balance --out`` writes it (the planner's own writer), moving
    ``decision.targets``; the heal's plan is the planner's own. A fill grows a replica list
    (``[2, 0]`` to ``[2, 0, 4]``), which the planner's working lists cannot hold: the plan is
    the snapshot before, the snapshot after and one move per replica that came (a ``repair``
    from a placeholder id when none left), as the planner's repair mode writes them."""
    from dataclasses import replace

    from kafka_replica_assignor.cluster.snapshot import ClusterSnapshot
    from kafka_replica_assignor.planner.plan import Move, MoveKind, Plan
    from kafka_replica_assignor.planner.report.outputs import render_outputs, write_outputs
    from kafka_replica_assignor.planner.request import PlanRequest

    if made is not None:
        plan, request = made
    else:
        before = view.snapshot
        after = list(before.partitions)
        index = {(p.topic, p.partition): i for i, p in enumerate(after)}
        moves = []
        for (topic, partition), target in sorted(decision.targets.items()):
            i = index[(topic, partition)]
            old = list(after[i].replicas)
            came = [b for b in target if b not in old]
            went = [b for b in old if b not in target]
            went += list(range(-1, -1 - (len(came) - len(went)), -1))   # placeholders filled
            # a shrink (a partition of the record back to its alive replicas) has no destination
            for source, destination in zip(went, came, strict=False):
                kind = MoveKind.REPAIR if source < 0 else MoveKind.REPLICA
                moves.append(Move(topic, partition, source, destination, kind))
            if not came and old[0] != target[0]:
                moves.append(Move(topic, partition, old[0], target[0], MoveKind.LEADER))
            after[i] = replace(after[i], replicas=tuple(target), leader=None, isr=None, log_dirs=None)
        plan = Plan(before, ClusterSnapshot(before.brokers, tuple(after)), tuple(moves))
        request = PlanRequest("repair" if decision.kind == "placeholders" else "replica",
                              source=f"replica-assignor watch: {decision.kind} {decision.subject}")
    write_outputs(render_outputs(plan, request, charts=False), plan_dir)
