"""Kafka's own code as the oracle: our ``default`` and ``striped`` assignors against Apache
Kafka 4.0's ``AdminUtils.assignReplicasToBrokers`` and ``StripedReplicaPlacer``.

Thousands of random cases (a fixed seed) go to one JVM running Kafka's code
(``PlacementOracle.java``); every answer must be ours byte for byte: the same replicas in the
same order for every partition, or the same refusal (Kafka's exception class, ours mapped to it,
and the same message). Random draws are compared too: Kafka's ``java.util.Random`` seeded with
``seed`` on one side, :class:`kafka_replica_assignor.assignors.java_random.JavaRandom` with the same seed on the other.

Needs Java and Maven (the first run resolves Kafka's jars into ``.kafka/``; later runs are
offline). When they cannot run, the tests fail with the reason: they never skip.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pytest

from kafka_replica_assignor.assignors import (
    AssignmentError,
    BrokerMetadata,
    ClusterView,
    InvalidPartitionsError,
    InvalidReplicationFactorError,
    ReplicaAssignorError,
    place,
)
from kafka_replica_assignor.assignors.default import DefaultReplicaAssignor, assign_replicas_to_brokers
from kafka_replica_assignor.assignors.java_random import JavaRandom
from kafka_replica_assignor.assignors.striped import StripedReplicaAssignor
from tests.oracle import kafka_oracle

pytestmark = pytest.mark.kafka

SEED = 20261126
DEFAULT_CASES = 3000
STRIPED_CASES = 3000
DEFAULT_FENCED_CASES = 1500

# our refusals under the name of the Kafka exception they stand for
KAFKA_EXCEPTION = {
    InvalidPartitionsError: "InvalidPartitionsException",
    InvalidReplicationFactorError: "InvalidReplicationFactorException",
    ReplicaAssignorError: "AdminOperationException",  # Kafka's mixed-racks refusal
}

# rack names: Java's String order and String.hashCode must both matter (upper case before
# lower case, '1' < '10' < '2', a non-ASCII letter, and U+FB00 against U+1D537, which Java's
# UTF-16 order puts the other way round from code point order)
RACK_PREFIXES = ("r", "rack-", "Rack", "zone-é", "az", "\ufb00", "\U0001d537")
# rack names built to share buckets of Java's HashMap (the order the striped placer draws in):
# one-letter names 16 code points apart (one bucket of 16, two of 32, four of 64; never 9 in
# a bucket of a 64-bucket table) and eight names with one String.hashCode
COLLIDING_RACKS = tuple(chr(c) for c in range(65, 65 + 16 * 28, 16) if not 127 <= c <= 160) + tuple(
    a + b + c for a in ("Aa", "BB") for b in ("Aa", "BB") for c in ("Aa", "BB"))

Brokers = list[tuple[int, str | None, bool]]  # (id, rack, fenced)


@dataclass(frozen=True)
class Case:
    line: str  # what Kafka's program reads
    ours: Callable[[], str]  # our answer, in the program's output format
    kind: str  # for the summary: which entry point and which rack layout


def _answer(compute: Callable[[], Sequence[dict[int, list[int]]]]) -> str:
    try:
        topics = compute()
    except AssignmentError as exc:
        return f"ERR {KAFKA_EXCEPTION.get(type(exc), type(exc).__name__)} {exc.message}"
    return "OK " + "|".join(
        ";".join(f"{p}:{','.join(map(str, a[p]))}" for p in sorted(a)) for a in topics
    )


def _token(brokers: Brokers) -> str:
    if not brokers:
        return "-"
    return ",".join(f"{b}{'' if r is None else '@' + r}{'!' if f else ''}" for b, r, f in brokers)


def _broker_ids(rng: random.Random, n: int) -> list[int]:
    shape = rng.random()
    if shape < 0.3:
        return list(range(n))
    if shape < 0.45:
        return list(range(1, n + 1))
    return sorted(rng.sample(range(3 * n + 20), n))


def _racks(rng: random.Random, n: int, layout: str) -> list[str | None]:
    if layout == "none":
        return [None] * n
    if layout == "colliding":
        names = rng.sample(COLLIDING_RACKS, rng.randint(2, min(24, max(2, n))))
        return [names[i] if i < len(names) else rng.choice(names) for i in range(n)]
    k = rng.randint(1, max(1, min(n, 12)))
    if rng.random() < 0.7:  # one naming scheme
        prefix = rng.choice(RACK_PREFIXES)
        names = [f"{prefix}{i}" for i in rng.sample(range(1, 40), k)]
    else:  # schemes side by side
        names = list(dict.fromkeys(f"{rng.choice(RACK_PREFIXES)}{rng.randint(1, 40)}" for _ in range(k)))
        k = len(names)
    if layout == "even":  # every rack the same size, give or take one
        racks: list[str | None] = [names[i % k] for i in range(n)]
        rng.shuffle(racks)
        return racks
    if layout == "uneven":  # skewed rack sizes
        weights = [rng.random() ** 2 + 0.01 for _ in names]
        return list(rng.choices(names, weights=weights, k=n))
    # mixed: some brokers without a rack
    return [None if rng.random() < 0.3 else rng.choice(names) for _ in range(n)]


def _layout(rng: random.Random, colliding: int = 0) -> str:
    return rng.choices(["none", "even", "uneven", "mixed", "colliding"], weights=[30, 28, 32, 10, colliding])[0]


def _replication_factor(rng: random.Random, n: int) -> int:
    roll = rng.random()
    if roll < 0.05:
        return n + rng.randint(1, 3)  # more than the brokers: Kafka refuses
    if roll < 0.07:
        return rng.choice([0, -1])
    if roll < 0.25:
        return rng.choice([1, 2, 3, n])
    return rng.randint(1, max(1, n))


def _partitions(rng: random.Random) -> int:
    roll = rng.random()
    if roll < 0.02:
        return rng.choice([0, -3])
    if roll < 0.2:
        return rng.randint(1, 12)
    return rng.randint(1, 200)


def default_cases(count: int, seed: int) -> list[Case]:
    """``AdminUtils.assignReplicasToBrokers`` cases: our function of the same name (brokers in
    the order given, fixed or seeded start index, start partition ids), our plug-in for a new
    topic, and our plug-in adding partitions to an existing topic (Kafka's add-partitions rule:
    start index of the first broker >= partition 0's leader, start id the partition count)."""
    rng = random.Random(seed)
    cases = []
    for i in range(count):
        n = rng.randint(1, 60)
        layout = _layout(rng)
        ids = _broker_ids(rng, n)
        racks = _racks(rng, n, layout)
        brokers = [BrokerMetadata(b, r) for b, r in zip(ids, racks, strict=True)]
        draw_seed = rng.randrange(-(2**63), 2**63)
        rf = _replication_factor(rng, n)
        n_partitions = _partitions(rng)
        entry = rng.choices(["function", "new topic", "add partitions"], weights=[70, 15, 15])[0]
        if entry == "function":
            rng.shuffle(brokers)  # Kafka keeps the given order (rack-unaware)
            fixed = -1 if rng.random() < 0.45 else rng.choice(
                [rng.randint(0, n - 1), rng.randint(0, 3 * n), rng.randint(0, 10**6)])
            start_id = rng.choice([-1, -1, 0, rng.randint(1, 400), rng.randint(0, 3) * n])

            def ours(brokers=brokers, n_partitions=n_partitions, rf=rf, fixed=fixed, start_id=start_id,
                     draw_seed=draw_seed) -> str:
                return _answer(lambda: [assign_replicas_to_brokers(
                    brokers, n_partitions, rf, fixed, start_id, JavaRandom(draw_seed))])
            kafka_brokers = brokers
        elif entry == "new topic":
            fixed, start_id = -1, -1
            cluster = ClusterView.of(brokers)

            def ours(cluster=cluster, n_partitions=n_partitions, rf=rf, draw_seed=draw_seed) -> str:
                return _answer(lambda: [place(DefaultReplicaAssignor(), "t", range(max(0, n_partitions)), rf,
                                              cluster, rng=JavaRandom(draw_seed))])
            kafka_brokers = sorted(brokers, key=lambda b: b.id)
        else:
            kafka_brokers = sorted(brokers, key=lambda b: b.id)
            existing = rng.randint(1, 50)
            leader = rng.choice(ids)
            fixed = next(j for j, b in enumerate(kafka_brokers) if b.id >= leader)
            start_id = existing
            current_rf = max(1, min(rf, n))
            order = [b.id for b in kafka_brokers]
            current = {p: [order[(fixed + p + j) % n] for j in range(current_rf)] for p in range(existing)}
            cluster = ClusterView.of(brokers, topics={"t": current})
            rf = current_rf if rng.random() < 0.9 else rf

            def ours(cluster=cluster, existing=existing, n_partitions=n_partitions, rf=rf,
                     draw_seed=draw_seed) -> str:
                return _answer(lambda: [place(DefaultReplicaAssignor(), "t",
                                              range(existing, existing + max(0, n_partitions)), rf, cluster,
                                              rng=JavaRandom(draw_seed))])
        line = (f"A {i} {draw_seed} {fixed} {start_id} {n_partitions} {rf} "
                f"{_token([(b.id, b.rack, False) for b in kafka_brokers])}")
        cases.append(Case(line, ours, f"{entry}, racks {layout}"))
    return cases


def _fenced(rng: random.Random, n: int) -> list[bool]:
    roll = rng.random()
    if roll < 0.35:
        return [False] * n
    if roll < 0.04 + 0.35:
        return [True] * n  # Kafka refuses: all brokers fenced
    if roll < 0.5:
        keep = rng.randrange(n)  # one unfenced broker left
        return [i != keep for i in range(n)]
    share = rng.random() * 0.6
    return [rng.random() < share for _ in range(n)]


def striped_cases(count: int, seed: int) -> list[Case]:
    """``StripedReplicaPlacer.place`` cases: one placer (one seeded ``Random``) placing one to
    three topics in turn, on brokers with or without racks and with fenced brokers. Our
    assignor is called directly (Kafka's messages) and, for its answers, through ``place``."""
    rng = random.Random(seed)
    cases = []
    for i in range(count):
        n = 0 if rng.random() < 0.005 else rng.randint(1, 60)
        layout = _layout(rng, colliding=10)
        ids = _broker_ids(rng, n)
        brokers: Brokers = list(zip(ids, _racks(rng, n, layout), _fenced(rng, n) if n else [], strict=True))
        cluster = ClusterView.of([(b, r) for b, r, _ in brokers], fenced={b for b, _, f in brokers if f})
        draw_seed = rng.randrange(-(2**63), 2**63)
        specs = []
        for _ in range(rng.choices([1, 2, 3], weights=[80, 12, 8])[0]):
            n_partitions = _partitions(rng)
            start = 0 if rng.random() < 0.7 else rng.randint(1, 50)
            specs.append((start, max(0, n_partitions), _replication_factor(rng, n)))

        def ours(cluster=cluster, specs=specs, draw_seed=draw_seed) -> str:
            def compute() -> list[dict[int, list[int]]]:
                placer_rng = JavaRandom(draw_seed)
                topics = []
                for k, (start, n_partitions, rf) in enumerate(specs):
                    ids = range(start, start + n_partitions)
                    got = StripedReplicaAssignor().assign_replicas_to_brokers(
                        "t", ids, rf, cluster, rng=placer_rng)
                    if n_partitions:
                        _check_striped_framework(cluster, ids, rf, draw_seed + k)
                    topics.append(got)
                return topics
            return _answer(compute)
        fenced_kind = "all fenced" if n and all(f for *_, f in brokers) else (
            "some fenced" if any(f for *_, f in brokers) else "none fenced")
        line = f"S {i} {draw_seed} {','.join(f'{s}/{p}/{r}' for s, p, r in specs)} {_token(brokers)}"
        cases.append(Case(line, ours, f"racks {layout}, {fenced_kind}"))
    return cases


def _check_striped_framework(cluster: ClusterView, ids: range, rf: int, seed: int) -> None:
    """The framework (checks, validation, fenced brokers: assignors/fencing.py) around the striped
    assignor, for a request the placer answered: the placer's own answer when nothing is fenced;
    with fenced brokers, the placer's answer over the unfenced brokers (Kafka's placer over the
    brokers it is given), and where they are fewer than the replication factor, over them with
    a replication factor of their number, followed by fenced brokers only."""
    framed = place(StripedReplicaAssignor(), "t", ids, rf, cluster, rng=JavaRandom(seed))
    view = cluster.without_fenced() if cluster.fenced else cluster
    usable = min(rf, len(view.brokers))
    alone = StripedReplicaAssignor().assign_replicas_to_brokers("t", ids, usable, view, rng=JavaRandom(seed))
    assert {p: r[:usable] for p, r in framed.items()} == alone
    assert all(set(r[usable:]) <= cluster.fenced for r in framed.values())


def default_fenced_cases(count: int, seed: int) -> list[Case]:
    """The ``default`` assignor through the framework on clusters with fenced brokers, against
    ``AdminUtils.assignReplicasToBrokers`` given the unfenced brokers only (what Kafka-exact means
    with fenced brokers: assignors/fencing.py). Where the unfenced brokers are fewer than the
    replication factor, Kafka is asked for a replication factor of their number, and our answer's
    first replicas must be Kafka's (the framework adds fenced followers after them). A new topic,
    or partitions added to a topic whose replicas (partition 0's leader too) may be on fenced
    brokers."""
    rng = random.Random(seed)
    cases = []
    for i in range(count):
        n = rng.randint(2, 60)
        layout = rng.choice(["none", "even", "uneven"])
        ids = _broker_ids(rng, n)
        brokers = [BrokerMetadata(b, r) for b, r in zip(ids, _racks(rng, n, layout), strict=True)]
        share = rng.random() * 0.7
        fenced = {b for b in ids if rng.random() < share}
        if len(fenced) == n:
            fenced.discard(rng.choice(ids))
        unfenced = sorted((b for b in brokers if b.id not in fenced), key=lambda b: b.id)
        rf = rng.randint(1, n)
        usable = min(rf, len(unfenced))
        n_partitions = _partitions(rng)
        draw_seed = rng.randrange(-(2**63), 2**63)
        if rng.random() < 0.6:
            entry, fixed, start_id, current = "new topic", -1, -1, {}
        else:
            entry = "add partitions"
            existing = rng.randint(1, 50)
            order = sorted(ids)
            offset = rng.randrange(n)
            current = {p: [order[(offset + p + j) % n] for j in range(rf)] for p in range(existing)}
            leader = current[0][0]
            fixed = max(0, next((j for j, b in enumerate(unfenced) if b.id >= leader), -1))
            start_id = existing
        cluster = ClusterView.of(brokers, fenced=fenced, topics={"t": current} if current else {})
        first = max(0, start_id)

        def ours(cluster=cluster, first=first, n_partitions=n_partitions, rf=rf, usable=usable,
                 draw_seed=draw_seed) -> str:
            def compute() -> list[dict[int, list[int]]]:
                got = place(DefaultReplicaAssignor(), "t", range(first, first + max(0, n_partitions)), rf, cluster,
                            rng=JavaRandom(draw_seed))
                assert all(set(r[usable:]) <= cluster.fenced for r in got.values())
                return [{p: r[:usable] for p, r in got.items()}]
            return _answer(compute)
        line = (f"A {i} {draw_seed} {fixed} {start_id} {n_partitions} {usable} "
                f"{_token([(b.id, b.rack, False) for b in unfenced])}")
        cases.append(Case(line, ours, f"{entry}, racks {layout}, {'fallback' if rf > usable else 'enough'}"))
    return cases


def _compare(cases: list[Case], lib) -> None:
    try:
        answers = kafka_oracle.ask([c.line for c in cases], lib)
    except kafka_oracle.OracleUnavailable as exc:
        pytest.fail(str(exc), pytrace=False)
    refused = 0
    differences = []
    for case, answer in zip(cases, answers, strict=True):
        number, kafka = answer.split(" ", 1)
        assert number == case.line.split(" ", 2)[1], f"answers out of order at {answer[:40]!r}"
        refused += kafka.startswith("ERR")
        mine = case.ours()
        if mine != kafka:
            differences.append(f"{case.kind}: {case.line}\n  kafka: {kafka[:300]}\n  ours:  {mine[:300]}")
    assert not differences, f"{len(differences)} of {len(cases)} cases differ from Kafka:\n" + "\n".join(
        differences[:5])
    # the cases cover what they claim: answers and refusals both
    assert 0 < refused < len(cases) // 4


def test_generated_cases_cover_the_ranges():
    """Brokers 1-60, every rack layout and entry point, RF up to the brokers and beyond,
    partitions up to 200, fenced brokers: a change to the generator cannot quietly shrink it."""
    default = default_cases(DEFAULT_CASES, SEED)
    striped = striped_cases(STRIPED_CASES, SEED + 1)
    assert len(default) >= 2000 and len(striped) >= 2000
    kinds = {c.kind for c in default}
    for entry in ("function", "new topic", "add partitions"):
        for layout in ("none", "even", "uneven", "mixed"):
            assert f"{entry}, racks {layout}" in kinds
    assert {c.kind.split(", ")[1] for c in striped} == {"none fenced", "some fenced", "all fenced"}
    assert {c.kind.split(", ")[0] for c in striped} == {f"racks {layout}" for layout in (
        "none", "even", "uneven", "mixed", "colliding")}
    sizes = [len(c.line.split(" ")[7].split(",")) for c in default]
    assert min(sizes) == 1 and max(sizes) == 60
    assert max(int(c.line.split(" ")[5]) for c in default) == 200
    assert any(int(c.line.split(" ")[6]) > len(c.line.split(" ")[7].split(",")) for c in default)


def test_default_matches_kafka_admin_utils(kafka_lib):
    _compare(default_cases(DEFAULT_CASES, SEED), kafka_lib)


def test_generated_fenced_cases_cover_the_ranges():
    cases = default_fenced_cases(DEFAULT_FENCED_CASES, SEED + 2)
    assert {c.kind for c in cases} == {f"{entry}, racks {layout}, {kind}" for entry in ("new topic", "add partitions")
                                       for layout in ("none", "even", "uneven") for kind in ("enough", "fallback")}


def test_default_over_the_unfenced_brokers_matches_kafka_admin_utils(kafka_lib):
    _compare(default_fenced_cases(DEFAULT_FENCED_CASES, SEED + 2), kafka_lib)


def test_striped_matches_kafka_striped_replica_placer(kafka_lib):
    _compare(striped_cases(STRIPED_CASES, SEED + 1), kafka_lib)
