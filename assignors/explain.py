"""Where an assignment's replicas and preferred leaders landed, level by level of the rack tree.

Pure functions for ``replica-assignor assign --explain``: :func:`explain` counts, per level
of the tree that :mod:`kafka_replica_assignor.assignors.multi_level` builds from the racks (the same rules, so
``r1`` is ``/r1`` and shorter paths are padded), how many replicas and leaders each node
holds; :func:`format_levels` prints that as plain text. Level 1 is the top of the rack
paths, the last level the brokers; without racks there is only the broker level.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from .errors import ReplicaAssignorError
from .model import ClusterView
from .multi_level import format_rack, rack_paths

__all__ = ["LevelLoad", "NodeLoad", "explain", "format_levels", "level_kind"]


@dataclass(frozen=True, slots=True)
class NodeLoad:
    """One node of a level: a rack path (``/dc1/r2``) or a broker (``broker 7``)."""

    name: str
    brokers: int
    replicas: int
    leaders: int


@dataclass(frozen=True, slots=True)
class LevelLoad:
    """The nodes of one level, in sorted order (brokers by id)."""

    level: int
    title: str
    nodes: tuple[NodeLoad, ...]
    kind: str = ""      # what the level is: "data centre", "zone", "rack", "broker", ...

    @property
    def replica_range(self) -> tuple[int, int]:
        return min(n.replicas for n in self.nodes), max(n.replicas for n in self.nodes)

    @property
    def leader_range(self) -> tuple[int, int]:
        return min(n.leaders for n in self.nodes), max(n.leaders for n in self.nodes)


def explain(assignment: Mapping[int, Sequence[int]], cluster: ClusterView) -> list[LevelLoad]:
    """Replicas and leaders per node, for every level of the cluster's rack tree.

    Every broker of the cluster view appears (with zeros if it holds nothing). A replica on
    a broker outside the view, or racks the rule refuses, raise :class:`ValueError`.
    """
    try:
        paths = rack_paths(cluster.brokers)
    except ReplicaAssignorError as exc:
        raise ValueError(exc.message) from None
    unknown = sorted({b for replicas in assignment.values() for b in replicas if b not in paths})
    if unknown:
        raise ValueError(f"brokers {unknown[:10]} are not in the cluster view")
    depth = len(next(iter(paths.values()), ()))
    replicas_on = dict.fromkeys(paths, 0)
    leaders_on = dict.fromkeys(paths, 0)
    for replicas in assignment.values():
        for b in replicas:
            replicas_on[b] += 1
        if replicas:
            leaders_on[replicas[0]] += 1
    levels = []
    for level in range(1, depth + 1):
        loads: dict[tuple[str, ...], list[int]] = {}
        for b, path in paths.items():
            load = loads.setdefault(path[:level], [0, 0, 0])
            load[0] += 1
            load[1] += replicas_on[b]
            load[2] += leaders_on[b]
        nodes = tuple(NodeLoad(format_rack(prefix), *loads[prefix]) for prefix in sorted(loads))
        kind = level_kind({path[level - 1] for path in paths.values()}, level, depth)
        levels.append(LevelLoad(level, f"level {level}", nodes, kind))
    brokers = tuple(
        NodeLoad(f"broker {b}", 1, replicas_on[b], leaders_on[b]) for b in sorted(paths)
    )
    levels.append(LevelLoad(depth + 1, "brokers", brokers, "broker"))
    return levels


_KINDS = {"dc": "data centre", "datacenter": "data centre", "datacentre": "data centre",
          "region": "region", "zone": "zone", "az": "zone", "room": "room", "row": "row",
          "rack": "rack", "r": "rack", "pod": "pod", "host": "host"}
_POSITIONAL = {1: ("rack",), 2: ("data centre", "rack"), 3: ("data centre", "zone", "rack")}


def level_kind(components: Iterable[str], level: int, depth: int) -> str:
    """What a level of the rack tree is, as its paths name it: the word the components share
    once their numbering is dropped (``dc1``, ``dc2``: data centre; ``zone-a``: zone;
    ``rack-3``, ``r1``: rack), else by position (data centre, zone, rack from the top)."""
    words = {"" if len(c) == 1 else _WORD.sub("", c).lower() for c in components}
    if len(words) == 1:
        word = words.pop()
        if word:
            return _KINDS.get(word, word)
    names = _POSITIONAL.get(depth)
    return names[level - 1] if names else f"level {level}"


_WORD = re.compile(r"([-_.]?[0-9]+|[-_.][A-Za-z])$")


def format_levels(levels: Sequence[LevelLoad], max_nodes: int | None = None) -> str:
    """Plain text: a summary line per level, then one line per node (at most ``max_nodes``)."""
    lines = []
    for level in levels:
        r_low, r_high = level.replica_range
        l_low, l_high = level.leader_range
        lines.append(
            f"{level.title}: {len(level.nodes)} node{'s' if len(level.nodes) != 1 else ''}, "
            f"replicas {r_low}..{r_high} (spread {r_high - r_low}), "
            f"leaders {l_low}..{l_high} (spread {l_high - l_low})"
        )
        shown = level.nodes if max_nodes is None else level.nodes[:max_nodes]
        width = max(len(n.name) for n in shown)
        for node in shown:
            lines.append(
                f"  {node.name:<{width}}  brokers {node.brokers:>5}  "
                f"replicas {node.replicas:>7}  leaders {node.leaders:>6}"
            )
        if len(shown) < len(level.nodes):
            lines.append(f"  ... {len(level.nodes) - len(shown)} more")
    return "\n".join(lines)
