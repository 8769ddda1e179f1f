"""Histogram charts at 300 and 1,000 brokers: the after-distribution at its own scale, the
brokers outside the band marked and named (the figure's data, not its pixels)."""

from __future__ import annotations

from random import Random

import numpy as np
import pytest

from kafka_replica_assignor.cluster.snapshot import BrokerEntry, ClusterSnapshot, PartitionEntry
from kafka_replica_assignor.planner.plan import Plan
from kafka_replica_assignor.planner.report.charts import chart_figures, histogram_view
from kafka_replica_assignor.planner.request import PlanRequest

HOT = (7, 150, 299)


def snapshot_of(owners: list[int], brokers: int) -> ClusterSnapshot:
    """One single-replica partition per entry of ``owners``."""
    return ClusterSnapshot(tuple(BrokerEntry(b) for b in range(brokers)),
                           tuple(PartitionEntry("t", n, (b,)) for n, b in enumerate(owners)))


@pytest.mark.parametrize("brokers", [300, 1000])
def test_three_hot_brokers_no_longer_squeeze_the_histogram(brokers: int) -> None:
    rng = Random(brokers)
    after = {b: 300 + b % 7 if b in HOT else rng.randint(27, 33) for b in range(brokers)}
    owners_after = [b for b in range(brokers) for _ in range(after[b])]
    owners_before = [b for b in HOT for _ in range(400)]
    owners_before += [rng.randrange(brokers) for _ in range(len(owners_after) - len(owners_before))]
    before = dict.fromkeys(range(brokers), 0)
    for b in owners_before:
        before[b] += 1
    plan = Plan(snapshot_of(owners_before, brokers), snapshot_of(owners_after, brokers),
                bounds=(("replicas_band_lo", 27), ("replicas_band_hi", 33)))
    request = PlanRequest("replica")
    ax = chart_figures(plan, request)["replicas.png"].axes[0]
    low, high = ax.get_xlim()
    assert 20 <= low <= 27 and 33 <= high <= 40                    # the band's scale, not 0-400
    view = histogram_view(list(after), list(before.values()), list(after.values()), (27, 33), integer=True)
    assert (view.low, view.high) == (low, high)
    filled = np.histogram(list(after.values()), bins=np.array(view.edges))[0]
    assert (filled > 0).sum() == 7                                  # one bin per count 27..33
    assert filled.sum() == brokers - len(HOT)
    assert [b for b, _ in view.outliers] == sorted(HOT, key=lambda b: (-(300 + b % 7), b))
    assert view.before_outside == sum(not low <= v <= high for v in before.values())
    named = " ".join(t.get_text() for t in ax.texts)
    assert all(f"{b} ({300 + b % 7})" in named for b in HOT), named
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "outside the band after: 3" in legend and any(t.startswith("before (") for t in legend)


def test_without_a_band_the_middle_of_the_distribution_sets_the_scale() -> None:
    rng = Random(1)
    after = [rng.uniform(90, 110) for _ in range(1000)] + [5000.0, 7000.0]
    view = histogram_view(list(range(1002)), after, after, None, integer=False)
    assert 85 < view.low < 95 and 105 < view.high < 115 and len(view.edges) == 61
    assert {b for b, _ in view.outliers} >= {1000, 1001}
    assert view.outliers[0] == (1001, 7000.0)


def _small_cluster() -> ClusterSnapshot:
    """6 brokers, 24 partitions of RF 2 on brokers 0-5."""
    return ClusterSnapshot(tuple(BrokerEntry(b) for b in range(6)),
                           tuple(PartitionEntry("t", n, (n % 6, (n + 1) % 6), size_bytes=10) for n in range(24)))


def test_a_long_bootstrap_list_is_shortened_until_the_title_fits() -> None:
    from kafka_replica_assignor.planner.solving.planning import make_plan
    from tests.planning import request_of

    servers = ",".join(f"kafka-broker-{k}.eu-west-1.internal.example.com:9092" for k in range(12))
    request = request_of("cluster", source=servers)
    plan = make_plan(_small_cluster(), request)
    for name, figure in chart_figures(plan, request).items():
        drawn = figure.get_tightbbox(figure.canvas.get_renderer())     # every text's extent, inches
        assert drawn.x1 <= figure.get_figwidth(), (name, drawn)
        text = figure.axes[0].get_title(loc="left")
        assert text.startswith(("Replicas per broker, before and after: k",
                                "Preferred leaders per broker, before and after: k",
                                "Disk (GiB) per broker, before and after: k"))
        assert text.endswith(" (11 more), mode cluster"), text


def test_the_leader_band_drawn_after_removing_brokers_is_the_leader_goals() -> None:
    from kafka_replica_assignor.planner.goals.leaders import LeaderGoal
    from kafka_replica_assignor.planner.report.figures import plan_figures
    from kafka_replica_assignor.planner.solving.planning import make_plan
    from tests.planning import request_of

    request = request_of("cluster", remove=(4, 5))
    plan = make_plan(_small_cluster(), request)
    after = plan_figures(plan, request.scope.removed)[1]
    lo, hi = LeaderGoal.band(plan, after)
    assert (lo, hi) == (6, 6)       # 24 leaderships over the 4 brokers that remain
    ax = chart_figures(plan, request)["leaders.png"].axes[0]
    (band,) = [p.get_path().transformed(p.get_patch_transform()).vertices[:, 1] for p in ax.patches]
    assert (band.min(), band.max()) == (lo - 0.5, hi + 0.5)
