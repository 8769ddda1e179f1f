"""The Markdown report of a plan: summary, notes, bounds, per broker and per rack, moves.

Pure and deterministic: the same plan and settings give the same text (no clock, no paths).
"""

from __future__ import annotations

from .outputs import PlanSettings
from .plan import MoveKind, Plan
from .state import ClusterState, describe

MOVES_SHOWN = 100

BOUND_TEXT = {
    "repairs_needed": "replicas to repair (placeholders, dead, unknown or forgotten brokers)",
    "replica_moves_lower_bound": "replica moves lower bound: repairs + sum(max(0, count - hi))",
    "replica_moves_tight_bound": "replica moves lower bound: max(that, sum(max(0, lo - count)))",
    "replica_moves_bound_given_racks": "replica moves needed given the racks (rack diversity kept)",
    "replicas_band_lo": "replica band low end (lo)",
    "replicas_band_hi": "replica band high end (hi)",
    "leader_changes_lower_bound": "leader changes lower bound: sum(max(0, leaders - ceil))",
    "leader_changes_optimum": "leader changes, proven minimum for these replica lists",
    "leaders_floor": "leader band floor(P/B)",
    "leaders_ceil": "leader band ceil(P/B)",
}


def _row(cells: list[object]) -> str:
    return "| " + " | ".join("-" if c is None else str(c) for c in cells) + " |"


def _range(state: ClusterState, which: str) -> str:
    s = state.replicas_spread if which == "replicas" else state.leaders_spread
    return f"{s.min}-{s.max}"


def render_report(plan: Plan, settings: PlanSettings) -> str:
    before, after = describe(plan.before, topics=False), describe(plan.after, topics=False)
    lines = [f"# Balance plan: {settings.mode}", ""]
    opts = [f"mode `{settings.mode}`", f"threshold {settings.threshold}%"]
    if settings.max_moves is not None:
        opts.append(f"max moves {settings.max_moves}")
    if settings.max_leader_changes is not None:
        opts.append(f"max leader changes {settings.max_leader_changes}")
    if settings.batch_size:
        opts.append(f"batches of {settings.batch_size}")
    if settings.source:
        opts.append(f"input {settings.source}")
    alive = sum(b.alive for b in before.brokers)
    lines += [
        f"{len(before.brokers)} brokers ({alive} alive), {before.partitions} partitions, "
        f"{before.replicas} replicas; " + ", ".join(opts) + ".",
        "",
        "## Summary",
        "",
        "| | before | after | ideal |",
        "|---|---|---|---|",
        _row(["replicas per alive broker", _range(before, "replicas"), _range(after, "replicas"),
              f"{after.replicas_spread.floor}-{after.replicas_spread.ceil}"]),
        _row(["preferred leaders per alive broker", _range(before, "leaders"), _range(after, "leaders"),
              f"{after.leaders_spread.floor}-{after.leaders_spread.ceil}"]),
        _row(["partitions lacking rack diversity", len(before.not_diverse), len(after.not_diverse), 0]),
        _row(["replicas on dead or unknown brokers", len(before.on_dead) + len(before.on_unknown),
              len(after.on_dead) + len(after.on_unknown), 0]),
        _row(["placeholders", len(before.placeholders), len(after.placeholders), 0]),
        "",
        f"- replica moves: **{plan.replica_moves}** ({plan.repairs} repairs), "
        f"partitions reassigned: {len(plan.changed())}",
        f"- leader changes: **{plan.leader_changes}** "
        f"(partitions in `leader-election.json`: {len(plan.leader_changed())})",
        "",
    ]
    if plan.bounds:
        lines += ["## Lower bounds and optima", "", "| bound | value |", "|---|---|"]
        lines += [_row([BOUND_TEXT.get(k, k), v]) for k, v in plan.bounds]
        lines.append("")
    lines += ["## Notes", ""]
    lines += [f"- {n}" for n in plan.notes] or ["- none: every target was reached."]
    lines += ["", "## Per broker", "",
              "| broker | rack | alive | replicas before | replicas after | leaders before | leaders after |",
              "|---|---|---|---|---|---|---|"]
    after_by_id = {b.id: b for b in after.brokers}
    for b in before.brokers:
        a = after_by_id[b.id]
        lines.append(_row([b.id, b.rack, "yes" if b.alive else "no", b.replicas, a.replicas,
                           b.leaders, a.leaders]))
    for b in before.unknown_brokers:
        a = next((x for x in after.unknown_brokers if x.id == b.id), None)
        lines.append(_row([b.id, "?", "unknown", b.replicas, a.replicas if a else 0, b.leaders,
                           a.leaders if a else 0]))
    if before.racks:
        lines += ["", "## Per rack", "",
                  "| rack | level | alive brokers | replicas before | replicas after | leaders before "
                  "| leaders after |",
                  "|---|---|---|---|---|---|---|"]
        after_racks = {(r.level, r.rack): r for r in after.racks}
        for r in before.racks:
            a = after_racks.get((r.level, r.rack))
            lines.append(_row([r.rack, r.level, r.brokers, r.replicas, a.replicas if a else 0,
                               r.leaders, a.leaders if a else 0]))
    lines += ["", "## Moves", ""]
    kinds = {k: sum(1 for m in plan.moves if m.kind is k) for k in MoveKind}
    lines.append(", ".join(f"{v} {k.value}" for k, v in kinds.items()) + " (all in `moves.csv`).")
    if plan.moves:
        lines += ["", "| # | kind | topic | partition | from | to |", "|---|---|---|---|---|---|"]
        for n, m in enumerate(plan.moves[:MOVES_SHOWN], 1):
            lines.append(_row([n, m.kind.value, m.topic, m.partition, m.source, m.destination]))
        if len(plan.moves) > MOVES_SHOWN:
            lines.append(f"\n... and {len(plan.moves) - MOVES_SHOWN} more.")
    lines += [
        "", "## Applying it", "",
        "```",
        "kafka-reassign-partitions.sh --bootstrap-server HOST:9092 --execute \\",
        "    --reassignment-json-file reassignment.json   # or each reassignment-NNNN.json in turn",
        "kafka-reassign-partitions.sh --bootstrap-server HOST:9092 --verify \\",
        "    --reassignment-json-file reassignment.json",
        "kafka-leader-election.sh --bootstrap-server HOST:9092 --election-type preferred \\",
        "    --path-to-json-file leader-election.json",
        "```",
        "",
        "`rollback.json` restores the current replica lists.",
        "",
    ]
    return "\n".join(lines)
