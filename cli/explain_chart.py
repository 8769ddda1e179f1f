"""A PNG chart of :func:`assignors.explain.explain`: one panel per level of the rack tree.

Each panel shows, per node, its replicas and its preferred leaders as bars, with the
spread (highest minus lowest) in the title. Uses matplotlib's object API with the Agg
canvas (no pyplot, no global state, no display needed).
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from assignors.explain import LevelLoad

__all__ = ["write_chart"]

_MAX_LABELS = 40


def write_chart(levels: Sequence[LevelLoad], path: str | os.PathLike[str]) -> None:
    """Write the chart of ``levels`` to ``path`` as a PNG."""
    if not levels:
        raise ValueError("no levels to chart")
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(10, 2.8 * len(levels)), layout="constrained")
    FigureCanvasAgg(figure)
    for row, level in enumerate(levels):
        axes = figure.add_subplot(len(levels), 1, row + 1)
        xs = range(len(level.nodes))
        axes.bar([x - 0.2 for x in xs], [n.replicas for n in level.nodes], 0.4, label="replicas")
        axes.bar([x + 0.2 for x in xs], [n.leaders for n in level.nodes], 0.4, label="leaders")
        r_low, r_high = level.replica_range
        l_low, l_high = level.leader_range
        axes.set_title(
            f"{level.title}: replicas {r_low}..{r_high} (spread {r_high - r_low}), "
            f"leaders {l_low}..{l_high} (spread {l_high - l_low})",
            fontsize=10,
        )
        if len(level.nodes) <= _MAX_LABELS:
            axes.set_xticks(list(xs), [n.name for n in level.nodes], rotation=45, ha="right", fontsize=8)
        else:
            axes.set_xticks([])
            axes.set_xlabel(f"{len(level.nodes)} nodes")
        axes.legend(loc="lower right", fontsize=8)
    figure.savefig(os.fspath(path), format="png", dpi=100)
