"""Bearer tokens → tenants from one Secrets Manager secret (hashes only), cached in the process.

Secret JSON: {"tokens": [{"sha256": "<hex sha256 of the token>", "tenant": "acme", "scope": "read|write"}]}.
A rotated secret is picked up after `cache_seconds`; an unknown token forces one early refresh (at most
once a `min_refresh_seconds`), so a token added a moment ago works without waiting out the cache.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from episodic.auth import (
    Authenticator,
    Principal,
    find_token,
    match_token,
    parse_token_document,
    token_principals,
)
from episodic.aws._calls import error_code, error_message
from episodic.errors import ConfigError


def parse_token_secret(raw: str) -> list[tuple[str, Principal]]:
    """(sha256, principal) pairs from the secret string (the core's token-document rule); a malformed
    secret is a ConfigError."""
    return token_principals(parse_token_document(raw, "token secret", ConfigError))


class SecretsManagerAuthenticator(Authenticator):
    def __init__(
        self,
        client: Any,
        secret_id: str,
        cache_seconds: float = 300.0,
        *,
        min_refresh_seconds: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.client = client
        self.secret_id = secret_id
        self.cache_seconds = cache_seconds
        self.min_refresh_seconds = min_refresh_seconds
        self.clock = clock
        self._entries: list[tuple[str, Principal]] | None = None
        self._loaded_at = 0.0
        self._lock = threading.Lock()

    def _load(self) -> list[tuple[str, Principal]]:
        try:
            response = self.client.get_secret_value(SecretId=self.secret_id)
        except Exception as exc:
            if error_code(exc) is None:
                raise
            # a failing secret read must not turn into "everyone is unauthenticated" silently
            raise ConfigError(f"cannot read token secret {self.secret_id}: {error_message(exc)}") from exc
        raw = response.get("SecretString")
        if raw is None:
            raise ConfigError(f"token secret {self.secret_id} has no SecretString")
        return parse_token_secret(raw)

    def _current(self, force: bool = False) -> list[tuple[str, Principal]]:
        with self._lock:
            age = self.clock() - self._loaded_at
            stale = self._entries is None or age >= self.cache_seconds
            if stale or (force and age >= self.min_refresh_seconds):
                self._entries = self._load()
                self._loaded_at = self.clock()
            assert self._entries is not None
            return self._entries

    def authenticate(self, token: str | None) -> Principal:
        if token and find_token(token, self._current()) is None:
            self._current(force=True)  # a token added a moment ago: one early refresh
        return match_token(token, self._current())
