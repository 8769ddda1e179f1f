"""Network capacity: no broker receives more than its ``network_in_capacity`` or sends more than
its ``network_out_capacity``.

Goals
    A broker's network capacities (bytes/s, from the snapshot) are never exceeded by a move (a
    hard rule, the disk capacity's twin: :mod:`.capacity`); a broker above one after the plan
    ends the command. Distance: the rate above capacity, summed over brokers and directions
    (whole milli-bytes/s, :mod:`.traffic`).

Constraints
    - A hard rule: every goal's moves keep it. Network-in (:func:`.traffic.rate_in` per
      replica) moves with any replica; network-out (:func:`.traffic.rate_out`) moves with the
      leader replica, and with leadership: the leader goals keep it in their changes
      (:mod:`.network_out`, :mod:`.leader_bytes_in`), and bring a broker above it under it.
    - Rates adding up to more than the brokers' capacities are refused before planning
      ("network capacity infeasible", exit 2); a broker the plan leaves above a capacity ends
      the command ("network capacity not met", exit 1), but for a figure the mode does not
      change (network-in in ``leader`` mode, network-out in ``replica`` mode) a broker above
      it before the plan and no higher after is a note.
    - Inert without rates (:func:`.traffic.rated`).

Algorithm
    A broker above its network-in capacity is relieved by the network-in goal's search
    (:mod:`.network_in`), where the rate above capacity counts as rate outside the band. Exact
    program: ``sum_p in_p * x[p, b] <= network_in_capacity_b``; network-out is a figure of
    leadership, which the exact program leaves to the leader goals. Bound: a broker above its
    network-in capacity gives at least the fewest bytes that carry the excess
    (:func:`.traffic.rate_floors`).

Example
    Broker 1 (network_in_capacity 100 B/s) takes 120 B/s, broker 2 (the same) takes 60 B/s: a
    replica of at least 20 B/s goes from 1 to 2; no move may bring 2 above 100 B/s.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from kafka_replica_assignor.planner.goals.goal import BoundProgram, ExactProgram, ReportView, Target, blame
from kafka_replica_assignor.planner.goals.traffic import (
    TracksTraffic,
    per_broker,
    rate_floors,
    rated,
    rates,
    snapshot_figures,
    units,
)
from kafka_replica_assignor.planner.request import PlanError, RequestError

if TYPE_CHECKING:
    from kafka_replica_assignor.cluster.snapshot import ClusterSnapshot
    from kafka_replica_assignor.planner.plan import Working
    from kafka_replica_assignor.planner.request import PlanRequest


class NetworkCapacityGoal(TracksTraffic):
    """Keep and bring every broker under its network capacities (module doc)."""

    name = "network capacity"
    key = "network_capacity"
    hard = True
    phase = "rounds"
    modes = frozenset({"replica", "cluster", "leader"})

    def __init__(self, work: Working, request: PlanRequest) -> None:
        super().__init__(work, request)
        self.cap_in, self.cap_out = capacities(work)
        self.limited = bool(self.cap_in or self.cap_out)
        self.floors: tuple[np.ndarray, np.ndarray] | None = None

    @classmethod
    def applies(cls, snapshot: ClusterSnapshot) -> bool:
        return rated(snapshot)

    def accepts(self, i: int, source: int, destination: int) -> bool:
        if not self.limited:        # asked on every move of every goal: no capacity, no work
            return True
        t = self.t
        limit = self.cap_in.get(destination)
        if limit is not None and t.rin[i] and t.net_in[destination] + t.rin[i] > limit:
            return False
        limit = self.cap_out.get(destination)
        return limit is None or t.lead[i] != source or not t.rout[i] \
            or t.net_out[destination] + t.rout[i] <= limit

    def accepts_swap(self, a: int, x: int, b: int, y: int) -> bool:
        if not self.limited:
            return True
        t = self.t
        return (self._fits(t.net_in, self.cap_in, y, t.rin[a] - t.rin[b])
                and self._fits(t.net_in, self.cap_in, x, t.rin[b] - t.rin[a])
                and self._fits(t.net_out, self.cap_out, y,
                               t.rout[a] * (t.lead[a] == x) - t.rout[b] * (t.lead[b] == y))
                and self._fits(t.net_out, self.cap_out, x,
                               t.rout[b] * (t.lead[b] == y) - t.rout[a] * (t.lead[a] == x)))

    @staticmethod
    def _fits(values: dict[int, int], limits: dict[int, int], broker: int, gain: int) -> bool:
        """A broker gaining ``gain`` stays within its limit (or gains nothing)."""
        limit = limits.get(broker)
        return limit is None or gain <= 0 or values[broker] + gain <= limit

    def prepare(self) -> None:
        """Refuse traffic the brokers' capacities cannot carry (before any move)."""
        work = self.m.work
        rin, rout = rates(work)
        for label, limits, total in (
                ("network_in_capacity", self.cap_in,
                 sum(r * len(reps) for r, reps in zip(rin, work.original, strict=True))),
                ("network_out_capacity", self.cap_out, sum(rout))):
            if limits and len(limits) == len(work.eligible) and total > sum(limits.values()):
                raise RequestError(f"network capacity infeasible: the partitions need {total / 1000:.0f} bytes/s, "
                                   f"the alive brokers' {label} add up to {sum(limits.values()) / 1000:.0f}")

    def distance(self) -> int:
        t = self.t
        return sum(max(0, t.net_in[b] - limit) for b, limit in self.cap_in.items()) \
            + sum(max(0, t.net_out[b] - limit) for b, limit in self.cap_out.items())

    def final_check(self) -> None:
        """A broker left above a network capacity ends the command: a capacity is a link. A
        figure the mode does not change (network-in in ``leader`` mode, network-out in
        ``replica`` mode: no goal there moves it, and every move keeps it no higher) is named
        in a note when a broker was above its capacity before the plan and still is."""
        work = self.work
        rin, rout = rates(work)
        mode = self.request.mode
        for label, limits, weights, leaders, acts in (
                ("network_in_capacity", self.cap_in, rin, False, mode != "leader"),
                ("network_out_capacity", self.cap_out, rout, True, mode != "replica")):
            values = per_broker(work.replicas, weights, work.eligible, leaders=leaders)
            start = per_broker(work.original, weights, work.eligible, leaders=leaders)
            for b, limit in sorted(limits.items()):
                if values[b] <= limit:
                    continue
                if not acts and values[b] <= start[b]:
                    work.notes.append(
                        f"broker {b} carries {values[b] / 1000:.0f} bytes/s, above its {label} "
                        f"{limit / 1000:.0f}, as before the plan: --mode {mode} does not change "
                        f"{'leaders' if leaders else 'replica placement'} (--mode cluster does)")
                    continue
                why = work.memo.get("network_out_capacity_why") if leaders and mode == "leader" else None
                stop = (f"--mode leader: {why} (--mode cluster also moves replicas)" if isinstance(why, str) else
                        "the move budget is spent" if self.request.max_moves is not None else
                        "no move, swap or leadership change found keeps the hard rules")
                raise PlanError(f"network capacity not met: broker {b} would still carry "
                                f"{values[b] / 1000:.0f} bytes/s, above its {label} {limit / 1000:.0f}: {stop}")

    def move_rows(self, program: Any) -> None:
        """A broker ends within its network-in capacity, or no further above it than it is."""
        t = self.t
        scale = max(1, max(t.rin, default=1))
        for broker, coefs in program.per_broker(lambda i: t.rin[i] / scale).items():
            limit = self.cap_in.get(broker)
            if limit is not None:
                v = t.net_in[broker]
                program.row(-math.inf, (max(limit, v) - v) / scale, coefs)
        out: dict[int, dict[int, float]] = {}
        for k, (i, b, a) in enumerate(program.columns):
            if t.lead[i] == b and t.rout[i]:
                out.setdefault(a, {})[k] = t.rout[i] / scale
                out.setdefault(b, {})[k] = -t.rout[i] / scale
        for broker, coefs in out.items():
            limit = self.cap_out.get(broker)
            if limit is not None:
                v = t.net_out[broker]
                program.row(-math.inf, (max(limit, v) - v) / scale, coefs)

    def exact_rows(self, program: ExactProgram) -> None:
        rin, _ = rates(program.work)
        scale = float(max(rin, default=0) or 1)
        for k, b in enumerate(program.brokers):
            limit = self.cap_in.get(b)
            if limit is not None:
                cols = [program.x[i][k] for i in program.parts if rin[i]]
                program.row(-math.inf, limit / scale, cols, [rin[i] / scale for i in program.parts if rin[i]], "hard")

    def bound_rows(self, program: BoundProgram) -> None:
        if self.cap_in:
            if self.floors is None:     # the same for every program the bound solves
                rin, _ = rates(self.work)
                self.floors = rate_floors(self.work, rin, None, self.cap_in)
            program.require_floors(*self.floors)

    @staticmethod
    def targets(view: ReportView) -> tuple[Target, ...]:
        if not rated(view.plan.before):
            return ()

        def over(snapshot: ClusterSnapshot) -> int:
            alive = [b for b in snapshot.brokers if b.alive]
            figures = snapshot_figures(snapshot, [b.id for b in alive])
            net_in, net_out = figures["network_in"], figures["network_out"]
            return sum(1 for b in alive if b.network_in_capacity is not None
                       and net_in[b.id] > units(b.network_in_capacity)
                       or b.network_out_capacity is not None and net_out[b.id] > units(b.network_out_capacity))
        before, after = over(view.plan.before), over(view.plan.after)
        missed = (f"brokers above a network capacity: {after} after the plan, target 0: "
                  + blame(view, True, "network capacity")) if after else ""
        return (Target("brokers above a network capacity", before, after, 0, not after, 1, missed),)


def capacities(work: Working) -> tuple[dict[int, int], dict[int, int]]:
    """``network_in_capacity`` and ``network_out_capacity`` of the eligible brokers that have one,
    in whole milli-bytes/s."""
    brokers = [b for b in work.snapshot.brokers if b.id in work.eligible_set]
    return ({b.id: units(b.network_in_capacity) for b in brokers if b.network_in_capacity is not None},
            {b.id: units(b.network_out_capacity) for b in brokers if b.network_out_capacity is not None})
