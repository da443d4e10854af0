"""The prompt hook's read token for the local server, provisioned by `setup claude-code --write`.

The hook asks the local HTTP server with the `token` kept in the episodic config file, so after the
default setup nothing has to be exported. The token reads the configured tenant (the one `index`
writes), and is replaced when it no longer authenticates or names another tenant.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from episodic.kernel.auth import READ, LocalTokenStore
from episodic.kernel.errors import AuthError, ConfigError
from episodic.kernel.settings import Settings
from episodic.plumbing import envsource

LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")


@dataclass(frozen=True)
class HookToken:
    created: bool
    tenant: str
    config_path: Path
    reason: str  # why it was kept, created or not provisioned


def endpoint_is_local(settings: Settings) -> bool:
    return (urlsplit(settings.endpoint_url).hostname or "") in LOCAL_HOSTS


def set_config_value(path: Path, name: str, value: str) -> None:
    """Set a top-level string key in the TOML config, keeping every other line; mode 0600, atomic."""
    try:
        envsource.write_config_value(path, name, value)
    except ValueError as exc:
        raise ConfigError(str(exc)) from exc


def ensure_hook_token(settings: Settings) -> HookToken:
    """Keep a working token for the configured tenant, else create one and write it to the config file."""
    config = envsource.config_path()
    if not endpoint_is_local(settings):
        return HookToken(
            False, settings.tenant, config, f"the hook asks {settings.endpoint_url}: bring its token"
        )
    store = LocalTokenStore(settings.tokens_path)
    if settings.token:
        with contextlib.suppress(AuthError):
            if store.authenticate(settings.token).tenant_id == settings.tenant:
                return HookToken(False, settings.tenant, config, "the configured token is valid")
    token = store.add(settings.tenant, READ)
    set_config_value(config, "token", token)
    return HookToken(True, settings.tenant, config, f"created a read token for tenant {settings.tenant!r}")
