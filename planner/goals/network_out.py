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
      above it first.
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

from kafka_replica_assignor.planner.goals.leader_traffic import LeaderFigure
from kafka_replica_assignor.planner.goals.traffic import rates


class NetworkOutGoal(LeaderFigure):
    """Bring every broker's network-out into its band by leadership changes (module doc)."""

    name = "network-out"
    key = "network_out"
    figure = "network_out"
    label = "network-out per alive broker"
    bound_text: ClassVar[dict[str, str]] = {
        "network_out_band_lo": "network-out band low end (bytes/s) at threshold {t}: ceil(mean * (1 - threshold))",
        "network_out_band_hi": "network-out band high end (bytes/s) at threshold {t}: max(floor(mean * (1 + "
                               "threshold)), busiest partition)"}

    def weights(self) -> list[int]:
        return rates(self.work)[1]

    def high(self, b: int) -> int:
        limit = self.cap_out.get(b)
        return self.hi if limit is None else min(self.hi, limit)

    def moved(self, out_moved: int, weight_moved: int) -> int:
        return out_moved

