"""Metadata answers naming many unknown topics, written straight from the names.

The schema codec builds one object per topic and encodes each field in turn: for a request at
``metadata.max.topics.per.request`` (10,000 names) building and encoding the answer took 35-90 ms
of the interpreter, which a client sending such requests back to back took from everyone else.
Every topic of such an answer is the same entry but for its name (UNKNOWN_TOPIC_OR_PARTITION, not
internal, no partitions, the default topic id and authorized operations), so the answer is the
codec's own bytes for no topic and for one topic, with the names spliced in: nothing of the
layout is written here but the topics array's count, a name's length, and that the entry starts
with its two-byte error code, and :func:`unknown_topics_encoder` checks even that against the
codec when it builds an encoder. ``tests/conformance/test_fast_encode.py`` proves the answers byte-identical to the codec's
for every version over generated names.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence

from .frame import uvarint_bytes

_INT32 = struct.Struct(">i")
_INT16 = struct.Struct(">h")
PROBE = "\u00e9probe"  # a name whose encoding occurs nowhere else in the probe answer
# names the encoder is checked on: short, a length of two varint bytes, multi-byte characters
_CHECK = ("a", "\u00e9" * 70, "b" * 249, PROBE)


class UnknownTopicsEncoder:
    """One version's answer body for topics named: ``head``, the count, each entry, ``tail``."""

    __slots__ = ("flexible", "_head", "_tail", "_before", "_after")

    def __init__(self, flexible: bool, head: bytes, tail: bytes, before: bytes, after: bytes) -> None:
        self.flexible = flexible
        self._head, self._tail = head, tail
        self._before, self._after = before, after  # an entry's bytes before and after its name

    def body(self, names: Sequence[str]) -> bytes:
        before, after = self._before, self._after
        parts = [self._head, _count(len(names), self.flexible)]
        if self.flexible:
            for name in names:
                raw = name.encode("utf-8")
                parts += (before, uvarint_bytes(len(raw) + 1), raw, after)
        else:
            pack = _INT16.pack
            for name in names:
                raw = name.encode("utf-8")
                parts += (before, pack(len(raw)), raw, after)
        parts.append(self._tail)
        return b"".join(parts)


def _count(n: int, flexible: bool) -> bytes:
    return uvarint_bytes(n + 1) if flexible else _INT32.pack(n)


def _name(name: str, flexible: bool) -> bytes:
    raw = name.encode("utf-8")
    return (uvarint_bytes(len(raw) + 1) if flexible else _INT16.pack(len(raw))) + raw


def unknown_topics_encoder(encode: Callable[[Sequence[str]], bytes], flexible: bool) -> UnknownTopicsEncoder:
    """From the codec (``encode(names)``: the answer body naming ``names``): where the topics array is,
    and an entry's bytes around its name, read from its answers naming no topic and ``PROBE``; then
    checked on names of other lengths. Raises ValueError when the codec's answers do not have that
    shape (use the codec)."""
    none, one = encode([]), encode([PROBE])
    zero, single = _count(0, flexible), _count(1, flexible)
    name = _name(PROBE, flexible)
    at = next((i for i, (a, b) in enumerate(zip(none, one, strict=False)) if a != b), len(none))
    at -= len(zero) - 1  # the counts differ in their last byte only
    if at < 0 or none[at:at + len(zero)] != zero or one[at:at + len(single)] != single:
        raise ValueError("no topics array where one was expected")
    head, tail = none[:at], none[at + len(zero):]
    if not (one.startswith(head) and one.endswith(tail)) or one.count(name) != 1:
        raise ValueError("the one-topic answer is not the empty one with an entry")
    entry = one[at + len(single):len(one) - len(tail)]
    if not entry[2:].startswith(name):
        raise ValueError("an entry does not start with its error code and name")
    encoder = UnknownTopicsEncoder(flexible, head, tail, entry[:2], entry[2 + len(name):])
    if encoder.body(_CHECK) != encode(_CHECK):
        raise ValueError("the codec's answer naming several topics is not the entries in turn")
    return encoder
