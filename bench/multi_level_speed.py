"""How fast the multi-level rack assignor places replicas, and how even the result is.

Run: ``python bench/multi_level_speed.py [--partitions N] [--repeat R]``. Prints one row per
case: the best of ``R`` runs, microseconds per placed replica (target: <= 2 us for 100,000
partitions x RF 3 on 1,000 brokers in 3 DCs x 4 zones), and the replica and leader spread
(highest minus lowest count) at every level of the tree, top level first. Kafka's classic
algorithm (``kafka_replica_assignor.assignors.default``) runs on the same machine as a yardstick.
"""

from __future__ import annotations

import argparse
import os
import random
import time
from collections.abc import Callable

from kafka_replica_assignor.assignors import BrokerMetadata, ClusterView
from kafka_replica_assignor.assignors.default import DefaultReplicaAssignor
from kafka_replica_assignor.assignors.explain import explain
from kafka_replica_assignor.assignors.multi_level import MultiLevelRackAssignor, MultiLevelRingAssignor, assign


def zoned(n_brokers: int, dcs: int = 3, zones: int = 4) -> ClusterView:
    """``n_brokers`` dealt round-robin over ``dcs`` x ``zones`` racks ``/dc{d}/zone{z}``."""
    racks = [f"/dc{d}/zone{z}" for d in range(dcs) for z in range(zones)]
    return ClusterView.of(BrokerMetadata(i, racks[i % len(racks)]) for i in range(n_brokers))


def flat(n_brokers: int) -> ClusterView:
    return ClusterView.of(BrokerMetadata(i) for i in range(n_brokers))


def best_of(repeat: int, run: Callable[[], dict]) -> tuple[float, dict]:
    best, result = float("inf"), {}
    for _ in range(repeat):
        start = time.perf_counter()
        result = run()
        best = min(best, time.perf_counter() - start)
    return best, result


def spreads(assignment: dict, cluster: ClusterView) -> str:
    levels = explain(assignment, cluster)
    replicas = "/".join(str(level.replica_range[1] - level.replica_range[0]) for level in levels)
    leaders = "/".join(str(level.leader_range[1] - level.leader_range[0]) for level in levels)
    return f"{replicas:<9} {leaders:<9}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    n, rf, repeat = args.partitions, 3, args.repeat
    multi = MultiLevelRackAssignor()
    default = DefaultReplicaAssignor()
    cases = []

    def case(name: str, cluster: ClusterView, partitions: range, run: Callable[[], dict], placed: int,
             whole: Callable[[dict], dict] = lambda a: a) -> None:
        seconds, result = best_of(repeat, run)
        cases.append((name, len(cluster.brokers), len(partitions), seconds, placed,
                      spreads(whole(result), cluster)))

    big = zoned(1000)
    case("multi-level, 3 DCs x 4 zones x 83-84", big, range(n),
         lambda: multi.assign_replicas_to_brokers("t", range(n), rf, big, rng=random.Random(1)), n * rf)
    ring = MultiLevelRingAssignor()
    case("multi-level-ring (literal ring), same 1,000 brokers", big, range(n),
         lambda: ring.assign_replicas_to_brokers("t", range(n), rf, big, rng=random.Random(1)), n * rf)
    even = zoned(960)
    case("multi-level, 3 DCs x 4 zones x 80", even, range(n),
         lambda: multi.assign_replicas_to_brokers("t", range(n), rf, even, rng=random.Random(1)), n * rf)
    plain = flat(1000)
    case("multi-level, no racks", plain, range(n),
         lambda: multi.assign_replicas_to_brokers("t", range(n), rf, plain, rng=random.Random(1)), n * rf)
    case("multi-level, count rule only (no ring walk)", big, range(n),
         lambda: assign("t", range(n), rf, big, random.Random(1), ring_walk=False), n * rf)
    first = multi.assign_replicas_to_brokers("t", range(n), rf, big, rng=random.Random(1))
    grown = big.with_assignment("t", first)
    extra = range(n, n + n // 10)
    case("multi-level, add 10% partitions", big, extra,
         lambda: multi.assign_replicas_to_brokers("t", extra, rf, grown, rng=random.Random(2)),
         len(extra) * rf, lambda a: {**first, **a})
    small = range(n // 10)
    rf2 = big.with_assignment(
        "u", multi.assign_replicas_to_brokers("u", small, 2, big, rng=random.Random(3)))
    case("multi-level, raise RF 2 -> 3 (10% of partitions)", big, small,
         lambda: multi.assign_replicas_to_brokers("u", small, 3, rf2, rng=random.Random(4)), len(small))
    case("default (Kafka), same 1,000 brokers, yardstick", big, range(n),
         lambda: default.assign_replicas_to_brokers("t", range(n), rf, big, rng=random.Random(1)), n * rf)

    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"best of {repeat} runs; load average {load}; spreads per level, top first, brokers last")
    print(f"{'case':<50} {'brokers':>7} {'parts':>7} {'seconds':>8} {'us/replica':>10}  "
          f"{'replicas':<9} {'leaders':<9}")
    for name, brokers, parts, seconds, placed, spread in cases:
        print(f"{name:<50} {brokers:>7} {parts:>7} {seconds:>8.3f} {seconds / placed * 1e6:>10.2f}  {spread}")


if __name__ == "__main__":
    main()
