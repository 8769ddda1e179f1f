"""Reusable placement invariants, shared by every assignor's tests.

Each check returns a list of human-readable violations (empty when the invariant holds);
:func:`check_placement` runs the ones asked for and raises :class:`PlacementViolation`
(an ``AssertionError``) listing them all. Use the single checks when a test wants to
assert that a property does *not* hold, or to combine them differently::

    from tests.property.invariants import check_placement

    check_placement(assignment, cluster, rf=3, partitions=range(12))            # the basics
    check_placement(assignment, cluster, rf=3, rack_spread=True, leader_balance=True)

The basics always run: exactly the requested partition ids (when given), ``rf`` distinct
brokers per partition, every broker in the cluster view, current replicas kept as a prefix
(when ``current`` is given).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

from assignors.model import ClusterView

AssignmentLike = Mapping[int, Sequence[int]]


class PlacementViolation(AssertionError):
    """One or more placement invariants failed; ``violations`` lists them."""

    def __init__(self, violations: list[str]) -> None:
        shown = violations[:20]
        more = f"\n  ... and {len(violations) - 20} more" if len(violations) > 20 else ""
        super().__init__("placement invariants violated:\n  " + "\n  ".join(shown) + more)
        self.violations = violations


def leader_counts(assignment: AssignmentLike, brokers: Iterable[int]) -> dict[int, int]:
    """Preferred-leader count per broker, with 0 for the given brokers that lead nothing."""
    counts = dict.fromkeys(brokers, 0)
    for replicas in assignment.values():
        if replicas:
            counts[replicas[0]] = counts.get(replicas[0], 0) + 1
    return counts


def replica_counts(assignment: AssignmentLike, brokers: Iterable[int]) -> dict[int, int]:
    """Replica count per broker, with 0 for the given brokers that hold nothing."""
    counts = dict.fromkeys(brokers, 0)
    for replicas in assignment.values():
        for b in replicas:
            counts[b] = counts.get(b, 0) + 1
    return counts


def racks_spanned(replicas: Sequence[int], cluster: ClusterView) -> int:
    """Number of distinct racks holding the replicas (unknown brokers count as no rack)."""
    rack_of = cluster.rack_by_broker
    return len({rack_of.get(b) for b in replicas})


def partition_ids_violations(assignment: AssignmentLike, partitions: Iterable[int]) -> list[str]:
    wanted, got = set(partitions), set(assignment)
    out = []
    if wanted - got:
        out.append(f"missing partitions {sorted(wanted - got)[:10]}")
    if got - wanted:
        out.append(f"unexpected partitions {sorted(got - wanted)[:10]}")
    return out


def replicas_violations(assignment: AssignmentLike, cluster: ClusterView, rf: int,
                        placeholders: bool = False) -> list[str]:
    """``rf`` distinct replicas per partition, all of them brokers of the cluster view.

    With ``placeholders``, negative ids (KIP-409) are allowed too, but never as leader.
    """
    known = set(cluster.broker_ids)
    out = []
    for p, replicas in sorted(assignment.items()):
        if len(replicas) != rf:
            out.append(f"partition {p}: {len(replicas)} replicas {list(replicas)}, expected {rf}")
        if len(set(replicas)) != len(replicas):
            out.append(f"partition {p}: duplicate broker in {list(replicas)}")
        unknown = [b for b in replicas if b not in known and not (placeholders and b < 0)]
        if unknown:
            out.append(f"partition {p}: unknown brokers {unknown}")
        if placeholders and replicas and replicas[0] < 0:
            out.append(f"partition {p}: placeholder {replicas[0]} leads")
    return out


def rack_spread_violations(assignment: AssignmentLike, cluster: ClusterView, rf: int) -> list[str]:
    """Each partition spans exactly ``min(replicas, #racks)`` racks (no-op without racks).

    Only replicas on brokers of the cluster view count (placeholders have no rack), so a
    partition without placeholders must span ``min(rf, #racks)`` racks.
    """
    n_racks = len(cluster.racks)
    if n_racks == 0:
        return []
    known = set(cluster.broker_ids)
    out = []
    for p, replicas in sorted(assignment.items()):
        real = [b for b in replicas if b in known]
        want = min(len(real), n_racks)
        if racks_spanned(real, cluster) != want:
            out.append(f"partition {p}: {list(replicas)} spans {racks_spanned(real, cluster)} racks, "
                       f"expected {want}")
    return out


def balance_violations(counts: Mapping[int, int], what: str, tolerance: int = 1) -> list[str]:
    """The counts differ by at most ``tolerance`` (0 = exactly equal)."""
    if not counts:
        return []
    low, high = min(counts.values()), max(counts.values())
    if high - low > tolerance:
        return [f"{what} counts range {low}..{high} (more than {tolerance} apart): {dict(sorted(counts.items()))}"]
    return []


def fenced_leader_violations(assignment: AssignmentLike, fenced: Iterable[int]) -> list[str]:
    fenced = set(fenced)
    return [f"partition {p}: fenced broker {r[0]} leads" for p, r in sorted(assignment.items())
            if r and r[0] in fenced]


def kept_prefix_violations(assignment: AssignmentLike, current: Mapping[int, Sequence[int]]) -> list[str]:
    """Partitions that already exist keep their current replicas, in order, as a prefix."""
    return [
        f"partition {p}: current replicas {list(current[p])} are not a prefix of {list(r)}"
        for p, r in sorted(assignment.items())
        if p in current and list(r[:len(current[p])]) != list(current[p])
    ]


def placement_violations(
    assignment: AssignmentLike,
    cluster: ClusterView,
    rf: int,
    partitions: Iterable[int] | None = None,
    *,
    current: Mapping[int, Sequence[int]] | None = None,
    rack_spread: bool = False,
    leader_balance: bool = False,
    replica_balance: int | None = None,
    fenced_never_lead: bool = True,
    placeholders: bool = False,
) -> list[str]:
    """All violations of the selected invariants (see :func:`check_placement`)."""
    out: list[str] = []
    if partitions is not None:
        out += partition_ids_violations(assignment, partitions)
    out += replicas_violations(assignment, cluster, rf, placeholders)
    if current is not None:
        out += kept_prefix_violations(assignment, current)
    if fenced_never_lead:
        out += fenced_leader_violations(assignment, cluster.fenced)
    if rack_spread:
        out += rack_spread_violations(assignment, cluster, rf)
    if leader_balance:
        leaders = leader_counts(assignment, cluster.unfenced_ids)
        out += balance_violations(leaders, "leader")
    if replica_balance is not None:
        known = set(cluster.broker_ids)
        counts = {b: c for b, c in replica_counts(assignment, known).items() if b in known}
        out += balance_violations(counts, "replica", replica_balance)
    return out


def check_placement(
    assignment: AssignmentLike,
    cluster: ClusterView,
    rf: int,
    partitions: Iterable[int] | None = None,
    *,
    current: Mapping[int, Sequence[int]] | None = None,
    rack_spread: bool = False,
    leader_balance: bool = False,
    replica_balance: int | None = None,
    fenced_never_lead: bool = True,
    placeholders: bool = False,
) -> None:
    """Raise :class:`PlacementViolation` unless every selected invariant holds.

    - always: ``rf`` distinct known brokers per partition; exactly ``partitions`` when given;
      ``current`` replicas kept as a prefix when given; no fenced leader (``fenced_never_lead``);
    - ``rack_spread``: each partition spans ``min(rf, #racks)`` racks;
    - ``leader_balance``: preferred-leader counts over the unfenced brokers differ by <= 1;
    - ``replica_balance=t``: replica counts over all brokers differ by <= ``t`` (0 = equal);
    - ``placeholders``: negative KIP-409 placeholder ids are allowed (never as leader; they
      count for the replication factor, not for racks or balance).
    """
    violations = placement_violations(
        assignment, cluster, rf, partitions, current=current, rack_spread=rack_spread,
        leader_balance=leader_balance, replica_balance=replica_balance,
        fenced_never_lead=fenced_never_lead, placeholders=placeholders,
    )
    if violations:
        raise PlacementViolation(violations)


def counts_summary(assignment: AssignmentLike) -> tuple[Counter, Counter]:
    """``(leader counts, replica counts)`` over the brokers that appear, for messages and plots."""
    leaders: Counter = Counter(r[0] for r in assignment.values() if r)
    replicas: Counter = Counter(b for r in assignment.values() for b in r)
    return leaders, replicas
