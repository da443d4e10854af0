"""Bearer tokens → tenants from one Secrets Manager secret (hashes only), cached in the process.

Secret JSON: {"tokens": [{"sha256": "<hex sha256 of the token>", "tenant": "acme", "scope": "read|write"}]}.
A rotated secret is picked up after `cache_seconds`; an unknown token forces one early refresh (at most
once a `min_refresh_seconds`), so a token added a moment ago works without waiting out the cache.
"""

from __future__ import annotations

import hmac
import json
import threading
import time
from collections.abc import Callable
from typing import Any

from episodic.auth import READ, SCOPES, Authenticator, Principal, token_hash
from episodic.aws._calls import error_code, error_message
from episodic.errors import AuthError, ConfigError


def parse_token_secret(raw: str) -> list[tuple[str, Principal]]:
    """(sha256, principal) pairs from the secret string; a malformed secret is a ConfigError."""
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"token secret is not valid JSON: {exc.msg}") from exc
    tokens = data.get("tokens") if isinstance(data, dict) else None
    if not isinstance(tokens, list):
        raise ConfigError('token secret must look like {"tokens": [{"sha256": …, "tenant": …, "scope": …}]}')
    entries = []
    for position, entry in enumerate(tokens):
        if not isinstance(entry, dict):
            raise ConfigError(f"token secret entry {position} is not an object")
        digest, tenant, scope = entry.get("sha256"), entry.get("tenant"), entry.get("scope", READ)
        if not isinstance(digest, str) or len(digest) != 64 or not isinstance(tenant, str) or not tenant:
            raise ConfigError(f"token secret entry {position} needs a 64-hex 'sha256' and a 'tenant'")
        if scope not in SCOPES:
            raise ConfigError(f"token secret entry {position} has unknown scope {scope!r}")
        entries.append((digest.lower(), Principal(tenant_id=tenant, scopes=SCOPES[scope])))
    return entries


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

    @staticmethod
    def _match(presented: str, entries: list[tuple[str, Principal]]) -> Principal | None:
        found: Principal | None = None
        for digest, principal in entries:  # no early exit: timing does not reveal which entry matched
            if hmac.compare_digest(presented, digest):
                found = principal
        return found

    def authenticate(self, token: str | None) -> Principal:
        if not token:
            raise AuthError("missing bearer token")
        presented = token_hash(token)
        principal = self._match(presented, self._current())
        if principal is None:
            principal = self._match(presented, self._current(force=True))
        if principal is None:
            raise AuthError("unknown or revoked token")
        return principal
