"""The rules of the planner, one module each, ranked by :data:`.order.GOALS`.

- :mod:`.goal`: the interface (:class:`~.goal.Goal` and its faces: ``check_request``,
  ``accepts``, ``optimize``, ``distance``, ``exact_rows``, ``bound_rows``, ``targets``,
  ``explain``, ``final_check``) and the figure a goal reports (:class:`~.goal.Target`).
- The request's rules: :mod:`.lost_replicas` (repair), :mod:`.remove_brokers`,
  :mod:`.exclude_brokers`, :mod:`.add_brokers`, :mod:`.scope` (topics), :mod:`.demote_brokers`.
- The targets: :mod:`.capacity`, :mod:`.rack_diversity`, :mod:`.topic_spread`,
  :mod:`.replica_counts`, :mod:`.replica_bytes`, :mod:`.fewer_moves` (the plan's cost),
  :mod:`.leaders` (with its flow, :mod:`.leader_flow`).
- :mod:`.model`: the shared indexed state of the heuristic; :mod:`.search`: the searches the goals share.
- :mod:`.order`: the order (data) and the helpers every driver uses.
"""
