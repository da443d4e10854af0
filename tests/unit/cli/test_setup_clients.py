"""`setup claude-code|cursor`: exact configuration, merged with a backup, idempotent, never dropping entries."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from episodic.cli.errors import EpisodicGroup
from episodic.cli.setup_clients import (
    ClientPlan,
    apply_plan,
    claude_code_plan,
    cursor_plan,
    installed_executable,
    merge_hook,
    merge_server,
    render_plan,
)
from episodic.kernel.errors import ConfigError
from kits.client_env import free_port

URL = "https://memory.example.com/mcp"


EXE = "/opt/my venv/bin/episodic"


def test_claude_code_http_plan_writes_a_reference_unless_a_literal_token_is_asked_for() -> None:
    plan = claude_code_plan(Path("/h"), URL, "epi_abc", EXE)
    assert plan.commands == [
        f"claude mcp add --transport http --scope user episodic {URL} "
        "--header 'Authorization: Bearer ${EPISODIC_TOKEN}'"
    ]
    assert plan.server_entry == {
        "type": "http",
        "url": URL,
        "headers": {"Authorization": "Bearer ${EPISODIC_TOKEN}"},
    }
    assert "epi_abc" not in render_plan(plan)  # the token is never printed back nor written
    assert any("export EPISODIC_TOKEN=<the token you passed with --token>" in n for n in plan.notes)
    literal = claude_code_plan(Path("/h"), URL, "epi_abc", EXE, literal_token=True)
    assert literal.server_entry["headers"] == {"Authorization": "Bearer epi_abc"}
    assert literal.commands[0].endswith("--header 'Authorization: Bearer epi_abc'")
    assert plan.server_file == Path("/h/.claude.json")
    assert plan.hook_file == Path("/h/.claude/settings.json")
    text = render_plan(plan)
    assert '"UserPromptSubmit"' in text
    assert '"command": "\'/opt/my venv/bin/episodic\' hook user-prompt-submit"' in text
    assert '"timeout": 5' in text


def test_claude_code_stdio_plan_names_the_absolute_executable() -> None:
    local = claude_code_plan(Path("/h"), executable=EXE)
    assert local.commands == ["claude mcp add --scope user episodic -- '/opt/my venv/bin/episodic' mcp"]
    assert local.server_entry == {"type": "stdio", "command": EXE, "args": ["mcp"]}
    assert local.hook_command == "'/opt/my venv/bin/episodic' hook user-prompt-submit"
    assert any("virtualenv moves" in n for n in local.notes)


def test_cursor_plan_uses_env_interpolation() -> None:
    plan = cursor_plan(Path("/h"), URL, "epi_abc", EXE)
    assert plan.server_file == Path("/h/.cursor/mcp.json")
    assert plan.server_entry == {"url": URL, "headers": {"Authorization": "Bearer ${env:EPISODIC_TOKEN}"}}
    assert "type" not in plan.server_entry and plan.hook_file is None
    literal = cursor_plan(Path("/h"), URL, "epi_abc", EXE, literal_token=True)
    assert literal.server_entry["headers"] == {"Authorization": "Bearer epi_abc"}
    assert cursor_plan(Path("/h"), executable=EXE).server_entry == {"command": EXE, "args": ["mcp"]}


def test_installed_executable_is_absolute_and_found_beside_the_interpreter(tmp_path: Path) -> None:
    bin_dir = tmp_path / "venv" / "bin"
    bin_dir.mkdir(parents=True)
    script = bin_dir / "episodic"
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    assert installed_executable(str(script), "/usr/bin/python3") == str(script)
    assert installed_executable("pytest", str(bin_dir / "python")) == str(script)


def test_rerunning_setup_updates_an_old_entry_instead_of_adding_one(tmp_path: Path) -> None:
    settings = tmp_path / ".claude" / "settings.json"
    settings.parent.mkdir()
    old = {
        "hooks": {
            "UserPromptSubmit": [
                {"hooks": [{"type": "command", "command": "episodic hook user-prompt-submit"}]},
                {"hooks": [{"type": "command", "command": "other prompt"}]},
                {"hooks": [{"type": "command", "command": "/old/venv/bin/episodic hook user-prompt-submit"}]},
            ]
        }
    }
    settings.write_text(json.dumps(old))
    (tmp_path / ".claude.json").write_text(
        json.dumps({"mcpServers": {"episodic": {"type": "stdio", "command": "episodic", "args": ["mcp"]}}})
    )
    results = apply_plan(claude_code_plan(tmp_path, executable=EXE))
    assert results[0].changed and results[1].changed
    groups = json.loads(settings.read_text())["hooks"]["UserPromptSubmit"]
    assert [h["command"] for g in groups for h in g["hooks"]] == [
        "'/opt/my venv/bin/episodic' hook user-prompt-submit",
        "other prompt",
    ]
    assert groups[0]["hooks"][0]["timeout"] == 5
    servers = json.loads((tmp_path / ".claude.json").read_text())["mcpServers"]
    assert servers == {"episodic": {"type": "stdio", "command": EXE, "args": ["mcp"]}}
    assert not any(r.changed for r in apply_plan(claude_code_plan(tmp_path, executable=EXE)))


def test_merge_keeps_other_entries_backs_up_and_is_idempotent(tmp_path: Path) -> None:
    settings = tmp_path / ".claude" / "settings.json"
    settings.parent.mkdir()
    original = {
        "model": "opus",
        "hooks": {
            "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "other-tool prompt"}]}],
            "Stop": [{"hooks": [{"type": "command", "command": "x"}]}],
        },
    }
    settings.write_text(json.dumps(original))
    claude_json = tmp_path / ".claude.json"
    claude_json.write_text(
        json.dumps({"mcpServers": {"github": {"type": "http", "url": "u"}}, "numStartups": 3})
    )

    first = apply_plan(claude_code_plan(tmp_path, URL, "epi_abc"))
    assert all(r.changed and r.backup and r.backup.exists() for r in first[:2])
    assert first[2].path.name == "remember.md" and first[2].changed
    merged = json.loads(settings.read_text())
    assert merged["model"] == "opus" and merged["hooks"]["Stop"] == original["hooks"]["Stop"]
    commands = [h["command"] for g in merged["hooks"]["UserPromptSubmit"] for h in g["hooks"]]
    assert commands == ["other-tool prompt", "episodic hook user-prompt-submit"]  # the default executable
    servers = json.loads(claude_json.read_text())
    assert servers["numStartups"] == 3 and servers["mcpServers"]["github"] == {"type": "http", "url": "u"}
    assert servers["mcpServers"]["episodic"]["url"] == URL
    assert json.loads(first[0].backup.read_text())["mcpServers"] == {"github": {"type": "http", "url": "u"}}  # type: ignore[union-attr]

    before = (settings.read_text(), claude_json.read_text(), sorted(p.name for p in tmp_path.rglob("*")))
    second = apply_plan(claude_code_plan(tmp_path, URL, "epi_abc"))
    assert not any(r.changed for r in second)
    assert before == (
        settings.read_text(),
        claude_json.read_text(),
        sorted(p.name for p in tmp_path.rglob("*")),
    )


def test_merge_into_missing_files_creates_them(tmp_path: Path) -> None:
    result = merge_server(tmp_path / ".cursor" / "mcp.json", {"url": URL})
    assert result.changed and result.backup is None
    assert json.loads((tmp_path / ".cursor" / "mcp.json").read_text()) == {
        "mcpServers": {"episodic": {"url": URL}}
    }
    hook = merge_hook(tmp_path / "settings.json", "/opt/venv/bin/episodic hook user-prompt-submit")
    assert hook.changed
    assert not merge_hook(
        tmp_path / "settings.json", "/opt/venv/bin/episodic hook user-prompt-submit"
    ).changed


@pytest.mark.parametrize("content", ["{broken", "[1, 2]", '{"mcpServers": []}'])
def test_unreadable_files_are_never_overwritten(tmp_path: Path, content: str) -> None:
    path = tmp_path / "mcp.json"
    path.write_text(content)
    with pytest.raises(ConfigError):
        merge_server(path, {"url": URL})
    assert path.read_text() == content and list(tmp_path.iterdir()) == [path]


def test_setup_commands(episodic_home: Path) -> None:
    from episodic.cli.mcp_cmds import register

    group = EpisodicGroup("episodic")  # the real group: it maps errors
    register(group)
    runner = CliRunner()
    printed = runner.invoke(group, ["setup", "claude-code", "--url", URL, "--token", "epi_abc"])
    assert printed.exit_code == 0, printed.output
    assert "claude mcp add --transport http --scope user episodic" in printed.output
    user_home = episodic_home.parent / "user-home"
    assert not (user_home / ".claude.json").exists()  # printing writes nothing
    written = runner.invoke(group, ["setup", "claude-code", "--url", URL, "--token", "epi_abc", "--write"])
    assert written.exit_code == 0, written.output
    assert json.loads((user_home / ".claude.json").read_text())["mcpServers"]["episodic"]["url"] == URL
    assert "epi_abc" not in (user_home / ".claude.json").read_text()
    hook_text = (user_home / ".claude" / "settings.json").read_text()
    assert f'"{installed_executable()} hook user-prompt-submit"' in hook_text
    again = runner.invoke(group, ["setup", "claude-code", "--url", URL, "--token", "epi_abc", "--write"])
    assert again.output.count("unchanged") == 3
    cursor = runner.invoke(group, ["setup", "cursor", "--url", URL, "--write"])
    assert cursor.exit_code == 0
    assert "${env:EPISODIC_TOKEN}" in (user_home / ".cursor" / "mcp.json").read_text()


def test_setup_offers_the_claude_code_distiller_and_saves_the_choice(
    episodic_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from episodic.cli.mcp_cmds import register
    from episodic.kernel.settings import load_settings

    group = EpisodicGroup("episodic")  # the real group: it maps errors
    register(group)
    runner = CliRunner()
    monkeypatch.setenv("EPISODIC_HOOK_AUTOSTART", "false")  # no background server from this test
    monkeypatch.setenv("EPISODIC_PORT", str(free_port()))  # another home's server may hold the default
    monkeypatch.setenv("EPISODIC_CLAUDE_BINARY", str(tmp_path / "no-such-claude"))
    assert "Claude Code is on PATH" not in runner.invoke(group, ["setup", "claude-code"]).stderr

    claude = tmp_path / "bin" / "claude"
    claude.parent.mkdir()
    claude.write_text("#!/bin/sh\nexit 0\n")
    claude.chmod(0o755)
    monkeypatch.setenv("EPISODIC_CLAUDE_BINARY", str(claude))
    offered = runner.invoke(group, ["setup", "claude-code"])
    assert "Claude Code is on PATH" in offered.stderr and "your Claude Code plan or API key" in offered.stderr
    assert "--distiller claude-code --write" in offered.stderr
    assert not (episodic_home / "index.sqlite3").exists()  # printing creates no index

    chosen = runner.invoke(group, ["setup", "claude-code", "--distiller", "claude-code", "--write"])
    assert chosen.exit_code == 0, chosen.output
    assert "distiller: claude-code (saved in" in chosen.stdout
    assert load_settings().distiller == "claude-code" and load_settings().token  # both kept in the file
    assert "Claude Code is on PATH" not in runner.invoke(group, ["setup", "claude-code"]).stderr


def _commands_applied_once(tmp_path: Path, plan: ClientPlan, event: str) -> list[str]:
    """Apply `plan` twice (the second run changes nothing) and return the commands hooked on `event`;
    the prompt hook stays installed exactly once beside them."""
    apply_plan(plan)
    assert not any(r.changed for r in apply_plan(plan))  # idempotent
    hooks = json.loads((tmp_path / ".claude" / "settings.json").read_text())["hooks"]
    assert len(hooks["UserPromptSubmit"]) == 1
    return [h["command"] for g in hooks[event] for h in g["hooks"]]


def test_with_claude_code_as_distiller_setup_adds_one_session_end_hook(tmp_path: Path) -> None:
    plan = claude_code_plan(tmp_path, executable=EXE, distil_on_session_end=True)
    assert plan.session_end_command == "'/opt/my venv/bin/episodic' hook session-distill"
    assert '"SessionEnd"' in render_plan(plan)
    assert _commands_applied_once(tmp_path, plan, "SessionEnd") == [plan.session_end_command]
    assert claude_code_plan(tmp_path, executable=EXE).session_end_command is None
    other = {"type": "command", "command": "other-tool end"}
    settings = json.loads((tmp_path / ".claude" / "settings.json").read_text())
    settings["hooks"]["SessionEnd"][0]["hooks"].append(other)
    (tmp_path / ".claude" / "settings.json").write_text(json.dumps(settings))
    heuristic = apply_plan(claude_code_plan(tmp_path, executable=EXE))  # the heuristic again: hook removed
    assert any(r.changed and r.path.name == "settings.json" for r in heuristic)
    hooks = json.loads((tmp_path / ".claude" / "settings.json").read_text())["hooks"]
    assert hooks["SessionEnd"] == [{"hooks": [other]}]
    assert not any(r.changed for r in apply_plan(claude_code_plan(tmp_path, executable=EXE)))


def test_quickstart_offers_claude_code_when_it_is_on_path(
    episodic_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from episodic.cli import build_cli

    monkeypatch.setenv("EPISODIC_EMBEDDER", "hashing")
    claude = tmp_path / "bin" / "claude"
    claude.parent.mkdir()
    claude.write_text("#!/bin/sh\nexit 0\n")
    claude.chmod(0o755)
    monkeypatch.setenv("EPISODIC_CLAUDE_BINARY", str(claude))
    done = CliRunner().invoke(build_cli(), ["quickstart"])
    assert done.exit_code == 0, done.output
    said = " ".join(done.stderr.split())
    # the demo corpus sits in its own tenant: none of the user's cards would be re-distilled
    assert "Claude Code is on PATH" in said and "no heuristic card to re-distil so far" in said, said


def test_with_the_dream_synthesis_on_setup_adds_one_session_start_hook(tmp_path: Path) -> None:
    plan = claude_code_plan(tmp_path, executable=EXE, dream_on_session_start=True)
    assert plan.session_start_command == "'/opt/my venv/bin/episodic' hook session-start"
    assert '"SessionStart"' in render_plan(plan)
    assert _commands_applied_once(tmp_path, plan, "SessionStart") == [plan.session_start_command]
    settings_path = tmp_path / ".claude" / "settings.json"
    off = apply_plan(claude_code_plan(tmp_path, executable=EXE))  # the setting off again: hook removed
    assert any(r.changed and r.path.name == "settings.json" for r in off)
    assert not json.loads(settings_path.read_text())["hooks"].get("SessionStart")


def test_setup_claude_code_reads_the_dream_setting(
    episodic_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from episodic.cli.mcp_cmds import register

    group = EpisodicGroup("episodic")  # the real group: it maps errors
    register(group)
    monkeypatch.setenv("EPISODIC_DREAM_SESSION_START", "true")
    result = CliRunner().invoke(group, ["setup", "claude-code"])
    assert result.exit_code == 0, result.output
    assert '"SessionStart"' in result.output and "hook session-start" in result.output
