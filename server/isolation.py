"""Plug-in isolation: assignments that do not run inline run in worker processes that can
be killed.

Why processes. The event loop must keep serving while an assignor runs. A thread cannot
be stopped: an assignor that hangs keeps its executor thread forever, and a pure-Python
loop holds the GIL the event loop needs (every request then waits for the interpreter's
switch interval). A process can be killed, has its own interpreter, and can be given a
memory ceiling. So :class:`AssignorPool` is a :class:`concurrent.futures.Executor` whose
calls run in worker processes:

- **Deadline.** Cancelling a running call kills its worker. The request handler waits
  with ``asyncio.wait_for(loop.run_in_executor(...), timeoutMs)``; when the deadline
  passes, asyncio cancels the call, the worker is killed (SIGKILL) and the client gets
  REQUEST_TIMED_OUT. A new worker takes its place. Each worker is the leader of its own
  process group and the kill (at the deadline, on retirement, at shutdown) goes to the
  group, so a process a plug-in forked dies with it. A worker is also the reaper of its
  orphans (Linux's ``PR_SET_CHILD_SUBREAPER``): a child that leaves the group (``setsid``, a
  double fork, ``Popen(start_new_session=True)``) stays its descendant, and the kill walks
  ``/proc`` for every descendant first; a worker holds no file descriptor but
  its standard streams and its socket (the zygote's control socket is closed in it and
  close-on-exec in the zygote), and the server shuts its end of a killed worker's socket,
  so that no descendant can keep a slot busy.
- **Memory.** Each worker's address space is capped (``RLIMIT_AS`` =
  ``replica.assignor.worker.max.memory.bytes``): a plug-in that allocates without bound
  gets ``MemoryError``, which becomes REPLICA_ASSIGNOR_FAILED, and the worker is retired.
- **Crashes.** A worker that dies (segfault, ``os._exit``) fails its call with
  REPLICA_ASSIGNOR_FAILED and is replaced. Output is validated in the worker
  (``assignors.place``) before it is sent back, so what crosses the pipe is bounded by
  the request (partitions x replication factor).
- **Output.** A plug-in's ``print`` goes to the server's stderr, never into its JSON log
  stream on stdout.

How workers start. Importing the server's modules takes about half a second, too slow to
pay on every kill. One *zygote* process (started with ``sys.executable``, so no ``fork``
of the multi-threaded server) imports everything once, builds the assignor, and then
forks workers on demand (a few milliseconds each); each worker's socket is handed to the
server over the zygote's control socket (``SCM_RIGHTS``). The zygote is single-threaded,
so forking it is safe.

Calls. ``submit(fn, *args)`` pickles ``fn`` (by reference: a module-level function) and
its arguments, which must be plain values: the request handler submits ``run(job)`` of a
``PlacementJob`` (server/handlers/create_replica_assignment.py), never the server's state;
it answers with an ``Outcome``: the encoded response body (bytes, not the assignment's
integers), a typed error, or a malformed request body. Pickling has
no side effect on what it pickles; the cluster view's read-only maps travel as dicts and
come back read-only. A worker's assignor is its own (:func:`worker_assignor`), built once
in the zygote from ``replica.assignor.class.name`` and inherited by every fork.
"""

from __future__ import annotations

import contextlib
import functools
import io
import os
import pickle
import queue
import signal
import socket
import struct
import subprocess
import sys
import threading
from collections.abc import Callable
from concurrent.futures import Executor, Future
from types import MappingProxyType
from typing import Any

import structlog

from kafka_replica_assignor.assignors import AssignmentError, ReplicaAssignor, ReplicaAssignorError, create_assignor
from kafka_replica_assignor.protocol.frame import recv_exactly

log = structlog.get_logger("replica_assignor")

_LEN = struct.Struct(">Q")
ZYGOTE_START_TIMEOUT_S = 60.0


# -- framing over a stream socket ------------------------------------------------------
# (an 8-byte length, then the payload; the exact reads are kafka_replica_assignor.protocol.frame's, ConnectionError
# when the peer closes first)
def _send(sock: socket.socket, payload: bytes) -> None:
    sock.sendall(_LEN.pack(len(payload)))
    sock.sendall(payload)


def _recv(sock: socket.socket) -> bytes:
    (size,) = _LEN.unpack(recv_exactly(sock, _LEN.size))
    return recv_exactly(sock, size)


# -- pickling ---------------------------------------------------------------------------
class _Pickler(pickle.Pickler):
    """Standard pickling, plus the read-only maps of a cluster view (which pickle cannot copy)."""

    def reducer_override(self, obj: Any) -> Any:
        if type(obj) is MappingProxyType:
            return _mappingproxy, (dict(obj),)
        return NotImplemented


def _mappingproxy(items: dict[Any, Any]) -> MappingProxyType[Any, Any]:
    return MappingProxyType(items)


def _dumps(obj: Any) -> bytes:
    buf = io.BytesIO()
    _Pickler(buf, pickle.HIGHEST_PROTOCOL).dump(obj)
    return buf.getvalue()


# the plain values a placement job answers with (kafka_replica_assignor.server.handlers.create_replica_assignment.run)
_REPLY_VALUES = frozenset({("kafka_replica_assignor.server.handlers.create_replica_assignment", "Outcome"),
                           ("kafka_replica_assignor.protocol.frame", "MalformedRequest")})


class _ReplyUnpickler(pickle.Unpickler):
    """What the server accepts back from a worker: plain data and the domain's errors.
    A plug-in runs in the worker; nothing it sends can make the server import or call
    anything else."""

    def find_class(self, module: str, name: str) -> Any:
        if module == "kafka_replica_assignor.assignors.errors" or (module, name) in _REPLY_VALUES:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"a worker may not send {module}.{name}")


def _loads_reply(data: bytes) -> Any:
    return _ReplyUnpickler(io.BytesIO(data)).load()


@functools.cache
def worker_assignor(name: str) -> ReplicaAssignor:
    """The assignor ``name`` of the process running placements off the event loop, built
    on first use and kept. Process-wide by nature: in the zygote it is built before any
    fork, so every worker has it ready; in the server process it is the one the server
    builds at start-up (kafka_replica_assignor.server.app), which placements off the loop in
    threads (``replica.assignor.isolation=thread``) use too."""
    return create_assignor(name)


def _portable(exc: BaseException) -> BaseException:
    """An exception the server can unpickle and map to an error code: the nearest class
    of ``kafka_replica_assignor.assignors.errors`` with the same message, else REPLICA_ASSIGNOR_FAILED."""
    if isinstance(exc, AssignmentError):
        for cls in type(exc).__mro__:
            if cls.__module__ == "kafka_replica_assignor.assignors.errors":
                return cls(exc.message)  # type: ignore[no-any-return]  # a class of kafka_replica_assignor.assignors.errors
    return ReplicaAssignorError(f"assignor failed: {type(exc).__name__}: {exc}")


# -- the zygote and its workers (child side) -------------------------------------------
def zygote_main() -> None:
    """Entry point of the zygote process (``python -c`` with the control socket's fd)."""
    ctrl = socket.socket(fileno=int(sys.argv[1]))
    ctrl.set_inheritable(False)  # Popen's pass_fds made it inheritable: no program a plug-in runs gets it
    os.dup2(2, 1)  # a plug-in's print() must not reach the server's stdout (its JSON logs)
    sys.stdout = sys.stderr
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the whole group: the server decides
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # workers are reaped automatically
    try:
        init = pickle.loads(_recv(ctrl))
    except (EOFError, ConnectionError):
        return
    try:
        import importlib

        for module in init["preload"]:
            importlib.import_module(module)
        worker_assignor(init["assignor"])
    except BaseException as exc:  # noqa: BLE001 - reported to the server, which refuses to start
        _send(ctrl, pickle.dumps(("error", f"{type(exc).__name__}: {exc}")))
        return
    _send(ctrl, pickle.dumps(("ready", os.getpid())))
    while True:
        try:
            _recv(ctrl)  # a fork request
        except (EOFError, OSError):
            return
        ours, theirs = socket.socketpair()
        pid = os.fork()
        if pid == 0:
            try:
                # its own process group, so that a kill reaches whatever a plug-in forks too
                os.setpgid(0, 0)
                # and the reaper of its orphans: a plug-in's child that leaves the group (setsid,
                # a double fork) stays its descendant, so the kill finds it (kill_descendants)
                become_subreaper()
                ctrl.close()
                ours.close()
                _close_fds_except(theirs.fileno())
                signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                _worker_loop(theirs, init["memory_limit"])
            finally:
                os._exit(0)
        with contextlib.suppress(OSError):  # also here: the group exists before the server can kill it
            os.setpgid(pid, pid)
        theirs.close()
        socket.send_fds(ctrl, [_LEN.pack(pid)], [ours.fileno()])
        ours.close()


_PR_SET_CHILD_SUBREAPER = 36


def become_subreaper() -> None:
    """Linux's PR_SET_CHILD_SUBREAPER for this process (nothing elsewhere)."""
    with contextlib.suppress(OSError, AttributeError):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (/proc's parent links; on a subreaper, orphans included)."""
    children: dict[int, list[int]] = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return []
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                state, ppid = f.read().rsplit(b")", 1)[1].split()[:2]
        except (OSError, ValueError, IndexError):
            continue
        if state != b"Z":  # a zombie is dead already
            children.setdefault(int(ppid), []).append(int(name))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), ()):
            found.append(child)
            todo.append(child)
    return found


def kill_descendants(pid: int) -> None:
    """SIGKILL what a worker started, wherever it went (its session or group), while the worker
    still lives to keep the orphans its own; again until nothing is left (a fork in between)."""
    for _ in range(10):
        found = descendants(pid)
        if not found:
            return
        for child in found:
            with contextlib.suppress(ProcessLookupError, PermissionError, OSError):
                os.kill(child, signal.SIGKILL)


def _close_fds_except(keep: int) -> None:
    """A worker holds its standard streams and its own socket, nothing the zygote had open."""
    try:
        fds = sorted(int(name) for name in os.listdir("/proc/self/fd"))
    except OSError:
        fds = list(range(3, 1024))
    for fd in fds:
        if fd > 2 and fd != keep:
            with contextlib.suppress(OSError):
                os.close(fd)


def _worker_loop(sock: socket.socket, memory_limit: int) -> None:
    if memory_limit:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (memory_limit, memory_limit))
    while True:
        try:
            data = _recv(sock)
        except (EOFError, OSError):
            return
        retire = False
        try:
            fn, args, kwargs = pickle.loads(data)
            reply = (True, fn(*args, **kwargs))
        except BaseException as exc:  # noqa: BLE001 - a plug-in's failure is an error response
            if isinstance(exc, MemoryError) or isinstance(exc.__cause__, MemoryError):
                # the framework wraps a plug-in's MemoryError; either way this worker is spent
                reply, retire = (False, ReplicaAssignorError(
                    f"assignor ran out of memory (limit {memory_limit} bytes, "
                    f"replica.assignor.worker.max.memory.bytes)")), True
            else:
                reply = (False, _portable(exc))
        try:
            payload = pickle.dumps((*reply, retire), pickle.HIGHEST_PROTOCOL)
        except BaseException as exc:  # noqa: BLE001
            payload = pickle.dumps((False, ReplicaAssignorError(
                f"assignor result cannot be sent back: {type(exc).__name__}: {exc}"), True))
            retire = True
        try:
            _send(sock, payload)
        except OSError:
            return
        if retire:
            return


# -- the server side -------------------------------------------------------------------
class _Worker:
    """The server's handle on one worker process."""

    def __init__(self, pid: int, sock: socket.socket) -> None:
        self.pid = pid
        self.sock = sock
        self.lock = threading.Lock()
        self.current: Future[Any] | None = None
        self.killed: str | None = None
        self._pidfd: int | None = None
        with contextlib.suppress(OSError, AttributeError):
            self._pidfd = os.pidfd_open(pid)

    def kill(self, reason: str) -> None:
        with self.lock:
            self._kill(reason)

    def kill_if_running(self, call: Future[Any], reason: str) -> bool:
        with self.lock:
            if self.current is not call:
                return False
            self._kill(reason)
            return True

    def _kill(self, reason: str) -> None:
        if self.killed is not None:
            return
        self.killed = reason
        # what a plug-in started, inside the group or not (setsid), then the worker's group
        kill_descendants(self.pid)
        with contextlib.suppress(ProcessLookupError, PermissionError, OSError):
            os.killpg(self.pid, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError, OSError):
            if self._pidfd is not None:
                signal.pidfd_send_signal(self._pidfd, signal.SIGKILL)
            else:
                os.kill(self.pid, signal.SIGKILL)
        # the slot never waits for an EOF that a descendant outside the group (setsid) could hold
        # back: the server's end stops here, and the thread reading it sees the end at once
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        self.sock.close()
        if self._pidfd is not None:
            os.close(self._pidfd)
            self._pidfd = None


class _Call(Future[Any]):
    """A call that can always be cancelled: a running one by killing its worker."""

    def __init__(self) -> None:
        super().__init__()
        self.worker: _Worker | None = None

    def cancel(self) -> bool:
        if super().cancel():
            return True
        worker = self.worker
        if worker is not None and worker.kill_if_running(self, "cancelled"):
            return True
        return False


class _Zygote:
    def __init__(self, init: dict[str, Any]) -> None:
        ours, theirs = socket.socketpair()
        env = dict(os.environ)
        paths = [p or os.getcwd() for p in sys.path]
        env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
        self.proc = subprocess.Popen(
            [sys.executable, "-c", "from kafka_replica_assignor.server.isolation import zygote_main; zygote_main()", str(theirs.fileno())],
            pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL, env=env, close_fds=True)
        theirs.close()
        self.sock = ours
        self.lock = threading.Lock()
        try:
            ours.settimeout(ZYGOTE_START_TIMEOUT_S)
            _send(ours, pickle.dumps(init))
            status, detail = pickle.loads(_recv(ours))
            ours.settimeout(None)
        except (OSError, EOFError) as exc:
            self.close()
            raise RuntimeError(f"assignor zygote did not start: {exc}") from None
        if status != "ready":
            self.close()
            raise RuntimeError(f"assignor worker cannot load the assignor: {detail}")

    def fork(self) -> _Worker:
        with self.lock:
            _send(self.sock, b"f")
            msg, fds, _flags, _addr = socket.recv_fds(self.sock, _LEN.size, 1)
            if not fds:
                raise EOFError("the zygote closed its control socket")
            msg = recv_exactly(self.sock, _LEN.size, msg)
        (pid,) = _LEN.unpack(msg)
        return _Worker(pid, socket.socket(fileno=fds[0]))

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def close(self) -> None:
        self.sock.close()
        try:
            self.proc.wait(2.0)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


class AssignorPool(Executor):
    """Runs submitted calls in killable worker processes (see the module docstring)."""

    def __init__(self, assignor_name: str, *, workers: int, memory_limit: int = 0,
                 preload: tuple[str, ...] = ("kafka_replica_assignor.server.handlers.create_replica_assignment",),
                 on_restart: Callable[[str], None] | None = None) -> None:
        self.assignor_name = assignor_name
        self.workers = workers
        self.memory_limit = memory_limit
        self._init = {"assignor": assignor_name, "memory_limit": memory_limit, "preload": tuple(preload)}
        self._on_restart = on_restart or (lambda reason: None)
        self._jobs: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._lock = threading.Lock()  # short sections only: submit() takes it on the event loop
        self._zygote_lock = threading.Lock()  # held while a zygote starts (half a second)
        self._zygote: _Zygote | None = None
        self._threads: list[threading.Thread] = []
        self._live: set[_Worker] = set()
        self._shutdown = False

    # -- life cycle ----------------------------------------------------------------------
    def start(self) -> None:
        """Start the zygote and one worker per slot; blocks until they are ready
        (run it off the event loop). Without it, they start on first use."""
        self._ensure_threads()
        self._ensure_zygote()
        ready = [threading.Event() for _ in range(self.workers)]
        for event in ready:
            self._jobs.put(("warm", event))
        for event in ready:
            event.wait(ZYGOTE_START_TIMEOUT_S)

    def _ensure_threads(self) -> None:
        with self._lock:
            if self._threads or self._shutdown:
                return
            for i in range(self.workers):
                t = threading.Thread(target=self._drive, name=f"assignor-worker-{i}", daemon=True)
                t.start()
                self._threads.append(t)

    def _ensure_zygote(self) -> _Zygote:
        with self._zygote_lock:
            if self._shutdown:
                raise RuntimeError("the assignor pool is shut down")
            zygote = self._zygote
            if zygote is None or not zygote.alive:
                if zygote is not None:
                    zygote.close()
                    self._on_restart("zygote_died")
                zygote = _Zygote(self._init)
                with self._lock:
                    stopped = self._shutdown
                    if not stopped:
                        self._zygote = zygote
                if stopped:  # shut down while it started
                    zygote.close()
                    raise RuntimeError("the assignor pool is shut down")
                log.debug("assignor_zygote_started", pid=zygote.proc.pid, assignor=self.assignor_name)
            return zygote

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        if self._shutdown:
            raise RuntimeError("cannot schedule new calls after shutdown")
        self._ensure_threads()
        call = _Call()
        self._jobs.put((call, fn, args, kwargs))
        return call

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        with self._lock:
            if self._shutdown:
                return
            self._shutdown = True
            threads, zygote = list(self._threads), self._zygote
            live = list(self._live)
        if cancel_futures:
            self._cancel_queued()
        for worker in live:
            worker.kill("shutdown")
        for _ in threads:
            self._jobs.put(None)
        if zygote is not None:
            zygote.close()
        if wait:
            for t in threads:
                t.join(5.0)

    def _cancel_queued(self) -> None:
        while True:
            try:
                job = self._jobs.get_nowait()
            except queue.Empty:
                return
            if job is not None and isinstance(job[0], _Call):
                job[0].cancel()

    # -- one thread per worker slot ------------------------------------------------------
    def _spawn(self) -> _Worker:
        try:
            worker = self._ensure_zygote().fork()
        except (OSError, EOFError):
            worker = self._ensure_zygote().fork()  # the zygote died: a new one, once
        with self._lock:
            self._live.add(worker)
        log.debug("assignor_worker_started", pid=worker.pid, assignor=self.assignor_name)
        return worker

    def _retire(self, worker: _Worker) -> None:
        with self._lock:
            self._live.discard(worker)
        worker.kill("retired")
        worker.close()

    def _drive(self) -> None:
        """One worker slot: the next job runs on this slot's worker, started on demand."""
        worker: _Worker | None = None
        while True:
            job = self._jobs.get()
            if job is None:
                break
            if job[0] == "warm":
                worker = self._warm(worker)
                job[1].set()
            else:
                worker = self._run_call(worker, *job)
        if worker is not None:
            self._retire(worker)

    def _warm(self, worker: _Worker | None) -> _Worker | None:
        try:
            return worker if worker is not None else self._spawn()
        except Exception as exc:  # noqa: BLE001
            log.error("assignor_worker_failed_to_start", assignor=self.assignor_name, error=str(exc))
            return None

    def _run_call(self, worker: _Worker | None, call: _Call, fn: Callable[..., Any], args: tuple[Any, ...],
                  kwargs: dict[str, Any]) -> _Worker | None:
        """One call on ``worker`` (started when None); the worker for the next call (None: gone)."""
        if not call.set_running_or_notify_cancel():
            return worker
        try:
            payload = _dumps((fn, args, kwargs))
        except Exception as exc:  # noqa: BLE001
            call.set_exception(ReplicaAssignorError(f"cannot hand the request to an assignor worker: {exc}"))
            return worker
        try:
            if worker is None:
                worker = self._spawn()
        except Exception as exc:  # noqa: BLE001
            call.set_exception(ReplicaAssignorError(f"cannot start an assignor worker: {exc}"))
            return worker
        with worker.lock:
            worker.current = call
        call.worker = worker
        try:
            _send(worker.sock, payload)
            reply = _recv(worker.sock)
        except (OSError, EOFError) as exc:
            self._lost(worker, call, exc)
            return None
        with worker.lock:
            worker.current = None
        call.worker = None
        try:
            ok, value, retire = _loads_reply(reply)
        except Exception as exc:  # noqa: BLE001
            ok, value, retire = False, ReplicaAssignorError(
                f"assignor {self.assignor_name} returned something that is not an assignment: {exc}"), True
        if retire:
            self._retire(worker)
            worker = None
            self._on_restart("retired")
        if ok:
            call.set_result(value)
        else:
            call.set_exception(value)
        return worker

    def _lost(self, worker: _Worker, call: _Call, exc: BaseException) -> None:
        """The worker died or was killed (deadline, shutdown) during ``call``."""
        with worker.lock:
            worker.current = None
        reason = worker.killed or "died"
        self._retire(worker)
        self._on_restart("timeout" if reason == "cancelled" else reason)
        if reason == "cancelled":
            log.warning("assignor_worker_killed", reason="deadline passed", assignor=self.assignor_name)
        elif reason != "shutdown":
            log.error("assignor_worker_died", assignor=self.assignor_name, error=str(exc) or type(exc).__name__)
        if not call.done():
            call.set_exception(ReplicaAssignorError(
                f"assignor {self.assignor_name} worker process "
                f"{'was stopped' if reason in ('cancelled', 'shutdown') else 'died'} during the call"))
