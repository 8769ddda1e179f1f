"""Leader bytes-in: every broker leads partitions taking between ``lo`` and ``hi`` produce bytes/s.

Goals
    When partitions carry ``bytes_in_per_s``, every eligible broker's leader bytes-in (the
    produce bytes of the partitions it leads: :mod:`.traffic`) within ``mean * (1 -+
    threshold)`` (the byte band's rule), by leadership changes. Distance: rate outside the band,
    summed over brokers (whole milli-bytes/s).

Constraints
    - Ranks last, as Cruise Control's ``LeaderBytesInDistributionGoal``: its changes keep the
      preferred-leader counts no further out of their band, network-out no further out of its
      band (:mod:`.network_out`'s ``keeps``) and within ``network_out_capacity``.
    - No rows in the exact program or the bound (leadership is the leader phase's); with
      ``--max-leader-changes`` it makes no change; inert without rates.

Algorithm
    :class:`kafka_replica_assignor.planner.goals.leader_traffic.LeadershipPass` with weight
    ``bytes_in_per_s``.

Example
    Broker 1 leads 80 B/s of produce, broker 2 leads 20 (band 45-55), both lead one partition of
    each other's: 1 hands 2 a 40 B/s partition and takes back a 10 B/s one: 50 and 50.
"""

from __future__ import annotations

from typing import ClassVar

from kafka_replica_assignor.planner.goals.leader_traffic import LeaderFigure
from kafka_replica_assignor.planner.goals.traffic import band_texts, rates


class LeaderBytesInGoal(LeaderFigure):
    """Bring every broker's leader bytes-in into its band by leadership changes (module doc)."""

    name = "leader bytes-in"
    key = "leader_in"
    figure = "leader_in"
    label = "leader bytes-in per alive broker"
    bound_text: ClassVar[dict[str, str]] = band_texts("leader_in", "leader bytes-in")

    def weights(self) -> list[int]:
        return rates(self.work)[0]
