"""Local bearer tokens: hashes only, 0600, constant-time lookup, revoke, and the `token` commands."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner
from episodic.cli.errors import EpisodicGroup
from episodic.kernel.auth import LocalTokenStore, Principal, StaticAuthenticator
from episodic.kernel.errors import AuthError, InvalidArgumentError, NotFoundError


def test_add_returns_token_once_and_stores_only_its_hash(tmp_path: Path) -> None:
    store = LocalTokenStore(tmp_path / "tokens.json")
    token = store.add("alpha")
    assert token.startswith("epi_") and len(token) > 40
    raw = (tmp_path / "tokens.json").read_text()
    assert token not in raw and token[4:] not in raw
    entry = json.loads(raw)["tokens"][0]
    assert set(entry) == {"id", "tenant", "scope", "sha256", "prefix", "created_at"}
    assert stat.S_IMODE((tmp_path / "tokens.json").stat().st_mode) == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["tokens.json"]  # no temp file left behind


def test_authenticate_maps_token_to_tenant_and_scope(tmp_path: Path) -> None:
    store = LocalTokenStore(tmp_path / "tokens.json")
    read_token = store.add("alpha")
    write_token = store.add("beta", scope="write")
    assert store.authenticate(read_token) == Principal("alpha", frozenset({"read"}))
    beta = store.authenticate(write_token)
    assert beta.tenant_id == "beta" and beta.allows("write") and beta.allows("read")
    for bad in (None, "", "epi_wrong", read_token + "x", read_token[:-1]):
        with pytest.raises(AuthError):
            store.authenticate(bad)


def test_list_and_revoke(tmp_path: Path) -> None:
    store = LocalTokenStore(tmp_path / "tokens.json")
    token = store.add("alpha")
    other = store.add("alpha")
    (info, _) = store.list()
    assert info.tenant_id == "alpha" and token.startswith(info.prefix) and len(info.prefix) == 8
    store.revoke(info.token_id)
    with pytest.raises(AuthError):
        store.authenticate(token)
    assert store.authenticate(other).tenant_id == "alpha"
    with pytest.raises(NotFoundError):
        store.revoke(info.token_id)


def test_bad_input_is_rejected_clearly(tmp_path: Path) -> None:
    store = LocalTokenStore(tmp_path / "tokens.json")
    with pytest.raises(InvalidArgumentError):
        store.add("../etc")
    with pytest.raises(InvalidArgumentError):
        store.add("alpha", scope="admin")
    (tmp_path / "tokens.json").write_text("{not json")
    with pytest.raises(AuthError, match="not valid JSON"):
        store.authenticate("epi_x")
    with pytest.raises(AuthError):
        store.add("alpha")  # a broken file is never overwritten
    assert (tmp_path / "tokens.json").read_text() == "{not json"


def test_static_authenticator() -> None:
    auth = StaticAuthenticator({"t1": Principal("alpha")})
    assert auth.authenticate("t1").tenant_id == "alpha"
    with pytest.raises(AuthError):
        auth.authenticate("t2")


def test_token_commands(episodic_home: Path) -> None:
    from episodic.cli.mcp_cmds import register

    group = EpisodicGroup("episodic")  # the real group: it maps errors
    register(group)
    runner = CliRunner()
    added = runner.invoke(group, ["token", "add", "--tenant", "alpha"])
    assert added.exit_code == 0, added.output
    token = added.stdout.strip()
    assert token.startswith("epi_")
    listed = runner.invoke(group, ["token", "list"])
    assert "alpha" in listed.output and token not in listed.output
    token_id = LocalTokenStore(episodic_home / "tokens.json").list()[0].token_id
    revoked = runner.invoke(group, ["token", "revoke", token_id])
    assert revoked.exit_code == 0 and "revoked" in revoked.output
    missing = runner.invoke(group, ["token", "revoke", token_id])
    assert missing.exit_code != 0 and "no token" in missing.output
    bad = runner.invoke(group, ["token", "add", "--tenant", "no/slash"])
    assert bad.exit_code != 0 and "invalid tenant" in bad.output
