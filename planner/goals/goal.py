"""The interface every balancing goal implements, and the figure a goal reports.

Goals
    One small surface, after Cruise Control's ``Goal``: what a goal measures (:class:`Target`:
    its figure before and after a plan, its target, whether the plan reaches it), the moves it
    proposes (:meth:`Goal.optimize` over the shared :class:`kafka_replica_assignor.planner.goals.model.Model`), and
    :meth:`Goal.accepts`: whether one replica move keeps what the goal has reached, so no goal
    undoes an earlier one.

Constraints
    - A goal changes the model only through ``Model.do_move``; a move it makes is accepted by
      every goal before it in :data:`kafka_replica_assignor.planner.goals.order.GOALS`.
    - :meth:`Goal.targets` is a pure function of the plan and its figures: the report's rows and
      its "Targets not reached" come from it, so the report and the plan cannot disagree.

Algorithm
    None here: see each goal's module.

Example
    ``RackDiversityGoal.targets`` of a plan that leaves 2 partitions in one rack gives
    ``Target("partitions lacking rack diversity", 5, 2, 0, reached=False, ...)``; the report
    prints the row ``5 | 2 | 0`` and a "Targets not reached" line naming what stops it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

if TYPE_CHECKING:
    from kafka_replica_assignor.planner.goals.model import Model
    from kafka_replica_assignor.planner.plan import Plan
    from kafka_replica_assignor.planner.report.figures import Figures
    from kafka_replica_assignor.planner.settings import PlanSettings


@dataclass(frozen=True, slots=True)
class Target:
    """One figure of a goal: ``label`` before and after the plan, ``target`` (a value or a band
    as text), ``reached``; ``section`` the objective's rank in the report (1 hard, 2 even, 3
    leaders); ``missed`` the "Targets not reached" line when not reached (what stops it)."""

    label: str
    before: object
    after: object
    target: object
    reached: bool
    section: int
    missed: str = ""


@dataclass(frozen=True, slots=True)
class ReportView:
    """What a goal's :meth:`Goal.targets` reads: the plan, its settings and its figures."""

    plan: Plan
    settings: PlanSettings
    before: Figures
    after: Figures


class Goal(ABC):
    """A balancing goal over the shared model (module doc). ``name`` names it in notes and docs."""

    name: ClassVar[str]

    @abstractmethod
    def optimize(self) -> int:
        """Propose and make moves towards the goal, each accepted by the goals before it;
        returns the moves made."""

    @abstractmethod
    def accepts(self, i: int, source: int, destination: int) -> bool:
        """Whether moving partition ``i``'s replica from ``source`` to ``destination`` keeps
        this goal (its hard rule, or what it has reached)."""

    def record_bounds(self) -> None:  # noqa: B027 - a goal without a lower bound records none
        """Record the goal's lower bounds on the plan (from the cluster before any move)."""

    def explain(self) -> None:  # noqa: B027 - a goal that leaves nothing says nothing
        """Notes (or a refusal) for what the goal left unreached, with the constraint that stops it."""

    @staticmethod
    @abstractmethod
    def targets(view: ReportView) -> tuple[Target, ...]:
        """The goal's figures for a plan: the report's rows and its targets not reached."""


class ModelGoal(Goal):
    """A goal working on the shared indexed model (:class:`~.model.Model`): every goal but
    repair and leaders, which work on the plan's replica lists themselves."""

    def __init__(self, model: Model) -> None:
        self.model = model


def blame(view: ReportView, data: bool, related: str | None) -> str:
    """What stops a target: the mode, a budget, the scope, or the constraints in the notes.
    ``data``: the target needs replicas to move (not only leaders); ``related``: a word of the
    planner's notes about it."""
    plan, settings = view.plan, view.settings
    if data and settings.mode == "leader":
        return "leader mode moves no replicas (use --mode cluster)"
    if settings.mode == "repair" and related != "repair":
        return "repair mode only replaces replicas that cannot serve (use --mode cluster)"
    if data and settings.max_moves is not None and plan.replica_moves >= settings.max_moves:
        return f"the move budget is spent (--max-moves {settings.max_moves})"
    if not data and settings.max_leader_changes is not None \
            and plan.leader_changes >= settings.max_leader_changes:
        return f"the leader-change budget is spent (--max-leader-changes {settings.max_leader_changes})"
    if related is not None and any(related in n for n in plan.notes):
        return "see the notes (the constraint that stops it)"
    if data and settings.scope.narrowed:
        return ("the scope of the plan (--topics, --exclude-topics, --exclude-brokers, --add-brokers) leaves "
                "the replicas that would reach it in place")
    return ("no move keeps the hard constraints (rack diversity never reduced, no broker above its "
            "capacity, topic caps)")


def band_missed(view: ReportView, field: str, label: str, lo: int | None, hi: int | None,
                note_word: str) -> tuple[bool, str]:
    """Whether every eligible broker's ``field`` is within ``lo``-``hi`` after the plan (no band
    recorded counts as reached), and the "Targets not reached" line when it is not."""
    values = eligible_values(view, field)
    if lo is None or hi is None or not values or lo <= min(values) and max(values) <= hi:
        return True, ""
    return False, (f"{label}: {min(values)}-{max(values)} after the plan, band at threshold "
                   f"{view.settings.threshold}% {lo}-{hi}: " + blame(view, True, note_word))


def eligible_values(view: ReportView, field: str) -> list[int]:
    """A per-broker figure after the plan over the brokers the bands are taken over: alive and
    not forgotten (one definition for every band target)."""
    forgotten = set(view.settings.forgotten)
    return [getattr(b, field) for b in view.after.brokers if b.alive and b.id not in forgotten]
