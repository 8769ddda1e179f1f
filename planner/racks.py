"""Rack trees as the planner sees them: every broker gets one key per level.

Racks may be plain names (``r1``) or paths (``/dc1/zone-a/r1``, KIP-879). The rule is the one
``kafka_replica_assignor.assignors.multi_level`` uses, read leniently because the planner must describe any cluster:

- a leading ``/`` is optional and empty components are ignored (``dc1//r1`` is ``/dc1/r1``);
- shorter paths are padded to the deepest one by repeating their last component, so ``/dc3``
  next to ``/dc1/r1`` sits in a single-rack subtree of its own;
- when some brokers have a rack and others do not, the rackless ones share the pseudo rack
  ``NO_RACK`` (Kafka refuses such clusters at creation time; a drifted cluster may still be one);
- when no broker has a rack there are no levels and no rack constraint at all.

Level ``k`` (1-based) of a broker is the prefix of its path with ``k`` components, written as a
path (``/dc1`` then ``/dc1/r1``). The *diversity* of a partition at level ``k`` is the number of
distinct level-``k`` keys among its replicas; it is *full* when it equals
``min(replicas, groups at level k)``.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass

from kafka_replica_assignor.planner.replica_repair import NO_RACK, rack_levels

__all__ = ["NO_RACK", "RackTree"]


@dataclass(frozen=True, slots=True)
class RackTree:
    """Level keys of a set of brokers.

    ``keys[b]`` is a tuple of ``depth`` small integers, one per level, such that two brokers
    share key ``k`` exactly when they share the level-``k`` prefix; ``names[i]`` is the path of
    key ``i``. Brokers outside the tree have no keys (see :meth:`keys_of`).
    """

    depth: int
    keys: Mapping[int, tuple[int, ...]]
    names: tuple[str, ...]

    @classmethod
    def of(cls, racks: Mapping[int, str | None]) -> RackTree:
        """Build the tree from ``{broker id: rack}`` (every broker that has a known rack).

        The level prefixes come from :func:`kafka_replica_assignor.planner.replica_repair.rack_levels` (one rule for the
        planner and the repair); this numbers them and names them as paths.
        """
        levels = rack_levels(racks)
        depth = max(map(len, levels.values()), default=0)
        if depth == 0:
            return cls(0, {b: () for b in racks}, ())
        slash = depth > 1 or any(r is not None and r.startswith("/") for r in racks.values())
        ids: dict[tuple[int, str], int] = {}     # a key per level: the brokers without a rack share one at each
        keys: dict[int, tuple[int, ...]] = {}
        for b in sorted(levels):
            keys[b] = tuple(ids.setdefault((level, _path(prefix, slash)), len(ids))
                            for level, prefix in enumerate(levels[b]))
        names = [""] * len(ids)
        for (_, name), i in ids.items():
            names[i] = name
        return cls(depth, keys, tuple(names))

    def keys_of(self, broker: int) -> tuple[int, ...] | None:
        return self.keys.get(broker)

    def leaf(self, broker: int) -> int | None:
        """The key of the broker's rack (its deepest level), ``None`` outside the tree."""
        k = self.keys.get(broker)
        return k[-1] if k else None

    def groups(self, brokers: Iterable[int]) -> tuple[int, ...]:
        """Number of distinct keys per level among ``brokers`` (those in the tree)."""
        seen: list[set[int]] = [set() for _ in range(self.depth)]
        for b in brokers:
            k = self.keys.get(b)
            if k:
                for level, key in enumerate(k):
                    seen[level].add(key)
        return tuple(len(s) for s in seen)

    def diversity(self, replicas: Iterable[int]) -> tuple[int, ...]:
        """Distinct keys per level among the replicas that are in the tree."""
        return self.groups(replicas)



def _path(prefix: Hashable, slash: bool) -> str:
    """A level prefix of :func:`kafka_replica_assignor.planner.replica_repair.rack_levels` (a tuple of path components, or
    :data:`NO_RACK`) written as a path."""
    if prefix == NO_RACK:
        return NO_RACK
    parts = prefix if isinstance(prefix, tuple) else (prefix,)
    return ("/" if slash else "") + "/".join(map(str, parts))
