"""A request body's structure, checked in one linear pass before the schema codec decodes it.

kafka-python's generated decoders trust their input: a varint may have any number of
continuation bytes (each costs a big-integer shift: N bytes cost O(N^2)), a length is not
checked against the bytes left, a tagged field in an array entry copies the rest of the body
(N entries with a tag cost O(N * size)), and a tag may repeat or claim more bytes than there
are. We refuse all of these and close the connection, before the generated decoder sees
the bytes.

The walk is driven by the same field definitions the codec uses (the message class's parsed
JSON schema, for the request's version); no message layout is written here by hand. It
checks, in time linear in the body's size:

- varints: at most 5 bytes (32-bit values; the request schemas have no 64-bit varints);
- strings, bytes and arrays: the length is -1/null or fits in the bytes left (an array of N
  entries needs at least N times the smallest entry), checked before anything is walked;
- tagged fields: each one's size fits, no tag twice, and a known tag's value takes exactly
  its size;
- bytes after the body are ignored, as Kafka's request parser ignores them: librdkafka's
  all-topics Metadata request (v9 and later) leaves a 4-byte array-count placeholder in
  place, so its body reads as a complete request followed by 3 more bytes. Refusing them
  would refuse the most used client; ignoring them costs nothing (they are never decoded).

A body with unknown tagged fields (which the codec would keep aside and nobody reads) is
handed to the codec without them, so that the codec never copies the rest of the body per
tagged entry. Known tagged fields inside array entries would still cost the codec that
copy: a schema with one is refused when its walk is built (none of the request schemas has
one today).
"""

from __future__ import annotations

import codecs
import functools
import struct
from collections.abc import Callable
from typing import Any

from kafka.protocol.schemas.fields.codecs.types import (
    UUID,
    Boolean,
    Bytes,
    Float64,
    Int8,
    Int16,
    Int32,
    Int64,
    String,
    UnsignedInt16,
)

from .frame import MalformedFrameError, uvarint_bytes

Data = bytes | bytearray | memoryview
Op = tuple[Any, ...]  # one walked field: its kind, then what the kind needs
Strips = list[tuple[int, int, Any]]  # unknown tagged fields found: where, and what of them is kept

# op codes: what a field is on the wire
_FIXED = 0  # (op, size)
_STRING16 = 1  # int16 length, -1 = null
_BYTES32 = 2  # int32 length, -1 = null
_COMPACT = 3  # (op, is a string): unsigned varint length + 1, 0 = null (compact string or bytes)
_ARRAY_FIXED = 4  # (op, compact, element size)
_ARRAY = 5  # (op, compact, element op, element's smallest size)
_STRUCT = 6  # (op, nullable, walk)
_ARRAY_STRUCT = 7  # (op, compact, walk)

_FIXED_SIZES = {Int8: 1, Int16: 2, UnsignedInt16: 2, Int32: 4, Int64: 8, Float64: 8, Boolean: 1, UUID: 16}
_VARINT_MAX_BYTES = 5


class StructureError(MalformedFrameError):
    """The body is not a well-formed request of its api and version; ``reason`` says why."""

    def __init__(self, reason: str, offset: int) -> None:
        super().__init__(f"{reason} (at byte {offset} of the body)")
        self.reason = reason
        self.offset = offset


class _Walk:
    """One struct at one version: its untagged fields in order, and its known tags."""

    __slots__ = ("ops", "flexible", "tags", "min_size")

    def __init__(self, ops: tuple[Op, ...], flexible: bool, tags: dict[int, Any], min_size: int) -> None:
        self.ops = ops
        self.flexible = flexible
        self.tags = tags
        self.min_size = min_size


def _field_op(field: Any, version: int, compact: bool, in_array: bool) -> tuple[Op, int]:
    """The op walking ``field`` and the fewest bytes it can take."""
    if field.is_struct_array():
        walk = _build(field.array_of, version, compact, in_array=True)
        return (_ARRAY_STRUCT, compact, walk), 1 if compact else 4
    if field.is_array():
        element, element_min = _field_op(field.array_of, version, compact, in_array)
        if element[0] == _FIXED:
            return (_ARRAY_FIXED, compact, element[1]), 1 if compact else 4
        return (_ARRAY, compact, element, max(element_min, 1)), 1 if compact else 4
    if field.is_struct():
        walk = _build(field, version, compact, in_array)
        nullable = field.nullable_for_version_q(version)
        return (_STRUCT, nullable, walk), 1 if nullable else walk.min_size
    codec = field._type
    if codec in _FIXED_SIZES:
        return (_FIXED, _FIXED_SIZES[codec]), _FIXED_SIZES[codec]
    if isinstance(codec, String) or codec is Bytes:
        if compact:
            return (_COMPACT, isinstance(codec, String)), 1
        return ((_STRING16,), 2) if isinstance(codec, String) else ((_BYTES32,), 4)
    raise NotImplementedError(f"field {field.name}: type {field.type_str} has no structural walk")


def _build(struct: Any, version: int, compact: bool, in_array: bool) -> _Walk:
    ops: list[Op] = []
    min_size = 0
    for field in struct.untagged_fields(version):
        op, size = _field_op(field, version, compact, in_array)
        if op[0] == _FIXED and ops and ops[-1][0] == _FIXED:
            ops[-1] = (_FIXED, ops[-1][1] + op[1])  # adjacent fixed fields: one skip
        else:
            ops.append(op)
        min_size += size
    tags = {}
    if compact:
        for field in struct.tagged_fields(version)._fields:
            if in_array:
                raise NotImplementedError(
                    f"{struct.name}: a known tagged field ({field.name}) inside array entries; the codec "
                    "would copy the rest of the body for each entry")
            tags[field.tag] = _field_op(field, version, True, in_array)[0]
        min_size += 1
    return _Walk(tuple(ops), compact, tags, min_size)


@functools.cache
def request_walk(cls: Any, version: int) -> _Walk:
    """The walk of ``cls``'s body at ``version`` (built once)."""
    return _build(cls._struct, version, cls.flexible_version_q(version), in_array=False)


def _emit_length(lines: list[str], compact: bool, width: int) -> None:
    """Source for: ``n``, a length (-1: null), read at ``pos`` (``_length``, inlined)."""
    if compact:
        lines += ["    if pos < end and data[pos] < 0x80:",
                  "        n = data[pos] - 1",
                  "        pos += 1",
                  "    else:",
                  "        n, pos = _uvarint(data, pos, end)",
                  "        n -= 1"]
    else:
        lines += [f"    if pos + {width} > end:",
                  "        raise StructureError('truncated length', pos)",
                  f"    n = _SIGNED{width}(data, pos)[0]",
                  "    if n < -1:",
                  "        raise StructureError(f'negative length {n}', pos)",
                  f"    pos += {width}"]


_FORMATS = {Int8: ">b", Int16: ">h", UnsignedInt16: ">H", Int32: ">i", Int64: ">q", Boolean: ">?"}


@functools.cache
def _field_walk(cls: Any, version: int, name: str) -> tuple[tuple[Op, ...], struct.Struct]:
    """The ops of the untagged fields before ``name`` (a number), and its format."""
    ops: list[Op] = []
    for field in cls._struct.untagged_fields(version):
        if field.name == name:
            return tuple(ops), struct.Struct(_FORMATS[field._type])
        ops.append(_field_op(field, version, cls.flexible_version_q(version), in_array=False)[0])
    raise KeyError(f"{cls.__name__} v{version} has no field {name}")


def peek_field(cls: Any, version: int, body: Data, name: str) -> int:
    """The value of the number field ``name`` of a request body, without decoding the rest:
    the fields before it are walked (checked as by :func:`check_request_body`), so its cost is
    that of the fields before it (a constant when they are numbers or arrays of numbers)."""
    ops, fmt = _field_walk(cls, version, name)
    pos, end = 0, len(body)
    for op in ops:
        pos = _op(op, body, pos, end, None)
    if pos + fmt.size > end:
        raise StructureError("truncated field", end)
    value: int = fmt.unpack_from(body, pos)[0]
    return value


def _top_level_source(walk: _Walk, env: dict[str, Any], strings: bool) -> list[str] | None:
    """Source checking the top level of ``walk`` (indented for a function body that has
    ``data``, ``end`` and ``strips``), leaving ``pos`` after the body; what nests (arrays of
    structs, structs) goes through the general walk. Generated from the same ops, so it checks
    exactly what :func:`_walk` checks. With ``strings`` it also decodes every string as UTF-8,
    as the codec does (None when a string is nested, where only the codec decodes it)."""
    lines = ["    pos = 0"]
    for i, op in enumerate(walk.ops):
        kind = op[0]
        if kind == _FIXED:
            lines += [f"    pos += {op[1]}",
                      "    if pos > end:",
                      "        raise StructureError('truncated field', end)"]
        elif kind in (_COMPACT, _STRING16, _BYTES32):
            _emit_length(lines, kind == _COMPACT, 2 if kind == _STRING16 else 4)
            lines += ["    if n > end - pos:",
                      "        raise StructureError(f'a string or bytes of {n} bytes with {end - pos} left', pos)",
                      "    if n > 0:"]
            if strings and (kind == _STRING16 or (kind == _COMPACT and op[1])):
                lines += ["        if n > _UTF8_SLICE:",
                          "            _check_utf8(data, pos, n)",
                          "        else:",
                          "            str(data[pos:pos + n], 'utf-8')"]
            lines.append("        pos += n")
        elif kind == _ARRAY_FIXED:
            lines.append("    start = pos")
            _emit_length(lines, op[1], 4)
            lines += ["    if n > 0:",
                      f"        if n * {op[2]} > end - pos:",
                      f"            raise StructureError(f'an array of {{n}} entries ({{n * {op[2]}}} bytes) with "
                      "{end - pos} bytes left', start)",
                      f"        pos += n * {op[2]}"]
        else:
            if strings and _has_strings(op):
                return None
            env[f"OP{i}"] = op
            lines.append(f"    pos = _op(OP{i}, data, pos, end, strips)")
    if walk.flexible:
        if strings and any(_has_strings(op) for op in walk.tags.values()):
            return None
        lines += ["    if pos < end and data[pos] == 0:",
                  "        pos += 1",
                  "    else:",
                  "        pos = _tagged(WALK, data, pos, end, strips)"]
    return lines


def _has_strings(op: Op) -> bool:
    kind = op[0]
    if kind == _STRING16 or (kind == _COMPACT and op[1]):
        return True
    if kind == _ARRAY:
        return _has_strings(op[2])
    if kind in (_STRUCT, _ARRAY_STRUCT):
        walk = op[2]
        return any(_has_strings(o) for o in walk.ops) or any(_has_strings(o) for o in walk.tags.values())
    return False


def _generate(name: str, head: list[str], body: list[str], tail: list[str],
              env: dict[str, Any]) -> Callable[..., Any]:
    exec(compile("\n".join(head + body + tail), name, "exec"), env)  # noqa: S102
    generated: Callable[..., Any] = env["generated"]
    return generated


# a string longer than this is checked as UTF-8 slice by slice: decoding it whole allocated a str as
# large as the frame (99 MiB: about 90 ms on the event loop, and that much memory)
_UTF8_SLICE = 1 << 16


def _check_utf8(data: Data, pos: int, n: int) -> None:
    """Raise UnicodeDecodeError, as ``str(data[pos:pos + n], 'utf-8')`` would, keeping at most one slice."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    end = pos + n
    for start in range(pos, end, _UTF8_SLICE):
        decoder.decode(data[start:min(start + _UTF8_SLICE, end)], final=False)
    decoder.decode(b"", final=True)


def _env(walk: _Walk) -> dict[str, Any]:
    return {"_UTF8_SLICE": _UTF8_SLICE, "_check_utf8": _check_utf8, "StructureError": StructureError, "_uvarint": _uvarint, "_op": _op, "_tagged": _tagged, "WALK": walk,
            "_SIGNED2": struct.Struct(">h").unpack_from, "_SIGNED4": struct.Struct(">i").unpack_from,
            "_without": _without}


@functools.cache
def _compiled(cls: Any, version: int) -> Callable[..., Any]:
    """check(data, end, strips) -> the position after the body: the walk's top level as one
    generated function."""
    walk = request_walk(cls, version)
    env = _env(walk)
    body = _top_level_source(walk, env, strings=False)
    assert body is not None
    return _generate(f"<structure:{cls.__name__}_v{version}>", ["def generated(data, end, strips):"], body,
                     ["    return pos"], env)


def checked_decoder(cls: Any, version: int, decode: Callable[..., Any]) -> Callable[..., Any]:
    """``decoder(body) -> message``: the walk, then ``decode(body, 0)`` (the codec's compiled
    decoder) on the body, or on a copy without its unknown tagged fields; one generated function
    per api and version, so a request pays no dispatch between the check and the codec."""
    walk = request_walk(cls, version)
    env = _env(walk)
    env["DECODE"] = decode
    body = _top_level_source(walk, env, strings=False)
    assert body is not None
    return _generate(f"<structure:{cls.__name__}_v{version}:decode>",
                     ["def generated(data):", "    end = len(data)", "    strips = []"], body,
                     ["    if strips:", "        data = _without(data, strips)", "    return DECODE(data, 0)[0]"], env)


def checker(cls: Any, version: int) -> Callable[..., Any] | None:
    """``check(body)``, raising on exactly the bodies that the walk plus the codec refuse, or None
    when that needs the codec (a string inside an array, a struct or a known tagged field).

    Why it refuses the same bodies without decoding: once the walk has passed, every length is
    within the body and every varint within 5 bytes, so the codec cannot run past the end; the
    only other thing it refuses is a string that is not UTF-8, which this check decodes too
    (numbers, booleans and byte strings take any bits). ``tests/unit/test_body_check.py`` checks
    the equivalence on mutated bodies."""
    walk = request_walk(cls, version)
    env = _env(walk)
    body = _top_level_source(walk, env, strings=True)
    if body is None:
        return None
    return _generate(f"<structure:{cls.__name__}_v{version}:check>",
                     ["def generated(data):", "    end = len(data)", "    strips = None"], body, [], env)


def _without(body: Data, strips: Strips) -> bytes:
    """``body`` without the unknown tagged fields the walk found (``strips``)."""
    data = body if isinstance(body, memoryview) else memoryview(body)
    pieces: list[bytes | memoryview] = []
    last = 0
    for start, stop, kept in strips:
        pieces.append(data[last:start])
        pieces.append(uvarint_bytes(len(kept)))
        for tag, value_start, value_end in kept:
            pieces += (uvarint_bytes(tag), uvarint_bytes(value_end - value_start), data[value_start:value_end])
        last = stop
    pieces.append(data[last:])
    return b"".join(pieces)


def _uvarint(data: Data, pos: int, end: int) -> tuple[int, int]:
    value = shift = 0
    for _ in range(_VARINT_MAX_BYTES):
        if pos >= end:
            raise StructureError("truncated varint", pos)
        b = data[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, pos
        shift += 7
    raise StructureError(f"varint longer than {_VARINT_MAX_BYTES} bytes", pos - _VARINT_MAX_BYTES)


def _length(data: Data, pos: int, end: int, compact: bool, width: int) -> tuple[int, int]:
    """A string/bytes/array length (-1: null) and the position after it; the length is not
    yet checked against what is left."""
    if compact:
        b = data[pos] if pos < end else 0x80
        if b < 0x80:
            return b - 1, pos + 1
        n, pos = _uvarint(data, pos, end)
        return n - 1, pos
    if pos + width > end:
        raise StructureError("truncated length", pos)
    n = int.from_bytes(data[pos:pos + width], "big", signed=True)
    if n < -1:
        raise StructureError(f"negative length {n}", pos)
    return n, pos + width


def _walk(walk: _Walk, data: Data, pos: int, end: int, strips: Strips | None) -> int:
    for op in walk.ops:
        pos = _op(op, data, pos, end, strips)
    if walk.flexible:
        if pos < end and data[pos] == 0:  # no tagged fields: the common case
            return pos + 1
        pos = _tagged(walk, data, pos, end, strips)
    return pos


# one function per walked field, on every request's bytes: a branch per kind here costs less
# than a call per field (bench/request_cost.py)
def _op(op: Op, data: Data, pos: int, end: int, strips: Strips | None) -> int:  # noqa: C901
    kind = op[0]
    if kind == _FIXED:
        pos += op[1]
        if pos > end:
            raise StructureError("truncated field", end)
        return pos
    if kind == _COMPACT or kind == _STRING16 or kind == _BYTES32:
        n, pos = _length(data, pos, end, kind == _COMPACT, 2 if kind == _STRING16 else 4)
        if n > end - pos:
            raise StructureError(f"a string or bytes of {n} bytes with {end - pos} left", pos)
        return pos + max(n, 0)
    if kind == _STRUCT:
        if op[1]:  # nullable: one byte, -1 for null
            if pos >= end:
                raise StructureError("truncated struct", pos)
            if data[pos] == 0xFF:
                return pos + 1
            pos += 1
        return _walk(op[2], data, pos, end, strips)
    compact = op[1]
    start = pos
    n, pos = _length(data, pos, end, compact, 4)
    if n <= 0:
        return pos
    if kind == _ARRAY_FIXED:
        size: int = n * op[2]
        if size > end - pos:
            raise StructureError(f"an array of {n} entries ({size} bytes) with {end - pos} bytes left", start)
        return pos + size
    if kind == _ARRAY:
        element, smallest = op[2], op[3]
        if n * smallest > end - pos:
            raise StructureError(f"an array of {n} entries with {end - pos} bytes left", start)
        for _ in range(n):
            pos = _op(element, data, pos, end, strips)
        return pos
    walk = op[2]
    if n * walk.min_size > end - pos:
        raise StructureError(f"an array of {n} entries with {end - pos} bytes left", start)
    ops, flexible = walk.ops, walk.flexible
    for _ in range(n):  # _walk, inlined: this loop runs once per entry
        for entry_op in ops:
            if entry_op[0] == _FIXED:
                pos += entry_op[1]
                if pos > end:
                    raise StructureError("truncated field", end)
            else:
                pos = _op(entry_op, data, pos, end, strips)
        if flexible:
            if pos < end and data[pos] == 0:
                pos += 1
            else:
                pos = _tagged(walk, data, pos, end, strips)
    return pos


def _tagged(walk: _Walk, data: Data, pos: int, end: int, strips: Strips | None) -> int:  # noqa: C901 - as _op
    start = pos
    count, pos = _uvarint(data, pos, end)
    if count == 0:
        return pos
    if count == 1 and not walk.tags and pos + 2 <= end and data[pos] < 0x80 and data[pos + 1] < 0x80:
        # one unknown tag with a short size: the common shape, without the general loop
        pos += 2 + data[pos + 1]
        if pos > end:
            raise StructureError(f"tagged field {data[start + 1]} declares {data[start + 2]} bytes "
                                 f"with {end - start - 3} left", start + 1)
        if strips is not None:
            strips.append((start, pos, ()))
        return pos
    if 2 * count > end - pos:  # a tag and a size: at least two bytes each
        raise StructureError(f"{count} tagged fields with {end - pos} bytes left", start)
    seen: set[int] | None = set() if count > 1 else None
    kept = []
    for _ in range(count):
        at = pos
        tag, pos = _uvarint(data, pos, end)
        if seen is not None:
            if tag in seen:
                raise StructureError(f"tagged field {tag} appears twice", at)
            seen.add(tag)
        size, pos = _uvarint(data, pos, end)
        if size > end - pos:
            raise StructureError(f"tagged field {tag} declares {size} bytes with {end - pos} left", at)
        value_end = pos + size
        op = walk.tags.get(tag)
        if op is not None:
            if _op(op, data, pos, value_end, None) != value_end:
                raise StructureError(f"tagged field {tag} does not take the {size} bytes it declares", at)
            kept.append((tag, pos, value_end))
        pos = value_end
    if strips is not None and len(kept) < count:
        strips.append((start, pos, kept))
    return pos


def check_request_body(cls: Any, version: int, body: Data) -> bytes | None:
    """Check ``body`` (a request of ``cls`` at ``version``, after its header); raise
    :class:`StructureError` naming what is wrong. Returns None when the codec may decode
    ``body`` as it is, or a copy without its unknown tagged fields for the codec to decode."""
    strips: Strips = []
    _compiled(cls, version)(body, len(body), strips)  # what follows the body is ignored, as by Kafka
    return _without(body, strips) if strips else None
