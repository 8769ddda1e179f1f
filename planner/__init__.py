"""The balance planner (KIP-166): cluster state, repair, leader-, replica- and cluster-balance.

The planning core is pure Python (standard library and ``assignors``), deterministic, and works
on :class:`cluster.snapshot.ClusterSnapshot` values; one balancing rule per module, each a
function ``snapshot -> Plan`` (:mod:`planner.plan`):

- :mod:`planner.cluster_report` - ``describe(snapshot)``: replicas, leaders, racks, skew, problems;
- :mod:`planner.repair_rule` - ``repair(snapshot, forgotten)``: placeholders, dead/unknown brokers;
- :mod:`planner.leader_balance` - ``leader_balance(snapshot)``: exact minimum leader changes;
- :mod:`planner.replica_balance` - ``replica_balance(snapshot, threshold=10)``: fewest moves;
- :mod:`planner.cluster_balance` - ``cluster_balance(...)``: both, with budgets.

Around it: :mod:`planner.settings` (what a plan is asked for), :mod:`planner.modes`
(``make_plan``: a request to the rule of its mode), :mod:`planner.replica_repair` (the one repair
algorithm, also ``replica-assignor repair``'s),
:mod:`planner.outputs` (Kafka's reassignment and leader-election JSON, summary, report, charts),
:mod:`planner.execution` (batches within per-broker and byte limits, time at a throttle, the
starting replicas' fingerprint, rollback, drift), :mod:`planner.figures` (the report's and
charts' figures with numpy), :mod:`planner.sources` (snapshot files, ``kafka-topics.sh
--describe`` text, a live cluster) and :mod:`planner.pipeline` (the Spark job for fleets). The
command line is ``cli.state``, ``cli.balance`` and ``cli.verify``.
"""
