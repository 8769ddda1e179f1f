"""``replica-assignor execute``: run a balance plan on its cluster, safely.

    replica-assignor execute --plan plan/ --bootstrap-server HOST:PORT [--throttle BYTES_PER_S]
        [--max-moves-per-broker K] [--max-bytes-in-flight-per-broker BYTES] [--adaptive-cap MAX]
        [--max-concurrent-moves N] [--order size|under-min-isr|plan]
        [--no-leader-election] [--dry-run] [--timeout-ms MS] [--stall-timeout-ms MS]
        [--unreachable-timeout-ms MS] [--command-config FILE]
    replica-assignor execute --plan plan/ --status
    replica-assignor execute --plan plan/ --cancel [--bootstrap-server HOST:PORT]
    replica-assignor execute --plan plan/ --throttle BYTES_PER_S      (while it runs)
    replica-assignor execute --plan plan/ --pause | --resume         (while it runs)
    replica-assignor execute --plan plan/ --cleanup-throttles [--bootstrap-server HOST:PORT]

The cluster is the truth, the state file a hint: a move counts as finished only when the
cluster shows its planned replicas with nothing adding or removing. Refuses (exit 1, one line
per partition) when a partition is neither at the replicas the plan started from nor at its
planned ones (the rule of verify-plan), or when a reassignment the plan did not start is in
progress (named; never adopted nor cancelled). A state file that is not one, belongs to another
plan or names partitions outside it, and a lock or state file that is a symbolic link, a FIFO,
a device or too large, is bad input (exit 2, nothing done). Moves go in waves: no broker is the
source or destination of more than K moves in flight (default: the plan's
--max-moves-per-broker, else 5; with --adaptive-cap each broker's K adapts up to MAX; with
--max-bytes-in-flight-per-broker a broker takes moves beyond K while the bytes to copy of its
moves in flight stay within BYTES), at most N at once; the next starts as soon as one finishes.
With a throttle, Kafka's replication throttles are set on the moving replicas only, and removed
at the end, on --cancel, on an error, on SIGINT or SIGTERM (which also cancel the moves in
flight), or by --cleanup-throttles after a kill. The state file (execution-state.json) lets a
killed run resume without submitting a finished move again; a second run of the same plan
refuses; a resumed run keeps the throttle in force when it was killed (changed with --throttle
while it ran) unless given one, and --cancel and --cleanup-throttles after a kill reach the
cluster the state file names. A cluster that stops answering is waited for
--unreachable-timeout-ms (300 s; said when it starts and once a minute, with what it waits for
and until when), then the run fails naming what was applied and what not; a move whose adding replicas gain no byte for --stall-timeout-ms
is cancelled back to its starting replicas and fails. At the end: a preferred leader election
for leader-election.json, execution.json and a section in report.md. Progress: a bar on a
terminal, JSON lines otherwise. Exit 0 done, 1 failed, refused or cancelled (what remains is
listed), 2 bad input.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import sys
import time
from dataclasses import replace
from typing import Any

from kafka_replica_assignor.planner.execution.batches import read_replicas
from kafka_replica_assignor.planner.execution.executor_schedule import ORDERS

from .common import (
    EXIT_CODES,
    CommandError,
    add_connection_arguments,
    check_writable_dir,
    error_message,
    fail,
    help_text,
    host_port,
    kafka_admin_configs,
    positive,
    security_options,
)
from .verify import plan_file_text, read_plan

PROG = "replica-assignor execute"
DEFAULT_PER_BROKER = 5
DEFAULT_STALL_MS = 600_000
DEFAULT_UNREACHABLE_MS = 300_000
BATCH = re.compile(r"reassignment-(\d{4})\.json")


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "execute", help="run a balance plan: waves, throttles, progress, cancel and resume",
        description=help_text(__doc__.split("\n\n", 2)[2] if __doc__ else ""), epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--plan", required=True, metavar="DIR", help="the --out directory of balance")
    parser.add_argument("--bootstrap-server", type=host_port, metavar="HOST:PORT", help="the Kafka cluster")
    add_connection_arguments(parser, what="the Kafka cluster")
    parser.add_argument("--throttle", type=positive, metavar="BYTES_PER_S",
                        help="replication throttle on the moving replicas (default: the plan's); "
                             "given while the plan runs, changes the running execution's")
    parser.add_argument("--max-moves-per-broker", type=positive, metavar="K",
                        help=f"moves in flight a broker may be source or destination of "
                             f"(default: the plan's, else {DEFAULT_PER_BROKER})")
    parser.add_argument("--max-bytes-in-flight-per-broker", type=positive, metavar="BYTES",
                        help="let a broker at its K take more moves while the bytes to copy of its moves in "
                             "flight, the new one included, stay within BYTES (at most 50 moves): small "
                             "partitions then wait for the throttle, not for Kafka's seconds per move; a "
                             "broker whose moves hold more gets none beyond K (default: none, K is the cap; "
                             "a few seconds at the throttle, e.g. 5 x BYTES_PER_S, suits most)")
    parser.add_argument("--adaptive-cap", type=positive, metavar="MAX",
                        help="let each broker's cap adapt between 1 and MAX, from K: raised by one while its "
                             "moves finish fast and the ISR stays whole, halved when a replica it holds falls "
                             "out of ISR or its moves pile up (as Cruise Control's concurrency adjuster)")
    parser.add_argument("--max-concurrent-moves", type=positive, metavar="N", help="moves in flight at most")
    parser.add_argument("--order", choices=ORDERS, default="plan",
                        help="which moves first: plan order, smallest first, or partitions at or "
                             "under min.insync.replicas first (default plan)")
    parser.add_argument("--no-leader-election", action="store_true",
                        help="skip the preferred leader election at the end")
    parser.add_argument("--dry-run", action="store_true", help="check and show the first wave; change nothing")
    parser.add_argument("--poll-interval-ms", type=positive, default=1000, metavar="MS",
                        help="how often the cluster is asked about the moves (default 1000)")
    parser.add_argument("--stall-timeout-ms", type=positive, default=DEFAULT_STALL_MS, metavar="MS",
                        help="a move whose adding replicas gain no byte for this long is cancelled "
                             f"back to its starting replicas and fails (default {DEFAULT_STALL_MS})")
    parser.add_argument("--unreachable-timeout-ms", type=positive, default=DEFAULT_UNREACHABLE_MS, metavar="MS",
                        help="how long the cluster may leave every poll unanswered before the run fails "
                             "(the moves in flight are left as they are; said once a minute while it "
                             f"lasts; default {DEFAULT_UNREACHABLE_MS})")
    action = parser.add_mutually_exclusive_group()
    action.add_argument("--status", action="store_true", help="show the plan's execution state and exit")
    action.add_argument("--cancel", action="store_true",
                        help="cancel the plan's moves in flight, remove the throttles")
    action.add_argument("--pause", action="store_true",
                        help="ask the running execution to start no new move (the moves in flight go on)")
    action.add_argument("--resume", action="store_true", help="ask a paused running execution to start moves again")
    action.add_argument("--cleanup-throttles", action="store_true",
                        help="remove throttles a killed execution left (brokers and topics of the state file)")
    parser.set_defaults(run=run)
    return parser


# ---- the plan directory ------------------------------------------------------------------------

def load_plan(args: argparse.Namespace) -> Any:
    from kafka_replica_assignor.planner.execution.executor import ExecutePlan
    from kafka_replica_assignor.planner.execution.executor_concurrency import CapBounds

    plan_dir = args.plan
    starting = read_plan(plan_dir)
    summary = _json(os.path.join(plan_dir, "summary.json"))
    targets_path = os.path.join(plan_dir, "reassignment.json")
    text = _text(targets_path)
    targets = read_replicas(text, targets_path)
    log_dirs = _named_log_dirs(text) if '"log_dirs"' in text else {}
    if set(targets) != set(starting):
        raise CommandError(f"--plan {plan_dir}: reassignment.json and starting-replicas.json name "
                           "different partitions", 2)
    election = _json(os.path.join(plan_dir, "leader-election.json"))
    try:
        leaders = tuple((p["topic"], int(p["partition"])) for p in election["partitions"])
    except (KeyError, TypeError, ValueError):
        raise CommandError(f"--plan {plan_dir}: leader-election.json needs a 'partitions' list", 2) from None
    batches: dict[tuple[str, int], int] = {}
    for name in sorted(os.listdir(plan_dir)):
        match = BATCH.fullmatch(name)
        if match:
            path = os.path.join(plan_dir, name)
            for key in read_replicas(_text(path), path):
                batches[key] = int(match.group(1))
    throttle = args.throttle or summary.get("throttle_bytes_per_second")
    per_broker = args.max_moves_per_broker or summary.get("max_moves_per_broker") or DEFAULT_PER_BROKER
    adaptive = CapBounds(ceiling=args.adaptive_cap) if args.adaptive_cap else None
    return ExecutePlan(
        plan_dir=plan_dir, plan_sha256=summary["starting_replicas_sha256"], targets=tuple(targets.items()),
        starting=starting, leader_election=leaders, batches=batches, throttle=throttle,
        per_broker=per_broker, bytes_per_broker=args.max_bytes_in_flight_per_broker,
        concurrent=args.max_concurrent_moves, order=args.order,
        elect_leaders=not args.no_leader_election, poll_interval_s=args.poll_interval_ms / 1000,
        stall_timeout_s=args.stall_timeout_ms / 1000, patience_s=args.unreachable_timeout_ms / 1000,
        adaptive=adaptive, log_dirs=log_dirs)


def _named_log_dirs(text: str) -> dict[tuple[str, int, int], str]:
    """The directories a reassignment JSON names: ``(topic, partition, broker) -> directory``
    (``"any"`` entries left out; the file was read by ``read_replicas`` already)."""
    out: dict[tuple[str, int, int], str] = {}
    for p in json.loads(text).get("partitions") or ():
        dirs = p.get("log_dirs") if isinstance(p, dict) else None
        if dirs is None:
            continue
        if not isinstance(dirs, list) or len(dirs) != len(p["replicas"]) or not all(isinstance(d, str) for d in dirs):
            raise CommandError(f"reassignment.json: {p['topic']}-{p['partition']}: log_dirs must be one directory "
                               "or \"any\" per replica", 2)
        out.update({(p["topic"], p["partition"], b): d for b, d in zip(p["replicas"], dirs, strict=True) if d != "any"})
    return out


def _text(path: str) -> str:
    return plan_file_text(path)


def _json(path: str) -> Any:
    try:
        return json.loads(_text(path))
    except (ValueError, RecursionError) as exc:
        raise CommandError(f"{path} is not valid JSON: {exc}", 2) from None


# ---- progress ----------------------------------------------------------------------------------

class Progress:
    """A bar on stderr when it is a terminal; JSON lines on stdout otherwise."""

    def __init__(self) -> None:
        self.tty = sys.stderr.isatty()

    def __call__(self, event: str, fields: dict[str, Any]) -> None:
        if not self.tty:
            sys.stdout.write(json.dumps({"event": event, "ts": round(time.time(), 3), **fields},
                                        separators=(",", ":")) + "\n")
            sys.stdout.flush()
            return
        if event == "progress":
            done, total = fields["moves_done"], max(fields["moves_total"], 1)
            width = 30
            fill = int(width * done / total)
            eta = fields["eta_s"]
            sys.stderr.write(f"\r[{'#' * fill}{'.' * (width - fill)}] {done}/{fields['moves_total']} moves "
                             f"{_size(fields['bytes_done'])}/{_size(fields['bytes_total'])} "
                             f"{_size(fields['rate_bytes_per_s'])}/s in flight {fields['in_flight']} "
                             f"ETA {'?' if eta is None else f'{eta:.0f} s'}   ")
        else:
            sys.stderr.write(f"\n{event}: " + " ".join(f"{k}={v}" for k, v in fields.items()) + "\n")
        sys.stderr.flush()


def _size(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024:
            return f"{n:.0f} {unit}"
        n /= 1024
    return f"{n:.0f} TiB"


# ---- actions -----------------------------------------------------------------------------------

def run(args: argparse.Namespace) -> int:
    from kafka_replica_assignor.planner.execution.executor_state import ExecutionState, lock_holder

    try:
        plan = load_plan(args)
        # bad input before anything: a state file of another plan, or naming other partitions
        state = ExecutionState.load(args.plan, plan.plan_sha256, dict(plan.targets))
        if args.status:
            return show_status(plan, state)
        if not args.dry_run:  # the lock, the state, the control file and the report are written there
            check_writable_dir(args.plan, "--plan")
        holder = lock_holder(args.plan)
        if holder is not None and not args.dry_run:
            return talk_to_running(args, plan, holder)
        if args.pause or args.resume:
            raise CommandError("no execution of this plan is running: --pause and --resume reach a running one")
        _cluster_from_state(args, state)
        if args.command_config:
            security_options(args.command_config)
        if not args.bootstrap_server:
            raise CommandError("--bootstrap-server is required (except with --status, to reach a running "
                               "execution, or to --cancel or --cleanup-throttles one the state file names)", 2)
        if not args.throttle and state is not None and state.runs and state.throttle is not None:
            plan = replace(plan, throttle=state.throttle)    # the throttle in force when it stopped
        return execute(args, plan, state)
    except CommandError as exc:
        return fail(PROG, exc)
    except ValueError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2


def _cluster_from_state(args: argparse.Namespace, state: Any) -> None:
    """``--cancel`` and ``--cleanup-throttles`` after a kill: the cluster (and client properties
    file) of the last run, from the state file, when none is given."""
    if args.bootstrap_server or not (args.cancel or args.cleanup_throttles) or state is None or not state.runs:
        return
    last = state.runs[-1]
    server = last.get("bootstrap_server")
    if not isinstance(server, str):
        return
    try:
        args.bootstrap_server = host_port(server)
    except (argparse.ArgumentTypeError, ValueError):
        raise CommandError(f"--plan {args.plan}: execution-state.json names no usable cluster "
                           f"({server[:100]!r}): give --bootstrap-server", 2) from None
    config = last.get("command_config")
    if args.command_config is None and isinstance(config, str):
        args.command_config = config


def show_status(plan: Any, state: Any) -> int:
    from kafka_replica_assignor.planner.execution.executor_state import lock_holder

    counts = {s: 0 for s in ("finished", "submitted", "cancelled", "failed")}
    if state is not None:
        for r in state.moves.values():
            counts[r.status] = counts.get(r.status, 0) + 1
    holder = lock_holder(plan.plan_dir)
    status = None if state is None else state.status
    if status == "running" and holder is None:      # killed: the kernel dropped its lock
        status = "stopped (no process holds the lock)"
    print(json.dumps({
        "plan": plan.plan_dir, "running_pid": holder,
        "status": status,
        "moves": len(plan.targets), **counts,
        "not_started": len(plan.targets) - sum(counts.values()),
        "throttle": None if state is None else state.throttle,
        "throttled_brokers": [] if state is None else sorted(state.throttled_brokers),
        "throttled_topics": [] if state is None else sorted(state.throttled_topics),
        "peak_moves_per_broker": {} if state is None else
        {str(b): v for b, v in sorted(state.peak_moves_per_broker.items())},
    }))
    return 0


def talk_to_running(args: argparse.Namespace, plan: Any, holder: int) -> int:
    """A request to the execution that runs (``--cancel``, ``--throttle``), or a refusal."""
    from kafka_replica_assignor.planner.execution.executor_state import ExecutionState, lock_holder, write_control

    if args.cancel:
        write_control(plan.plan_dir, {"cancel": True})
        print(f"{PROG}: asked the running execution (pid {holder}) to cancel; waiting", file=sys.stderr)
        deadline = time.monotonic() + plan.patience_s + 60
        while lock_holder(plan.plan_dir) is not None:
            if time.monotonic() > deadline:
                raise CommandError(f"the running execution (pid {holder}) did not stop in time")
            time.sleep(0.2)
        state = ExecutionState.load(plan.plan_dir, plan.plan_sha256, dict(plan.targets))
        return _cancel_outcome(plan, state)
    if args.pause or args.resume:
        return _pause_or_resume(args, plan, holder)
    if args.throttle and not args.cleanup_throttles:
        write_control(plan.plan_dir, {"throttle": args.throttle})
        deadline = time.monotonic() + 60 + 3 * plan.poll_interval_s
        while time.monotonic() < deadline:
            state = ExecutionState.load(plan.plan_dir, plan.plan_sha256, dict(plan.targets))
            if state is not None and state.throttle == args.throttle:
                print(f"{PROG}: the running execution (pid {holder}) now throttles at {args.throttle} B/s",
                      file=sys.stderr)
                return 0
            if lock_holder(plan.plan_dir) is None:
                break
            time.sleep(0.2)
        raise CommandError(f"the running execution (pid {holder}) did not take the new throttle")
    raise CommandError(f"another execution of this plan is running (pid {holder}): "
                       "--status, --cancel, --pause, --resume or --throttle reach it")


def _pause_or_resume(args: argparse.Namespace, plan: Any, holder: int) -> int:
    """``--pause`` / ``--resume``: the request in the control file, taken when the executor has read it."""
    from kafka_replica_assignor.planner.execution.executor_state import CONTROL, lock_holder, write_control

    asked = "pause" if args.pause else "resume"
    write_control(plan.plan_dir, {asked: True})
    deadline = time.monotonic() + 60 + 3 * plan.poll_interval_s
    while os.path.exists(os.path.join(plan.plan_dir, CONTROL)):     # the executor reads it at its next poll
        if time.monotonic() > deadline or lock_holder(plan.plan_dir) is None:
            raise CommandError(f"the running execution (pid {holder}) did not take the request to {asked}")
        time.sleep(0.2)
    print(f"{PROG}: the running execution (pid {holder}) "
          + ("is paused: no new move starts, the moves in flight go on" if args.pause else "is resumed"),
          file=sys.stderr)
    return 0


def _cancel_outcome(plan: Any, state: Any) -> int:
    if state is None:
        print(f"{PROG}: nothing of this plan was executed", file=sys.stderr)
        return 0
    failed = state.with_status("failed")
    applied = state.with_status("finished")
    print(f"{PROG}: cancelled: {len(applied)} of {len(plan.targets)} partition(s) applied, "
          f"{len(plan.targets) - len(applied)} not; throttles "
          f"{'left on ' + str(sorted(state.throttled_brokers)) if state.throttled_brokers else 'removed'}",
          file=sys.stderr)
    for t, p in failed:
        print(f"{t}-{p}: neither at its starting nor at its planned replicas")
    return 1 if failed or state.throttled_brokers or state.throttled_topics else 0


def _open(args: argparse.Namespace) -> Any:
    from kafka_replica_assignor.protocol.cluster_reader import open_admin_client
    from kafka_replica_assignor.protocol.reassignment import ReassignmentAdmin

    configs = kafka_admin_configs(security_options(args.command_config), "replica-assignor-execute")
    try:
        admin = open_admin_client(args.bootstrap_server, args.timeout_ms, configs)
    except Exception as exc:  # noqa: BLE001 - kafka-python raises many kinds
        raise CommandError(f"cannot connect to {args.bootstrap_server}: {error_message(exc)}") from None
    return ReassignmentAdmin(admin, lambda: open_admin_client(args.bootstrap_server, args.timeout_ms, configs))


def execute(args: argparse.Namespace, plan: Any, state: Any) -> int:
    from kafka_replica_assignor.planner.execution.executor import cancel_and_settle, foreign_reassignment
    from kafka_replica_assignor.planner.execution.executor_state import ExecutionState, Locked, hold_lock
    from kafka_replica_assignor.planner.execution.executor_throttles import clear_throttles

    emit = Progress()
    if args.dry_run:
        return dry_run(args, plan, state, emit)
    try:
        with hold_lock(plan.plan_dir):
            state = (ExecutionState.load(plan.plan_dir, plan.plan_sha256, dict(plan.targets))
                     or ExecutionState.new(plan.plan_dir, plan.plan_sha256))
            cluster = _open(args)
            try:
                if args.cleanup_throttles:
                    brokers = [b["broker_id"] for b in cluster.admin.describe_cluster()["brokers"]]
                    clear_throttles(cluster, state, brokers, sorted({t for (t, _), _ in plan.targets}))
                    print(f"{PROG}: replication throttles removed from brokers {sorted(brokers)} and "
                          "the plan's topics", file=sys.stderr)
                    return 0
                if args.cancel:
                    if not state.moves:
                        return _cancel_outcome(plan, None)
                    ongoing = cluster.ongoing()
                    submitted = state.with_status("submitted")
                    foreign = [line for k in submitted if k in ongoing
                               for line in [foreign_reassignment(plan, state, k, ongoing[k])] if line]
                    ours = [k for k in submitted if not any(line.startswith(f"{k[0]}-{k[1]}:") for line in foreign)]
                    cancel_and_settle(cluster, state, ours, plan, emit)
                    clear_throttles(cluster, state)
                    state.finish("cancelled")
                    _report(plan, state, cluster_sizes=None)
                    for line in foreign:
                        print(f"left alone: {line}")
                    return max(_cancel_outcome(plan, state), 1 if foreign else 0)
                origin = {"bootstrap_server": args.bootstrap_server,
                          "command_config": os.path.abspath(args.command_config) if args.command_config else None}
                return run_plan(plan, state, cluster, emit, origin)
            finally:
                cluster.close()
    except Locked as exc:
        raise CommandError(str(exc)) from None


def run_plan(plan: Any, state: Any, cluster: Any, emit: Progress, origin: dict[str, Any]) -> int:
    """Check, run, report; the exit code. ``origin`` (the cluster and client properties file)
    goes to the state file, for ``--cancel`` after a kill."""
    from kafka_replica_assignor.planner.execution.executor import Executor

    executor = Executor(plan, cluster, state, emit)
    pending, flying, done = _prepare(executor)
    state.status = "running"
    state.runs.append({"pid": os.getpid(), "started_at": time.time(), **origin, "throttle": plan.throttle,
                       "max_moves_per_broker": plan.per_broker, "max_concurrent_moves": plan.concurrent,
                       "max_bytes_in_flight_per_broker": plan.bytes_per_broker,
                       "order": plan.order, "resumed_in_flight": len(flying)})
    state.save()

    def stop(signum: int, _frame: Any) -> None:
        executor.stop_reason = signal.Signals(signum).name
        executor.stop.set()

    previous = {s: signal.signal(s, stop) for s in (signal.SIGINT, signal.SIGTERM)}
    status = "failed"
    error = None
    try:
        status = executor.run(pending, flying, done)
    except Exception as exc:  # noqa: BLE001 - one line, the state and report say the rest
        error = f"{type(exc).__name__}: {exc}"
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        state.finish(status, **({"error": error} if error else {}))
        _report(plan, state, cluster_sizes=executor.sizes)
    remaining = [f"{t}-{p}" for (t, p), _ in plan.targets
                 if (t, p) not in state.moves or state.moves[(t, p)].status != "finished"]
    if status == "done":
        print(f"{PROG}: done: {len(plan.targets)} partition(s) at their planned replicas; throttles removed",
              file=sys.stderr)
        return 0
    print(f"{PROG}: {status}{': ' + error if error else ''}; {len(remaining)} of {len(plan.targets)} "
          "partition(s) not applied:", file=sys.stderr)
    for name in remaining:
        print(f"not applied: {name}", file=sys.stderr)
    return 1


def _prepare(executor: Any) -> Any:
    """The executor's checks before anything (drift, foreign reassignments): a refusal prints
    the partitions it names on stdout and is one line on stderr (exit 1)."""
    from kafka_replica_assignor.planner.execution.executor import Refused

    try:
        return executor.prepare()
    except Refused as exc:
        for line in exc.lines:
            print(line)
        raise CommandError(str(exc)) from None
    except Exception as exc:  # noqa: BLE001 - kafka-python raises many kinds
        raise CommandError(f"cannot read the cluster: {error_message(exc)}") from None


def _report(plan: Any, state: Any, cluster_sizes: Any) -> None:
    from kafka_replica_assignor.planner.execution.executor_report import execution_report, write_report

    settings = {"max_moves_per_broker": plan.per_broker, "max_concurrent_moves": plan.concurrent,
                "order": plan.order, "throttle": plan.throttle}
    report = execution_report(state, plan.targets, plan.starting, cluster_sizes or {}, plan.batches,
                              settings, time.time())
    write_report(plan.plan_dir, report)


def dry_run(args: argparse.Namespace, plan: Any, state: Any, emit: Progress) -> int:
    from kafka_replica_assignor.planner.execution.executor import Executor
    from kafka_replica_assignor.planner.execution.executor_schedule import Schedule
    from kafka_replica_assignor.planner.execution.executor_state import ExecutionState
    from kafka_replica_assignor.planner.execution.executor_throttles import throttles

    cluster = _open(args)
    try:
        scratch = state or ExecutionState(os.path.join(plan.plan_dir, "unused"), plan.plan_sha256)
        pending, flying, done = _prepare(Executor(plan, cluster, scratch, emit))
    finally:
        cluster.close()
    schedule = Schedule(pending, per_broker=plan.per_broker, concurrent=plan.concurrent, order=plan.order,
                        in_flight=flying, bytes_per_broker=plan.bytes_per_broker)
    wave = schedule.start()
    throttle = throttles(schedule.in_flight.values())
    print(json.dumps({
        "dry_run": True, "moves": len(plan.targets), "pending": len(pending), "in_flight": len(flying),
        "finished": len(done), "first_wave": [r.name for r in wave],
        "throttle": plan.throttle,
        "topic_throttles": throttle.topic_configs() if plan.throttle else {},
        "throttled_brokers": sorted(throttle.brokers) if plan.throttle else [],
        "bytes": sum(r.bytes_to_copy for r in pending),
        "leader_election": len(plan.leader_election) if plan.elect_leaders else 0,
    }, indent=1))
    print(f"{PROG}: dry run: {len(done)} partition(s) at their planned replicas, {len(flying)} in flight, "
          f"{len(pending)} to move; nothing was changed", file=sys.stderr)
    return 0
