"""Bearer tokens that map to tenants: the port (`Authenticator`) and the local, file-backed store.

Only SHA-256 hashes of tokens are kept; a token is shown once, when it is created. The AWS face
implements the same `Authenticator` over Secrets Manager.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import re
import secrets
import tempfile
import threading
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from episodic.errors import AuthError, InvalidArgumentError, NotFoundError

READ = "read"
WRITE = "write"
SCOPES: dict[str, frozenset[str]] = {
    READ: frozenset({READ}),
    WRITE: frozenset({READ, WRITE}),  # a write token can also search
}
TOKEN_PREFIX = "epi_"
_TENANT_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


@dataclass(frozen=True)
class Principal:
    """Who is calling: the tenant every query is scoped to, and what the caller may do."""

    tenant_id: str
    scopes: frozenset[str] = field(default_factory=lambda: SCOPES[READ])

    def allows(self, scope: str) -> bool:
        return scope in self.scopes


class Authenticator(ABC):
    """Turns a bearer token into a Principal, or raises AuthError."""

    @abstractmethod
    def authenticate(self, token: str | None) -> Principal: ...


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def validate_tenant(tenant: str) -> str:
    if not _TENANT_RE.match(tenant or ""):
        raise InvalidArgumentError(
            f"invalid tenant name {tenant!r}: use 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit"
        )
    return tenant


@dataclass(frozen=True)
class TokenInfo:
    """What `token list` shows: never the token, only its id and first characters."""

    token_id: str
    tenant_id: str
    scope: str
    prefix: str
    created_at: str


class LocalTokenStore(Authenticator):
    """Tokens in one JSON file (mode 0600, atomic writes) holding hashes only."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()

    # ------------------------------------------------------------ file

    def _read(self) -> list[dict[str, Any]]:
        try:
            raw = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return []
        try:
            data = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise AuthError(f"token file {self.path} is not valid JSON: {exc}") from exc
        tokens = data.get("tokens") if isinstance(data, dict) else None
        if not isinstance(tokens, list):
            raise AuthError(f"token file {self.path} has no 'tokens' list")
        return [t for t in tokens if isinstance(t, dict)]

    def _write(self, tokens: list[dict[str, Any]]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        payload = json.dumps({"version": 1, "tokens": tokens}, indent=2) + "\n"
        fd, tmp = tempfile.mkstemp(prefix=".tokens-", dir=self.path.parent)  # mkstemp creates it 0600
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(payload)
                handle.flush()
                os.fsync(handle.fileno())
            os.chmod(tmp, 0o600)
            os.replace(tmp, self.path)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            raise

    # ------------------------------------------------------------ commands

    def add(self, tenant: str, scope: str = READ) -> str:
        """Create a token for a tenant and return it; only its hash is stored (show it once)."""
        validate_tenant(tenant)
        if scope not in SCOPES:
            raise InvalidArgumentError(f"unknown scope {scope!r}: use one of {sorted(SCOPES)}")
        token = TOKEN_PREFIX + secrets.token_urlsafe(32)
        entry = {
            "id": secrets.token_hex(4),
            "tenant": tenant,
            "scope": scope,
            "sha256": token_hash(token),
            "prefix": token[: len(TOKEN_PREFIX) + 4],
            "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        }
        with self._lock:
            tokens = self._read()
            tokens.append(entry)
            self._write(tokens)
        return token

    def list(self) -> list[TokenInfo]:
        return [
            TokenInfo(
                token_id=str(t.get("id", "")),
                tenant_id=str(t.get("tenant", "")),
                scope=str(t.get("scope", READ)),
                prefix=str(t.get("prefix", "")),
                created_at=str(t.get("created_at", "")),
            )
            for t in self._read()
        ]

    def revoke(self, token_id: str) -> TokenInfo:
        with self._lock:
            tokens = self._read()
            kept = [t for t in tokens if t.get("id") != token_id]
            if len(kept) == len(tokens):
                raise NotFoundError(f"no token with id {token_id!r} (see `episodic token list`)")
            gone = next(t for t in tokens if t.get("id") == token_id)
            self._write(kept)
        return TokenInfo(
            token_id=token_id,
            tenant_id=str(gone.get("tenant", "")),
            scope=str(gone.get("scope", READ)),
            prefix=str(gone.get("prefix", "")),
            created_at=str(gone.get("created_at", "")),
        )

    def authenticate(self, token: str | None) -> Principal:
        if not token:
            raise AuthError("missing bearer token")
        presented = token_hash(token)
        match: dict[str, Any] | None = None
        # compare against every entry (no early exit) so timing says nothing about which one matched
        for entry in self._read():
            if hmac.compare_digest(presented, str(entry.get("sha256", ""))):
                match = entry
        if match is None:
            raise AuthError("unknown or revoked token")
        scope = str(match.get("scope", READ))
        return Principal(tenant_id=str(match["tenant"]), scopes=SCOPES.get(scope, SCOPES[READ]))


class StaticAuthenticator(Authenticator):
    """A fixed token → principal map (for tests and embedding in other processes)."""

    def __init__(self, tokens: dict[str, Principal]) -> None:
        self._by_hash = {token_hash(t): p for t, p in tokens.items()}

    def authenticate(self, token: str | None) -> Principal:
        if not token:
            raise AuthError("missing bearer token")
        presented = token_hash(token)
        found: Principal | None = None
        for digest, principal in self._by_hash.items():
            if hmac.compare_digest(presented, digest):
                found = principal
        if found is None:
            raise AuthError("unknown or revoked token")
        return found
