"""SCRAM with librdkafka before 2.6.1 (Debian's kcat 1.7.1 links 2.0.2), whose
client-final-message repeats the client nonce in front of the server-first-message's nonce.

The client below builds its messages as librdkafka 2.0.2's ``rdkafka_sasl_scram.c`` does:
a 32-character client nonce drawn from ``'-'`` (0x2d) to ``'~'`` (0x7e); client-first
``n,,n=<user, ',' and '=' escaped>,r=<cnonce>``; client-final-without-proof
``c=biws,r=<cnonce><the r= value of the server-first-message>``; the proof over
``client-first-bare,server-first,client-final-without-proof``; and it checks the server's
``v=`` against its own ServerSignature. The server accepts exactly that form and nothing else
(server/security/sasl.py)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import random

import pytest

from kafka_replica_assignor.server.security.sasl import INVALID_CREDENTIALS, AuthenticationFailed, SaslSession
from kafka_replica_assignor.server.security.users import MIN_ITERATIONS, UserStore, scram_credential, write_users_file

SECRET = b"\x05" * 32
HASH = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    path = tmp_path_factory.mktemp("users") / "users.json"
    write_users_file(path, {"alice": {m: scram_credential(m, "alice-secret", iterations=MIN_ITERATIONS)
                                      for m in HASH}})
    return UserStore(str(path))


class Librdkafka202Client:
    """The SCRAM client of librdkafka 2.0.2 (and every version before 2.6.1), with
    ``repeat_client_nonce=False`` behaving as 2.6.1 does."""

    def __init__(self, mechanism: str, user: str, password: str, rng: random.Random,
                 repeat_client_nonce: bool = True) -> None:
        self.hash = HASH[mechanism]
        self.user, self.password = user, password
        self.cnonce = "".join(chr(rng.randint(0x2D, 0x7E)) for _ in range(32))
        self.repeat = repeat_client_nonce
        self.first_bare = ""
        self.server_signature = b""

    def _hmac(self, key: bytes, msg: bytes) -> bytes:
        return hmac.new(key, msg, self.hash).digest()

    def first_message(self) -> bytes:
        safe = self.user.replace(",", "=2C").replace("=", "=3D")
        message = f"n,,n={safe},r={self.cnonce}"
        self.first_bare = message[3:]
        return message.encode()

    def final_message(self, server_first: bytes, nonce_prefix: str | None = None) -> bytes:
        text = server_first.decode()
        attrs = dict(item.split("=", 1) for item in text.split(","))
        server_nonce, salt, iterations = attrs["r"], base64.b64decode(attrs["s"]), int(attrs["i"])
        assert server_nonce.startswith(self.cnonce) and len(server_nonce) > len(self.cnonce)
        salted = hashlib.pbkdf2_hmac(self.hash, self.password.encode(), salt, iterations)
        client_key = self._hmac(salted, b"Client Key")
        stored_key = hashlib.new(self.hash, client_key).digest()
        prefix = nonce_prefix if nonce_prefix is not None else (self.cnonce if self.repeat else "")
        without_proof = f"c=biws,r={prefix}{server_nonce}"
        auth_message = f"{self.first_bare},{text},{without_proof}".encode()
        self.server_signature = self._hmac(self._hmac(salted, b"Server Key"), auth_message)
        signature = self._hmac(stored_key, auth_message)
        proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
        return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()

    def check_server_final(self, message: bytes) -> None:
        assert message == b"v=" + base64.b64encode(self.server_signature)


@pytest.mark.parametrize("mechanism", sorted(HASH))
@pytest.mark.parametrize("repeat", [True, False], ids=["librdkafka-2.0.2", "librdkafka-2.6.1"])
def test_librdkafka_clients_authenticate_with_and_without_the_repeated_nonce(store, mechanism, repeat):
    session = SaslSession(tuple(HASH), store, SECRET)
    assert session.start(mechanism, raw=False)
    client = Librdkafka202Client(mechanism, "alice", "alice-secret", random.Random(7), repeat)
    final = client.final_message(session.evaluate(client.first_message()))
    assert final.startswith(f"c=biws,r={client.cnonce * (2 if repeat else 1)}".encode())
    client.check_server_final(session.evaluate(final))
    assert session.complete and session.principal == "User:alice"
    assert session.mechanism.repeated_client_nonce is repeat


@pytest.mark.parametrize("prefix", ["other-nonce", "x" * 32, "CNONCECNONCE", "CNONCE,", "HALF"],
                         ids=["other", "same-length", "client-nonce-twice", "with-comma", "part-of-it"])
def test_no_other_prefix_is_accepted(store, prefix):
    """Even with a proof that is right for the message as sent: only the client's own nonce,
    once, may stand in front of the server-first-message's nonce."""
    session = SaslSession(tuple(HASH), store, SECRET)
    assert session.start("SCRAM-SHA-256", raw=False)
    client = Librdkafka202Client("SCRAM-SHA-256", "alice", "alice-secret", random.Random(11))
    server_first = session.evaluate(client.first_message())
    prefix = prefix.replace("CNONCE", client.cnonce).replace("HALF", client.cnonce[:16])
    with pytest.raises(AuthenticationFailed) as caught:
        session.evaluate(client.final_message(server_first, nonce_prefix=prefix))
    assert str(caught.value) == INVALID_CREDENTIALS.format("SCRAM-SHA-256")
    assert session.state == "failed"


def test_the_repeated_nonce_with_a_wrong_password_still_fails(store):
    session = SaslSession(tuple(HASH), store, SECRET)
    assert session.start("SCRAM-SHA-512", raw=False)
    client = Librdkafka202Client("SCRAM-SHA-512", "alice", "wrong", random.Random(3))
    with pytest.raises(AuthenticationFailed, match="invalid credentials"):
        session.evaluate(client.final_message(session.evaluate(client.first_message())))
