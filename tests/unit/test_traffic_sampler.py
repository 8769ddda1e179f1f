"""Traffic measured from offsets: the arithmetic on fake sample pairs, the sampler's reads through
a fake admin client, each broker's network figures, and the options of ``state`` and ``balance``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kafka.errors as kafka_errors
import pytest
from kafka.structs import OffsetAndMetadata, OffsetAndTimestamp, TopicPartition

from kafka_replica_assignor.cli.main import main as cli_main
from kafka_replica_assignor.cluster.snapshot import BrokerEntry, ClusterSnapshot, PartitionEntry
from kafka_replica_assignor.cluster.traffic import BrokerTraffic, broker_traffic, has_rates
from kafka_replica_assignor.protocol.cluster_reader import ClusterReadError
from kafka_replica_assignor.protocol.traffic_sampler import (
    GROUPS_PER_REQUEST,
    LogExtent,
    OffsetSample,
    bytes_per_offset,
    consumer_groups,
    sample_traffic,
    snapshot_with_rates,
    traffic_rates,
)

T0, T1, U0 = ("t", 0), ("t", 1), ("u", 0)


def sample(log_end: dict[tuple[str, int], int], at: float,
           committed: dict[str, dict[tuple[str, int], int]] | None = None, committed_at: float | None = None,
           ) -> OffsetSample:
    return OffsetSample(log_end, at, committed or {}, at if committed_at is None else committed_at)


# --- the arithmetic --------------------------------------------------------------------------------

def test_the_modules_example():
    first = sample({T0: 1000}, 10.0, {"a": {T0: 900}, "b": {T0: 1000}})
    second = sample({T0: 1200}, 12.0, {"a": {T0: 1100}, "b": {T0: 1000}})
    rates = traffic_rates(first, second, LogExtent({T0: 100_000}, {T0: 0}, {T0: 1200}))
    assert rates.bytes_in_per_s[T0] == pytest.approx(200 / 2 * 100_000 / 1200)      # 8,333 B/s
    assert rates.bytes_out_per_s[T0] == pytest.approx(200 / 2 * 100_000 / 1200)
    assert rates.groups == 2 and rates.estimated == rates.unsized == 0


def test_elapsed_is_measured_per_side_not_the_window_asked():
    first = sample({T0: 0}, 100.0, {"g": {T0: 0}}, committed_at=100.5)
    second = sample({T0: 400}, 104.0, {"g": {T0: 300}}, committed_at=103.5)
    rates = traffic_rates(first, second, LogExtent({T0: 4000}, {T0: 0}, {T0: 400}))     # 10 B per offset
    assert rates.produce_seconds == 4.0 and rates.consume_seconds == 3.0
    assert rates.bytes_in_per_s[T0] == pytest.approx(1000.0)
    assert rates.bytes_out_per_s[T0] == pytest.approx(1000.0)


def test_groups_are_added_and_a_group_without_commits_in_the_window_counts_0():
    first = sample({T0: 0, T1: 0}, 0.0, {"a": {T0: 0, T1: 0}, "b": {T0: 0}, "c": {T1: 5}})
    second = sample({T0: 100, T1: 100}, 1.0, {"a": {T0: 100, T1: 10}, "b": {T0: 50}, "c": {T1: 5},
                                              "new": {T0: 100}})      # first committed inside the window
    rates = traffic_rates(first, second, LogExtent({T0: 100, T1: 100}, {T0: 0, T1: 0}, second.log_end))    # 1 B/offset
    assert rates.bytes_out_per_s == {T0: 150.0, T1: 10.0}
    assert rates.groups == 4


def test_offsets_that_went_back_count_0():
    first = sample({T0: 500}, 0.0, {"g": {T0: 400}})
    second = sample({T0: 100}, 1.0, {"g": {T0: 0}})       # a recreated topic, a reset group
    rates = traffic_rates(first, second, LogExtent({T0: 100}, {T0: 0}, {T0: 100}))
    assert rates.bytes_in_per_s[T0] == 0.0 and rates.bytes_out_per_s[T0] == 0.0


def test_bytes_per_offset_falls_back_to_the_topic_then_the_cluster():
    log_end = {T0: 100, T1: 50, U0: 7, ("v", 0): 0}
    extent = LogExtent(sizes={T0: 1000, T1: 0, U0: 700}, log_start={T0: 0, T1: 50, U0: 0, ("v", 0): 0},
                       log_end=log_end)
    figures, borrowed = bytes_per_offset(extent, log_end)
    assert figures[T0] == 10.0 and figures[U0] == 100.0
    assert figures[T1] == 10.0                        # an empty log: its topic's figure
    assert figures[("v", 0)] == pytest.approx(1700 / 107)    # no topic figure: the cluster's
    assert borrowed == {T1, ("v", 0)}


def test_no_sizes_anywhere_leaves_the_rates_of_partitions_with_traffic_out():
    first = sample({T0: 0, T1: 0}, 0.0)
    second = sample({T0: 10, T1: 0}, 1.0)
    rates = traffic_rates(first, second, LogExtent({}, {T0: 0, T1: 0}, second.log_end))
    assert T0 not in rates.bytes_in_per_s and rates.bytes_in_per_s[T1] == 0.0
    assert rates.unsized == 1
    assert any("left out" in line for line in rates.notes())


def test_samples_out_of_order_are_refused():
    with pytest.raises(ValueError, match="out of order"):
        traffic_rates(sample({T0: 0}, 5.0), sample({T0: 0}, 5.0), LogExtent({}, {}, {}))


def test_share_groups_are_not_sampled():
    listed = [{"group_id": "b", "group_type": "consumer"}, {"group_id": "s", "group_type": "share"},
              {"group_id": "a", "protocol_type": "consumer"}, {"group_id": "a", "group_type": "classic"}]
    assert consumer_groups(listed) == ["a", "b"]


def test_the_snapshot_gains_rates_of_sampled_partitions_only():
    snapshot = ClusterSnapshot((BrokerEntry(1),), (PartitionEntry("t", 0, (1,), leader=1),
                                                  PartitionEntry("t", 1, (1,), bytes_in_per_s=5.0)))
    first, second = sample({T0: 0}, 0.0), sample({T0: 30}, 3.0)
    rated = snapshot_with_rates(snapshot, traffic_rates(first, second, LogExtent({T0: 30}, {T0: 0}, {T0: 30})))
    assert (rated.partitions[0].bytes_in_per_s, rated.partitions[0].bytes_out_per_s) == (10.0, 0.0)
    assert rated.partitions[1].bytes_in_per_s == 5.0
    assert ClusterSnapshot.from_dict(rated.to_dict()) == rated      # the format carries them


# --- the reads, through a fake admin client ---------------------------------------------------------

class FakeAdmin:
    """Offsets that grow by ``produced`` and ``consumed`` per second of a fake clock."""

    def __init__(self, clock: list[float], produced: dict[tuple[str, int], int],
                 consumed: dict[str, dict[tuple[str, int], int]], bytes_per_offset: int = 100) -> None:
        self.clock, self.produced, self.consumed = clock, produced, consumed
        self.bytes_per_offset = bytes_per_offset
        self.offset_fetches: list[list[str]] = []
        self.read_at = 0.0     # of the last offsets read: the log's size then

    def list_partition_offsets(self, specs: dict[TopicPartition, int]) -> dict[TopicPartition, OffsetAndTimestamp]:
        self.clock[0] += 0.005      # read at the midpoint of a 10 ms request
        now = self.clock[0]
        self.clock[0] += 0.005
        self.read_at = now
        return {tp: OffsetAndTimestamp(0 if int(spec) < -1 else
                                       int(1000 + self.produced[(tp.topic, tp.partition)] * now), -1, None)
                for tp, spec in specs.items()}

    def list_groups(self) -> list[dict[str, Any]]:
        return [{"group_id": g, "group_type": "consumer"} for g in self.consumed]

    def list_group_offsets(self, specs: dict[str, None]) -> dict[str, dict[TopicPartition, OffsetAndMetadata]]:
        self.offset_fetches.append(list(specs))
        now = self.clock[0]
        return {g: {TopicPartition(*key): OffsetAndMetadata(int(rate * now), "", -1)
                    for key, rate in self.consumed[g].items()} for g in specs}

    def describe_log_dirs(self, wanted: dict[str, list[int]]) -> list[dict[str, Any]]:
        now = self.read_at
        return [{"broker": 1, "log_dirs": [{"error_code": 0, "log_dir": "/d", "topics": [
            {"name": topic, "partitions": [
                {"partition_index": p, "partition_size": self.bytes_per_offset * int(1000 + self.produced[(topic, p)] * now)}
                for p in partitions]} for topic, partitions in wanted.items()]}]}]


def fake_cluster(groups: int = 2) -> tuple[ClusterSnapshot, FakeAdmin, list[float]]:
    snapshot = ClusterSnapshot((BrokerEntry(1), BrokerEntry(2)), (
        PartitionEntry("t", 0, (1, 2), leader=1), PartitionEntry("t", 1, (2, 1), leader=2),
        PartitionEntry("t", 2, (1, 2), leader=None)))
    clock = [0.0]
    consumed = {f"g{i}": {T0: 50, T1: 5} for i in range(groups)}
    return snapshot, FakeAdmin(clock, {T0: 100, T1: 10, ("t", 2): 0}, consumed), clock


def test_sample_traffic_reads_two_samples_apart_and_skips_leaderless_partitions():
    snapshot, admin, clock = fake_cluster()

    def sleep(seconds: float) -> None:
        clock[0] += seconds

    rated, rates = sample_traffic(admin, snapshot, 10, clock=lambda: clock[0], sleep=sleep)
    by_key = {(p.topic, p.partition): p for p in rated.partitions}
    assert by_key[T0].bytes_in_per_s == pytest.approx(100 * 100, rel=1e-3)
    assert by_key[T1].bytes_in_per_s == pytest.approx(10 * 100, rel=1e-3)
    assert by_key[T0].bytes_out_per_s == pytest.approx(2 * 50 * 100, rel=1e-3)
    assert by_key[("t", 2)].bytes_in_per_s is None
    assert 10.0 <= rates.produce_seconds < 10.1 and 10.0 <= rates.consume_seconds < 10.1


def test_groups_are_fetched_in_bounded_requests():
    snapshot, admin, clock = fake_cluster(groups=GROUPS_PER_REQUEST + 3)
    sample_traffic(admin, snapshot, 1, clock=lambda: clock[0], sleep=lambda s: None)
    assert [len(batch) for batch in admin.offset_fetches] == [GROUPS_PER_REQUEST, 3] * 2


def test_a_failed_read_is_one_line():
    snapshot, admin, clock = fake_cluster()

    def broken(specs: Any) -> Any:
        raise kafka_errors.UnknownTopicOrPartitionError("The following partitions are not known: t-0")

    admin.list_partition_offsets = broken  # type: ignore[method-assign]
    with pytest.raises(ClusterReadError, match="^cannot sample traffic: .*UnknownTopicOrPartitionError"):
        sample_traffic(admin, snapshot, 1, clock=lambda: clock[0], sleep=lambda s: None)


# --- each broker's network -----------------------------------------------------------------------

def test_broker_traffic_leader_in_follower_in_and_leader_out():
    snapshot = ClusterSnapshot((BrokerEntry(1), BrokerEntry(2), BrokerEntry(3), BrokerEntry(4)), (
        PartitionEntry("t", 0, (1, 2, 3), leader=1, bytes_in_per_s=100.0, bytes_out_per_s=250.0),
        PartitionEntry("t", 1, (2, 3, -1), leader=2, bytes_in_per_s=10.0),    # a placeholder fetches nothing
        PartitionEntry("t", 2, (3, 4), leader=None, bytes_in_per_s=1e6),      # no leader: no traffic
        PartitionEntry("t", 3, (4, 1))))                                      # no rates: 0
    traffic = broker_traffic(snapshot)
    assert traffic[1] == BrokerTraffic(leader_in=100.0, follower_in=0.0, leader_out=450.0)
    assert traffic[2] == BrokerTraffic(leader_in=10.0, follower_in=100.0, leader_out=10.0)
    assert (traffic[3].network_in, traffic[3].network_out) == (110.0, 0.0)
    assert traffic[4] == BrokerTraffic()
    assert has_rates(snapshot) and not has_rates(ClusterSnapshot((BrokerEntry(1),)))


# --- the command line ------------------------------------------------------------------------------

@pytest.fixture
def rated_snapshot(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "cluster.json"
    path.write_text(json.dumps({"brokers": [{"id": 1}, {"id": 2, "network_in_capacity": 1000}], "partitions": [
        {"topic": "t", "partition": 0, "replicas": [1, 2], "leader": 1,
         "bytes_in_per_s": 300, "bytes_out_per_s": 600}]}))
    yield path


@pytest.mark.parametrize(("args", "message"), [
    (["--sample-seconds", "0"], "must be >= 1"),
    (["--sample-seconds", "3601"], "must be <= 3600 seconds"),
    (["--sample-seconds", "1.5"], "not a whole number"),
    (["--network-capacity", "0"], "must be >= 1"),
    (["--network-capacity", "1,2,3"], "expected IN or IN,OUT"),
    (["--network-capacity", "x"], "not a whole number"),
    (["--sample-seconds", "5"], "--sample-seconds samples a live cluster"),
])
def test_bad_traffic_options_exit_2_with_one_line(args: list[str], message: str, rated_snapshot: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        code = cli_main(["state", "--snapshot", str(rated_snapshot), *args])
        raise SystemExit(code)
    assert exited.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert message in err[-1]


def test_state_shows_each_brokers_traffic_and_saves_the_capacities(rated_snapshot: Path, tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    saved = tmp_path / "saved.json"
    assert cli_main(["state", "--snapshot", str(rated_snapshot), "--network-capacity", "2000,4000",
                     "--save-snapshot", str(saved)]) == 0
    out = capsys.readouterr().out
    table = out[out.index("leader in") - len("broker  "):].splitlines()
    assert table[1].split() == ["1", "300", "B/s", "0", "B/s", "300", "B/s", "15.0%", "900", "B/s", "22.5%"]
    assert table[2].split()[:2] == ["2", "0"]
    assert "produced 300 B/s, consumed 600 B/s" in out
    data = json.loads(saved.read_text())
    assert [(b["network_in_capacity"], b["network_out_capacity"]) for b in data["brokers"]] == [(2000, 4000)] * 2
    assert data["partitions"][0]["bytes_out_per_s"] == 600
    assert cli_main(["state", "--snapshot", str(rated_snapshot), "--json"]) == 0
    brokers = json.loads(capsys.readouterr().out)["brokers"]
    assert brokers[0]["network_out_per_s"] == 900.0 and brokers[1]["network_in_capacity"] == 1000


def test_balance_refuses_sampling_a_fleet(tmp_path: Path, rated_snapshot: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    code = cli_main(["balance", "--snapshot", str(rated_snapshot), "--spark", "--mode", "replica", "--sample-seconds", "5",
                     "--out", str(tmp_path / "plan")])
    assert code == 2
    assert "--sample-seconds samples a live cluster" in capsys.readouterr().err
