"""Encoding large CreateReplicaAssignment responses straight from tuples.

The schema codec builds one object per partition; for 100,000 partitions that costs
most of a second. This module writes the same bytes directly: the conformance tests
(``tests/conformance/test_fast_encode.py``) prove it byte-identical to the codec for
every version over generated inputs. It handles success responses only; errors go
through the codec (they carry no partitions).

Layout (both versions are flexible): ``[v1: ThrottleTimeMs int32, ErrorCode int16,
ErrorMessage compact nullable string]`` then ``ReplicaAssignment`` as a compact array
(uvarint length + 1) of ``{PartitionId int32, Replicas compact int32 array, tagged
fields (empty)}``, then the top-level tagged fields (empty in v1; in v0 the error
fields are tagged and omitted when they hold their defaults).
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Mapping, Sequence

from .frame import frame, uvarint_bytes

_HEAD_V1 = b"\x00\x00\x00\x00" + b"\x00\x00" + b"\x00"  # throttle 0, error 0, message null
_INT32 = struct.Struct(">i")


def _entry_packer(n: int) -> Callable[[int, Sequence[int]], bytes]:
    """pack(partition, *replicas) for one entry with ``n`` replicas."""
    if n < 127:  # the compact-array length (n + 1) fits in one varint byte
        packer = struct.Struct(f">iB{n}iB").pack
        marker = n + 1
        return lambda p, reps: packer(p, marker, *reps, 0)
    prefix = uvarint_bytes(n + 1)
    return lambda p, reps: _INT32.pack(p) + prefix + struct.pack(f">{n}i", *reps) + b"\x00"


def encode_assignment_body(version: int, assignment: Mapping[int, Sequence[int]]) -> bytes:
    """The response body (no header) for a successful assignment, partitions in id order."""
    keys = list(assignment)
    items = assignment.items() if keys == sorted(keys) else sorted(assignment.items())
    head = (_HEAD_V1 if version >= 1 else b"") + uvarint_bytes(len(keys) + 1)
    sizes = set(map(len, assignment.values()))
    if len(sizes) == 1 and (n := sizes.pop()) < 127:
        packer = struct.Struct(f">iB{n}iB").pack
        marker = n + 1
        entries = [packer(p, marker, *reps, 0) for p, reps in items]
    else:
        packers: dict[int, Callable[..., bytes]] = {}
        entries = []
        for p, reps in items:
            n = len(reps)
            pack = packers.get(n) or packers.setdefault(n, _entry_packer(n))
            entries.append(pack(p, reps))
    return head + b"".join(entries) + b"\x00"  # top-level tagged fields: none


def encode_assignment_frame(version: int, correlation_id: int, assignment: Mapping[int, Sequence[int]]) -> bytes:
    """A whole response frame: length, header v1 (correlation id, empty tags), body."""
    return frame(correlation_id, encode_assignment_body(version, assignment), flexible_header=True)
