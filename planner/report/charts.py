"""PNG charts of a plan: replicas, preferred leaders, (with sizes) disk and (with rates) network-in and
network-out per broker, before and after.

Made to be read at a glance, at any size of cluster:

- up to :data:`PER_BROKER` brokers, one bar per broker (the count after the plan) with a mark for
  the count before; bars have gaps and edges, so neighbours stay apart when the PNG is shown
  small. Brokers that are dead (``†``), being decommissioned (``‡``, ``--forget``) or unknown to
  the snapshot (``?``) get their own colour and a mark on their tick label, and the axis title
  explains only the marks that occur;
- past that, a histogram: how many alive brokers hold each count, before and after, with the
  brokers that are not alive counted in the title. Its x axis is the scale of the
  after-distribution (the band and the brokers inside it, :func:`histogram_view`), not the
  extremes: brokers outside the band after the plan are marked at the axis (a red triangle at
  their value, or at the edge when beyond it) and named with their value, furthest out first,
  and before-values off the axis are counted in the legend;
- integer ticks on counts, axis labels with their unit (replicas, leaders, GiB, MB/s), the balance
  band (at the plan's threshold) shaded, the legend outside the plot, and a title naming the
  cluster (the input's file name) and the mode.

matplotlib's object API with the Agg canvas (no pyplot, no display, no global state), one artist
per series; no software or date metadata in the PNG, so the bytes depend only on the plan (and
the matplotlib version). :func:`chart_figures` returns the figures themselves, for tests.
"""

from __future__ import annotations

import io
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kafka_replica_assignor.planner.goals.leaders import LeaderGoal
from kafka_replica_assignor.planner.goals.traffic import UNIT, rated, snapshot_figures
from kafka_replica_assignor.planner.plan import Plan
from kafka_replica_assignor.planner.report.figures import Figures, plan_figures
from kafka_replica_assignor.planner.request import PlanRequest

if TYPE_CHECKING:
    from matplotlib.artist import Artist
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from kafka_replica_assignor.cluster.snapshot import ClusterSnapshot

__all__ = ["PER_BROKER", "HistogramView", "chart_figures", "histogram_view", "render_charts"]

PER_BROKER = 120          # brokers drawn one bar each; beyond, a histogram
OUTLIERS_NAMED = 12       # brokers outside the band named on a histogram
GIB = float(1 << 30)
MB = 1e6                  # network charts in MB/s (decimal, as link speeds are)
NETWORK = {"network_in": ("MB/s", "Network-in (MB/s)"), "network_out": ("MB/s", "Network-out (MB/s)")}
BAND = "#2ca02c"
COLOURS = {"alive": "#1f77b4", "dead": "#d62728", "forgotten": "#ff7f0e", "unknown": "#7f7f7f"}
MARKS = {"alive": "", "dead": "\u2020", "forgotten": "\u2021", "unknown": "?"}
WORDS = {"dead": "dead", "forgotten": "forgotten", "unknown": "unknown"}


def _cluster_name(request: PlanRequest) -> str:
    source = request.source.rstrip("/")
    if not source:
        return "cluster"
    name = os.path.basename(source)
    return name or source


def _status(fig: Figures, forgotten: frozenset[int]) -> tuple[list[int], list[str]]:
    """Every broker to draw (known ones by id, then unknown ones) and its status."""
    ids, status = [], []
    for b in fig.brokers:
        ids.append(b.id)
        status.append("dead" if not b.alive else "forgotten" if b.id in forgotten else "alive")
    for b in fig.unknown_brokers:
        ids.append(b.id)
        status.append("unknown")
    return ids, status


def _values(fig: Figures, ids: Sequence[int], which: str) -> list[float]:
    by_id = {b.id: b for b in (*fig.brokers, *fig.unknown_brokers)}
    out: list[float] = []
    for b in ids:
        s = by_id.get(b)
        if s is None:
            out.append(0)
        elif which == "replicas":
            out.append(s.replicas)
        elif which == "leaders":
            out.append(s.leaders)
        else:
            out.append(s.bytes / GIB)
    return out


def _new_figure(n: int, rotated: bool) -> Figure:
    """A figure with fixed margins in inches (no layout engine: one draw per PNG): room for
    the y tick labels and axis title on the left, the legend on the right, rotated broker ids
    and the x axis title below."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    width = min(14.0, max(6.4, 0.07 * n + 4.2)) if n <= PER_BROKER else 9.0
    height = 4.2
    figure = Figure(figsize=(width, height), dpi=100)
    FigureCanvasAgg(figure)
    bottom = 1.05 if rotated else 0.6
    figure.subplots_adjust(left=0.95 / width, right=1 - 2.3 / width, top=1 - 0.4 / height,
                           bottom=bottom / height)
    return figure


def _per_broker(ax: Axes, ids: list[int], status: list[str], before: list[float], after: list[float],
                integer: bool) -> tuple[str, list[Artist]]:
    """Bars after (one collection), marks before; returns the x axis title and legend handles."""
    from matplotlib.collections import PolyCollection
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    n = len(ids)
    half = 0.36
    bars = PolyCollection([[(x - half, 0.0), (x - half, v), (x + half, v), (x + half, 0.0)]
                           for x, v in enumerate(after)],
                          facecolors=[COLOURS[s] for s in status], edgecolors="none", zorder=2)
    ax.add_collection(bars)
    xs = list(range(n))
    ax.plot(xs, before, linestyle="none", marker="_", markersize=max(3.0, min(14.0, 420.0 / max(n, 1))),
            markeredgewidth=1.5, color="black", zorder=3)
    top = max([*after, *before, 0.0])
    ax.set_ylim(0, top * 1.08 if top else 1)
    handles: list[Artist] = [Patch(color=COLOURS["alive"], label="after"),
                             Line2D([], [], linestyle="none", marker="_", markersize=10, markeredgewidth=1.5,
                                    color="black", label="before")]
    handles += [Patch(color=COLOURS[s], label=f"{WORDS[s]} ({MARKS[s]})")
                for s in ("dead", "forgotten", "unknown") if s in status]
    step = max(1, -(-n // 40))
    ax.set_xticks(xs[::step], [f"{b}{MARKS[s]}" for b, s in zip(ids, status, strict=True)][::step],
                  rotation=90 if n > 16 else 0, fontsize=7 if n > 16 else 8)
    ax.set_xlim(-0.6, n - 0.4)
    marks = [f"{MARKS[s]} {WORDS[s]}" for s in ("dead", "forgotten", "unknown") if s in status]
    title = "broker"
    if step > 1:
        title += f" (one in {step} labelled)"
    return title + (f" ({', '.join(marks)})" if marks else ""), handles


@dataclass(frozen=True, slots=True)
class HistogramView:
    """What a histogram chart shows: its x range and bin edges (from the after-distribution),
    the alive brokers outside the band after the plan, ``(broker, value)`` furthest out first,
    and how many before-values fall outside the range."""

    low: float
    high: float
    edges: tuple[float, ...]
    outliers: tuple[tuple[int, float], ...]
    before_outside: int


def histogram_view(ids: Sequence[int], before: Sequence[float], after: Sequence[float],
                   band: tuple[float, float] | None, integer: bool) -> HistogramView:
    """The after-distribution at its own scale (the module doc): the range spans the band and
    the after-values inside it (without a band: the middle 90 % of them), padded by 5 %;
    brokers outside the band are outliers, drawn as marks at the edge and named, so a few hot
    brokers no longer squeeze every other one into a bin or two."""
    import numpy as np

    pairs = sorted(zip(after, ids, strict=True))
    values = [v for v, _ in pairs] or [0.0]
    if band is not None:
        lo, hi = band
        inside = [v for v in values if lo <= v <= hi]
        core = [*inside, lo, hi] if inside else [*values[len(values) // 20:len(values) - len(values) // 20], lo, hi]
        outliers = [(b, v) for v, b in pairs if not lo <= v <= hi]
        centre = (lo + hi) / 2
    else:
        core = values[len(values) // 20:len(values) - len(values) // 20] or values
        outliers = [(b, v) for v, b in pairs if not core[0] <= v <= core[-1]]
        centre = (core[0] + core[-1]) / 2
    low, high = min(core), max(core)
    pad = max((high - low) * 0.05, 1.0 if integer else 1e-9)
    low, high = low - pad, high + pad
    if integer:
        low, high = float(np.floor(low)) - 0.5, float(np.ceil(high)) + 0.5
        width = max(1, -(-int(high - low) // 60))
        edges = tuple(float(e) for e in np.arange(low, high + width, width))
        high = edges[-1]
    else:
        edges = tuple(float(e) for e in np.linspace(low, high, 61))
    outliers.sort(key=lambda o: (-abs(o[1] - centre), o[0]))
    return HistogramView(low, high, edges, tuple(outliers), sum(not low <= v <= high for v in before))


def _histogram(ax: Axes, status: list[str], ids: list[int], before: list[float], after: list[float],
               unit: str, integer: bool, band: tuple[float, float] | None) -> tuple[str, list[Artist]]:
    """How many alive brokers hold each count, after (filled) and before (outline), over the
    range of :func:`histogram_view`; brokers outside the band marked at the edges and named."""
    import numpy as np
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    alive = [k for k, s in enumerate(status) if s == "alive"]
    alive_ids = [ids[k] for k in alive]
    alive_before, alive_after = [before[k] for k in alive], [after[k] for k in alive]
    view = histogram_view(alive_ids, alive_before, alive_after, band, integer)
    edges = np.array(view.edges)
    counts_after, counts_before = np.histogram(alive_after, bins=edges)[0], np.histogram(alive_before, bins=edges)[0]
    ax.stairs(counts_after, edges, fill=True, color=COLOURS["alive"], alpha=0.8, zorder=2)
    ax.stairs(counts_before, edges, color="black", linewidth=1.2, zorder=3)
    ax.set_xlim(view.low, view.high)
    ax.set_ylim(0, max(int(counts_after.max()), int(counts_before.max()), 1) * (1.2 if view.outliers else 1.05))
    handles: list[Artist] = [Patch(color=COLOURS["alive"], alpha=0.8, label="after"),
                             Line2D([], [], color="black", linewidth=1.2,
                                    label="before" + (f" ({view.before_outside} off the axis)"
                                                      if view.before_outside else ""))]
    if view.outliers:
        shown = view.outliers[:OUTLIERS_NAMED]
        xs = [min(max(v, view.low), view.high) for _, v in view.outliers]
        ax.plot(xs, [0.0] * len(xs), linestyle="none", marker="v", markersize=7, color=COLOURS["dead"],
                clip_on=False, zorder=4)
        digits = 0 if integer else 1
        names = ", ".join(f"{b} ({v:.{digits}f})" for b, v in shown)
        more = f", +{len(view.outliers) - len(shown)} more" if len(view.outliers) > len(shown) else ""
        handles.append(Line2D([], [], linestyle="none", marker="v", markersize=7, color=COLOURS["dead"],
                              label=f"outside the band after: {len(view.outliers)}"))
        ax.text(0.01, 0.98, f"outside the band: {names}{more}", transform=ax.transAxes, fontsize=7,
                va="top", ha="left", wrap=True, zorder=5,
                bbox={"facecolor": "white", "edgecolor": "#cccccc", "alpha": 0.9})
    return f"{unit} per alive broker (scale of the after-distribution)", handles


def _chart(fig_before: Figures, fig_after: Figures, plan: Plan, request: PlanRequest, which: str) -> Figure:
    from matplotlib.patches import Patch
    from matplotlib.ticker import MaxNLocator

    forgotten = frozenset(request.scope.remove_brokers)
    ids, status = _status(fig_before, forgotten)
    known = set(ids)
    extra = [b.id for b in fig_after.unknown_brokers if b.id not in known]
    ids += extra
    status += ["unknown"] * len(extra)
    if which in NETWORK:
        before, after = _rates(plan.before, ids, which), _rates(plan.after, ids, which)
    else:
        before, after = _values(fig_before, ids, which), _values(fig_after, ids, which)
    unit, what = {"replicas": ("replicas", "Replicas"), "leaders": ("preferred leaders", "Preferred leaders"),
                  "bytes": ("GiB", "Disk (GiB)"), **NETWORK}[which]
    integer = which in ("replicas", "leaders")
    n = len(ids)
    per_broker = n <= PER_BROKER
    figure = _new_figure(n, rotated=per_broker and n > 16)
    ax = figure.add_subplot()
    band = _band(fig_after, plan, request, which)
    pad = 0.5 if integer else 0.0
    if per_broker:
        xlabel, handles = _per_broker(ax, ids, status, before, after, integer)
        ax.set_ylabel(f"{unit} per broker")
        if band is not None:
            ax.axhspan(band[0] - pad, band[1] + pad, color=BAND, alpha=0.25, zorder=1)
        if integer:
            ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    else:
        xlabel, handles = _histogram(ax, status, ids, before, after, unit, integer,
                                     None if band is None else (band[0], band[1]))
        ax.set_ylabel("alive brokers")
        if band is not None:
            ax.axvspan(band[0] - pad, band[1] + pad, color=BAND, alpha=0.25, zorder=1)
        if integer:
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        others = {s: status.count(s) for s in ("dead", "forgotten", "unknown") if s in status}
        if others:
            xlabel += " (not drawn: " + ", ".join(f"{c} {WORDS[s]}" for s, c in others.items()) + ")"
    if band is not None:
        handles.append(Patch(color=BAND, alpha=0.25, label=band[2]))
    ax.set_xlabel(xlabel)
    _fit_title(figure, ax, f"{what} per broker, before and after: ", _cluster_name(request), f", mode {request.mode}")
    ax.grid(axis="y", color="#dddddd", linewidth=0.6, zorder=0)
    ax.set_axisbelow(True)
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    return figure


def _fit_title(figure: Figure, ax: Axes, head: str, name: str, tail: str) -> None:
    """The title ``head + name + tail``, ``name`` shortened until the text ends inside the
    figure (measured by the canvas's renderer): a list of bootstrap servers to its first ones
    and how many more, any other name cut with an ellipsis."""
    renderer = figure.canvas.get_renderer()     # type: ignore[attr-defined]
    right = figure.bbox.x1 - 4
    servers = name.split(",")
    more = f" ({len(servers) - 1} more)" if len(servers) > 1 else ""
    shorter = [",".join(servers[:k]) + f",\u2026 ({len(servers) - k} more)" for k in range(len(servers) - 1, 0, -1)]
    first = servers[0]
    shorter += [first[:k] + "\u2026" + more for k in range(len(first) - 1, 0, -1)]
    for candidate in (name, *shorter):
        title = ax.set_title(head + candidate + tail, fontsize=10, loc="left")
        if title.get_window_extent(renderer).x1 <= right:
            return


def _rates(snapshot: ClusterSnapshot, ids: Sequence[int], which: str) -> list[float]:
    """A network figure (:mod:`kafka_replica_assignor.planner.goals.traffic`) per broker of
    ``ids``, in MB/s."""
    values = snapshot_figures(snapshot, ids)[which]
    return [values[b] / UNIT / MB for b in ids]


def _band(fig: Figures, plan: Plan, request: PlanRequest, which: str) -> tuple[float, float, str] | None:
    """The band to shade: the plan's replica, byte or network band, or the ideal leader band."""
    if which == "replicas":
        lo, hi = plan.bound("replicas_band_lo"), plan.bound("replicas_band_hi")
        if lo is None or hi is None:
            s = fig.replicas_spread
            return float(s.floor), float(s.ceil), "ideal band"
        return float(lo), float(hi), f"band at threshold {request.threshold_text}"
    if which == "leaders":     # the leader goal's band: its brokers (not removed ones), as the report's
        lo, hi = LeaderGoal.band(plan, fig)
        return float(lo), float(hi), "ideal band"
    name, scale = ("bytes", GIB) if which == "bytes" else (which, UNIT * MB)
    lo, hi = plan.bound(f"{name}_band_lo"), plan.bound(f"{name}_band_hi")
    if lo is None or hi is None:
        return None
    return lo / scale, hi / scale, f"band at threshold {request.threshold_text}"


def chart_figures(plan: Plan, request: PlanRequest, *,
                  figures: tuple[Figures, Figures] | None = None) -> dict[str, Figure]:
    """The charts as matplotlib figures, by file name (``disk.png`` only with sizes,
    ``network-in.png`` and ``network-out.png`` only with rates)."""
    before, after = figures if figures is not None else plan_figures(plan, request.scope.removed)
    out = {"replicas.png": _chart(before, after, plan, request, "replicas"),
           "leaders.png": _chart(before, after, plan, request, "leaders")}
    if before.sized:
        out["disk.png"] = _chart(before, after, plan, request, "bytes")
    if rated(plan.before):
        out["network-in.png"] = _chart(before, after, plan, request, "network_in")
        out["network-out.png"] = _chart(before, after, plan, request, "network_out")
    return out


def render_charts(plan: Plan, request: PlanRequest, *,
                  figures: tuple[Figures, Figures] | None = None) -> dict[str, bytes]:
    """The charts as PNG bytes, by file name."""
    out = {}
    for name, figure in chart_figures(plan, request, figures=figures).items():
        buf = io.BytesIO()
        figure.savefig(buf, format="png", metadata={"Software": None})
        out[name] = buf.getvalue()
    return out
