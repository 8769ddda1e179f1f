"""The one cluster snapshot format shared by the server and the planner.

::

    {"brokers":    [{"id": 0, "rack": "/dc1/rack-a", "alive": true, "host": "...", "port": 9092}, ...],
     "partitions": [{"topic": "t", "partition": 0, "replicas": [0, 1, 2],
                     "leader": 0, "isr": [0, 1], "size_bytes": 123}, ...]}

Only ``brokers[].id`` and, for partitions, ``topic``, ``partition`` and ``replicas`` are
required. The first replica is the preferred leader. Negative replica ids are KIP-409
placeholders; replica ids missing from ``brokers`` are unknown (dead) brokers.
Parsing is pure: callers read the file and hand over the decoded JSON.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .model import BrokerMetadata, ClusterView


class SnapshotError(ValueError):
    """The snapshot does not follow the documented format; the message says where."""


@dataclass(frozen=True, slots=True)
class BrokerEntry:
    id: int
    rack: str | None = None
    alive: bool = True
    host: str | None = None
    port: int | None = None

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


@dataclass(frozen=True, slots=True)
class ClusterSnapshot:
    brokers: tuple[BrokerEntry, ...]
    partitions: tuple[PartitionEntry, ...] = ()

    def __post_init__(self) -> None:
        ids = [b.id for b in self.brokers]
        if len(set(ids)) != len(ids):
            dup = sorted({i for i in ids if ids.count(i) > 1})
            raise SnapshotError(f"duplicate broker ids: {dup}")
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
        partitions = tuple(_partition(i, p) for i, p in enumerate(raw_parts))
        return cls(brokers=brokers, partitions=partitions)

    @classmethod
    def from_json(cls, text: str | bytes) -> ClusterSnapshot:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise SnapshotError(f"not valid JSON: {exc}") from None
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
            parts.append(d)
        return {"brokers": brokers, "partitions": parts}


def _int(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise SnapshotError(f"{where} must be an integer, got {value!r}")
    return value


def _broker(i: int, b: Any) -> BrokerEntry:
    where = f"brokers[{i}]"
    if not isinstance(b, Mapping):
        raise SnapshotError(f"{where} must be an object")
    if "id" not in b:
        raise SnapshotError(f"{where} has no 'id'")
    bid = _int(b["id"], f"{where}.id")
    if bid < 0:
        raise SnapshotError(f"{where}.id must be >= 0, got {bid}")
    rack = b.get("rack")
    if rack is not None and not isinstance(rack, str):
        raise SnapshotError(f"{where}.rack must be a string or null, got {rack!r}")
    if rack == "":
        rack = None
    alive = b.get("alive", True)
    if not isinstance(alive, bool):
        raise SnapshotError(f"{where}.alive must be true or false, got {alive!r}")
    host = b.get("host")
    if host is not None and not isinstance(host, str):
        raise SnapshotError(f"{where}.host must be a string, got {host!r}")
    port = b.get("port")
    if port is not None:
        port = _int(port, f"{where}.port")
    return BrokerEntry(bid, rack, alive, host, port)


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
    part = _int(p["partition"], f"{where}.partition")
    if part < 0:
        raise SnapshotError(f"{where}.partition must be >= 0")
    reps = p["replicas"]
    if not isinstance(reps, list) or not reps:
        raise SnapshotError(f"{where}.replicas must be a non-empty list")
    replicas = tuple(_int(r, f"{where}.replicas[]") for r in reps)
    if len(set(replicas)) != len(replicas):
        raise SnapshotError(f"{where} ({topic}-{part}) lists a broker twice: {list(replicas)}")
    leader = p.get("leader")
    if leader is not None:
        leader = _int(leader, f"{where}.leader")
    isr = p.get("isr")
    if isr is not None:
        if not isinstance(isr, list):
            raise SnapshotError(f"{where}.isr must be a list")
        isr = tuple(_int(r, f"{where}.isr[]") for r in isr)
    size = p.get("size_bytes")
    if size is not None:
        size = _int(size, f"{where}.size_bytes")
    return PartitionEntry(topic, part, replicas, leader, isr, size)
