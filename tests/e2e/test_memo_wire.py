"""Over the wire, the placement memo changes no byte: two servers with the same seed, one
with the memo and one without (``replica.assignor.memo.max.entries=0``), answer a mix of
requests (repeated shapes, forced simple placement, NodeId subsets, v0 and v1, errors)
with identical frames, pipelined on one connection each."""

from __future__ import annotations

import socket
import struct

from kafka_replica_assignor.protocol.messages import CreateReplicaAssignmentRequest, CreateReplicaAssignmentResponse
from tests.servers import ServerThread


def _requests() -> list[CreateReplicaAssignmentRequest]:
    out = []
    for i in range(120):
        version = i % 2
        n = (1, 3, 12, 40)[i % 4]
        rf = (1, 2, 3, 7)[(i // 4) % 4]  # 7 > 6 brokers: an error answer
        fields = dict(version=version, num_partitions=n, replication_factor=rf,
                      node_id=[0, 2, 4, 5] if i % 7 == 0 else [], timeout_ms=30_000,
                      force_simple_assignment=i % 5 == 0)
        if version >= 1:
            fields["topic_name"] = f"topic-{i % 3}"
        out.append(CreateReplicaAssignmentRequest(**fields))
    return out


def _exchange(port: int, requests) -> list[bytes]:
    frames = []
    for cid, request in enumerate(requests):
        request.with_header(correlation_id=cid, client_id="e2e-memo")
        frames.append(request.encode(header=True, framed=True))
    answers = []
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(b"".join(frames))
        buf = b""
        while len(answers) < len(requests):
            chunk = sock.recv(1 << 16)
            assert chunk, "connection closed early"
            buf += chunk
            while len(buf) >= 4 and len(buf) >= 4 + struct.unpack(">i", buf[:4])[0]:
                size = struct.unpack(">i", buf[:4])[0]
                answers.append(buf[4:4 + size])
                buf = buf[4 + size:]
    return answers


def test_memo_on_and_off_answer_the_same_bytes():
    requests = _requests()
    seeded = {"replica.assignor.random.seed": "11"}
    with ServerThread(seeded) as with_memo, \
            ServerThread({**seeded, "replica.assignor.memo.max.entries": "0"}) as without:
        # twice over: the second round is answered from the memo on the first server
        first = _exchange(with_memo.port, requests)
        again = _exchange(with_memo.port, requests)
        reference = _exchange(without.port, requests)
    assert first == reference
    assert again == reference
    decoded = [CreateReplicaAssignmentResponse.decode(a[5:], version=r.version) for a, r in zip(reference, requests, strict=True)]
    assert sum(1 for d in decoded if d.error_code == 0) >= 80
    assert sum(1 for d in decoded if d.error_code != 0) >= 20


def test_unseeded_answers_still_vary():
    """The memo keeps Kafka's random start: the same request does not always get one answer."""
    request = CreateReplicaAssignmentRequest(version=0, num_partitions=12, replication_factor=3, node_id=[],
                                             timeout_ms=30_000)
    with ServerThread() as server:
        answers = _exchange(server.port, [request] * 60)
    distinct = {a[4:] for a in answers}  # without the correlation id
    assert len(distinct) > 5
