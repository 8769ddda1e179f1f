"""Solving and bounds: the drivers that turn a request into a plan by asking the goals.

The heuristic (the goals' own moves in their order), the exact program for small clusters
(HiGHS), the bytes-moved lower bound (a linear program over brokers), and the log-directory
placement that follows the replica plan.
"""
