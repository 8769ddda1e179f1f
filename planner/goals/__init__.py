"""The balancing goals: one module per goal over one shared model, ranked by :mod:`.order`.

- :mod:`.goal`: the interface (:class:`~.goal.Goal`: ``optimize``, ``accepts``, ``explain``,
  ``targets``) and the figure a goal reports (:class:`~.goal.Target`).
- :mod:`.model`: the shared indexed working state; :mod:`.search`: the searches goals share.
- One module per goal: :mod:`.repair`, :mod:`.scope`, :mod:`.rack_diversity`,
  :mod:`.capacity`, :mod:`.topic_spread`, :mod:`.replica_counts`, :mod:`.replica_bytes`,
  :mod:`.leaders`.
- :mod:`.order`: the order (data) and the loop.
"""
