"""Reading ``cluster.metadata.file`` without stalling the event loop.

Goals
    A refresh of the snapshot file never holds up requests: not when the file is unchanged
    (it is not even read), not when it is large (51 MB: seconds of parsing), not when it is
    huge or invalid (it is refused by size first, and a failed parse costs a child process,
    not the server's memory).

Rules
    - **Size cap.** A file over ``cluster.metadata.file.max.bytes`` is refused before it is
      read (and a file that grows past it while being read is refused too).
    - **When the file changed.** The stamp of a file is ``(device, inode, size, mtime_ns,
      ctime_ns)``. The file is taken as unchanged, without reading it, when its stamp is the
      one of the last read *and* its ``ctime`` is more than :data:`RACY_WINDOW_NS` older than
      the moment that read began. Any write, ``utime``, ``chmod`` or rename moves ``ctime`` to
      the present (and ``ctime`` cannot be set back by a user), so a change after our read has
      a ``ctime`` at or after it, up to the file system's timestamp granularity (2 s on the
      coarsest, FAT): a stamp that recent is "racy" (as git calls it) and proves nothing. Then
      the file is read and its SHA-256 compared with the last one: the same digest is
      unchanged, and nothing is parsed. Only a different digest is parsed.
    - **Where the parse runs.** ``json.loads`` is one C call that holds the GIL for the whole
      document (a thread would stall the loop just as much), so a file over
      :data:`IN_PROCESS_MAX_BYTES` is read, hashed and parsed in a fresh child process
      (``python -c``, only the standard library and :mod:`kafka_replica_assignor.cluster.snapshot` imported, killed
      if the refresh is cancelled, its memory returned when it exits). It sends back plain
      data only (tuples, dicts, ints, strings: a loader that refuses any class reads it), the
      topics in pickled chunks of :data:`PARTITIONS_PER_CHUNK` partitions, so that no single
      step in the server holds the GIL for long. Smaller files are parsed in a thread
      (``json.loads`` of 1 MiB holds the GIL for milliseconds).
    - **Validity.** A snapshot that does not parse, or that lists no broker (every request
      would fail), is refused; the caller keeps its last good view. An unchanged file that was
      refused is not parsed again: the same error is reported.
"""

from __future__ import annotations

import asyncio
import gc
import hashlib
import io
import os
import pickle
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from stat import S_ISREG
from typing import Any

from kafka_replica_assignor.cluster.files import NotARegularFile, check_regular
from kafka_replica_assignor.cluster.snapshot import BrokerEntry, ClusterSnapshot, SnapshotError, gc_paused

DEFAULT_MAX_BYTES = 256 * 1024 * 1024
IN_PROCESS_MAX_BYTES = 1024 * 1024
PARTITIONS_PER_CHUNK = 20_000
RACY_WINDOW_NS = 2_000_000_000
_CHILD = "from kafka_replica_assignor.server.snapshot_file import child_main; child_main()"
_BROKER_FIELDS = tuple(f.name for f in fields(BrokerEntry))


@dataclass(frozen=True, slots=True)
class FileStamp:
    """What ``stat`` says about a file; equal stamps mean nothing visible changed."""

    device: int
    inode: int
    size: int
    mtime_ns: int
    ctime_ns: int

    @classmethod
    def of(cls, st: os.stat_result) -> FileStamp:
        return cls(st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


@dataclass(frozen=True, slots=True)
class SnapshotContent:
    """A parsed snapshot file: its brokers and its topics' assignments."""

    brokers: tuple[BrokerEntry, ...]
    topics: Mapping[str, Mapping[int, tuple[int, ...]]]


def _regular(path: str | Path, st: os.stat_result) -> None:
    try:
        check_regular(path, st)
    except NotARegularFile as exc:
        raise SnapshotError(f"{exc}; the last good view is kept") from None


def too_large(size: int, max_bytes: int) -> SnapshotError:
    return SnapshotError(f"the file is {size} bytes, over cluster.metadata.file.max.bytes={max_bytes}; "
                         f"the last good view is kept")


def read_capped(path: str | Path, max_bytes: int) -> tuple[FileStamp, bytes]:
    """The file's stamp and bytes; :class:`SnapshotError` when it is over ``max_bytes`` or not a
    regular file (opened without blocking: a FIFO would wait for a writer)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(fd)
        _regular(path, st)
        stamp = FileStamp.of(st)
        if stamp.size > max_bytes:
            raise too_large(stamp.size, max_bytes)
        data = f.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise too_large(len(data), max_bytes)
    return stamp, data


def parse(data: bytes) -> SnapshotContent:
    """The snapshot in ``data``; refused when invalid or when it lists no broker."""
    snapshot = ClusterSnapshot.from_json(data)
    if not snapshot.brokers:
        raise SnapshotError("the snapshot lists no brokers (every request would fail)")
    return SnapshotContent(snapshot.brokers, snapshot.assignments())


def load(path: str | Path, max_bytes: int, known_digests: tuple[bytes, ...] = ()) -> tuple[Any, ...]:
    """Read, hash and (unless the digest is one of ``known_digests``) parse: the outcome as
    plain data.

    ``("unchanged", stamp, digest)``, ``("parsed", stamp, digest, brokers, topics)`` or
    ``("error", kind, message, stamp, digest)`` (``kind``: ``"os"`` with an errno, or
    ``"snapshot"``); stamps as tuples, brokers as tuples of :class:`BrokerEntry` fields.
    """
    stamp: tuple[int, ...] | None = None
    digest: bytes | None = None
    try:
        file_stamp, data = read_capped(path, max_bytes)
        stamp = _fields(file_stamp)
        digest = hashlib.sha256(data).digest()
        if digest in known_digests:
            return ("unchanged", stamp, digest)
        content = parse(data)
        del data
    except OSError as exc:
        return ("error", "os", (exc.errno, exc.strerror or str(exc)), stamp, digest)
    except (SnapshotError, ValueError, RecursionError) as exc:
        return ("error", "snapshot", str(exc), stamp, digest)
    brokers = tuple(tuple(getattr(b, name) for name in _BROKER_FIELDS) for b in content.brokers)
    return ("parsed", stamp, digest, brokers, content.topics)


def _fields(stamp: FileStamp) -> tuple[int, ...]:
    return (stamp.device, stamp.inode, stamp.size, stamp.mtime_ns, stamp.ctime_ns)


def child_main() -> None:
    """Entry point of the child process: ``path max_bytes known_digests`` in argv (hex, comma
    separated); the outcome of :func:`load` pickled on stdout, the topics as pickled chunks."""
    path, max_bytes, known = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    outcome = load(path, max_bytes, tuple(bytes.fromhex(d) for d in known.split(",") if d))
    if outcome[0] == "parsed":
        topics = outcome[4]
        chunks, chunk, size = [], [], 0
        for item in topics.items():
            chunk.append(item)
            size += len(item[1])
            if size >= PARTITIONS_PER_CHUNK:
                chunks.append(pickle.dumps(chunk, pickle.HIGHEST_PROTOCOL))
                chunk, size = [], 0
        if chunk:
            chunks.append(pickle.dumps(chunk, pickle.HIGHEST_PROTOCOL))
        outcome = (*outcome[:4], chunks)
    sys.stdout.buffer.write(pickle.dumps(outcome, pickle.HIGHEST_PROTOCOL))
    sys.stdout.buffer.flush()


class _PlainUnpickler(pickle.Unpickler):
    """Reads built-in data only: the child has no reason to send anything else."""

    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(f"snapshot reader sent {module}.{name}, not plain data")


def _plain_loads(data: bytes) -> Any:
    return _PlainUnpickler(io.BytesIO(data)).load()


def _topics_from_chunks(chunks: list[bytes]) -> dict[str, dict[int, tuple[int, ...]]]:
    """In a worker thread: each chunk is one short GIL-holding step, so the loop keeps running.

    Each chunk is loaded with the cyclic collector paused and then passed through one young
    collection (which untracks its tuples of ints): no collection of the older generations is
    triggered here, and a full one holds the GIL for as long as it takes to visit every object
    of the process.
    """
    topics: dict[str, dict[int, tuple[int, ...]]] = {}
    for chunk in chunks:
        with gc_paused():
            topics.update(_plain_loads(chunk))
        gc.collect(0)
    return topics


class SnapshotFile:
    """One snapshot file, read only when it changed (the rules are in the module docstring).

    :meth:`read` returns the new content, ``None`` when the file is unchanged since the last
    content it returned, or raises :class:`OSError` / :class:`SnapshotError` (the caller keeps
    its last good content).
    """

    def __init__(self, path: str | Path, max_bytes: int = DEFAULT_MAX_BYTES, *,
                 in_process_max_bytes: int = IN_PROCESS_MAX_BYTES,
                 racy_window_ns: int = RACY_WINDOW_NS) -> None:
        if max_bytes <= 0:
            raise ValueError(f"maximum snapshot size must be > 0 bytes, got {max_bytes}")
        self.path = Path(path)
        self.max_bytes = max_bytes
        self._in_process_max_bytes = in_process_max_bytes
        self._racy_window_ns = racy_window_ns
        self._stamp: tuple[int, ...] | None = None  # of the file as last read (good or refused)
        self._read_started_ns = 0
        self._digest: bytes | None = None  # of the last good content
        self._refused: tuple[bytes | None, Exception] | None = None  # the file on disk is refused
        self.reads = 0  # times the file was read (and hashed)
        self.parses = 0  # changed files parsed
        self.child_processes = 0

    def describe(self) -> dict[str, Any]:
        return {"max_bytes": self.max_bytes, "reads": self.reads, "parses": self.parses,
                "sha256": self._digest.hex() if self._digest else None}

    async def read(self) -> SnapshotContent | None:
        started_ns = time.time_ns()
        st = await asyncio.to_thread(os.stat, self.path)
        stamp = _fields(FileStamp.of(st))
        if stamp == self._stamp and st.st_ctime_ns < self._read_started_ns - self._racy_window_ns:
            self._read_started_ns = started_ns  # nothing changed since the last read, nor until now
            self._raise_if_refused()
            return None
        if st.st_size > self.max_bytes or not S_ISREG(st.st_mode):
            self._stamp, self._read_started_ns = stamp, started_ns
            try:
                _regular(self.path, st)
                raise too_large(st.st_size, self.max_bytes)
            except SnapshotError as exc:
                self._refused = (None, exc)
                raise
        known = tuple(d for d in (self._digest, self._refused and self._refused[0]) if d)
        self.reads += 1
        if st.st_size <= self._in_process_max_bytes:
            outcome = await asyncio.to_thread(load, self.path, self.max_bytes, known)
        else:
            outcome = await self._load_in_child(known)
        kind = outcome[0]
        if kind == "error":
            _, what, detail, got_stamp, digest = outcome
            error: Exception = OSError(*detail) if what == "os" else SnapshotError(detail)
            if got_stamp is not None:  # the file was there: remember why it is refused
                self._stamp, self._read_started_ns = got_stamp, started_ns
                self._refused = (digest, error)
            raise error
        self._stamp, self._read_started_ns = outcome[1], started_ns
        if kind == "unchanged":
            if outcome[2] == self._digest:
                self._refused = None  # back to the good content
            self._raise_if_refused()
            return None
        _, _, digest, brokers, topics = outcome
        if isinstance(topics, list):
            topics = await asyncio.to_thread(_topics_from_chunks, topics)
        self.parses += 1
        self._digest, self._refused = digest, None
        return SnapshotContent(tuple(BrokerEntry(*b) for b in brokers), topics)

    def _raise_if_refused(self) -> None:
        """The file on disk is the one refused last time: the same refusal (a fresh exception)."""
        if self._refused is not None:
            error = self._refused[1]
            raise type(error)(*error.args)

    async def _load_in_child(self, known: tuple[bytes, ...]) -> tuple[Any, ...]:
        env = dict(os.environ)
        paths = [p or os.getcwd() for p in sys.path]
        env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
        self.child_processes += 1
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-c", _CHILD, str(self.path), str(self.max_bytes), ",".join(d.hex() for d in known),
            stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, env=env)
        try:
            out, err = await proc.communicate()
        except BaseException:  # cancelled (the server stops): the child must not outlive the refresh
            if proc.returncode is None:
                proc.kill()
            await asyncio.shield(proc.wait())
            raise
        if proc.returncode != 0 or not out:
            lines = err.decode("utf-8", "replace").strip().splitlines()
            raise SnapshotError(f"the snapshot reader process exited with {proc.returncode}"
                                + (f": {lines[-1]}" if lines else ""))
        loaded: tuple[Any, ...] = _plain_loads(out)
        return loaded
