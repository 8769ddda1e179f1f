"""Rack diversity: a partition's replicas span as many racks (at every level) as they can.

Goals
    Every partition whose replicas span fewer groups at some level of the rack tree
    (:mod:`kafka_replica_assignor.planner.racks`) than they could is *repaired* (a target: the first of the soft
    ones); diversity is never reduced by any move of any goal (:meth:`RackDiversityGoal.accepts`,
    a hard rule). Distance: the groups partitions lack, summed.

Constraints
    - Ranks after repair (a replica on a dead broker is repaired first, onto a rack the
      partition lacks) and the hard rules of the request and of capacity, before topic spread,
      counts and bytes: a repair may push a topic above its cap (the receiver honours the caps
      when one fits).
    - Partitions out of scope and replicas on excluded brokers stay.

Algorithm
    For a partition whose replicas span fewer groups at some level than they could, a replica
    of a doubled group moves to the broker of an unused
    group furthest below the byte band that takes it within the topic caps (:func:`filler`:
    the bytes the band must bring there anyway carry the repair), else to the least loaded
    broker of an unused group (:func:`kafka_replica_assignor.planner.goals.search.receiver`). A replica leaving a doubled
    group for a new one keeps every level's diversity, and the group it takes is new at every
    deeper level too, so the replica chosen is first the one whose leaving leaves the others
    lacking the fewest groups below (:func:`left_short`: one move where another choice needs
    two), then a follower, then the one on the most loaded broker; but the leader first when its
    broker is above the byte band by more than the bytes it follows (only leader replicas can
    take those bytes off it, so that leader change is the plan's anyway) and no follower's
    broker is above the band. The partitions are repaired in their order, except that where
    more of a topic's partitions lack only one group than the topic's caps let that group's
    brokers below the byte band take (the repairs :func:`filler` lands there), they go largest
    first (:func:`scarce_first`): that room then carries the most of the bytes the band must
    bring there anyway. Both searches, within the topic caps,
    leave out the racks under a node holding the topic at its cap
    (:meth:`~kafka_replica_assignor.planner.goals.topic_spread.TopicSpreadGoal.open_racks`): none of
    their brokers fits, and a data centre at a topic's cap would otherwise be scanned broker by
    broker for every partition of the topic it lacks. Lower bounds: one replica move (and its
    bytes) per group a partition lacks.

    Exact program, per level and partition: ``u[p, g] <= sum(x[p, b] for b in g)``, ``u <= 1``;
    ``sum_g u[p, g] >=`` the groups it spans now (hard: never reduced) and ``>= min(RF,
    groups)`` (the target). Bound (rows 3, 4 and 9 of :mod:`kafka_replica_assignor.planner.solving.bound`): bytes a
    crowded group must give leave it for brokers outside it; a group a partition lacks, or
    loses its only replica in, takes one; every group lacking costs its partition's bytes; a
    set of groups ends holding what full diversity lets it hold (a byte band beyond that is
    out of reach, and the bound leaves it out).

Example
    Brokers 1, 2 in rack a, 3 in rack b; ``y-1 [1, 2]`` lacks rack b: its follower leaves 2 for
    3 -> ``y-1 [1, 3]``: one move, the bound.
"""

from __future__ import annotations

import math
from collections import Counter
from heapq import merge
from itertools import chain, islice
from typing import TYPE_CHECKING, Any, ClassVar

from kafka_replica_assignor.cluster.snapshot import ClusterSnapshot
from kafka_replica_assignor.planner.goals.goal import BoundProgram, ExactProgram, Goal, ReportView, Target, blame
from kafka_replica_assignor.planner.goals.model import Model
from kafka_replica_assignor.planner.goals.search import ANY, receiver
from kafka_replica_assignor.planner.goals.topic_spread import TopicSpreadGoal
from kafka_replica_assignor.planner.plan import MoveKind, Working
from kafka_replica_assignor.planner.racks import RackTree

if TYPE_CHECKING:
    from collections.abc import Callable, Collection, Iterable

FILLERS = 16        # brokers below the byte band looked at for one repair, emptiest first


class RackDiversityGoal(Goal):
    """Repair rack diversity; refuse any move that reduces it (module doc)."""

    name = "rack diversity"
    key = "diversity"
    target = True
    hard = True         # never reduced; full diversity is the target (its soft rows)
    phase = "once"
    courtesy: tuple[int, TopicSpreadGoal | None]
    """While repairing: the rank asking the topic caps too, and the goal keeping them."""
    followed: Counter[int]
    """While repairing: per broker, the bytes of the replicas it follows (:meth:`sources`)."""
    bound_text: ClassVar[dict[str, str]] = {
        "diversity_repairs_needed": "replica moves lower bound (any threshold): one per missing rack of a partition",
        "diversity_bytes_needed": "bytes moved lower bound (any threshold): bytes repaired + each partition's "
                                  "size times the racks it lacks"}

    def accepts(self, i: int, source: int, destination: int) -> bool:
        m = self.m
        return m.leaf[destination] in m.allowed_leaves(i, source)

    def record_bounds(self) -> None:
        """One move (and its bytes) per group a partition lacks, whatever the plan."""
        m = self.m
        work = m.work
        gap = gaps(work)
        work.bounds["diversity_repairs_needed"] = sum(gap)
        if m.sized:
            fixed = {i for i, _, _, kind in work.moves if kind is MoveKind.REPAIR}
            repaired = sum(m.size[i] for i in fixed)
            work.bounds["diversity_bytes_needed"] = repaired + sum(
                m.size[i] * g for i, g in enumerate(gap) if g and i not in fixed)

    def optimize(self) -> int:
        before = self.m.moved
        self.repair_diversity()
        return self.m.moved - before

    def distance(self) -> int:
        return sum(gaps(self.work))

    def exact_rows(self, program: ExactProgram) -> None:
        tree, eligible = self.work.tree, program.brokers
        if tree.depth == 0:
            return
        parts = program.work.snapshot.partitions
        eset = set(eligible)
        groups = tree.groups(eligible)
        for level in range(tree.depth):
            members: dict[int, list[int]] = {}
            for k, b in enumerate(eligible):
                members.setdefault(tree.keys[b][level], []).append(k)
            for i in program.parts:
                rf = len(parts[i].replicas)
                if rf < 2:
                    continue
                full = min(rf, groups[level])
                now = len({tree.keys[b][level] for b in parts[i].replicas if b in eset})
                u = []
                for ks in members.values():
                    col = program.column(0, 1, False)
                    u.append(col)
                    program.row(-math.inf, 0, [col] + [program.x[i][k] for k in ks], [1.0] + [-1.0] * len(ks),
                                "hard")
                if now:
                    program.row(min(now, full), math.inf, u, [1.0] * len(u), "hard")   # never reduced
                if full > now:
                    program.row(full, math.inf, u, [1.0] * len(u), self.key)

    def bound_rows(self, program: BoundProgram) -> None:
        """Rows (3), (4) and (9) of the bound's module doc."""
        import numpy as np  # the planner extra, loaded when planning

        p: Any = program
        p.diverse = True
        fig, scale, outs, ins = p.fig, p.scale, p.outs, p.ins
        for mask, least, most, _, _ in fig.holds if p.holds else ():   # (9): a set of groups holds what diversity lets it
            members = np.flatnonzero(mask)
            held = float(fig.before[members].sum())
            p.row((least - held) / scale, (most - held) / scale, np.concatenate([ins[members], outs[members]]),
                  np.concatenate([np.ones(len(members)), -np.ones(len(members))]))
        for mask, excess, deficit, holding, sole in fig.nodes:
            if excess > 0:      # d_b <= min(out_b, X_n,b), sum(d_b, b in n) >= E_n
                members = np.flatnonzero(mask)
                ds = p.columns(np.zeros(len(members)), holding[members] / scale)
                p.pairs(ds, outs[members], np.full(len(ds), -math.inf), np.zeros(len(ds)))
                p.row(excess / scale, math.inf, ds, np.ones(len(ds)))
                p.row(excess / scale, math.inf, ins[~mask], np.ones(int((~mask).sum())))
            members = np.flatnonzero(mask & (sole > 0))
            if len(members):    # e_b >= out_b - (movable_b - Z_n,b): sole replicas that leave
                es = p.columns(np.zeros(len(members)), sole[members] / scale)
                p.pairs(outs[members], es, np.full(len(es), -math.inf), (fig.movable[members] - sole[members]) / scale)
                p.row(deficit / scale, math.inf, np.concatenate([ins[mask], es]),
                      np.concatenate([np.ones(int(mask.sum())), -np.ones(len(es))]))
            elif deficit > 0:
                p.row(deficit / scale, math.inf, ins[mask], np.ones(int(mask.sum())))
        need = (fig.dead + fig.gap_bytes) / scale
        p.row(need, math.inf, ins, np.ones(len(ins)))

    @staticmethod
    def targets(view: ReportView) -> tuple[Target, ...]:
        before, after = view.before.not_diverse, view.after.not_diverse
        missed = (f"partitions lacking rack diversity: {after} after the plan, target 0: "
                  + blame(view, True, "diversity")) if after else ""
        return (Target("partitions lacking rack diversity", before, after, 0, not after, 1, missed),)


    def repair_diversity(self) -> None:
        m = self.m
        tree = m.tree
        if tree.depth == 0:
            return
        groups = m.tree.groups(m.work.eligible)
        spread = m.goal("topics")     # the topic caps too, when a broker keeps them
        self.courtesy = m.rank("topics") + 1, spread if isinstance(spread, TopicSpreadGoal) else None
        # per broker, the bytes of the replicas it follows: a broker above the byte band by
        # more than these must move leader replicas anyway (nothing else lowers its bytes)
        followed: Counter[int] = Counter()
        for k, reps in enumerate(m.reps):
            for b in reps[1:]:
                followed[b] += m.size[k]
        self.followed = followed
        stuck = 0
        order = scarce_first(m, spread, groups) if m.sized and isinstance(spread, TopicSpreadGoal) else m.work.order
        for i in order:
            reps = m.reps[i]
            if len(reps) < 2 or not m.work.eligible_set.issuperset(reps) or i in m.work.frozen:
                continue
            while m.budget_left():
                lack = first_lack(tree, reps, groups)
                if lack is None:
                    break
                if not self.fix_diversity(i, lack[0], groups):
                    stuck += 1
                    break
        if stuck:
            m.work.notes.append(
                f"{stuck} partition(s) still lack rack diversity: the heuristic found no broker of "
                "the racks they lack with room (capacity_bytes) for a replica allowed to leave its "
                "doubled rack (max leader changes); a search, not a proof that none exists")

    def fix_diversity(self, i: int, level: int, groups: tuple[int, ...]) -> bool:
        m = self.m
        tree = m.tree
        reps = m.reps[i]
        seen: dict[int, int] = {}
        for b in reps:
            key = tree.keys[b][level]
            seen[key] = seen.get(key, 0) + 1
        sources = self.sources(i, [b for b in reps if seen[tree.keys[b][level]] > 1], level, groups)
        free = [leaf for leaf, members in m.leaf_members.items() if tree.keys[members[0]][level] not in seen]
        courtesy, spread = self.courtesy
        # per source, the racks whose brokers the topic caps may let in: under a node holding
        # the topic at its cap none fits, so the searches within the caps look at none of them
        # (found when first asked, the nodes' counts read once for all sources)
        at_cap: dict[int, bool] = {}
        opened: dict[int, list[int]] = {}

        def open_to(x: int) -> list[int]:
            got = opened.get(x)
            if got is None:
                got = opened[x] = free if spread is None else spread.open_racks(m.topic[i], (x,), free, at_cap)[x]
            return got
        below = below_band(m, free)     # the same for every source: looked up once
        for x in sources if below else ():
            best = filler(m, i, x, below, courtesy, set(open_to(x)))
            if best is not None:
                self.move(i, x, best)
                return True
        for upto in (courtesy, self.rank):   # diversity comes before the topic caps
            for x in sources:
                leaves = open_to(x) if upto == courtesy else free
                best = receiver(m, i, x, leaves, mode=ANY, upto=upto) if leaves else None
                if best is not None:
                    self.move(i, x, best)
                    return True
        return False

    def sources(self, i: int, doubled: list[int], level: int, groups: tuple[int, ...]) -> list[int]:
        """Partition ``i``'s replicas of ``doubled`` (in a group shared at ``level``) in the
        order they are tried (module doc)."""
        m = self.m
        reps = m.reps[i]
        sources = sorted((b for b in doubled if b not in m.work.excluded),
                         key=lambda b: (b == reps[0], -m.load_key(b)[0], -m.sizes[b], b))
        lead = reps[0]
        if (len(sources) > 1 and sources[-1] == lead and m.sizes[lead] - m.upper(lead) > self.followed[lead]
                and not any(m.sizes[b] > m.upper(b) for b in sources[:-1])):
            sources.insert(0, sources.pop())    # a leader replica must leave that broker anyway
        if level + 1 < m.tree.depth and len(sources) > 1:     # the one whose leaving ends the deeper lack first
            sources.sort(key=left_short(m.tree, reps, level, groups))
        return sources

    def move(self, i: int, x: int, y: int) -> None:
        """The repair ``x -> y`` of partition ``i``, the bytes each broker follows kept."""
        if self.m.reps[i][0] != x:
            self.followed[x] -= self.m.size[i]
            self.followed[y] += self.m.size[i]
        self.m.do_move(i, x, y)


def scarce_first(m: Model, spread: TopicSpreadGoal, groups: tuple[int, ...]) -> list[int]:
    """The partitions in the order rack diversity repairs them: ``m.work.order``, except that
    where more of a topic's partitions must be repaired into a group (:func:`groups_lacked`)
    than the topic's caps let its brokers below the byte band take (:func:`filler` lands
    repairs there), and the largest of them that fit bring no more than the bytes the band
    asks for there, those partitions take their places largest first: the room goes to the
    most bytes the band must bring there anyway."""
    tree = m.tree
    below = [y for y in m.work.eligible if m.sizes[y] < m.blo]
    order = list(m.work.order)
    if not below:
        return order
    fillers: dict[tuple[int, int], list[int]] = {}      # (level, group) -> its brokers below the band
    for y in below:
        for level in range(tree.depth):
            fillers.setdefault((level, tree.keys[y][level]), []).append(y)
    at_level = [{g for lv, g in fillers if lv == level} for level in range(tree.depth)]
    crowded: dict[int, set[int]] = {}      # topic -> the places its partitions take largest first
    for (t, level, g), places in groups_lacked(m, order, at_level, groups).items():
        if len(places) < 3:     # a cap is at least 2
            continue
        ys = fillers[level, g]
        room = room_for(m, spread, t, ys, len(places))
        if room < len(places):
            sizes = sorted((m.size[order[k]] for k in places), reverse=True)
            if sum(sizes[:room]) <= sum(m.blo - m.sizes[y] for y in ys):
                crowded.setdefault(t, set()).update(places)
    for places in map(sorted, crowded.values()):
        for k, i in zip(places, sorted((order[k] for k in places), key=lambda i: -m.size[i]), strict=True):
            order[k] = i
    return order


def room_for(m: Model, spread: TopicSpreadGoal, t: int, brokers: list[int], enough: int) -> int:
    """The replicas of topic ``t`` that ``brokers`` may still take within its caps, counted
    up to ``enough``: first with each cap's least (2), then with the caps themselves (a
    water filling each, asked only when the least does not reach ``enough``)."""
    chain, held = m.chain, m.n
    least = 0
    for y in brokers:
        least += max(0, 2 - held(t, chain[y][-1]))
        if least >= enough:
            return least
    room = 0
    for y in brokers:
        node = chain[y][-1]
        room += max(0, spread.cap(t, node) - held(t, node))
        if room >= enough:
            break
    return room


def groups_lacked(m: Model, order: list[int], at_level: list[set[int]],
                  groups: tuple[int, ...]) -> dict[tuple[int, int, int], list[int]]:
    """Per (topic, level, group of ``at_level[level]``): the places in ``order`` of the
    partitions of the topic whose repair must go to that group: at the first level they lack
    one (the level repaired first), it is the only group they lack (a partition lacking two has
    another way, and need not take that group's room)."""
    gap = gaps(m.work)
    out: dict[tuple[int, int, int], list[int]] = {}
    for k, i in enumerate(order):
        lack = first_lack(m.tree, m.reps[i], groups) if gap[i] else None
        if lack is not None and groups[lack[0]] - len(lack[1]) == 1:    # the one group its repair may go to
            level, have = lack
            for g in at_level[level] - have:
                out.setdefault((m.topic[i], level, g), []).append(k)
    return out


def first_lack(tree: RackTree, reps: list[int], groups: tuple[int, ...]) -> tuple[int, set[int]] | None:
    """The first level where ``reps`` span fewer groups than they could (the level repaired
    first), with the groups they span there; None when fully diverse."""
    for level in range(tree.depth):
        have = {tree.keys[b][level] for b in reps}
        if len(have) < min(len(reps), groups[level]):
            return level, have
    return None


def left_short(tree: RackTree, reps: list[int], level: int, groups: tuple[int, ...]) -> Callable[[int], int]:
    """Per replica ``x`` of ``reps``: the groups its partition would still lack below ``level``
    once ``x`` leaves for a group it lacks at ``level``. That group is new at every deeper
    level too (the tree nests), so a level counts the others' groups plus one: the groups
    of all, less one when ``x`` is alone in its own. A replica whose leaving leaves 0 makes
    one move of what would otherwise be two."""
    levels = range(level + 1, tree.depth)
    tally = [Counter(tree.keys[b][lv] for b in reps) for lv in levels]
    room = [min(len(reps), groups[lv]) - 1 - len(t) for lv, t in zip(levels, tally, strict=True)]

    def short(x: int) -> int:
        keys = tree.keys[x]
        return max(r + (t[keys[lv]] == 1) for lv, t, r in zip(levels, tally, room, strict=True))
    return short


def below_band(m: Model, leaves: Iterable[int]) -> list[tuple[int, int]]:
    """``(bytes, broker)`` of the brokers of ``leaves`` below the byte band's bottom, emptiest
    first, of the first :data:`FILLERS` (none without sizes): the brokers :func:`filler` asks."""
    if not m.sized:
        return []
    out = []
    for s, y in islice(merge(*(m.leaf_bytes[lf] for lf in leaves)), FILLERS):
        if s >= m.blo:
            break
        out.append((s, y))
    return out


def filler(m: Model, i: int, x: int, below: list[tuple[int, int]], upto: int, open_leaves: Collection[int]) -> int | None:
    """Of ``below`` (:func:`below_band`), the broker furthest below the byte band that may take
    partition ``i``'s replica from ``x`` (hard rules and topic caps kept) and stays within the
    band's top: the bytes the band needs moved there anyway carry the repair. None when none
    fits. ``open_leaves``: the leaves where the topic caps may let a broker take it (the
    others are not asked: :meth:`Model.fits` would refuse)."""
    w = m.size[i]
    leaf = m.leaf
    for s, y in below:
        if s + w <= m.upper(y) and leaf[y] in open_leaves and m.fits(i, x, y, upto, leaf_known=True):
            return y
    return None


def gaps(work: Working) -> list[int]:
    """Per partition (by position), the groups it could still span at its worst level of the
    rack tree: 0 when diverse, or when a replica is not on an eligible broker; with numpy, one
    pass per replication factor and level."""
    import numpy as np  # the planner extra, loaded when planning

    tree, eligible = work.tree, work.eligible
    lists = work.replicas
    out = np.zeros(len(lists), dtype=np.int64)
    if tree.depth == 0 or not lists or not eligible:
        return [0] * len(lists)
    ids = np.asarray(eligible, dtype=np.int64)
    keys = np.asarray([tree.keys[b] for b in eligible], dtype=np.int64).reshape(len(eligible), tree.depth)
    groups = tree.groups(eligible)
    rf = np.fromiter(map(len, lists), dtype=np.int64, count=len(lists))
    flat = np.fromiter(chain.from_iterable(lists), dtype=np.int64, count=int(rf.sum()))
    offsets = np.cumsum(rf) - rf
    for r in map(int, np.unique(rf)):
        if r < 2:
            continue
        rows = np.flatnonzero(rf == r)
        reps = flat[offsets[rows][:, None] + np.arange(r)]
        pos = np.searchsorted(ids, reps).clip(0, len(ids) - 1)
        usable = (ids[pos] == reps).all(axis=1)
        rows, pos = rows[usable], pos[usable]
        worst = np.zeros(len(rows), dtype=np.int64)
        for level in range(tree.depth):
            grid = np.sort(keys[pos, level], axis=1)
            distinct = 1 + (grid[:, 1:] != grid[:, :-1]).sum(axis=1)
            worst = np.maximum(worst, min(r, groups[level]) - distinct)
        out[rows] = worst
    gap: list[int] = out.tolist()
    return gap


def lacking(snapshot: ClusterSnapshot) -> int:
    """The report's figure: partitions whose replicas on alive brokers span fewer groups at some
    level of the alive brokers' rack tree than ``min(replicas, groups at that level)``, counted
    with numpy."""
    import numpy as np  # the planner extra, loaded when planning

    alive = sorted(b.id for b in snapshot.brokers if b.alive)
    tree = RackTree.of({b.id: b.rack for b in snapshot.brokers if b.alive})
    lists = [p.replicas for p in snapshot.partitions]
    if tree.depth == 0 or not lists:
        return 0
    rf = np.fromiter(map(len, lists), dtype=np.int64, count=len(lists))
    flat = np.fromiter(chain.from_iterable(lists), dtype=np.int64, count=int(rf.sum()))
    owner = np.repeat(np.arange(len(lists), dtype=np.int64), rf)
    column = np.arange(len(flat), dtype=np.int64) - np.repeat(np.cumsum(rf) - rf, rf)
    ids = np.asarray(alive, dtype=np.int64)
    pos = np.searchsorted(ids, flat).clip(0, max(0, len(ids) - 1))
    known = (ids[pos] == flat) if len(ids) else np.zeros(len(flat), dtype=bool)
    groups = tree.groups(alive)
    short = np.zeros(len(lists), dtype=bool)
    for level in range(tree.depth):
        key_of = np.array([tree.keys[b][level] for b in alive], dtype=np.int64)
        grid = np.full((len(lists), int(rf.max())), -1, dtype=np.int64)
        grid[owner[known], column[known]] = key_of[pos[known]]
        grid.sort(axis=1)
        new = grid >= 0
        new[:, 1:] &= grid[:, 1:] != grid[:, :-1]
        short |= new.sum(axis=1) < np.minimum(rf, groups[level])
    return int(np.count_nonzero(short))
