"""``java.util.Random``, draw for draw, as an injectable ``random.Random``.

Kafka's placers take a ``java.util.Random``; an assignor here takes a ``random.Random`` and
draws with ``rng.randrange(n)`` where Kafka calls ``nextInt(n)``. :class:`JavaRandom` makes
the two the same numbers: seeded with the same ``long``, an assignor given
``JavaRandom(seed)`` makes the same choices as Kafka's code given ``new Random(seed)``, so the
two can be compared byte for byte (``tests/oracle``).

The generator is Java's 48-bit linear congruential one (multiplier ``0x5DEECE66D``, addend
``0xB``, the seed scrambled with the multiplier); ``randrange(n)`` is the legacy
``Random.nextInt(int bound)`` with its rejection loop, ``shuffle`` is ``Collections.shuffle``,
``random()`` is ``nextDouble()``.
Standard library only.
"""

from __future__ import annotations

import random
from typing import Any

__all__ = ["JavaRandom"]

_MULTIPLIER = 0x5DEECE66D
_ADDEND = 0xB
_MASK = (1 << 48) - 1


class JavaRandom(random.Random):
    """A ``random.Random`` whose ``randrange`` and ``random`` are ``java.util.Random``'s.

    >>> rng = JavaRandom(42)
    >>> [rng.randrange(10) for _ in range(5)]
    [0, 3, 8, 4, 0]
    """

    _java_state: int

    def __init__(self, seed: int = 0) -> None:
        super().__init__(seed)

    def seed(self, a: Any = None, version: int = 2) -> None:
        """``Random.setSeed(long)``: the low 64 bits of ``a`` (an int), scrambled."""
        if not isinstance(a, int) or isinstance(a, bool):
            raise TypeError(f"JavaRandom takes an int seed (a Java long), got {a!r}")
        self._java_state = ((a & 0xFFFFFFFFFFFFFFFF) ^ _MULTIPLIER) & _MASK

    def getstate(self) -> tuple[int]:
        return (self._java_state,)

    def setstate(self, state: tuple[int, ...]) -> None:
        (self._java_state,) = state

    def next_bits(self, bits: int) -> int:
        """``Random.next(bits)`` as an unsigned value of ``bits`` bits (1 <= bits <= 32)."""
        self._java_state = (self._java_state * _MULTIPLIER + _ADDEND) & _MASK
        return self._java_state >> (48 - bits)

    def next_int(self, bound: int) -> int:
        """``Random.nextInt(int bound)``: uniform in ``[0, bound)``, Java's rejection loop included."""
        if not 0 < bound < 1 << 31:
            raise ValueError(f"bound must be in 1 .. 2**31 - 1, got {bound}")
        r = self.next_bits(31)
        m = bound - 1
        if bound & m == 0:  # a power of two: the high bits
            return (bound * r) >> 31
        u = r
        while True:
            r = u % bound
            if u - r + m < 1 << 31:  # Java's ``u - r + m < 0``: the int sum did not overflow
                return r
            u = self.next_bits(31)

    def randrange(self, start: int, stop: int | None = None, step: int = 1) -> int:
        """``randrange(n)`` is ``nextInt(n)``; ``randrange(a, b)`` is ``a + nextInt(b - a)``."""
        if stop is None:
            return self.next_int(start)
        if step != 1:
            raise ValueError("JavaRandom.randrange supports step 1 only")
        return start + self.next_int(stop - start)

    def shuffle(self, x: Any) -> None:
        """``Collections.shuffle(list, random)``: for i from size down to 2, swap(i - 1, nextInt(i))."""
        for i in range(len(x), 1, -1):
            j = self.next_int(i)
            x[i - 1], x[j] = x[j], x[i - 1]

    def random(self) -> float:
        """``Random.nextDouble()``."""
        return ((self.next_bits(26) << 27) + self.next_bits(27)) * 2.0**-53

    def getrandbits(self, k: int) -> int:
        """``k`` random bits from successive ``next(32)`` words, the first word the lowest."""
        if k < 0:
            raise ValueError("number of bits must be non-negative")
        out = shift = 0
        while shift < k:
            take = min(32, k - shift)
            out |= self.next_bits(take) << shift
            shift += take
        return out
