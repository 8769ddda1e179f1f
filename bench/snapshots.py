#!/usr/bin/env python3
"""Realistic cluster snapshots for the planner benches, from fixed seeds.

The model follows the synthetic clusters of Cruise Control's tests: a topic's traffic rate is
drawn from an exponential distribution, and each partition's size from an exponential
distribution around its topic's rate, so a few topics and partitions hold most of the bytes.
On top of that:

- topics of 1 to hundreds of partitions (most small, a long tail of big ones);
- mixed replication factors: mostly 3 and 2, a few 1 and 4;
- flat racks (``rack-3``) or a multi-level rack tree (``/dc1/zone-a/rack-3``);
- the layout Kafka itself would have made when each topic was created (a rack-alternating
  broker list, consecutive replicas from a random start), over the brokers that existed then;
- ``new`` brokers added since (empty), ``hot`` brokers that took extra replicas and leaders
  (an old manual reassignment), ``dead`` brokers (``alive: false``) still holding replicas;
- optional ``capacity_bytes`` per broker (some brokers with bigger disks).

The same :class:`SnapshotSpec` always gives the same bytes. It can also write what
``kafka-log-dirs.sh --describe`` would print for the cluster (followers lag a little behind
their leader), to exercise ``replica-assignor balance --log-dirs``.

    python bench/snapshots.py --brokers 300 --partitions 150000 --racks 3 --levels 1 \\
        --new 6 --dead 1 --seed 7 --out snapshot.json [--capacity 2.0] [--log-dirs-out dirs.txt]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import accumulate

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from kafka_replica_assignor.cluster.snapshot import gc_paused  # noqa: E402

# replication factors and their shares of topics
RF_WEIGHTS = ((3, 0.70), (2, 0.22), (1, 0.05), (4, 0.03))
# partitions per topic and their shares of topics: most topics are small, a long tail is big
TOPIC_SIZES = ((1, 0.10), (3, 0.12), (6, 0.14), (8, 0.08), (12, 0.14), (16, 0.08), (24, 0.08),
               (32, 0.08), (50, 0.06), (64, 0.04), (100, 0.04), (128, 0.02), (200, 0.01),
               (256, 0.005), (500, 0.005))
TOPIC_PREFIXES = ("orders", "payments-events", "clickstream", "audit-log", "metrics",
                  "user-profile-updates", "inventory", "search-queries")
ZONES = "abcdefghijklmnopqrstuvwxyz"


@dataclass(frozen=True, slots=True)
class SnapshotSpec:
    """What to generate. ``brokers`` counts every broker: old, new and dead."""

    brokers: int = 300
    partitions: int = 150_000
    racks: int = 3
    levels: int = 1
    new: int = 6
    dead: int = 1
    hot: int = 3
    hot_share: float = 0.05
    mean_size_bytes: int = 1 << 30
    capacity: float | None = None
    seed: int = 7

    def __post_init__(self) -> None:
        if self.levels not in (1, 2, 3):
            raise ValueError(f"levels must be 1, 2 or 3, got {self.levels}")
        if self.racks < 1 or self.partitions < 1:
            raise ValueError("racks and partitions must be >= 1")
        old = self.brokers - self.new
        if old < 4 or old - self.dead < 1:
            raise ValueError("need at least 4 brokers before the new ones, one of them alive")
        if self.dead < 0 or self.new < 0 or not 0 <= self.hot <= old - self.dead:
            raise ValueError("new, dead and hot must be >= 0, hot brokers among the alive old ones")
        if self.capacity is not None and self.capacity <= 0:
            raise ValueError("capacity is a multiple of the mean disk use, > 0")


def rack_name(rack: int, spec: SnapshotSpec) -> str:
    """Leaf rack ``rack`` as a flat name or a path in a tree of datacentres and zones."""
    if spec.levels == 1:
        return f"rack-{rack}"
    zones = min(3, spec.racks)
    zone = ZONES[rack % zones]
    if spec.levels == 2:
        return f"/zone-{zone}/rack-{rack}"
    dcs = min(2, spec.racks)
    return f"/dc{rack % dcs + 1}/zone-{ZONES[(rack // dcs) % zones]}/rack-{rack}"


def _choices(table: tuple[tuple[int, float], ...], rng: random.Random, k: int) -> list[int]:
    values = [v for v, _ in table]
    cum = list(accumulate(w for _, w in table))
    return rng.choices(values, cum_weights=cum, k=k)


def _rack_alternating(ids: list[int], rack_of: dict[int, int]) -> list[int]:
    """Kafka's rack-alternating broker list: one broker of each rack in turn."""
    by_rack: dict[int, list[int]] = {}
    for b in ids:
        by_rack.setdefault(rack_of[b], []).append(b)
    columns = [by_rack[r] for r in sorted(by_rack)]
    out: list[int] = []
    for i in range(max(map(len, columns))):
        out.extend(col[i] for col in columns if i < len(col))
    return out


def generate(spec: SnapshotSpec) -> dict:
    """The snapshot as decoded JSON (the shared format of :mod:`kafka_replica_assignor.cluster.snapshot`)."""
    rng = random.Random(spec.seed)
    n_old = spec.brokers - spec.new
    rack_of = {b: b % spec.racks for b in range(spec.brokers)}
    old = list(range(n_old))
    dead = set(range(n_old - spec.dead, n_old))
    hot = [b for b in old if b not in dead][-spec.hot:] if spec.hot else []
    hot_by_rack: dict[int, list[int]] = {}
    for b in hot:
        hot_by_rack.setdefault(rack_of[b], []).append(b)
    ring = _rack_alternating(old, rack_of)
    n = len(ring)

    partitions: list[dict] = []
    topic_no = 0
    expovariate, randrange, random_ = rng.expovariate, rng.randrange, rng.random
    mean = spec.mean_size_bytes
    while len(partitions) < spec.partitions:
        count = min(_choices(TOPIC_SIZES, rng, 1)[0], spec.partitions - len(partitions))
        rf = min(_choices(RF_WEIGHTS, rng, 1)[0], n)
        rate = expovariate(1.0)  # the topic's popularity, mean 1
        name = f"{TOPIC_PREFIXES[topic_no % len(TOPIC_PREFIXES)]}-{topic_no:05d}"
        topic_no += 1
        start = randrange(n)
        # a multiple of the rack count keeps the followers on other racks than the leader
        # (exactly so when the racks are equal and the ring does not wrap)
        shift = spec.racks * randrange(max(1, (n - 1) // spec.racks))
        for p in range(count):
            first = (start + p) % n
            # followers: consecutive in the ring after a per-topic shift, as Kafka staggers them
            replicas = [ring[first]] + [ring[(first + 1 + (shift + j) % (n - 1)) % n]
                                        for j in range(rf - 1)]
            if hot and random_() < spec.hot_share * (1 + rate):
                # an old manual move onto a hot broker of the same rack; often it took the lead
                j = randrange(rf)
                choices = hot_by_rack.get(rack_of[replicas[j]])
                if choices:
                    b = choices[randrange(len(choices))]
                    if b not in replicas:
                        replicas[j] = b
                        if random_() < 0.5:
                            replicas.insert(0, replicas.pop(j))
            size = int(expovariate(1.0) * rate * mean)
            partitions.append({"topic": name, "partition": p, "replicas": replicas, "size_bytes": size})

    brokers: list[dict] = []
    for b in range(spec.brokers):
        entry: dict = {"id": b, "rack": rack_name(rack_of[b], spec)}
        if b in dead:
            entry["alive"] = False
        brokers.append(entry)
    if spec.capacity is not None:
        alive = spec.brokers - spec.dead
        load = sum(p["size_bytes"] * len(p["replicas"]) for p in partitions)
        base = int(spec.capacity * load / alive)
        for entry in brokers:
            # every fifth broker has half again as much disk
            entry["capacity_bytes"] = base * 3 // 2 if entry["id"] % 5 == 0 else base
    return {"brokers": brokers, "partitions": partitions}


def snapshot_lines(data: dict) -> Iterator[str]:
    """The snapshot as JSON text, one partition per line (fast at a million partitions)."""
    dumps = json.dumps
    yield '{"brokers": ' + dumps(data["brokers"]) + ',\n"partitions": [\n'
    parts = data["partitions"]
    last = len(parts) - 1
    for i, p in enumerate(parts):
        yield (f'{{"topic":{dumps(p["topic"])},"partition":{p["partition"]},'
               f'"replicas":[{",".join(map(str, p["replicas"]))}],"size_bytes":{p["size_bytes"]}}}'
               + (",\n" if i < last else "\n"))
    yield "]}\n"


def log_dirs_text(data: dict, seed: int = 0) -> str:
    """What ``kafka-log-dirs.sh --describe`` prints for the snapshot's alive brokers: the two
    lines of text, then the JSON. Followers report a little less than the leader (lag)."""
    random_ = random.Random(seed).random
    alive = [b["id"] for b in data["brokers"] if b.get("alive", True)]
    on: dict[int, list[str]] = {b: [] for b in alive}
    for p in data["partitions"]:
        name = json.dumps(f"{p['topic']}-{p['partition']}")
        size = p["size_bytes"]
        for j, b in enumerate(p["replicas"]):
            if b in on:
                lag = 0 if j == 0 else int(random_() * 0.01 * size)
                on[b].append(f'{{"partition":{name},"size":{size - lag},"offsetLag":{lag},"isFuture":false}}')
    brokers = ",".join(f'{{"broker":{b},"logDirs":[{{"logDir":"/var/lib/kafka/data","error":null,'
                       f'"partitions":[{",".join(on[b])}]}}]}}' for b in alive)
    return ("Querying brokers for log directories information\n"
            f"Received log directory information from brokers {','.join(map(str, alive))}\n"
            f'{{"version":1,"brokers":[{brokers}]}}\n')


def write_snapshot(spec: SnapshotSpec, path: str, log_dirs_path: str | None = None) -> dict:
    """Generate ``spec`` into ``path`` (and the log-dirs text into ``log_dirs_path``)."""
    with gc_paused():
        data = generate(spec)
    with open(path, "w", encoding="utf-8") as f:
        f.writelines(snapshot_lines(data))
    if log_dirs_path:
        with open(log_dirs_path, "w", encoding="utf-8") as f:
            f.write(log_dirs_text(data, spec.seed))
    return data


def spec_from_args(argv: list[str] | None = None) -> tuple[SnapshotSpec, str, str | None]:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--brokers", type=int, default=300, help="all brokers, new and dead included")
    ap.add_argument("--partitions", type=int, default=150_000)
    ap.add_argument("--racks", type=int, default=3, help="leaf racks")
    ap.add_argument("--levels", type=int, default=1, choices=(1, 2, 3), help="rack tree depth")
    ap.add_argument("--new", type=int, default=6, help="empty brokers added since")
    ap.add_argument("--dead", type=int, default=1, help="brokers marked alive: false")
    ap.add_argument("--hot", type=int, default=3, help="brokers holding extra replicas and leaders")
    ap.add_argument("--mean-size", type=int, default=1 << 30, help="mean partition size, bytes")
    ap.add_argument("--capacity", type=float, help="add capacity_bytes: this multiple of the mean disk use")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--out", required=True, help="snapshot JSON to write")
    ap.add_argument("--log-dirs-out", help="also write kafka-log-dirs.sh --describe output")
    a = ap.parse_args(argv)
    spec = SnapshotSpec(brokers=a.brokers, partitions=a.partitions, racks=a.racks, levels=a.levels,
                        new=a.new, dead=a.dead, hot=a.hot, mean_size_bytes=a.mean_size,
                        capacity=a.capacity, seed=a.seed)
    return spec, a.out, a.log_dirs_out


def main(argv: list[str] | None = None) -> int:
    spec, out, log_dirs_out = spec_from_args(argv)
    t0 = time.perf_counter()
    data = write_snapshot(spec, out, log_dirs_out)
    topics = len({p["topic"] for p in data["partitions"]})
    print(f"{out}: {len(data['partitions']):,} partitions in {topics:,} topics on {spec.brokers:,} brokers "
          f"in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
