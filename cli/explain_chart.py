"""A PNG chart of :func:`kafka_replica_assignor.assignors.explain.explain`: one panel per level of the rack tree.

Each panel is named by its level (data centre, zone, rack, broker, as the rack paths give them:
:func:`kafka_replica_assignor.assignors.explain.level_kind`) and shows, per node, its replicas and its preferred
leaders as bars (integer ticks, the legend outside), with the spread (highest minus lowest) in
its title; the figure has a title of its own. Uses matplotlib's object API with the Agg
canvas (no pyplot, no global state, no display needed).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

from kafka_replica_assignor.assignors.explain import LevelLoad

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["chart_figure", "write_chart"]

_MAX_LABELS = 40


def chart_figure(levels: Sequence[LevelLoad], title: str = "Replicas and preferred leaders per level") -> Figure:
    """The chart of ``levels`` as a matplotlib figure (for tests and :func:`write_chart`)."""
    if not levels:
        raise ValueError("no levels to chart")
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    figure = Figure(figsize=(10, 2.8 * len(levels) + 0.5), layout="constrained")
    FigureCanvasAgg(figure)
    figure.suptitle(title, fontsize=12)
    for row, level in enumerate(levels):
        axes = figure.add_subplot(len(levels), 1, row + 1)
        xs = range(len(level.nodes))
        axes.bar([x - 0.2 for x in xs], [n.replicas for n in level.nodes], 0.4, label="replicas")
        axes.bar([x + 0.2 for x in xs], [n.leaders for n in level.nodes], 0.4, label="preferred leaders")
        r_low, r_high = level.replica_range
        l_low, l_high = level.leader_range
        kind = level.kind or level.title
        name = f"{level.title}: {kind}" if kind != level.title and level.title != "brokers" else kind
        axes.set_title(
            f"{name}: replicas {r_low}..{r_high} (spread {r_high - r_low}), "
            f"leaders {l_low}..{l_high} (spread {l_high - l_low})",
            fontsize=10, loc="left",
        )
        axes.set_ylabel("count")
        axes.yaxis.set_major_locator(MaxNLocator(integer=True))
        if len(level.nodes) <= _MAX_LABELS:
            axes.set_xticks(list(xs), [n.name for n in level.nodes], rotation=45, ha="right", fontsize=8)
            axes.set_xlabel(kind)
        else:
            axes.set_xticks([])
            axes.set_xlabel(f"{len(level.nodes)} nodes ({kind})")
        axes.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    return figure


def write_chart(levels: Sequence[LevelLoad], path: str | os.PathLike[str],
                title: str = "Replicas and preferred leaders per level") -> None:
    """Write the chart of ``levels`` to ``path`` as a PNG."""
    chart_figure(levels, title).savefig(os.fspath(path), format="png", dpi=100)
