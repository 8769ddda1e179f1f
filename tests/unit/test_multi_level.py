"""Multi-level rack awareness (KIP-879): the rack rule, exact placements, the three-DC example.

Exact expectations are derived by hand from the ring walk (see the module docstring of
``kafka_replica_assignor.assignors.multi_level``), with scripted ring offsets, not copied from output.
"""

from __future__ import annotations

import random
from collections import Counter

import pytest

from kafka_replica_assignor.assignors import (
    BrokerMetadata,
    ClusterView,
    InvalidPartitionsError,
    InvalidReplicationFactorError,
    ReplicaAssignorError,
    create_assignor,
    place,
)
from kafka_replica_assignor.assignors.default import assign_replicas_to_brokers
from kafka_replica_assignor.assignors.explain import explain, format_levels
from kafka_replica_assignor.assignors.multi_level import MultiLevelRackAssignor, parse_rack, rack_paths
from tests.property.invariants import check_placement, leader_counts, replica_counts

ASSIGNOR = MultiLevelRackAssignor()


class ScriptedRandom(random.Random):
    """A ``random.Random`` whose ``randrange`` returns scripted values and records the bounds."""

    def __init__(self, *draws: int) -> None:
        super().__init__(0)
        self.draws = list(draws)
        self.bounds: list[int] = []

    def randrange(self, n: int) -> int:  # type: ignore[override]
        self.bounds.append(n)
        value = self.draws.pop(0) if self.draws else 0
        assert 0 <= value < n
        return value


def cluster_of(racks: dict[int, str | None], **kwargs) -> ClusterView:
    return ClusterView.of(racks.items(), **kwargs)


# brokers 0, 1 in /dc1/r1; 2, 3 in /dc1/r2; 4, 5 in /dc2/r1; 6, 7 in /dc2/r2
TWO_DC = {b: f"/dc{b // 4 + 1}/r{(b // 2) % 2 + 1}" for b in range(8)}
# the worked example: /dc{1,2,3}/rack{1,2}, two brokers per rack (0, 1 in /dc1/rack1, ...)
THREE_DC = {b: f"/dc{b // 4 + 1}/rack{(b // 2) % 2 + 1}" for b in range(12)}


def dc_of(broker: int) -> str:
    return THREE_DC[broker].split("/")[1]


# --- the rack rule -------------------------------------------------------------------------

@pytest.mark.parametrize(("rack", "path"), [
    ("r1", ("r1",)),
    ("/r1", ("r1",)),
    ("dc1/r1", ("dc1", "r1")),
    ("/dc1/zone-b/rack-3", ("dc1", "zone-b", "rack-3")),
    ("/DC1/R1", ("DC1", "R1")),
])
def test_parse_rack_leading_slash_is_optional(rack, path):
    assert parse_rack(0, rack) == path


@pytest.mark.parametrize(("rack", "fragment"), [
    ("", "names no rack"),
    ("/", "names no rack"),
    ("/dc1//r1", "empty component"),
    ("/dc1/r1/", "empty component"),
    ("//dc1", "empty component"),
    ("/dc1/ r1", "whitespace"),
    ("/dc1 /r1", "whitespace"),
])
def test_parse_rack_refuses_ambiguous_names_naming_the_broker(rack, fragment):
    with pytest.raises(ReplicaAssignorError) as info:
        parse_rack(7, rack)
    assert "Broker 7" in info.value.message
    assert repr(rack) in info.value.message
    assert fragment in info.value.message


def test_shorter_paths_are_padded_by_repeating_their_last_component():
    paths = rack_paths(cluster_of({0: "/dc1/r1", 1: "/dc1/r2", 2: "/dc2", 3: "dc3"}).brokers)
    assert paths == {0: ("dc1", "r1"), 1: ("dc1", "r2"), 2: ("dc2", "dc2"), 3: ("dc3", "dc3")}


def test_flat_racks_are_one_level():
    paths = rack_paths(cluster_of({0: "r1", 1: "/r1", 2: "r2"}).brokers)
    assert paths == {0: ("r1",), 1: ("r1",), 2: ("r2",)}


def test_no_racks_at_all_is_a_single_level_of_brokers():
    assert rack_paths(cluster_of({0: None, 1: None}).brokers) == {0: (), 1: ()}


def test_some_brokers_without_a_rack_are_refused_by_name():
    cluster = cluster_of({0: "/dc1/r1", 1: None, 2: "/dc2/r1", 3: None})
    with pytest.raises(ReplicaAssignorError) as info:
        place(ASSIGNOR, "t", range(2), 2, cluster, rng=random.Random(0))
    assert "Brokers 1, 3 have no rack" in info.value.message
    assert "broker 0 has rack '/dc1/r1'" in info.value.message


def test_a_rack_that_is_also_a_group_of_racks_is_refused_naming_both_brokers():
    cluster = cluster_of({0: "/dc1/r1", 1: "/dc1", 2: "/dc2/r1"})
    with pytest.raises(ReplicaAssignorError) as info:
        place(ASSIGNOR, "t", range(2), 2, cluster, rng=random.Random(0))
    assert "Broker 1 has rack '/dc1'" in info.value.message
    assert "broker 0 has rack '/dc1/r1'" in info.value.message


def test_malformed_rack_is_refused_through_place():
    cluster = cluster_of({0: "/dc1/r1", 1: "/dc1//r2"})
    with pytest.raises(ReplicaAssignorError, match="Broker 1 has rack '/dc1//r2'"):
        place(ASSIGNOR, "t", range(2), 2, cluster, rng=random.Random(0))


def test_padded_broker_is_spread_like_a_data_centre_of_its_own():
    # /dc2 has one broker: every RF 2 partition takes it and one of dc1's two racks
    cluster = cluster_of({0: "/dc1/r1", 1: "/dc1/r2", 2: "/dc2"})
    a = place(ASSIGNOR, "t", range(6), 2, cluster, rng=random.Random(1))
    assert all(2 in r for r in a.values())
    assert replica_counts(a, [0, 1, 2]) == {0: 3, 1: 3, 2: 6}


# --- exact placements, derived by hand ----------------------------------------------------

def test_docstring_example_two_data_centres_every_offset_zero():
    # root ring dc1, dc2; each dc's ring r1, r2; each rack's ring its two brokers:
    # sequence 0 4 2 6 1 5 3 7 0 4 2 6; the leader is the first replica leading nothing
    rng = ScriptedRandom()
    a = place(ASSIGNOR, "t", range(4), 3, cluster_of(TWO_DC), rng=rng)
    assert a == {0: [0, 4, 2], 1: [6, 1, 5], 2: [3, 7, 0], 3: [4, 2, 6]}
    # one draw per node with two or more children: root, dc1, dc2, then the four racks
    assert rng.bounds == [2, 2, 2, 2, 2, 2, 2]


def test_scripted_offsets_pick_the_ring_start_of_every_node():
    # root starts at dc2, dc1 at r2, dc2 at r1, rack /dc1/r1 at broker 1, /dc1/r2 at 3,
    # /dc2/r1 at 5, /dc2/r2 at 6: sequence dc2.r1=5, dc1.r2=3, dc2.r2=6, dc1.r1=1,
    # dc2.r1=4, dc1.r2=2, dc2.r2=7, dc1.r1=0. Leaders: the fewest leaderships, then the
    # least-leading data centre, then rack: [5,3] -> 5 (all tie, first placed); [6,1] -> 1
    # (dc1 leads 0, dc2 1); [4,2] -> 2 (data centres tie at 1, rack /dc1/r2 leads 0, /dc2/r1 1);
    # [7,0] -> 7 (dc2 leads 1, dc1 2): two leaders per data centre, not 4 and 0
    rng = ScriptedRandom(1, 1, 0, 1, 1, 1, 0)
    a = place(ASSIGNOR, "t", range(4), 2, cluster_of(TWO_DC), rng=rng)
    assert a == {0: [5, 3], 1: [1, 6], 2: [2, 4], 3: [7, 0]}


def test_no_racks_is_round_robin_from_a_random_start():
    # ring 2 3 4 0 1; windows [2,3] [4,0] [1,2] [3,4] [0,1]; the least-leading replica leads
    a = place(ASSIGNOR, "t", range(5), 2, cluster_of(dict.fromkeys(range(5))), rng=ScriptedRandom(2))
    assert a == {0: [2, 3], 1: [4, 0], 2: [1, 2], 3: [3, 4], 4: [0, 1]}


def test_leader_moves_to_the_next_replica_when_the_first_already_leads():
    # 4 brokers, RF 2: windows [0,1] [2,3] [0,1] [2,3]; 0 and 2 lead once, then 1 and 3
    a = place(ASSIGNOR, "t", range(4), 2, cluster_of(dict.fromkeys(range(4))), rng=ScriptedRandom(0))
    assert a == {0: [0, 1], 1: [2, 3], 2: [1, 0], 3: [3, 2]}


def test_same_seed_same_answer_and_seeds_matter():
    cluster = cluster_of(THREE_DC)
    runs = {seed: place(ASSIGNOR, "t", range(30), 3, cluster, rng=random.Random(seed)) for seed in range(6)}
    assert runs[3] == place(ASSIGNOR, "t", range(30), 3, cluster, rng=random.Random(3))
    assert len({tuple(map(tuple, a.values())) for a in runs.values()}) > 1


def test_registered_as_multi_level():
    assignor = create_assignor("multi-level")
    assert isinstance(assignor, MultiLevelRackAssignor)
    assert assignor.name == "multi-level"


# --- the three-data-centre example -----------------------------------------------------------

@pytest.mark.parametrize("seed", range(12))
def test_three_dcs_rf3_puts_one_replica_in_every_data_centre(seed):
    cluster = cluster_of(THREE_DC)
    a = place(ASSIGNOR, "t", range(24), 3, cluster, rng=random.Random(seed))
    check_placement(a, cluster, 3, range(24), rack_spread=True, leader_balance=True, replica_balance=0)
    for replicas in a.values():
        assert sorted(dc_of(b) for b in replicas) == ["dc1", "dc2", "dc3"]


@pytest.mark.parametrize("seed", range(12))
def test_three_dcs_rf6_puts_two_per_data_centre_on_different_racks(seed):
    cluster = cluster_of(THREE_DC)
    a = place(ASSIGNOR, "t", range(24), 6, cluster, rng=random.Random(seed))
    check_placement(a, cluster, 6, range(24), rack_spread=True, leader_balance=True, replica_balance=0)
    for replicas in a.values():
        assert Counter(dc_of(b) for b in replicas) == {"dc1": 2, "dc2": 2, "dc3": 2}
        assert len({THREE_DC[b] for b in replicas}) == 6


@pytest.mark.parametrize("start", range(12))
def test_kafka_single_level_with_path_racks_leaves_a_data_centre_out_at_rf3(start):
    # the six paths as six flat racks: Kafka spreads over racks, not data centres
    brokers = [BrokerMetadata(b, THREE_DC[b]) for b in range(12)]
    a = assign_replicas_to_brokers(brokers, 12, 3, fixed_start_index=start)
    missing_a_dc = [p for p, r in a.items() if len({dc_of(b) for b in r}) < 3]
    assert len(missing_a_dc) >= 6


@pytest.mark.parametrize("start", range(12))
def test_kafka_single_level_with_dc_racks_doubles_up_a_rack_at_rf6(start):
    # the data centres as racks: Kafka cannot see the racks inside them
    brokers = [BrokerMetadata(b, dc_of(b)) for b in range(12)]
    a = assign_replicas_to_brokers(brokers, 12, 6, fixed_start_index=start)
    same_rack_twice = [p for p, r in a.items() if len({THREE_DC[b] for b in r}) < 6]
    assert len(same_rack_twice) >= 8


def test_kafka_example_from_kip_879_is_what_single_level_gives():
    # KIP-879: "/DC1/R1,/DC1/R2,/DC2/R1" for RF 3, DC3 unused (start index 0, partition 0)
    brokers = [BrokerMetadata(b, THREE_DC[b]) for b in range(12)]
    first = assign_replicas_to_brokers(brokers, 1, 3, fixed_start_index=0)[0]
    assert [THREE_DC[b] for b in first] == ["/dc1/rack1", "/dc1/rack2", "/dc2/rack1"]


def leader_spreads(assignment, cluster) -> list[int]:
    """Highest minus lowest leader count at every level, top first, brokers last."""
    return [high - low for low, high in (level.leader_range for level in explain(assignment, cluster))]


@pytest.mark.parametrize("seed", range(12))
def test_three_dcs_leaders_are_even_per_data_centre_and_rack_too(seed):
    # 6 partitions used to give data-centre leader counts such as 2/0/4 (each broker leading
    # at most one): now n / 3 per data centre, n / 6 per rack, and brokers within one
    cluster = cluster_of(THREE_DC)
    for n in (6, 12):
        a = place(ASSIGNOR, "t", range(n), 3, cluster, rng=random.Random(seed))
        assert leader_spreads(a, cluster) == [0, 0, 1 if n == 6 else 0]
        assert Counter(dc_of(r[0]) for r in a.values()) == dict.fromkeys(["dc1", "dc2", "dc3"], n // 3)


@pytest.mark.parametrize("seed", range(6))
def test_added_partitions_even_the_leaders_of_the_whole_topic_at_every_level(seed):
    cluster = cluster_of(THREE_DC)
    first = place(ASSIGNOR, "t", range(5), 3, cluster, rng=random.Random(seed))
    grown = cluster.with_assignment("t", first)
    more = place(ASSIGNOR, "t", range(5, 13), 3, grown, rng=random.Random(seed + 1))
    assert all(spread <= 1 for spread in leader_spreads({**first, **more}, cluster))


def test_leaders_even_at_every_level_where_only_the_exact_round_finds_how():
    # 3 x 2 x 3 racks of 3 brokers, 131 partitions, RF 3, seed 1443 (found by Hypothesis):
    # greedy and repair paths leave racks of one zone at 8, 7, 6 leaders; the flow round
    # finds leaders within one at every level
    cluster = cluster_of({b: f"/a{b // 18}/b{b // 9 % 2}/c{b // 3 % 3}" for b in range(54)})
    a = place(ASSIGNOR, "t", range(131), 3, cluster, rng=random.Random(1443))
    assert leader_spreads(a, cluster) == [1, 1, 1, 1]
    check_placement(a, cluster, 3, range(131), rack_spread=True, leader_balance=True, replica_balance=1)


# --- continuation ----------------------------------------------------------------------------

@pytest.mark.parametrize("seed", range(8))
def test_adding_partitions_gives_what_one_call_would_have_given(seed):
    # RF 3 over two data centres: every ring position can be read back from 7 partitions
    cluster = cluster_of(TWO_DC)
    one_call = place(ASSIGNOR, "t", range(20), 3, cluster, rng=random.Random(seed))
    first = {p: one_call[p] for p in range(7)}
    extended = place(ASSIGNOR, "t", range(7, 20), 3, cluster.with_assignment("t", first),
                     rng=random.Random(seed + 99))
    assert extended == {p: one_call[p] for p in range(7, 20)}


@pytest.mark.parametrize("seed", range(8))
def test_adding_partitions_keeps_one_calls_replica_sets_when_the_root_phase_is_unreadable(seed):
    # RF 3 over three data centres: each partition sends one replica to each, so the root's
    # position never shows; the replica sets are still one call's, leaders still within one
    cluster = cluster_of(THREE_DC)
    one_call = place(ASSIGNOR, "t", range(20), 3, cluster, rng=random.Random(seed))
    first = {p: one_call[p] for p in range(7)}
    extended = place(ASSIGNOR, "t", range(7, 20), 3, cluster.with_assignment("t", first),
                     rng=random.Random(seed + 99))
    assert {p: set(r) for p, r in extended.items()} == {p: set(one_call[p]) for p in range(7, 20)}
    check_placement({**first, **extended}, cluster, 3, range(20), leader_balance=True, replica_balance=1)


def test_adding_partitions_to_a_flat_topic_continues_the_ring():
    # ring 0 1 2 3 4 (offset 0): [0,1] [2,3] [4,0]; the next window is [1,2], then [3,4]
    cluster = cluster_of(dict.fromkeys(range(5)))
    first = place(ASSIGNOR, "t", range(3), 2, cluster, rng=ScriptedRandom(0))
    assert first == {0: [0, 1], 1: [2, 3], 2: [4, 0]}
    more = place(ASSIGNOR, "t", range(3, 5), 2, cluster.with_assignment("t", first), rng=ScriptedRandom(3))
    assert more == {3: [1, 2], 4: [3, 4]}


def test_raising_the_replication_factor_keeps_replicas_and_evens_the_topic():
    cluster = cluster_of(dict.fromkeys(range(3)))
    current = {0: [0], 1: [1], 2: [2]}
    a = place(ASSIGNOR, "t", range(3), 2, cluster.with_assignment("t", current), rng=random.Random(0))
    check_placement(a, cluster, 2, range(3), current=current, replica_balance=0)
    assert leader_counts(a, range(3)) == {0: 1, 1: 1, 2: 1}


def test_raising_rf_on_three_dcs_adds_the_missing_data_centre():
    cluster = cluster_of(THREE_DC)
    current = place(ASSIGNOR, "t", range(24), 2, cluster, rng=random.Random(2))
    a = place(ASSIGNOR, "t", range(24), 3, cluster.with_assignment("t", current), rng=random.Random(3))
    check_placement(a, cluster, 3, range(24), current=current, rack_spread=True, replica_balance=0)
    for p, replicas in a.items():
        assert replicas[:2] == current[p]
        assert sorted(dc_of(b) for b in replicas) == ["dc1", "dc2", "dc3"]


def test_a_lower_replication_factor_is_refused():
    cluster = cluster_of(THREE_DC)
    current = {0: [0, 4, 8]}
    with pytest.raises(InvalidReplicationFactorError, match="already has 3 replicas"):
        place(ASSIGNOR, "t", [0], 2, cluster.with_assignment("t", current), rng=random.Random(0))


def test_raising_rf_with_a_replica_on_a_missing_broker_is_refused():
    cluster = cluster_of(THREE_DC)
    with pytest.raises(ReplicaAssignorError, match=r"current replicas \[42\]"):
        place(ASSIGNOR, "t", [0], 3, cluster.with_assignment("t", {0: [0, 42]}), rng=random.Random(0))


def test_negative_partition_ids_are_refused():
    with pytest.raises(InvalidPartitionsError):
        place(ASSIGNOR, "t", [-1, 0], 2, cluster_of(THREE_DC), rng=random.Random(0))


# --- fenced brokers ------------------------------------------------------------------------

def test_fenced_brokers_take_replicas_only_where_the_unfenced_are_too_few():
    # the framework's rule (assignors/fencing.py): RF 1 and 2 fit on brokers 0 and 2; RF 3 puts
    # broker 1 in every partition, never first
    cluster = cluster_of(dict.fromkeys(range(3)), fenced=frozenset({1}))
    a = place(ASSIGNOR, "t", range(6), 1, cluster, rng=random.Random(4))
    check_placement(a, cluster, 1, range(6), leader_balance=True, fenced_only_when_needed=True)
    assert leader_counts(a, [0, 2]) == {0: 3, 2: 3}
    b = place(ASSIGNOR, "t", range(6), 2, cluster, rng=random.Random(4))
    check_placement(b, cluster, 2, range(6), leader_balance=True, fenced_only_when_needed=True)
    assert replica_counts(b, range(3))[1] == 0
    c = place(ASSIGNOR, "t", range(6), 3, cluster, rng=random.Random(4))
    check_placement(c, cluster, 3, range(6), leader_balance=True, fenced_only_when_needed=True)
    assert all(r[2] == 1 for r in c.values())


def test_all_brokers_fenced_is_refused():
    cluster = cluster_of(dict.fromkeys(range(2)), fenced=frozenset({0, 1}))
    with pytest.raises(InvalidReplicationFactorError, match=r"^All brokers are currently fenced\.$"):
        place(ASSIGNOR, "t", range(2), 1, cluster, rng=random.Random(0))


# --- explain ---------------------------------------------------------------------------------

def test_explain_counts_replicas_and_leaders_per_level():
    cluster = cluster_of(TWO_DC)
    a = {0: [0, 4, 2], 1: [6, 1, 5], 2: [3, 7, 0], 3: [4, 2, 6]}
    levels = explain(a, cluster)
    assert [level.title for level in levels] == ["level 1", "level 2", "brokers"]
    assert [(n.name, n.brokers, n.replicas, n.leaders) for n in levels[0].nodes] == [
        ("/dc1", 4, 6, 2), ("/dc2", 4, 6, 2)]
    assert [(n.name, n.replicas, n.leaders) for n in levels[1].nodes] == [
        ("/dc1/r1", 3, 1), ("/dc1/r2", 3, 1), ("/dc2/r1", 3, 1), ("/dc2/r2", 3, 1)]
    assert [n.replicas for n in levels[2].nodes] == [2, 1, 2, 1, 2, 1, 2, 1]
    assert levels[2].replica_range == (1, 2)
    text = format_levels(levels, max_nodes=3)
    assert text.splitlines()[0] == "level 1: 2 nodes, replicas 6..6 (spread 0), leaders 2..2 (spread 0)"
    assert "  ... 5 more" in text


def test_explain_without_racks_has_only_the_broker_level():
    levels = explain({0: [1, 0]}, cluster_of({0: None, 1: None, 2: None}))
    assert len(levels) == 1
    assert [(n.name, n.replicas, n.leaders) for n in levels[0].nodes] == [
        ("broker 0", 1, 0), ("broker 1", 1, 1), ("broker 2", 0, 0)]


def test_explain_refuses_unknown_brokers():
    with pytest.raises(ValueError, match=r"\[9\]"):
        explain({0: [9]}, cluster_of({0: None}))


def test_explain_refuses_racks_the_rule_refuses_with_a_value_error():
    with pytest.raises(ValueError, match="Broker 1 has no rack"):
        explain({0: [0]}, cluster_of({0: "/dc1/r1", 1: None}))


def test_explain_chart_writes_a_png(tmp_path):
    from kafka_replica_assignor.cli.explain_chart import write_chart

    cluster = cluster_of(THREE_DC)
    a = place(ASSIGNOR, "t", range(12), 3, cluster, rng=random.Random(0))
    path = tmp_path / "levels.png"
    write_chart(explain(a, cluster), path)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_all_fenced_replicas_swap_within_the_rack_first():
    # dc1 = {0 fenced, 1}, dc2 = {2 fenced}: every RF 2 partition needs both data centres and
    # an unfenced leader, and only broker 1 qualifies: [1, 2] every time, spread kept
    cluster = cluster_of({0: "/dc1", 1: "/dc1", 2: "/dc2"}, fenced=frozenset({0, 2}))
    for seed in range(6):
        a = place(ASSIGNOR, "t", range(4), 2, cluster, rng=random.Random(seed))
        assert a == {p: [1, 2] for p in range(4)}


def test_all_fenced_replicas_swap_in_the_nearest_subtree_with_an_unfenced_broker():
    # /dc1/r1 = {0 fenced}, /dc1/r2 = {1}, /dc2/r1 = {2 fenced}: the swap has to leave the
    # rack but stays in dc1, so each partition still has both data centres
    cluster = cluster_of({0: "/dc1/r1", 1: "/dc1/r2", 2: "/dc2/r1"}, fenced=frozenset({0, 2}))
    for seed in range(6):
        a = place(ASSIGNOR, "t", range(4), 2, cluster, rng=random.Random(seed))
        assert all(r[0] == 1 and 2 in r for r in a.values())
