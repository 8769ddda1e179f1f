"""The users file: salted SCRAM credentials, never passwords (``sasl.users.file``).

A credential is what RFC 5802 says a server keeps: a random salt, an iteration count,
``StoredKey = H(HMAC(SaltedPassword, "Client Key"))`` and
``ServerKey = HMAC(SaltedPassword, "Server Key")``, where
``SaltedPassword = PBKDF2-HMAC-H(password, salt, iterations)``. It lets the server check a
SCRAM proof and prove itself to the client, but not recover the password. PLAIN is
checked against the same credential: the server derives StoredKey from the password it
was sent and compares.

The file is JSON, written by ``replica-assignor users add`` (mode 0600)::

    {"version": 1,
     "users": {"alice": {"SCRAM-SHA-256": {"salt": "<base64>", "iterations": 4096,
                                           "stored_key": "<base64>", "server_key": "<base64>"},
                         "SCRAM-SHA-512": {...}}}}

The server re-reads the file when it changes on disk, so users can be added or removed
without a restart; a file that no longer parses is logged and the last good one is kept.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import os
import secrets
import stat
import tempfile
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import structlog

from kafka_replica_assignor.cluster.files import NotARegularFile, read_regular
from kafka_replica_assignor.protocol.security import SCRAM_HASHES

log = structlog.get_logger("replica_assignor")


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")

HASHES = SCRAM_HASHES  # mechanism -> hashlib name (kafka_replica_assignor.protocol.security)
# RFC 7677 asks for at least 4096; Kafka refuses fewer for both mechanisms
MIN_ITERATIONS = 4096
# kafka-python's SCRAM client refuses more than this
MAX_ITERATIONS = 1_000_000
DEFAULT_ITERATIONS = 8192
FILE_VERSION = 1


class UsersFileError(ValueError):
    """The users file is unreadable or malformed; the message names the file and the entry."""


@dataclass(frozen=True, slots=True)
class ScramCredential:
    mechanism: str
    salt: bytes
    iterations: int
    stored_key: bytes
    server_key: bytes

    def __post_init__(self) -> None:
        if self.mechanism not in HASHES:
            raise ValueError(f"unknown SCRAM mechanism {self.mechanism!r}")
        if not MIN_ITERATIONS <= self.iterations <= MAX_ITERATIONS:
            raise ValueError(f"iterations must be between {MIN_ITERATIONS} and {MAX_ITERATIONS}, "
                             f"got {self.iterations}")
        size = hashlib.new(HASHES[self.mechanism]).digest_size
        if len(self.stored_key) != size or len(self.server_key) != size:
            raise ValueError(f"{self.mechanism} keys must be {size} bytes")
        if len(self.salt) < 8:
            raise ValueError("the salt must be at least 8 bytes")

    def to_json(self) -> dict[str, Any]:
        return {"salt": _b64(self.salt), "iterations": self.iterations,
                "stored_key": _b64(self.stored_key), "server_key": _b64(self.server_key)}

    @classmethod
    def from_json(cls, mechanism: str, data: Mapping[str, Any]) -> ScramCredential:
        try:
            return cls(mechanism, base64.b64decode(data["salt"], validate=True), int(data["iterations"]),
                       base64.b64decode(data["stored_key"], validate=True),
                       base64.b64decode(data["server_key"], validate=True))
        except (KeyError, TypeError, binascii.Error) as exc:
            raise ValueError(f"needs base64 salt, stored_key, server_key and an integer iterations ({exc})") from None


def hmac_digest(mechanism: str, key: bytes, message: bytes) -> bytes:
    return hmac.new(key, message, HASHES[mechanism]).digest()


def digest(mechanism: str, data: bytes) -> bytes:
    return hashlib.new(HASHES[mechanism], data).digest()


def salted_password(mechanism: str, password: str, salt: bytes, iterations: int) -> bytes:
    # no SASLprep: like Kafka's clients and kafka-python, the password's UTF-8 bytes
    return hashlib.pbkdf2_hmac(HASHES[mechanism], password.encode("utf-8"), salt, iterations)


def stored_key_for(mechanism: str, salted: bytes) -> bytes:
    return digest(mechanism, hmac_digest(mechanism, salted, b"Client Key"))


def scram_credential(mechanism: str, password: str, *, iterations: int = DEFAULT_ITERATIONS,
                     salt: bytes | None = None) -> ScramCredential:
    """A new credential for ``password`` (random 32-byte salt unless one is given)."""
    if mechanism not in HASHES:
        raise ValueError(f"unknown SCRAM mechanism {mechanism!r}")
    salt = salt if salt is not None else secrets.token_bytes(32)
    salted = salted_password(mechanism, password, salt, iterations)
    return ScramCredential(mechanism, salt, iterations, stored_key_for(mechanism, salted),
                           hmac_digest(mechanism, salted, b"Server Key"))


def password_matches(credential: ScramCredential, password: str) -> bool:
    """PLAIN: does ``password`` derive the credential's StoredKey? (constant-time compare)"""
    salted = salted_password(credential.mechanism, password, credential.salt, credential.iterations)
    return hmac.compare_digest(stored_key_for(credential.mechanism, salted), credential.stored_key)


Users = dict[str, dict[str, ScramCredential]]


def parse_users(text: str, source: str) -> Users:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsersFileError(f"{source} is not valid JSON: {exc}") from None
    if not isinstance(data, dict) or data.get("version") != FILE_VERSION or not isinstance(data.get("users"), dict):
        raise UsersFileError(f'{source}: expected {{"version": {FILE_VERSION}, "users": {{...}}}}')
    users: Users = {}
    for name, mechanisms in data["users"].items():
        if not name or not isinstance(mechanisms, dict):
            raise UsersFileError(f"{source}: user {name!r} must map mechanisms to credentials")
        creds = {}
        for mechanism, entry in mechanisms.items():
            if mechanism not in HASHES:
                raise UsersFileError(f"{source}: user {name!r}: unknown mechanism {mechanism!r} "
                                     f"(expected {', '.join(HASHES)})")
            if not isinstance(entry, dict):
                raise UsersFileError(f"{source}: user {name!r} {mechanism}: expected an object")
            try:
                creds[mechanism] = ScramCredential.from_json(mechanism, entry)
            except ValueError as exc:
                raise UsersFileError(f"{source}: user {name!r} {mechanism}: {exc}") from None
        users[name] = creds
    return users


# a users file larger than this is refused (a million users of two mechanisms take about 300 MB)
USERS_FILE_MAX_BYTES = 256 * 1024 * 1024
# a changed users file up to this size is re-read on the event loop (a few ms); a larger one in a
# thread, while logins go on with the users read before
USERS_FILE_INLINE_BYTES = 1024 * 1024


def read_users_file(path: str | os.PathLike[str]) -> Users:
    try:
        _, data = read_regular(path, USERS_FILE_MAX_BYTES)
        text = data.decode("utf-8")
    except FileNotFoundError:
        raise UsersFileError(f"users file {path} does not exist") from None
    except NotARegularFile as exc:
        raise UsersFileError(f"users file {exc}") from None
    except OSError as exc:
        raise UsersFileError(f"cannot read users file {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise UsersFileError(f"users file {path} is not UTF-8: {exc.reason} at byte {exc.start}") from None
    return parse_users(text, str(path))


def write_users_file(path: str | os.PathLike[str], users: Mapping[str, Mapping[str, ScramCredential]]) -> None:
    """Write atomically (temporary file, then rename), readable by the owner only."""
    path = Path(path)
    data = {"version": FILE_VERSION,
            "users": {name: {m: c.to_json() for m, c in sorted(creds.items())}
                      for name, creds in sorted(users.items())}}
    fd, tmp = tempfile.mkstemp(prefix=".users-", dir=path.parent or ".")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=2)
            f.write("\n")
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


class UserStore:
    """The users file as the server sees it: loaded at start-up, re-read when it changes."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._users: Users = {}
        self._stamp: tuple[int, int, int] | None = None
        self._loading: threading.Thread | None = None  # a large file re-read off the event loop
        self._load(initial=True)

    def _file_stamp(self) -> tuple[int, int, int] | None:
        try:
            st = os.stat(self.path)
        except OSError:
            return None
        return st.st_mtime_ns, st.st_size, st.st_ino

    def _load(self, initial: bool = False, stamp: tuple[int, int, int] | None = None) -> None:
        stamp = stamp or self._file_stamp()
        try:
            users = read_users_file(self.path)
        except UsersFileError as exc:
            if initial:
                raise
            log.error("users_file_rejected", path=self.path, error=str(exc))
            self._stamp = stamp  # do not retry until it changes again
            return
        self._users, self._stamp = users, stamp
        mode = os.stat(self.path).st_mode
        if mode & (stat.S_IRWXG | stat.S_IRWXO):
            log.warning("users_file_readable_by_others", path=self.path, mode=oct(mode & 0o777),
                        hint="chmod 600: the salted keys let anyone who reads them pose as this server")
        if not initial:
            log.info("users_file_reloaded", path=self.path, users=len(users))

    def refresh(self) -> None:
        stamp = self._file_stamp()
        if stamp == self._stamp or (self._loading is not None and self._loading.is_alive()):
            return
        if stamp is not None and stamp[1] > USERS_FILE_INLINE_BYTES:
            self._stamp = stamp  # read once, in a thread: logins meanwhile use the users read before
            self._loading = threading.Thread(target=self._load, kwargs={"stamp": stamp}, daemon=True,
                                             name="users-file")
            self._loading.start()
            return
        self._load()

    def credential(self, user: str, mechanism: str) -> ScramCredential | None:
        self.refresh()
        return self._users.get(user, {}).get(mechanism)

    def any_credential(self, user: str) -> ScramCredential | None:
        """For PLAIN: the user's SCRAM-SHA-256 credential, else its SCRAM-SHA-512 one."""
        self.refresh()
        creds = self._users.get(user, {})
        return creds.get("SCRAM-SHA-256") or creds.get("SCRAM-SHA-512")

    def __len__(self) -> int:
        return len(self._users)
