"""Network-out: every broker sends between ``lo`` and ``hi`` bytes/s, by leadership changes.

Goals
    When partitions carry rates, every eligible broker's network-out (per partition it leads,
    every consumer group's reads plus replication to its followers: :mod:`.traffic`) within
    ``[lo, min(hi, network_out_capacity)]``, ``mean * (1 -+ threshold)`` with the byte band's
    rule (``hi`` at least the busiest partition), with the fewest leader changes. Distance:
    rate outside the band, summed over brokers (whole milli-bytes/s).

Constraints
    - Network-out follows the leader, and a leadership change moves no data: the goal runs in
      the leader phase, after the leader goal's flow has evened the preferred-leader counts
      with the fewest changes, and keeps each broker's count no further out of that band
      (:mod:`.leader_traffic`; :mod:`.order` says why it ranks after leaders, where Cruise
      Control ranks it before). It keeps ``network_out_capacity`` (hard) and relieves a broker
      above it first; one the band's search leaves above it is relieved with the band aside,
      then by :class:`CapacityLeaders` (every partition's leader, depth-first, bounded), whose
      reason the refusal names when no choice is found.
    - With ``--max-leader-changes`` it makes no change (a note says so): the budget is the
      leader goal's.
    - No rows in the exact program or the bound: they place replica sets, and leadership is
      the leader phase's (as for :mod:`.leaders`). A broker that holds too few busy replicas to
      reach the band by leadership is left outside it (a note says so); the network-in goal's
      replica moves spread busy partitions' replicas, which this goal's changes then use.
    - Inert without rates (:func:`.traffic.rated`).

Algorithm
    :class:`kafka_replica_assignor.planner.goals.leader_traffic.LeadershipPass` with weight
    ``bytes_out_per_s + bytes_in_per_s * (RF - 1)``.

Example
    Brokers 1, 2 and 3 send 150, 90 and 60 B/s (band 90-110), each leading two partitions of
    replication factor 3: broker 1 hands the leadership of a 50 B/s partition to 3 and takes a
    10 B/s one back; they send 110, 90 and 100 B/s.
"""

from __future__ import annotations

from typing import ClassVar

from kafka_replica_assignor.planner.goals.leader_traffic import LeaderFigure, LeadershipPass, LeaderState
from kafka_replica_assignor.planner.goals.traffic import band_texts, rates

NO_LIMIT = 1 << 62
"""The top of a broker without a ``network_out_capacity``, in milli-bytes/s: never reached."""


class NetworkOutGoal(LeaderFigure):
    """Bring every broker's network-out into its band by leadership changes (module doc)."""

    name = "network-out"
    key = "network_out"
    figure = "network_out"
    label = "network-out per alive broker"
    bound_text: ClassVar[dict[str, str]] = band_texts("network_out", "network-out")

    def weights(self) -> list[int]:
        return rates(self.work)[1]

    def high(self, b: int) -> int:
        limit = self.cap_out.get(b)
        return self.hi if limit is None else min(self.hi, limit)

    def moved(self, out_moved: int, weight_moved: int) -> int:
        return out_moved

    def relieve(self, state: LeaderState) -> int:
        """Brokers the band's search left above their ``network_out_capacity`` brought under it,
        the band aside (it can need a partner above the band): a pass whose band is ``[0,
        capacity]``, then, for what is still above, :class:`CapacityLeaders`, whose reason is
        kept for the refusal when it finds nothing (the network capacity goal's final check)."""
        caps = state.cap_out
        if not any(state.net_out[b] > limit for b, limit in caps.items()):
            return 0
        relief = LeadershipPass(state, self.weights(), 0, lambda b: caps.get(b, NO_LIMIT), self.earlier_keeps(),
                                capacity_first=True)
        made = relief.run()
        if any(state.net_out[b] > limit for b, limit in caps.items()):
            more, why = CapacityLeaders(state).run()
            made += more
            if why:
                self.work.memo["network_out_capacity_why"] = why
        return made


class CapacityLeaders:
    """Leaders for every partition that may change, each broker within its ``network_out_capacity``,
    when the pass leaves one above it: a depth-first search over those partitions, heaviest
    first, each led by its current leader first, then by its other candidates least loaded first,
    a branch cut as soon as a broker goes above its capacity. At most :data:`NODES` leaders tried
    (a limit in work): a search that ends without a plan is a proof that none exists (every
    leader of every partition tried), one cut by the limit is not."""

    NODES = 200_000

    def __init__(self, state: LeaderState) -> None:
        self.s = state
        rout = state.rout
        self.parts = sorted((i for i in state.cand if rout[i]), key=lambda i: (-rout[i], i))
        self.load = dict(state.net_out)
        for i in self.parts:
            self.load[state.leader(i)] -= rout[i]
        self.nodes = 0
        self.pick: list[int] = []

    def fits(self, b: int, w: int) -> bool:
        limit = self.s.cap_out.get(b)
        return limit is None or self.load[b] + w <= limit

    def search(self, k: int) -> bool:
        if k == len(self.parts):
            return True
        i = self.parts[k]
        w = self.s.rout[i]
        x = self.s.leader(i)
        for b in sorted(self.s.cand[i], key=lambda b: (b != x, self.load[b], b)):
            self.nodes += 1
            if self.nodes > self.NODES:
                return False
            if self.fits(b, w):
                self.load[b] += w
                self.pick.append(b)
                if self.search(k + 1):
                    return True
                self.load[b] -= w
                self.pick.pop()
        return False

    def run(self) -> tuple[int, str]:
        """The changes made, and why none could be when so ("": a plan was found)."""
        if not all(self.fits(b, 0) for b in self.load):
            return 0, "no choice of leaders can: partitions only one broker may lead send more than its capacity"
        parts = self.s.work.snapshot.partitions
        for i in self.parts:
            if not any(self.fits(b, self.s.rout[i]) for b in self.s.cand[i]):
                p = parts[i]
                return 0, (f"no choice of leaders can: partition {p.topic}-{p.partition} alone sends {self.s.rout[i] / 1000:.0f} bytes/s, "
                           "more than any of its replicas has room for under its network_out_capacity")
        if self.search(0):
            made = 0
            for i, b in zip(self.parts, self.pick, strict=True):
                if b != self.s.leader(i):
                    self.s.change(i, b)
                    made += 1
            return made, ""
        if self.nodes > self.NODES:
            return 0, f"no leadership change found in {self.NODES} tried (a search, not a proof)"
        return 0, "no choice of leaders keeps every broker within its network_out_capacity (every one tried)"
