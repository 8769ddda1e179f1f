"""The searches the goals share: a receiver for one replica, a move or swap between two brokers.

Goals
    Find, without a scan of all brokers or replicas, (1) the broker to take one replica
    (:func:`receiver`: the emptiest that fit, by the asking goal's ranking), (2) the move or
    swap that shifts about a wanted number of bytes between two brokers (:func:`transfer`), (3)
    room on a full broker by a chain of two moves (:func:`make_room`).

Constraints
    - Every move they make is accepted by the goals ranked before the one asking, and by every
      hard rule (:meth:`kafka_replica_assignor.planner.goals.model.Model.fits`, ``swap_fits``): the
      searches hold no rule of their own.
    - At equal bytes a follower moves before a leader: a leader replica moved is a leader change.

Algorithm
    :func:`receiver` merges the per-rack heaps of ``load_key`` entries, emptiest first (their
    tops in a heap, so a broker looked at costs ``O(log racks)``, not a pass over the racks),
    and stops after :data:`PEEK` brokers that fit. :func:`transfer` binary-searches the giver's
    and the taker's size-sorted replica lists around the wanted size (:data:`NEAR` neighbours,
    up to :data:`SCAN` replicas for a swap; with a broker of another rack, only those rack
    diversity lets go there: :meth:`~kafka_replica_assignor.planner.goals.model.Model.reachable`).
    :func:`make_room` looks at :data:`PARTNERS` replicas and brokers. A caller may leave out of
    ``leaves`` the racks it knows no broker of fits (a rack found full for a topic): a search
    there could only find nothing, so the result is the same.

Example
    Broker 1 holds 40 GB, broker 2 holds 20 GB, mean 30 GB: ``transfer(m, 1, 2, gap, upto)`` wants
    10 GB; of 1's replicas of 9, 10 and 10 GB (a leader and a follower of 10), it moves the
    follower of 10 GB.
"""

from __future__ import annotations

import heapq
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable
from itertools import islice

from kafka_replica_assignor.planner.goals.model import Model

PEEK = 4            # fitting receivers looked at for one replica (the fewest of its topic wins)
TAKER, TOPIC, ANY = range(3)   # what :func:`receiver` looks for
NEAR = 3            # size-sorted neighbours tried on each side of a binary search
SCAN = 256          # replicas of the heavier broker tried for one swap, smallest first from the need
PARTNERS = 8        # lightest (heaviest) brokers of its rack, then of all, paired with one out of band


def receiver(m: Model, i: int, x: int, leaves: Iterable[int], *, mode: int, upto: int,
             outside: tuple[int, int] | None = None) -> int | None:
    """The broker of ``leaves`` to take partition ``i``'s replica from ``x``, the move
    accepted by the goals ranked before ``upto`` (:meth:`Model.fits`). The leaves' heaps are
    merged, emptiest (``load_key``) first; of the first :data:`PEEK` brokers that fit, the
    best by ``mode``: :data:`TAKER` only brokers below their count target that stay in the
    byte band, holding the fewest of the topic; :data:`TOPIC` below target first, then not
    pushed above the byte band, then holding the fewest of the topic; :data:`ANY` the first.
    The scan stops early once nothing later can be better. ``outside``: ``(level, node)`` the
    receiver must be out of."""
    t = m.topic[i]
    w = m.size[i]
    load_key = m.load_key
    heaps = [m.heaps[leaf] for leaf in leaves
             if outside is None or outside[0] >= len(m.leaf_chain[leaf])
             or m.leaf_chain[leaf][outside[0]] != outside[1]]
    looked: list[tuple[list[tuple[int, int, int]], tuple[int, int, int]]] = []
    seen: set[int] = set()
    best: tuple[int, ...] | None = None
    found = 0
    tops: list[tuple[tuple[int, int, int], int]] = []     # each heap's current top, merged
    for k, heap in enumerate(heaps):
        while heap and heap[0] != load_key(heap[0][2]):
            heapq.heappop(heap)     # stale: the broker's current entry is in the heap too
        if heap:
            tops.append((heap[0], k))
    heapq.heapify(tops)
    while found < PEEK and tops:
        _, k = heapq.heappop(tops)
        top = heaps[k]
        entry = heapq.heappop(top)
        while top and top[0] != load_key(top[0][2]):
            heapq.heappop(top)
        if top:
            heapq.heappush(tops, (top[0], k))
        y = entry[2]
        if y in seen:
            continue                    # a duplicate of an entry already looked at
        seen.add(y)
        looked.append((top, entry))
        if mode == TAKER and entry[0] >= 0:
            break
        if mode == TOPIC and best is not None and entry[0] >= 0 and not best[0]:
            break                       # the best is below target, nothing later is
        if y == x or not m.fits(i, x, y, upto, leaf_known=True):
            continue
        if mode == ANY:
            best = entry
            break
        over = m.sized and m.sizes[y] + w > m.upper(y)
        if mode == TAKER and over:
            continue
        found += 1
        held = m.n(t, m.chain[y][-1])
        rank = (held, *entry) if mode == TAKER else (entry[0] >= 0, over, held, *entry)
        if best is None or rank < best:
            best = rank
        if held == 0 and (mode == TAKER or not (entry[0] >= 0 or over)):
            break                       # nothing later ranks better
    for heap, entry in looked:
        heapq.heappush(heap, entry)
    return None if best is None else best[-1]


def roomiest(m: Model, b: int) -> list[int]:
    """The :data:`PARTNERS` brokers (``b`` aside) with the most bytes left under their
    ``capacity_bytes`` (unlimited first, then the lightest), in ``b``'s rack, then of all."""
    def room(y: int) -> tuple[bool, int, int]:
        limit = m.capacity.get(y)
        return limit is not None, -(limit or 0) + m.sizes[y], y
    own = m.leaf_members[m.leaf[b]]
    return [y for group in (own, m.work.eligible)
            for y in heapq.nsmallest(PARTNERS + 1, group, key=room) if y != b]


def make_room(m: Model, x: int) -> bool:
    """``x`` is above its capacity and no transfer fits: move one of its largest replicas
    to a broker ``y`` that lacks the room, after moving one replica of ``y`` (the smallest
    that makes the room) to a third broker with room: a chain of two moves. Looks at the
    :data:`PARTNERS` largest replicas of ``x``, the brokers of :meth:`roomiest` and
    :data:`NEAR` replicas of each, so it costs ``O(PARTNERS^2 * NEAR)`` checks."""
    largest = m.held[x][::-1][:PARTNERS]
    for key in sorted(largest, key=lambda k: (-(k // m.parts), m.reps[m.partition(k)][0] == x)):
        i, w = m.partition(key), key // m.parts
        if not m.leader_ok(i, x):
            continue
        for y in dict.fromkeys(roomiest(m, x)):
            limit = m.capacity.get(y)
            if limit is None or m.sizes[y] + w <= limit or not m.unit_fits(i, x, y, 0):
                continue
            need = m.sizes[y] + w - limit
            held = m.held[y]
            start = bisect_left(held, need * m.parts)
            for key_j in held[start:start + NEAR]:
                j = m.partition(key_j)
                if j == i or x in m.reps[j] or not m.leader_ok(j, y):
                    continue
                z = next((z for z in dict.fromkeys(roomiest(m, y))
                          if z != x and m.fits(j, y, z, 0)), None)
                if z is not None:
                    m.do_move(j, y, z)
                    m.do_move(i, x, y)
                    return True
    return False


def transfer(m: Model, x: int, y: int, gap: int, upto: int) -> bool:
    """Move bytes from ``x`` to ``y``: one move or one swap whose net ``delta`` satisfies
    ``0 < delta < sizes[x] - sizes[y]``, keeps both in the band and is at least a quarter of
    what evens the pair (``want``); the one nearest ``want``. ``gap``: the bytes the broker
    of the pair that is out of band is out by; ``want`` is at least that much (within what
    the pair allows), so a partner already at the mean still takes what it has room for
    instead of slivers.

    When ``x`` is above its ``capacity_bytes`` (hard, before both bands) ``y`` may take
    anything its own capacity allows, counts and bands aside, and ``delta`` is at least a
    quarter of ``x``'s excess: each transfer then lowers the bytes above capacity, the
    others the sum of squared bytes, so the pass ends. A transfer is accepted by the goals
    ranked before ``upto`` (the hard rules only, to relieve a capacity). Returns whether
    something moved."""
    sx, sy = m.sizes[x], m.sizes[y]
    over = sx - m.capacity.get(x, sx)    # bytes above x's disk
    if over > 0:
        upto = 0
    if over > 0:
        most = m.capacity.get(y, sy + sx) - sy
        want = min(most, max(over, min((sx - sy) // 2, gap)))
    else:
        most = sx - sy - 1                      # the pair's larger side shrinks
        if sy <= m.upper(y):
            most = min(most, m.upper(y) - sy)   # y stays in the band
        if sx >= m.blo:
            most = min(most, sx - m.blo)        # and so does x
        want = min(most, (sx - sy) // 2, max(min(sx - m.mean, m.mean - sy), gap))
    if most <= 0:
        return False
    want = max(1, want)
    give_list, take_list, p = m.held[x], m.held[y], m.parts
    if not give_list:
        return False
    need = min(want, over) if over > 0 else want
    least = max(1, min(need, give_list[-1] // p) // 4)   # no slivers: the pass stays short
    best: tuple[int, int, int | None] | None = None     # (miss, give, take)
    start = bisect_left(give_list, want * p)
    led = 3                     # leader replicas the best moves: at equal bytes, fewer wins
    if (over > 0 or m.counts[x] > m.lo and m.counts[y] < m.hi) and m.budget_left():
        for key in give_list[max(0, start - NEAR):start + NEAR]:
            w, i = key // p, m.partition(key)
            lead = int(m.reps[i][0] == x)
            if least <= w <= most and (best is None or (abs(w - want), lead) < (best[0], led)) \
                    and m.fits(i, x, y, upto):
                best, led = (abs(w - want), i, None), lead
    if m.budget_left(extra=1):   # the smallest pair first: fewest bytes moved
        for key_a in swap_givers(m, x, y, start):
            if best is not None and best[0] * 8 <= want:
                break
            w_a, a = key_a // p, m.partition(key_a)
            k = bisect_left(take_list, (w_a - want) * p)
            a_moves: bool | None = None         # may a go to y? (asked once, when needed)
            for key_b in take_list[max(0, k - NEAR):k + NEAR]:
                delta = w_a - key_b // p
                if not least <= delta <= most or (best is not None and abs(delta - want) > best[0]):
                    continue
                b = m.partition(key_b)
                lead = (m.reps[a][0] == x) + (m.reps[b][0] == y)
                if best is not None and abs(delta - want) == best[0] and not (
                        best[2] is not None and w_a + m.size[b] == m.size[best[1]] + m.size[best[2]]
                        and lead < led):
                    continue        # as near: only a swap of the same bytes with fewer leaders wins
                if a_moves is None:
                    a_moves = m.unit_fits(a, x, y, upto)
                if not a_moves:
                    break
                if m.swap_fits(a, x, b, y, upto):
                    best, led = (abs(delta - want), a, b), lead
    if best is None:
        return False
    _, give, take = best
    m.do_move(give, x, y)
    if take is not None:
        m.do_move(take, y, x)
    return True


def swap_givers(m: Model, x: int, y: int, start: int) -> list[int]:
    """The replicas of ``x`` a swap with ``y`` tries, as slot keys: the :data:`SCAN` from
    position ``start`` of its size-sorted list up, then the :data:`SCAN` below it down; with a
    broker of another rack, only those rack diversity lets go to ``y``'s rack
    (:meth:`Model.reachable`, when rack diversity is a rule of this run): the others fail the
    swap's first check (:meth:`Model.unit_fits`), so they could give nothing."""
    give_list = m.held[x]
    if m.leaf[x] == m.leaf[y] or m.goal("diversity") is None:
        return give_list[start:start + SCAN] + give_list[max(0, start - SCAN):start][::-1]
    reach = m.reachable(x, m.leaf[y])
    out = []
    if start < len(give_list):
        out = reach[bisect_left(reach, give_list[start]):bisect_right(reach, give_list[min(len(give_list), start + SCAN) - 1])]
    if start:
        out += reach[bisect_left(reach, give_list[max(0, start - SCAN)]):bisect_right(reach, give_list[start - 1])][::-1]
    return out


def exchange(m: Model, worst: Callable[[set[int]], int | None], upto: int) -> None:
    """While ``worst`` names a broker outside its band (or above its capacity), not ``stuck``:
    it exchanges bytes with its partners (the lightest or heaviest of its rack, then of all;
    the roomiest when above its capacity) by :func:`transfer`, or :func:`make_room`. A pair that
    found nothing is not tried again until one of its brokers changes."""
    if not m.sized:
        return
    stuck: set[int] = set()
    failed: dict[tuple[int, int, int], tuple[int, ...]] = {}   # (x, y, b) -> their state then

    def attempt(x: int, y: int, b: int, gap: int) -> bool:
        """A transfer, unless the same pair failed for ``b`` while both brokers held what
        they hold now (only the topic counts of their racks, moved by other pairs, may
        differ since: a pair is retried when one of its brokers changes)."""
        state = (m.sizes[x], m.sizes[y], m.counts[x], m.counts[y])
        if failed.get((x, y, b)) == state:
            return False
        if transfer(m, x, y, gap, upto):
            return True
        failed[(x, y, b)] = state
        return False

    while m.budget_left():
        b = worst(stuck)
        if b is None:
            return
        heavy = m.sizes[b] > m.upper(b)
        partners: list[int] = []
        for order in (m.leaf_bytes[m.leaf[b]], m.by_bytes):   # own rack first
            ends = iter(order) if heavy else reversed(order)
            partners += [y for _, y in islice((e for e in ends if e[1] != b), PARTNERS)]
        full = m.capacity.get(b, m.sizes[b]) < m.sizes[b]
        if full:
            partners += roomiest(m, b)     # above its disk: the brokers with most room too
        pairs = [(b, y) if heavy else (y, b) for y in dict.fromkeys(partners)]
        gap = m.off_band(b)
        if any(attempt(x, y, b, gap) for x, y in pairs) or (full and make_room(m, b)):
            stuck.clear()   # the others may have a partner now
        else:
            stuck.add(b)
