"""SASL on the server: PLAIN and SCRAM-SHA-256/512, and the authentication state machine
Kafka brokers follow on ``SASL_PLAINTEXT`` and ``SASL_SSL`` listeners.

States of a connection (Kafka's ``SaslServerAuthenticator``)::

    INITIAL --ApiVersions--> HANDSHAKE --SaslHandshake v1--> AUTHENTICATE --SaslAuthenticate...--> COMPLETE
       |                         |
       +-------SaslHandshake-----+--SaslHandshake v0--> RAW (bare tokens, no Kafka header) ------> COMPLETE

Before COMPLETE only the requests named by :meth:`SaslSession.expected_api_keys` are
accepted; anything else closes the connection. A failure (unknown mechanism, bad
credentials, a malformed token) ends with an error response (none in RAW mode) and the
connection is closed after ``connection.failed.authentication.delay.ms``.

SCRAM follows RFC 5802 without channel binding (``n,,`` or ``y,,``); an unknown user goes
through the whole exchange with a salt derived from the user name and a per-process
secret, and fails at the proof like a wrong password, so the exchange does not reveal
which users exist. Error messages sent to clients are Kafka's.

The nonce of the client-final-message must be the server-first-message's (RFC 5802, 5.1),
with one exception, for librdkafka before 2.6.1 (Debian's kcat 1.7.1 links 2.0.2): it sends
its own nonce again in front of it (``r=`` client nonce + client nonce + server nonce).
Exactly that form is accepted, nothing else: it still contains this exchange's server nonce,
the prefix is this exchange's client nonce (not chosen by anybody else), and the proof is
computed over the message as sent, so it proves the password for *this* exchange just the
same. Kafka 3.8.1 to 3.9 accepted any prefix (``endsWith``); Kafka 4 refuses it
(docs/security.md, *SCRAM and librdkafka before 2.6.1*).
"""

from __future__ import annotations

import base64
import binascii
import hmac
import secrets
from collections.abc import Callable
from typing import Protocol

from kafka_replica_assignor.protocol.messages import ApiVersionsRequest, SaslAuthenticateRequest, SaslHandshakeRequest

from .principal import user_principal
from .users import DEFAULT_ITERATIONS, HASHES, ScramCredential, UserStore, digest, hmac_digest, password_matches

INITIAL, HANDSHAKE, AUTHENTICATE, RAW, COMPLETE, FAILED = (
    "initial", "handshake", "authenticate", "raw", "complete", "failed")

API_VERSIONS, SASL_HANDSHAKE, SASL_AUTHENTICATE = (
    ApiVersionsRequest.API_KEY, SaslHandshakeRequest.API_KEY, SaslAuthenticateRequest.API_KEY)
_EXPECTED = {INITIAL: frozenset({API_VERSIONS, SASL_HANDSHAKE}), HANDSHAKE: frozenset({SASL_HANDSHAKE}),
             AUTHENTICATE: frozenset({SASL_AUTHENTICATE})}

INVALID_CREDENTIALS = "Authentication failed during authentication due to invalid credentials with SASL mechanism {}"
PLAIN_INVALID = "Authentication failed: Invalid username or password"
AUTHZID_MISMATCH = "Authentication failed: Client requested an authorization id that is different from username"


class AuthenticationFailed(Exception):
    """The exchange failed. ``str(exc)`` is safe to send to the client; ``detail`` is for the log."""

    def __init__(self, message: str, detail: str | None = None, user: str | None = None) -> None:
        super().__init__(message)
        self.detail = detail or message
        self.user = user


class PlainServer:
    """RFC 4616: one token ``authzid NUL authcid NUL password``; checked against the user's
    salted credential (PBKDF2, a few milliseconds: :attr:`blocking` asks the caller to run
    :meth:`evaluate` off the event loop)."""

    name = "PLAIN"
    blocking = True

    def __init__(self, users: UserStore, secret: bytes) -> None:
        self._users = users
        self._secret = secret
        self.complete = False
        self.user: str | None = None

    def evaluate(self, token: bytes) -> bytes:
        if self.complete:
            raise AuthenticationFailed(PLAIN_INVALID, "PLAIN token after completion")
        parts = token.split(b"\x00")
        if len(parts) != 3:
            raise AuthenticationFailed(PLAIN_INVALID, "PLAIN token is not authzid NUL authcid NUL password")
        try:
            authzid, authcid, password = (p.decode("utf-8") for p in parts)
        except UnicodeDecodeError:
            raise AuthenticationFailed(PLAIN_INVALID, "PLAIN token is not UTF-8") from None
        if not authcid or not password:
            raise AuthenticationFailed(PLAIN_INVALID, "PLAIN token has an empty user name or password")
        if authzid and authzid != authcid:
            raise AuthenticationFailed(AUTHZID_MISMATCH, user=authcid)
        credential = self._users.any_credential(authcid)
        if credential is None:
            # same cost as a real check, so timing does not tell which users exist
            password_matches(_decoy_credential(self._secret, "SCRAM-SHA-256", authcid), password)
            raise AuthenticationFailed(PLAIN_INVALID, "unknown user", user=authcid)
        if not password_matches(credential, password):
            raise AuthenticationFailed(PLAIN_INVALID, "wrong password", user=authcid)
        self.complete, self.user = True, authcid
        return b""


def _decoy_credential(secret: bytes, mechanism: str, user: str) -> ScramCredential:
    """A stable, unusable credential for a user that does not exist."""
    size = len(digest(mechanism, b""))
    seed = hmac_digest(mechanism, secret, f"{mechanism}\x00{user}".encode())
    return ScramCredential(mechanism, seed[:16] + seed[-16:], DEFAULT_ITERATIONS,
                           hmac_digest(mechanism, seed, b"stored")[:size],
                           hmac_digest(mechanism, seed, b"server")[:size])


def _saslname(text: str) -> str:
    """RFC 5802 saslname: ``=2C`` is ``,`` and ``=3D`` is ``=``; any other ``=`` is an error."""
    out, i = [], 0
    while i < len(text):
        ch = text[i]
        if ch == "=":
            code = text[i + 1:i + 3]
            if code == "2C":
                out.append(",")
            elif code == "3D":
                out.append("=")
            else:
                raise ValueError("invalid escape in user name")
            i += 3
        elif ch == ",":
            raise ValueError("unescaped comma in user name")
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def _attributes(text: str) -> list[tuple[str, str]]:
    """``key=value,key=value``: RFC 5802 attributes (one letter) and Kafka's extensions."""
    out = []
    for item in text.split(","):
        key, sep, value = item.partition("=")
        if not sep or not key or not key.isalnum():
            raise ValueError(f"malformed attribute {item[:20]!r}")
        out.append((key, value))
    return out


def _printable_nonce(nonce: str) -> bool:
    return bool(nonce) and all(0x21 <= ord(c) <= 0x7E and c != "," for c in nonce)


class ScramServer:
    """RFC 5802 server side: client-first -> server-first -> client-final -> server-final."""

    blocking = False

    def __init__(self, mechanism: str, users: UserStore, secret: bytes,
                 server_nonce: Callable[[], str] = lambda: secrets.token_urlsafe(24)) -> None:
        if mechanism not in HASHES:
            raise ValueError(mechanism)
        self.name = mechanism
        self._server_nonce = server_nonce
        self._users = users
        self._secret = secret
        self._step = 0
        self.complete = False
        self.user: str | None = None
        self._credential: ScramCredential | None = None
        self._known = False
        self._gs2_header = ""
        self._client_first_bare = ""
        self._server_first = ""
        self._client_nonce = ""
        self._nonce = ""
        self.repeated_client_nonce = False  # librdkafka < 2.6.1's client-final-message

    def _fail(self, detail: str) -> AuthenticationFailed:
        self._step = -1
        return AuthenticationFailed(INVALID_CREDENTIALS.format(self.name), detail, user=self.user)

    def evaluate(self, token: bytes) -> bytes:
        try:
            text = token.decode("utf-8")
        except UnicodeDecodeError:
            raise self._fail("SCRAM message is not UTF-8") from None
        if self._step == 0:
            return self._client_first(text)
        if self._step == 1:
            return self._client_final(text)
        raise self._fail("SCRAM message after the exchange ended")

    def _client_first(self, text: str) -> bytes:
        # gs2-header: cbind-flag "," [authzid] ","
        parts = text.split(",", 2)
        if len(parts) != 3:
            raise self._fail("client-first message has no GS2 header")
        flag, authzid, bare = parts
        if flag not in ("n", "y"):
            raise self._fail("channel binding is not supported" if flag.startswith("p=") else "bad GS2 flag")
        try:
            if authzid and not authzid.startswith("a="):
                raise ValueError("bad authzid")
            authz = _saslname(authzid[2:]) if authzid else ""
            attrs = _attributes(bare)
            if len(attrs) < 2 or attrs[0][0] != "n" or attrs[1][0] != "r":
                raise ValueError("client-first message must start with n= and r=")
            username = _saslname(attrs[0][1])
        except ValueError as exc:
            raise self._fail(f"malformed client-first message: {exc}") from None
        nonce = attrs[1][1]
        if not username or not _printable_nonce(nonce):
            raise self._fail("empty user name or invalid nonce")
        extensions = dict(attrs[2:])  # Kafka's SCRAM extensions; unknown ones are ignored, as Kafka does
        if extensions.get("tokenauth", "").lower() == "true":
            raise self._fail("delegation tokens are not supported")
        self.user = username
        if authz and authz != username:
            self._step = -1
            raise AuthenticationFailed(AUTHZID_MISMATCH, user=username)
        credential = self._users.credential(username, self.name)
        self._known = credential is not None
        self._credential = credential or _decoy_credential(self._secret, self.name, username)
        self._gs2_header = f"{flag},{authzid},"
        self._client_first_bare = bare
        self._client_nonce = nonce
        self._nonce = nonce + self._server_nonce()
        cred = self._credential
        self._server_first = (f"r={self._nonce},s={base64.b64encode(cred.salt).decode('ascii')},"
                              f"i={cred.iterations}")
        self._step = 1
        return self._server_first.encode("ascii")

    def _client_final(self, text: str) -> bytes:
        head, sep, proof_b64 = text.rpartition(",p=")
        if not sep:
            raise self._fail("client-final message has no proof")
        try:
            attrs = _attributes(head)
            proof = base64.b64decode(proof_b64, validate=True)
        except (ValueError, binascii.Error) as exc:
            raise self._fail(f"malformed client-final message: {exc}") from None
        if len(attrs) < 2 or attrs[0][0] != "c" or attrs[1][0] != "r":
            raise self._fail("client-final message must start with c= and r=")
        try:
            binding = base64.b64decode(attrs[0][1], validate=True)
        except (ValueError, binascii.Error):
            raise self._fail("channel binding is not base64") from None
        if binding != self._gs2_header.encode("utf-8"):
            raise self._fail("channel binding does not repeat the GS2 header")
        nonce = attrs[1][1]
        if nonce != self._nonce:
            if nonce != self._client_nonce + self._nonce:  # the only other form accepted (above)
                raise self._fail("Invalid client nonce in the final client message.")
            self.repeated_client_nonce = True
        cred = self._credential
        assert cred is not None  # set by the client-first-message
        if len(proof) != len(cred.stored_key):
            raise self._fail("client proof has the wrong length")
        auth_message = f"{self._client_first_bare},{self._server_first},{head}".encode()
        signature = hmac_digest(self.name, cred.stored_key, auth_message)
        client_key = bytes(a ^ b for a, b in zip(proof, signature, strict=True))  # lengths checked above
        if not (hmac.compare_digest(digest(self.name, client_key), cred.stored_key) and self._known):
            raise self._fail("unknown user" if not self._known else "invalid client proof")
        server_signature = hmac_digest(self.name, cred.server_key, auth_message)
        self._step, self.complete, self._credential = 2, True, None
        return b"v=" + base64.b64encode(server_signature)


class MechanismServer(Protocol):
    """What the session needs of one mechanism's server side (one object per exchange)."""

    name: str
    blocking: bool  # evaluate() is slow (a password hash): run it off the event loop
    complete: bool
    user: str | None

    def evaluate(self, token: bytes) -> bytes: ...


# the one table of server mechanisms: name -> factory(name, users, secret); every name in
# kafka_replica_assignor.protocol.security.SASL_MECHANISMS has an entry (a test checks it)
MECHANISM_SERVERS: dict[str, Callable[[str, UserStore, bytes], MechanismServer]] = {
    "PLAIN": lambda _name, users, secret: PlainServer(users, secret),
    **{name: ScramServer for name in HASHES},
}


def create_mechanism(name: str, users: UserStore, secret: bytes) -> MechanismServer:
    try:
        factory = MECHANISM_SERVERS[name]
    except KeyError:
        raise ValueError(f"no server side for SASL mechanism {name!r} "
                         f"(add it to MECHANISM_SERVERS in {__name__})") from None
    return factory(name, users, secret)


class SaslSession:
    """One connection's authentication, from the first request to COMPLETE or FAILED."""

    __slots__ = ("state", "mechanisms", "mechanism", "users", "secret", "principal")

    def __init__(self, mechanisms: tuple[str, ...], users: UserStore, secret: bytes) -> None:
        self.state = INITIAL
        self.mechanisms = mechanisms
        self.users = users
        self.secret = secret
        self.mechanism: MechanismServer | None = None
        self.principal: str | None = None

    @property
    def complete(self) -> bool:
        return self.state == COMPLETE

    @property
    def raw(self) -> bool:
        return self.state == RAW

    def expected_api_keys(self) -> frozenset[int]:
        return _EXPECTED.get(self.state, frozenset())

    def api_versions_answered(self) -> None:
        """A valid ApiVersions request moves INITIAL to HANDSHAKE (Kafka allows one)."""
        if self.state == INITIAL:
            self.state = HANDSHAKE

    def start(self, mechanism: str, raw: bool) -> bool:
        """SaslHandshake: False (and FAILED) when the mechanism is not enabled."""
        if mechanism not in self.mechanisms:
            self.state = FAILED
            return False
        self.mechanism = create_mechanism(mechanism, self.users, self.secret)
        self.state = RAW if raw else AUTHENTICATE
        return True

    def evaluate(self, token: bytes) -> bytes:
        """One client token in, the server's token out; raises AuthenticationFailed."""
        assert self.mechanism is not None, "evaluate() before start()"
        try:
            response = self.mechanism.evaluate(token)
        except AuthenticationFailed:
            self.state = FAILED
            raise
        if self.mechanism.complete:
            assert self.mechanism.user is not None  # a completed exchange names its user
            self.state = COMPLETE
            self.principal = user_principal(self.mechanism.user)
        return response
