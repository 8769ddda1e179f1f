"""Snapshot parsing: the bulk path gives what the entry-by-entry parser gave.

The reference below parses entry by entry with the module's own per-entry checks (the parser as
it was before the bulk path; the bulk path falls back to them to name a bad entry) and the
original duplicate check, kept as the oracle: on valid input both build equal snapshots (compared by ``repr``, so ``True`` is not ``1``
and a list is not a tuple), on invalid input both raise ``SnapshotError`` with the same message.
"""

from __future__ import annotations

import gc
import json
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import kafka_replica_assignor.cluster.snapshot as snapshot_module
from kafka_replica_assignor.cluster.snapshot import (
    ClusterSnapshot,
    PartitionEntry,
    SnapshotError,
    _partitions_in_bulk,
)
from tests.planning import plan_of

SETTINGS = settings(max_examples=300)


# -- the reference: the entry-by-entry parser ------------------------------------------------
# ``_broker`` and ``_partition`` are the original per-entry checks, still what the bulk path
# falls back to (to name the first bad entry); the reference uses them for every entry.
ref_broker = snapshot_module._broker
ref_partition = snapshot_module._partition


def ref_check(brokers: tuple, partitions: tuple) -> None:
    """The reference ``ClusterSnapshot.__post_init__``."""
    ids = [b.id for b in brokers]
    if len(set(ids)) != len(ids):
        dup = sorted({i for i in ids if ids.count(i) > 1})
        raise SnapshotError(f"duplicate broker ids: {dup}")
    seen: set = set()
    for p in partitions:
        key = (p.topic, p.partition)
        if key in seen:
            raise SnapshotError(f"duplicate partition {p.topic}-{p.partition}")
        seen.add(key)


def reference(data: Any) -> tuple[tuple, tuple]:
    """The reference ``ClusterSnapshot.from_dict``: (brokers, partitions)."""
    if not isinstance(data, Mapping):
        raise SnapshotError("snapshot must be a JSON object with a 'brokers' list")
    raw_brokers = data.get("brokers")
    if not isinstance(raw_brokers, list):
        raise SnapshotError("snapshot needs a 'brokers' list")
    brokers = tuple(ref_broker(i, b) for i, b in enumerate(raw_brokers))
    raw_parts = data.get("partitions", [])
    if raw_parts is None:
        raw_parts = []
    if not isinstance(raw_parts, list):
        raise SnapshotError("'partitions' must be a list")
    partitions = tuple(ref_partition(i, p) for i, p in enumerate(raw_parts))
    ref_check(brokers, partitions)
    return brokers, partitions


def outcome_of(fn, *args) -> tuple[str, str]:
    """('ok', repr of the result) or (exception type name, message)."""
    try:
        return "ok", repr(fn(*args))
    except Exception as exc:  # noqa: BLE001 - both sides are compared, whatever they raise
        return type(exc).__name__, str(exc)


def parsed(data: Any) -> tuple[tuple, tuple]:
    snap = ClusterSnapshot.from_dict(data)
    return snap.brokers, snap.partitions


def assert_same(data: Any) -> tuple[str, str]:
    expected = outcome_of(reference, data)
    assert outcome_of(parsed, data) == expected
    return expected


# -- strategies ------------------------------------------------------------------------------
RATES = st.one_of(st.integers(0, 2**40), st.floats(0, 1e12, allow_nan=False, allow_infinity=False))
broker_ids = st.lists(st.integers(0, 12), min_size=1, max_size=6, unique=True)
topics = st.sampled_from(["t", "orders", "payments.v2", "ü"])


@st.composite
def valid_snapshots(draw) -> dict:
    """Plain decoded JSON, as ``json.loads`` gives it: valid, with optional keys present,
    absent or null, negative (placeholder) and unknown replica ids."""
    ids = draw(broker_ids)
    brokers = [{"id": i, "rack": draw(st.sampled_from([None, "", "r0", "r1"]))} for i in ids]
    for broker in brokers:
        if draw(st.booleans()):
            broker["capacity_bytes"] = draw(st.sampled_from([None, 0, 2**40, 2**70]))
        for key in ("network_in_capacity", "network_out_capacity"):
            if draw(st.booleans()):
                broker[key] = draw(st.sampled_from([None, 0, 1.25e8, 10**9]))
    keys = draw(st.lists(st.tuples(topics, st.integers(0, 40)), max_size=12, unique=True))
    replica_ids = st.integers(-3, 14)
    partitions = []
    for topic, partition in keys:
        p: dict[str, Any] = {"topic": topic, "partition": partition,
                             "replicas": draw(st.lists(replica_ids, min_size=1, max_size=4, unique=True))}
        for key, values in (("leader", st.sampled_from([*p["replicas"], -1])),  # a replica, or none
                            ("isr", st.lists(replica_ids, max_size=4)),
                            ("size_bytes", st.integers(0, 2**40)),
                            ("bytes_in_per_s", RATES), ("bytes_out_per_s", RATES)):
            choice = draw(st.sampled_from(["absent", "null", "value"]))
            if choice != "absent":
                p[key] = None if choice == "null" else draw(values)
        partitions.append(p)
    data: dict[str, Any] = {"brokers": brokers}
    if partitions or draw(st.booleans()):
        data["partitions"] = partitions
    return data


class Topic(str):
    """A str subclass: valid for the reference, not a plain JSON shape."""


class Number(int):
    """An int subclass (like an IntEnum): valid for the reference, not a plain JSON shape."""


BAD_VALUES = [None, True, False, 1.0, 2.5, "1", "", -1, -7, [], [1], [1, 1], [True], [1.0],
              ["1"], {}, (1, 2), Topic("t"), Topic(""), Number(3), [Number(2)], 2**70, 2**1100,
              float("nan"), float("inf"), -0.5]
BAD_ELEMENTS = [True, False, 1.0, "1", None, [1], Number(1), -1, 2**70]
KEYS = ["topic", "partition", "replicas", "leader", "isr", "size_bytes", "bytes_in_per_s", "bytes_out_per_s"]


@st.composite
def corrupted_snapshots(draw) -> dict:
    """A valid snapshot with one to three entries broken (or merely made unusual): a key
    replaced by an odd value or removed, an odd element or a repeat put in a list, an entry
    duplicated or replaced."""
    data = draw(valid_snapshots())
    parts = data.setdefault("partitions", [])
    if not parts:
        parts.append({"topic": "t", "partition": 0, "replicas": [0]})
    for _ in range(draw(st.integers(1, 3))):
        i = draw(st.integers(0, len(parts) - 1))
        entry = dict(parts[i]) if isinstance(parts[i], Mapping) else {"topic": "t"}
        kind = draw(st.sampled_from(["value", "element", "missing", "duplicate", "entry", "mapping"]))
        if kind == "value":
            entry[draw(st.sampled_from(KEYS))] = draw(st.sampled_from(BAD_VALUES))
        elif kind == "element":
            key = draw(st.sampled_from(["replicas", "isr"]))
            values = list(entry[key]) if isinstance(entry.get(key), list) else [0]
            odd = draw(st.sampled_from(BAD_ELEMENTS + values))  # a value of its own: a repeat
            values.insert(draw(st.integers(0, len(values))), odd)
            entry[key] = values
        elif kind == "missing":
            entry.pop(draw(st.sampled_from(KEYS)), None)
        elif kind == "duplicate":
            parts.insert(draw(st.integers(0, len(parts))), dict(entry))
            continue
        elif kind == "entry":
            entry = draw(st.sampled_from([None, 3, "x", [], [entry]]))
        else:
            entry = OrderedDict(entry)
        parts[i] = entry
    return data


# -- equivalence -----------------------------------------------------------------------------
@SETTINGS
@given(valid_snapshots())
def test_valid_snapshots_parse_as_the_reference_does_through_the_bulk_path(data):
    kind, _ = assert_same(data)
    assert kind == "ok"
    assert _partitions_in_bulk(data.get("partitions") or []) is not None
    # and through the JSON text, as the server and the planner read it
    assert ClusterSnapshot.from_json(json.dumps(data)) == ClusterSnapshot.from_dict(data)


@SETTINGS
@given(corrupted_snapshots())
def test_broken_snapshots_fail_as_the_reference_does(data):
    assert_same(data)


@SETTINGS
@example([("a", 5), ("b", -1)])  # a pair-to-int key would need partitions >= 0
@example([("a", 1), ("a", True)])  # True == 1
@given(st.lists(st.tuples(st.sampled_from(["a", "b", Topic("a")]),
                          st.one_of(st.integers(-2, 4), st.booleans(), st.sampled_from([1.0, 2**65, Number(1)]))),
                max_size=8))
def test_direct_construction_refuses_duplicate_partitions_as_the_reference_does(keys):
    partitions = tuple(PartitionEntry(t, p, (1,)) for t, p in keys)
    expected = outcome_of(lambda: ref_check((), partitions) or partitions)
    assert outcome_of(lambda: ClusterSnapshot((), partitions).partitions) == expected


# -- the messages, by example ----------------------------------------------------------------
def snapshot_with(*partitions: Any) -> dict:
    return {"brokers": [{"id": 0}, {"id": 1}], "partitions": list(partitions)}


OK = {"topic": "t", "partition": 0, "replicas": [0, 1]}


@pytest.mark.parametrize(("entry", "message"), [
    ("x", "partitions[1] must be an object"),
    ({"partition": 1, "replicas": [0]}, "partitions[1] has no 'topic'"),
    ({"topic": "t", "replicas": [0]}, "partitions[1] has no 'partition'"),
    ({"topic": "t", "partition": 1}, "partitions[1] has no 'replicas'"),
    ({**OK, "topic": ""}, "partitions[1].topic must be a non-empty string"),
    ({**OK, "topic": 7}, "partitions[1].topic must be a non-empty string"),
    ({**OK, "partition": -1}, "partitions[1].partition must be >= 0"),
    ({**OK, "partition": True}, "partitions[1].partition must be an integer, got True"),
    ({**OK, "partition": "1"}, "partitions[1].partition must be an integer, got '1'"),
    ({**OK, "replicas": []}, "partitions[1].replicas must be a non-empty list"),
    ({**OK, "replicas": "0"}, "partitions[1].replicas must be a non-empty list"),
    ({**OK, "replicas": [0, 1.0]}, "partitions[1].replicas[] must be an integer, got 1.0"),
    ({**OK, "replicas": [0, False]}, "partitions[1].replicas[] must be an integer, got False"),
    ({**OK, "partition": 3, "replicas": [1, 0, 1]}, "partitions[1] (t-3) lists a broker twice: [1, 0, 1]"),
    ({**OK, "leader": "0"}, "partitions[1].leader must be an integer, got '0'"),
    ({**OK, "isr": 0}, "partitions[1].isr must be a list"),
    ({**OK, "isr": [0, None]}, "partitions[1].isr[] must be an integer, got None"),
    ({**OK, "size_bytes": 1.5}, "partitions[1].size_bytes must be an integer, got 1.5"),
    ({**OK, "size_bytes": True}, "partitions[1].size_bytes must be an integer, got True"),
    ({**OK, "size_bytes": "12"}, "partitions[1].size_bytes must be an integer, got '12'"),
    ({**OK, "size_bytes": -1}, "partitions[1].size_bytes must be >= 0, got -1"),
    (OK, "duplicate partition t-0"),
])
@pytest.mark.parametrize("later", [None, {**OK, "partition": -5}])
def test_each_bad_entry_is_named_with_its_message(entry, message, later):
    data = snapshot_with(OK, entry)
    if later is not None and entry is not OK:
        data["partitions"].append(later)  # a later bad entry is not reported
    with pytest.raises(SnapshotError) as info:
        ClusterSnapshot.from_dict(data)
    assert str(info.value) == message
    assert_same(data)


@pytest.mark.parametrize("sizes", [[0, -1], [-5, None], [None, 7, 0, -2**70]])
def test_a_negative_size_anywhere_leaves_the_bulk_path(sizes):
    parts = [{**OK, "partition": n, "size_bytes": size} for n, size in enumerate(sizes)]
    assert _partitions_in_bulk(parts) is None
    kind, message = assert_same(snapshot_with(*parts))
    assert kind == "SnapshotError" and "size_bytes must be >= 0" in message


@pytest.mark.parametrize(("capacity", "message"), [
    (-1, "brokers[1].capacity_bytes must be >= 0, got -1"),
    (1.5, "brokers[1].capacity_bytes must be an integer, got 1.5"),
    (False, "brokers[1].capacity_bytes must be an integer, got False"),
    ("1T", "brokers[1].capacity_bytes must be an integer, got '1T'"),
])
def test_a_bad_capacity_names_the_broker(capacity, message):
    data = {"brokers": [{"id": 0}, {"id": 1, "capacity_bytes": capacity}], "partitions": [OK]}
    with pytest.raises(SnapshotError) as info:
        ClusterSnapshot.from_dict(data)
    assert str(info.value) == message


def test_sizes_and_capacities_survive_a_round_trip():
    data = {"brokers": [{"id": 0, "rack": "r0", "capacity_bytes": 10**12},
                        {"id": 1, "rack": None, "capacity_bytes": 0}, {"id": 2, "rack": None}],
            "partitions": [{**OK, "size_bytes": 0}, {**OK, "partition": 1, "size_bytes": 2**50}]}
    snapshot = ClusterSnapshot.from_dict(data)
    assert [b.capacity_bytes for b in snapshot.brokers] == [10**12, 0, None]
    assert [p.size_bytes for p in snapshot.partitions] == [0, 2**50]
    assert snapshot.to_dict() == data
    assert ClusterSnapshot.from_dict(snapshot.to_dict()) == snapshot


def test_the_first_duplicate_is_named_after_every_entry_is_checked():
    data = snapshot_with(OK, {**OK, "partition": 1}, {**OK, "partition": 1}, OK, {**OK, "topic": ""})
    with pytest.raises(SnapshotError, match=r"^partitions\[4\]\.topic must be a non-empty string$"):
        ClusterSnapshot.from_dict(data)
    data["partitions"].pop()
    with pytest.raises(SnapshotError, match="^duplicate partition t-1$"):
        ClusterSnapshot.from_dict(data)


def test_unusual_but_valid_values_take_the_entry_by_entry_path_and_are_kept():
    entry = OrderedDict(topic=Topic("t"), partition=Number(2), replicas=[Number(1), 0], leader=Number(1))
    data = snapshot_with(entry)
    assert _partitions_in_bulk(data["partitions"]) is None
    (p,) = ClusterSnapshot.from_dict(data).partitions
    assert type(p.topic) is Topic and type(p.partition) is Number and type(p.replicas[0]) is Number
    assert_same(data)


def test_bulk_entries_are_the_public_frozen_type():
    (p,) = ClusterSnapshot.from_dict(snapshot_with({**OK, "isr": [1], "leader": 0})).partitions
    assert type(p) is PartitionEntry
    assert p == PartitionEntry("t", 0, (0, 1), 0, (1,), None)
    assert hash(p) == hash(PartitionEntry("t", 0, (0, 1), 0, (1,), None))
    with pytest.raises(AttributeError):
        p.topic = "u"  # type: ignore[misc]


@pytest.mark.parametrize("enabled", [True, False])
@pytest.mark.parametrize("data", [snapshot_with(OK), snapshot_with(OK, OK), snapshot_with("x")])
def test_the_collector_state_is_restored(enabled, data):
    was = gc.isenabled()
    (gc.enable if enabled else gc.disable)()
    try:
        outcome_of(ClusterSnapshot.from_dict, data)
        assert gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()


@pytest.mark.parametrize(("where", "key", "value", "message"), [
    ("partition", "bytes_in_per_s", -1, "partitions[0].bytes_in_per_s must be a finite number >= 0 (bytes per second), got -1"),
    ("partition", "bytes_out_per_s", "fast", "partitions[0].bytes_out_per_s must be a number of bytes per second, got 'fast'"),
    ("partition", "bytes_in_per_s", True, "partitions[0].bytes_in_per_s must be a number of bytes per second, got True"),
    ("partition", "bytes_in_per_s", float("nan"), "partitions[0].bytes_in_per_s must be a finite number >= 0 (bytes per second), got nan"),
    ("partition", "bytes_in_per_s", 2**1100, "partitions[0].bytes_in_per_s must be a finite number >= 0 (bytes per second), got"),
    ("broker", "network_in_capacity", -2.5, "brokers[0].network_in_capacity must be a finite number >= 0 (bytes per second), got -2.5"),
    ("broker", "network_out_capacity", [1], "brokers[0].network_out_capacity must be a number of bytes per second, got [1]"),
])
def test_a_bad_rate_or_network_capacity_is_named(where, key, value, message):
    broker: dict[str, Any] = {"id": 0}
    part: dict[str, Any] = dict(OK)
    (part if where == "partition" else broker)[key] = value
    with pytest.raises(SnapshotError) as info:
        ClusterSnapshot.from_dict({"brokers": [broker, {"id": 1}], "partitions": [part]})
    assert str(info.value).startswith(message)


def test_rates_and_network_capacities_survive_a_round_trip_and_a_plan_keeps_them():
    data = {"brokers": [{"id": 0, "rack": None, "network_in_capacity": 1.25e8, "network_out_capacity": 10**9},
                        {"id": 1, "rack": None}],
            "partitions": [{**OK, "bytes_in_per_s": 1500.5, "bytes_out_per_s": 0},
                           {**OK, "partition": 1, "bytes_in_per_s": 7}]}
    snapshot = ClusterSnapshot.from_dict(data)
    assert _partitions_in_bulk(data["partitions"]) == snapshot.partitions
    assert [(p.bytes_in_per_s, p.bytes_out_per_s) for p in snapshot.partitions] == [(1500.5, 0), (7, None)]
    assert snapshot.brokers[0].network_in_capacity == 1.25e8 and snapshot.brokers[1].network_out_capacity is None
    assert snapshot.to_dict() == data
    assert ClusterSnapshot.from_dict(json.loads(json.dumps(snapshot.to_dict()))) == snapshot


def test_a_plans_result_keeps_each_partitions_traffic():
    brokers = [{"id": b, "rack": None} for b in range(4)]
    parts = [{"topic": "t", "partition": n, "replicas": [0, 1], "bytes_in_per_s": 10.0 * n, "bytes_out_per_s": n}
             for n in range(8)]
    plan = plan_of(ClusterSnapshot.from_dict({"brokers": brokers, "partitions": parts}), "replica", threshold=5)
    assert plan.moves, "the cluster is unbalanced: the plan moves replicas"
    after = {p.partition: p for p in plan.after.partitions}
    assert any(after[n].replicas != (0, 1) for n in range(8))
    assert [(after[n].bytes_in_per_s, after[n].bytes_out_per_s) for n in range(8)] == [(10.0 * n, n) for n in range(8)]
