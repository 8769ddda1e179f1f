"""The balance planner (KIP-166): cluster state, repair, leader-, replica- and cluster-balance.

The planning core is pure Python (standard library and ``assignors``), deterministic, and works
on :class:`kafka_replica_assignor.cluster.snapshot.ClusterSnapshot` values; one balancing rule per module, each a
function ``snapshot -> Plan`` (:mod:`kafka_replica_assignor.planner.plan`):

- :mod:`kafka_replica_assignor.planner.report.cluster_report` - ``describe(snapshot)``: replicas, leaders, racks, skew, problems;
- :mod:`kafka_replica_assignor.planner.solving.repair_rule` - ``repair(snapshot, forgotten)``: placeholders, dead/unknown brokers;
- :mod:`kafka_replica_assignor.planner.goals.leader_flow` - ``leader_balance(snapshot)``: exact minimum leader changes;
- :mod:`kafka_replica_assignor.planner.solving.replica_balance` - ``replica_balance(snapshot, threshold=10)``: fewest moves;
- :mod:`kafka_replica_assignor.planner.solving.cluster_balance` - ``cluster_balance(...)``: both, with budgets.

Around it: :mod:`kafka_replica_assignor.planner.settings` (what a plan is asked for), :mod:`kafka_replica_assignor.planner.solving.modes`
(``make_plan``: a request to the rule of its mode), :mod:`kafka_replica_assignor.planner.replica_repair` (the one repair
algorithm, also ``replica-assignor repair``'s),
:mod:`kafka_replica_assignor.planner.report.outputs` (Kafka's reassignment and leader-election JSON, summary, report, charts),
:mod:`kafka_replica_assignor.planner.execution.batches` (batches within per-broker and byte limits, time at a throttle, the
starting replicas' fingerprint, rollback, drift), :mod:`kafka_replica_assignor.planner.report.figures` (the report's and
charts' figures with numpy), :mod:`kafka_replica_assignor.planner.inputs.sources` (snapshot files, ``kafka-topics.sh
--describe`` text, a live cluster) and :mod:`kafka_replica_assignor.planner.fleet.pipeline` (the Spark job for fleets). The
command line is ``kafka_replica_assignor.cli.state``, ``kafka_replica_assignor.cli.balance`` and ``kafka_replica_assignor.cli.verify``.
"""
