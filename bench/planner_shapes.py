#!/usr/bin/env python3
"""The balance planner across cluster *shapes*: CPU seconds, peak RSS and plan quality per shape.

Each row is one named shape from a fixed seed: its snapshot is written to a work directory, then
the whole ``replica-assignor balance --mode cluster --snapshot F --out D --no-charts`` command runs
as one child process (with this checkout first on ``PYTHONPATH`` and ``PYTHONHASHSEED=0``, so a
row is reproducible). Measured: the child's CPU seconds (user + sys) and peak RSS from
``os.wait4`` (the resource usage of that child alone, in a small helper process that starts
it, so that this process's own peak is not counted) and wall seconds; from the plan's
``summary.json`` the replica moves, bytes moved and leader changes; from its ``report.md`` the
bytes per broker before the plan (x mean), the largest bytes-moved lower bound the report gives
(the "4. bytes moved" objective: racks lacking, per-broker band or the LP of
``planner/solving/bound.py``, whichever is largest) and the count of "Targets not reached".

The shapes (20,000 partitions on 49 brokers in 3 racks unless named otherwise):

- sizes: 2,000 partitions on 12 brokers, 20,000 on 49 and 150,000 on 300, each with a few new,
  one dead and three hot brokers (``bench/snapshots.py``'s realistic mix); with ``--big`` also
  1,000,000 x RF 3 on 1,000 brokers in 10 racks of 3 levels;
- growth: 5 % and 10 % new empty brokers (150,000 partitions on 300 brokers), and the reported
  ``growth-150k`` (149,000 partitions on 300 brokers in 6 racks, 20 of them new);
- hot: three brokers holding several times the mean; dead: one or two dead brokers
  (``alive: false``) still holding replicas;
- rack trees of 1, 2 and 3 levels (6 racks), the reported ``two-level-20k`` (4 racks in 3 zones,
  so one zone holds two racks), uneven racks (20, 20, 7 and 2 brokers) and an uneven tree (a data
  centre with one zone of three racks beside one with three zones);
- capacities: ``capacity_bytes`` per broker, every fifth broker half again bigger (1.5x the mean
  use: roomy; 1.0x: binding, below the 10 % band's top);
- replication factor 1, 2, 3 and 4 for every topic.

Shapes that ``bench/snapshots.py``'s :class:`SnapshotSpec` cannot say (a rack per broker, one
replication factor for every topic) come from :class:`Layout` here, the same model otherwise.
Targets: every shape at 150,000 partitions on 300 brokers under 15 CPU-s, at 20,000 under 5 CPU-s,
1,000,000 x RF 3 on 1,000 brokers under 60 CPU-s and 4 GB. A child over ``--timeout`` seconds is
killed and shown as TIMEOUT. Nothing binds to the network.

    python bench/planner_shapes.py [--only NAME[,NAME]] [--big] [--json rows.json] [--keep DIR]
        [--timeout 900] [--threshold PERCENT] [--profile N] [--list]

``--profile N`` also runs each selected row once more as ``python -m cProfile -o F -m ...`` (its
default clock is wall time: run it on an idle machine; a timer of CPU time would cost about ten
times the run) and prints its top N own functions by cumulative time, its top N functions by
total time, and the call counts of a few watched hot spots (``Model.fits``, ``search.receiver``,
...); the ``.prof`` files stay in ``--keep``.
"""

from __future__ import annotations

import argparse
import json
import os
import pstats
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, REPO)

from snapshots import (  # noqa: E402
    RF_WEIGHTS,
    TOPIC_PREFIXES,
    TOPIC_SIZES,
    SnapshotSpec,
    _choices,
    _rack_alternating,
    rack_name,
    snapshot_lines,
    write_snapshot,
)

from kafka_replica_assignor.cluster.snapshot import gc_paused  # noqa: E402

GB = 10**9
MIB = 1 << 20


# -- shapes that SnapshotSpec cannot say ----------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Layout:
    """Broker ``i`` is in rack ``racks[i]`` (any sizes, any tree). The last ``new`` brokers are
    empty, the ``dead`` before them are dead, the last ``hot`` alive old ones took extra replicas.
    ``rf`` is every topic's replication factor (``None``: the mix of ``snapshots.RF_WEIGHTS``).
    Topic sizes, partition sizes and Kafka's layout follow ``bench/snapshots.py``."""

    racks: tuple[str, ...]
    partitions: int
    rf: int | None = None
    new: int = 0
    dead: int = 0
    hot: int = 0
    hot_share: float = 0.05
    mean_size_bytes: int = 1 << 30
    seed: int = 7


def interleaved(sizes: dict[str, int]) -> tuple[str, ...]:
    """One rack per broker id, taking one broker of each rack in turn (so the last ids, the new
    brokers, fall in the biggest racks)."""
    out: list[str] = []
    for i in range(max(sizes.values())):
        out.extend(rack for rack, size in sizes.items() if i < size)
    return tuple(out)


def _kafka_replicas(ring: list[int], first: int, shift: int, rf: int) -> list[int]:
    """Kafka's placement: the leader at ``first`` of the rack-alternating ring, the followers
    consecutive after a per-topic shift."""
    n = len(ring)
    first %= n
    return [ring[first]] + [ring[(first + 1 + (shift + j) % (n - 1)) % n] for j in range(rf - 1)]


def _onto_hot(replicas: list[int], hot_by_rack: dict[str, list[int]], rack_of: dict[int, str],
              rng: random.Random) -> None:
    """An old manual move of one replica onto a hot broker of its rack; often it took the lead."""
    j = rng.randrange(len(replicas))
    choices = hot_by_rack.get(rack_of[replicas[j]])
    if choices:
        b = choices[rng.randrange(len(choices))]
        if b not in replicas:
            replicas[j] = b
            if rng.random() < 0.5:
                replicas.insert(0, replicas.pop(j))


def _topic_partitions(lay: Layout, rng: random.Random, ring: list[int], topic_no: int, room: int,
                      hot_by_rack: dict[str, list[int]], rack_of: dict[int, str]) -> list[dict[str, Any]]:
    count = min(_choices(TOPIC_SIZES, rng, 1)[0], room)
    n = len(ring)
    rf = min(lay.rf or _choices(RF_WEIGHTS, rng, 1)[0], n)
    rate = rng.expovariate(1.0)   # the topic's popularity, mean 1
    name = f"{TOPIC_PREFIXES[topic_no % len(TOPIC_PREFIXES)]}-{topic_no:05d}"
    start = rng.randrange(n)
    n_racks = len({rack_of[b] for b in ring})
    shift = n_racks * rng.randrange(max(1, (n - 1) // n_racks))
    out = []
    for p in range(count):
        replicas = _kafka_replicas(ring, start + p, shift, rf)
        if hot_by_rack and rng.random() < lay.hot_share * (1 + rate):
            _onto_hot(replicas, hot_by_rack, rack_of, rng)
        size = int(rng.expovariate(1.0) * rate * lay.mean_size_bytes)
        out.append({"topic": name, "partition": p, "replicas": replicas, "size_bytes": size})
    return out


def generate_layout(lay: Layout) -> dict[str, Any]:
    """The snapshot of ``lay`` as decoded JSON (the format of ``bench/snapshots.py``)."""
    rng = random.Random(lay.seed)
    n_old = len(lay.racks) - lay.new
    rack_of = dict(enumerate(lay.racks))
    dead = set(range(n_old - lay.dead, n_old))
    alive_old = [b for b in range(n_old) if b not in dead]
    hot_by_rack: dict[str, list[int]] = {}
    for b in alive_old[len(alive_old) - lay.hot:] if lay.hot else ():
        hot_by_rack.setdefault(rack_of[b], []).append(b)
    ring = _rack_alternating(list(range(n_old)), rack_of)  # any sortable rack key
    partitions: list[dict[str, Any]] = []
    topic_no = 0
    while len(partitions) < lay.partitions:
        partitions += _topic_partitions(lay, rng, ring, topic_no, lay.partitions - len(partitions),
                                        hot_by_rack, rack_of)
        topic_no += 1
    brokers = [{"id": b, "rack": rack_of[b], **({"alive": False} if b in dead else {})}
               for b in range(len(lay.racks))]
    return {"brokers": brokers, "partitions": partitions}


def write_layout(lay: Layout, path: str) -> dict[str, Any]:
    with gc_paused():
        data = generate_layout(lay)
    with open(path, "w", encoding="utf-8") as f:
        f.writelines(snapshot_lines(data))
    return data


# -- the shapes ---------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Shape:
    name: str
    what: str
    make: SnapshotSpec | Layout
    big: bool = False


def _flat(brokers: int, racks: int) -> tuple[str, ...]:
    return tuple(f"rack-{b % racks}" for b in range(brokers))


def _uneven_tree() -> tuple[str, ...]:
    """dc1: one zone of three racks (8 brokers each); dc2: three zones of one rack (9, 8, 8)."""
    sizes = {"/dc1/zone-a/rack-0": 8, "/dc1/zone-a/rack-1": 8, "/dc1/zone-a/rack-2": 8,
             "/dc2/zone-a/rack-3": 9, "/dc2/zone-b/rack-4": 8, "/dc2/zone-c/rack-5": 8}
    return interleaved(sizes)


def _mid(**kw: Any) -> SnapshotSpec:
    """20,000 partitions on 49 brokers in 3 flat racks, nothing new, dead or hot unless said."""
    base: dict[str, Any] = {"brokers": 49, "partitions": 20_000, "racks": 3, "levels": 1, "new": 0, "dead": 0,
                            "hot": 0, "seed": 7}
    return SnapshotSpec(**(base | kw))


def _large(**kw: Any) -> SnapshotSpec:
    """150,000 partitions on 300 brokers in 3 flat racks, nothing new, dead or hot unless said."""
    base: dict[str, Any] = {"brokers": 300, "partitions": 150_000, "racks": 3, "levels": 1, "new": 0, "dead": 0,
                            "hot": 0, "seed": 7}
    return SnapshotSpec(**(base | kw))


def _big_racks() -> tuple[str, ...]:
    naming = SnapshotSpec(racks=10, levels=3)
    return tuple(rack_name(b % 10, naming) for b in range(1000))


SHAPES: tuple[Shape, ...] = (
    Shape("size-2k", "12 brokers, 3 racks, 1 new, 1 dead, 3 hot",
          SnapshotSpec(brokers=12, partitions=2000, racks=3, levels=1, new=1, dead=1, hot=3, seed=7)),
    Shape("size-20k", "49 brokers, 3 racks, 1 new, 1 dead, 3 hot", _mid(new=1, dead=1, hot=3)),
    Shape("size-150k", "300 brokers, 3 racks, 6 new, 1 dead, 3 hot (planner_realistic's row)",
          _large(new=6, dead=1, hot=3)),
    Shape("size-1m-rf3", "1,000 brokers, 10 racks in 3 levels, RF 3, 20 new, 2 dead, 10 hot",
          Layout(_big_racks(), 1_000_000, rf=3, new=20, dead=2, hot=10), big=True),
    Shape("growth-5pct", "300 brokers, 3 racks, 15 new (5 %)", _large(new=15)),
    Shape("growth-10pct", "300 brokers, 3 racks, 30 new (10 %)", _large(new=30)),
    Shape("growth-150k", "reported slow: 149,000 partitions, 300 brokers, 6 racks, 20 new",
          _large(partitions=149_000, racks=6, new=20)),
    Shape("hot", "3 hot brokers (one per rack) holding several times the mean", _mid(hot=3, hot_share=0.2)),
    Shape("dead-1", "1 dead broker holding replicas", _mid(dead=1)),
    Shape("dead-2", "2 dead brokers holding replicas", _mid(dead=2)),
    Shape("tree-1-level", "6 flat racks, 2 new", _mid(racks=6, levels=1, new=2)),
    Shape("tree-2-level", "6 racks in 3 zones, 2 new", _mid(racks=6, levels=2, new=2)),
    Shape("tree-3-level", "6 racks in 2 DCs x 3 zones, 2 new", _mid(racks=6, levels=3, new=2)),
    Shape("two-level-20k", "reported slow: 4 racks in 3 zones (zone-a holds 2), 3 new, 1 dead, 3 hot",
          _mid(racks=4, levels=2, new=3, dead=1, hot=3)),
    Shape("uneven-racks", "flat racks of 20, 20, 7 and 2 brokers, 2 new",
          Layout(interleaved({"rack-0": 20, "rack-1": 20, "rack-2": 7, "rack-3": 2}), 20_000, new=2)),
    Shape("uneven-dcs", "dc1: 1 zone of 3 racks; dc2: 3 zones of 1 rack; 2 new", Layout(_uneven_tree(), 20_000, new=2)),
    Shape("capacity", "capacity_bytes 1.5x the mean use, every fifth broker 1.5x that; 2 new",
          _mid(new=2, capacity=1.5)),
    Shape("capacity-tight", "capacity_bytes 1.0x the mean use (31 brokers above it before), every fifth broker "
          "1.5x that; 2 new", _mid(new=2, capacity=1.0)),
    *(Shape(f"rf-{rf}", f"every topic RF {rf}, 3 racks, 2 new", Layout(_flat(49, 3), 20_000, rf=rf, new=2))
      for rf in (1, 2, 3, 4)),
)


def target_of(partitions: int) -> tuple[float, float | None] | None:
    """(CPU seconds, peak bytes or None) the row must stay under, or None (no target)."""
    if partitions >= 1_000_000:
        return 60.0, 4 * GB
    if partitions >= 100_000:
        return 15.0, None
    if partitions >= 10_000:
        return 5.0, None
    return None


# -- running one row ----------------------------------------------------------------------------
@dataclass(slots=True)
class Row:
    name: str
    what: str
    partitions: int
    brokers: int
    levels: int
    status: str = "ok"                 # ok, TIMEOUT or FAIL (exit N)
    cpu_s: float | None = None
    wall_s: float | None = None
    peak_mib: float | None = None
    replica_moves: int | None = None
    leader_changes: int | None = None
    bytes_moved: int | None = None
    bound: int | None = None
    bound_kind: str | None = None
    before_max_x_mean: float | None = None
    targets_missed: list[str] = field(default_factory=list)
    error: str = ""
    over_target: str = ""


def child_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(x for x in (REPO, env.get("PYTHONPATH")) if x)
    env["PYTHONHASHSEED"] = "0"
    return env


# Starts the child, waits for it and prints its status and resource usage as JSON. A child
# started straight from this process would report this process's peak RSS when that is the
# larger: Python starts a child by vfork and exec, and exec keeps the larger of the child's
# high-water mark and that of the memory it replaces (this process's, which held the biggest
# snapshot written so far: after the 1M row every row showed its 339 MiB). The helper's own
# peak is the interpreter's ~10 MiB, below any plan's. On SIGTERM it kills the child.
HELPER = """\
import json, os, signal, sys, time
t0 = time.perf_counter()
pid = os.posix_spawn(sys.argv[1], sys.argv[1:], os.environ,
                     file_actions=[(os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0)])
signal.signal(signal.SIGTERM, lambda *_: os.kill(pid, signal.SIGKILL))
_, status, usage = os.wait4(pid, 0)
print(json.dumps([status, usage.ru_utime + usage.ru_stime, time.perf_counter() - t0, usage.ru_maxrss]))
"""


def run_child(argv: list[str], timeout: float) -> tuple[str, float, float, float, str]:
    """(status, CPU seconds, wall seconds, peak RSS MiB, stderr) of one child, measured by
    :data:`HELPER`; status ``ok``, ``TIMEOUT`` (killed) or ``FAIL (exit N)``."""
    with tempfile.TemporaryFile() as err:
        helper = subprocess.Popen([sys.executable, "-c", HELPER, *argv], cwd=REPO, env=child_env(),
                                  stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=err)
        timed_out = False
        try:
            out, _ = helper.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            helper.terminate()          # the helper kills the child, then reports
            out, _ = helper.communicate()
            timed_out = True
        err.seek(0)
        stderr = err.read().decode(errors="replace")
    if not out.strip():
        return f"FAIL (helper exit {helper.returncode})", 0.0, 0.0, 0.0, stderr
    status, cpu, wall, maxrss = json.loads(out)
    code = os.waitstatus_to_exitcode(status)
    verdict = "TIMEOUT" if timed_out else "ok" if code == 0 else f"FAIL (exit {code})"
    return verdict, cpu, wall, maxrss / 1024, stderr


def balance_argv(snapshot: str, out_dir: str, threshold: float | None) -> list[str]:
    argv = ["-m", "kafka_replica_assignor.cli.main", "balance", "--snapshot", snapshot, "--mode", "cluster",
            "--out", out_dir, "--no-charts"]
    return argv + (["--threshold", f"{threshold:g}"] if threshold is not None else [])


BYTES_ROW = re.compile(r"^\| 4\. bytes moved \|[^|]*\|[^|]*\| >= (\d+) \(([^,)]+)", re.M)
BEFORE_ROW = re.compile(r"^\| 2\. bytes per alive broker \| [\d.]+-([\d.]+) x mean \|", re.M)


def read_plan(row: Row, out_dir: str) -> None:
    """Fill ``row`` from the plan's ``summary.json`` and ``report.md``."""
    with open(os.path.join(out_dir, "summary.json"), encoding="utf-8") as f:
        summary = json.load(f)
    row.replica_moves = summary["replica_moves"]
    row.leader_changes = summary["leader_changes"]
    row.bytes_moved = summary["bytes_moved"]
    with open(os.path.join(out_dir, "report.md"), encoding="utf-8") as f:
        report = f.read()
    if m := BYTES_ROW.search(report):
        row.bound, row.bound_kind = int(m.group(1)), m.group(2)
    if m := BEFORE_ROW.search(report):
        row.before_max_x_mean = float(m.group(1))
    section = report.split("## Targets not reached", 1)[-1].split("\n## ", 1)[0]
    row.targets_missed = [line[2:] for line in section.splitlines()
                          if line.startswith("- ") and not line.startswith("- none:")]


def levels_of(data: dict[str, Any]) -> int:
    racks = {b.get("rack") for b in data["brokers"]} - {None}
    return max((len(r.strip("/").split("/")) if r.startswith("/") else 1 for r in racks), default=0)


def write_shape(shape: Shape, path: str) -> Row:
    """Write the shape's snapshot and start its row with what the snapshot holds."""
    if isinstance(shape.make, SnapshotSpec):
        data = write_snapshot(shape.make, path)
    else:
        data = write_layout(shape.make, path)
    return Row(shape.name, shape.what, len(data["partitions"]), len(data["brokers"]), levels_of(data))


def check_target(row: Row) -> None:
    target = target_of(row.partitions)
    if target is None or row.status != "ok":
        row.over_target = "" if target is None else row.status
        return
    cpu, peak = target
    over = [f"{row.cpu_s:.1f} CPU-s >= {cpu:g}"] if row.cpu_s is not None and row.cpu_s >= cpu else []
    if peak is not None and row.peak_mib is not None and row.peak_mib * MIB >= peak:
        over.append(f"{row.peak_mib:,.0f} MiB >= {peak / GB:g} GB")
    row.over_target = "; ".join(over)


def run_shape(shape: Shape, work: str, timeout: float, threshold: float | None) -> Row:
    path = os.path.join(work, f"{shape.name}.json")
    t0 = time.perf_counter()
    row = write_shape(shape, path)
    print(f"{shape.name}: {row.partitions:,} partitions on {row.brokers:,} brokers written in "
          f"{time.perf_counter() - t0:.1f} s; planning ...", file=sys.stderr, flush=True)
    out_dir = os.path.join(work, f"{shape.name}-plan")
    shutil.rmtree(out_dir, ignore_errors=True)
    status, cpu, wall, peak, stderr = run_child([sys.executable, *balance_argv(path, out_dir, threshold)], timeout)
    row.status, row.cpu_s, row.wall_s, row.peak_mib = status, cpu, wall, peak
    if status == "ok":
        read_plan(row, out_dir)
    else:
        row.error = (stderr.strip().splitlines() or [""])[-1]
    check_target(row)
    return row


# functions whose call counts are printed whatever their rank (file name, function name)
WATCHED = (("model.py", "fits"), ("search.py", "receiver"), ("model.py", "allowed_leaves"),
           ("model.py", "do_move"), ("replica_counts.py", "give_down"), ("replica_counts.py", "level_counts"))


def _where(func: tuple[str, int, str]) -> str:
    filename, line, name = func
    path = os.path.relpath(filename, REPO) if filename.startswith(REPO) else os.path.basename(filename)
    return f"{path.removeprefix('kafka_replica_assignor/')}:{line}({name})" if line else name


def _profile_table(entries: list[tuple[tuple[str, int, str], tuple[Any, ...]]]) -> list[str]:
    lines = ["| calls | tottime s | cumtime s | function |", "|---|---|---|---|"]
    for func, (cc, nc, tt, ct, _) in entries:
        calls = f"{nc:,}" if nc == cc else f"{nc:,}/{cc:,}"
        lines.append(f"| {calls} | {tt:.2f} | {ct:.2f} | `{_where(func)}` |")
    return lines


def profile_text(name: str, prof: str, cpu: float, top: int) -> str:
    """The top ``top`` of the project's own functions by cumulative time, the top ``top`` of all
    by total time, and the calls of :data:`WATCHED`."""
    raw: dict[tuple[str, int, str], tuple[Any, ...]] = pstats.Stats(prof).stats
    entries = list(raw.items())
    own = [e for e in entries if e[0][0].startswith(REPO)]
    total = max((e[1][3] for e in entries), default=0.0)
    lines = [f"\n#### {name}: profiled ({cpu:.1f} CPU-s with the profiler; {total:.1f} s on its clock)",
             "", f"Top {top} of the project's functions by cumulative time:", ""]
    lines += _profile_table(sorted(own, key=lambda e: -e[1][3])[:top])
    lines += ["", f"Top {top} by total (own) time:", ""]
    lines += _profile_table(sorted(entries, key=lambda e: -e[1][2])[:top])
    watched = [e for e in own if (os.path.basename(e[0][0]), e[0][2]) in WATCHED]
    lines += ["", "Watched functions:", "", *_profile_table(sorted(watched, key=lambda e: -e[1][1]))]
    return "\n".join(lines) + "\n"


def profile_shape(shape: Shape, work: str, timeout: float, threshold: float | None, top: int) -> str:
    """The child once more under cProfile: see :func:`profile_text`."""
    path = os.path.join(work, f"{shape.name}.json")
    prof = os.path.join(work, f"{shape.name}.prof")
    out_dir = os.path.join(work, f"{shape.name}-plan-profiled")
    shutil.rmtree(out_dir, ignore_errors=True)
    argv = [sys.executable, "-m", "cProfile", "-o", prof, *balance_argv(path, out_dir, threshold)]
    status, cpu, _, _, stderr = run_child(argv, timeout)
    if status != "ok":
        return f"profile of {shape.name}: {status} {(stderr.strip().splitlines() or [''])[-1]}"
    return profile_text(shape.name, prof, cpu, top)


# -- the table ----------------------------------------------------------------------------------
def _gib(n: int | None) -> str:
    return "-" if n is None else f"{n / 2**30:,.0f}"


def _num(x: float | None, fmt: str) -> str:
    return "-" if x is None else format(x, fmt)


def cells(r: Row) -> list[str]:
    ok = r.status == "ok"
    ratio = f"{r.bytes_moved / r.bound:.3f}" if ok and r.bound and r.bytes_moved is not None else "-"
    bound = f"{_gib(r.bound)} ({r.bound_kind})" if r.bound is not None else "-"
    target = target_of(r.partitions)
    verdict = "-" if target is None else ("OVER: " + r.over_target if r.over_target else f"ok (< {target[0]:g})")
    return [r.name, f"{r.partitions:,}", f"{r.brokers:,}", str(r.levels),
            _num(r.cpu_s, ".1f") if ok else f"{r.status} ({_num(r.cpu_s, '.1f')})", _num(r.wall_s, ".1f"),
            _num(r.peak_mib, ",.0f"), _num(r.before_max_x_mean, ".2f"), _num(r.replica_moves, ","),
            _num(r.leader_changes, ","), _gib(r.bytes_moved), bound, ratio,
            str(len(r.targets_missed)) if ok else "-", verdict]


HEADER = ("| shape | partitions | brokers | levels | CPU-s | wall-s | peak MiB | bytes/broker before (max x mean) | "
          "replica moves | leader changes | GiB moved | bound GiB (kind) | bytes/bound | targets missed | "
          "vs target |")


def print_row(r: Row) -> None:
    print("| " + " | ".join(cells(r)) + " |", flush=True)


def print_summary(rows: Sequence[Row]) -> None:
    timed = [r for r in rows if r.cpu_s is not None]
    if timed:
        worst = max(timed, key=lambda r: r.cpu_s or 0.0)
        print(f"\nWorst shape by CPU-s: **{worst.name}**, {worst.cpu_s:.1f} CPU-s ({worst.status}; {worst.what}).")
    over = [r for r in rows if r.over_target]
    print("Over target: " + ("; ".join(f"{r.name} ({r.over_target})" for r in over) if over else "none") + ".")
    for r in rows:
        for text in r.targets_missed:
            print(f"- {r.name}, target not reached: {text}")
        if r.error:
            print(f"- {r.name}: {r.status}: {r.error}")


def selected(only: str | None, big: bool) -> list[Shape]:
    if not only:
        return [s for s in SHAPES if big or not s.big]
    names = [n.strip() for n in only.split(",") if n.strip()]
    known = {s.name: s for s in SHAPES}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise SystemExit(f"unknown shape(s) {', '.join(unknown)}; known: {', '.join(known)}")
    return [known[n] for n in names]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", metavar="NAME[,NAME]", help="run these shapes only (any, --big ones too)")
    ap.add_argument("--big", action="store_true", help="add the 1,000,000 x RF 3 row")
    ap.add_argument("--json", metavar="FILE", help="also save the rows as JSON")
    ap.add_argument("--keep", metavar="DIR", help="write snapshots and plans here and keep them")
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds per child before TIMEOUT")
    ap.add_argument("--threshold", type=float, help="balance --threshold (default: the command's own)")
    ap.add_argument("--profile", type=int, metavar="N", help="also profile each row: its top N functions")
    ap.add_argument("--list", action="store_true", help="list the shapes and exit")
    a = ap.parse_args(argv)
    shapes = selected(a.only, a.big)
    if a.list:
        for s in SHAPES:
            print(f"{s.name}: {s.what}" + (" (--big)" if s.big else ""))
        return 0
    if a.keep:
        os.makedirs(a.keep, exist_ok=True)
    work = a.keep or tempfile.mkdtemp(prefix="planner-shapes-")
    rows: list[Row] = []
    profiles: list[str] = []
    try:
        print(HEADER)
        print("|" + "---|" * HEADER.count(" | ") + "---|")
        for shape in shapes:
            rows.append(run_shape(shape, work, a.timeout, a.threshold))
            print_row(rows[-1])
            if a.profile:
                profiles.append(profile_shape(shape, work, a.timeout, a.threshold, a.profile))
        print_summary(rows)
        for text in profiles:
            print(text)
    finally:
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)
    if a.json:
        with open(a.json, "w", encoding="utf-8") as f:
            json.dump([asdict(r) for r in rows], f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
