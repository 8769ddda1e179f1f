"""The Markdown report of a plan: summary, objectives, notes, bounds, batches, per broker and
per rack, moves, and how to run it.

Every bound and band names the threshold it uses (the balance band is ``avg * (1 +- threshold)``;
the *ideal* is the band at threshold 0). The objectives and the targets not reached are the
goals' own figures (:func:`kafka_replica_assignor.planner.goals.order.targets`: each goal says its figure, its target and
whether the plan reaches it). Every target that the plan leaves unreached gets a line
under "Targets not reached" naming what stops it (the mode, a budget, the brokers alive, or the
constraints in the planner's notes), so the notes never say "every target was reached" next to a
figure that misses its target.

Pure and deterministic: the same plan and request give the same text (no clock, no paths).
"""

from __future__ import annotations

from kafka_replica_assignor.planner.execution.batches import Execution, Limits, execution
from kafka_replica_assignor.planner.goals.goal import Target
from kafka_replica_assignor.planner.goals.leaders import LeaderGoal
from kafka_replica_assignor.planner.goals.order import GOALS, bound_texts, targets
from kafka_replica_assignor.planner.goals.replica_bytes import BOUND_KEY, bounds_that_hold
from kafka_replica_assignor.planner.plan import MoveKind, Plan
from kafka_replica_assignor.planner.report.figures import Figures, plan_figures
from kafka_replica_assignor.planner.request import PlanRequest

MOVES_SHOWN = 100
BATCHES_SHOWN = 100
COMMANDED_BATCHES = 20     # batches whose commands are written out one by one
NAMES_SHOWN = 20

BYTE_BOUNDS = {"diversity_bytes_needed": "racks lacking", "bytes_moved_lower_bound": "per-broker band",
               BOUND_KEY: "LP"}
"""The bytes-moved lower bounds, from the weakest to the strongest at equal value: the largest is shown."""


def bound_text(key: str) -> str:
    """The report's text of a bound: the goal's own (``{t}`` the threshold), or the LP bound's,
    which names the targets it kept (``bytes_moved_lp_bound:diversity,topics``)."""
    texts = bound_texts()
    if key in texts:
        return texts[key]
    head, _, kept = key.partition(":")
    if f"{head}:" in texts:     # a broker's own band (network-in where rack diversity sets it)
        return texts[f"{head}:"].replace("{b}", kept)
    if head == BOUND_KEY:
        names = {cls.key: cls.name for cls in GOALS}
        keeps = ", ".join(names.get(k, k) for k in kept.split(",") if k) or "no target"
        return ("bytes moved lower bound at threshold {t}: a linear program over brokers (HiGHS) of the hard "
                f"rules (repairs, capacities, the scope) and the targets {keeps} (planner/solving/bound.py)")
    return key


def _byte_bound(plan: Plan) -> tuple[int, str]:
    """The largest bytes-moved lower bound of the plan and what it is. The byte band's own
    bound is left out when the linear program found the band out of reach with the targets
    before it (it did not keep ``bytes``): it bounds plans within the band, and there are none."""
    best, how = 0, "per-broker band"
    hold = bounds_that_hold(dict(plan.bounds))
    for key, value in plan.bounds:
        kind = BYTE_BOUNDS.get(key.partition(":")[0])
        if kind is not None and key in hold and value >= best:
            best, how = value, kind
    return best, how


def _row(cells: list[object]) -> str:
    return "| " + " | ".join("-" if c is None else str(c) for c in cells) + " |"


def _range(fig: Figures, which: str) -> str:
    s = fig.replicas_spread if which == "replicas" else fig.leaders_spread
    return f"{s.min}-{s.max}"


def _threshold(request: PlanRequest) -> str:
    return request.threshold_text


def _leader_band(plan: Plan, fig: Figures) -> tuple[int, int]:
    """The ideal leader band: one definition, the leader goal's."""
    return LeaderGoal.band(plan, fig)


def _ideal(fig: Figures, which: str, plan: Plan | None = None) -> str:
    s = fig.replicas_spread if which == "replicas" else fig.leaders_spread
    text = f"{s.floor}-{s.ceil}"
    if which == "leaders" and plan is not None:
        low, high = _leader_band(plan, fig)
        text = f"{low}-{high}"
    if which == "replicas" and fig.wider_than_alive:
        text += " (unreachable: see \"Targets not reached\")"
    return text


def _objectives(plan: Plan, request: PlanRequest, goal_targets: list[Target], run: Execution) -> list[str]:
    """Each goal's figures before and after (:func:`kafka_replica_assignor.planner.goals.order.targets`), with its
    target, then the costs of the plan with their lower bounds (and the threshold they are taken at)."""
    t = _threshold(request)
    moves_bound = max((plan.bound(k) or 0) for k in
                      ("replica_moves_tight_bound", "diversity_repairs_needed", "repairs_needed"))
    bytes_bound, bytes_how = _byte_bound(plan)
    rows: list[list[object]] = [[f"{g.section}. {g.label}", g.before, g.after, g.target]
                                 for g in goal_targets if g.section]
    rows += [
        ["4. replica moves", "", plan.replica_moves, f">= {moves_bound} (threshold {t}, no budget)"
         + _optimum(plan, "replica_moves_optimum")],
        ["4. bytes moved", "", run.bytes_moved,
         f">= {bytes_bound} ({bytes_how}, threshold {t}, no budget)"
         + _optimum(plan, "bytes_moved_optimum")],
        ["4. leader changes", "", plan.leader_changes,
         f">= {plan.bound('leader_changes_lower_bound') or 0} (ideal band, no budget"
         + (")" if request.mode == "leader" else "; for the plan's own replica lists)")],
    ]
    return ["## Objectives", "", "| objective | before | after | target or lower bound |",
            "|---|---|---|---|", *(_row(r) for r in rows), "",
            "A target not reached is named under \"Targets not reached\" with what stops it.", ""]


def _optimum(plan: Plan, name: str) -> str:
    value = plan.bound(name)
    return "" if value is None else f"; the exact program's optimum {value} (within 0.1 %)"


def _size(n: int) -> str:
    """Bytes for people: ``1.50 GiB (1610612736 bytes)``."""
    for unit, scale in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.2f} {unit} ({n} bytes)"
    return f"{n} bytes"


def _duration(seconds: float) -> str:
    whole = round(seconds)
    if whole < 60:
        return f"{seconds:.1f} s"
    h, rest = divmod(whole, 3600)
    m, s = divmod(rest, 60)
    return f"{h}h{m:02d}m{s:02d}s" if h else f"{m}m{s:02d}s"


def _batches(run: Execution, request: PlanRequest) -> list[str]:
    limits = run.limits
    said = [f"at most {limits.batch_size} partitions" if limits.batch_size else "",
            f"no broker in more than {limits.moves_per_broker} replica moves" if limits.moves_per_broker else "",
            f"at most {_size(limits.bytes_per_batch)} copied" if limits.bytes_per_batch else ""]
    lines = ["## Batches", ""]
    if limits.any:
        lines.append(f"{len(run.batches)} batch(es) (`reassignment-0001.json`, ...), each with "
                     + ", ".join(x for x in said if x) + f"; at least {run.batches_lower_bound} are needed. "
                     "Run them in order; in each, the partitions that only change their preferred leader "
                     "come last.")
    else:
        lines.append("One batch: `reassignment.json` (`--batch-size`, `--max-moves-per-broker` or "
                     "`--max-bytes-per-batch` split it).")
    lines.append("")
    throttle = request.throttle
    head = "| batch | partitions | replica moves | bytes moved | busiest broker (bytes in or out) |"
    rule = "|---|---|---|---|---|"
    if throttle:
        head += " time at the throttle |"
        rule += "---|"
    lines += [head, rule]
    for n, b in enumerate(run.batches[:BATCHES_SHOWN], 1):
        broker, most = b.busiest
        cells: list[object] = [f"{n:04d}" if limits.any else "all", len(b.partitions), b.replica_moves,
                               b.bytes, f"{broker}: {most}" if broker is not None else "-"]
        if throttle:
            cells.append(_duration(b.seconds(throttle)))
        lines.append(_row(cells))
    if len(run.batches) > BATCHES_SHOWN:
        lines.append(f"\n... and {len(run.batches) - BATCHES_SHOWN} more.")
    total: list[object] = ["total", len(run.starting), run.replica_moves, run.bytes_moved, ""]
    if throttle:
        total.append(_duration(run.eta_seconds or 0.0))
    lines += [_row(total), ""]
    lines.append(f"Bytes moved: {_size(run.bytes_moved)} in all (the `size_bytes` of every replica copied; "
                 "0 when the sizes are unknown).")
    if throttle:
        lines.append(f"Estimated time at `--throttle {throttle}` bytes/s: {_duration(run.eta_seconds or 0.0)} "
                     "(per batch, its busiest broker's bytes in or out / throttle; Kafka throttles "
                     "each broker's replication in and out at that rate).")
    lines.append("")
    return lines


def _commands(run: Execution, request: PlanRequest) -> list[str]:
    throttle = f" --throttle {request.throttle}" if request.throttle else ""
    files = ([f"reassignment-{n:04d}.json" for n in range(1, len(run.batches) + 1)]
             if run.limits.any else ["reassignment.json"])
    lines = [
        "## Applying it", "",
        "First check that no planned partition changed since the plan was made (from this directory; "
        "exit 0 when none did, else one line per partition that did):", "",
        "```",
        "replica-assignor verify-plan --plan . --bootstrap-server HOST:9092",
        "```", "",
        "Then, batch by batch (`--verify` until it reports every partition complete; it also removes "
        "the throttle):", "",
        "```",
    ]
    for name in files[:COMMANDED_BATCHES]:
        lines += [
            f"kafka-reassign-partitions.sh --bootstrap-server HOST:9092 --execute{throttle} \\",
            f"    --reassignment-json-file {name}",
            "kafka-reassign-partitions.sh --bootstrap-server HOST:9092 --verify \\",
            f"    --reassignment-json-file {name}",
        ]
    if len(files) > COMMANDED_BATCHES:
        lines.append(f"# ... the same for {files[COMMANDED_BATCHES]} to {files[-1]}, in order")
    lines += [
        "kafka-leader-election.sh --bootstrap-server HOST:9092 --election-type preferred \\",
        "    --path-to-json-file leader-election.json",
        "```", "",
    ]
    if run.limits.any:
        lines += ["(`reassignment.json` holds every batch at once.)", ""]
    lines.append(f"`rollback.json` restores the current replica lists of {len(run.rollback)} partition(s).")
    if run.not_rollbackable:
        shown = ", ".join(f"{p.topic}-{p.partition} {list(p.replicas)}" for p in run.not_rollbackable[:NAMES_SHOWN])
        more = f", ... ({len(run.not_rollbackable) - NAMES_SHOWN} more)" if len(run.not_rollbackable) > NAMES_SHOWN else ""
        lines.append(f"{len(run.not_rollbackable)} partition(s) start on dead or unknown brokers or placeholders "
                     f"and cannot be rolled back, only repaired again: {shown}{more}.")
    lines.append("")
    return lines


def _options(request: PlanRequest) -> list[str]:
    """How the plan was asked for, as the report's first line lists it."""
    opts = [f"mode `{request.mode}`", f"threshold {_threshold(request)}"]
    scope = request.scope

    def brokers(ids: tuple[int, ...]) -> str | None:
        return ", ".join(map(str, ids)) or None

    for value, text in (
        (request.max_moves, "max moves {}"),
        (request.max_leader_changes, "max leader changes {}"),
        (request.batch_size, "batches of {}"),
        (request.max_moves_per_broker, "max moves per broker and batch {}"),
        (request.max_bytes_per_batch, "max bytes per batch {}"),
        (request.throttle, "throttle {} bytes/s"),
        (scope.topics, "only topics matching `{}` move"),
        (scope.exclude_topics, "topics matching `{}` stay"),
        (brokers(scope.exclude_brokers), "brokers {} neither give nor take"),
        (brokers(scope.add_brokers), "only brokers {} take replicas"),
        (brokers(scope.remove_brokers), "brokers {} removed"),
        (brokers(scope.demote_brokers), "brokers {} demoted (no preferred leaders)"),
        (request.source or None, "input {}"),
    ):
        if value is not None:  # given (a budget of 0 is given too)
            opts.append(text.format(value))
    return opts


def _per_broker(before: Figures, after: Figures, request: PlanRequest) -> list[str]:
    lines = ["## Per broker", "",
             "| broker | rack | alive | replicas before | replicas after | leaders before | leaders after |",
             "|---|---|---|---|---|---|---|"]
    after_by_id = {b.id: b for b in after.brokers}
    forgotten = set(request.scope.remove_brokers)
    for b in before.brokers:
        a = after_by_id[b.id]
        state = ("removed" if b.id in forgotten else "yes") if b.alive else "no"
        lines.append(_row([b.id, b.rack, state, b.replicas, a.replicas, b.leaders, a.leaders]))
    after_unknown = {x.id: x for x in after.unknown_brokers}
    for b in before.unknown_brokers:
        u = after_unknown.get(b.id)
        lines.append(_row([b.id, "?", "unknown", b.replicas, u.replicas if u else 0, b.leaders,
                           u.leaders if u else 0]))
    return lines


def render_report(plan: Plan, request: PlanRequest, *, figures: tuple[Figures, Figures] | None = None,
                  run: Execution | None = None) -> str:
    """The report (module doc); ``figures`` and ``run`` when the caller has them already."""
    before, after = figures if figures is not None else plan_figures(plan, request.scope.removed)
    if run is None:
        run = execution(plan, Limits(request.batch_size, request.max_moves_per_broker,
                                     request.max_bytes_per_batch), request.throttle)
    lines = [f"# Balance plan: {request.mode}", ""]
    alive = sum(b.alive for b in before.brokers)
    lines += [
        f"{len(before.brokers)} brokers ({alive} alive), {before.partitions} partitions, "
        f"{before.replicas} replicas; " + ", ".join(_options(request)) + ".",
        "",
        "## Summary",
        "",
        "| | before | after | ideal (threshold 0) |",
        "|---|---|---|---|",
        _row(["replicas per alive broker", _range(before, "replicas"), _range(after, "replicas"),
              _ideal(after, "replicas")]),
        _row(["preferred leaders per alive broker", _range(before, "leaders"), _range(after, "leaders"),
              _ideal(after, "leaders", plan)]),
        _row(["partitions lacking rack diversity", before.not_diverse, after.not_diverse, 0]),
        _row(["replicas on dead or unknown brokers", before.on_dead + before.on_unknown,
              after.on_dead + after.on_unknown, 0]),
        _row(["placeholders", before.placeholders, after.placeholders, 0]),
        "",
        f"- replica moves: **{plan.replica_moves}** ({plan.repairs} repairs), "
        f"partitions reassigned: {len(run.starting)}",
        f"- leader changes: **{plan.leader_changes}** "
        f"(partitions in `leader-election.json`: {len(run.leader_changed)})",
        f"- bytes moved: {_size(run.bytes_moved)}"
        + (f", about {_duration(run.eta_seconds or 0.0)} at the throttle" if request.throttle else ""),
        "- before executing: `replica-assignor verify-plan --plan DIR --bootstrap-server HOST:9092` "
        "(see \"Applying it\")",
        "",
    ]
    goal_targets = targets(plan, request, before, after)
    lines += _objectives(plan, request, goal_targets, run)
    if plan.bounds:
        t = _threshold(request)
        lines += ["## Lower bounds and optima", "", "| bound | value |", "|---|---|"]
        lines += [_row([bound_text(k).format(t=t), v]) for k, v in plan.bounds]
        lines.append("")
    lines += ["## Targets not reached", ""]
    lines += [f"- {g.missed}" for g in goal_targets if not g.reached] or ["- none: every target was reached."]
    lines += ["", "## Notes", ""]
    lines += [f"- {n}" for n in plan.notes] or ["- none."]
    lines.append("")
    lines += _batches(run, request)
    lines += _per_broker(before, after, request)
    if before.racks:
        lines += ["", "## Per rack", "",
                  "| rack | level | alive brokers | replicas before | replicas after | leaders before "
                  "| leaders after |",
                  "|---|---|---|---|---|---|---|"]
        after_racks = {(r.level, r.rack): r for r in after.racks}
        for r in before.racks:
            ra = after_racks.get((r.level, r.rack))
            lines.append(_row([r.rack, r.level, r.brokers, r.replicas, ra.replicas if ra else 0,
                               r.leaders, ra.leaders if ra else 0]))
    lines += ["", "## Moves", ""]
    kinds = {k: 0 for k in MoveKind}
    for m in plan.moves:
        kinds[m.kind] += 1
    lines.append(", ".join(f"{v} {k.value}" for k, v in kinds.items()) + " (all in `moves.csv`).")
    if plan.moves:
        lines += ["", "| # | kind | topic | partition | from | to |", "|---|---|---|---|---|---|"]
        for n, m in enumerate(plan.moves[:MOVES_SHOWN], 1):
            lines.append(_row([n, m.kind.value, m.topic, m.partition, m.source, m.destination]))
        if len(plan.moves) > MOVES_SHOWN:
            lines.append(f"\n... and {len(plan.moves) - MOVES_SHOWN} more.")
    lines.append("")
    lines += _commands(run, request)
    return "\n".join(lines)
