"""The snapshot file reader (server/snapshot_file.py) and the snapshot source over it: read only
when the file changed, refused over its size cap or without brokers (the last good view kept),
parsed in a child process when large with the same result as in a thread, and without stalling
the event loop (timings are compared as ratios)."""

from __future__ import annotations

import asyncio
import gc
import json
import os
import pickle
import time

import pytest
from structlog.testing import capture_logs

from kafka_replica_assignor.assignors import BrokerMetadata
from kafka_replica_assignor.cluster.snapshot import ClusterSnapshot, SnapshotError
from kafka_replica_assignor.server.cluster_source import SnapshotSource, create_source, merge_observed
from kafka_replica_assignor.server.config import ConfigError, load_config
from kafka_replica_assignor.server.snapshot_file import SnapshotFile, _plain_loads

B = BrokerMetadata


def snapshot(brokers: int = 3, topics: int = 2, partitions: int = 2, rf: int = 2) -> dict:
    return {
        "brokers": [{"id": b, "rack": f"r{b % 3}"} for b in range(brokers)],
        "partitions": [{"topic": f"t{t}", "partition": p,
                        "replicas": [(t + p + i) % brokers for i in range(rf)]}
                       for t in range(topics) for p in range(partitions)],
    }


def write(path, data) -> None:
    path.write_text(json.dumps(data))


async def test_an_unchanged_file_is_not_read_and_a_rewrite_of_the_same_bytes_not_parsed(tmp_path):
    path = tmp_path / "cluster.json"
    write(path, snapshot())
    file = SnapshotFile(path, racy_window_ns=0)  # ctime older than the last read: settled
    first = await file.read()
    assert first is not None and [b.id for b in first.brokers] == [0, 1, 2]
    assert await file.read() is None
    assert (file.reads, file.parses) == (1, 1)  # stat only, no read
    path.write_bytes(path.read_bytes())  # same bytes: read and hashed, not parsed
    assert await file.read() is None
    assert (file.reads, file.parses) == (2, 1)
    # same size, mtime set back: ctime still moves, so the change is seen
    st = path.stat()
    write(path, snapshot(brokers=3, topics=2, partitions=2, rf=2) | {"brokers": [{"id": 5}, {"id": 6}, {"id": 7}]})
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    changed = await file.read()
    assert changed is not None and [b.id for b in changed.brokers] == [5, 6, 7]
    assert (file.reads, file.parses) == (3, 2)


async def test_a_recent_stamp_is_racy_and_the_file_is_hashed_again(tmp_path):
    path = tmp_path / "cluster.json"
    write(path, snapshot())
    file = SnapshotFile(path, racy_window_ns=3600 * 10**9)  # every stamp is recent
    assert await file.read() is not None
    assert await file.read() is None
    assert await file.read() is None
    assert (file.reads, file.parses) == (3, 1)


async def test_the_size_cap_refuses_before_reading_and_the_source_keeps_its_view(tmp_path):
    path = tmp_path / "cluster.json"
    write(path, snapshot())
    source = SnapshotSource(path, max_file_bytes=4096)
    await source.start()
    before = source.view()
    write(path, snapshot(brokers=50, topics=20, partitions=10))  # well over 4096 bytes
    with capture_logs() as logs:
        assert await source.refresh() is False
    assert source.view() is before
    assert logs[0]["event"] == "metadata_refresh_failed"
    assert "over cluster.metadata.file.max.bytes=4096" in logs[0]["error"]
    assert source.file.reads == 1
    await source.stop()


async def test_a_snapshot_without_brokers_is_refused_like_an_invalid_one(tmp_path):
    path = tmp_path / "cluster.json"
    write(path, snapshot())
    source = SnapshotSource(path)
    await source.start()
    before = source.view()
    write(path, {"brokers": [], "partitions": []})
    with capture_logs() as logs:
        assert await source.refresh() is False
        assert await source.refresh() is False  # unchanged and refused: not parsed again
    assert source.view() is before and source.view().broker_ids == (0, 1, 2)
    assert "lists no brokers" in logs[0]["error"] and logs[1]["error"] == logs[0]["error"]
    assert source.file.parses == 1
    write(path, snapshot())  # the good content is back: no parse needed either
    assert await source.refresh() is True
    assert source.view() is before and source.file.parses == 1
    await source.stop()
    empty = tmp_path / "empty.json"
    write(empty, {"brokers": []})
    with pytest.raises(SnapshotError, match="lists no brokers"):
        await SnapshotSource(empty).start()


async def test_start_up_refuses_an_oversized_or_empty_snapshot_with_one_line(tmp_path):
    path = tmp_path / "cluster.json"
    write(path, snapshot(brokers=50, topics=20, partitions=10))
    config = load_config(overrides=[f"cluster.metadata.file={path}", "cluster.metadata.file.max.bytes=1000"])
    with pytest.raises(ConfigError, match=r"cluster\.metadata\.file: .*over cluster\.metadata\.file\.max\.bytes=1000"):
        await create_source(config).start()
    write(path, {"brokers": []})
    with pytest.raises(ConfigError, match="lists no brokers"):
        await create_source(load_config(overrides=[f"cluster.metadata.file={path}"])).start()
    with pytest.raises(ConfigError, match="cluster.metadata.file.max.bytes: must be >= 1"):
        load_config(overrides=["cluster.metadata.file.max.bytes=0"])


async def test_the_child_process_gives_the_view_a_thread_gives(tmp_path):
    path = tmp_path / "cluster.json"
    data = snapshot(brokers=7, topics=400, partitions=60, rf=3)  # 24,000 partitions: two chunks
    data["brokers"][6]["alive"] = False
    write(path, data)
    in_thread = SnapshotSource(path, in_process_max_bytes=1 << 30)
    in_child = SnapshotSource(path, in_process_max_bytes=0)
    await in_thread.start()
    await in_child.start()
    assert (in_thread.file.child_processes, in_child.file.child_processes) == (0, 1)
    expected = merge_observed(ClusterSnapshot.from_dict(data))
    for view in (in_thread.view(), in_child.view()):
        assert view == expected
        assert view.offline == (B(6, "r0"),)
    # an invalid file fails the same way in the child
    path.write_text('{"brokers": [{"id": 0}], "partitions": [')
    with capture_logs() as logs:
        assert await in_child.refresh() is False
    assert "not valid JSON" in logs[0]["error"]
    assert in_child.view() == expected


def test_the_reader_output_is_loaded_as_plain_data_only():
    assert _plain_loads(pickle.dumps(("parsed", (1, 2), b"d", ((0, None),), {"t": {0: (0,)}}))) == (
        "parsed", (1, 2), b"d", ((0, None),), {"t": {0: (0,)}})
    with pytest.raises(pickle.UnpicklingError, match="not plain data"):
        _plain_loads(pickle.dumps(B(0, "a")))


async def test_a_large_snapshot_does_not_stall_the_event_loop(tmp_path):
    """Parsing on the loop blocks it for the whole parse; the source's longest pause must be a
    small fraction of that (in a child process, then chunks and a view built in a thread)."""
    path = tmp_path / "cluster.json"
    write(path, snapshot(brokers=30, topics=1000, partitions=40, rf=3))  # 40,000 partitions
    started = time.perf_counter()
    merge_observed(ClusterSnapshot.from_json(path.read_bytes()))  # what a refresh used to do on the loop
    on_loop = time.perf_counter() - started

    gaps: list[float] = []
    done = asyncio.Event()

    async def ticker() -> None:
        last = time.perf_counter()
        while not done.is_set():
            await asyncio.sleep(0.001)
            now = time.perf_counter()
            gaps.append(now - last)
            last = now

    source = SnapshotSource(path)
    assert path.stat().st_size > source.file._in_process_max_bytes  # the child-process path
    # the test process holds many more long-lived objects than a server (every test module):
    # set them aside, so that a full collection costs what it costs in a server
    gc.collect()
    gc.freeze()
    try:
        tick = asyncio.create_task(ticker())
        await source.start()
        done.set()
        await tick
    finally:
        gc.unfreeze()
    assert source.file.child_processes == 1 and len(source.view().topics) == 1000
    print(f"longest pause {max(gaps) * 1000:.1f} ms, parse on the loop {on_loop * 1000:.1f} ms")
    assert max(gaps) < on_loop / 4, (max(gaps), on_loop)
    await source.stop()
