"""What an execution of a plan has done, on disk beside the plan, and who is running it.

Files in the plan directory:

- ``execution-state.json``: written atomically (a temporary file, fsync, rename) after every
  change: each partition's status (``submitted``, ``finished``, ``cancelled``, ``failed``) with
  its number of submissions and times, the throttle in force and the brokers and topics that
  carry throttle configs (so a later ``--cleanup-throttles`` knows what to remove after a
  ``kill -9``), the peak moves in flight per broker, the leader election, the run's status.
  A partition is marked ``submitted`` *before* its reassignment is sent: a run killed between
  the two finds it at its starting replicas and sends it again; a run killed after finds it in
  flight or finished, never unknown.
- ``execution.lock``: an exclusive ``flock`` held by the running execution. The kernel drops it
  when the process dies, even by ``kill -9``; a second execution of the plan cannot take it
  and refuses.
- ``execution-control.json``: a request (``{"throttle": N}``, ``{"cancel": true}``, ``{"pause": true}``
  or ``{"resume": true}``) from
  another shell to the running execution, which applies it at its next poll and removes it.

The state file is a hint, never the truth (the executor checks every move against the cluster),
and it is read as untrusted input: without following a symbolic link, a regular file only, at
most :func:`state_limit` bytes, every field checked; one that does not parse, belongs to another
plan or names partitions outside the plan is :class:`BadState` (bad input: nothing is done). The
lock and control files are opened the same way (no symbolic link, regular files only).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import math
import os
import tempfile
import time
from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from kafka_replica_assignor.cluster.files import NotARegularFile, open_regular, read_regular

__all__ = ["CONTROL", "LOCK", "STATE", "BadState", "ExecutionState", "Locked", "MoveRecord", "hold_lock",
           "lock_holder", "read_control", "state_limit", "write_atomic", "write_control"]

STATE = "execution-state.json"
LOCK = "execution.lock"
CONTROL = "execution-control.json"
STATUSES = ("submitted", "finished", "cancelled", "failed")
RUN_STATUSES = ("running", "done", "failed", "cancelled", "stopped")
CONTROL_MAX_BYTES = 4096


def state_limit(moves: int) -> int:
    """The largest state file a plan of ``moves`` partitions may have: 1 MiB, and 1 KiB a
    partition (a record takes about 120 bytes; runs and throttles stay small)."""
    return (1 << 20) + 1024 * moves


class Locked(Exception):
    """Another execution of the plan holds its lock; the message names its pid."""


class BadState(ValueError):
    """The state file cannot be used (module doc); the message is one line naming it."""


def write_atomic(path: str, data: bytes) -> None:
    """Replace ``path`` with ``data`` so that a reader, or a crash, sees the old or the new file."""
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    dir_fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


@contextlib.contextmanager
def hold_lock(plan_dir: str) -> Iterator[None]:
    """The plan's execution lock, for the ``with`` block; :class:`Locked` when it is taken."""
    path = os.path.join(plan_dir, LOCK)
    fd = _open_lock(path, os.O_RDWR | os.O_CREAT)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise Locked(f"another execution of this plan is running (pid {lock_holder(plan_dir) or '?'})") from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        yield
    finally:
        os.close(fd)   # closing drops the lock


def lock_holder(plan_dir: str) -> int | None:
    """The pid of the running execution of the plan, or None when none runs."""
    path = os.path.join(plan_dir, LOCK)
    try:
        fd = _open_lock(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            text = os.read(fd, 32).decode(errors="replace").strip()
            return int(text) if text.isdigit() else -1
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def _open_lock(path: str, flags: int) -> int:
    """The lock file, never through a symbolic link and only a regular file (module doc);
    :class:`BadState` otherwise."""
    try:
        return open_regular(path, flags, 0o644, nofollow=True)
    except NotARegularFile as exc:
        raise BadState(f"{exc}: remove it (the execution lock must be a plain file)") from None


def write_control(plan_dir: str, request: dict[str, Any]) -> None:
    write_atomic(os.path.join(plan_dir, CONTROL), (json.dumps(request) + "\n").encode())


def read_control(plan_dir: str) -> dict[str, Any] | None:
    """The pending request for the running execution, removed as it is read."""
    path = os.path.join(plan_dir, CONTROL)
    try:
        _, raw = read_regular(path, CONTROL_MAX_BYTES, nofollow=True)
        data = json.loads(raw)
    except FileNotFoundError:
        return None
    except (OSError, ValueError):      # a link, a FIFO, too large, not JSON: dropped
        data = None
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    return data if isinstance(data, dict) else None


@dataclass(slots=True)
class MoveRecord:
    status: str
    submissions: int = 0
    submitted_at: float | None = None
    finished_at: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"status": self.status, "submissions": self.submissions,
                "submitted_at": self.submitted_at, "finished_at": self.finished_at}


def _name(key: tuple[str, int]) -> str:
    return f"{key[0]}-{key[1]}"


def _key(name: str) -> tuple[str, int]:
    topic, _, part = name.rpartition("-")
    if not topic or not part.isdigit():
        raise ValueError(f"{name[:100]!r} is not a topic-partition")
    return topic, int(part)


def _need(ok: bool, why: str) -> None:
    if not ok:
        raise ValueError(why)


def _count(value: Any, least: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= least


def _time(value: Any) -> bool:
    return value is None or (isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value))


def _list_of(value: Any, ok: Any, what: str) -> list[Any]:
    _need(isinstance(value, list) and all(ok(v) for v in value), f"{what} has the wrong type")
    return list(value)


def _record(name: str, r: Any) -> MoveRecord:
    _need(isinstance(r, dict) and set(r) <= {"status", "submissions", "submitted_at", "finished_at"},
          f"moves[{name[:100]!r}] is not a move record")
    _need(r.get("status") in STATUSES, f"moves[{name[:100]!r}]: status must be one of {', '.join(STATUSES)}")
    _need(_count(r.get("submissions", 0), 0) and _time(r.get("submitted_at")) and _time(r.get("finished_at")),
          f"moves[{name[:100]!r}]: submissions and times have the wrong type")
    return MoveRecord(r["status"], r.get("submissions", 0), r.get("submitted_at"), r.get("finished_at"))


@dataclass
class ExecutionState:
    """The state file's content; every ``mark_*`` writes it (module doc)."""

    path: str
    plan_sha256: str
    status: str = "running"
    throttle: int | None = None
    throttled_brokers: set[int] = field(default_factory=set)
    throttled_topics: set[str] = field(default_factory=set)
    moves: dict[tuple[str, int], MoveRecord] = field(default_factory=dict)
    peak_moves_per_broker: dict[int, int] = field(default_factory=dict)
    throttles_used: list[int] = field(default_factory=list)
    leader_election: dict[str, Any] | None = None
    runs: list[dict[str, Any]] = field(default_factory=list)

    # ---- reading and writing ----------------------------------------------------------
    @classmethod
    def load(cls, plan_dir: str, plan_sha256: str | None = None,
             keys: Collection[tuple[str, int]] | None = None) -> ExecutionState | None:
        """The state file of ``plan_dir``, or None when there is none. With ``plan_sha256`` it
        must belong to that plan, with ``keys`` name only those partitions; :class:`BadState`
        otherwise (module doc)."""
        path = os.path.join(plan_dir, STATE)
        limit = state_limit(len(keys) if keys is not None else 1 << 16)
        try:
            _, raw = read_regular(path, limit, nofollow=True)
        except FileNotFoundError:
            return None
        except NotARegularFile as exc:
            raise BadState(f"execution state {exc}") from None
        except OSError as exc:
            raise BadState(f"cannot read {path}: {exc.strerror or exc}") from None
        try:
            data = json.loads(raw)
        except (ValueError, RecursionError) as exc:
            raise BadState(f"{path} is not valid JSON: {str(exc)[:200]}") from None
        try:
            state = cls._parse(path, data)
        except (KeyError, TypeError, ValueError) as exc:
            raise BadState(f"{path}: not an execution state file ({type(exc).__name__}: {str(exc)[:200]})") from None
        if plan_sha256 is not None and state.plan_sha256 != plan_sha256:
            raise BadState(f"{path} belongs to another plan (sha256 {state.plan_sha256[:80]}, this plan "
                           f"{plan_sha256}): move it away")
        if keys is not None:
            outside = sorted(set(state.moves) - set(keys))
            if outside:
                names = ", ".join(_name(k) for k in outside[:5]) + (" ..." if len(outside) > 5 else "")
                raise BadState(f"{path} names {len(outside)} partition(s) outside the plan: {names}")
        return state

    @classmethod
    def _parse(cls, path: str, data: Any) -> ExecutionState:
        """Every field checked; TypeError, KeyError or ValueError name the first that is wrong."""
        _need(isinstance(data, dict), "not a JSON object")
        sha = data["plan_sha256"]
        _need(isinstance(sha, str), "plan_sha256 is not a string")
        status = data["status"]
        _need(status in RUN_STATUSES, f"status must be one of {', '.join(RUN_STATUSES)}")
        throttle = data.get("throttle")
        _need(throttle is None or _count(throttle, 1), "throttle must be a positive whole number or null")
        moves = data.get("moves", {})
        _need(isinstance(moves, dict), "moves must be an object of partition -> record")
        brokers = _list_of(data.get("throttled_brokers", []), lambda b: _count(b, 0), "throttled_brokers")
        topics = _list_of(data.get("throttled_topics", []), lambda t: isinstance(t, str), "throttled_topics")
        used = _list_of(data.get("throttles_used", []), lambda t: _count(t, 1), "throttles_used")
        peaks = data.get("peak_moves_per_broker", {})
        _need(isinstance(peaks, dict) and all(_count(v, 0) for v in peaks.values()),
              "peak_moves_per_broker must be an object of broker -> count")
        election = data.get("leader_election")
        _need(election is None or isinstance(election, dict), "leader_election must be an object or null")
        runs = _list_of(data.get("runs", []), lambda r: isinstance(r, dict), "runs")
        return cls(path=path, plan_sha256=sha, status=status, throttle=throttle, throttled_brokers=set(brokers),
                   throttled_topics=set(topics), moves={_key(n): _record(n, r) for n, r in moves.items()},
                   peak_moves_per_broker={int(b): v for b, v in peaks.items()}, throttles_used=list(used),
                   leader_election=election, runs=list(runs))

    @classmethod
    def new(cls, plan_dir: str, plan_sha256: str) -> ExecutionState:
        return cls(os.path.join(plan_dir, STATE), plan_sha256)

    def to_dict(self) -> dict[str, Any]:
        return {
            "version": 1,
            "plan_sha256": self.plan_sha256,
            "status": self.status,
            "throttle": self.throttle,
            "throttled_brokers": sorted(self.throttled_brokers),
            "throttled_topics": sorted(self.throttled_topics),
            "peak_moves_per_broker": {str(b): v for b, v in sorted(self.peak_moves_per_broker.items())},
            "throttles_used": self.throttles_used,
            "leader_election": self.leader_election,
            "runs": self.runs,
            "moves": {_name(k): r.to_dict() for k, r in sorted(self.moves.items())},
        }

    def save(self) -> None:
        write_atomic(self.path, (json.dumps(self.to_dict(), indent=1) + "\n").encode())

    # ---- changes ------------------------------------------------------------------------
    def with_status(self, status: str) -> list[tuple[str, int]]:
        return sorted(k for k, r in self.moves.items() if r.status == status)

    def mark_submitted(self, keys: Iterable[tuple[str, int]], now: float | None = None) -> None:
        now = time.time() if now is None else now
        for key in keys:
            record = self.moves.get(key) or MoveRecord("submitted")
            record.status = "submitted"
            record.submissions += 1
            record.submitted_at = now
            record.finished_at = None
            self.moves[key] = record
        self.save()

    def mark(self, keys: Iterable[tuple[str, int]], status: str, now: float | None = None) -> None:
        if status not in STATUSES:
            raise ValueError(f"unknown move status {status!r}")
        now = time.time() if now is None else now
        for key in keys:
            record = self.moves.setdefault(key, MoveRecord(status))
            record.status = status
            record.finished_at = now
        self.save()

    def forget(self, keys: Iterable[tuple[str, int]]) -> None:
        """Drop the records of ``keys``: not started, whatever the file said (the cluster said so)."""
        for key in keys:
            self.moves.pop(key, None)
        self.save()

    def unsubmit(self, keys: Iterable[tuple[str, int]]) -> None:
        """Take back the count of a submission that failed. The partition stays ``submitted``:
        if Kafka got it after all, a resumed run finds it in flight, not foreign."""
        for key in keys:
            record = self.moves.get(key)
            if record is not None and record.submissions > 0:
                record.submissions -= 1
        self.save()

    def note_throttles(self, throttle: int | None, brokers: Iterable[int], topics: Iterable[str]) -> None:
        self.throttle = throttle
        if throttle is not None and (not self.throttles_used or self.throttles_used[-1] != throttle):
            self.throttles_used.append(throttle)
        self.throttled_brokers |= set(brokers)
        self.throttled_topics |= set(topics)
        self.save()

    def throttles_cleared(self) -> None:
        self.throttled_brokers.clear()
        self.throttled_topics.clear()
        self.save()

    def note_load(self, load: dict[int, int]) -> bool:
        """Raise the peaks; True (and written) when one rose."""
        rose = False
        for b, v in load.items():
            if v > self.peak_moves_per_broker.get(b, 0):
                self.peak_moves_per_broker[b] = v
                rose = True
        if rose:
            self.save()
        return rose

    def finish(self, status: str, **extra: Any) -> None:
        self.status = status
        if self.runs:
            self.runs[-1].update({"ended_at": time.time(), "status": status, **extra})
        self.save()
