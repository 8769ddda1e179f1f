"""PNG charts of a plan: replicas and preferred leaders per broker, before and after.

matplotlib with the Agg backend (no display), no software or date metadata in the PNG, so the
bytes depend only on the plan (and the matplotlib version).
"""

from __future__ import annotations

import io
from collections import Counter

from assignors.snapshot import ClusterSnapshot

from .plan import Plan


def _counts(snapshot: ClusterSnapshot, brokers: list[int]) -> tuple[list[int], list[int]]:
    replicas: Counter = Counter()
    leaders: Counter = Counter()
    for p in snapshot.partitions:
        replicas.update(p.replicas)
        leaders[p.replicas[0]] += 1
    return [replicas[b] for b in brokers], [leaders[b] for b in brokers]


def render_charts(plan: Plan) -> dict[str, bytes]:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    brokers = sorted(b.id for b in plan.before.brokers)
    rep_before, lead_before = _counts(plan.before, brokers)
    rep_after, lead_after = _counts(plan.after, brokers)
    alive = {b.id for b in plan.before.brokers if b.alive}
    out = {}
    n = len(brokers)
    edges = [x - 0.5 for x in range(n + 1)]
    for name, title, before, after in (
        ("replicas.png", "Replicas per broker", rep_before, rep_after),
        ("leaders.png", "Preferred leaders per broker", lead_before, lead_after),
    ):
        width = min(24.0, max(6.0, 0.12 * n + 2))
        fig = Figure(figsize=(width, 4), dpi=80)
        fig.subplots_adjust(left=0.06, right=0.98, top=0.9, bottom=0.22)
        ax = fig.add_subplot()
        # one artist per series (stairs), not one per bar: fast at a thousand brokers
        ax.stairs(after, edges, fill=True, color="#1f77b4", alpha=0.75, label="after")
        ax.stairs(before, edges, color="#444444", linewidth=1.2, label="before")
        ax.axhline(sum(after) / (len(alive) or 1), color="#d62728", linewidth=1, linestyle="--",
                   label="mean")
        step = max(1, n // 40)
        ax.set_xlim(-0.5, n - 0.5)
        ax.set_xticks(list(range(n))[::step])
        ax.set_xticklabels([str(b) if b in alive else f"{b}\u2020" for b in brokers][::step],
                           rotation=90 if n > 20 else 0, fontsize=7)
        ax.set_xlabel("broker (\u2020 dead)")
        ax.set_title(title)
        ax.legend(loc="upper right", fontsize=8)
        buf = io.BytesIO()
        fig.savefig(buf, format="png", metadata={"Software": None})
        out[name] = buf.getvalue()
    return out
