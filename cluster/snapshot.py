"""The one cluster snapshot format shared by the server and the planner.

::

    {"brokers":    [{"id": 0, "rack": "/dc1/rack-a", "alive": true, "host": "...", "port": 9092,
                     "capacity_bytes": 4000000000000, "log_dirs": ["/d1", "/d2"],
                     "network_in_capacity": 125000000, "network_out_capacity": 125000000}, ...],
     "partitions": [{"topic": "t", "partition": 0, "replicas": [0, 1, 2],
                     "leader": 0, "isr": [0, 1], "size_bytes": 123,
                     "log_dirs": ["/d1", "/d2", null],
                     "bytes_in_per_s": 52000.5, "bytes_out_per_s": 104001.0}, ...]}

Only ``brokers[].id`` and, for partitions, ``topic``, ``partition`` and ``replicas`` are
required. ``size_bytes`` (a partition's log size on one replica) and ``capacity_bytes`` (a
broker's disk) are integers >= 0 when given. The first replica is the preferred leader. Negative replica ids are KIP-409
placeholders; replica ids missing from ``brokers`` are unknown (dead) brokers. Broker and
replica ids are Kafka's int32; a ``leader`` is one of the replicas, or -1 (none).

Log directories (JBOD), both optional: a broker's ``log_dirs`` lists its directories (absolute
paths, none twice; those holding no replica count too); a partition's ``log_dirs`` names the
directory of each replica, one entry per replica in the order of ``replicas``, ``null`` where
unknown (the shape of Kafka's reassignment JSON, with ``null`` for its ``"any"``). A directory
named by a replica but missing from its broker's list is one of that broker's directories too.
:func:`check_log_dirs` is the one check of a partition's list, shared with the Spark pipeline.

Traffic, all optional, bytes per second as numbers >= 0 (integers or decimals): a partition's
``bytes_in_per_s`` is what producers write to it (its leader receives it, and each follower
receives it again as replication); its ``bytes_out_per_s`` is what consumers read from it, every
group's reads added (its leader sends it; replication to the followers is not included, it
follows from ``bytes_in_per_s`` and the replicas). A broker's ``network_in_capacity`` and
``network_out_capacity`` are its network's limits in the same unit. ``replica-assignor state
--sample-seconds N`` measures them; a snapshot without them plans as before.

Parsing is pure: callers read the file and hand over the decoded JSON.
"""

from __future__ import annotations

import gc
import json
import math
from collections import deque
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, fields, replace
from itertools import chain, repeat
from operator import add, attrgetter, mul
from typing import Any

from kafka_replica_assignor.assignors.model import BrokerMetadata, ClusterView


class SnapshotError(ValueError):
    """The snapshot does not follow the documented format; the message says where."""


INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
NO_LEADER = -1


@dataclass(frozen=True, slots=True)
class BrokerEntry:
    id: int
    rack: str | None = None
    alive: bool = True
    host: str | None = None
    port: int | None = None
    capacity_bytes: int | None = None
    log_dirs: tuple[str, ...] | None = None
    network_in_capacity: float | None = None    # bytes/s
    network_out_capacity: float | None = None   # bytes/s

    @property
    def metadata(self) -> BrokerMetadata:
        return BrokerMetadata(self.id, self.rack)


@dataclass(frozen=True, slots=True)
class PartitionEntry:
    topic: str
    partition: int
    replicas: tuple[int, ...]
    leader: int | None = None
    isr: tuple[int, ...] | None = None
    size_bytes: int | None = None
    log_dirs: tuple[str | None, ...] | None = None   # per replica, parallel to ``replicas``
    bytes_in_per_s: float | None = None    # produced (the leader's in; each follower's replication in)
    bytes_out_per_s: float | None = None   # consumed, every group added (the leader's out)


@dataclass(frozen=True, slots=True)
class ClusterSnapshot:
    brokers: tuple[BrokerEntry, ...]
    partitions: tuple[PartitionEntry, ...] = ()

    def __post_init__(self) -> None:
        ids = [b.id for b in self.brokers]
        if len(set(ids)) != len(ids):
            dup = sorted({i for i in ids if ids.count(i) > 1})
            raise SnapshotError(f"duplicate broker ids: {dup}")
        if _distinct_partitions(self.partitions):
            return
        # slow path: name the first duplicate
        seen: set[tuple[str, int]] = set()
        for p in self.partitions:
            key = (p.topic, p.partition)
            if key in seen:
                raise SnapshotError(f"duplicate partition {p.topic}-{p.partition}")
            seen.add(key)

    # -- views -------------------------------------------------------------------------
    def assignments(self) -> dict[str, dict[int, tuple[int, ...]]]:
        topics: dict[str, dict[int, tuple[int, ...]]] = {}
        for p in self.partitions:
            topics.setdefault(p.topic, {})[p.partition] = p.replicas
        return topics

    def cluster_view(self) -> ClusterView:
        """Alive brokers become placeable; brokers marked not alive become ``offline``."""
        return ClusterView(
            brokers=tuple(b.metadata for b in self.brokers if b.alive),
            offline=tuple(b.metadata for b in self.brokers if not b.alive),
            topics=self.assignments(),
        )

    # -- (de)serialisation -------------------------------------------------------------
    @classmethod
    def from_dict(cls, data: Any) -> ClusterSnapshot:
        if not isinstance(data, Mapping):
            raise SnapshotError("snapshot must be a JSON object with a 'brokers' list")
        raw_brokers = data.get("brokers")
        if not isinstance(raw_brokers, list):
            raise SnapshotError("snapshot needs a 'brokers' list")
        brokers = tuple(_broker(i, b) for i, b in enumerate(raw_brokers))
        raw_parts = data.get("partitions", [])
        if raw_parts is None:
            raw_parts = []
        if not isinstance(raw_parts, list):
            raise SnapshotError("'partitions' must be a list")
        with gc_paused():
            partitions = _partitions_in_bulk(raw_parts)
        if partitions is None:
            # slow path: check entry by entry, naming the first bad one
            partitions = tuple(_partition(i, p) for i, p in enumerate(raw_parts))
        return cls(brokers=brokers, partitions=partitions)

    @classmethod
    def from_json(cls, text: str | bytes) -> ClusterSnapshot:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise SnapshotError(f"not valid JSON: {exc}") from None
        except UnicodeDecodeError as exc:
            raise SnapshotError(f"not valid JSON: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
        except RecursionError:
            raise SnapshotError("not usable JSON: nested too deeply") from None
        return cls.from_dict(data)

    def to_dict(self) -> dict[str, Any]:
        brokers = []
        for b in self.brokers:
            d: dict[str, Any] = {"id": b.id, "rack": b.rack}
            if not b.alive:
                d["alive"] = False
            if b.host is not None:
                d["host"] = b.host
            if b.port is not None:
                d["port"] = b.port
            if b.capacity_bytes is not None:
                d["capacity_bytes"] = b.capacity_bytes
            if b.log_dirs is not None:
                d["log_dirs"] = list(b.log_dirs)
            if b.network_in_capacity is not None:
                d["network_in_capacity"] = b.network_in_capacity
            if b.network_out_capacity is not None:
                d["network_out_capacity"] = b.network_out_capacity
            brokers.append(d)
        parts = []
        for p in self.partitions:
            d = {"topic": p.topic, "partition": p.partition, "replicas": list(p.replicas)}
            if p.leader is not None:
                d["leader"] = p.leader
            if p.isr is not None:
                d["isr"] = list(p.isr)
            if p.size_bytes is not None:
                d["size_bytes"] = p.size_bytes
            if p.log_dirs is not None:
                d["log_dirs"] = list(p.log_dirs)
            if p.bytes_in_per_s is not None:
                d["bytes_in_per_s"] = p.bytes_in_per_s
            if p.bytes_out_per_s is not None:
                d["bytes_out_per_s"] = p.bytes_out_per_s
            parts.append(d)
        return {"brokers": brokers, "partitions": parts}


def with_log_dirs(snapshot: ClusterSnapshot, placement: Mapping[tuple[str, int], Mapping[int, str]],
                  dirs: Mapping[int, Iterable[str]]) -> ClusterSnapshot:
    """``snapshot`` with log directories: ``dirs`` (broker -> its directories) become the
    brokers' ``log_dirs``, ``placement`` (partition -> broker -> directory) the partitions'
    (``None`` for a replica it does not place). Partitions it does not mention keep theirs.
    When no broker has two directories there is nothing to balance between them: ``snapshot``
    is returned as it is, so that plans of such clusters stay exactly as without the read."""
    if not any(len(set(named)) > 1 for named in dirs.values()):
        return snapshot
    brokers = tuple(b if b.id not in dirs else replace(b, log_dirs=tuple(dict.fromkeys(dirs[b.id])))
                    for b in snapshot.brokers)
    parts = []
    for p in snapshot.partitions:
        where = placement.get((p.topic, p.partition))
        if where is None:
            parts.append(p)
            continue
        parts.append(replace(p, log_dirs=tuple(where.get(b) for b in p.replicas)))
    return ClusterSnapshot(brokers, tuple(parts))


def _int(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise SnapshotError(f"{where} must be an integer, got {_short(value)}")
    return value


def _int32(value: Any, where: str) -> int:
    number = _int(value, where)
    if not INT32_MIN <= number <= INT32_MAX:
        raise SnapshotError(f"{where} must be a 32-bit integer (Kafka's ids are int32), got {number}")
    return number


def _short(value: Any) -> str:
    """``repr(value)``, cut to 80 characters: an error message does not grow with the input."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _bytes(value: Any, where: str) -> int:
    count = _int(value, where)
    if count < 0:
        raise SnapshotError(f"{where} must be >= 0, got {count}")
    return count


def _rate(value: Any, where: str) -> float | None:
    """A rate or capacity in bytes per second: ``None`` (not given) or a finite number >= 0."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise SnapshotError(f"{where} must be a number of bytes per second, got {_short(value)}")
    try:
        finite = math.isfinite(value)
    except OverflowError:       # an int beyond a float
        finite = False
    if not finite or value < 0:
        raise SnapshotError(f"{where} must be a finite number >= 0 (bytes per second), got {_short(value)}")
    return value


def _broker(i: int, b: Any) -> BrokerEntry:
    where = f"brokers[{i}]"
    if not isinstance(b, Mapping):
        raise SnapshotError(f"{where} must be an object")
    if "id" not in b:
        raise SnapshotError(f"{where} has no 'id'")
    bid = _int32(b["id"], f"{where}.id")
    if bid < 0:
        raise SnapshotError(f"{where}.id must be >= 0, got {bid}")
    rack = b.get("rack")
    if rack is not None and not isinstance(rack, str):
        raise SnapshotError(f"{where}.rack must be a string or null, got {_short(rack)}")
    if rack == "":
        rack = None
    alive = b.get("alive", True)
    if not isinstance(alive, bool):
        raise SnapshotError(f"{where}.alive must be true or false, got {_short(alive)}")
    host = b.get("host")
    if host is not None and not isinstance(host, str):
        raise SnapshotError(f"{where}.host must be a string, got {_short(host)}")
    port = b.get("port")
    if port is not None:
        port = _int(port, f"{where}.port")
    capacity = b.get("capacity_bytes")
    if capacity is not None:
        capacity = _bytes(capacity, f"{where}.capacity_bytes")
    dirs = b.get("log_dirs")
    if dirs is not None:
        if not isinstance(dirs, list) or not all(isinstance(d, str) for d in dirs):
            raise SnapshotError(f"{where}.log_dirs must be a list of directory paths, got {_short(dirs)}")
        problem = _dir_problem(dirs)
        if problem:
            raise SnapshotError(f"{where}.log_dirs: {problem}")
        dirs = tuple(dirs)
    return BrokerEntry(bid, rack, alive, host, port, capacity, dirs,
                       _rate(b.get("network_in_capacity"), f"{where}.network_in_capacity"),
                       _rate(b.get("network_out_capacity"), f"{where}.network_out_capacity"))


def _dir_problem(dirs: list[Any]) -> str | None:
    """What is wrong with a list of directory paths (None: nothing)."""
    named = [d for d in dirs if d is not None]
    bad = next((d for d in named if not d.startswith("/")), None)
    if bad is not None:
        return f"a log directory must be an absolute path, got {_short(bad)}"
    if len(set(named)) != len(named):
        return f"a log directory listed twice: {_short(sorted({d for d in named if named.count(d) > 1}))}"
    return None


def check_log_dirs(replicas: tuple[int, ...], log_dirs: Any) -> str | None:
    """The one check of a partition's ``log_dirs`` (None: valid): a list as long as
    ``replicas`` of absolute paths or nulls."""
    if not isinstance(log_dirs, (list, tuple)):
        return f"log_dirs must be a list, got {_short(log_dirs)}"
    if len(log_dirs) != len(replicas):
        return f"log_dirs has {len(log_dirs)} entries for {len(replicas)} replicas (one per replica)"
    if not all(d is None or isinstance(d, str) for d in log_dirs):
        return f"log_dirs entries must be directory paths or null, got {_short(list(log_dirs))}"
    bad = next((d for d in log_dirs if d is not None and not d.startswith("/")), None)
    if bad is not None:
        return f"a log directory must be an absolute path, got {_short(bad)}"
    return None


def _partition(i: int, p: Any) -> PartitionEntry:
    where = f"partitions[{i}]"
    if not isinstance(p, Mapping):
        raise SnapshotError(f"{where} must be an object")
    for key in ("topic", "partition", "replicas"):
        if key not in p:
            raise SnapshotError(f"{where} has no '{key}'")
    topic = p["topic"]
    if not isinstance(topic, str) or not topic:
        raise SnapshotError(f"{where}.topic must be a non-empty string")
    part = _int32(p["partition"], f"{where}.partition")
    if part < 0:
        raise SnapshotError(f"{where}.partition must be >= 0")
    reps = p["replicas"]
    if not isinstance(reps, list) or not reps:
        raise SnapshotError(f"{where}.replicas must be a non-empty list")
    replicas = tuple(_int32(r, f"{where}.replicas[]") for r in reps)
    if len(set(replicas)) != len(replicas):
        raise SnapshotError(f"{where} ({topic}-{part}) lists a broker twice: {list(replicas)}")
    leader = p.get("leader")
    if leader is not None:
        leader = _int(leader, f"{where}.leader")
        if leader != NO_LEADER and leader not in replicas:
            raise SnapshotError(f"{where} ({topic}-{part}): leader {leader} is not one of its replicas "
                                f"{list(replicas)[:10]} (use -1 for no leader)")
    isr = p.get("isr")
    if isr is not None:
        if not isinstance(isr, list):
            raise SnapshotError(f"{where}.isr must be a list")
        isr = tuple(_int(r, f"{where}.isr[]") for r in isr)
    size = p.get("size_bytes")
    if size is not None:
        size = _bytes(size, f"{where}.size_bytes")
    dirs = p.get("log_dirs")
    if dirs is not None:
        problem = check_log_dirs(replicas, dirs)
        if problem:
            raise SnapshotError(f"{where} ({topic}-{part}): {problem}")
        dirs = tuple(dirs)
    return PartitionEntry(topic, part, replicas, leader, isr, size, dirs,
                          _rate(p.get("bytes_in_per_s"), f"{where}.bytes_in_per_s"),
                          _rate(p.get("bytes_out_per_s"), f"{where}.bytes_out_per_s"))


# -- bulk parsing ------------------------------------------------------------------------
# At a million partitions, checking entry by entry costs seconds of interpreter overhead. The
# bulk path runs the same checks as :func:`_partition` over whole columns with built-ins (type
# sets, ``all``, ``min``) and builds the entries without calling ``__init__``. It accepts only
# the plain shapes ``json.loads`` produces (``dict``, ``list``, ``str``, ``int``, ``None``):
# anything else, valid or not, goes to the entry-by-entry path, which gives the same result or
# names the first bad entry with the same message. The two paths are compared by
# tests/unit/test_snapshot.py.

_TOPIC = attrgetter("topic")
_PARTITION = attrgetter("partition")
_NONE = type(None)
_INT_OR_NONE = frozenset({int, _NONE})
_LIST_OR_NONE = frozenset({list, _NONE})


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while millions of small objects are built (none of
    them cyclic: a million snapshot entries, a planner rule's lists and tuples): otherwise its
    repeated full passes over the young objects cost a third of the work or more. Restores the
    previous state."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _distinct_partitions(partitions: tuple[PartitionEntry, ...]) -> bool:
    """Whether no (topic, partition) pair repeats for sure; ``False`` leaves the verdict to the
    exact loop in ``ClusterSnapshot.__post_init__``."""
    topics = list(map(_TOPIC, partitions))
    parts = list(map(_PARTITION, partitions))
    if parts and set(map(type, parts)) == {int} and min(parts) >= 0:
        # one int per pair, cheaper to hash than a tuple: topic number * width + partition,
        # distinct for distinct pairs since 0 <= partition < width
        number = {t: i for i, t in enumerate(dict.fromkeys(topics))}
        width = max(parts) + 1
        keys: set[object] = set(map(add, map(mul, map(number.__getitem__, topics), repeat(width)), parts))
    else:
        keys = set(zip(topics, parts, strict=True))
    return len(keys) == len(partitions)


def _partitions_in_bulk(raw: list[Any]) -> tuple[PartitionEntry, ...] | None:
    """The entries of ``raw`` when every one is valid and plainly typed, else ``None``."""
    if not raw:
        return ()
    if set(map(type, raw)) != {dict}:
        return None
    try:
        topics = list(map(dict.__getitem__, raw, repeat("topic")))
        parts = list(map(dict.__getitem__, raw, repeat("partition")))
        reps = list(map(dict.__getitem__, raw, repeat("replicas")))
    except KeyError:
        return None
    # topic: a non-empty str; partition: an int (not a bool) >= 0
    if set(map(type, topics)) != {str} or not all(topics):
        return None
    if set(map(type, parts)) != {int} or min(parts) < 0 or max(parts) > INT32_MAX:
        return None
    # replicas: non-empty lists of ints (not bools), no broker twice (len(set) <= len, so
    # equal sums mean equal lengths everywhere)
    if set(map(type, reps)) != {list} or not all(reps):
        return None
    if set(map(type, chain.from_iterable(reps))) != {int}:
        return None
    if min(map(min, reps)) < INT32_MIN or max(map(max, reps)) > INT32_MAX:
        return None
    if sum(map(len, map(set, reps))) != sum(map(len, reps)):
        return None
    # optional: leader an int or null, size_bytes an int >= 0 or null (``filter`` drops the
    # nulls and zeros), isr a list of ints or null; when every entry has just the three
    # required keys, none is there
    leaders: list[Any]
    sizes: list[Any]
    isrs: list[Any]
    dirs: list[Any] = [None] * len(raw)
    rates_in: list[Any] = dirs
    rates_out: list[Any] = dirs
    if max(map(len, raw)) == 3:
        leaders = sizes = isrs = dirs
    else:
        if any(map(dict.__contains__, raw, repeat("log_dirs"))):
            return None     # JBOD snapshots: checked entry by entry
        leaders = list(map(dict.get, raw, repeat("leader")))
        sizes = list(map(dict.get, raw, repeat("size_bytes")))
        isrs = list(map(dict.get, raw, repeat("isr")))
        if not set(map(type, leaders)) <= _INT_OR_NONE or not set(map(type, sizes)) <= _INT_OR_NONE:
            return None
        if min(filter(None, sizes), default=0) < 0:
            return None
        if not all(leader is None or leader == NO_LEADER or leader in replicas
                   for leader, replicas in zip(leaders, reps, strict=True)):
            return None
        isr_types = set(map(type, isrs))
        if not isr_types <= _LIST_OR_NONE:
            return None
        if list in isr_types:
            if not set(map(type, chain.from_iterable(filter(None, isrs)))) <= {int}:
                return None
            if _NONE in isr_types:
                isrs = [None if r is None else tuple(r) for r in isrs]
            else:
                isrs = list(map(tuple, isrs))
        rates_in = list(map(dict.get, raw, repeat("bytes_in_per_s")))
        rates_out = list(map(dict.get, raw, repeat("bytes_out_per_s")))
        if not (_plain_rates(rates_in) and _plain_rates(rates_out)):
            return None
    return _build(
        PartitionEntry,
        topic=topics,
        partition=parts,
        replicas=list(map(tuple, reps)),
        leader=leaders,
        isr=isrs,
        size_bytes=sizes,
        log_dirs=dirs,
        bytes_in_per_s=rates_in,
        bytes_out_per_s=rates_out,
    )


_RATE_TYPES = frozenset({int, float, _NONE})


def _plain_rates(column: list[Any]) -> bool:
    """Whether every entry of a rate column is null or a finite number >= 0 (not a bool)."""
    if not set(map(type, column)) <= _RATE_TYPES:
        return False
    numbers = [r for r in column if r is not None]
    try:
        return not numbers or (math.isfinite(math.fsum(numbers)) and min(numbers) >= 0)
    except OverflowError:       # an int beyond a float: named by the entry-by-entry path
        return False


def _build(cls: type, **columns: Any) -> tuple[Any, ...]:
    """Instances of the frozen, slotted dataclass ``cls`` from one column per field.

    Each field is set through its slot descriptor, as the generated ``__init__`` does through
    ``object.__setattr__``, but one column at a time inside built-ins instead of one call per
    instance. Only for values already checked; a class with ``__post_init__`` goes through
    ``__init__`` so that its own checks still run.
    """
    names = [f.name for f in fields(cls)]
    if list(columns) != names:
        raise TypeError(f"{cls.__name__} columns {list(columns)} do not match its fields {names}")
    if hasattr(cls, "__post_init__"):
        return tuple(map(cls, *columns.values()))
    n = len(columns[names[0]])
    objs: tuple[Any, ...] = tuple(map(object.__new__, repeat(cls, n)))
    for name, column in columns.items():
        deque(map(getattr(cls, name).__set__, objs, column), maxlen=0)
    return objs
