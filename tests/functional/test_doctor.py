"""`episodic doctor`: the whole chain reported, and each broken link named with its fix."""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from episodic.cli import doctor
from episodic.cli.errors import EpisodicGroup
from episodic.hooks.token import set_config_value
from episodic.kernel.auth import LocalTokenStore
from episodic.kernel.errors import ConfigError
from episodic.kernel.settings import load_settings
from episodic.mcp.http_server import BackgroundServer, build_endpoint
from kits import warm_cli
from kits.client_env import free_port, stop_spawned_server, wait_until_closed
from kits.fake_claude_kit import install_fake

DEMO = Path(__file__).resolve().parents[2] / "shared" / "episodic" / "demo"


def _cli() -> click.Group:
    from episodic.cli.mcp_cmds import register

    group = EpisodicGroup("episodic")  # the real group: it maps errors
    register(group)
    return group


@pytest.fixture(scope="module")
def indexed_demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo corpus indexed once for this module (hashing embedder): each chain starts from a copy."""
    home = tmp_path_factory.mktemp("doctor-demo") / "episodic-home"
    home.mkdir()
    (home / "config.toml").write_text('embedder = "hashing"\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith("EPISODIC_") and k != "CLAUDE_CONFIG_DIR"}
    env |= {"EPISODIC_HOME": str(home), "HOME": str(home.parent / "user-home")}
    done = warm_cli.run(
        [sys.executable, "-m", "episodic", "index", str(DEMO), "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return home


@pytest.fixture()
def chain(episodic_home: Path, indexed_demo: Path) -> Iterator[Path]:
    """An indexed demo corpus (hashing embedder), `setup claude-code --write` done; yields the user's HOME."""
    shutil.copytree(indexed_demo, episodic_home, dirs_exist_ok=True)  # the same bytes as indexing it here
    port = free_port()  # nothing listens (until the hook doctor runs starts a server there)
    (episodic_home / "config.toml").write_text(f'embedder = "hashing"\nport = {port}\n')
    quiet = {"EPISODIC_HOOK_AUTOSTART": "false"}  # no background server from setup
    setup = CliRunner().invoke(_cli(), ["setup", "claude-code", "--write"], env=quiet)
    assert setup.exit_code == 0, setup.output
    try:
        yield Path(os.environ["HOME"])
    finally:
        stop_spawned_server(episodic_home)  # the one doctor's run of the hook started, as a prompt would


def _by_name() -> dict[str, doctor.Check]:
    return {c.name: c for c in doctor.run_checks(load_settings())}


def test_a_working_chain_is_all_ok(chain: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with BackgroundServer(build_endpoint(load_settings())) as server:
        monkeypatch.setenv("EPISODIC_PORT", str(server.httpd.server_address[1]))
        checks = _by_name()
    assert {name: c.status for name, c in checks.items()} == dict.fromkeys(
        [
            "executable",
            "MCP entry",
            "hook entry",
            "failure hook",
            "distiller",
            "scope",
            "experiment",
            "injections",
            "server reachable",
            "token",
            "index",
            "prompt hook",
            "embedder parity",
            "opening words",
        ],
        "ok",
    )
    assert checks["prompt hook"].detail.startswith(
        "ok: injected "
    )  # the hook command, run as Claude Code does
    assert checks["index"].detail == "6 cards for tenant 'local'"
    assert checks["injections"].detail.startswith("none in the last 30 days: `episodic injections`")
    assert checks["opening words"].detail == "6 offline cards carry their session's opening words"
    assert checks["token"].detail == "reads tenant 'local' (6 cards)"


def test_missing_executable(chain: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def gone(*_: object) -> str:
        raise ConfigError("cannot find the installed `episodic` executable")

    monkeypatch.setattr(doctor, "installed_executable", gone)
    check = _by_name()["executable"]
    assert check.status == "fail" and "scripts/install" in check.fix


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        (None, "no 'episodic' server"),
        ({"type": "stdio", "command": "/moved/venv/bin/episodic", "args": ["mcp"]}, "virtualenv moved"),
        ({"type": "stdio", "command": "episodic-not-on-path", "args": ["mcp"]}, "not on PATH"),
    ],
)
def test_broken_mcp_entry(chain: Path, entry: dict | None, expected: str) -> None:
    path = chain / ".claude.json"
    data = json.loads(path.read_text())
    if entry is None:
        del data["mcpServers"]["episodic"]
    else:
        data["mcpServers"]["episodic"] = entry
    path.write_text(json.dumps(data))
    check = _by_name()["MCP entry"]
    assert check.status == "fail" and expected in check.detail
    assert "setup claude-code --write" in check.fix


def test_http_entry_whose_token_variable_is_unset(chain: Path) -> None:
    CliRunner().invoke(_cli(), ["setup", "claude-code", "--url", "https://m.example.com/mcp", "--write"])
    check = _by_name()["MCP entry"]
    assert check.status == "warn" and "export EPISODIC_TOKEN=" in check.fix


@pytest.mark.parametrize("how", ["missing", "stale"])
def test_broken_hook_entry(chain: Path, how: str) -> None:
    path = chain / ".claude" / "settings.json"
    if how == "missing":
        path.write_text("{}")
    else:
        path.write_text(
            json.dumps(
                {
                    "hooks": {
                        "UserPromptSubmit": [
                            {"hooks": [{"command": "/old/bin/episodic hook user-prompt-submit"}]}
                        ]
                    }
                }
            )
        )
    check = _by_name()["hook entry"]
    assert check.status == "fail" and "setup claude-code --write" in check.fix


def test_server_not_running(chain: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    check = _by_name()["server reachable"]
    assert check.status == "warn" and "starts `episodic serve` on the next prompt" in check.detail
    settings = load_settings()  # doctor's run of the hook started a server, as a prompt would: gone again
    stop_spawned_server(settings.home)
    wait_until_closed(settings.port)
    monkeypatch.setenv("EPISODIC_HOOK_AUTOSTART", "false")
    check = _by_name()["server reachable"]
    assert check.status == "fail" and check.fix == "`episodic serve`"


def test_revoked_token(chain: Path) -> None:
    store = LocalTokenStore(load_settings().tokens_path)
    store.revoke(store.list()[0].token_id)
    check = _by_name()["token"]
    assert check.status == "fail" and "does not authenticate" in check.detail
    assert "setup claude-code --write" in check.fix


def test_token_of_a_tenant_without_cards(chain: Path) -> None:
    settings = load_settings()
    set_config_value(settings.home / "config.toml", "token", LocalTokenStore(settings.tokens_path).add("me"))
    check = _by_name()["token"]
    assert check.status == "fail" and "tenant 'me', which holds no cards" in check.detail


def test_no_token(chain: Path) -> None:
    config = load_settings().home / "config.toml"
    config.write_text("\n".join(x for x in config.read_text().splitlines() if not x.startswith("token")))
    check = _by_name()["token"]
    assert check.status == "fail" and "no token" in check.detail


def test_empty_index_for_the_configured_tenant(chain: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EPISODIC_TENANT", "team")
    check = _by_name()["index"]
    assert check.status == "fail" and "holds 6 cards of other tenants" in check.detail
    assert check.fix == "`episodic index`"


def test_embedder_mismatch(chain: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EPISODIC_HASHING_DIMENSION", "256")
    check = _by_name()["embedder parity"]
    assert check.status == "fail" and "hashing-v1-384" in check.fix and "re-index" in check.fix


def test_doctor_command_exits_1_on_a_failure(episodic_home: Path) -> None:
    result = CliRunner().invoke(_cli(), ["doctor"])
    assert result.exit_code == 1
    assert "[fail] MCP entry" in result.output and "fix: `" in result.output
    assert "[fail] index: nothing indexed yet (no index at" in result.output
    assert not (episodic_home / "index.sqlite3").exists()  # checking creates nothing


def test_claude_code_distiller_without_claude_or_without_the_session_end_hook(
    chain: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EPISODIC_DISTILLER", "claude-code")
    monkeypatch.setenv("EPISODIC_CLAUDE_BINARY", str(tmp_path / "no-claude"))
    check = _by_name()["distiller"]
    assert check.status == "fail" and "--distiller heuristic" in check.fix
    claude = install_fake(tmp_path / "bin")  # the stand-in `claude`: logged in, answers the probe
    monkeypatch.setenv("EPISODIC_CLAUDE_BINARY", str(claude))
    monkeypatch.delenv("FAKE_CLAUDE_SCENARIO", raising=False)
    settings = chain / ".claude" / "settings.json"  # setup wrote the SessionEnd hook; taken out by hand here
    written = json.loads(settings.read_text())
    del written["hooks"]["SessionEnd"]
    settings.write_text(json.dumps(written))
    check = _by_name()["distiller"]
    assert check.status == "warn" and "setup claude-code --write" in check.fix
    CliRunner().invoke(_cli(), ["setup", "claude-code", "--write"], env={"EPISODIC_HOOK_AUTOSTART": "false"})
    check = _by_name()["distiller"]
    assert check.status == "ok", check
    assert (
        "logged in (api_key)" in check.detail and "claude-sonnet" in check.detail
    )  # the model that answered


@pytest.mark.parametrize(
    ("scenario", "expected"),
    [("not-logged-in", "not logged in"), ("schema-violation", "a probe distil failed")],
)
def test_a_claude_code_distiller_that_cannot_answer_fails(
    chain: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, scenario: str, expected: str
) -> None:
    monkeypatch.setenv("EPISODIC_DISTILLER", "claude-code")
    monkeypatch.setenv("EPISODIC_CLAUDE_BINARY", str(install_fake(tmp_path / "bin")))
    monkeypatch.setenv("FAKE_CLAUDE_SCENARIO", scenario)
    result = CliRunner().invoke(_cli(), ["doctor"])
    assert result.exit_code == 1
    line = next(x for x in result.output.splitlines() if "] distiller:" in x)
    assert line.startswith("[fail]") and expected in line, result.output


def test_the_judge_line_names_an_altered_or_missing_model(
    episodic_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from episodic.judge.model import MODEL_FILES

    model = tmp_path / "judge"
    model.mkdir()
    for name in MODEL_FILES:
        (model / name).write_text("not the pinned bytes")
    monkeypatch.setenv("EPISODIC_RERANKER", "local")
    monkeypatch.setenv("EPISODIC_JUDGE_MODEL_DIR", str(model))
    result = CliRunner().invoke(_cli(), ["doctor"])
    lines = [line for line in result.output.splitlines() if "] judge:" in line]
    assert len(lines) == 1 and lines[0].startswith("[warn] judge:")
    assert "not the pinned file" in lines[0] and "first stage alone" in lines[0]
    monkeypatch.setenv("EPISODIC_JUDGE_MODEL_DIR", str(tmp_path / "absent"))
    result = CliRunner().invoke(_cli(), ["doctor"])
    assert "[warn] judge: the judge's model is not installed at" in result.output
    monkeypatch.setenv("EPISODIC_RERANKER", "none")
    assert "] judge:" not in CliRunner().invoke(_cli(), ["doctor"]).output
