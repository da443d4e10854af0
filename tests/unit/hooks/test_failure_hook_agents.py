"""The failure hook with Codex CLI's `PostToolUse` and Gemini CLI's `AfterTool` payloads (shapes as the real
0.171 / 0.61 CLIs send them: tests/functional/test_failure_hook_agents_cli.py): the failed command and its output read
out of each shape, a succeeded command passed over, the answer in each CLI's hookEventName; and
`setup codex|gemini` registering the hook in each CLI's own file (the switch removes it, the user's hooks stay)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from episodic.cli.setup_agents import (
    CODEX_TRUST_NOTE,
    GEMINI_HOOK_NAME,
    failure_hook_step,
    merge_failure_hook,
)
from episodic.hooks.failure_payloads import NotAFailure, codex_exit_code, event_of, failure_of
from episodic.plumbing.marker import INJECTED_OPEN, strip_hook_context, wrap_injected
from test_failure_hook import run_hook, served  # noqa: F401  (the module's server fixture)

NO_CODEX = "no-such-codex-zq"
GO_OUTPUT = (
    "# example.com/shop/internal/paths\ninternal/paths/paths.go:149:28: undefined: regexp\n"
    "FAIL\texample.com/shop/internal/paths [build failed]\n"
)


def codex_rollout(path: Path, call_id: str, exit_code: int, shape: str = "item_completed") -> Path:
    """A rollout tail as Codex 0.171 writes it (`item_completed`), or an older `exec_command_end`."""
    if shape == "item_completed":
        item = {"type": "CommandExecution", "id": call_id, "status": "failed", "exit_code": exit_code}
        event: dict[str, Any] = {"type": "item_completed", "item": item}
    else:
        event = {"type": "exec_command_end", "call_id": call_id, "exit_code": exit_code}
    lines = [
        {"type": "session_meta", "payload": {"id": "s"}},
        {"type": "event_msg", "payload": {"type": "item_completed", "item": {"id": "other", "exit_code": 0}}},
        {"type": "event_msg", "payload": event},
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def codex_payload(rollout: Path | str, output: str = GO_OUTPUT, tool: str = "Bash", **extra: Any) -> dict:
    return {
        "session_id": "now-1",
        "turn_id": "t-1",
        "transcript_path": str(rollout),
        "cwd": "/tmp",
        "hook_event_name": "PostToolUse",
        "model": "gpt-5",
        "permission_mode": "bypassPermissions",
        "tool_name": tool,
        "tool_input": {"command": "go test ./..."},
        "tool_response": output,
        "tool_use_id": "call_1",
        **extra,
    }


def gemini_payload(llm_content: Any, tool: str = "run_shell_command", **response: Any) -> dict:
    return {
        "session_id": "now-1",
        "transcript_path": "/tmp/chats/session.jsonl",
        "cwd": "/tmp",
        "hook_event_name": "AfterTool",
        "timestamp": "2026-12-03T17:36:14.004Z",
        "tool_name": tool,
        "tool_input": {"command": "go test ./..."},
        "tool_response": {"llmContent": llm_content, "returnDisplay": "…", **response},
    }


def gemini_report(output: str, exit_code: int | None) -> str:
    """run_shell_command's llmContent in 0.61: labelled fields, inside `<untrusted_context>`."""
    lines = [f"Output: {output or '(empty)'}"]
    lines += [f"Exit Code: {exit_code}"] if exit_code is not None else []
    return (
        "<untrusted_context>\n" + "\n".join([*lines, "Process Group PGID: 4242"]) + "\n</untrusted_context>"
    )


# ---------------------------------------------------------------- reading each payload


def test_codex_failed_command_reads_its_exit_code_from_the_rollout(tmp_path: Path) -> None:
    rollout = codex_rollout(tmp_path / "rollout-x.jsonl", "call_1", 1)
    assert failure_of(codex_payload(rollout)) == ("go test ./...", "Exit code 1\n" + GO_OUTPUT)
    assert event_of(codex_payload(rollout)) == "PostToolUse"
    older = codex_rollout(tmp_path / "rollout-y.jsonl", "call_1", 2, shape="exec_command_end")
    assert codex_exit_code(str(older), "call_1") == 2


@pytest.mark.parametrize(
    ("exit_code", "call_id", "path", "why"),
    [
        (0, "call_1", "rollout.jsonl", "ok: the command succeeded (exit code 0)"),
        (1, "call_other", "rollout.jsonl", "skip: exit code not found"),  # still running: no record yet
        (1, "call_1", "missing.jsonl", "skip: exit code not found"),
        (1, "call_1", "rollout.txt", "skip: exit code not found"),  # not a rollout
    ],
)
def test_codex_success_or_an_unknown_exit_code_is_no_failure(
    tmp_path: Path, exit_code: int, call_id: str, path: str, why: str
) -> None:
    codex_rollout(tmp_path / "rollout.jsonl", call_id, exit_code)
    (tmp_path / "rollout.txt").write_text((tmp_path / "rollout.jsonl").read_text())
    with pytest.raises(NotAFailure, match=why.replace("(", r"\(").replace(")", r"\)")):
        failure_of(codex_payload(tmp_path / path))


def test_gemini_failed_command_is_read_out_of_the_labelled_report() -> None:
    command, error = failure_of(gemini_payload(gemini_report(GO_OUTPUT.rstrip(), 1)))
    assert command == "go test ./..."
    assert error == "Exit code 1\n" + GO_OUTPUT.rstrip()  # no label, no PGID line, no wrapper
    parts = [{"text": gemini_report(GO_OUTPUT.rstrip(), 2)}]  # llmContent as a list of parts
    assert failure_of(gemini_payload(parts))[1].startswith("Exit code 2\n# example.com")
    started = gemini_payload("Output: (empty)", error={"message": "spawn /bin/bash ENOENT", "type": "x"})
    assert "spawn /bin/bash ENOENT" in failure_of(started)[1]


@pytest.mark.parametrize(
    ("payload", "why"),
    [
        (gemini_payload(gemini_report("ok  \texample.com/shop\t0.01s", None)), "ok: the command succeeded"),
        (gemini_payload(gemini_report("fine", 0)), "ok: the command succeeded"),
        (gemini_payload(gemini_report("", 1)), "skip: exit code 1 without output"),
        (gemini_payload("x", tool="read_file"), "skip: not a shell command"),
        ({**gemini_payload("x"), "tool_response": "not an object"}, "skip: bad stdin"),
    ],
)
def test_gemini_success_and_other_tools_are_no_failure(payload: dict, why: str) -> None:
    with pytest.raises(NotAFailure, match=why):
        failure_of(payload)


def test_an_unknown_event_name_is_read_as_claude_codes() -> None:
    claude = {
        "hook_event_name": "Other",
        "tool_name": "Bash",
        "tool_input": {"command": "x"},
        "error": "boom",
    }
    assert event_of(claude) == "PostToolUseFailure" and failure_of(claude) == ("x", "boom")


def test_the_entry_gemini_appends_to_a_tool_result_is_stripped_from_it() -> None:
    entry = wrap_injected("Episodic memory: an earlier session met this error")
    escaped = entry.replace("<", "&lt;").replace(">", "&gt;")  # what Gemini CLI 0.61 does to a hook's context
    result = f"<untrusted_context>\nOutput: boom\nExit Code: 1\n</untrusted_context>\n\n<hook_context>{escaped}</hook_context>"
    assert (
        strip_hook_context(result) == "<untrusted_context>\nOutput: boom\nExit Code: 1\n</untrusted_context>"
    )
    assert strip_hook_context("<hook_context>another hook's</hook_context>").endswith(
        "another hook's</hook_context>"
    )


# ---------------------------------------------------------------- the hook process, each CLI's answer


def test_each_cli_gets_its_own_event_name_back(served, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    url, alpha, _, tmp = served
    rollout = codex_rollout(tmp_path / "rollout.jsonl", "call_1", 1)
    failing = GO_OUTPUT.replace("internal/paths/paths.go:149", "/elsewhere/internal/paths/paths.go:149")
    for payload, event in (
        (codex_payload(rollout, failing), "PostToolUse"),
        (gemini_payload(gemini_report(failing.rstrip(), 1)), "AfterTool"),
    ):
        code, out, log = run_hook(tmp / "client", json.dumps(payload), url, alpha)
        output = json.loads(out)["hookSpecificOutput"]
        assert (code, output["hookEventName"]) == (0, event)
        assert (
            output["additionalContext"].startswith(INJECTED_OPEN)
            and "Session s-fixed" in output["additionalContext"]
        )
        assert "post-tool-failure ok: injected the fix of an earlier session" in log


def test_a_succeeded_command_asks_nothing_and_prints_nothing(served, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    _, alpha, _, tmp = served
    rollout = codex_rollout(tmp_path / "rollout.jsonl", "call_1", 0)
    # an unreachable server: a succeeded command never gets as far as asking it
    code, out, log = run_hook(
        tmp / "client", json.dumps(codex_payload(rollout)), "http://127.0.0.1:9/mcp", alpha
    )
    assert (code, out) == (0, "") and "post-tool-failure ok: the command succeeded (exit code 0)" in log


# ---------------------------------------------------------------- setup codex|gemini


def test_setup_codex_registers_post_tool_use_of_bash_in_hooks_json(tmp_path: Path) -> None:
    codex_home = tmp_path / ".codex"
    codex_home.mkdir()
    theirs = {"matcher": "Bash", "hooks": [{"type": "command", "command": "~/bin/audit.sh", "timeout": 30}]}
    (codex_home / "hooks.json").write_text(json.dumps({"hooks": {"PostToolUse": [theirs]}}))
    plan = failure_hook_step("codex", codex_home, "/venv/bin/episodic", on=True, write=False)
    assert plan[-1] == f"# {CODEX_TRUST_NOTE}"
    lines = failure_hook_step(
        "codex", codex_home, "/venv/bin/episodic", on=True, write=True, codex_binary=NO_CODEX
    )
    assert lines[0].startswith(f"updated {codex_home / 'hooks.json'}")
    assert lines[1].startswith(
        f"Codex hook trust: `{NO_CODEX}` is not on PATH; trust it yourself: start `codex`"
    )
    groups = json.loads((codex_home / "hooks.json").read_text())["hooks"]["PostToolUse"]
    ours = {"type": "command", "command": "/venv/bin/episodic hook post-tool-failure", "timeout": 5}
    assert groups == [theirs, {"matcher": "Bash", "hooks": [ours]}]
    again = failure_hook_step(
        "codex", codex_home, "/venv/bin/episodic", on=True, write=True, codex_binary=NO_CODEX
    )
    assert again[0].startswith("unchanged")
    failure_hook_step("codex", codex_home, "/venv/bin/episodic", on=False, write=True)  # hook_failure = false
    assert json.loads((codex_home / "hooks.json").read_text())["hooks"]["PostToolUse"] == [theirs]


def test_a_codex_without_app_server_is_reported_at_once_not_after_the_deadline(tmp_path: Path) -> None:
    """An older `codex` that exits on `app-server` (unknown subcommand) ends the trust step when it exits,
    with the exit code, instead of waiting out the 60 s start-up deadline as if it were still starting."""
    from episodic.cli.codex_hook_trust import trust_failure_hook

    codex = tmp_path / "codex"
    codex.write_text("#!/bin/sh\necho \"error: unrecognized subcommand '$1'\" >&2\nexit 2\n")
    codex.chmod(0o755)
    outcome = trust_failure_hook(str(codex), tmp_path, tmp_path / "hooks.json")
    assert not outcome.trusted
    assert "`codex app-server` exited (code 2) before answering initialize" in outcome.line, outcome.line


def test_setup_gemini_registers_after_tool_of_run_shell_command(tmp_path: Path) -> None:
    settings = tmp_path / ".gemini" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps({"mcpServers": {"episodic": {"command": "episodic", "args": ["mcp"]}}}))
    plan = failure_hook_step("gemini", tmp_path, "/venv/bin/episodic", on=True, write=False)
    assert "hooks.AfterTool, matcher 'run_shell_command'" in plan[0] and not settings.read_text().count(
        "hooks"
    )
    failure_hook_step("gemini", tmp_path, "/venv/bin/episodic", on=True, write=True)
    data = json.loads(settings.read_text())
    assert data["mcpServers"]["episodic"]["args"] == ["mcp"]  # the rest of the file kept
    (group,) = data["hooks"]["AfterTool"]
    assert group == {
        "matcher": "run_shell_command",
        "hooks": [
            {
                "name": GEMINI_HOOK_NAME,
                "type": "command",
                "command": "/venv/bin/episodic hook post-tool-failure",
                "timeout": 5000,  # milliseconds in Gemini CLI
            }
        ],
    }
    failure_hook_step("gemini", tmp_path, "/venv/bin/episodic", on=False, write=True)
    assert "hooks" not in json.loads(settings.read_text())


def test_switched_off_with_no_file_writes_nothing(tmp_path: Path) -> None:
    result = merge_failure_hook(tmp_path / "hooks.json", None, "PostToolUse", "Bash", gemini=False)
    assert not result.changed and not (tmp_path / "hooks.json").exists()


# ---------------------------------------------------------------- doctor


def doctor_settings(tmp_path: Path, **overrides: Any):  # type: ignore[no-untyped-def]
    from episodic.kernel.settings import load_settings

    return load_settings(
        home=tmp_path / "episodic",
        user_home=str(tmp_path),
        codex_home=str(tmp_path / ".codex"),
        gemini_cli_home=str(tmp_path),
        **overrides,
    )


def test_doctor_says_nothing_of_a_cli_never_set_up(tmp_path: Path) -> None:
    from episodic.cli.doctor_agents import agent_failure_rows

    assert agent_failure_rows(doctor_settings(tmp_path)) == []


def test_doctor_reports_the_codex_hook_missing_untrusted_trusted_and_off(tmp_path: Path) -> None:
    from episodic.cli.doctor_agents import codex_row

    codex_home = tmp_path / ".codex"
    codex_home.mkdir()
    config = codex_home / "config.toml"
    config.write_text('[mcp_servers.episodic]\ncommand = "episodic"\nargs = ["mcp"]\n')
    status = lambda **o: codex_row(doctor_settings(tmp_path, **o))  # noqa: E731
    assert status()[1:3] == ("warn", f"no episodic failure hook in {codex_home / 'hooks.json'}")
    failure_hook_step("codex", codex_home, "/venv/bin/episodic", on=True, write=True, codex_binary=NO_CODEX)
    assert status()[1:3] == (
        "warn",
        "/venv/bin/episodic hook post-tool-failure: not trusted, so Codex skips it",
    )
    key = f"{codex_home / 'hooks.json'}:post_tool_use:0:0"  # as `codex app-server` hooks/list names it
    config.write_text(config.read_text() + f'\n[hooks.state."{key}"]\ntrusted_hash = "sha256:ab"\n')
    assert status()[1] == "ok" and "a trust entry is recorded" in status()[2]
    assert status(hook_failure=False)[1:3] == (
        "ok",
        "switched off (hook_failure = false / EPISODIC_HOOK_FAILURE=false)",
    )
    assert status(failure_memory=False)[1] == "warn"
    config.write_text("[features]\nhooks = false\n" + config.read_text())
    assert status()[1] == "warn" and "Codex hooks are off" in status()[2]


def test_doctor_reports_the_gemini_hook_missing_present_and_disabled(tmp_path: Path) -> None:
    from episodic.cli.doctor_agents import gemini_row

    settings_file = tmp_path / ".gemini" / "settings.json"
    settings_file.parent.mkdir()
    settings_file.write_text(
        json.dumps({"mcpServers": {"episodic": {"command": "episodic", "args": ["mcp"]}}})
    )
    status = lambda: gemini_row(doctor_settings(tmp_path))  # noqa: E731
    assert status()[1] == "warn" and "no episodic failure hook" in status()[2]
    failure_hook_step("gemini", tmp_path, "/venv/bin/episodic", on=True, write=True)
    assert status()[1:3] == (
        "ok",
        "/venv/bin/episodic hook post-tool-failure (AfterTool, matcher run_shell_command)",
    )
    data = json.loads(settings_file.read_text())
    settings_file.write_text(json.dumps({**data, "hooksConfig": {"disabled": [GEMINI_HOOK_NAME]}}))
    assert status()[1] == "warn" and "disabled" in status()[2]
    settings_file.write_text(json.dumps({**data, "hooksConfig": {"enabled": False}}))
    assert status()[1] == "warn" and "hooks are off" in status()[2]
