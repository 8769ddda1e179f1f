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

The request side is the same idea: :func:`topic_names_reader` reads, from the codec's request
naming ``PROBE``, what an entry of the topics array holds around its name (a fixed number of bytes
before it: the topic id from v10; after it: an empty tagged-field count when flexible), and
:meth:`TopicNamesReader.names` takes the names' bytes out of a body without building an object per
topic, answering None for anything it does not read exactly so (a null or empty name, a tagged
field in an entry, a length past the end, a name that is not UTF-8): the caller then uses the
codec, which says what is wrong, as before. ``tests/conformance/test_fast_metadata.py`` proves on
generated and mutated bodies that whenever it answers, the names are the codec's (empty ones aside,
which the server leaves out) and the codec accepts the body.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence

from .frame import MalformedFrameError, uvarint_bytes, uvarint_read

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
        return self.body_of_raw([name.encode("utf-8") for name in names])

    def body_of_raw(self, names: Sequence[bytes | memoryview]) -> bytes:
        """:meth:`body` of names already encoded (UTF-8)."""
        before, after = self._before, self._after
        parts: list[bytes | memoryview] = [self._head, _count(len(names), self.flexible)]
        if self.flexible:
            for raw in names:
                parts += (before, uvarint_bytes(len(raw) + 1), raw, after)
        else:
            pack = _INT16.pack
            for raw in names:
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


class TopicNamesReader:
    """One request version's topics array, read for its names (module doc)."""

    __slots__ = ("flexible", "_skip", "_after", "empty")

    def __init__(self, flexible: bool, skip: int, after: bytes) -> None:
        self.flexible = flexible
        self._skip, self._after = skip, after    # an entry's bytes before its name (any), after it (these)
        self.empty = _count(0, flexible)          # the topics array naming none

    def names(self, body: bytes | bytearray | memoryview) -> tuple[list[bytes], int] | None:
        """The UTF-8 names of the topics array at the start of ``body``, and where the array ends;
        None when an entry is not read exactly as the codec's (module doc)."""
        try:
            return self._names(bytes(body))     # one copy: the names are then slices, not views
        except MalformedFrameError:             # a varint truncated or too long
            return None

    def _names(self, data: bytes) -> tuple[list[bytes], int] | None:
        end = len(data)
        if self.flexible:
            count, pos = uvarint_read(data, 0)
            count -= 1
        elif end >= 4:
            (count,), pos = _INT32.unpack_from(data, 0), 4
        else:
            return None
        if count < 0 or count > end:
            return None
        skip, after, width = self._skip, self._after, len(self._after)
        flexible, unpack = self.flexible, _INT16.unpack_from
        out: list[bytes] = []
        for _ in range(count):
            pos += skip
            if flexible:
                size, pos = uvarint_read(data, pos)
                size -= 1
            elif pos + 2 <= end:
                (size,), pos = unpack(data, pos), pos + 2
            else:
                return None
            stop = pos + size
            if size <= 0 or stop + width > end or data[stop:stop + width] != after:
                return None
            raw = data[pos:stop]
            if not raw.isascii():
                try:
                    str(raw, "utf-8")
                except UnicodeDecodeError:
                    return None
            out.append(raw)
            pos = stop + width
        return out, pos


def topic_names_reader(encode: Callable[[Sequence[str]], bytes], flexible: bool) -> TopicNamesReader:
    """From the codec (``encode(names)``: the request body naming ``names``, nothing else set): an
    entry's bytes around its name, read from its requests naming no topic and ``PROBE``, then checked
    on the names of :data:`_CHECK`. Raises ValueError when the codec's requests do not have that shape
    (a topics array first, each entry a fixed-size part, the name, then fixed bytes)."""
    none, one = encode([]), encode([PROBE])
    zero, single = _count(0, flexible), _count(1, flexible)
    if not none.startswith(zero) or not one.startswith(single):
        raise ValueError("the topics array is not the request's first field")
    tail = none[len(zero):]
    name = _name(PROBE, flexible)
    if not one.endswith(tail) or one.count(name) != 1:
        raise ValueError("the one-topic request is not the empty one with an entry")
    entry = one[len(single):len(one) - len(tail)]
    skip = entry.index(name)
    reader = TopicNamesReader(flexible, skip, entry[skip + len(name):])
    checked = encode(_CHECK)
    found = reader.names(checked)
    if found is None or [str(raw, "utf-8") for raw in found[0]] != list(_CHECK) or checked[found[1]:] != tail:
        raise ValueError("the codec's request naming several topics is not the entries in turn")
    return reader
