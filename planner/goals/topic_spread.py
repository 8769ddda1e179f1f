"""Topic spread: no rack-tree node holds more replicas of a topic than its cap.

Goals
    A node ``g`` of the rack tree (a broker, a rack, a data centre) holds at most

        ``cap(t, g) = max(ceil(R_t * m_g / B), ceil(n_t(parent) * m_g / m_parent), S_t(g)) + 1``

    replicas of topic ``t``, where ``R_t`` is the topic's replicas, ``m_g`` the alive brokers
    under ``g``, ``B`` all alive brokers, ``n_t(parent)`` the topic's replicas under ``g``'s
    parent (the whole cluster for the top level; a broker's parent is its rack) and, for a rack
    node, ``S_t(g)`` the topic's partitions with at least as many replicas as there are groups
    at ``g``'s level (full diversity puts one of each in every group; 0 for brokers). The first
    term is the even share; the others are what rack diversity forces.

Constraints
    - Ranks after repair, rack diversity and capacity (they may push a topic above its cap),
      before replica counts and bytes: their moves never push a topic above its cap
      (:meth:`TopicSpreadGoal.accepts`).

Algorithm
    A topic above its cap at a node gives replicas, from the broker of the node holding the
    most of it, to a broker outside the node (:func:`kafka_replica_assignor.planner.goals.search.receiver`, mode
    ``TOPIC``): below its count target first, then not pushed above the byte band, then holding
    the fewest of the topic. The replica is the smallest follower, or, when the receiver is
    below its count target and both sides want bytes moved, the one nearest that size.

Example
    Topic x with 12 replicas on 6 brokers (cap ``ceil(12/6) + 1 = 3``), broker 1 holding 5: two
    of its followers of x go to the emptiest brokers holding the fewest of x.
"""

from __future__ import annotations

from kafka_replica_assignor.planner.goals.goal import ModelGoal, ReportView, Target, blame
from kafka_replica_assignor.planner.goals.search import TOPIC, receiver

TOPIC_CAP = "max(ceil(R/B), ceil(R_rack/B_rack)) + 1"


class TopicSpreadGoal(ModelGoal):
    """Bring every topic under its cap at every node (module doc)."""

    name = "topic spread"

    def accepts(self, i: int, source: int, destination: int) -> bool:
        m = self.model
        return m.caps_ok(m.topic[i], source, destination)

    def optimize(self) -> int:
        before = self.model.moved
        self.repair_topics()
        return self.model.moved - before

    def explain(self) -> None:
        m = self.model
        work = m.work
        over = [(excess, t, node) for t, _, node, excess in self.above_cap()]
        if over:
            excess, t, node = max(over, key=lambda o: (o[0], -o[1], -o[2]))
            topic = m.topic_name[t]
            first_broker = m.nodes - len(work.eligible)
            where = (f"broker {work.eligible[node - first_broker]}" if node >= first_broker
                     else f"rack {m.tree.names[node - 1]}")
            work.notes.append(
                f"{len(over)} (topic, broker or rack) pair(s) above the topic's cap (worst: topic "
                f"{topic} on {where}, {excess} above): {m.why_left()}")

    @staticmethod
    def targets(view: ReportView) -> tuple[Target, ...]:
        before, after = max(0, view.before.topic_excess), max(0, view.after.topic_excess)
        missed = (f"worst topic: {after} replica(s) on one broker above its cap {TOPIC_CAP} after "
                  "the plan, target 0: " + blame(view, True, "topic")) if after else ""
        return (Target(f"worst topic: replicas on one broker above its cap {TOPIC_CAP}", before, after, 0,
                       not after, 2, missed),)

    def above_cap(self) -> list[tuple[int, int, int, int]]:
        """``(topic, level, node, excess)`` for every node above a topic's cap, sorted."""
        m = self.model
        over = []
        stride, parent, cap, ncount = m.stride, m.parent, m.cap, m.ncount
        for key, count in ncount.items():
            if count < 3:       # a cap is at least 2: an even share of 1, plus one
                continue
            t, node = divmod(key, stride)
            if node:
                up = parent[node]
                excess = count - cap(t, node, up, ncount.get(t * stride + up, 0))
                if excess > 0:
                    over.append((t, m.level[node], node, excess))
        over.sort()
        return over

    def repair_topics(self) -> None:
        m = self.model
        first_broker = m.nodes - len(m.work.eligible)
        last = -1
        parts_on: dict[int, list[int]] = {}     # the topic's partitions per broker
        for t, level, node, _ in self.above_cap():
            if t != last:
                last = t
                parts_on = {}
                for i in m.topic_parts[t]:
                    for b in m.reps[i]:
                        if b not in m.work.excluded:
                            parts_on.setdefault(b, []).append(i)
            parent = m.parent[node]
            if node >= first_broker:
                x = m.work.eligible[node - first_broker]
                on = {x: parts_on.get(x, [])}
            else:
                on = {b: held for b, held in parts_on.items() if m.chain[b][level] == node}
            while m.over_cap(t, node, parent) > 0 and m.budget_left():
                moved = self.shed_topic(on, level, node)
                if moved is None:
                    break
                parts_on.setdefault(moved[1], []).append(moved[0])

    def shed_topic(self, on: dict[int, list[int]], level: int, node: int) -> tuple[int, int] | None:
        """Move one replica of a topic out of ``node`` (``on``: its partitions per broker of
        the node) to a broker outside it: from the broker holding the most of the topic, to
        the receiver of :func:`~kafka_replica_assignor.planner.goals.search.receiver` for its smallest follower; then, when
        both sides want
        bytes to move (:meth:`Model.want_pair`), the replica nearest that size which fits it too.
        Returns ``(partition, receiver)`` or None."""
        m = self.model
        givers = sorted((b for b in on if on[b]), key=lambda b: (-len(on[b]), -m.load_key(b)[0], -m.sizes[b], b))
        for x in givers:
            cands = sorted(on[x], key=lambda i: (m.reps[i][0] == x, m.slot[i]))
            for i in cands:
                y = receiver(m, i, x, m.allowed_leaves(i, x), mode=TOPIC, outside=(level, node))
                if y is None:
                    continue
                want = m.want_pair(x, y)
                if want:
                    i = min((j for j in cands if m.fits(j, x, y) and (m.reps[j][0] == x) == (m.reps[i][0] == x)),
                            key=lambda j: (abs(m.size[j] - want), m.slot[j]))
                on[x].remove(i)
                m.do_move(i, x, y)
                return i, y
        return None
