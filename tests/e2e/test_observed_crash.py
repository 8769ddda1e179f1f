"""Crash safety of the observed-broker store: ``kill -9`` while recording, then restart.

A real child process records batches of brokers in a loop and prints each batch number after
``record`` returned (the commit). The test SIGKILLs it at an arbitrary moment, restarts it on
the same file a few times, and after each kill checks that the file passes SQLite's
``PRAGMA integrity_check``, holds every confirmed batch, and holds every batch whole or not at
all (one transaction per ``record``).
"""

from __future__ import annotations

import os
import random
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kafka_replica_assignor.server.observed import ObservedBrokerStore

BATCH = 40  # brokers per record() call
ROOT = Path(__file__).resolve().parents[2]

# Records through the store directly.
STORE_CHILD = """
import sys, time
from kafka_replica_assignor.cluster.snapshot import BrokerEntry
from kafka_replica_assignor.server.observed import ObservedBrokerStore

path, batch, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
store = ObservedBrokerStore(path)
while True:
    ids = range(batch * size, (batch + 1) * size)
    store.record([BrokerEntry(i, f"r{i % 3}", True, f"h{i}", 9092) for i in ids], now=time.time())
    print("confirmed", batch, flush=True)
    batch += 1
"""

# Records through the server's snapshot source: each batch is a new snapshot file, refreshed.
SOURCE_CHILD = """
import asyncio, json, os, sys
from kafka_replica_assignor.server.cluster_source import SnapshotSource
from kafka_replica_assignor.server.observed import ObservedBrokerStore

path, batch, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
snap = path + ".snapshot.json"

def write(batch):
    brokers = [{"id": i, "rack": f"r{i % 3}", "host": f"h{i}", "port": 9092}
               for i in range(batch * size, (batch + 1) * size)]
    with open(snap + ".tmp", "w") as f:
        json.dump({"brokers": brokers}, f)
    os.replace(snap + ".tmp", snap)

async def main(batch):
    write(batch)
    source = SnapshotSource(snap, ObservedBrokerStore(path))
    await source.start()
    while True:
        print("confirmed", batch, flush=True)
        batch += 1
        write(batch)
        assert await source.refresh()

asyncio.run(main(batch))
"""


def run_until_killed(child: str, path: Path, first_batch: int, kill_after: float) -> list[int]:
    """Start the child, SIGKILL it ``kill_after`` seconds after its first confirmed batch,
    and return every batch it confirmed."""
    proc = subprocess.Popen(
        [sys.executable, "-c", child, str(path), str(first_batch), str(BATCH)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        first = ""
        while not first.startswith("confirmed "):
            first = proc.stdout.readline()
            assert first, f"child exited early: {proc.stderr.read()}"
        time.sleep(kill_after)
        os.kill(proc.pid, signal.SIGKILL)
        rest = proc.stdout.read()
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(30)
        proc.stdout.close()
        proc.stderr.close()
    assert proc.returncode == -signal.SIGKILL
    # the snapshot source logs to stdout too: keep the confirmations only, and only whole lines
    # (the kill may cut the last one short: a batch is confirmed once its line has ended)
    whole = (first + rest).split("\n")[:-1]
    return [int(line.split()[1]) for line in whole if re.fullmatch(r"confirmed \d+", line)]


@pytest.mark.parametrize("child", [STORE_CHILD, SOURCE_CHILD], ids=["store", "snapshot-source"])
def test_sigkill_while_recording_loses_nothing_confirmed(tmp_path, child):
    path = tmp_path / "observed.db"
    rng = random.Random(409)
    confirmed: set[int] = set()
    next_batch = 0
    for _ in range(4):
        batches = run_until_killed(child, path, next_batch, kill_after=rng.uniform(0.2, 0.6))
        assert len(batches) > 1, "the child should have recorded several batches before the kill"
        confirmed.update(batches)
        with ObservedBrokerStore(path, create=False) as store:
            assert store.integrity_check() == "ok"
            stored = {b.id: b for b in store.list()}
        for batch in confirmed:
            missing = [i for i in range(batch * BATCH, (batch + 1) * BATCH) if i not in stored]
            assert not missing, f"batch {batch} was confirmed but {len(missing)} brokers are missing"
        # the batch in flight at the kill is in the store whole or not at all
        in_flight = max(confirmed) + 1
        present = sum(i in stored for i in range(in_flight * BATCH, (in_flight + 1) * BATCH))
        assert present in (0, BATCH), f"batch {in_flight} is torn: {present} of {BATCH} brokers"
        assert set(stored) == set(range(0, (max(confirmed) + 1 + (present > 0)) * BATCH))
        sample = stored[max(confirmed) * BATCH]
        assert (sample.rack, sample.host, sample.port) == (f"r{sample.id % 3}", f"h{sample.id}", 9092)
        next_batch = max(confirmed) + 1
