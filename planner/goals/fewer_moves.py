"""Fewer bytes moved: undo what the other goals' moves turned out not to need.

Goals
    The same targets for fewer bytes moved (fewer replica moves when nothing is sized). The
    other goals move one replica at a time towards their own figure, so some of their moves are
    not needed by the end: a replica that went to a broker that could have kept its old one, a
    broker that took bytes another broker could have taken. An *undo* puts a moved replica
    back on a broker of its partition's input list; every figure the goals before this one
    reached stays reached, and none gets worse.

Constraints
    - Ranks after bytes and before leaders: it runs once, after the rounds of the other replica
      goals. Every move it makes keeps rack diversity (the racks a replica may go to, as for
      any goal), the capacities, the topic caps at every node of the rack tree
      (``Model.caps_ok``) and the scope; a broker's replica count stays in ``[lo, hi]`` and its
      bytes in ``[blo, min(bhi, capacity)]``, or no further out than the plan had left them.
    - An undo needs the input broker to be eligible and not excluded; with ``--add-brokers`` it
      may return a replica to a broker that is not added (it held it before the plan).
    - The goal runs when the plan changed at most :data:`GREEDY_PARTITIONS` partitions (a note
      says when it did not).
    - The solver stage runs only while the plan moves more than :data:`SOLVER_GAP` above the
      largest of its lower bounds, and needs no move or leader budget (moves that only hold
      together are made together, and undone together when the check fails), at most
      :data:`SOLVER_PARTITIONS` partitions changed by the plan and :data:`SOLVER_COLUMNS`
      candidates (the greedy stage always runs). A linear program solved by the simplex method gives the same answer on
      every run; its time limit is only a safety net: reaching it ends the command (exit 1).

Algorithm
    1. Candidates: per partition the plan changed, each replica on a broker outside the input
       list paired with each input broker the partition left (an undo; it gains the partition's
       size, or one move when unsized), and, for the solver, redirects: a replica moved onto a
       broker that an undo found full sent instead to one of the :data:`REDIRECT` emptiest other
       brokers of its rack, one moved into a rack with a broker an undo found short (at the
       bottom of its band) sent to that broker. A redirect gains nothing itself but makes room
       for undos: a broker at the top of its band takes a replica back once another leaves it.
    2. Greedy: undos by gain, largest first, each made when the rules above hold, in up to
       :data:`GREEDY_PASSES` passes.
    3. Solver: the candidates as a 0-1 program (HiGHS) in its linear relaxation: at most one
       per partition; per broker its count and bytes in the bounds above; per topic and
       rack-tree node its replicas at most the cap as it stands; maximise the gain. The candidates it takes at more than one half are made one
       by one where each keeps every rule on its own, in passes; those left (a rotation whose
       every step breaks a band) are made together and kept only if a check of the whole
       passes (bands, caps at every node touched, diversity, capacities); when it does not,
       they are taken back one at a time, last first, each whose return lessens how far the goals
       before are from where they were, and the rest kept once the check passes (else all are
       undone). Then the greedy again.

    This goal also owns the plan's cost, the figure it lowers: bytes moved (the sizes of the
    replicas a broker receives), then replica moves, then leader replicas moved. The exact
    program minimises them in that order (:meth:`FewerMovesGoal.exact_rows`), and the bound is
    a lower bound of the first.

Example
    Brokers 1-4 without racks, threshold 10 %, 100 bytes each of ``a-0`` and ``b-0`` on broker
    1, ``c-0`` on 2 and ``d-0`` on 3 (count band ``[1, 1]``). A plan moving ``a-0`` to 4 and
    rotating ``b-0`` 1 -> 2, ``c-0`` 2 -> 3, ``d-0`` 3 -> 1 reaches every band and moves 400
    bytes. No single undo keeps the count band (each puts two replicas on a broker); the
    relaxation takes the three undos, they are made together and pass the check: 100 bytes
    move, the optimum (``tests/unit/test_fewer_moves.py``).
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

from kafka_replica_assignor.planner.goals.goal import ExactProgram, Goal
from kafka_replica_assignor.planner.goals.replica_bytes import bounds_that_hold
from kafka_replica_assignor.planner.plan import Working
from kafka_replica_assignor.planner.request import PlanError

GREEDY_PARTITIONS = 100_000
"""Partitions changed by the plan above which the goal does not run (its greedy stage costs
about 1.5 s per 100,000 changed partitions on the 2-core machine)."""

GREEDY_PASSES = 2
"""Passes of the greedy stage: the first makes nearly every undo it will make, the second the
few the first opened (a third found none on the benchmark snapshots)."""

REDIRECT = 1
"""Other brokers of the moved replica's rack offered to the solver, emptiest first."""

SOLVER_PARTITIONS = 20_000
"""Partitions changed by the plan above which the solver stage is left out (about a second
per 10,000 changed partitions)."""

SOLVER_GAP = 0.02
"""The solver stage is left out when the plan already moves at most this much above its
lower bound."""

SOLVER_COLUMNS = 40_000
"""Candidates above which the solver stage is left out."""

TIME_LIMIT = 300.0
"""Seconds per solve: a safety net; reaching it ends the command (exit 1), never with another plan."""


Move = tuple[int, int, int]     # (partition, source, destination)


def cost(work: Working) -> tuple[int, int, int]:
    """The plan's cost so far, this goal's figure: ``(bytes moved, replica moves, leader
    replicas moved)`` from the input's lists to ``work``'s (a replica arriving on a broker is
    one move; its partition's size is what it copies)."""
    moved_bytes = moves = leaders = 0
    parts = work.snapshot.partitions
    for i in work.touched:
        old, new = work.original[i], work.replicas[i]
        came = len(set(new) - set(old))
        moves += came
        moved_bytes += came * (parts[i].size_bytes or 0)
        leaders += bool(old) and old[0] not in new
    return moved_bytes, moves, leaders


class FewerMovesGoal(Goal):
    """Undo moves the plan did not need (module doc)."""

    name = "fewer moves"
    key = "moves"
    phase = "last"
    bound_text: ClassVar[dict[str, str]] = {
        "bytes_moved_optimum": "bytes moved, the exact program's optimum for the targets it keeps",
        "replica_moves_optimum": "replica moves, the exact program's optimum for the targets it keeps"}

    def exact_rows(self, program: ExactProgram) -> None:
        """The plan's cost as the exact program's objective, in phases: bytes moved (replicas
        kept weigh minus their size), then replica moves, then leader replicas moved."""
        parts = program.work.snapshot.partitions
        pos = {b: k for k, b in enumerate(program.brokers)}
        keep = [(i, [pos[b] for b in parts[i].replicas if b in pos]) for i in program.parts]
        sized = {program.x[i][k]: -(parts[i].size_bytes or 0) / program.scale
                 for i, ks in keep for k in ks if parts[i].size_bytes}
        if sized:
            program.objective(sized, "bytes moved")
        n = len(program.parts) + 1
        leader = {i: pos.get(parts[i].replicas[0], -1) for i in program.parts}
        program.objective({program.x[i][k]: -(n + (k == leader[i])) for i, ks in keep for k in ks},
                          "replica moves, then leader replicas moved")

    def optimize(self) -> int:
        m = self.m
        before, gained = m.moved, 0
        if len(m.work.touched) > GREEDY_PARTITIONS:
            m.work.notes.append(f"fewer moves: not run ({len(m.work.touched)} partitions changed, above "
                                f"{GREEDY_PARTITIONS})")
            return 0
        gained += self.greedy()
        solver_note = ""
        if m.budget is None and m.leader_budget is None and not self.near_bound():
            more, solver_note = self.solve()
            if more:
                gained += more + self.greedy()
        if gained:
            unit = "bytes" if m.sized else "replica move(s)"
            m.work.notes.append(f"fewer moves: undos saved {gained} {unit} after the other goals"
                                + (f" ({solver_note})" if solver_note else ""))
        return m.moved - before

    def near_bound(self) -> bool:
        """Whether what the plan moves now is within :data:`SOLVER_GAP` of its lower bound
        (the largest recorded that holds, :func:`~kafka_replica_assignor.planner.goals.replica_bytes.bounds_that_hold`:
        there is then too little left for the solver stage to gain)."""
        m = self.m
        work = m.work
        moved = sum(self.gain(i) * sum(1 for b in m.reps[i] if b not in work.original[i]) for i in work.touched)
        held = bounds_that_hold(work.bounds) if m.sized else {
            k: v for k, v in work.bounds.items() if k.startswith("replica_moves_")}
        bound = max(held.values(), default=0)
        return moved <= bound * (1 + SOLVER_GAP)

    # -- candidates and the rules --------------------------------------------------------
    def gain(self, i: int) -> int:
        m = self.m
        return m.size[i] if m.sized else 1

    def undos(self) -> list[Move]:
        """Every undo candidate now, largest gain first (then in partition order)."""
        m = self.m
        work = m.work
        out: list[tuple[int, int, int, int, int]] = []
        for i in sorted(work.touched, key=m.slot.__getitem__):
            if i in work.frozen:
                continue
            reps, original = m.reps[i], work.original[i]
            went = [a for a in original if a not in reps and a in work.eligible_set and a not in work.excluded]
            if not went:
                continue
            for b in reps:
                if b not in original:
                    out.extend((-self.gain(i), m.slot[i], b, a, i) for a in went)
        out.sort()
        return [(i, b, a) for _, _, b, a, i in out]

    def allowed(self, i: int, source: int, destination: int) -> bool:
        """Every goal before this one accepts the move (``Model.fits``: the hard rules, the topic
        caps, and the bands no further out)."""
        return self.m.fits(i, source, destination, self.rank)

    def in_bands(self, i: int, source: int, destination: int) -> bool:
        return not self.full(i, destination) and not self.short(i, source)

    def full(self, i: int, b: int) -> bool:
        """Whether ``b`` taking partition ``i``'s replica leaves its count or byte band (or capacity)."""
        m = self.m
        w = m.size[i]
        return m.counts[b] + 1 > m.hi or bool(w) and m.sizes[b] + w > m.upper(b)

    def short(self, i: int, b: int) -> bool:
        """Whether ``b`` giving partition ``i``'s replica leaves its count or byte band."""
        m = self.m
        w = m.size[i]
        return m.counts[b] - 1 < m.lo or bool(w) and m.sizes[b] - w < m.blo

    def greedy(self) -> int:
        """Step 2 of the module doc; returns the gain. An undo only removes candidates, so the
        list is built once and the next pass retries the ones that did not fit."""
        return self.make(self.undos(), GREEDY_PASSES)[0]

    def make(self, moves: list[Move], passes: int | None = None) -> tuple[int, list[Move]]:
        """Make the ``moves`` that keep every rule on their own, in passes (at most ``passes``)
        while one is made; the gain (undos only) and the moves left."""
        m = self.m
        gained, done = 0, 0
        left = moves
        while left and (passes is None or done < passes):
            rest, made = [], 0
            for i, b, a in left:
                if b not in m.reps[i] or a in m.reps[i]:
                    continue        # that replica or that broker was taken by another move
                if self.allowed(i, b, a):
                    m.do_move(i, b, a)
                    gained += self.gain(i) if a in m.work.original[i] else 0
                    made += 1
                else:
                    rest.append((i, b, a))
            left, done = rest, done + 1
            if not made:
                break
        return gained, left

    # -- the solver stage ----------------------------------------------------------------
    def redirects(self, full: set[int], short: set[int]) -> list[Move]:
        """For the solver: a replica moved onto a broker of ``full`` (an undo could not return a
        replica to it) sent instead to one of the :data:`REDIRECT` emptiest other brokers of its
        rack, and any replica moved onto a broker of a rack holding brokers of ``short`` (an
        undo could not take a replica off them) sent instead to the emptiest of those."""
        m = self.m
        work = m.work
        out: list[Move] = []
        wanting: dict[int, list[int]] = {}      # rack -> brokers of ``short``, emptiest first
        for _, c in m.by_bytes:
            if c in short:
                wanting.setdefault(m.leaf[c], []).append(c)
        flows = work.memo.get("flows")
        takers = []     # the brokers the bound's minimum sends bytes to, the most first
        if isinstance(flows, tuple):
            takers = [b for v, b in sorted(((-v, b) for b, v in flows[1].items() if v > 0))]
        for i in sorted(work.touched, key=m.slot.__getitem__):
            if i in work.frozen:
                continue
            reps, original = m.reps[i], work.original[i]
            for b in reps:
                if b in original:
                    continue
                pools = ([c for _, c in m.leaf_bytes[m.leaf[b]]] if b in full else [], wanting.get(m.leaf[b], []),
                         [c for c in takers if c != b])
                out.extend((i, b, c) for c in self._offered(i, b, pools))
        return out

    def _offered(self, i: int, b: int, pools: tuple[list[int], ...]) -> list[int]:
        """Up to :data:`REDIRECT` brokers of each pool, in its order, that may take partition
        ``i``'s replica from ``b`` (and did not hold it before the plan)."""
        m = self.m
        reps, original = m.reps[i], m.work.original[i]
        offered: list[int] = []
        for pool in pools:
            taken = 0
            for c in pool:
                if taken == REDIRECT:
                    break
                if c != b and c not in reps and c not in original and c not in offered \
                        and m.fits(i, b, c, m.rank("counts")):
                    offered.append(c)
                    taken += 1
        return offered

    def solve(self) -> tuple[int, str]:
        """Step 3 of the module doc: the gain it adds (0 when it adds nothing) and its note."""
        chosen = self.relaxation()
        if not chosen:
            return 0, ""
        gained, left = self.make(chosen)
        gained += self.together(left)
        how = "the linear relaxation of a 0-1 program over the undos and moves within a rack, HiGHS"
        return gained, how if gained else ""

    def relaxation(self) -> list[Move]:
        """The candidates the program's linear relaxation takes (value above one half), highest
        value first."""
        m = self.m
        if len(m.work.touched) > SOLVER_PARTITIONS:
            return []
        banded = m.rank("counts")     # the bands are the program's rows, not a filter
        columns = [c for c in self.undos() if m.fits(*c, banded)]
        if not columns:
            return []
        blocked = [(i, b, a) for i, b, a in columns if not self.in_bands(i, b, a)]
        columns += self.redirects({a for i, b, a in blocked if self.full(i, a)},
                                  {b for i, b, a in blocked if self.short(i, b)})
        if len(columns) > SOLVER_COLUMNS:
            return []
        import highspy  # the planner extra, loaded when planning

        h = highspy.Highs()  # type: ignore[no-untyped-call]
        for option, value in (("output_flag", False), ("threads", 1), ("random_seed", 0),
                              ("time_limit", TIME_LIMIT), ("solver", "simplex")):
            h.setOptionValue(option, value)
        n = len(columns)
        gains = [self.gain(i) if a in m.work.original[i] else 0 for i, _, a in columns]
        top = max(gains) or 1
        h.addVars(n, [0.0] * n, [1.0] * n)
        h.changeColsCost(n, list(range(n)), [-g / top for g in gains])
        self._rows(h, columns)
        h.run()
        if h.getModelStatus() == highspy.HighsModelStatus.kTimeLimit:
            raise PlanError(f"the fewer-moves goal's linear program ran past its safety net of {TIME_LIMIT:g} s "
                            f"({n} candidates): the machine is too slow or too busy for this plan")
        if h.getInfo().primal_solution_status != 2:     # no feasible point
            return []
        values = list(h.getSolution().col_value)
        ranked = sorted((-v, k) for k, v in enumerate(values) if v > 0.5)
        return [columns[k] for _, k in ranked]

    def together(self, left: list[Move]) -> int:
        """Make ``left`` (one move per partition) at once, and keep them only when no goal
        ranked before this one is further from its target (its own ``distance``); when one is,
        take moves back (module doc, step 3) until none is; the gain kept."""
        m = self.m
        seen: set[int] = set()
        moves = []
        for i, b, a in left:
            if i not in seen and b in m.reps[i] and a not in m.reps[i]:
                seen.add(i)
                moves.append((i, b, a))
        gain = sum(self.gain(i) for i, _, a in moves if a in m.work.original[i])
        if not gain:
            return 0
        before = [g.distance() for g in self.earlier()]
        for i, b, a in moves:
            m.do_move(i, b, a)
        kept = self.take_back(moves, before)
        if kept is not None:
            return sum(self.gain(i) for i, _, a in kept if a in m.work.original[i])
        return 0

    def take_back(self, moves: list[Move], before: list[int]) -> list[Move] | None:
        """``moves`` made, the earlier goals' distances ``before`` them: take moves back, last
        first, each whose return lessens the distance added (the goals further out are asked
        first, the others only when those come closer); the moves kept once none is added, or
        None with every move taken back."""
        m = self.m
        earlier = self.earlier()
        now = [g.distance() for g in earlier]
        worse = sum(max(0, d - was) for d, was in zip(now, before, strict=True))
        kept = list(moves)
        for move in reversed(moves):
            if not worse:
                break
            i, b, a = move
            m.do_move(i, a, b)
            out = [k for k, (d, was) in enumerate(zip(now, before, strict=True)) if d > was]
            seen = {k: earlier[k].distance() for k in out}
            if sum(max(0, d - before[k]) for k, d in seen.items()) < worse:
                seen.update((k, g.distance()) for k, g in enumerate(earlier) if k not in seen)
                total = sum(max(0, d - before[k]) for k, d in seen.items())
                if total < worse:
                    worse, now = total, [seen[k] for k in range(len(earlier))]
                    kept.remove(move)
                    continue
            m.do_move(i, b, a)
        if not worse:
            return kept
        for i, b, a in reversed(kept):
            m.do_move(i, a, b)
        return None

    def _rows(self, h: Any, columns: list[Move]) -> None:
        """At most one per partition; then every goal before this one adds its own rows on the
        moves (``move_rows``: the count and byte bands, capacities, the topic caps)."""
        per_part: dict[int, list[int]] = {}
        for k, (i, _, _) in enumerate(columns):
            per_part.setdefault(i, []).append(k)
        for ks in per_part.values():
            if len(ks) > 1:
                h.addRow(-math.inf, 1.0, len(ks), ks, [1.0] * len(ks))
        program = MoveProgram(self.m, columns, h)
        for goal in self.earlier():
            goal.move_rows(program)


class MoveProgram:
    """The relaxation's candidates as the goals see them (:meth:`Goal.move_rows`): ``columns``
    the moves ``(partition, source, destination)``, ``model`` the state they start from;
    :meth:`per_broker` and :meth:`per_node` say what each column adds where."""

    def __init__(self, model: Any, columns: list[Move], highs: Any) -> None:
        self.model = model
        self.columns = columns
        self.highs = highs

    def row(self, lower: float, upper: float, coefs: dict[int, float]) -> None:
        self.highs.addRow(lower, upper, len(coefs), list(coefs), list(coefs.values()))

    def per_broker(self, weight: Any) -> dict[int, dict[int, float]]:
        """Per broker, per column: ``+weight(i)`` where the move arrives, ``-weight(i)`` where it
        leaves (columns of weight 0 left out)."""
        out: dict[int, dict[int, float]] = {}
        for k, (i, b, a) in enumerate(self.columns):
            w = float(weight(i))
            if w:
                out.setdefault(a, {})[k] = w
                out.setdefault(b, {})[k] = -w
        return out

    def per_node(self) -> dict[int, dict[int, float]]:
        """Per (topic, node) key of the model's counters, per column: ``+1`` on the nodes the
        replica enters, ``-1`` on those it leaves (below the lowest node the two share)."""
        m = self.model
        out: dict[int, dict[int, float]] = {}
        for k, (i, b, a) in enumerate(self.columns):
            base = m.topic[i] * m.stride
            cs, cd = m.chain[b], m.chain[a]
            d = 1
            while cs[d] == cd[d]:
                d += 1
            for node in cd[d:]:
                out.setdefault(base + node, {})[k] = 1.0
            for node in cs[d:]:
                out.setdefault(base + node, {})[k] = -1.0
        return out
