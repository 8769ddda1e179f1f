"""Where a cluster snapshot comes from: a snapshot file, a live cluster, or describe text.

- :func:`load_snapshot`: the shared snapshot JSON (:mod:`kafka_replica_assignor.cluster.snapshot`).
- :func:`from_describe`: the text of ``kafka-topics.sh --describe`` plus a broker -> rack file
  (lines ``<broker id> [<rack>] [dead]``; ``=``, ``,`` or ``:`` may separate the fields; ``#``
  starts a comment). Brokers listed are alive unless marked ``dead``; replica ids not listed are
  unknown brokers.
- A live cluster is read by :mod:`kafka_replica_assignor.protocol.cluster_reader` (the one reader of cluster metadata,
  shared with the server and the CLI's ``--bootstrap-server``), not here.

Every failure is a :class:`SourceError` with one line saying what is wrong and where.
"""

from __future__ import annotations

import re

from kafka_replica_assignor.cluster.snapshot import (
    BrokerEntry,
    ClusterSnapshot,
    PartitionEntry,
    SnapshotError,
    gc_paused,
)


class SourceError(ValueError):
    """The input cannot be read as a cluster; the message says why, on one line."""


def load_snapshot(path: str) -> ClusterSnapshot:
    try:
        with open(path, "rb") as f:
            text = f.read()
    except OSError as exc:
        raise SourceError(f"cannot read snapshot {path}: {exc.strerror or exc}") from None
    try:
        with gc_paused():
            return ClusterSnapshot.from_json(text)
    except SnapshotError as exc:
        raise SourceError(f"{path}: {exc}") from None


# -- kafka-topics.sh --describe ----------------------------------------------------------
_FIELD = re.compile(r"(\w+):[ ]*([^\t]*)")


def _ids(text: str, where: str) -> tuple[int, ...]:
    text = text.strip()
    if not text or text.lower() in ("none", "n/a"):
        return ()
    try:
        return tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise SourceError(f"{where}: not a list of broker ids: {text!r}") from None


def parse_racks(text: str, where: str = "racks file") -> tuple[BrokerEntry, ...]:
    brokers: dict[int, BrokerEntry] = {}
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        fields = [f for f in re.split(r"[\s=,:]+", line) if f]
        try:
            broker = int(fields[0])
        except ValueError:
            raise SourceError(f"{where} line {n}: expected '<broker id> [<rack>] [dead]', "
                              f"got {raw.strip()!r}") from None
        if broker < 0:
            raise SourceError(f"{where} line {n}: broker id must be >= 0, got {broker}")
        alive = True
        if fields[-1].lower() == "dead" and len(fields) > 1:
            alive = False
            fields = fields[:-1]
        if len(fields) > 2:
            raise SourceError(f"{where} line {n}: too many fields in {raw.strip()!r}")
        rack = fields[1] if len(fields) == 2 and fields[1] not in ("-", "null", "none") else None
        if broker in brokers:
            raise SourceError(f"{where} line {n}: broker {broker} listed twice")
        brokers[broker] = BrokerEntry(broker, rack, alive)
    if not brokers:
        raise SourceError(f"{where}: no broker listed")
    return tuple(brokers[b] for b in sorted(brokers))


def parse_describe(text: str, where: str = "describe output") -> tuple[PartitionEntry, ...]:
    parts: list[PartitionEntry] = []
    seen: set[tuple[str, int]] = set()
    for n, raw in enumerate(text.splitlines(), 1):
        if "Partition:" not in raw or "Replicas:" not in raw:
            continue
        fields = dict(_FIELD.findall(raw.strip()))
        here = f"{where} line {n}"
        topic = fields.get("Topic", "").strip()
        if not topic:
            raise SourceError(f"{here}: no topic name")
        try:
            partition = int(fields["Partition"])
        except (KeyError, ValueError):
            raise SourceError(f"{here}: bad partition number {fields.get('Partition')!r}") from None
        replicas = _ids(fields["Replicas"], here)
        if not replicas:
            raise SourceError(f"{here}: {topic}-{partition} has no replicas")
        if len(set(replicas)) != len(replicas):
            raise SourceError(f"{here}: {topic}-{partition} lists a broker twice: {list(replicas)}")
        if (topic, partition) in seen:
            raise SourceError(f"{here}: {topic}-{partition} described twice")
        seen.add((topic, partition))
        leader_text = fields.get("Leader", "").strip()
        leader = None
        if leader_text and leader_text.lower() not in ("none", "-1"):
            try:
                leader = int(leader_text)
            except ValueError:
                raise SourceError(f"{here}: bad leader {leader_text!r}") from None
        isr = _ids(fields.get("Isr", ""), here) if "Isr" in fields else None
        parts.append(PartitionEntry(topic, partition, replicas, leader, isr))
    if not parts:
        raise SourceError(f"{where}: no 'Topic: ... Partition: ... Replicas: ...' line found")
    return tuple(parts)


def from_describe(describe_text: str, racks_text: str, *, describe_where: str = "describe output",
                  racks_where: str = "racks file") -> ClusterSnapshot:
    """A snapshot from ``kafka-topics.sh --describe`` output and a broker -> rack file."""
    brokers = parse_racks(racks_text, racks_where)
    partitions = parse_describe(describe_text, describe_where)
    try:
        return ClusterSnapshot(brokers, partitions)
    except SnapshotError as exc:
        raise SourceError(str(exc)) from None


def read_describe(describe_path: str, racks_path: str) -> ClusterSnapshot:
    texts = []
    for path in (describe_path, racks_path):
        try:
            with open(path, encoding="utf-8") as f:
                texts.append(f.read())
        except (OSError, UnicodeDecodeError) as exc:
            raise SourceError(f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}") from None
    return from_describe(texts[0], texts[1], describe_where=describe_path, racks_where=racks_path)
