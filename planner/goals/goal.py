"""The interface every rule of the planner implements: one module owns one rule, in all its faces.

Goals
    A rule (a target such as the replica band, or a mode such as ``--add-brokers``) is written
    once, in one goal module, and every part of the planner asks it (after Cruise Control's
    ``Goal``, which owns its ``actionAcceptance`` and its balance limits). Its faces:

    ===================== ====================================================================
    face                  who asks
    ===================== ====================================================================
    ``check_request``     the request, once, before planning: its flag is valid for the mode
                          and names brokers of the cluster (:class:`RequestError`, exit 2)
    ``optimize``          the heuristic (:mod:`kafka_replica_assignor.planner.solving.heuristic`)
    ``accepts``           every later goal's move, through ``Model.fits``
    ``accepts_swap``      the same for two replicas that trade brokers at once
    ``move_rows``         the same for a set of moves at once (the fewer-moves goal's relaxation)
    ``distance``          how far the plan is from the target (0: met): the plan's rank,
                          the exact path's choice, the fixed point
    ``exact_rows``        the exact program (:mod:`kafka_replica_assignor.planner.solving.exact`)
    ``bound_rows``        the bytes-moved lower bound (:mod:`kafka_replica_assignor.planner.solving.bound`)
    ``targets``           the report's objectives and its "Targets not reached"
    ``explain``           the plan's notes on what the heuristic left
    ``final_check``       the final plan, whichever path made it: a promise of the request it
                          cannot keep ends the command (:class:`PlanError`, exit 1)
    ===================== ====================================================================

Constraints
    - A goal changes the heuristic's model only through ``Model.do_move``; a move it makes is
      accepted by every goal ranked before it in :data:`kafka_replica_assignor.planner.goals.order.GOALS`.
    - The faces agree: on a state where the goal's exact rows hold, ``accepts`` says yes exactly
      when they still hold after the move, and ``distance`` is 0 exactly when they hold
      (``tests/unit/test_goal_faces.py`` enumerates it).
    - ``hard`` goals are never traded away: the exact program keeps their rows always; a soft
      goal's rows are kept when they can hold with the goals ranked before it, else brought as
      close as they can be.

Algorithm
    None here: see each goal's module.

Example
    ``ReplicaCountGoal`` holds ``lo = 3, hi = 4``: ``accepts`` refuses a move that takes a
    broker holding 3 replicas to 2; ``distance`` of counts ``(5, 3, 2)`` is 2; ``exact_rows``
    adds ``3 <= sum_p x[p, b] <= 4`` per broker; ``bound_rows`` asks the broker holding 5 to give
    at least its smallest replica; ``targets`` reports ``2-5 -> 3-4``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from kafka_replica_assignor.planner.request import PlanError, RequestError

__all__ = ["BoundProgram", "ExactProgram", "Figures", "Goal", "PlanError", "ReportView", "RequestError", "Target", "blame",
           "band_missed", "eligible_values", "ids", "names"]

if TYPE_CHECKING:
    from kafka_replica_assignor.cluster.snapshot import ClusterSnapshot
    from kafka_replica_assignor.planner.goals.model import Model
    from kafka_replica_assignor.planner.plan import Plan, Working
    from kafka_replica_assignor.planner.request import PlanRequest


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


class Figures(Protocol):
    """What a goal reads of a snapshot's figures for the report (the report computes them:
    :class:`kafka_replica_assignor.planner.report.figures.Figures`); a narrow read-only view."""

    @property
    def brokers(self) -> Sequence[Any]: ...

    @property
    def misplaced(self) -> int: ...

    @property
    def not_diverse(self) -> int: ...

    @property
    def topic_excess(self) -> int: ...

    @property
    def wider_than_alive(self) -> int: ...

    @property
    def replicas_spread(self) -> Any: ...

    @property
    def leaders_spread(self) -> Any: ...


@dataclass(frozen=True, slots=True)
class ReportView:
    """What a goal's :meth:`Goal.targets` reads: the plan, its request and its figures."""

    plan: Plan
    request: PlanRequest
    before: Figures
    after: Figures


class ExactProgram(Protocol):
    """What a goal sees of the exact program (:class:`kafka_replica_assignor.planner.solving.exact.Program`):
    ``x[p][k]`` is 1 when partition ``p`` (a position in ``parts``, which lists the partitions
    in (topic, partition) order) has a replica on broker ``brokers[k]`` (the eligible brokers)."""

    x: list[list[int]]
    parts: list[int]
    brokers: list[int]
    work: Working
    scale: float

    def row(self, lower: float, upper: float, cols: Sequence[int], coefs: Sequence[float], group: str) -> None:
        """Add ``lower <= sum(coef * col) <= upper`` to the rows of ``group`` (a goal's key)."""

    def fix(self, col: int, value: float) -> None:
        """Fix a column (scope: a replica that must stay, or stay away)."""

    def cap_upper(self, col: int, value: float) -> None:
        """Lower a column's upper bound."""

    def column(self, lower: float, upper: float, integer: bool) -> int:
        """A new column (a goal's own auxiliary variable)."""

    def objective(self, weights: dict[int, float], name: str) -> None:
        """A phase of the lexicographic objective (kept replicas weigh negative)."""


class BoundProgram(Protocol):
    """What a goal sees of the bytes-moved bound (:class:`kafka_replica_assignor.planner.solving.bound.Program`):
    per eligible broker (``brokers``) the columns ``outs`` and ``ins`` (bytes leaving and
    arriving, scaled by ``scale``), the cluster's figures ``fig``, and rows on them."""

    brokers: list[int]
    n: int
    scale: float

    @property
    def fig(self) -> Any: ...

    @property
    def outs(self) -> Any: ...

    @property
    def ins(self) -> Any: ...

    def columns(self, lower: Any, upper: Any) -> Any: ...

    def row(self, lower: float, upper: float, idx: Any, val: Any) -> None: ...

    def pairs(self, plus: Any, minus: Any, lower: Any, upper: Any) -> None: ...

    def repairs(self) -> None: ...

    def shut(self, brokers: Iterable[int]) -> None: ...

    def closed(self, brokers: Iterable[int]) -> None: ...

    def capacities(self, capacity: Mapping[int, int]) -> None: ...

    def byte_band(self, blo: int, bhi: int) -> None: ...

    def require_counts(self, lo: int, hi: int) -> None: ...

    def require_topic_drops(self, caps: Callable[[Any, Any], Any]) -> None: ...


class Goal:
    """A rule of the planner (module doc). Class attributes say where it runs; an instance is
    made per plan from the working copy and the request, and holds the rule's targets."""

    name: ClassVar[str]
    """Names it in notes and docs."""
    key: ClassVar[str]
    """Names its rows in the exact program and its bound keys."""
    hard: ClassVar[bool] = False
    """A hard rule: its ``accepts`` holds for every goal's moves, whatever their rank, and its
    rows (group ``"hard"``) are never dropped."""
    target: ClassVar[bool] = False
    """Has a soft target: rows under its own key in the exact program and the bound, kept when
    they can hold with the targets ranked before it, else brought as close as they can be."""
    modes: ClassVar[frozenset[str]] = frozenset({"replica", "cluster"})
    """The modes that run it."""
    flag: ClassVar[str | None] = None
    """The command-line option it owns, if any (``--add-brokers``)."""
    ignored: ClassVar[str] = "it moves no replicas"
    """Why a mode that does not run the goal ignores its option."""
    phase: ClassVar[str] = "rounds"
    """When the heuristic runs its ``optimize``: ``"lists"`` on the replica lists before the
    model is built, ``"once"``, ``"rounds"`` (repeated while something moves), ``"last"``,
    ``"leaders"`` (after the replica goals)."""
    bound_text: ClassVar[dict[str, str]] = {}
    """The report's text for each bound the goal records (``{t}``: the threshold)."""

    refuses: ClassVar[bool] = False
    """Whether its ``accepts`` can refuse a move (set for every goal that overrides it): the
    model asks only these."""
    judges_swaps: ClassVar[bool] = False
    """Whether it judges a swap as a whole (overrides ``accepts_swap``: a figure per broker or
    per topic, where the two moves net out); the others are rules of single replicas."""

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        cls.judges_swaps = cls.accepts_swap is not Goal.accepts_swap
        cls.refuses = cls.accepts is not Goal.accepts or cls.judges_swaps

    def __init__(self, work: Working, request: PlanRequest) -> None:
        self.work = work
        self.request = request
        self.model: Model | None = None
        self.rank = 0
        self.peers: dict[str, Goal] = {}
        """The other goals of the same run, by key (set by the driver)."""

    # -- the request -----------------------------------------------------------------------
    @classmethod
    def wanted(cls, request: PlanRequest) -> bool:
        """Whether the request asks for this goal (a mode's own goals always; an option's goal
        when the option is given). A goal wanted by a mode that does not run it is refused."""
        return request.mode in cls.modes

    @classmethod
    def check_request(cls, request: PlanRequest, snapshot: ClusterSnapshot) -> None:
        """Refuse (:class:`RequestError`) a request whose option for this goal cannot be honoured
        as given; nothing by default."""

    @classmethod
    def check_brokers(cls, request: PlanRequest, snapshot: ClusterSnapshot, brokers: Sequence[int], *,
                      alive: str | None = None, known: set[int] | None = None) -> None:
        """The checks every goal of an option naming brokers shares: a mode that runs the goal
        (else the option is ignored), brokers the cluster has (``known``, by default the brokers
        it lists), and with ``alive`` (why they must be) alive ones."""
        if request.mode not in cls.modes:
            runs = " or ".join(m for m in ("leader", "replica", "cluster", "repair") if m in cls.modes)
            raise RequestError(f"{cls.flag} is ignored by --mode {request.mode} ({cls.ignored}): use --mode {runs}")
        known = known if known is not None else {b.id for b in snapshot.brokers}
        unknown = [b for b in brokers if b not in known]
        if unknown:
            raise RequestError(f"{cls.flag} {ids(unknown)}: no such broker in the cluster")
        dead = [b.id for b in snapshot.brokers if b.id in brokers and not b.alive]
        if alive is not None and dead:
            raise RequestError(f"{cls.flag} {ids(dead)}: not alive ({alive})")

    # -- the heuristic ---------------------------------------------------------------------
    def bind(self, model: Model, rank: int) -> None:
        """The heuristic's model, and this goal's position among the goals it runs."""
        self.model = model
        self.rank = rank

    def earlier(self) -> list[Goal]:
        """The goals ranked before this one on the same model, in their order."""
        return sorted((g for g in self.peers.values() if g.model is self.model and g.rank < self.rank),
                      key=lambda g: g.rank)

    @property
    def m(self) -> Model:
        assert self.model is not None, "bind() first"
        return self.model

    def prepare(self) -> None:
        """Set the goal's targets on the model (the bands the searches read), before any move."""

    def record_bounds(self) -> None:
        """Record the goal's lower bounds on the plan (from the cluster before the model's moves)."""

    def optimize(self) -> int:
        """Propose and make moves towards the goal, each accepted by the goals before it;
        returns the moves made (none by default: a rule that only refuses)."""
        return 0

    def accepts(self, i: int, source: int, destination: int) -> bool:
        """Whether moving partition ``i``'s replica from ``source`` to ``destination`` keeps
        what this goal has reached (its hard rule, or its figure no worse)."""
        return True

    def accepts_swap(self, a: int, x: int, b: int, y: int) -> bool:
        """Whether ``a`` moving from ``x`` to ``y`` while ``b`` moves from ``y`` to ``x`` keeps
        this goal: both moves, by default (a rule of single replicas); goals of per-broker
        figures judge the net change."""
        return self.accepts(a, x, y) and self.accepts(b, y, x)

    def distance(self) -> int:
        """How far the model's current state is from the target (0: met)."""
        return 0

    def explain(self) -> None:
        """Notes for what the heuristic left unreached, with the constraint that stops it."""

    def final_check(self) -> None:
        """On the plan's final lists (``self.work``), whichever path made them: raise
        :class:`PlanError` naming what the plan leaves undone, when the goal is a promise of the
        request (``--remove-brokers``: nothing stays on them)."""

    # -- the exact program and the bound ---------------------------------------------------
    def move_rows(self, program: Any) -> None:
        """Add the goal's rows on a set of candidate moves (the fewer-moves goal's relaxation,
        :class:`kafka_replica_assignor.planner.goals.fewer_moves.MoveProgram`): what the moves taken together
        may do to the goal's figure (none by default: a rule of single replicas, which the
        candidates keep already)."""

    def exact_rows(self, program: ExactProgram) -> None:
        """Add the goal's rows (group ``key``) to the exact program."""

    def bound_rows(self, program: BoundProgram) -> None:
        """Add the goal's rows (group ``key``) to the bytes-moved bound."""

    # -- the report ------------------------------------------------------------------------
    @staticmethod
    def targets(view: ReportView) -> tuple[Target, ...]:
        """The goal's figures for a plan: the report's rows and its targets not reached."""
        return ()


def blame(view: ReportView, data: bool, related: str | None) -> str:
    """What stops a target: the mode, a budget, the scope, or the constraints in the notes.
    ``data``: the target needs replicas to move (not only leaders); ``related``: a word of the
    planner's notes about it."""
    plan, request = view.plan, view.request
    if data and request.mode == "leader":
        return "leader mode moves no replicas (use --mode cluster)"
    if request.mode == "repair" and related != "repair":
        return "repair mode only replaces replicas that cannot serve (use --mode cluster)"
    if data and request.max_moves is not None and plan.replica_moves >= request.max_moves:
        return f"the move budget is spent (--max-moves {request.max_moves})"
    if not data and request.max_leader_changes is not None \
            and plan.leader_changes >= request.max_leader_changes:
        return f"the leader-change budget is spent (--max-leader-changes {request.max_leader_changes})"
    if related is not None and any(related in n for n in plan.notes):
        return "see the notes (the constraint that stops it)"
    if data and request.scope.narrowed:
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
                   f"{view.request.threshold_text} {lo}-{hi}: " + blame(view, True, note_word))


def eligible_values(view: ReportView, field: str) -> list[int]:
    """A per-broker figure after the plan over the brokers the bands are taken over: alive and
    not removed (one definition for every band target)."""
    removed = view.request.scope.removed
    return [getattr(b, field) for b in view.after.brokers if b.alive and b.id not in removed]


def ids(brokers: Sequence[int], shown: int = 10) -> str:
    """Broker ids for a message: ``1, 2, 5`` (at most ``shown``, then ``...``)."""
    text = ", ".join(map(str, brokers[:shown]))
    return text + (", ..." if len(brokers) > shown else "")


def names(work: Working, positions: Sequence[int], shown: int = 10) -> str:
    """Partition names for a message: ``t-0, t-3`` (at most ``shown``, then how many more)."""
    parts = work.snapshot.partitions
    text = ", ".join(f"{parts[i].topic}-{parts[i].partition}" for i in positions[:shown])
    return text + (f", ... ({len(positions) - shown} more)" if len(positions) > shown else "")
