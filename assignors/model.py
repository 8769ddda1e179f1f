"""The immutable model every assignor sees.

*What to place* (topic, partition ids, replication factor) is passed as arguments;
*what the cluster looks like* is a :class:`ClusterView`, a narrow read-only value.
Both are plain values: an assignor never mutates them, and a planner that wants a
changed cluster builds a new view (:meth:`ClusterView.with_assignment`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

Assignment = dict[int, list[int]]
"""partition id -> replica broker ids; the first replica is the preferred leader."""

FrozenAssignment = Mapping[int, tuple[int, ...]]


@dataclass(frozen=True, slots=True)
class BrokerMetadata:
    """A broker as placement sees it: its id and its rack (``None`` when it has none)."""

    id: int
    rack: str | None = None

    def __post_init__(self) -> None:
        if isinstance(self.id, bool) or not isinstance(self.id, int):
            raise TypeError(f"broker id must be an int, got {self.id!r}")
        if self.id < 0:
            raise ValueError(f"broker id must be >= 0, got {self.id}")
        if self.rack is not None and not isinstance(self.rack, str):
            raise TypeError(f"rack of broker {self.id} must be a string or None, got {self.rack!r}")


def _freeze_assignment(assignment: Mapping[int, Iterable[int]]) -> FrozenAssignment:
    return MappingProxyType({int(p): tuple(int(b) for b in r) for p, r in assignment.items()})


@dataclass(frozen=True, slots=True)
class ClusterView:
    """A read-only view of the cluster for one assignment.

    - ``brokers``: the brokers replicas may be placed on (alive and registered), sorted by id.
    - ``fenced``: ids among ``brokers`` that are fenced (KRaft); they never lead a new partition and
      take a new replica only where no unfenced broker can. The framework keeps them out of the
      view an assignor sees (:mod:`kafka_replica_assignor.assignors.fencing`).
    - ``offline``: brokers observed before but not alive now (KIP-409); never placed on directly.
    - ``topics``: existing assignments by topic name, so that an assignor can continue a topic or
      take other topics' load into account.
    """

    brokers: tuple[BrokerMetadata, ...]
    fenced: frozenset[int] = frozenset()
    offline: tuple[BrokerMetadata, ...] = ()
    topics: Mapping[str, FrozenAssignment] = field(default_factory=lambda: MappingProxyType({}))

    def __post_init__(self) -> None:
        brokers = tuple(sorted(self.brokers, key=lambda b: b.id))
        ids = [b.id for b in brokers]
        if len(set(ids)) != len(ids):
            raise ValueError(f"duplicate broker ids in cluster view: {sorted(ids)}")
        unknown_fenced = set(self.fenced) - set(ids)
        if unknown_fenced:
            raise ValueError(f"fenced brokers not in the cluster view: {sorted(unknown_fenced)}")
        offline = tuple(sorted(self.offline, key=lambda b: b.id))
        both = {b.id for b in offline} & set(ids)
        if both:
            raise ValueError(f"brokers both alive and offline: {sorted(both)}")
        object.__setattr__(self, "brokers", brokers)
        object.__setattr__(self, "fenced", frozenset(self.fenced))
        object.__setattr__(self, "offline", offline)
        object.__setattr__(
            self,
            "topics",
            MappingProxyType({str(t): _freeze_assignment(a) for t, a in self.topics.items()}),
        )

    @classmethod
    def of(cls, brokers: Iterable[BrokerMetadata | tuple[int, str | None]], **kwargs: Any) -> ClusterView:
        """Build a view from BrokerMetadata values or ``(id, rack)`` pairs."""
        return cls(
            brokers=tuple(b if isinstance(b, BrokerMetadata) else BrokerMetadata(*b) for b in brokers),
            **kwargs,
        )

    @property
    def broker_ids(self) -> tuple[int, ...]:
        return tuple(b.id for b in self.brokers)

    @property
    def rack_by_broker(self) -> dict[int, str | None]:
        return {b.id: b.rack for b in self.brokers}

    @property
    def racks(self) -> tuple[str, ...]:
        """The distinct racks of the placeable brokers, sorted."""
        return tuple(sorted({b.rack for b in self.brokers if b.rack is not None}))

    @property
    def has_racks(self) -> bool:
        return any(b.rack is not None for b in self.brokers)

    @property
    def unfenced_ids(self) -> tuple[int, ...]:
        return tuple(b.id for b in self.brokers if b.id not in self.fenced)

    def broker(self, broker_id: int) -> BrokerMetadata:
        for b in self.brokers:
            if b.id == broker_id:
                return b
        raise KeyError(broker_id)

    def topic_assignment(self, topic: str | None) -> FrozenAssignment:
        """The existing assignment of ``topic`` (empty when new or unnamed)."""
        if topic is None:
            return MappingProxyType({})
        return self.topics.get(topic, MappingProxyType({}))

    def without_racks(self) -> ClusterView:
        """The same view with every rack removed (forceSimpleAssignment / --disable-rack-aware)."""
        return ClusterView(
            brokers=tuple(BrokerMetadata(b.id) for b in self.brokers),
            fenced=self.fenced,
            offline=tuple(BrokerMetadata(b.id) for b in self.offline),
            topics=self.topics,
        )

    def restricted_to(self, broker_ids: Iterable[int]) -> ClusterView:
        """The view limited to the given placeable brokers (a request's NodeId list)."""
        wanted = set(broker_ids)
        return ClusterView(
            brokers=tuple(b for b in self.brokers if b.id in wanted),
            fenced=frozenset(self.fenced & wanted),
            offline=self.offline,
            topics=self.topics,
        )

    def without_fenced(self) -> ClusterView:
        """The view without its fenced brokers (the same offline brokers and topics): what an
        assignor places on (:mod:`kafka_replica_assignor.assignors.fencing`). Built without
        freezing the topics again, in time linear in the brokers."""
        view = object.__new__(ClusterView)
        for name, value in (("brokers", tuple(b for b in self.brokers if b.id not in self.fenced)),
                            ("fenced", frozenset()), ("offline", self.offline), ("topics", self.topics)):
            object.__setattr__(view, name, value)
        return view

    def with_assignment(self, topic: str, assignment: Mapping[int, Iterable[int]]) -> ClusterView:
        """A new view where ``topic`` has ``assignment`` merged over its existing partitions."""
        topics = {t: dict(a) for t, a in self.topics.items()}
        merged = topics.setdefault(topic, {})
        merged.update({int(p): tuple(r) for p, r in assignment.items()})
        return ClusterView(brokers=self.brokers, fenced=self.fenced, offline=self.offline, topics=topics)
