"""Running a plan on a cluster: checks, waves of reassignments, throttles, cancel, resume.

Goals
    Carry out the reassignment a plan directory holds (``replica-assignor balance --out``)
    without an operator watching it: no broker in more than ``K`` moves at once, throttles on
    the moving replicas only and always removed, a run that can be stopped, cancelled, killed
    and started again without a move done twice, and a report of what happened.

Constraints
    - **The cluster is the truth, the state file a hint.** Before anything, the partitions'
      replicas (Metadata) and ListPartitionReassignments are read. A move is finished only when
      the cluster shows its planned replicas, order included, with nothing adding or removing,
      whatever the state file says (one it calls finished that the cluster shows at its starting
      replicas is run again). Every other partition must still have the replicas the plan
      started from (:func:`kafka_replica_assignor.planner.execution.batches.drift` with the
      plan's targets, the rule of ``verify-plan``), or, when this plan submitted it, its
      starting replica set. A reassignment in progress is adopted only when the state file says
      this plan submitted it and it goes from the partition's starting replica set to its
      planned one; any other is foreign, and the run is refused naming it, and never cancels it
      (Kafka's tool refuses the same without ``--additional``). ListPartitionReassignments is
      read before Metadata, and a partition this plan submitted that Metadata still shows at
      the merged list of its move (starting and planned replicas: the move ended a moment ago,
      or the broker answering lags the controller) is watched as in flight, not drift. Either failing:
      :class:`Refused`, and nothing was changed.
    - **Moves**: :class:`kafka_replica_assignor.planner.execution.executor_schedule.Schedule` says which partitions start; each
      is marked ``submitted`` in the state file before AlterPartitionReassignments is sent. A
      partition is finished when ListPartitionReassignments no longer lists it and its replicas
      are the planned ones.
    - **Throttles** (:class:`kafka_replica_assignor.planner.execution.executor_throttles.ThrottleKeeper`): set before the moves
      they cover start, recomputed when the moves in flight change, removed at the end whatever
      the end (done, cancelled, stopped, an error).
    - **Stop** (SIGINT, SIGTERM, ``--cancel`` from another shell): the plan's reassignments in
      flight are cancelled (AlterPartitionReassignments without a target: Kafka puts the
      starting replica set back, in the order of the reassignment's merged list), the cluster is
      waited for, a partition back in another order is reassigned to its exact starting list (a
      reorder: nothing is copied), each partition is then at its starting or its planned
      replicas, order included, and the throttles go.
    - A cluster that cannot be reached (a broker restarting) is waited for: polls are retried
      until ``patience_s`` passes without one answer, then the run fails naming the moves left
      in flight. A lasting failure is said when it starts and then once per ``say_every_s``
      (a minute): what it waits for and until when.
    - **Stall**: a move in flight whose adding replicas gained no byte (DescribeLogDirs) for
      ``stall_timeout_s`` is cancelled back to its starting replicas and counts as failed,
      named with its adding brokers; the other moves go on.
    - **Adaptive cap** (``adaptive``, :mod:`kafka_replica_assignor.planner.execution.executor_concurrency`):
      each broker's cap rises while its moves finish fast and the ISR stays whole, and is
      halved when a replica it holds falls out of ISR or its moves pile up.
    - **Byte budget** (``bytes_per_broker``): a broker at its cap takes more moves while the
      bytes to copy of its moves in flight stay within the budget (small partitions: Kafka's
      seconds per move, not the throttle, would bound them); see the schedule's module doc.
    - **Progress** counts bytes: those of finished moves and those already on the adding
      replicas of moves in flight; the rate and the ETA are this run's (a resumed run does not
      count what an earlier one copied as copied now).

Algorithm
    One loop: apply a control request if any (``cancel``, ``throttle``, ``pause``: no new move
    starts while the moves in flight go on, ``resume``); start what the schedule allows; sleep one poll
    interval; list the reassignments in progress; those of ours no longer listed are checked
    against Metadata and finished; throttles follow the moves in flight. When none are left and
    ``reassignment.json`` names log directories (JBOD, :mod:`kafka_replica_assignor.planner.solving.disks`), each replica is
    moved into its directory (AlterReplicaLogDirs, under the throttle's rate as
    ``replica.alter.log.dirs.io.max.bytes.per.second`` on those brokers) and waited for (DescribeLogDirs: there, no
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
from kafka_replica_assignor.planner.execution.executor_concurrency import Adjuster, CapBounds
from kafka_replica_assignor.planner.execution.executor_schedule import Reassignment, Schedule
from kafka_replica_assignor.planner.execution.executor_state import ExecutionState, read_control
from kafka_replica_assignor.planner.execution.executor_throttles import ThrottleKeeper

__all__ = ["Cluster", "ExecutePlan", "Executor", "Refused", "cancel_and_settle", "foreign_reassignment"]

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
    def replica_bytes(self, topics: Sequence[str]) -> Mapping[Replica, int]: ...
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
    bytes_per_broker: int | None = None   # moves beyond the cap while a broker's bytes in flight stay within
    concurrent: int | None = None
    order: str = "plan"
    elect_leaders: bool = True
    poll_interval_s: float = 1.0
    patience_s: float = 300.0
    say_every_s: float = 60.0       # a failure that lasts is said once, then once per this
    adaptive: CapBounds | None = None     # the per-broker cap adapts within these (executor_concurrency)
    stall_timeout_s: float | None = 600.0
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
        self.paused = False                               # no new move starts (a control request)
        self.sizes: dict[Key, int] = {}
        self.schedule: Schedule | None = None
        self.throttles = ThrottleKeeper(cluster, state, emit)
        self.unsettled: dict[Key, int] = {}
        self.started = time.monotonic()
        self.held: dict[Key, int] = {}                    # bytes on the adding replicas, moves in flight
        self.copied: dict[Key, int] = {}                  # of them, those the plan counts (its sizes)
        self.grew_at: dict[Key, float] = {}               # when those last grew (or the move started)
        self.bytes_at_start: int | None = None            # bytes done when this run started
        self.said: dict[str, float] = {}                  # a lasting failure: when it was last said
        self.submitted_at: dict[Key, float] = {}          # moves in flight: when this run saw them start
        self.adjuster = (Adjuster(plan.adaptive, min(plan.per_broker or plan.adaptive.ceiling, plan.adaptive.ceiling))
                         if plan.adaptive is not None else None)
        self.looked_at = time.monotonic()
        self.min_isr: dict[str, int] = {}                 # the plan's topics' min.insync.replicas

    # ---- before anything ----------------------------------------------------------------
    def prepare(self) -> tuple[list[Reassignment], list[Reassignment], list[Key]]:
        """Check the cluster (module doc); the pending and in-flight reassignments and the
        partitions already at their planned replicas. Changes nothing."""
        # the reassignments first: one that ends between the two reads is then seen in flight,
        # not as a partition between its starting and its planned replicas
        ongoing = self.cluster.ongoing()
        read = self.cluster.read(with_sizes=True)
        snapshot: ClusterSnapshot = read.snapshot
        now = {(p.topic, p.partition): p for p in snapshot.partitions}
        self.sizes = {k: (now[k].size_bytes or 0) if k in now else 0 for k, _ in self.plan.targets}
        foreign = [self.foreign(key, entry) for key, entry in sorted(ongoing.items())]
        if any(foreign):
            lines = [line for line in foreign if line]
            raise Refused(f"{len(lines)} reassignment(s) not started by this plan are in progress "
                          f"({lines[0].split(':')[0]}{' ...' if len(lines) > 1 else ''}): wait for them or "
                          "cancel them first; this plan neither adopts nor cancels them", lines)
        targets = dict(self.plan.targets)
        min_isr = self.min_isr = dict(self.cluster.min_isr(sorted({t for (t, _), _ in self.plan.targets})))
        pending: list[Reassignment] = []
        flying: list[Reassignment] = []
        done: list[Key] = []
        unsubmitted: dict[Key, tuple[int, ...]] = {}
        for index, (key, target) in enumerate(self.plan.targets):
            start = self.plan.starting[key]
            entry = now.get(key)
            isr = entry.isr if entry is not None and entry.isr is not None else ()
            move = Reassignment(key[0], key[1], start, target, index, self.sizes[key],
                                len(isr) <= min_isr.get(key[0], 1))
            record = self.state.moves.get(key)
            current = entry.replicas if entry is not None else None
            if key in ongoing:
                flying.append(move)                  # ours: foreign ones were refused above
            elif current == target:
                done.append(key)
            elif (current is not None and record is not None and record.status == "submitted"
                  and set(current) == set(start) | set(target) != set(start)):
                # the merged list of this plan's move that just ended: Metadata lags the
                # controller (a broker restarting); the polls see it settle
                flying.append(move)
            elif current is not None and record is not None and set(current) == set(start):
                pending.append(move)      # sent back by a cancel (maybe reordered), or never sent
            else:
                unsubmitted[key] = start
                pending.append(move)
        problems = drift(unsubmitted, snapshot, targets)
        if problems:
            raise Refused(f"{len(problems)} of {len(self.plan.targets)} planned partition(s) changed since the "
                          "plan was made (neither at the starting nor at the planned replicas): plan again",
                          problems)
        return pending, flying, done

    def foreign(self, key: Key, entry: Any) -> str:
        return foreign_reassignment(self.plan, self.state, key, entry)

    # ---- the run ------------------------------------------------------------------------
    def run(self, pending: list[Reassignment], flying: list[Reassignment], done: Sequence[Key]) -> str:
        """Execute until every move ended or a stop; returns the final status
        (``done``, ``failed``, ``cancelled``, ``stopped``). Throttles are removed in all cases."""
        st = self.state
        st.throttle = self.plan.throttle if self.plan.throttle is not None else st.throttle
        newly_done = [k for k in done if k not in st.moves or st.moves[k].status != "finished"]
        if newly_done:
            st.mark(newly_done, "finished")
        not_done = [r.key for r in pending if r.key in st.moves and st.moves[r.key].status == "finished"]
        if not_done:              # the state file said finished; the cluster says not: run them
            st.forget(not_done)
            self.emit("state_corrected", {"partitions": [f"{t}-{p}" for t, p in not_done],
                                          "state_said": "finished", "cluster_shows": "starting replicas"})
        now = time.monotonic()
        for r in flying:
            self.grew_at[r.key] = self.submitted_at[r.key] = now
        per_broker = self.adjuster.start if self.adjuster is not None else self.plan.per_broker
        self.schedule = Schedule(pending, per_broker=per_broker, concurrent=self.plan.concurrent,
                                 order=self.plan.order, in_flight=flying,
                                 bytes_per_broker=self.plan.bytes_per_broker)
        self.watch_copies()                     # what the moves in flight hold already
        self.started = time.monotonic()
        self.bytes_at_start = self.bytes_done()[0]
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
                wave = [] if self.paused else schedule.start()
                if wave:
                    self.submit(wave)
                else:
                    self.sync_throttles()     # the moves that finished are throttled no more
                self.stop.wait(self.plan.poll_interval_s)
                if self.stop.is_set():
                    continue
                failed |= self.poll()
                last_answer = time.monotonic()
                self.said.pop("poll_failed", None)
            except Exception as exc:  # noqa: BLE001 - a broker restarting: wait, then go on
                self.stop.wait(self.plan.poll_interval_s)
                waited = time.monotonic() - last_answer
                if waited > self.plan.patience_s:
                    raise RuntimeError(
                        f"the cluster did not answer for {waited:.0f} s (last error {type(exc).__name__}: {exc}); "
                        f"{len(schedule.in_flight)} move(s) left in flight: execute --cancel or run it again once "
                        "the cluster answers") from exc
                self.say("poll_failed", {
                    "error": f"{type(exc).__name__}: {exc}",
                    "waiting_for": "the cluster to answer (a broker restarting or unreachable); "
                                   f"{len(schedule.in_flight)} move(s) in flight stay as they are",
                    "waited_s": round(waited, 1), "gives_up_in_s": round(max(self.plan.patience_s - waited, 0), 1),
                    "gives_up_at": time.strftime("%H:%M:%S", time.localtime(time.time() + self.plan.patience_s
                                                                             - waited))})
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
        now = time.monotonic()
        for r in wave:
            self.grew_at[r.key] = self.submitted_at[r.key] = now
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
                    self.forget_move(key)
                    self.state.mark([key], "failed")
                    failed = True
                    self.emit("move_failed", {"partition": move.name, "replicas": list(current.get(key, ())),
                                              "planned": list(move.target)})
            now = time.monotonic()
            for key in finished:
                move = schedule.finish(key)
                if self.adjuster is not None:
                    self.adjuster.note_finished([(move, now - self.submitted_at.get(key, now))])
                self.forget_move(key)
            if finished:
                self.state.mark(finished, "finished")
                self.emit("moves_finished", {"partitions": [f"{t}-{p}" for t, p in finished]})
        failed |= self.watch_copies()
        self.adjust_caps()
        self.emit("progress", self.progress())
        return failed

    def adjust_caps(self) -> None:
        """Every ``adaptive.every_s``: the brokers' caps from what they sustain
        (:mod:`kafka_replica_assignor.planner.execution.executor_concurrency`): the ISR of every
        partition (Metadata; the adding replicas of moves in flight left out) and the moves'
        times. A failed read leaves the caps as they are."""
        adjuster, schedule = self.adjuster, self.schedule
        if adjuster is None or schedule is None:
            return
        now = time.monotonic()
        if now - self.looked_at < adjuster.bounds.every_s:
            return
        self.looked_at = now
        try:
            snapshot = self.cluster.read(with_sizes=False).snapshot
        except Exception as exc:  # noqa: BLE001 - the caps wait for the next look
            self.say("caps_unchanged", {"error": f"{type(exc).__name__}: {exc}"})
            return
        self.said.pop("caps_unchanged", None)
        adding = {(r.topic, r.partition, b) for r in schedule.in_flight.values() for b in r.destinations}
        min_isr = self.min_isr
        out_of_isr: set[int] = set()
        at_min = 0
        for p in snapshot.partitions:
            isr = set(p.isr) if p.isr is not None else set(p.replicas)
            out_of_isr.update(b for b in p.replicas if b not in isr and (p.topic, p.partition, b) not in adding)
            if len(isr) < len(p.replicas) and len(isr) <= min_isr.get(p.topic, 1):
                at_min += 1
        brokers = {b.id for b in snapshot.brokers}
        ages = [(r, now - self.submitted_at.get(r.key, now)) for r in schedule.in_flight.values()]
        changes = adjuster.look(brokers, ages, out_of_isr, at_min, self.state.throttle)
        if changes:
            schedule.set_caps(dict(adjuster.caps))
            self.emit("caps_changed", {"brokers": {str(b): {"cap": new, "why": why}
                                                   for b, (new, why) in sorted(changes.items())},
                                       "at_min_isr": at_min})

    def forget_move(self, key: Key) -> None:
        self.submitted_at.pop(key, None)
        self.held.pop(key, None)
        self.copied.pop(key, None)
        self.grew_at.pop(key, None)
        self.unsettled.pop(key, None)

    def watch_copies(self) -> bool:
        """Bytes on the adding replicas of the moves in flight (DescribeLogDirs); a move that
        gained none for ``stall_timeout_s`` is cancelled back to its starting replicas and
        failed (module doc). True when one was."""
        schedule = self.schedule
        assert schedule is not None
        copying = [r for r in schedule.in_flight.values() if r.destinations]
        if not copying:
            return False
        ask = getattr(self.cluster, "replica_bytes", None)
        if ask is None:
            return False
        try:
            sizes = ask(sorted({r.topic for r in copying}))
        except Exception as exc:  # noqa: BLE001 - progress only; the next poll asks again
            self.say("log_dir_sizes_unknown", {"error": f"{type(exc).__name__}: {exc}"})
            return False
        self.said.pop("log_dir_sizes_unknown", None)
        now = time.monotonic()
        limit = self.plan.stall_timeout_s
        stalled: list[Reassignment] = []
        for r in copying:
            held = sum(sizes.get((r.topic, r.partition, b), 0) for b in r.destinations)
            previous = self.held.get(r.key)
            if previous is None or held > previous:     # new records count as progress too
                self.grew_at[r.key] = now
            self.held[r.key] = held
            self.copied[r.key] = min(held, r.bytes_to_copy)
            if limit is not None and now - self.grew_at.setdefault(r.key, now) > limit:
                stalled.append(r)
        for r in stalled:
            self.emit("move_stalled", {"partition": r.name, "adding_brokers": list(r.destinations),
                                       "sources": list(r.sources), "copied_bytes": self.copied.get(r.key, 0),
                                       "no_progress_s": round(now - self.grew_at[r.key], 1),
                                       "action": "cancelled back to its starting replicas"})
        if stalled:
            keys = [r.key for r in stalled]
            cancel_and_settle(self.cluster, self.state, keys, self.plan, self.emit)
            self.state.mark([k for k in keys if self.state.moves[k].status != "finished"], "failed")
            for key in keys:
                schedule.finish(key)
                self.forget_move(key)
        return bool(stalled)

    def say(self, event: str, fields: dict[str, Any]) -> None:
        """Emit a failure that may last (a cluster not answering): when it starts, then once per
        ``say_every_s`` while it lasts; the caller forgets it (``said``) once it clears."""
        now = time.monotonic()
        last = self.said.get(event)
        if last is None or now - last >= self.plan.say_every_s:
            self.said[event] = now
            self.emit(event, fields)

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
        if request.get("pause") and not self.paused:
            self.paused = True
            self.emit("paused", {"in_flight": len(self.schedule.in_flight) if self.schedule else 0})
        if request.get("resume") and self.paused:
            self.paused = False
            self.emit("resumed", {})

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
                self.throttles.sync_log_dirs({b for _, _, b in ask})
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

    def bytes_done(self) -> tuple[int, int]:
        """``(done, total)`` bytes to copy: finished moves whole, moves in flight by what their
        adding replicas hold."""
        copies = {k: self.sizes.get(k, 0) * _copies(self.plan.starting[k], t) for k, t in self.plan.targets}
        finished = set(self.state.with_status("finished"))
        in_flight = self.schedule.in_flight if self.schedule else {}
        done = (sum(v for k, v in copies.items() if k in finished)
                + sum(min(self.copied.get(k, 0), copies.get(k, 0)) for k in in_flight if k not in finished))
        return done, sum(copies.values())

    def progress(self) -> dict[str, Any]:
        """Moves and bytes done (:meth:`bytes_done`), this run's rate (bytes copied since it
        started), and the ETA: the bytes left at that rate, or at the throttle before any."""
        done_bytes, total_bytes = self.bytes_done()
        elapsed = time.monotonic() - self.started
        this_run = done_bytes - (self.bytes_at_start or 0)
        rate = this_run / elapsed if elapsed > 0 and this_run > 0 else 0.0
        left = total_bytes - done_bytes
        throttle = self.state.throttle
        eta = left / rate if rate > 0 else (left / throttle if throttle else None)
        return {"moves_done": len(self.state.with_status("finished")), "moves_total": len(self.plan.targets),
                "in_flight": len(self.schedule.in_flight) if self.schedule else 0,
                "bytes_done": done_bytes, "bytes_total": total_bytes, "rate_bytes_per_s": round(rate),
                "eta_s": None if eta is None else round(eta, 1), "throttle": throttle, "paused": self.paused,
                "cpu_s": round(time.process_time(), 4)}


def foreign_reassignment(plan: ExecutePlan, state: ExecutionState, key: Key, entry: Any) -> str:
    """Empty when the reassignment in progress of ``key`` (ListPartitionReassignments' entry) is
    this plan's (module doc), else the line that names it."""
    replicas = tuple(getattr(entry, "replicas", ()))
    adding = set(getattr(entry, "adding", ()))
    removing = set(getattr(entry, "removing", ()))
    going_to = tuple(b for b in replicas if b not in removing)
    coming_from = {b for b in replicas if b not in adding}
    target = dict(plan.targets).get(key)
    record = state.moves.get(key)
    if (target is not None and record is not None and record.status == "submitted"
            and set(going_to) in (set(target), set(plan.starting[key]))    # a move, or a reorder back
            and coming_from == set(plan.starting[key])):
        return ""
    why = ("not in this plan" if target is None else
           "not submitted by this plan" if record is None or record.status != "submitted" else
           f"not this plan's move (planned {list(plan.starting[key])} -> {list(target)})")
    return (f"{key[0]}-{key[1]}: reassignment in progress to {list(going_to)} (adding {sorted(adding)}, "
            f"removing {sorted(removing)}), {why}")


def _copies(start: tuple[int, ...], target: tuple[int, ...]) -> int:
    return sum(1 for b in target if b not in start)


def _wait_ended(cluster: Cluster, keys: Sequence[Key], plan: ExecutePlan) -> None:
    """Wait (at most the plan's patience) until none of ``keys`` is in progress."""
    deadline = time.monotonic() + plan.patience_s
    live = list(keys)
    while live and time.monotonic() < deadline:
        ongoing = cluster.ongoing()
        live = [k for k in live if k in ongoing]
        if live:
            time.sleep(min(plan.poll_interval_s, 0.5))


def _settled(cluster: Cluster, keys: Sequence[Key], plan: ExecutePlan) -> Mapping[Key, tuple[int, ...]]:
    """The replicas of ``keys`` once each shows its planned or its starting replica set (Metadata
    may lag the reassignment's end by a few polls), or after :data:`UNSETTLED_POLLS` looks."""
    targets = dict(plan.targets)
    current: Mapping[Key, tuple[int, ...]] = {}
    for _ in range(UNSETTLED_POLLS):
        current = cluster.replicas(sorted({t for t, _ in keys})) if keys else {}
        if all(current.get(k) == targets[k] or set(current.get(k, ())) == set(plan.starting[k]) for k in keys):
            break
        time.sleep(min(plan.poll_interval_s, 0.5))
    return current


def cancel_and_settle(cluster: Cluster, state: ExecutionState, keys: Sequence[Key], plan: ExecutePlan,
                      emit: Emit) -> None:
    """Cancel ``keys`` (those still in progress), wait until none is, put back the exact
    starting order of a partition Kafka returned reordered, and mark each partition
    ``finished`` (at its planned replicas), ``cancelled`` (at its starting ones, order
    included) or ``failed`` (anywhere else)."""
    targets = dict(plan.targets)
    ongoing = cluster.ongoing()
    live = [k for k in keys if k in ongoing]
    if live:
        refused = cluster.reassign(dict.fromkeys(live))
        if refused:
            emit("cancel_refused", {f"{t}-{p}": why for (t, p), why in refused.items()})
    _wait_ended(cluster, live, plan)
    current = _settled(cluster, keys, plan)
    # Kafka puts back the starting replica *set*, in the order of the reassignment's merged list
    # (target first): [4,3,2] -> [3,2,1] cancelled is [3,2,4]. The order is the preferred leader.
    reordered = [k for k in keys if current.get(k) not in (targets[k], plan.starting[k])
                 and set(current.get(k, ())) == set(plan.starting[k])]
    if reordered:
        refused = cluster.reassign({k: plan.starting[k] for k in reordered})
        emit("order_restored", {"partitions": {f"{t}-{p}": {"was": list(current[(t, p)]),
                                                            "now": list(plan.starting[(t, p)])}
                                               for t, p in reordered if (t, p) not in refused},
                                "refused": {f"{t}-{p}": why for (t, p), why in refused.items()}})
        _wait_ended(cluster, reordered, plan)
        for _ in range(UNSETTLED_POLLS):
            current = cluster.replicas(sorted({t for t, _ in keys}))
            if all(current.get(k) == plan.starting[k] for k in reordered if k not in refused):
                break
            time.sleep(min(plan.poll_interval_s, 0.5))
    finished = [k for k in keys if current.get(k) == targets[k]]
    back = [k for k in keys if k not in finished and current.get(k) == plan.starting[k]]
    between = [k for k in keys if k not in finished and k not in back]
    if finished:
        state.mark(finished, "finished")
    if back:
        state.mark(back, "cancelled")
    if between:
        state.mark(between, "failed")
        emit("cancel_incomplete", {"partitions": {f"{t}-{p}": list(current.get((t, p), ())) for t, p in between}})
