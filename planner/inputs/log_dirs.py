"""Partition sizes from ``kafka-log-dirs.sh --describe``, merged into a snapshot.

The tool prints two lines of text, then one JSON document::

    Querying brokers for log directories information
    Received log directory information from brokers 0,1,2
    {"version":1,"brokers":[{"broker":0,"logDirs":[{"logDir":"/var/kafka","error":null,
      "partitions":[{"partition":"orders-0","size":123,"offsetLag":0,"isFuture":false}]}]}]}

:func:`parse_log_dirs` accepts the text with or without the leading lines and returns each
partition's size in bytes; :func:`merge_sizes` puts them into a snapshot's
``PartitionEntry.size_bytes`` (replacing what the snapshot said). :func:`parse_placement` reads
the directory of every replica (JBOD, :mod:`kafka_replica_assignor.planner.solving.disks`); :func:`merge_log_dirs` does both.

- A partition is named ``<topic>-<partition>``; topic names may contain ``-``, so the name is
  split at its *last* ``-``.
- A partition's size is the *largest* size reported by its replicas. Moving a replica means
  copying the whole log the new replica must catch up to, which is the leader's; a follower
  that lags behind reports less than that, never more, so the largest report is the closest
  to what a move copies.
- Future replicas (``isFuture``: the copy an intra-broker move is still writing to another log
  directory) are ignored: they are a partial duplicate of a replica already counted.
- A log directory that failed (``error`` not null) reports no partitions and is skipped.

Anything that is not Kafka's format is a :class:`~kafka_replica_assignor.planner.inputs.sources.SourceError` whose one line
says where.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import replace
from itertools import compress, repeat
from operator import itemgetter, not_
from typing import Any

from kafka_replica_assignor.cluster.snapshot import ClusterSnapshot, gc_paused, with_log_dirs
from kafka_replica_assignor.planner.inputs.sources import SourceError

FORMAT = "not the output of kafka-log-dirs.sh --describe"


_DOCUMENT = re.compile(r"^[ \t\r]*\{", re.MULTILINE)
_DECODER = json.JSONDecoder()


def _document(text: str, where: str) -> Any:
    """The JSON document: the first line that opens an object starts it, past any lines of
    text the tool printed before it; only white space may follow it."""
    start = _DOCUMENT.search(text)
    if start is None:
        raise SourceError(f"{where}: {FORMAT} (no JSON document found)")
    try:
        with gc_paused():
            data, end = _DECODER.raw_decode(text, start.end() - 1)
    except json.JSONDecodeError as exc:
        raise SourceError(f"{where}: {FORMAT} (not valid JSON: {exc})") from None
    if text[end:].strip():
        raise SourceError(f"{where}: {FORMAT} (text after the JSON document)")
    return data


def _list(value: Any, where: str, key: str) -> list[Any]:
    items = value.get(key) if isinstance(value, Mapping) else None
    if not isinstance(items, list):
        raise SourceError(f"{where}: {FORMAT} (no '{key}' list)")
    return items


def _by_partition(largest: dict[str, int], where: str) -> dict[tuple[str, int], int]:
    """``largest`` keyed by ``(topic, partition)``: each name split at its last ``-``."""
    parts = list(map(str.rpartition, largest, repeat("-")))
    topics = list(map(itemgetter(0), parts))
    numbers = list(map(itemgetter(2), parts))
    if not (all(topics) and all(map(itemgetter(1), parts)) and all(map(str.isdigit, numbers))
            and all(map(str.isascii, numbers))):
        bad = next(name for name, topic, number in zip(largest, topics, numbers, strict=True)
                   if not topic or not number.isdigit() or not number.isascii())
        raise SourceError(f"{where}: partition must be '<topic>-<partition>', got {bad!r}")
    keys = list(zip(topics, map(int, numbers), strict=True))
    sizes = dict(zip(keys, largest.values(), strict=True))
    if len(sizes) < len(largest):   # one partition under two names ('t-1', 't-01'): the larger
        sizes = {}
        for key, size in zip(keys, largest.values(), strict=True):
            sizes[key] = max(size, sizes.get(key, 0))
    return sizes


Columns = tuple[list[str], list[int], list[bool]]


def _columns(replicas: list[Any]) -> Columns | None:
    """Names, sizes and future flags of one log directory's replicas, when every entry is a
    plain, valid one (checked over whole columns); else ``None``."""
    if set(map(type, replicas)) != {dict}:
        return None
    names: list[Any] = list(map(dict.get, replicas, repeat("partition")))
    sizes: list[Any] = list(map(dict.get, replicas, repeat("size")))
    futures: list[Any] = list(map(dict.get, replicas, repeat("isFuture"), repeat(False)))
    if set(map(type, names)) != {str} or set(map(type, sizes)) != {int} or min(sizes) < 0:
        return None
    if not set(map(type, futures)) <= {bool}:
        return None
    return names, sizes, futures


def _checked_columns(replicas: list[Any], where: str) -> Columns:
    """:func:`_columns` entry by entry, naming the first bad entry."""
    names: list[str] = []
    sizes: list[int] = []
    futures: list[bool] = []
    for k, replica in enumerate(replicas):
        here = f"{where}.partitions[{k}]"
        if not isinstance(replica, Mapping):
            raise SourceError(f"{here}: {FORMAT} (not an object)")
        name = replica.get("partition")
        if not isinstance(name, str):
            raise SourceError(f"{here}: partition must be a string '<topic>-<partition>', got {name!r}")
        size = replica.get("size")
        if isinstance(size, bool) or not isinstance(size, int) or size < 0:
            raise SourceError(f"{here}: size must be an integer >= 0, got {size!r}")
        future = replica.get("isFuture", False)
        if not isinstance(future, bool):
            raise SourceError(f"{here}: isFuture must be true or false, got {future!r}")
        names.append(name)
        sizes.append(size)
        futures.append(future)
    return names, sizes, futures


def _largest(names: list[str], sizes: list[int]) -> dict[str, int]:
    """The largest size reported under each name."""
    largest: dict[str, int] = {}
    largest_get = largest.get
    for name, size in zip(names, sizes, strict=True):
        if size >= largest_get(name, 0):
            largest[name] = size
    return largest


def _walk(text: str, where: str) -> Iterator[tuple[int, str | None, list[str], list[int]]]:
    """Every log directory's ``(broker, directory, names, sizes)``, future replicas left out."""
    data = _document(text, where)
    for i, broker in enumerate(_list(data, where, "brokers")):
        here = f"{where}: brokers[{i}]"
        broker_id = broker.get("broker") if isinstance(broker, Mapping) else None
        if isinstance(broker_id, bool) or not isinstance(broker_id, int):
            raise SourceError(f"{here}: {FORMAT} (no integer 'broker')")
        for j, log_dir in enumerate(_list(broker, here, "logDirs")):
            in_dir = f"{here}.logDirs[{j}]"
            failed = isinstance(log_dir, Mapping) and log_dir.get("error") is not None
            if failed and not log_dir.get("partitions"):
                continue
            replicas = _list(log_dir, in_dir, "partitions")
            name = log_dir.get("logDir")
            path = name if isinstance(name, str) and name.startswith("/") and not failed else None
            if not replicas:
                yield broker_id, path, [], []
                continue
            dir_names, dir_sizes, futures = _columns(replicas) or _checked_columns(replicas, in_dir)
            if any(futures):
                yield (broker_id, path, list(compress(dir_names, map(not_, futures))),
                       list(compress(dir_sizes, map(not_, futures))))
            else:
                yield broker_id, path, dir_names, dir_sizes


def parse_log_dirs(text: str, where: str = "log dirs") -> dict[tuple[str, int], int]:
    """The size in bytes of every partition the output reports, by ``(topic, partition)``."""
    with gc_paused():
        names: list[str] = []
        sizes: list[int] = []
        for _, _, dir_names, dir_sizes in _walk(text, where):
            names.extend(dir_names)
            sizes.extend(dir_sizes)
        return _by_partition(_largest(names, sizes), where)


Placement = dict[tuple[str, int], dict[int, str]]


def parse_placement(text: str, where: str = "log dirs") -> tuple[Placement, dict[int, list[str]]]:
    """Where each replica lives: ``(topic, partition) -> broker -> directory``, and each
    broker's directories (in the tool's order, those without replicas too; failed ones left
    out). The input of :func:`kafka_replica_assignor.cluster.snapshot.with_log_dirs`."""
    placement: Placement = {}
    dirs: dict[int, list[str]] = {}
    with gc_paused():
        for broker, path, names, _ in _walk(text, where):
            if path is None:
                continue
            dirs.setdefault(broker, []).append(path)
            for key in _by_partition(dict.fromkeys(names, 0), where):
                placement.setdefault(key, {})[broker] = path
    return placement, dirs


def merge_sizes(snapshot: ClusterSnapshot, sizes: Mapping[tuple[str, int], int],
               where: str = "log dirs") -> ClusterSnapshot:
    """``snapshot`` with ``size_bytes`` replaced wherever ``sizes`` knows the partition.

    Partitions the sizes do not mention keep their size; sizes of partitions the snapshot does
    not hold (deleted since, or another cluster's) are ignored. Sizes that match none of the
    snapshot's partitions are refused: they describe another cluster.
    """
    matched = 0
    partitions = []
    for p in snapshot.partitions:
        size = sizes.get((p.topic, p.partition))
        if size is None:
            partitions.append(p)
            continue
        matched += 1
        partitions.append(p if size == p.size_bytes else
                          replace(p, size_bytes=size))
    if snapshot.partitions and not matched:
        raise SourceError(f"{where}: names none of the cluster's {len(snapshot.partitions)} partitions")
    return ClusterSnapshot(snapshot.brokers, tuple(partitions))


def read_log_dirs_text(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise SourceError(f"cannot read log dirs {path}: {getattr(exc, 'strerror', None) or exc}") from None


def read_log_dirs(path: str) -> dict[tuple[str, int], int]:
    """:func:`parse_log_dirs` of a file."""
    return parse_log_dirs(read_log_dirs_text(path), path)


def merge_log_dirs(snapshot: ClusterSnapshot, text: str, where: str = "log dirs") -> ClusterSnapshot:
    """``snapshot`` with the sizes (:func:`merge_sizes`) and the log directories of every
    replica and broker the output reports (:func:`parse_placement`)."""
    sized = merge_sizes(snapshot, parse_log_dirs(text, where), where)
    placement, dirs = parse_placement(text, where)
    return with_log_dirs(sized, placement, dirs)
