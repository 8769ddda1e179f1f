"""Who asks: HTTP basic (a name and password of ``--http-users``) or a bearer token, each
compared in constant time (SHA-256 digests, :func:`hmac.compare_digest`, every entry looked at
whatever matched before), so neither a name nor a token leaks through the time of an answer."""

from __future__ import annotations

import base64
import binascii
import hmac

from .config import WebConfig, digest


class Auth:
    def __init__(self, config: WebConfig) -> None:
        self.users = config.users
        self.tokens = config.tokens

    def user(self, header: str | None) -> str | None:
        """The caller's name (``token`` for a bearer token), or None: no or wrong credentials."""
        if not header:
            return None
        scheme, _, value = header.strip().partition(" ")
        scheme, value = scheme.lower(), value.strip()
        if scheme == "bearer" and value:
            given = digest(value)
            found = False
            for token in self.tokens:
                found |= hmac.compare_digest(given, token)
            return "token" if found else None
        if scheme == "basic" and value:
            try:
                name, sep, password = base64.b64decode(value, validate=True).decode("utf-8").partition(":")
            except (binascii.Error, UnicodeDecodeError):
                return None
            if not sep:
                return None
            name_digest, password_digest = digest(name), digest(password)
            found = False
            for user_digest, secret in self.users:
                found |= hmac.compare_digest(name_digest, user_digest) & hmac.compare_digest(password_digest, secret)
            return name if found else None
        return None
