"""The balance planner (KIP-166): cluster state, repair, leader-, replica- and cluster-balance.

One rule, one owner: each target and each mode of the planner is one goal module in
:mod:`kafka_replica_assignor.planner.goals`, which owns its check of the request, its move check, its distance, its
rows in the exact program and in the bound, and its report figures; :data:`kafka_replica_assignor.planner.goals.order.GOALS`
is the only order. The rooms, each a folder with its own package doc:

- the base: :mod:`kafka_replica_assignor.planner.request` (:class:`~kafka_replica_assignor.planner.request.PlanRequest`, the frozen value from the
  command line to the goals, and its options), :mod:`kafka_replica_assignor.planner.plan` (moves and plans as values,
  the working copy), :mod:`kafka_replica_assignor.planner.racks` (rack trees), :mod:`kafka_replica_assignor.planner.replica_repair` (the one
  repair algorithm, also ``replica-assignor repair``'s);
- :mod:`kafka_replica_assignor.planner.goals`: the rules, the shared model and the searches they use;
- :mod:`kafka_replica_assignor.planner.solving`: the drivers that ask the goals (the heuristic, the exact program, the
  bytes bound, :func:`~kafka_replica_assignor.planner.solving.planning.make_plan`) and the log-directory placement;
- :mod:`kafka_replica_assignor.planner.report`: figures, the Markdown report, charts and Kafka's own files;
- :mod:`kafka_replica_assignor.planner.execution`: batches, timing and the executor;
- :mod:`kafka_replica_assignor.planner.inputs`: snapshots, ``kafka-topics.sh`` text, live clusters, log directories;
- :mod:`kafka_replica_assignor.planner.fleet`: the Spark job for fleets.

Imports point one way: base <- goals <- solving <- report <- fleet; execution and inputs use the
base only (``tests/unit/test_layering.py``). The command line is ``kafka_replica_assignor.cli.state``,
``kafka_replica_assignor.cli.balance`` and ``kafka_replica_assignor.cli.verify``.
"""
