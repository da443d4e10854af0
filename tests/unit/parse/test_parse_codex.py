"""Codex CLI rollouts → the same Trajectory as Claude Code sessions: prompts, tool calls with outcomes,
edits, checks, the agent and version, secrets scrubbed, unknown records counted and skipped."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from episodic.distill.evidence import check_result, is_edit
from episodic.distill.heuristic import HeuristicDistiller
from episodic.kernel.models import NotEpisode, Outcome, Trajectory
from episodic.parse.codex import CodexSource
from episodic.parse.formats import sniff_file
from episodic.plumbing.marker import wrap_injected
from episodic.scrub import default_scrubber

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "agents"
SECRET = "AKIAIOSFODNN7EXAMPLE"


def line(kind: str, payload: dict[str, Any], ts: str = "2026-03-01T10:00:00.000Z") -> str:
    return json.dumps({"timestamp": ts, "type": kind, "payload": payload})


def item(payload: dict[str, Any], ts: str = "2026-03-01T10:00:01.000Z") -> str:
    return line("response_item", payload, ts)


def call(call_id: str, cmd: str, ts: str) -> str:
    arguments = json.dumps({"cmd": cmd, "workdir": "/home/u/shop"})
    return item(
        {"type": "function_call", "name": "exec_command", "arguments": arguments, "call_id": call_id}, ts
    )


def output(call_id: str, code: int, text: str, ts: str) -> str:
    body = f"Chunk ID: 1a2b\nWall time: 0.4 seconds\nProcess exited with code {code}\nOutput:\n{text}"
    return item({"type": "function_call_output", "call_id": call_id, "output": body}, ts)


def rollout(
    tmp_path: Path, name: str = "rollout-2026-03-01T10-00-00-0199aaaa-bbbb-7ccc-8ddd-eeeeffff0000"
) -> Path:
    patch = "*** Begin Patch\n*** Update File: src/cart.py\n@@\n-    return total\n+    return round(total, 2)\n*** End Patch"
    lines = [
        line(
            "session_meta",
            {
                "id": "0199aaaa-bbbb-7ccc-8ddd-eeeeffff0000",
                "cwd": "/home/u/shop",
                "originator": "codex_cli_rs",
                "cli_version": "0.104.0",
                "git": {"branch": "fix-rounding"},
            },
        ),
        line(
            "turn_context", {"cwd": "/home/u/shop", "model": "gpt-5-codex", "approval_policy": "on-request"}
        ),
        item(
            {
                "type": "message",
                "role": "developer",
                "content": [{"type": "input_text", "text": "sandbox rules"}],
            }
        ),
        item(
            {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "<environment_context>\n<cwd>/home/u/shop</cwd>"}],
            }
        ),
        item(
            {
                "type": "message",
                "role": "user",
                "content": [
                    {"type": "input_text", "text": "the cart total test fails with 0.30000000000000004"}
                ],
            }
        ),
        line(
            "event_msg",
            {
                "type": "user_message",
                "message": "the cart total test fails with 0.30000000000000004\n"
                + wrap_injected("old memory text"),
            },
        ),
        item(
            {"type": "reasoning", "summary": [{"type": "summary_text", "text": "Float rounding in total()"}]}
        ),
        call("c1", f"AWS_ACCESS_KEY_ID={SECRET} pytest -q tests/test_cart.py", "2026-03-01T10:00:02.000Z"),
        output(
            "c1",
            1,
            "FAILED tests/test_cart.py::test_total - assert 0.30000000000000004 == 0.3\n1 failed",
            "2026-03-01T10:00:03.000Z",
        ),
        item(
            {
                "type": "custom_tool_call",
                "name": "apply_patch",
                "input": patch,
                "call_id": "c2",
                "status": "completed",
            },
            "2026-03-01T10:00:04.000Z",
        ),
        item(
            {
                "type": "custom_tool_call_output",
                "call_id": "c2",
                "output": json.dumps(
                    {
                        "output": "Success. Updated the following files:\nM src/cart.py\n",
                        "metadata": {"exit_code": 0},
                    }
                ),
            },
            "2026-03-01T10:00:05.000Z",
        ),
        call("c3", "pytest -q tests/test_cart.py", "2026-03-01T10:00:06.000Z"),
        output("c3", 0, "3 passed in 0.02s", "2026-03-01T10:00:07.000Z"),
        line("event_msg", {"type": "agent_message", "message": "Fixed."}),
        item(
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "Rounded the total to cents; the test passes."}],
            },
            "2026-03-01T10:00:08.000Z",
        ),
        line("event_msg", {"type": "token_count", "info": None}),
        line("world_state", {"full": True}),  # a newer record type
        line("some_future_record", {"x": 1}),
    ]
    path = tmp_path / f"{name}.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def load(path: Path) -> Trajectory | NotEpisode:
    source = CodexSource(default_scrubber(), roots=[])
    found = list(source.discover([str(path)]))
    assert len(found) == 1 and found[0].agent == "codex"
    return source.load(found[0])


def test_rollout_becomes_a_trajectory(tmp_path: Path) -> None:
    traj = load(rollout(tmp_path))
    assert isinstance(traj, Trajectory)
    assert traj.agent == "codex" and traj.agent_version == "0.104.0" and traj.entrypoint == "codex_cli_rs"
    assert traj.session_id == "0199aaaa-bbbb-7ccc-8ddd-eeeeffff0000"
    assert (traj.cwd, traj.project, traj.git_branch, traj.models) == (
        "/home/u/shop",
        "shop",
        "fix-rounding",
        ["gpt-5-codex"],
    )
    # the typed words only: the environment context and our injected memory are not prompts
    assert traj.prompts == ["the cart total test fails with 0.30000000000000004"]
    assert traj.stats.injected_context_stripped == 1
    assert traj.thinking == ["Float rounding in total()"]
    assert traj.closing_summary == "Rounded the total to cents; the test passes."
    assert [c.name for c in traj.tool_calls] == ["exec_command", "apply_patch", "exec_command"]
    first, patch, rerun = traj.tool_calls
    assert first.exit_code == 1 and first.is_error and rerun.exit_code == 0 and not rerun.is_error
    assert patch.file_path == "src/cart.py" and traj.files_edited == ["src/cart.py"]
    assert traj.started_at is not None and traj.ended_at is not None and traj.started_at < traj.ended_at


def test_secrets_are_scrubbed_like_claude_code(tmp_path: Path) -> None:
    traj = load(rollout(tmp_path))
    assert isinstance(traj, Trajectory)
    assert SECRET not in traj.model_dump_json()
    assert traj.tool_calls[0].command is not None and "REDACTED" in traj.tool_calls[0].command
    assert sum(traj.stats.secrets_redacted.values()) >= 1


def test_unknown_records_are_counted_and_skipped(tmp_path: Path) -> None:
    traj = load(rollout(tmp_path))
    assert isinstance(traj, Trajectory)
    skipped = traj.stats.skipped_entry_types
    assert skipped["world_state"] == 1 and skipped["some_future_record"] == 1
    assert skipped["message:developer"] == 1 and skipped["event_msg:token_count"] == 1


def test_evidence_rules_judge_codex_tools(tmp_path: Path) -> None:
    traj = load(rollout(tmp_path))
    assert isinstance(traj, Trajectory)
    first, patch, rerun = traj.tool_calls
    assert is_edit(patch) and not is_edit(first)
    assert check_result(first) is not None and check_result(first).value == "failed"  # type: ignore[union-attr]
    assert check_result(rerun) is not None and check_result(rerun).value == "passed"  # type: ignore[union-attr]
    card = HeuristicDistiller().distill(traj, "").card
    assert card.outcome is Outcome.VERIFIED


def test_format_is_told_by_content_not_name(tmp_path: Path) -> None:
    path = rollout(tmp_path, name="renamed")
    assert sniff_file(path) == "codex"
    traj = load(path)
    assert isinstance(traj, Trajectory) and traj.session_id == "0199aaaa-bbbb-7ccc-8ddd-eeeeffff0000"


def test_compressed_rollout_is_reported_not_read(tmp_path: Path) -> None:
    path = tmp_path / "rollout-2026-03-01T10-00-00-0199aaaa-bbbb-7ccc-8ddd-eeeeffff0001.jsonl.zst"
    path.write_bytes(b"\x28\xb5\x2f\xfd\x00\x00")
    result = load(path)
    assert isinstance(result, NotEpisode) and result.reason == "compressed-unsupported"


def test_javascript_exec_cell_reads_as_its_commands(tmp_path: Path) -> None:
    cell = (
        '// @exec: {"yield_time_ms": 10000}\n'
        'const r = await tools.exec_command({cmd: "go test ./...", workdir: "/w"});\ntext(r);\n'
        "await tools.apply_patch(`*** Begin Patch\n*** Add File: main_test.go\n+package main\n*** End Patch`);\n"
    )
    lines = [
        line(
            "session_meta",
            {"id": "0199aaaa-bbbb-7ccc-8ddd-eeeeffff0002", "cwd": "/w", "cli_version": "0.171.0"},
        ),
        line("event_msg", {"type": "user_message", "message": "add a test"}),
        item({"type": "custom_tool_call", "name": "exec", "input": cell, "call_id": "x1"}),
        item(
            {"type": "custom_tool_call_output", "call_id": "x1", "output": "Process exited with code 0\nok"}
        ),
        item(
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Added."}]}
        ),
    ]
    path = tmp_path / "rollout-2026-03-01T10-00-00-0199aaaa-bbbb-7ccc-8ddd-eeeeffff0002.jsonl"
    path.write_text("\n".join(lines) + "\n")
    traj = load(path)
    assert isinstance(traj, Trajectory)
    (cell_call,) = traj.tool_calls
    assert cell_call.command == "go test ./...\napply_patch" and cell_call.file_path == "main_test.go"
    assert is_edit(cell_call) and cell_call.exit_code == 0


def test_real_offline_run_of_codex_0_171(tmp_path: Path) -> None:
    """A rollout the real CLI (npm @openai/codex 0.171.0) wrote offline: see fixtures/agents/README.md.
    No model answered it: skipped as `no-model-turn`; with an answer appended it is a trajectory."""
    path = FIXTURES / "codex-0.171-offline-rollout.jsonl"
    skipped_run = load(path)
    assert isinstance(skipped_run, NotEpisode) and skipped_run.reason == "no-model-turn"
    answered = tmp_path / path.name
    reply = {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Done."}]}
    answered.write_text(path.read_text() + item(reply) + "\n")
    traj = load(answered)
    assert isinstance(traj, Trajectory)
    assert (
        traj.agent_version == "0.171.0" and traj.entrypoint == "codex_exec" and traj.cwd == "/tmp/cx18/proj"
    )
    # 0.171 writes no user_message event: the typed prompt comes from the user message, context left out
    assert traj.prompts == ["run the tests with pytest -q and fix the failing one"]
    skipped = traj.stats.skipped_entry_types
    assert skipped["world_state"] == 1 and skipped["event_msg:item_completed"] == 1
    assert traj.stats.skipped_block_types["response_item:additional_tools"] == 1


def test_a_first_line_longer_than_the_sniffed_bytes_is_told_by_its_envelope() -> None:
    """A real session_meta carries the whole system prompt (~21 KB): only the line's start is sniffed."""
    from episodic.parse.formats import sniff

    meta = {"id": "01a2", "base_instructions": {"text": "x" * 30_000}}
    for envelope in (
        {"timestamp": "2026-12-01T13:36:38.594Z", "ordinal": 0, "type": "session_meta", "payload": meta},
        {"timestamp": "2026-02-23T11:41:32.239Z", "type": "session_meta", "payload": meta},
    ):
        assert sniff(json.dumps(envelope).encode()[:8192]) == "codex"
    assert sniff(json.dumps({"type": "user", "message": {"content": "x" * 9000}}).encode()[:8192]) is None
