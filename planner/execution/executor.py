"""Running a plan on a cluster: checks, waves of reassignments, throttles, cancel, resume.

Goals
    Carry out the reassignment a plan directory holds (``replica-assignor balance --out``)
    without an operator watching it: no broker in more than ``K`` moves at once, throttles on
    the moving replicas only and always removed, a run that can be stopped, cancelled, killed
    and started again without a move done twice, and a report of what happened.

Constraints
    - **Before anything**: every partition not yet submitted must still have the replicas the
      plan started from (:func:`kafka_replica_assignor.planner.execution.batches.drift`, the check of ``verify-plan``), or
      already the planned ones; a partition this plan submitted must be in flight, at its
      planned replicas, or back at its starting ones. No reassignment that this plan did not
      start may be in progress (Kafka's tool refuses the same without ``--additional``).
      Either failing: :class:`Refused`, and nothing was changed.
    - **Moves**: :class:`kafka_replica_assignor.planner.execution.executor_schedule.Schedule` says which partitions start; each
      is marked ``submitted`` in the state file before AlterPartitionReassignments is sent. A
      partition is finished when ListPartitionReassignments no longer lists it and its replicas
      are the planned ones.
    - **Throttles** (:class:`kafka_replica_assignor.planner.execution.executor_throttles.ThrottleKeeper`): set before the moves
      they cover start, recomputed when the moves in flight change, removed at the end whatever
      the end (done, cancelled, stopped, an error).
    - **Stop** (SIGINT, SIGTERM, ``--cancel`` from another shell): the plan's reassignments in
      flight are cancelled (AlterPartitionReassignments without a target: Kafka puts the
      starting replicas back), the cluster is waited for, each partition is then at its
      starting or its planned replicas, and the throttles go.
    - A cluster that cannot be reached (a broker restarting) is waited for: polls are retried
      until ``patience_s`` passes without one answer.

Algorithm
    One loop: apply a control request if any; start what the schedule allows; sleep one poll
    interval; list the reassignments in progress; those of ours no longer listed are checked
    against Metadata and finished; throttles follow the moves in flight. When none are left and
    ``reassignment.json`` names log directories (JBOD, :mod:`kafka_replica_assignor.planner.solving.disks`), each replica is
    moved into its directory (AlterReplicaLogDirs) and waited for (DescribeLogDirs: there, no
    future copy); then a preferred leader election for ``leader-election.json``, then the
    throttles are removed.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from kafka_replica_assignor.cluster.snapshot import ClusterSnapshot
from kafka_replica_assignor.planner.execution.batches import drift
from kafka_replica_assignor.planner.execution.executor_schedule import Reassignment, Schedule
from kafka_replica_assignor.planner.execution.executor_state import ExecutionState, read_control
from kafka_replica_assignor.planner.execution.executor_throttles import ThrottleKeeper

__all__ = ["Cluster", "ExecutePlan", "Executor", "Refused", "cancel_and_settle"]

Key = tuple[str, int]
Replica = tuple[str, int, int]     # topic, partition, broker
UNSETTLED_POLLS = 10     # polls a partition may show stale replicas after its reassignment ended


class Refused(Exception):
    """The plan may not run on this cluster; ``lines`` name the partitions."""

    def __init__(self, message: str, lines: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.lines = list(lines)


class Cluster(Protocol):
    """What the executor asks of a cluster (:class:`kafka_replica_assignor.protocol.reassignment.ReassignmentAdmin`)."""

    def read(self, *, with_sizes: bool = True) -> Any: ...
    def ongoing(self) -> Mapping[Key, Any]: ...
    def replicas(self, topics: Sequence[str]) -> Mapping[Key, tuple[int, ...]]: ...
    def reassign(self, targets: Mapping[Key, Sequence[int] | None]) -> Mapping[Key, str]: ...
    def alter_configs(self, brokers: Mapping[int, Mapping[str, str | None]] = ...,
                      topics: Mapping[str, Mapping[str, str | None]] = ...) -> Mapping[str, str]: ...
    def min_isr(self, topics: Sequence[str]) -> Mapping[str, int]: ...
    def elect_preferred(self, keys: Sequence[Key]) -> tuple[list[Key], Mapping[Key, str]]: ...
    def log_dirs(self, topics: Sequence[str]) -> tuple[Mapping[Replica, str], set[Replica]]: ...
    def alter_log_dirs(self, replicas: Mapping[Replica, str]) -> Mapping[Replica, str]: ...


@dataclass(frozen=True, slots=True)
class ExecutePlan:
    """What to run and how (one value, from the command line)."""

    plan_dir: str
    plan_sha256: str
    targets: tuple[tuple[Key, tuple[int, ...]], ...]        # plan order
    starting: Mapping[Key, tuple[int, ...]]
    leader_election: tuple[Key, ...] = ()
    batches: Mapping[Key, int] = field(default_factory=dict)
    throttle: int | None = None
    per_broker: int | None = None
    concurrent: int | None = None
    order: str = "plan"
    elect_leaders: bool = True
    poll_interval_s: float = 1.0
    patience_s: float = 300.0
    log_dirs: Mapping[Replica, str] = field(default_factory=dict)   # reassignment.json's log_dirs


Emit = Callable[[str, dict[str, Any]], None]


class Executor:
    """One run of a plan (module doc). ``stop`` is set by a signal handler."""

    def __init__(self, plan: ExecutePlan, cluster: Cluster, state: ExecutionState, emit: Emit) -> None:
        self.plan = plan
        self.cluster = cluster
        self.state = state
        self.emit = emit
        self.stop = threading.Event()
        self.stop_reason = ""
        self.sizes: dict[Key, int] = {}
        self.schedule: Schedule | None = None
        self.throttles = ThrottleKeeper(cluster, state, emit)
        self.unsettled: dict[Key, int] = {}
        self.started = time.monotonic()

    # ---- before anything ----------------------------------------------------------------
    def prepare(self) -> tuple[list[Reassignment], list[Reassignment], list[Key]]:
        """Check the cluster (module doc); the pending and in-flight reassignments and the
        partitions already at their planned replicas. Changes nothing."""
        read = self.cluster.read(with_sizes=True)
        snapshot: ClusterSnapshot = read.snapshot
        now = {(p.topic, p.partition): p for p in snapshot.partitions}
        self.sizes = {k: (now[k].size_bytes or 0) if k in now else 0 for k, _ in self.plan.targets}
        ongoing = self.cluster.ongoing()
        ours = {k for k, r in self.state.moves.items() if r.status == "submitted"}
        foreign = sorted(k for k in ongoing if k not in ours)
        if foreign:
            raise Refused(f"{len(foreign)} reassignment(s) not started by this plan are in progress: "
                          "wait for them or cancel them first",
                          [f"{t}-{p}: reassignment in progress" for t, p in foreign])
        min_isr = self.cluster.min_isr(sorted({t for (t, _), _ in self.plan.targets}))
        pending: list[Reassignment] = []
        flying: list[Reassignment] = []
        done: list[Key] = []
        unsubmitted: dict[Key, tuple[int, ...]] = {}
        problems: list[str] = []
        for index, (key, target) in enumerate(self.plan.targets):
            start = self.plan.starting[key]
            entry = now.get(key)
            isr = entry.isr if entry is not None and entry.isr is not None else ()
            move = Reassignment(key[0], key[1], start, target, index, self.sizes[key],
                                len(isr) <= min_isr.get(key[0], 1))
            record = self.state.moves.get(key)
            current = entry.replicas if entry is not None else None
            if record is not None and record.status == "finished":
                done.append(key)
            elif key in ongoing:
                flying.append(move)
            elif current == target:
                done.append(key)
            elif record is not None and current is not None and set(current) == set(start):
                pending.append(move)      # sent back by a cancel (Kafka may reorder), or never sent
            elif record is not None and record.status == "submitted" and current is not None:
                problems.append(f"{key[0]}-{key[1]}: submitted by this plan, now {list(current)}, "
                                f"planned {list(target)}")
            else:
                unsubmitted[key] = start
                pending.append(move)
        problems += drift(unsubmitted, snapshot)
        if problems:
            raise Refused(f"{len(problems)} of {len(self.plan.targets)} planned partition(s) changed since "
                          "the plan was made: plan again", sorted(problems))
        return pending, flying, done

    # ---- the run ------------------------------------------------------------------------
    def run(self, pending: list[Reassignment], flying: list[Reassignment], done: Sequence[Key]) -> str:
        """Execute until every move ended or a stop; returns the final status
        (``done``, ``failed``, ``cancelled``, ``stopped``). Throttles are removed in all cases."""
        st = self.state
        st.throttle = self.plan.throttle if self.plan.throttle is not None else st.throttle
        newly_done = [k for k in done if k not in st.moves or st.moves[k].status != "finished"]
        if newly_done:
            st.mark(newly_done, "finished")
        self.schedule = Schedule(pending, per_broker=self.plan.per_broker, concurrent=self.plan.concurrent,
                                 order=self.plan.order, in_flight=flying)
        status = "failed"
        try:
            self.emit("execution_started", {"moves": len(self.plan.targets), "pending": len(pending),
                                            "in_flight": len(flying), "finished": len(done),
                                            "throttle": st.throttle})
            self.sync_throttles()
            status = self.loop()
            if status == "done" and self.plan.log_dirs and not self.place_log_dirs():
                status = "failed" if not self.stop.is_set() else "stopped"
            if status == "done" and self.plan.elect_leaders:
                self.elect_leaders()
        finally:
            if not self.remove_throttles():
                status = "failed"
        return status

    def remove_throttles(self) -> bool:
        """Remove every throttle this plan set, trying again while a broker is unreachable;
        False when some are left (the state file still names them)."""
        deadline = time.monotonic() + min(self.plan.patience_s, 60.0)
        while True:
            brokers, topics = len(self.state.throttled_brokers), len(self.state.throttled_topics)
            try:
                self.throttles.remove()
                self.emit("throttles_removed", {"brokers": brokers, "topics": topics})
                return True
            except Exception as exc:  # noqa: BLE001 - reported, and the state file keeps them
                if time.monotonic() > deadline:
                    self.emit("throttles_left", {"error": f"{type(exc).__name__}: {exc}",
                                                 "hint": "replica-assignor execute --cleanup-throttles"})
                    return False
                self.emit("throttle_removal_failed", {"error": f"{type(exc).__name__}: {exc}"})
                time.sleep(1.0)

    def loop(self) -> str:
        schedule = self.schedule
        assert schedule is not None
        last_answer = time.monotonic()
        failed = False
        while not schedule.done:
            self.apply_control()
            if self.stop.is_set():
                return self.cancel_in_flight(self.stop_reason or "stopped")
            try:
                wave = schedule.start()
                if wave:
                    self.submit(wave)
                else:
                    self.sync_throttles()     # the moves that finished are throttled no more
                self.stop.wait(self.plan.poll_interval_s)
                if self.stop.is_set():
                    continue
                failed |= self.poll()
                last_answer = time.monotonic()
            except Exception as exc:  # noqa: BLE001 - a broker restarting: wait, then go on
                self.stop.wait(self.plan.poll_interval_s)
                waited = time.monotonic() - last_answer
                self.emit("poll_failed", {"error": f"{type(exc).__name__}: {exc}", "waited_s": round(waited, 1)})
                if waited > self.plan.patience_s:
                    raise
                refresh = getattr(self.cluster, "refresh", None)   # a client with fresh metadata
                if refresh is not None:
                    with contextlib.suppress(Exception):
                        refresh()
        return "failed" if failed or self.state.with_status("failed") else "done"

    def submit(self, wave: list[Reassignment]) -> None:
        """Throttles first, then the reassignments; when either fails (a broker restarting),
        the wave goes back to the pending moves and the error up to the loop, which waits."""
        assert self.schedule is not None
        self.state.mark_submitted([r.key for r in wave])
        try:
            self.sync_throttles()
            refused = self.cluster.reassign({r.key: r.target for r in wave})
        except Exception:
            self.schedule.put_back([r.key for r in wave])
            self.state.unsubmit([r.key for r in wave])
            raise
        for key, why in refused.items():
            self.schedule.finish(key)
            self.state.mark([key], "failed")
            self.emit("move_refused", {"partition": f"{key[0]}-{key[1]}", "error": why})
        self.state.note_load(self.schedule.load)
        self.emit("moves_submitted", {"partitions": [r.name for r in wave if r.key not in refused],
                                      "in_flight": len(self.schedule.in_flight),
                                      "load": {str(b): v for b, v in sorted(self.schedule.load.items())}})

    def poll(self) -> bool:
        """One look at the cluster; True when a move failed."""
        schedule = self.schedule
        assert schedule is not None
        ongoing = self.cluster.ongoing()
        ended = [k for k in schedule.in_flight if k not in ongoing]
        failed = False
        if ended:
            current = self.cluster.replicas(sorted({t for t, _ in ended}))
            finished = []
            for key in ended:
                move = schedule.in_flight[key]
                if current.get(key) == move.target:
                    finished.append(key)
                    self.unsettled.pop(key, None)
                    continue
                seen = self.unsettled[key] = self.unsettled.get(key, 0) + 1
                if seen >= UNSETTLED_POLLS:    # cancelled or changed by someone else
                    schedule.finish(key)
                    self.state.mark([key], "failed")
                    failed = True
                    self.emit("move_failed", {"partition": move.name, "replicas": list(current.get(key, ())),
                                              "planned": list(move.target)})
            for key in finished:
                schedule.finish(key)
            if finished:
                self.state.mark(finished, "finished")
                self.emit("moves_finished", {"partitions": [f"{t}-{p}" for t, p in finished]})
        self.emit("progress", self.progress())
        return failed

    def sync_throttles(self) -> None:
        if self.schedule is not None:
            self.throttles.sync(self.schedule.in_flight.values())

    # ---- control -----------------------------------------------------------------------
    def apply_control(self) -> None:
        request = read_control(self.plan.plan_dir)
        if not request:
            return
        if request.get("cancel"):
            self.stop_reason = "cancelled"
            self.stop.set()
        rate = request.get("throttle")
        if isinstance(rate, int) and rate > 0:
            self.state.throttle = rate
            self.emit("throttle_changed", {"rate": rate})
            self.sync_throttles()
            self.state.note_throttles(rate, (), ())

    # ---- endings ------------------------------------------------------------------------
    def cancel_in_flight(self, reason: str) -> str:
        """Cancel this plan's reassignments in flight and wait for the cluster to settle."""
        schedule = self.schedule
        assert schedule is not None
        schedule.drop_pending()
        keys = sorted(schedule.in_flight)
        self.emit("cancelling", {"reason": reason, "partitions": [f"{t}-{p}" for t, p in keys]})
        cancel_and_settle(self.cluster, self.state, keys, self.plan, self.emit)
        for key in keys:
            schedule.finish(key)
        return "cancelled" if reason == "cancelled" else "stopped"

    def place_log_dirs(self) -> bool:
        """Move replicas into the directories ``reassignment.json`` names (AlterReplicaLogDirs),
        once every reassignment ended, and wait until DescribeLogDirs shows each there with no
        copy under way; asked again for those not there nor moving. False when some are refused
        or not there within ``patience_s``, or on a stop."""
        wanted = dict(self.plan.log_dirs)
        topics = sorted({t for t, _, _ in wanted})
        deadline = time.monotonic() + self.plan.patience_s
        asked: dict[Replica, str] = {}
        while True:
            where, future = self.cluster.log_dirs(topics)
            left = {k: d for k, d in wanted.items() if where.get(k) != d or k in future}
            if not left:
                self.emit("log_dirs_placed", {"replicas": len(wanted), "asked": len(asked)})
                return True
            ask = {k: d for k, d in left.items() if k not in future}
            if ask:
                refused = self.cluster.alter_log_dirs(ask)
                asked.update(ask)
                if refused:
                    self.emit("log_dir_moves_refused", {"replicas": {f"{t}-{p}@{b}": why for (t, p, b), why
                                                                     in sorted(refused.items())}})
                    return False
                self.emit("log_dir_moves_submitted", {"replicas": len(ask), "left": len(left)})
            if time.monotonic() > deadline:
                self.emit("log_dirs_unplaced", {"replicas": [f"{t}-{p}@{b}" for t, p, b in sorted(left)]})
                return False
            if self.stop.wait(self.plan.poll_interval_s):
                return False

    def elect_leaders(self) -> None:
        keys = list(self.plan.leader_election)
        elected, refused = self.cluster.elect_preferred(keys) if keys else ([], {})
        self.state.leader_election = {"asked": len(keys), "leader_changes": len(elected),
                                      "refused": {f"{t}-{p}": why for (t, p), why in sorted(refused.items())}}
        self.state.save()
        self.emit("leaders_elected", dict(self.state.leader_election))

    def progress(self) -> dict[str, Any]:
        total_bytes = sum(self.sizes.get(k, 0) * _copies(self.plan.starting[k], t) for k, t in self.plan.targets)
        finished = set(self.state.with_status("finished"))
        done_bytes = sum(self.sizes.get(k, 0) * _copies(self.plan.starting[k], t)
                         for k, t in self.plan.targets if k in finished)
        elapsed = time.monotonic() - self.started
        rate = done_bytes / elapsed if elapsed > 0 else 0.0
        left = total_bytes - done_bytes
        throttle = self.state.throttle
        eta = left / rate if rate > 0 else (left / throttle if throttle else None)
        return {"moves_done": len(finished), "moves_total": len(self.plan.targets),
                "in_flight": len(self.schedule.in_flight) if self.schedule else 0,
                "bytes_done": done_bytes, "bytes_total": total_bytes, "rate_bytes_per_s": round(rate),
                "eta_s": None if eta is None else round(eta, 1), "throttle": throttle,
                "cpu_s": round(time.process_time(), 4)}


def _copies(start: tuple[int, ...], target: tuple[int, ...]) -> int:
    return sum(1 for b in target if b not in start)


def _cancel_in_flight(cluster: Cluster, keys: Sequence[Key], plan: ExecutePlan, emit: Emit) -> None:
    """Cancel those of ``keys`` still in progress and wait (at most the plan's patience) until
    none of them is."""
    ongoing = cluster.ongoing()
    live = [k for k in keys if k in ongoing]
    if live:
        refused = cluster.reassign(dict.fromkeys(live))
        if refused:
            emit("cancel_refused", {f"{t}-{p}": why for (t, p), why in refused.items()})
    deadline = time.monotonic() + plan.patience_s
    while live and time.monotonic() < deadline:
        ongoing = cluster.ongoing()
        live = [k for k in live if k in ongoing]
        if live:
            time.sleep(min(plan.poll_interval_s, 0.5))


def cancel_and_settle(cluster: Cluster, state: ExecutionState, keys: Sequence[Key], plan: ExecutePlan,
                      emit: Emit) -> None:
    """Cancel ``keys`` (those still in progress), wait until none is, and mark each partition
    ``finished`` (at its planned replicas) or ``cancelled`` (back at its starting ones)."""
    targets = dict(plan.targets)
    _cancel_in_flight(cluster, keys, plan, emit)

    def at_start(k: Key) -> bool:     # Kafka puts the starting replicas back, maybe reordered
        return set(current.get(k, ())) == set(plan.starting[k])

    current: Mapping[Key, tuple[int, ...]] = {}
    for _ in range(UNSETTLED_POLLS):
        current = cluster.replicas(sorted({t for t, _ in keys})) if keys else {}
        if all(current.get(k) == targets[k] or at_start(k) for k in keys):
            break
        time.sleep(min(plan.poll_interval_s, 0.5))
    finished = [k for k in keys if current.get(k) == targets[k]]
    back = [k for k in keys if k not in finished and at_start(k)]
    between = [k for k in keys if k not in finished and k not in back]
    if finished:
        state.mark(finished, "finished")
    if back:
        state.mark(back, "cancelled")
    if between:
        state.mark(between, "failed")
        emit("cancel_incomplete", {"partitions": [f"{t}-{p}" for t, p in between]})
