"""The prompt hook's local token: provisioned by setup for the configured tenant; `token add` defaults to it."""

from __future__ import annotations

import stat
import tomllib
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from episodic.cli.errors import EpisodicGroup
from episodic.hooks.token import ensure_hook_token, set_config_value
from episodic.kernel.auth import LocalTokenStore
from episodic.kernel.errors import ConfigError
from episodic.kernel.settings import load_settings


def test_set_config_value_replaces_the_top_level_key_and_keeps_tables(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text('# mine\ntoken = "old"\nembedder = "hashing"\n[section]\ntoken = "inner"\n')
    set_config_value(path, "token", "epi_new-1_x")
    data = tomllib.loads(path.read_text())
    assert data["token"] == "epi_new-1_x" and data["embedder"] == "hashing"
    assert data["section"] == {"token": "inner"}
    assert "# mine" in path.read_text()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_set_config_value_leaves_a_broken_file_alone(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text("embedder = \n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        set_config_value(path, "token", "epi_x")
    assert path.read_text() == "embedder = \n"
    with pytest.raises(ConfigError):
        set_config_value(tmp_path / "other.toml", "token", 'a"b')


def test_ensure_hook_token_creates_once_and_replaces_a_revoked_or_foreign_one(episodic_home: Path) -> None:
    first = ensure_hook_token(load_settings())
    assert first.created and first.tenant == "local"
    settings = load_settings()
    store = LocalTokenStore(settings.tokens_path)
    assert settings.token and store.authenticate(settings.token).tenant_id == "local"
    assert not ensure_hook_token(settings).created  # a valid token is kept

    store.revoke(store.list()[0].token_id)
    assert ensure_hook_token(load_settings()).created
    foreign = store.add("someone-else")
    set_config_value(episodic_home / "config.toml", "token", foreign)
    again = ensure_hook_token(load_settings())
    assert again.created and store.authenticate(load_settings().token).tenant_id == "local"


def test_ensure_hook_token_does_not_provision_for_a_remote_endpoint(episodic_home: Path) -> None:
    (episodic_home / "config.toml").write_text('url = "https://memory.example.com/mcp"\n')
    outcome = ensure_hook_token(load_settings())
    assert not outcome.created and "bring its token" in outcome.reason
    assert not (episodic_home / "tokens.json").exists()


def _cli() -> click.Group:
    from episodic.cli.mcp_cmds import register

    group = EpisodicGroup("episodic")  # the real group: it maps errors
    register(group)
    return group


def test_token_add_defaults_to_the_configured_tenant_and_warns_when_it_holds_no_cards(
    episodic_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = CliRunner().invoke(_cli(), ["token", "add"])
    assert result.exit_code == 0, result.output
    token = result.stdout.strip()
    assert LocalTokenStore(episodic_home / "tokens.json").authenticate(token).tenant_id == "local"
    assert "tenant 'local' holds no cards" in result.stderr

    monkeypatch.setenv("EPISODIC_TENANT", "team")
    named = CliRunner().invoke(_cli(), ["token", "add", "--tenant", "me"])
    assert (
        "tenant 'me' holds no cards" in named.stderr
        and "`episodic index` writes tenant 'team'" in named.stderr
    )
