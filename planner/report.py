"""The Markdown report of a plan: summary, notes, bounds, per broker and per rack, moves.

Pure and deterministic: the same plan and settings give the same text (no clock, no paths).
"""

from __future__ import annotations

from .plan import MoveKind, Plan
from .settings import PlanSettings
from .state import ClusterState, describe

MOVES_SHOWN = 100

BOUND_TEXT = {
    "repairs_needed": "replicas to repair (placeholders, dead, unknown or forgotten brokers)",
    "replica_moves_lower_bound": "replica moves lower bound: repairs + sum(max(0, count - hi))",
    "replica_moves_tight_bound": "replica moves lower bound: max(that, sum(max(0, lo - count)))",
    "diversity_repairs_needed": "replica moves lower bound: one per missing rack of a partition",
    "bytes_band_lo": "byte band low end: mean - max(mean * threshold, largest partition)",
    "bytes_band_hi": "byte band high end: mean + max(mean * threshold, largest partition)",
    "bytes_moved_lower_bound": "bytes moved lower bound: max(bytes repaired + bytes above the band "
                               "or capacity, bytes missing below the band)",
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


def _bytes(state: ClusterState) -> str:
    alive = [b.bytes for b in state.brokers if b.alive]
    mean = sum(alive) / len(alive) if alive else 0
    if not mean:
        return "-"
    return f"{min(alive) / mean:.2f}-{max(alive) / mean:.2f} x mean"


def _topic_excess(state: ClusterState, brokers: int) -> int:
    """The most replicas of one topic on one broker beyond ``ceil(topic replicas / brokers) + 1``."""
    return max((t.broker_max - (-(-t.replicas // brokers) + 1) for t in state.topics), default=0)


def _over_capacity(state: ClusterState) -> int:
    return sum(1 for b in state.brokers
               if b.alive and b.capacity_bytes is not None and b.bytes > b.capacity_bytes)


def _objectives(plan: Plan, before: ClusterState, after: ClusterState) -> list[str]:
    """Each objective of :mod:`planner.replica_balance` before and after, with its target or
    lower bound; the notes say which constraint stops one that is not reached."""
    brokers = max(1, sum(b.alive for b in before.brokers))
    size = {(p.topic, p.partition): p.size_bytes or 0 for p in plan.before.partitions}
    moved = sum(size[(m.topic, m.partition)] for m in plan.moves if m.kind is not MoveKind.LEADER)
    lo, hi = plan.bound("replicas_band_lo"), plan.bound("replicas_band_hi")
    blo, bhi = plan.bound("bytes_band_lo"), plan.bound("bytes_band_hi")
    moves_bound = max((plan.bound(k) or 0) for k in
                      ("replica_moves_tight_bound", "diversity_repairs_needed", "repairs_needed"))
    rows: list[list[object]] = [
        ["1. partitions lacking rack diversity", len(before.not_diverse), len(after.not_diverse), 0],
        ["1. replicas on dead or unknown brokers, placeholders",
         len(before.on_dead) + len(before.on_unknown) + len(before.placeholders),
         len(after.on_dead) + len(after.on_unknown) + len(after.placeholders), 0],
        ["1. brokers above capacity_bytes", _over_capacity(before), _over_capacity(after), 0],
        ["2. replicas per alive broker", _range(before, "replicas"), _range(after, "replicas"),
         f"{lo}-{hi}" if lo is not None else "-"],
        ["2. bytes per alive broker", _bytes(before), _bytes(after),
         f"{blo}-{bhi} bytes" if blo is not None else "-"],
        ["2. worst topic: replicas on one broker above ceil(R/B) + 1", _topic_excess(before, brokers),
         _topic_excess(after, brokers), "0 (or forced by racks)"],
        ["3. preferred leaders per alive broker", _range(before, "leaders"), _range(after, "leaders"),
         f"{after.leaders_spread.floor}-{after.leaders_spread.ceil}"],
        ["4. replica moves", "", plan.replica_moves, f">= {moves_bound}"],
        ["4. bytes moved", "", moved, f">= {plan.bound('bytes_moved_lower_bound') or 0}"],
        ["4. leader changes", "", plan.leader_changes,
         f">= {plan.bound('leader_changes_lower_bound') or 0}"],
    ]
    return ["## Objectives", "", "| objective | before | after | target or lower bound |",
            "|---|---|---|---|", *(_row(r) for r in rows), "",
            "A target not reached is explained in the notes (the constraint that stops it).", ""]


def render_report(plan: Plan, settings: PlanSettings) -> str:
    before, after = describe(plan.before), describe(plan.after)
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
    lines += _objectives(plan, before, after)
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
