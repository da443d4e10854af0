"""`setup codex` / `setup gemini`: each CLI's own config format, printed or written (backup, idempotent)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner
from episodic.cli import build_cli
from episodic.cli.mcp_cmds import _executable
from episodic.cli.setup_agents import apply_codex_plan, codex_plan
from episodic.kernel.errors import ConfigError


def invoke(args: list[str]) -> str:
    result = CliRunner().invoke(build_cli(), args)
    assert result.exit_code == 0, result.output
    return result.output


def test_setup_codex_prints_the_command_and_the_table(episodic_home: Path) -> None:
    out = invoke(["setup", "codex"])
    # the absolute path of the installed executable: the CLI need not have the venv on PATH
    exe = _executable()
    assert f"codex mcp add episodic -- {exe} mcp" in out
    assert f'[mcp_servers.episodic]\ncommand = "{exe}"\nargs = ["mcp"]' in out
    http = invoke(["setup", "codex", "--url", "http://127.0.0.1:8765/mcp"])
    assert (
        "--bearer-token-env-var EPISODIC_TOKEN" in http and 'bearer_token_env_var = "EPISODIC_TOKEN"' in http
    )


def test_setup_codex_write_keeps_the_users_config_and_is_idempotent(
    episodic_home: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    home = tmp_path / "codex-home"
    home.mkdir()
    (home / "config.toml").write_text('model = "o3"\n[mcp_servers.other]\ncommand = "x"\n')
    monkeypatch.setenv("CODEX_HOME", str(home))
    # the local --write leaves a server answering: here it is told to start none, on a port nothing holds
    monkeypatch.setenv("EPISODIC_HOOK_AUTOSTART", "false")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        monkeypatch.setenv("EPISODIC_PORT", str(probe.getsockname()[1]))
    assert "updated" in invoke(["setup", "codex", "--url", "http://h/mcp", "--token", "tok", "--write"])
    data = tomllib.loads((home / "config.toml").read_text())
    assert data["model"] == "o3" and data["mcp_servers"]["other"] == {"command": "x"}
    assert data["mcp_servers"]["episodic"] == {
        "url": "http://h/mcp",
        "http_headers": {"Authorization": "Bearer tok"},
    }
    assert len(list(home.glob("config.toml.bak-*"))) == 1
    assert "unchanged" in invoke(["setup", "codex", "--write"])  # our table is there: left alone


def test_setup_codex_never_touches_a_broken_config(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text("model = [\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        apply_codex_plan(codex_plan(tmp_path))
    assert (tmp_path / "config.toml").read_text() == "model = [\n"


def test_setup_gemini_writes_user_settings(episodic_home: Path) -> None:
    assert f"gemini mcp add --scope user episodic {_executable()} mcp" in invoke(["setup", "gemini"])
    invoke(["setup", "gemini", "--url", "http://h/mcp", "--write"])
    settings = episodic_home.parent / "user-home" / ".gemini" / "settings.json"
    entry = json.loads(settings.read_text())["mcpServers"]["episodic"]
    assert entry == {
        "url": "http://h/mcp",
        "type": "http",
        "headers": {"Authorization": "Bearer ${EPISODIC_TOKEN}"},
    }
    assert "unchanged" in invoke(["setup", "gemini", "--url", "http://h/mcp", "--write"])


# the CLI `scripts/install --dev` pins under .tools/ (or one on PATH)
CODEX = Path(__file__).resolve().parents[3] / ".tools" / "codex" / "node_modules" / ".bin" / "codex"
CODEX_CLI = str(CODEX) if CODEX.exists() else shutil.which("codex")


@pytest.mark.skipif(CODEX_CLI is None, reason="the Codex CLI (npm @openai/codex) is not installed")
def test_the_real_codex_cli_lists_the_written_server(tmp_path: Path) -> None:
    apply_codex_plan(codex_plan(tmp_path, url="http://127.0.0.1:8765/mcp"))
    listed = subprocess.run(
        [str(CODEX_CLI), "mcp", "list"],
        env={**os.environ, "CODEX_HOME": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert listed.returncode == 0 and "episodic" in listed.stdout and "EPISODIC_TOKEN" in listed.stdout
