"""The one sampler of a live cluster's traffic: produce and consume bytes per second per
partition, measured from offsets, with no plug-in in the brokers.

Kafka keeps no byte rates a client can ask for, but it keeps offsets: a partition's log-end
offset moves by one per record produced, and a consumer group's committed offset by one per
record it read and committed. Two samples ``N`` seconds apart give records per second; the
log's bytes per offset turn them into bytes per second.

Goals
    ``bytes_in_per_s`` and ``bytes_out_per_s`` of every led partition of a
    :class:`~kafka_replica_assignor.cluster.snapshot.ClusterSnapshot` (their meaning is the
    snapshot's: what producers write, what every consumer group reads, replication excluded),
    from ListOffsets, DescribeLogDirs, ListGroups and OffsetFetch only.

Constraints
    - **Elapsed time is measured**, not taken from ``N``: each side of the rate has its own
      clock reading (the midpoint of the requests that read it), so a slow answer does not
      count as traffic. Each read of the second sample starts ``N`` s after the same read of
      the first, so both sides span about ``N`` s even when reading the commits of many
      groups takes seconds.
    - **Bytes per offset** of a partition is its size (DescribeLogDirs, the largest replica, read
      at the end of the window so that it holds what the window wrote) over its offsets
      (log-end minus the local log-start offset, ListOffsets ``EARLIEST_LOCAL``, or
      ``EARLIEST`` on a broker before 3.6), all three read back to back after the window. A partition without both (an empty log, a size no
      log directory reported) takes its topic's figure (the topic's bytes over its offsets),
      and failing that the cluster's. Batch headers are in the log, so they are in the rate,
      as on the network. A **compacted** topic counts offsets that compaction removed, so its
      figure, and its rates, are low by the share compaction removed; transaction markers
      take an offset each (tens of bytes).
    - **Consume rates come from commits**: a group that commits nothing in the window counts
      0 for it, and one that commits every 5 s (the consumer's default auto-commit interval)
      is seen in steps of 5 s: a window of several commit intervals keeps the error small.
      Share groups have no committed offsets and are left out. An offset that went back (a
      reset, a truncated log) counts 0, as does a group's partition committed first inside
      the window.
    - **Bounded**: each sample keeps one integer per led partition and one per committed
      (group, partition) of the snapshot's partitions; OffsetFetch asks ``GROUPS_PER_REQUEST``
      groups at a time. Partitions without a leader are not sampled (their rates stay None).

Algorithm
    :func:`sample_traffic`: sample (ListOffsets ``LATEST`` per leader, ListGroups, OffsetFetch),
    sleep, sample again, then the log extent (ListOffsets ``LATEST``, DescribeLogDirs, ListOffsets
    ``EARLIEST_LOCAL``: sizes and offsets read back to back); the pure
    :func:`traffic_rates` does the arithmetic, :func:`snapshot_with_rates` writes it into the
    snapshot.

Example
    ============================== ============= ============= ================================
    partition t-0                  first sample  second (2 s)  rate
    ============================== ============= ============= ================================
    log-end offset                 1,000         1,200         200 offsets/s
    size 100,000 B, log start 0    ..            1,200 offsets 83.3 B/offset: 16,667 B/s in
    group a committed              900           1,100         100 offsets/s
    group b committed              1,000         (no commit)   0: out 8,333 B/s
    ============================== ============= ============= ================================
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import kafka.errors as kafka_errors

from kafka_replica_assignor.cluster.snapshot import ClusterSnapshot

from .cluster_reader import ClusterRead, ClusterReadError, _reason, sizes_from_log_dirs

Key = tuple[str, int]
#: consumer groups per OffsetFetch request (one request per coordinator and chunk)
GROUPS_PER_REQUEST = 50


@dataclass(frozen=True, slots=True)
class OffsetSample:
    """One sample: log-end offsets and every group's committed offsets, each with the clock
    reading (seconds, monotonic) of when it was read."""

    log_end: Mapping[Key, int]
    log_end_at: float
    committed: Mapping[str, Mapping[Key, int]]   # group -> partition -> committed offset
    committed_at: float
    log_end_started: float = 0.0     # when each read began (the next sample's reads begin N s later)
    committed_started: float = 0.0


@dataclass(frozen=True, slots=True)
class LogExtent:
    """What turns offsets into bytes, read at the end of the window."""

    sizes: Mapping[Key, int]        # bytes, the largest replica (DescribeLogDirs)
    log_start: Mapping[Key, int]    # the local log-start offset
    log_end: Mapping[Key, int]      # read just before the sizes


@dataclass(frozen=True, slots=True)
class TrafficRates:
    """Per partition, produce and consume bytes per second, and how they were found."""

    bytes_in_per_s: Mapping[Key, float]
    bytes_out_per_s: Mapping[Key, float]
    produce_seconds: float
    consume_seconds: float
    groups: int
    estimated: int = 0       # partitions whose bytes per offset came from their topic or the cluster
    unsized: int = 0         # partitions with traffic and no bytes per offset at all (rates left out)

    def notes(self) -> tuple[str, ...]:
        lines = [f"traffic sampled over {self.produce_seconds:.2f} s (offsets) and {self.consume_seconds:.2f} s "
                 f"(commits of {self.groups} consumer group(s))"]
        if self.estimated:
            lines.append(f"{self.estimated} partition(s) without their own size or offsets took their topic's "
                         "(or the cluster's) bytes per offset")
        if self.unsized:
            lines.append(f"{self.unsized} partition(s) with traffic have no bytes per offset anywhere (no sizes): "
                         "their rates are left out")
        return tuple(lines)


def bytes_per_offset(extent: LogExtent, wanted: Iterable[Key]) -> tuple[dict[Key, float], set[Key]]:
    """Per partition of ``wanted``: its bytes per offset, and the partitions whose figure is
    their topic's or the cluster's (see the module doc). Partitions with no figure at all are
    absent."""
    log_end = extent.log_end
    own: dict[Key, float] = {}
    topic_bytes: dict[str, int] = {}
    topic_offsets: dict[str, int] = {}
    for key, end in log_end.items():
        size = extent.sizes.get(key)
        start = extent.log_start.get(key)
        if size is None or start is None or end <= start or size <= 0:
            continue
        own[key] = size / (end - start)
        topic_bytes[key[0]] = topic_bytes.get(key[0], 0) + size
        topic_offsets[key[0]] = topic_offsets.get(key[0], 0) + end - start
    total_offsets = sum(topic_offsets.values())
    cluster = sum(topic_bytes.values()) / total_offsets if total_offsets else None
    figures = dict(own)
    borrowed = set()
    for key in wanted:
        if key in own:
            continue
        offsets = topic_offsets.get(key[0])
        figure = topic_bytes[key[0]] / offsets if offsets else cluster
        if figure is not None:
            figures[key] = figure
            borrowed.add(key)
    return figures, borrowed


def _delta(before: int | None, after: int | None) -> int:
    """Offsets moved forward; 0 when either side is missing or the offset went back."""
    if before is None or after is None or before < 0 or after <= before:
        return 0
    return after - before


def traffic_rates(first: OffsetSample, second: OffsetSample, extent: LogExtent) -> TrafficRates:
    """The rates between two samples (pure): produce from the log-end offsets, consume from every
    group's committed offsets, both times bytes per offset over the measured seconds."""
    produce_s = second.log_end_at - first.log_end_at
    consume_s = second.committed_at - first.committed_at
    if produce_s <= 0 or consume_s <= 0:
        raise ValueError(f"samples out of order: {produce_s:.3f} s and {consume_s:.3f} s between them")
    figures, borrowed = bytes_per_offset(extent, second.log_end)
    moved: dict[Key, int] = {key: _delta(first.log_end.get(key), end) for key, end in second.log_end.items()}
    read: dict[Key, int] = dict.fromkeys(second.log_end, 0)
    for group, offsets in second.committed.items():
        before = first.committed.get(group, {})
        for key, offset in offsets.items():
            if key in read:
                read[key] += _delta(before.get(key), offset)
    rates_in: dict[Key, float] = {}
    rates_out: dict[Key, float] = {}
    unsized = 0
    for key in second.log_end:
        figure = figures.get(key)
        if figure is None:
            if moved[key] or read[key]:
                unsized += 1
                continue
            figure = 0.0
        rates_in[key] = moved[key] * figure / produce_s
        rates_out[key] = read[key] * figure / consume_s
    groups = len(set(first.committed) | set(second.committed))
    used = sum(1 for key in borrowed if moved[key] or read[key])
    return TrafficRates(rates_in, rates_out, produce_s, consume_s, groups, used, unsized)


def snapshot_with_rates(snapshot: ClusterSnapshot, rates: TrafficRates) -> ClusterSnapshot:
    """``snapshot`` with each sampled partition's ``bytes_in_per_s`` and ``bytes_out_per_s``
    (rounded to 0.1 B/s); the others keep theirs."""
    partitions = []
    for p in snapshot.partitions:
        key = (p.topic, p.partition)
        if key in rates.bytes_in_per_s:
            p = dataclasses.replace(p, bytes_in_per_s=round(rates.bytes_in_per_s[key], 1),
                                    bytes_out_per_s=round(rates.bytes_out_per_s[key], 1))
        partitions.append(p)
    return dataclasses.replace(snapshot, partitions=tuple(partitions))


# --- reading the cluster -------------------------------------------------------------------------

def _timed(read: Callable[[], Any], clock: Callable[[], float], sleep: Callable[[float], None],
           not_before: float | None) -> tuple[Any, float, float]:
    """``read()`` started no sooner than ``not_before``; its value, its start and the clock at its midpoint."""
    if not_before is not None:
        sleep(max(0.0, not_before - clock()))
    begin = clock()
    value = read()
    return value, begin, (begin + clock()) / 2


def _offsets(admin: Any, keys: Iterable[Key], spec: Any) -> dict[Key, int]:
    from kafka.structs import TopicPartition

    answer = admin.list_partition_offsets({TopicPartition(t, p): spec for t, p in keys})
    return {(tp.topic, tp.partition): int(found.offset) for tp, found in answer.items()}


def _log_start(admin: Any, keys: list[Key]) -> dict[Key, int]:
    from kafka.admin import OffsetSpec

    try:
        return _offsets(admin, keys, OffsetSpec.EARLIEST_LOCAL)
    except (kafka_errors.UnsupportedVersionError, kafka_errors.IncompatibleBrokerVersion):
        return _offsets(admin, keys, OffsetSpec.EARLIEST)


def consumer_groups(listed: Iterable[Mapping[str, Any]]) -> list[str]:
    """The groups of a ListGroups answer that commit offsets (share groups do not), sorted, once each."""
    return sorted({g["group_id"] for g in listed
                   if g.get("group_id") and (g.get("group_type") or "").lower() != "share"})


def _committed(admin: Any, wanted: set[Key]) -> dict[str, dict[Key, int]]:
    groups = consumer_groups(admin.list_groups())
    committed: dict[str, dict[Key, int]] = {}
    for i in range(0, len(groups), GROUPS_PER_REQUEST):
        answer = admin.list_group_offsets({g: None for g in groups[i:i + GROUPS_PER_REQUEST]})
        for group, offsets in answer.items():
            mine = {}
            for tp, found in offsets.items():
                key = (tp.topic, tp.partition)
                if key in wanted and found.offset >= 0:
                    mine[key] = int(found.offset)
            committed[group] = mine
    return committed


def take_sample(admin: Any, led: list[Key], clock: Callable[[], float] = time.monotonic,
                sleep: Callable[[float], None] = time.sleep, after: tuple[OffsetSample, float] | None = None,
                ) -> OffsetSample:
    """One sample of ``led`` partitions' log-end offsets and every consumer group's commits. With
    ``after=(first, seconds)`` each read starts ``seconds`` after the same read of ``first``
    started, so both sides of the rate span the window asked however long a read takes."""
    from kafka.admin import OffsetSpec

    log_end, log_started, log_end_at = _timed(
        lambda: _offsets(admin, led, OffsetSpec.LATEST), clock, sleep,
        None if after is None else after[0].log_end_started + after[1])
    committed, committed_started, committed_at = _timed(
        lambda: _committed(admin, set(led)), clock, sleep,
        None if after is None else after[0].committed_started + after[1])
    return OffsetSample(log_end, log_end_at, committed, committed_at, log_started, committed_started)


def read_extent(admin: Any, led: list[Key]) -> LogExtent:
    """Sizes (DescribeLogDirs to every broker) and local log-start and log-end offsets of ``led``."""
    from kafka.admin import OffsetSpec

    log_end = _offsets(admin, led, OffsetSpec.LATEST)
    wanted: dict[str, list[int]] = {}
    for topic, partition in led:
        wanted.setdefault(topic, []).append(partition)
    try:
        sizes = sizes_from_log_dirs(admin.describe_log_dirs(wanted))
    except kafka_errors.IncompatibleBrokerVersion:
        sizes = {}     # every partition without a figure: rates left out, and noted
    return LogExtent(sizes, _log_start(admin, led), log_end)


def sample_traffic(admin: Any, snapshot: ClusterSnapshot, seconds: float, *,
                   clock: Callable[[], float] = time.monotonic,
                   sleep: Callable[[float], None] = time.sleep) -> tuple[ClusterSnapshot, TrafficRates]:
    """Sample ``snapshot``'s cluster twice, ``seconds`` apart, through an open kafka-python admin
    client; the snapshot gains the rates of its led partitions. Any failure to read is a
    :class:`~kafka_replica_assignor.protocol.cluster_reader.ClusterReadError`."""
    led = [(p.topic, p.partition) for p in snapshot.partitions if p.leader is not None]
    try:
        first = take_sample(admin, led, clock, sleep)
        second = take_sample(admin, led, clock, sleep, after=(first, seconds))
        extent = read_extent(admin, led)
    except (kafka_errors.KafkaError, OSError) as exc:
        raise ClusterReadError(f"cannot sample traffic: {_reason(exc).splitlines()[0]}") from None
    rates = traffic_rates(first, second, extent)
    return snapshot_with_rates(snapshot, rates), rates


def sampled(seconds: float) -> Callable[[Any, ClusterRead], ClusterRead]:
    """For :func:`~kafka_replica_assignor.protocol.cluster_reader.read_live_cluster`'s ``then``:
    the read's snapshot with rates sampled over ``seconds``, and the notes saying how."""
    def then(admin: Any, read: ClusterRead) -> ClusterRead:
        snapshot, rates = sample_traffic(admin, read.snapshot, seconds)
        return dataclasses.replace(read, snapshot=snapshot, traffic_notes=rates.notes())
    return then


__all__ = [
    "GROUPS_PER_REQUEST",
    "LogExtent",
    "OffsetSample",
    "TrafficRates",
    "bytes_per_offset",
    "consumer_groups",
    "read_extent",
    "sample_traffic",
    "sampled",
    "snapshot_with_rates",
    "take_sample",
    "traffic_rates",
]
