"""Third-party assignors, as an operator would write them: plugged in by dotted class path
(``replica.assignor.class.name=examples.least_loaded.LeastLoadedAssignor``), never registered."""
