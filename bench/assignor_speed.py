"""How fast the assignors place, and how fast their answer is encoded.

Default (rack-aware and rack-unaware) and striped, for 100,000 partitions x RF 3 on 1,000
brokers in 10 racks (change with the options). Best of 3 wall-clock runs. Targets: the
default assignor <= 1 us per placed replica, the encode <= 0.5 us per replica.

    python bench/assignor_speed.py [--partitions 100000] [--brokers 1000] [--racks 10] [--rf 3]
"""

from __future__ import annotations

import argparse
import functools
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kafka_replica_assignor.assignors import BrokerMetadata, ClusterView, place  # noqa: E402
from kafka_replica_assignor.assignors.default import DefaultReplicaAssignor, assign_replicas_to_brokers  # noqa: E402
from kafka_replica_assignor.assignors.striped import StripedReplicaAssignor  # noqa: E402

# --- encode response -------------------------------------------------------------------------
# "encode" is what the server sends: kafka_replica_assignor.protocol.fast writes the response body straight from the
# assignment (byte-identical to the schema codec: tests/conformance/test_fast_encode.py).
# "codec" is kafka-python's schema codec on the same data, for reference.
from kafka_replica_assignor.protocol.fast import encode_assignment_body  # noqa: E402
from kafka_replica_assignor.protocol.messages import CreateReplicaAssignmentResponse  # noqa: E402

ENCODE_VERSION = 1


def encode_response(assignment: dict[int, list[int]]) -> bytes:
    return encode_assignment_body(ENCODE_VERSION, assignment)


def codec_encode(assignment: dict[int, list[int]]) -> bytes:
    r = CreateReplicaAssignmentResponse
    entries = [r.ReplicaAssignment(partition_id=p, replicas=reps) for p, reps in sorted(assignment.items())]
    return r(version=ENCODE_VERSION, replica_assignment=entries).encode(version=ENCODE_VERSION)


# --- timing ----------------------------------------------------------------------------------

def best_of(repeat: int, fn: Callable[[], object]) -> tuple[float, object]:
    best, result = float("inf"), None
    for _ in range(repeat):
        started = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - started)
    return best, result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", type=int, default=100_000)
    parser.add_argument("--brokers", type=int, default=1_000)
    parser.add_argument("--racks", type=int, default=10)
    parser.add_argument("--rf", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)

    racked = [BrokerMetadata(b, f"rack-{b % args.racks}") for b in range(args.brokers)]
    rackless = [BrokerMetadata(b) for b in range(args.brokers)]
    cluster = ClusterView(brokers=tuple(racked))
    partitions = range(args.partitions)
    n, rf, seed = args.partitions, args.rf, args.seed

    cases: list[tuple[str, Callable[[], dict[int, list[int]]]]] = [
        ("default, rack-aware", lambda: assign_replicas_to_brokers(racked, n, rf, rng=random.Random(seed))),
        ("default, rack-unaware", lambda: assign_replicas_to_brokers(rackless, n, rf, rng=random.Random(seed))),
        ("default via place() + validation", lambda: place(DefaultReplicaAssignor(), "bench", partitions, rf,
                                                           cluster, rng=random.Random(seed))),
        ("striped", lambda: StripedReplicaAssignor().assign_replicas_to_brokers(
            "bench", partitions, rf, cluster, rng=random.Random(seed))),
    ]
    replicas = n * rf
    print(f"{n:,} partitions x RF {rf} on {args.brokers:,} brokers in {args.racks} racks; "
          f"best of {args.repeat}; Python {sys.version.split()[0]}")
    print()
    print(f"| {'assignor':<34} | {'place s':>8} | {'us/replica':>10} | {'encode s':>8} | {'us/replica':>10} "
          f"| {'place+encode s':>14} | {'codec s':>8} |")
    print(f"|{'-' * 36}|{'-' * 9}:|{'-' * 11}:|{'-' * 9}:|{'-' * 11}:|{'-' * 15}:|{'-' * 9}:|")
    for label, fn in cases:
        seconds, result = best_of(args.repeat, fn)
        assert len(result) == n
        encode_seconds, body = best_of(args.repeat, functools.partial(encode_response, result))
        codec_seconds, reference = best_of(1, functools.partial(codec_encode, result))
        assert body == reference, "fast encoder differs from the codec"
        print(f"| {label:<34} | {seconds:>8.3f} | {seconds / replicas * 1e6:>10.3f} | {encode_seconds:>8.3f} "
              f"| {encode_seconds / replicas * 1e6:>10.3f} | {seconds + encode_seconds:>14.3f} | {codec_seconds:>8.3f} |")

if __name__ == "__main__":
    main()
