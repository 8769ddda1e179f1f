"""The placement invariants as test assertions, over the one placement checker.

The rules and their messages are :mod:`kafka_replica_assignor.assignors.validate`'s (the same ones every answer
passes before it is sent, and the conformance kit applies); this module only turns the
list of violations into an ``AssertionError`` and keeps the tests' short option names::

    from tests.property.invariants import check_placement

    check_placement(assignment, cluster, rf=3, partitions=range(12))            # the basics
    check_placement(assignment, cluster, rf=3, rack_spread=True, leader_balance=True)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from kafka_replica_assignor.assignors.model import ClusterView
from kafka_replica_assignor.assignors.validate import (
    balance_violations,
    leader_counts,
    placement_violations,
    replica_counts,
)

__all__ = [
    "PlacementViolation",
    "balance_violations",
    "check_placement",
    "leader_counts",
    "placement_violations",
    "replica_counts",
]


class PlacementViolation(AssertionError):
    """One or more placement invariants failed; ``violations`` lists them."""

    def __init__(self, violations: list[str]) -> None:
        shown = violations[:20]
        more = f"\n  ... and {len(violations) - 20} more" if len(violations) > 20 else ""
        super().__init__("placement invariants violated:\n  " + "\n  ".join(shown) + more)
        self.violations = violations


def check_placement(
    assignment: Mapping[int, Sequence[int]],
    cluster: ClusterView,
    rf: int,
    partitions: Iterable[int] | None = None,
    *,
    current: Mapping[int, Sequence[int]] | None = None,
    rack_spread: bool = False,
    leader_balance: bool = False,
    replica_balance: int | None = None,
    fenced_never_lead: bool = True,
    fenced_only_when_needed: bool = False,
    placeholders: bool = False,
) -> None:
    """Raise :class:`PlacementViolation` unless every selected invariant holds.

    - always: ``rf`` distinct known brokers per partition; exactly ``partitions`` when given;
      ``current`` replicas kept as a prefix when given; no fenced leader (``fenced_never_lead``);
    - ``fenced_only_when_needed``: a fenced broker takes a new replica only where every unfenced
      broker holds one (the framework's rule: every answer of ``place`` keeps it);
    - ``rack_spread``: each partition spans ``min(rf, #racks)`` racks;
    - ``leader_balance``: preferred-leader counts over the unfenced brokers differ by <= 1;
    - ``replica_balance=t``: replica counts over all brokers differ by <= ``t`` (0 = equal);
    - ``placeholders``: negative KIP-409 placeholder ids are allowed (never as leader; they
      count for the replication factor, not for racks or balance).
    """
    violations = placement_violations(
        assignment, cluster, rf, partitions, current=current, keep_order=True,
        fenced_never_lead=fenced_never_lead, fenced_only_when_needed=fenced_only_when_needed,
        rack_spread=rack_spread,
        leader_skew=1 if leader_balance else None, replica_skew=replica_balance, placeholders=placeholders,
    )
    if violations:
        raise PlacementViolation(violations)
