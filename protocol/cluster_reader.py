"""The one reader of a live cluster: Kafka's answers in, an :mod:`kafka_replica_assignor.cluster.snapshot` value out.

The server's live source (:mod:`kafka_replica_assignor.server.cluster_source`), the planner (:mod:`kafka_replica_assignor.planner.inputs.sources`)
and the CLI all read a cluster here. It lives in ``protocol/`` because it speaks Kafka through
kafka-python; it returns ``assignors`` data types, which ``protocol/`` may import (nothing in
``assignors/`` imports ``protocol/``), so the server and the planner both reach it without
importing each other.

Goals
    One mapping from DescribeCluster and Metadata (and, when asked, DescribeLogDirs) to a
    :class:`~kafka_replica_assignor.cluster.snapshot.ClusterSnapshot`, with one rule for fenced brokers, one for
    errors and one for sizes, whoever reads.

Constraints
    - **Fenced brokers** (KRaft, ``is_fenced`` in DescribeCluster) are registered: the snapshot
      lists them alive (their replicas are not lost, so repair leaves them in place) and their
      ids are returned in :attr:`ClusterRead.fenced`: they must not lead, and take new replicas
      only where no unfenced broker can (:class:`kafka_replica_assignor.assignors.model.ClusterView` ``fenced``). A
      broker absent from DescribeCluster is not in the snapshot at all (the server's observed
      store turns it into an offline broker).
    - **Errors.** The read fails when DescribeCluster or Metadata fails as a whole
      (:class:`ClusterReadError` from :func:`read_live_cluster`; kafka-python's own exception
      from :func:`read_cluster`, so a caller holding a client can replace it). Inside a Metadata
      answer:

      - a partition error about availability (LEADER_NOT_AVAILABLE, REPLICA_NOT_AVAILABLE,
        LISTENER_NOT_FOUND) still comes with the controller's replica list: the partition is
        kept, without a leader when the leader id is -1 (these are the partitions repair is for);
      - a topic-level error (a topic created or deleted while the answer was built: Kafka leaves
        topics a client may not describe out of an all-topics answer rather than erroring them),
        any other partition error, a partition without replicas or listing a broker twice: the
        topic or partition is left out and named in :attr:`ClusterRead.left_out`, which callers
        report. One topic in a passing state must not make the whole cluster unreadable.
    - **Sizes** (``with_sizes=True``): DescribeLogDirs to every broker. A partition's size is the
      largest over its replicas and log directories: a new replica copies the whole log from
      the leader, and the largest copy bounds it (lagging followers and future logs are smaller).
      Log directories answering with an error are skipped. When DescribeLogDirs fails or is not
      supported, every size stays None and :attr:`ClusterRead.sizes_note` says why; the rest of
      the read still succeeds. Partitions no log directory reports keep None (also noted).
    - The snapshot is sorted (brokers by id, partitions by topic and partition) whatever order
      the broker answered in.

Algorithm
    One DescribeCluster, one Metadata for every topic, then (with sizes) one DescribeLogDirs
    per broker naming the partitions Metadata described; each answer is mapped by a pure
    function (:func:`snapshot_from_metadata`, :func:`sizes_from_log_dirs`).

Example
    ======================================================= ===================================
    Metadata says                                           snapshot / read
    ======================================================= ===================================
    broker 2 ``is_fenced``                                  broker 2 alive; ``fenced == {2}``
    ``t-1``: error 5, leader -1, replicas [2, 5]            ``t-1`` kept, replicas (2, 5), no leader
    ``t-2``: error 0, replicas []                           left out: ``t-2: no replicas``
    topic ``gone``: error 3                                 left out, named with its error
    log dirs: ``t-1`` 10 bytes on broker 2, 7 on broker 5   ``t-1`` ``size_bytes == 10``
    ======================================================= ===================================
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import kafka.errors as kafka_errors

from kafka_replica_assignor.cluster.snapshot import (
    BrokerEntry,
    ClusterSnapshot,
    PartitionEntry,
    SnapshotError,
    with_log_dirs,
)

#: partition errors that still come with the controller's replica list
AVAILABILITY_ERRORS = frozenset({
    kafka_errors.LeaderNotAvailableError.errno,
    kafka_errors.ReplicaNotAvailableError.errno,
    kafka_errors.ListenerNotFoundError.errno,
})


class ClusterReadError(Exception):
    """The cluster could not be read; the message says why, on one line."""


@dataclass(frozen=True, slots=True)
class ClusterRead:
    """What one read of a cluster gives: the snapshot and what it could not hold."""

    snapshot: ClusterSnapshot
    fenced: frozenset[int] = frozenset()
    left_out: tuple[str, ...] = ()
    sizes_note: str | None = None
    traffic_notes: tuple[str, ...] = ()   # how the rates were sampled (protocol.traffic_sampler)

    def notes(self) -> tuple[str, ...]:
        """One line per thing a reader of the snapshot should know (for the CLI's stderr)."""
        lines = [f"left out of the snapshot: {entry}" for entry in self.left_out]
        if self.fenced:
            lines.append(f"fenced broker(s) {sorted(self.fenced)}: registered, listed alive, "
                         "not to lead or take new replicas")
        if self.sizes_note is not None:
            lines.append(self.sizes_note)
        return (*lines, *self.traffic_notes)


def _error_name(code: int) -> str:
    return f"{kafka_errors.for_code(code).__name__} ({code})"


def snapshot_from_metadata(cluster: Mapping[str, Any],  # noqa: C901 - one pass over both answers
                           topics: Iterable[Mapping[str, Any]] = ()) -> ClusterRead:
    """Map kafka-python's ``describe_cluster()`` and ``describe_topics()`` answers (see the
    module docstring for the rules)."""
    brokers = []
    fenced = set()
    for b in cluster.get("brokers") or ():
        broker_id = int(b["broker_id"] if "broker_id" in b else b["node_id"])
        brokers.append(BrokerEntry(broker_id, b.get("rack") or None, True, b.get("host"), b.get("port")))
        if b.get("is_fenced"):
            fenced.add(broker_id)
    partitions = []
    left_out = []
    for t in topics:
        name = t.get("name")
        if not name:
            left_out.append(f"a topic without a name: {_error_name(t.get('error_code') or 0)}")
            continue
        if t.get("error_code"):
            left_out.append(f"topic {name!r}: {_error_name(t['error_code'])}")
            continue
        for p in t.get("partitions") or ():
            where = f"{name}-{p['partition_index']}"
            error = p.get("error_code") or 0
            replicas = tuple(p.get("replica_nodes") or ())
            if error and error not in AVAILABILITY_ERRORS:
                left_out.append(f"{where}: {_error_name(error)}")
            elif not replicas:
                left_out.append(f"{where}: no replicas")
            elif len(set(replicas)) != len(replicas):
                left_out.append(f"{where}: lists a broker twice: {list(replicas)}")
            else:
                leader = p.get("leader_id")
                partitions.append(PartitionEntry(
                    topic=name, partition=int(p["partition_index"]), replicas=replicas,
                    leader=leader if leader is not None and leader >= 0 else None,
                    isr=tuple(p.get("isr_nodes") or ()),
                ))
    brokers.sort(key=lambda b: b.id)
    partitions.sort(key=lambda p: (p.topic, p.partition))
    try:
        snapshot = ClusterSnapshot(brokers=tuple(brokers), partitions=tuple(partitions))
    except SnapshotError as exc:
        raise ClusterReadError(f"cluster metadata: {exc}") from None
    return ClusterRead(snapshot, frozenset(fenced), tuple(left_out))


def sizes_from_log_dirs(answers: Iterable[Mapping[str, Any]]) -> dict[tuple[str, int], int]:
    """Per partition, the largest size any replica's log directory reports, from kafka-python's
    ``describe_log_dirs()`` answer (``[{"broker": id, "log_dirs": [result, ...]}, ...]``).
    Log directories with an error are skipped."""
    sizes: dict[tuple[str, int], int] = {}
    for answer in answers:
        for log_dir in answer.get("log_dirs") or ():
            if log_dir.get("error_code"):
                continue
            for t in log_dir.get("topics") or ():
                for p in t.get("partitions") or ():
                    key = (t["name"], int(p["partition_index"]))
                    size = int(p["partition_size"])
                    if size > sizes.get(key, -1):
                        sizes[key] = size
    return sizes


def placement_from_log_dirs(answers: Iterable[Mapping[str, Any]]) -> tuple[
        dict[tuple[str, int], dict[int, str]], dict[int, list[str]]]:
    """Where each replica lives (``(topic, partition) -> broker -> directory``, future replicas
    left out) and each broker's directories, from the same answer; directories with an error
    are left out. The input of :func:`kafka_replica_assignor.cluster.snapshot.with_log_dirs`."""
    placement: dict[tuple[str, int], dict[int, str]] = {}
    dirs: dict[int, list[str]] = {}
    for answer in answers:
        broker = int(answer["broker"])
        for log_dir in answer.get("log_dirs") or ():
            path = log_dir.get("log_dir")
            if log_dir.get("error_code") or not isinstance(path, str):
                continue
            dirs.setdefault(broker, []).append(path)
            for t in log_dir.get("topics") or ():
                for p in t.get("partitions") or ():
                    if not p.get("is_future_key"):
                        placement.setdefault((t["name"], int(p["partition_index"])), {})[broker] = path
    return placement, dirs


def snapshot_with_sizes(snapshot: ClusterSnapshot, sizes: Mapping[tuple[str, int], int]) -> ClusterSnapshot:
    """``snapshot`` with each partition's ``size_bytes`` taken from ``sizes`` (None if absent)."""
    return ClusterSnapshot(snapshot.brokers, tuple(
        dataclasses.replace(p, size_bytes=sizes.get((p.topic, p.partition)))
        for p in snapshot.partitions))


def read_cluster(admin: Any, *, include_topics: bool = True, with_sizes: bool = False) -> ClusterRead:
    """Read the cluster through an open kafka-python admin client. DescribeCluster or Metadata
    failing raises kafka-python's exception; DescribeLogDirs failing only leaves sizes out."""
    read = snapshot_from_metadata(admin.describe_cluster(),
                                  admin.describe_topics() if include_topics else ())
    if not with_sizes or not read.snapshot.partitions:
        return read
    return _read_sizes(admin, read)


def _read_sizes(admin: Any, read: ClusterRead) -> ClusterRead:
    wanted: dict[str, list[int]] = {}
    for p in read.snapshot.partitions:
        wanted.setdefault(p.topic, []).append(p.partition)
    try:
        answers = admin.describe_log_dirs(wanted)
    except kafka_errors.IncompatibleBrokerVersion:
        return dataclasses.replace(read, sizes_note=(
            "partition sizes unknown: the cluster does not support DescribeLogDirs"))
    except (kafka_errors.KafkaError, OSError) as exc:
        return dataclasses.replace(read, sizes_note=(
            f"partition sizes unknown: DescribeLogDirs failed: {type(exc).__name__}: {exc}"))
    sizes = sizes_from_log_dirs(answers)
    snapshot = with_log_dirs(snapshot_with_sizes(read.snapshot, sizes), *placement_from_log_dirs(answers))
    missing = sum(p.size_bytes is None for p in snapshot.partitions)
    note = (f"partition sizes unknown for {missing} of {len(snapshot.partitions)} partition(s): "
            "no log directory reported them" if missing else None)
    return dataclasses.replace(read, snapshot=snapshot, sizes_note=note)


def open_admin_client(bootstrap_servers: str | Sequence[str], request_timeout_ms: int,
                      admin_configs: Mapping[str, Any] | None = None) -> Any:
    """A kafka-python admin client whose bootstrap and requests give up after the timeout.
    ``admin_configs`` go to ``KafkaAdminClient`` as they are (security settings, client id...)."""
    from kafka.admin import KafkaAdminClient

    configs = {
        "bootstrap_servers": bootstrap_servers,
        "client_id": "replica-assignor",
        "request_timeout_ms": request_timeout_ms,
        "bootstrap_timeout_ms": request_timeout_ms,
        **(admin_configs or {}),
    }
    admin = KafkaAdminClient.__new__(KafkaAdminClient)
    try:
        admin.__init__(**configs)
    except BaseException:
        # kafka-python 3.0.12 starts its I/O thread before the eager bootstrap and leaves it
        # running when the bootstrap fails: stop it, or every failed refresh leaks a thread.
        if hasattr(admin, "_net"):
            admin._closed = False
            with contextlib.suppress(Exception):
                admin.close()
        raise
    return admin


def _reason(exc: BaseException) -> str:
    """``Name: message`` once: kafka-python's errors already start their text with their name."""
    text = str(exc).strip()
    name = type(exc).__name__
    if text.startswith(("[Error ", f"{name}:")):
        return text
    return f"{name}: {text}" if text else name


def read_live_cluster(bootstrap_servers: str | Sequence[str], *, request_timeout_ms: int = 10_000,
                      admin_configs: Mapping[str, Any] | None = None,
                      with_sizes: bool = False,
                      then: Callable[[Any, ClusterRead], ClusterRead] | None = None) -> ClusterRead:
    """One blocking read of a cluster (for the CLI and the planner): a client is opened, used
    once and closed. Any failure to connect or describe is a :class:`ClusterReadError`.
    ``then(admin, read)``, when given, takes a further look with the same client before it is
    closed (the traffic sampler) and its answer is returned."""
    servers = bootstrap_servers if isinstance(bootstrap_servers, str) else ",".join(bootstrap_servers)
    try:
        admin = open_admin_client(bootstrap_servers, request_timeout_ms, admin_configs)
    except (kafka_errors.KafkaError, OSError, ValueError) as exc:
        raise ClusterReadError(f"cannot connect to {servers}: {_reason(exc)}") from None
    try:
        read = read_cluster(admin, with_sizes=with_sizes)
        return read if then is None else then(admin, read)
    except (kafka_errors.KafkaError, OSError) as exc:
        raise ClusterReadError(f"cannot describe {servers}: {_reason(exc)}") from None
    finally:
        admin.close()


__all__ = [
    "AVAILABILITY_ERRORS",
    "ClusterRead",
    "ClusterReadError",
    "open_admin_client",
    "read_cluster",
    "read_live_cluster",
    "placement_from_log_dirs",
    "sizes_from_log_dirs",
    "snapshot_from_metadata",
    "snapshot_with_sizes",
]
