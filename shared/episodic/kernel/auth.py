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
import secrets
import tempfile
import threading
from abc import ABC, abstractmethod
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from episodic.kernel.errors import AuthError, EpisodicError, InvalidArgumentError, NotFoundError
from episodic.kernel.models import check_tenant

READ = "read"
WRITE = "write"
SCOPES: dict[str, frozenset[str]] = {
    READ: frozenset({READ}),
    WRITE: frozenset({READ, WRITE}),  # a write token can also search
}
TOKEN_PREFIX = "epi_"


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
    return check_tenant(tenant)  # the one tenant rule (episodic.kernel.models)


def parse_token_document(raw: str, where: str, error: type[EpisodicError]) -> list[dict[str, Any]]:
    """The `tokens` entries of a token document (the local token file and the Secrets Manager secret):
    {"tokens": [{"sha256": "<64 hex>", "tenant": "acme", "scope": "read|write", ...}]}; any malformed
    entry raises `error` naming it, so a broken document never silently drops a token."""
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise error(f"{where} is not valid JSON: {exc.msg}") from exc
    tokens = data.get("tokens") if isinstance(data, dict) else None
    if not isinstance(tokens, list):
        raise error(
            f'{where} has no \'tokens\' list: expected {{"tokens": [{{"sha256": …, "tenant": …, "scope": …}}]}}'
        )
    for position, entry in enumerate(tokens):
        if not isinstance(entry, dict):
            raise error(f"{where} entry {position} is not an object")
        digest, tenant, scope = entry.get("sha256"), entry.get("tenant"), entry.get("scope", READ)
        if not isinstance(digest, str) or len(digest) != 64 or not isinstance(tenant, str) or not tenant:
            raise error(f"{where} entry {position} needs a 64-hex 'sha256' and a 'tenant'")
        if scope not in SCOPES:
            raise error(f"{where} entry {position} has unknown scope {scope!r}")
    return tokens


def token_principals(tokens: Iterable[dict[str, Any]]) -> list[tuple[str, Principal]]:
    """(sha256, principal) pairs of checked token entries."""
    return [
        (str(t["sha256"]).lower(), Principal(tenant_id=str(t["tenant"]), scopes=SCOPES[t.get("scope", READ)]))
        for t in tokens
    ]


def find_token(token: str | None, entries: Iterable[tuple[str, Principal]]) -> Principal | None:
    """The one token matcher: compares the token's hash with every entry (no early exit, constant-time
    compares) so that timing says nothing about which entry matched; None when none does."""
    if not token:
        return None
    presented = token_hash(token)
    found: Principal | None = None
    for digest, principal in entries:
        if hmac.compare_digest(presented, digest):
            found = principal
    return found


def match_token(token: str | None, entries: Iterable[tuple[str, Principal]]) -> Principal:
    if not token:
        raise AuthError("missing bearer token")
    principal = find_token(token, entries)
    if principal is None:
        raise AuthError("unknown or revoked token")
    return principal


@dataclass(frozen=True)
class TokenInfo:
    """What `token list` shows: never the token, only its id and first characters."""

    token_id: str
    tenant_id: str
    scope: str
    prefix: str
    created_at: str


def new_token_entry(tenant: str, scope: str = READ) -> tuple[str, dict[str, Any]]:
    """A fresh token and the entry that stores it (its hash, never the token) in a token document."""
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
    return token, entry


def token_info(entry: dict[str, Any]) -> TokenInfo:
    return TokenInfo(
        token_id=str(entry.get("id", "")),
        tenant_id=str(entry.get("tenant", "")),
        scope=str(entry.get("scope", READ)),
        prefix=str(entry.get("prefix", "")),
        created_at=str(entry.get("created_at", "")),
    )


def without_token(tokens: list[dict[str, Any]], token_id: str) -> tuple[list[dict[str, Any]], TokenInfo]:
    """The document's entries without `token_id`, and what was removed (NotFoundError when it is absent)."""
    kept = [t for t in tokens if t.get("id") != token_id]
    if len(kept) == len(tokens):
        raise NotFoundError(f"no token with id {token_id!r} (see `episodic token list`)")
    return kept, token_info(next(t for t in tokens if t.get("id") == token_id))


def token_document(tokens: list[dict[str, Any]]) -> str:
    return json.dumps({"version": 1, "tokens": tokens}, indent=2) + "\n"


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
        return parse_token_document(raw, f"token file {self.path}", AuthError)

    def _write(self, tokens: list[dict[str, Any]]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        payload = token_document(tokens)
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
        token, entry = new_token_entry(tenant, scope)
        with self._lock:
            tokens = self._read()
            tokens.append(entry)
            self._write(tokens)
        return token

    def list(self) -> list[TokenInfo]:
        return [token_info(t) for t in self._read()]

    def revoke(self, token_id: str) -> TokenInfo:
        with self._lock:
            kept, gone = without_token(self._read(), token_id)
            self._write(kept)
        return gone

    def authenticate(self, token: str | None) -> Principal:
        return match_token(token, token_principals(self._read()))


class StaticAuthenticator(Authenticator):
    """A fixed token → principal map (for tests and embedding in other processes)."""

    def __init__(self, tokens: dict[str, Principal]) -> None:
        self._entries = [(token_hash(t), p) for t, p in tokens.items()]

    def authenticate(self, token: str | None) -> Principal:
        return match_token(token, self._entries)
