"""The order of the goals, as data: the one ranking every driver, the report and the checks use.

Goals
    :data:`GOALS` ranks every rule of the planner. A goal's moves are accepted by every hard
    goal and by every goal ranked before it, so a later goal never undoes an earlier one; the
    exact program keeps the soft targets in this order, and the bound drops them in the reverse
    order; the report's objectives and its "Targets not reached" come in this order too
    (:func:`targets`).

Constraints
    Why this order:

    1. *Repair* first: a replica on a dead broker serves nobody, and a partition naming one can
       neither move nor change leader (Kafka refuses such a reassignment).
    2. The request's hard rules: *remove*, *exclude*, *add* brokers, the *scope* of topics: what
       the operator said does not move does not move, whatever any goal wants.
    3. *Capacity*: a full disk stops a broker; no move of any goal exceeds a capacity.
    4. *Rack diversity*: never reduced (hard); full diversity is the first soft target: losing
       a rack loses availability. A diversity repair may push a topic above its cap or a broker
       out of a band, never the reverse.
    5. *Topic spread*: a topic crowded on one broker or rack is a hot spot under load; counts
       and bytes are evened only by moves that keep every topic under its cap.
    6. *Replica counts*, then 7. *bytes*: the count band first (a swap evens bytes without
       touching counts; a move for bytes keeps both counts in their band).
    8. *Fewer moves*: once every band is reached, undo the moves it turned out not to need,
       keeping everything above; it owns the plan's cost (bytes, replica moves, leader
       replicas moved).
    9. *Demote*, then 10. *leaders* last: they move no data, so they cannot break anything
       above; the replica goals help them by moving followers before leaders.

    With rates in the snapshot (inert without them, :mod:`.traffic`), Cruise Control's default
    order is the anchor: its network capacity goals follow its disk capacity goal, so *network
    capacity* (hard) follows capacity; its network-in distribution follows disk usage, so
    *network-in* follows bytes (before fewer moves, which keeps it); its leader bytes-in
    distribution is last, so *leader bytes-in* is last. One deviation: Cruise Control ranks
    network-out distribution before leader counts; here *network-out* follows *leaders*,
    because its cheap move is a leadership change, the leader phase's, and the leader goal is
    an exact flow that cannot carry weights: the network-out pass starts from its even counts
    and trades leaderships (mostly two partitions between a pair of brokers) keeping them.

    ``max_moves`` is spent in this order; ``max_leader_changes`` stops replica goals from
    moving leader replicas once spent.

Algorithm
    :func:`check_request` asks every goal whether the request's option for it can be honoured;
    :func:`goals_for` makes the goals a mode runs, in order, each knowing the others (``peers``).

Example
    Adding a goal (say network-in per broker): one module with the goal class (its targets,
    ``accepts``, ``optimize``, ``distance``, ``exact_rows``, ``bound_rows``, ``targets``), one
    entry in :data:`GOALS`, and its test; the drivers, the report and the plan pick it up.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafka_replica_assignor.planner.goals.add_brokers import AddGoal
from kafka_replica_assignor.planner.goals.capacity import CapacityGoal
from kafka_replica_assignor.planner.goals.demote_brokers import DemoteGoal
from kafka_replica_assignor.planner.goals.exclude_brokers import ExcludeGoal
from kafka_replica_assignor.planner.goals.fewer_moves import FewerMovesGoal
from kafka_replica_assignor.planner.goals.goal import Figures, Goal, ReportView, Target
from kafka_replica_assignor.planner.goals.leader_bytes_in import LeaderBytesInGoal
from kafka_replica_assignor.planner.goals.leaders import LeaderGoal
from kafka_replica_assignor.planner.goals.lost_replicas import RepairGoal
from kafka_replica_assignor.planner.goals.network_capacity import NetworkCapacityGoal
from kafka_replica_assignor.planner.goals.network_in import NetworkInGoal
from kafka_replica_assignor.planner.goals.network_out import NetworkOutGoal
from kafka_replica_assignor.planner.goals.rack_diversity import RackDiversityGoal
from kafka_replica_assignor.planner.goals.remove_brokers import RemoveGoal
from kafka_replica_assignor.planner.goals.replica_bytes import ReplicaBytesGoal
from kafka_replica_assignor.planner.goals.replica_counts import ReplicaCountGoal
from kafka_replica_assignor.planner.goals.scope import ScopeGoal
from kafka_replica_assignor.planner.goals.topic_spread import TopicSpreadGoal

if TYPE_CHECKING:
    from kafka_replica_assignor.cluster.snapshot import ClusterSnapshot
    from kafka_replica_assignor.planner.plan import Plan, Working
    from kafka_replica_assignor.planner.request import PlanRequest

GOALS: tuple[type[Goal], ...] = (
    RepairGoal, RemoveGoal, ExcludeGoal, AddGoal, ScopeGoal, CapacityGoal, NetworkCapacityGoal, RackDiversityGoal,
    TopicSpreadGoal, ReplicaCountGoal, ReplicaBytesGoal, NetworkInGoal, FewerMovesGoal, DemoteGoal, LeaderGoal,
    NetworkOutGoal, LeaderBytesInGoal)
"""Every goal, highest rank first (the module doc says why)."""

REPLICA_PHASES = ("once", "rounds", "last")
"""The phases of the goals that work on the heuristic's model (the replica goals)."""


def check_request(request: PlanRequest, snapshot: ClusterSnapshot) -> None:
    """Every goal's ``check_request``: an option the mode ignores, a broker the cluster does not
    have (:class:`~kafka_replica_assignor.planner.request.RequestError`, exit 2)."""
    for cls in GOALS:
        cls.check_request(request, snapshot)


def goals_for(work: Working, request: PlanRequest, phases: tuple[str, ...] | None = None) -> list[Goal]:
    """The goals ``request`` runs on ``work``, in rank order (only those of ``phases`` when
    given), each knowing the others by key."""
    goals = [cls(work, request) for cls in GOALS
             if cls.wanted(request) and request.mode in cls.modes and (phases is None or cls.phase in phases)
             and cls.applies(work.snapshot)]
    peers = {g.key: g for g in goals}
    for goal in goals:
        goal.peers = peers
    return goals


def targets(plan: Plan, request: PlanRequest, before: Figures, after: Figures) -> list[Target]:
    """Every goal's figures for a plan, in rank order: the report's objectives and its targets
    not reached."""
    view = ReportView(plan, request, before, after)
    return [t for cls in GOALS for t in cls.targets(view)]


def bound_texts() -> dict[str, str]:
    """The report's text of every bound a goal records, by key."""
    return {k: v for cls in GOALS for k, v in cls.bound_text.items()}
