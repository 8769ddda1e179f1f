"""The fleet job: the Spark pipeline that plans many clusters at once with the same planner."""
