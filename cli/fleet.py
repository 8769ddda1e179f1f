"""``balance --fleet`` before Spark starts: the fleet's files checked in a moment, and the local
Spark driver kept on the loopback address.

A Spark session takes tens of seconds to start and a garbage file then fails the run minutes
later: every snapshot file is checked here first (readable, UTF-8, JSON; Parquet by its magic
number), and the first bad one is named in one line (exit 2).
"""

from __future__ import annotations

import json
import os

from kafka_replica_assignor.planner.inputs.sources import SourceError

#: files up to this size are parsed whole; bigger ones by their first bytes
FULL_PARSE_BYTES = 8 * 1024 * 1024
PREFIX_BYTES = 64 * 1024
PARQUET_MAGIC = b"PAR1"

#: what the driver binds to and advertises when no master is given (local mode)
LOOPBACK = "127.0.0.1"


def check_fleet(path: str) -> None:
    """Refuse (:class:`SourceError`) the first snapshot file of ``path`` (a directory or one
    file) that cannot be a snapshot: unreadable, not UTF-8, not JSON (a JSON object per line
    for ``.jsonl``/``.ndjson``), or a ``.parquet`` without Parquet's magic number."""
    if os.path.isdir(path):
        names = sorted(os.listdir(path))
        files = [os.path.join(path, n) for n in names
                 if n.endswith((".json", ".jsonl", ".ndjson", ".parquet")) and not n.startswith((".", "_"))]
    else:
        files = [path]
    for file in files:
        _check_file(file)


def _check_file(path: str) -> None:
    if os.path.isdir(path):
        return  # a Parquet dataset directory: Spark reads it
    try:
        size = os.path.getsize(path)
        with open(path, "rb") as f:
            head = f.read(FULL_PARSE_BYTES if size <= FULL_PARSE_BYTES else PREFIX_BYTES)
    except OSError as exc:
        raise SourceError(f"--fleet: cannot read {path}: {exc.strerror or exc}") from None
    if path.endswith(".parquet"):
        if not head.startswith(PARQUET_MAGIC):
            raise SourceError(f"--fleet: {path} is not a Parquet file")
    elif size > FULL_PARSE_BYTES:
        _check_json_prefix(path, head.decode("utf-8", errors="ignore"))
    else:
        try:
            text = head.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise SourceError(f"--fleet: {path} is not UTF-8 text ({exc.reason} at byte {exc.start})") from None
        _check_json(path, text)


def _check_json_prefix(path: str, text: str) -> None:
    """A file too large to parse here: it must at least start like a JSON snapshot."""
    if "\ufffd" in text or not text.lstrip().startswith("{"):
        raise SourceError(f"--fleet: {path} does not start like a JSON snapshot ('{{')")


def _check_json(path: str, text: str) -> None:
    """A small file parsed whole: one JSON object, or one per line (``.jsonl``, ``.ndjson``)."""
    lines = text.splitlines() if path.endswith((".jsonl", ".ndjson")) else [text]
    for number, line in enumerate(lines, 1):
        if not line.strip() and len(lines) > 1:
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            where = f" line {number}" if len(lines) > 1 else ""
            raise SourceError(f"--fleet: {path}{where} is not valid JSON: {exc}") from None
        except RecursionError:
            raise SourceError(f"--fleet: {path} is nested too deeply") from None
        if not isinstance(data, dict):
            raise SourceError(f"--fleet: {path} must hold JSON object(s) (snapshots), got {type(data).__name__}")


def keep_local_driver_on_loopback() -> None:
    """In local mode (no master named through ``PYSPARK_SUBMIT_ARGS`` or ``MASTER``), have the
    Spark driver bind to and advertise 127.0.0.1 (spark.driver.bindAddress, spark.driver.host)
    instead of whatever address the host name resolves to."""
    if "PYSPARK_SUBMIT_ARGS" in os.environ or "MASTER" in os.environ:
        return
    os.environ["PYSPARK_SUBMIT_ARGS"] = (f"--conf spark.driver.host={LOOPBACK} "
                                         f"--conf spark.driver.bindAddress={LOOPBACK} pyspark-shell")
