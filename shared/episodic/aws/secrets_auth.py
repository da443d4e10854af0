"""Bearer tokens → tenants from one Secrets Manager secret (hashes only): the authorizer's reader and the
`episodic token add|list|revoke --aws` writer.

Secret JSON: {"tokens": [{"sha256": "<hex sha256 of the token>", "tenant": "acme", "scope": "read|write"}]}.
A rotated secret is picked up after `cache_seconds`; an unknown token forces one early refresh (at most
once a `min_refresh_seconds`), so a token added a moment ago works without waiting out the cache. A malformed
current version (a hand edit gone wrong) is logged and the AWSPREVIOUS version, else the last good one read,
keeps authenticating: valid tokens keep working while someone fixes it.

Writes are atomic: the new document is validated, put as AWSPENDING, and AWSCURRENT is moved to it only from
the version it was computed from (UpdateSecretVersionStage's RemoveFromVersionId fails when another writer
moved AWSCURRENT first; the change is then recomputed on the newer document).
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

from episodic.aws._calls import error_code, error_message
from episodic.kernel.auth import (
    Authenticator,
    Principal,
    TokenInfo,
    find_token,
    match_token,
    new_token_entry,
    parse_token_document,
    token_document,
    token_info,
    token_principals,
    without_token,
)
from episodic.kernel.errors import ConfigError

log = logging.getLogger(__name__)
CURRENT, PREVIOUS, PENDING = "AWSCURRENT", "AWSPREVIOUS", "AWSPENDING"
# how long a revoked token can still pass: this cache plus API Gateway's authorizer cache (stacks/serving)
SECRET_CACHE_SECONDS = 60.0


def parse_token_secret(raw: str) -> list[tuple[str, Principal]]:
    """(sha256, principal) pairs from the secret string (the core's token-document rule); a malformed
    secret is a ConfigError."""
    return token_principals(parse_token_document(raw, "token secret", ConfigError))


def _secret_version(client: Any, secret_id: str, stage: str) -> tuple[str, str] | None:
    """(SecretString, VersionId) of a version stage; None when no version holds that stage."""
    try:
        response = client.get_secret_value(SecretId=secret_id, VersionStage=stage)
    except Exception as exc:
        code = error_code(exc)
        if code is None:
            raise
        if code == "ResourceNotFoundException" and stage != CURRENT:
            return None
        # a failing secret read must not turn into "everyone is unauthenticated" silently
        raise ConfigError(f"cannot read token secret {secret_id}: {error_message(exc)}") from exc
    raw = response.get("SecretString")
    if raw is None:
        raise ConfigError(f"token secret {secret_id} has no SecretString")
    return str(raw), str(response.get("VersionId", ""))


class SecretsManagerAuthenticator(Authenticator):
    def __init__(
        self,
        client: Any,
        secret_id: str,
        cache_seconds: float = SECRET_CACHE_SECONDS,
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
        current = _secret_version(self.client, self.secret_id, CURRENT)
        assert current is not None
        try:
            return parse_token_secret(current[0])
        except ConfigError as exc:
            log.error("token secret %s is malformed (%s): serving the last valid tokens", self.secret_id, exc)
            previous = _secret_version(self.client, self.secret_id, PREVIOUS)
            if previous is not None:
                try:
                    return parse_token_secret(previous[0])
                except ConfigError:
                    pass
            if self._entries is not None:
                return self._entries
            raise

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


class SecretTokenStore:
    """The deployed token secret as `episodic token add|list|revoke --aws` manage it (hashes only)."""

    def __init__(self, client: Any, secret_id: str, *, attempts: int = 3) -> None:
        self.client = client
        self.secret_id = secret_id
        self.attempts = attempts

    def _read(self) -> tuple[list[dict[str, Any]], str]:
        current = _secret_version(self.client, self.secret_id, CURRENT)
        assert current is not None
        raw, version = current
        tokens = parse_token_document(
            raw,
            f"token secret {self.secret_id} (AWSCURRENT {version})",
            ConfigError,
        )
        return tokens, version

    def _update(self, change: Callable[[list[dict[str, Any]]], list[dict[str, Any]]]) -> None:
        for _ in range(self.attempts):
            tokens, version = self._read()
            payload = token_document(change(tokens))
            parse_token_document(payload, "the new token document", ConfigError)  # never write a bad one
            pending = str(uuid.uuid4())
            self.client.put_secret_value(
                SecretId=self.secret_id,
                SecretString=payload,
                ClientRequestToken=pending,
                VersionStages=[PENDING],
            )
            try:
                self.client.update_secret_version_stage(
                    SecretId=self.secret_id,
                    VersionStage=CURRENT,
                    MoveToVersionId=pending,
                    RemoveFromVersionId=version,
                )
            except Exception as exc:
                if error_code(exc) != "InvalidParameterException":
                    raise
                continue  # another writer moved AWSCURRENT since we read it: recompute on its document
            try:  # tidy: AWSPENDING marks an unfinished change; another writer may have moved it already
                self.client.update_secret_version_stage(
                    SecretId=self.secret_id, VersionStage=PENDING, RemoveFromVersionId=pending
                )
            except Exception as exc:
                if error_code(exc) != "InvalidParameterException":
                    raise
            return
        raise ConfigError(
            f"token secret {self.secret_id} kept changing during {self.attempts} attempts; retry"
        )

    def add(self, tenant: str, scope: str) -> tuple[str, TokenInfo]:
        token, entry = new_token_entry(tenant, scope)
        self._update(lambda tokens: [*tokens, entry])
        return token, token_info(entry)

    def list(self) -> list[TokenInfo]:
        return [token_info(t) for t in self._read()[0]]

    def revoke(self, token_id: str) -> TokenInfo:
        gone: list[TokenInfo] = []

        def change(tokens: list[dict[str, Any]]) -> list[dict[str, Any]]:
            kept, info = without_token(tokens, token_id)
            gone[:] = [info]
            return kept

        self._update(change)
        return gone[0]
