"""Every listener is bound as Kafka's ``listeners`` says, and a failure names the one that failed.

Issue 32: with two listeners and the second one's port busy, the error named the first. The
wildcard itself is checked in tests/unit/test_binding.py (nothing here binds beyond loopback)."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

from kafka_replica_assignor.protocol.client import ReplicaAssignorAdminClient
from kafka_replica_assignor.server.binding import bind_addresses, ipv6_available
from kafka_replica_assignor.server.security.users import scram_credential, write_users_file
from tests.servers import ServerThread

ROOT = Path(__file__).resolve().parents[2]


def test_a_busy_second_listener_is_the_one_named(tmp_path) -> None:
    users = tmp_path / "users.json"
    write_users_file(users, {"alice": {"SCRAM-SHA-512": scram_credential("SCRAM-SHA-512", "alice-secret",
                                                                          iterations=4096)}})
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            [sys.executable, "-m", "kafka_replica_assignor.server.main",
             "--override", f"listeners=PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:{port}",
             "--override", f"sasl.users.file={users}", "--override", "sasl.enabled.mechanisms=SCRAM-SHA-512"],
            capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert done.returncode == 1, (done.returncode, done.stdout, done.stderr)
    (line,) = done.stderr.strip().splitlines()
    assert line == (f"replica-assignor-server: cannot listen on SASL_PLAINTEXT://127.0.0.1:{port}: "
                    f"Address already in use")
    assert "server_started" not in done.stdout


NAME = "both-loopbacks.test"   # a name of our own: what it resolves to does not depend on /etc/hosts


def test_a_name_is_served_on_every_address_it_resolves_to_on_one_port(monkeypatch) -> None:
    assert ipv6_available(), "this machine has no IPv6 loopback (::1): the dual-address case cannot run"
    resolve = socket.getaddrinfo

    def both_loopbacks(host, *args, **kwargs):
        if host != NAME:
            return resolve(host, *args, **kwargs)
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", 0)),
                (socket.AF_INET6, socket.SOCK_STREAM, 6, "", ("::1", 0, 0, 0))]

    monkeypatch.setattr(socket, "getaddrinfo", both_loopbacks)
    assert len(bind_addresses(NAME)) == 2
    with ServerThread({"listeners": f"PLAINTEXT://{NAME}:0"}) as running:
        for host in ("127.0.0.1", "[::1]"):
            with ReplicaAssignorAdminClient(f"{host}:{running.port}") as admin:
                assert len(admin.create_replica_assignment(3, 2).assignments()) == 3
