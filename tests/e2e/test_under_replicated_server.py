"""KIP-409 through the real server: a rolling restart seen in the cluster snapshot, an
assignment with placeholders over the wire, then a repair plan once the brokers return;
and the server following a live cluster (the Tansu broker)."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest
from kafka.errors import InvalidReplicationFactorError

from kafka_replica_assignor.protocol.client import ReplicaAssignorAdminClient
from kafka_replica_assignor.server.observed import ObservedBrokerStore
from tests.servers import ServerThread

RACKS = {0: "/z1/r1", 1: "/z1/r2", 2: "/z2/r1", 3: "/z2/r2", 4: "/z3/r1", 5: "/z3/r2"}


def write_snapshot(path, down=(), partitions=()):
    brokers = [{"id": b, "rack": r, **({"alive": False} if b in down else {})} for b, r in RACKS.items()]
    path.write_text(json.dumps({"brokers": brokers, "partitions": list(partitions)}))


def wait_for(predicate, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def view_alive(server) -> set[int]:
    return set(server.server.state.source.view().broker_ids)


def test_rolling_restart_placeholders_then_repair(tmp_path):
    snap = tmp_path / "cluster.json"
    write_snapshot(snap)
    props = {"cluster.metadata.file": str(snap), "metadata.refresh.interval.ms": "50",
             "observed.brokers.path": str(tmp_path / "observed.db"),
             "enable.under.replicated.topic.creation": "true", "min.insync.replicas": "2"}
    with ServerThread(props) as server, ReplicaAssignorAdminClient(server.bootstrap) as admin:
        healthy = admin.create_replica_assignment(6, 3).assignments()
        assert all(len(set(r)) == 3 and min(r) >= 0 for r in healthy.values())

        # zones 2 and 3 restart: only brokers 0 and 1 remain alive
        write_snapshot(snap, down={2, 3, 4, 5})
        assert wait_for(lambda: view_alive(server) == {0, 1})
        placed = admin.create_replica_assignment(6, 3).assignments()   # error code NONE
        for p, reps in placed.items():
            assert len(reps) == 3 and len(set(reps)) == 3
            assert reps[0] in (0, 1), f"partition {p}: a placeholder or offline broker leads: {reps}"
            assert sorted(b for b in reps if b >= 0) == [0, 1]
            assert [b for b in reps if b < 0] == [-1]
        # RF 3 needs min(min.insync.replicas, RF) = 2 alive: with one alive it is refused
        write_snapshot(snap, down={1, 2, 3, 4, 5})
        assert wait_for(lambda: view_alive(server) == {0})
        with pytest.raises(InvalidReplicationFactorError, match=r"observed: 6.*min.insync.replicas: 2"):
            admin.create_replica_assignment(6, 3)

    # brokers are back: repair fills the placeholders without duplicating a broker
    parts = [{"topic": "orders", "partition": p, "replicas": r} for p, r in placed.items()]
    write_snapshot(snap, partitions=parts)
    out = subprocess.run([sys.executable, "-m", "kafka_replica_assignor.cli.main", "repair", "--snapshot", str(snap)],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    plan = json.loads(out.stdout)
    assert plan["version"] == 1
    assert {e["partition"] for e in plan["partitions"]} == set(placed)
    for entry in plan["partitions"]:
        reps = entry["replicas"]
        assert len(reps) == 3 and len(set(reps)) == 3 and min(reps) >= 0
        assert [b for b in placed[entry["partition"]] if b >= 0] == [b for b in reps if b in (0, 1)]
        assert len({RACKS[b].split("/")[1] for b in reps}) >= 2


def test_disabled_under_replicated_creation_refuses_with_the_counts(tmp_path):
    snap = tmp_path / "cluster.json"
    write_snapshot(snap, down={3, 4, 5})
    with ServerThread({"cluster.metadata.file": str(snap)}) as server, \
            ReplicaAssignorAdminClient(server.bootstrap) as admin:
        with pytest.raises(InvalidReplicationFactorError) as info:
            admin.create_replica_assignment(3, 4)
        message = str(info.value)
        assert "4 larger than available brokers: 3" in message and "observed: 6" in message
        assert "enable.under.replicated.topic.creation: false" in message
        # enough alive brokers: placement as usual
        assert all(len(r) == 3 for r in admin.create_replica_assignment(3, 3).assignments().values())


@pytest.mark.tansu
def test_server_following_a_live_cluster(tmp_path, tansu):
    store = tmp_path / "observed.db"
    props = {"bootstrap.servers": tansu.bootstrap, "metadata.refresh.interval.ms": "200",
             "observed.brokers.path": str(store)}
    with ServerThread(props) as server, ReplicaAssignorAdminClient(server.bootstrap) as admin:
        assert admin.create_replica_assignment(3, 1).assignments() == {0: [111], 1: [111], 2: [111]}
        with pytest.raises(InvalidReplicationFactorError):
            admin.create_replica_assignment(1, 2)
    observed = ObservedBrokerStore(store, create=False)
    try:
        assert [b.id for b in observed.list()] == [111]
    finally:
        observed.close()
