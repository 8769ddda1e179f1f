"""The bands of replica balance: the replica counts and bytes a broker may hold at a threshold.

One definition for the heuristic (:mod:`kafka_replica_assignor.planner.solving.replica_balance`), the exact program
(:mod:`kafka_replica_assignor.planner.solving.exact`) and the report: ``avg * (1 -+ threshold)``, widened only where that band
is provably out of reach.
"""

from __future__ import annotations

import math
from fractions import Fraction


def band(total: int, brokers: int, threshold: Fraction) -> tuple[int, int]:
    """``(lo, hi)``: the counts a broker may hold without taking or giving."""
    avg = Fraction(total, brokers)
    hi = max(math.ceil(avg), math.floor(avg * (1 + threshold)))
    lo = min(math.floor(avg), math.ceil(avg * (1 - threshold)))
    return max(lo, 0), hi


def byte_band(total: int, brokers: int, threshold: Fraction, largest: int) -> tuple[int, int]:
    """``(blo, bhi)``: the bytes a broker may hold, ``mean * (1 -+ threshold)``, widened only
    where that band is provably out of reach: ``bhi`` is at least ``largest`` (the broker
    holding the largest partition holds that much), and a band holding no whole number of
    bytes (threshold 0, a fractional mean) is ``[floor(mean), ceil(mean)]``."""
    mean = Fraction(total, brokers)
    lo, hi = math.ceil(mean * (1 - threshold)), math.floor(mean * (1 + threshold))
    if lo > hi:
        lo, hi = math.floor(mean), math.ceil(mean)
    return max(0, lo), max(hi, largest)


def parse_threshold(threshold: float | int | str) -> Fraction:
    """The threshold in percent as a fraction (``10`` -> ``1/10``); ``ValueError`` when invalid."""
    try:
        fraction = Fraction(str(threshold)) / 100
    except ValueError:
        raise ValueError(f"threshold must be a number of percent, got {threshold!r}") from None
    if fraction < 0:
        raise ValueError(f"threshold must be >= 0, got {threshold!r}")
    return fraction
