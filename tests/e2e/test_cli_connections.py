"""The command line's connections as an operator makes them: ``--command-config`` (Kafka client
properties) against real SASL_SSL (SCRAM-SHA-512) and TLS-only listeners of our server, wrong
credentials, bad properties, dead or silent servers within ``--timeout-ms``, the shared exit
codes, ``--version``, and the asyncio client over TLS and SASL."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kafka_replica_assignor.protocol.client import AsyncReplicaAssignorAdminClient
from kafka_replica_assignor.protocol.client_config import SecurityOptions
from kafka_replica_assignor.protocol.errors import ReplicaAssignorFailedError
from kafka_replica_assignor.server.security.users import scram_credential, write_users_file
from tests.e2e.pki import Pki
from tests.e2e.security_plugins import TRIGGER_PARTITIONS
from tests.servers import ServerThread

ROOT = Path(__file__).resolve().parents[2]
ECHO = "tests.e2e.security_plugins.PrincipalEchoAssignor"
SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule"


def cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kafka_replica_assignor.cli.main", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT)


def one_line(proc: subprocess.CompletedProcess[str], prog: str) -> str:
    """The single error line of a failed command (nothing else on stderr or stdout)."""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith(f"replica-assignor {prog}: error: "), lines
    assert proc.stdout == ""
    return lines[0]


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return Pki.create(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="module")
def sasl_ssl(tmp_path_factory: pytest.TempPathFactory, pki: Pki) -> Iterator[ServerThread]:
    users = tmp_path_factory.mktemp("users") / "users.json"
    write_users_file(users, {"alice": {"SCRAM-SHA-512": scram_credential("SCRAM-SHA-512", "alice-secret",
                                                                         iterations=4096)}})
    props = {"listeners": "SASL_SSL://127.0.0.1:0", "ssl.keystore.location": str(pki.server_keystore),
             "sasl.enabled.mechanisms": "SCRAM-SHA-512", "sasl.users.file": str(users),
             "replica.assignor.class.name": ECHO, "replica.assignor.max.workers": "1"}
    with ServerThread(props) as server:
        yield server


@pytest.fixture(scope="module")
def tls_only(pki: Pki) -> Iterator[ServerThread]:
    props = {"listeners": "SSL://127.0.0.1:0", "ssl.keystore.location": str(pki.server_keystore),
             "ssl.truststore.location": str(pki.ca.path), "ssl.client.auth": "requested",
             "replica.assignor.class.name": ECHO, "replica.assignor.max.workers": "1"}
    with ServerThread(props) as server:
        yield server


def properties(path: Path, **props: str) -> str:
    path.write_text("# written by the test\n" + "".join(f"{k}={v}\n" for k, v in props.items()))
    return str(path)


def sasl_config(tmp_path: Path, pki: Pki, password: str = "alice-secret", **extra: str) -> str:
    return properties(tmp_path / "client.properties", **{
        "security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.jaas.config": f'{SCRAM} required username="alice" password="{password}";',
        "ssl.truststore.type": "PEM", "ssl.truststore.location": str(pki.ca.path), **extra})


def assign(server: ServerThread, *args: str) -> subprocess.CompletedProcess[str]:
    return cli("assign", "--bootstrap-server", server.bootstrap, "--partitions", "6", "--replication-factor", "3",
               *args)


def test_assign_over_sasl_ssl_with_a_command_config(sasl_ssl: ServerThread, pki: Pki, tmp_path: Path) -> None:
    proc = assign(sasl_ssl, "--command-config", sasl_config(tmp_path, pki))
    assert proc.returncode == 0 and proc.stderr == ""
    plan = json.loads(proc.stdout)
    assert [p["partition"] for p in plan["partitions"]] == list(range(6))
    assert all(len(set(p["replicas"])) == 3 for p in plan["partitions"])


def test_the_server_sees_the_sasl_user(sasl_ssl: ServerThread, pki: Pki, tmp_path: Path) -> None:
    proc = cli("assign", "--bootstrap-server", sasl_ssl.bootstrap, "--partitions", str(TRIGGER_PARTITIONS),
               "--replication-factor", "1", "--command-config", sasl_config(tmp_path, pki))
    assert proc.returncode == 1
    assert "principal=<User:alice>" in one_line(proc, "assign")


def test_wrong_password_is_one_line_saying_authentication_failed(sasl_ssl: ServerThread, pki: Pki,
                                                                 tmp_path: Path) -> None:
    proc = assign(sasl_ssl, "--command-config", sasl_config(tmp_path, pki, password="wrong"))
    assert proc.returncode == 1
    line = one_line(proc, "assign")
    assert "authentication failed" in line.lower()
    assert "SaslAuthenticationFailedError" not in line and "[Error" not in line


def test_unknown_property_is_one_line_naming_it(sasl_ssl: ServerThread, pki: Pki, tmp_path: Path) -> None:
    config = sasl_config(tmp_path, pki, **{"sasl.login.callback.handler.class": "x.Y"})
    proc = assign(sasl_ssl, "--command-config", config)
    assert proc.returncode == 2
    assert "'sasl.login.callback.handler.class' is not supported" in one_line(proc, "assign")


@pytest.mark.parametrize("props, message", [
    ({"ssl.truststore.type": "JKS"}, "ssl.truststore.type=JKS is not supported"),
    ({"sasl.mechanism": "GSSAPI"}, "sasl.mechanism GSSAPI is not supported"),
    ({"security.protocol": "SASL_SSL"}, "sasl.mechanism GSSAPI is not supported"),
    ({"ssl.endpoint.identification.algorithm": "ldap"}, "ssl.endpoint.identification.algorithm=ldap"),
    ({"security.protocol": "TLS"}, "security.protocol 'TLS' is not supported"),
])
def test_unsupported_values_exit_2(sasl_ssl: ServerThread, tmp_path: Path, props: dict[str, str],
                                   message: str) -> None:
    proc = assign(sasl_ssl, "--command-config", properties(tmp_path / "c.properties", **props))
    assert proc.returncode == 2
    assert message in one_line(proc, "assign")


def test_a_missing_command_config_file_exits_2(sasl_ssl: ServerThread, tmp_path: Path) -> None:
    proc = assign(sasl_ssl, "--command-config", str(tmp_path / "absent.properties"))
    assert proc.returncode == 2
    assert f"cannot read {tmp_path / 'absent.properties'}" in one_line(proc, "assign")


def test_tls_only_listener_with_truststore_and_client_keystore(tls_only: ServerThread, pki: Pki,
                                                               tmp_path: Path) -> None:
    anonymous = properties(tmp_path / "tls.properties", **{
        "security.protocol": "SSL", "ssl.truststore.type": "PEM", "ssl.truststore.location": str(pki.ca.path)})
    proc = assign(tls_only, "--command-config", anonymous)
    assert proc.returncode == 0, proc.stderr
    assert len(json.loads(proc.stdout)["partitions"]) == 6

    with_certificate = properties(tmp_path / "mtls.properties", **{
        "security.protocol": "SSL", "ssl.truststore.location": str(pki.ca.path),
        "ssl.keystore.type": "PEM", "ssl.keystore.location": str(pki.client_keystore),
        "ssl.endpoint.identification.algorithm": ""})
    proc = cli("assign", "--bootstrap-server", tls_only.bootstrap, "--partitions", str(TRIGGER_PARTITIONS),
               "--replication-factor", "1", "--command-config", with_certificate)
    assert proc.returncode == 1
    assert f"principal=<{Pki.CLIENT_PRINCIPAL}>" in one_line(proc, "assign")


def test_tls_with_an_untrusted_server_certificate_fails_in_one_line(tls_only: ServerThread, pki: Pki,
                                                                    tmp_path: Path) -> None:
    config = properties(tmp_path / "other.properties", **{
        "security.protocol": "SSL", "ssl.truststore.location": str(pki.other_ca.path)})
    proc = assign(tls_only, "--command-config", config)
    assert proc.returncode == 1
    assert "TLS handshake with" in one_line(proc, "assign")


def test_conformance_runs_over_sasl_ssl(sasl_ssl: ServerThread, pki: Pki, tmp_path: Path) -> None:
    proc = cli("conformance", "--bootstrap-server", sasl_ssl.bootstrap, "--command-config",
               sasl_config(tmp_path, pki))
    assert "ApiVersions" in proc.stdout
    summary = proc.stdout.strip().splitlines()[-1]
    assert " 0 failed" in summary, proc.stdout
    assert proc.returncode == 0
    wrong = cli("conformance", "--bootstrap-server", sasl_ssl.bootstrap, "--command-config",
                sasl_config(tmp_path, pki, password="nope"))
    assert wrong.returncode == 1
    assert "authentication failed" in one_line(wrong, "conformance").lower()


async def test_the_asyncio_client_speaks_tls_and_sasl(sasl_ssl: ServerThread, pki: Pki) -> None:
    security = SecurityOptions(security_protocol="SASL_SSL", ssl_cafile=str(pki.ca.path),
                               sasl_mechanism="SCRAM-SHA-512", sasl_username="alice", sasl_password="alice-secret")
    async with AsyncReplicaAssignorAdminClient(sasl_ssl.bootstrap, security=security) as admin:
        assert sorted((await admin.create_replica_assignment(4, 2)).assignments()) == [0, 1, 2, 3]
        with pytest.raises(ReplicaAssignorFailedError, match="principal=<User:alice>"):
            await admin.create_replica_assignment(TRIGGER_PARTITIONS, 1)


async def test_the_asyncio_client_reports_wrong_credentials(sasl_ssl: ServerThread, pki: Pki) -> None:
    import kafka.errors as kafka_errors

    security = SecurityOptions(security_protocol="SASL_SSL", ssl_cafile=str(pki.ca.path),
                               sasl_mechanism="SCRAM-SHA-512", sasl_username="alice", sasl_password="wrong")
    async with AsyncReplicaAssignorAdminClient(sasl_ssl.bootstrap, security=security) as admin:
        with pytest.raises(kafka_errors.SaslAuthenticationFailedError, match="authentication failed at"):
            await admin.create_replica_assignment(4, 2)


# -- dead servers: every connecting subcommand, the same exit code, within its timeout ----------
TIMEOUT_MS = 1000
STARTUP_S = 8.0  # the interpreter and its imports, on a busy machine

COMMANDS = {
    "assign": ["assign", "--bootstrap-server", "{addr}", "--partitions", "3", "--replication-factor", "1"],
    "state": ["state", "--bootstrap-server", "{addr}"],
    "balance": ["balance", "--bootstrap-server", "{addr}", "--mode", "leader", "--out", "{out}"],
    "repair": ["repair", "--bootstrap-server", "{addr}"],
    "conformance": ["conformance", "--bootstrap-server", "{addr}"],
    "create-topic": ["create-topic", "--bootstrap-server", "{addr}", "--assignor", "{addr}", "--topic", "t",
                     "--partitions", "1", "--replication-factor", "1"],
    "add-partitions": ["add-partitions", "--bootstrap-server", "{addr}", "--assignor", "{addr}", "--topic", "t",
                       "--partitions", "2"],
}


@pytest.fixture
def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def silent_port() -> Iterator[int]:
    """Accepts connections (the kernel's backlog) and never answers."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(16)
        yield int(s.getsockname()[1])


@pytest.mark.parametrize("name", sorted(COMMANDS))
@pytest.mark.parametrize("kind", ["closed", "silent"])
def test_a_dead_server_fails_within_the_timeout(name: str, kind: str, closed_port: int, silent_port: int,
                                                tmp_path: Path) -> None:
    port = closed_port if kind == "closed" else silent_port
    argv = [a.format(addr=f"127.0.0.1:{port}", out=tmp_path / "plan") for a in COMMANDS[name]]
    started = time.monotonic()
    proc = cli(*argv, "--timeout-ms", str(TIMEOUT_MS))
    elapsed = time.monotonic() - started
    assert proc.returncode == 1, proc.stderr
    line = one_line(proc, name)
    assert f"127.0.0.1:{port}" in line
    names = [w.rstrip(":") for w in line.split() if w.rstrip(":").endswith(("Error", "Exception"))]
    assert len(names) == len(set(names)) <= 1, line  # never "KafkaTimeoutError: KafkaTimeoutError: ..."
    assert elapsed < TIMEOUT_MS / 1000 + STARTUP_S
    assert not (tmp_path / "plan").exists()


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_a_negative_timeout_is_refused(name: str, closed_port: int, tmp_path: Path) -> None:
    argv = [a.format(addr=f"127.0.0.1:{closed_port}", out=tmp_path / "plan") for a in COMMANDS[name]]
    proc = cli(*argv, "--timeout-ms", "-1")
    assert proc.returncode == 2
    assert "--timeout-ms: must be > 0 milliseconds, got -1" in proc.stderr


def test_a_bad_bootstrap_address_exits_2() -> None:
    proc = cli("assign", "--bootstrap-server", "nohost", "--partitions", "1", "--replication-factor", "1")
    assert proc.returncode == 2
    assert "expected HOST:PORT, got 'nohost'" in proc.stderr


def test_help_documents_the_exit_codes() -> None:
    for argv in ([], ["assign"], ["create-topic"], ["state"], ["balance"], ["repair"]):
        proc = cli(*argv, "--help")
        assert proc.returncode == 0
        assert "exit codes: 0 ok; 1 the operation failed" in " ".join(proc.stdout.split()), argv
        assert "``" not in proc.stdout


@pytest.mark.parametrize("command", [["-m", "kafka_replica_assignor.cli.main"], ["-m", "kafka_replica_assignor.server.main"]])
def test_version(command: list[str]) -> None:
    from kafka_replica_assignor.protocol.version import package_version

    proc = subprocess.run([sys.executable, *command, "--version"], capture_output=True, text=True, timeout=60,
                          cwd=ROOT)
    assert proc.returncode == 0
    name = "replica-assignor" if command[1] == "kafka_replica_assignor.cli.main" else "replica-assignor-server"
    assert proc.stdout == f"{name} {package_version()}\n"
    assert package_version() not in ("", "unknown")
