"""Gemini CLI sessions (current JSONL chats and the older one-document JSON) → the same Trajectory."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from episodic.distill.evidence import check_result, is_edit
from episodic.distill.heuristic import HeuristicDistiller
from episodic.kernel.models import NotEpisode, Outcome, Trajectory
from episodic.parse.gemini import GeminiSource
from episodic.scrub import default_scrubber

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "agents"
SECRET = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"


def shell(call_id: str, command: str, code: int, out: str) -> dict[str, Any]:
    text = (
        f"Command: {command}\nDirectory: (root)\nOutput: {out}\nError: (none)\nExit Code: {code}\nSignal: 0"
    )
    return {
        "id": call_id,
        "name": "run_shell_command",
        "args": {"command": command},
        "status": "success",
        "result": [
            {"functionResponse": {"id": call_id, "name": "run_shell_command", "response": {"output": text}}}
        ],
    }


def messages() -> list[dict[str, Any]]:
    replace = {
        "id": "r1",
        "name": "replace",
        "args": {"file_path": "/home/u/app/src/price.ts", "old_string": "a", "new_string": "b"},
        "status": "success",
        "result": [
            {
                "functionResponse": {
                    "id": "r1",
                    "name": "replace",
                    "response": {"output": "Successfully modified"},
                }
            }
        ],
    }
    return [
        {
            "id": "m0",
            "timestamp": "2026-03-02T09:00:00Z",
            "type": "user",
            "content": "<session_context>\nlinux",
        },
        {
            "id": "m1",
            "timestamp": "2026-03-02T09:00:01Z",
            "type": "user",
            "content": [{"text": f"npm test fails on the price rounding; token {SECRET}"}],
        },
        {
            "id": "m2",
            "timestamp": "2026-03-02T09:00:05Z",
            "type": "gemini",
            "content": "",
            "model": "gemini-2.5-pro",
            "thoughts": [{"subject": "Reproduce", "description": "Run the tests first."}],
            "toolCalls": [shell("s1", "npm test", 1, "1 failed")],
        },
        {
            "id": "m3",
            "timestamp": "2026-03-02T09:00:09Z",
            "type": "gemini",
            "content": "",
            "toolCalls": [replace, shell("s2", "npm test", 0, "12 passed")],
        },
        {
            "id": "m4",
            "timestamp": "2026-03-02T09:00:10Z",
            "type": "info",
            "content": "Gemini CLI update available!",
        },
        {"id": "m5", "timestamp": "2026-03-02T09:00:11Z", "type": "gemini", "content": "Fixed the rounding."},
    ]


def load(path: Path) -> Trajectory | NotEpisode:
    source = GeminiSource(default_scrubber(), roots=[])
    found = list(source.discover([str(path)]))
    assert len(found) == 1 and found[0].agent == "gemini"
    return source.load(found[0])


def write_jsonl(path: Path, records: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    return path


def test_jsonl_chat_becomes_a_trajectory(tmp_path: Path) -> None:
    home = tmp_path / "home" / ".gemini"
    home.mkdir(parents=True)
    (home / "projects.json").write_text(json.dumps({"projects": {"/home/u/app": "app"}}))
    head = {
        "sessionId": "5e551011-aaaa-bbbb-cccc-000000000001",
        "projectHash": "x",
        "startTime": "2026-03-02T09:00:00Z",
    }
    stale = {"id": "m5", "timestamp": "2026-03-02T09:00:11Z", "type": "gemini", "content": "working…"}
    records = [head, *messages()[:5], stale, messages()[5], {"$set": {"lastUpdated": "2026-03-02T09:00:12Z"}}]
    records.append({"kind": "unknown-record"})
    path = write_jsonl(home / "tmp" / "app" / "chats" / "session-2026-03-02T09-00-5e551011.jsonl", records)
    traj = load(path)
    assert isinstance(traj, Trajectory)
    assert traj.agent == "gemini" and traj.session_id == "5e551011-aaaa-bbbb-cccc-000000000001"
    assert traj.cwd == "/home/u/app" and traj.project == "app"  # from ~/.gemini/projects.json
    assert traj.prompts[0].startswith("npm test fails on the price rounding")  # session_context left out
    assert SECRET not in traj.model_dump_json() and sum(traj.stats.secrets_redacted.values()) >= 1
    assert traj.closing_summary == "Fixed the rounding."  # the rewrite of m5 replaced the stale text
    assert traj.thinking == ["Reproduce: Run the tests first."] and traj.models == ["gemini-2.5-pro"]
    assert [c.name for c in traj.tool_calls] == ["run_shell_command", "replace", "run_shell_command"]
    failed, edit, passed = traj.tool_calls
    assert failed.exit_code == 1 and failed.is_error and passed.exit_code == 0
    assert traj.files_edited == ["/home/u/app/src/price.ts"]
    assert traj.stats.skipped_entry_types == {"message:info": 1, "user:context": 1, "kind": 1}
    assert is_edit(edit) and check_result(passed) is not None
    assert HeuristicDistiller().distill(traj, "").card.outcome is Outcome.VERIFIED


def test_rewind_drops_the_rewound_messages(tmp_path: Path) -> None:
    head = {"sessionId": "5e551011-aaaa-bbbb-cccc-000000000002", "projectHash": "x"}
    extra = {"id": "m6", "timestamp": "2026-03-02T09:01:00Z", "type": "gemini", "content": "a wrong turn"}
    path = write_jsonl(tmp_path / "s.jsonl", [head, *messages(), extra, {"$rewindTo": "m6"}])
    traj = load(path)
    assert isinstance(traj, Trajectory) and traj.closing_summary == "Fixed the rounding."


def test_older_pretty_json_document(tmp_path: Path) -> None:
    document = {
        "sessionId": "5e551011-aaaa-bbbb-cccc-000000000003",
        "projectHash": "0" * 64,
        "startTime": "2026-03-02T09:00:00Z",
        "messages": messages(),
    }
    path = (
        tmp_path / "5e551011-aaaa-bbbb-cccc-000000000003.jsonl"
    )  # saved under a .jsonl name, as entireio did
    path.write_text(json.dumps(document, indent=2))
    traj = load(path)
    assert isinstance(traj, Trajectory) and len(traj.tool_calls) == 3
    assert traj.session_id == "5e551011-aaaa-bbbb-cccc-000000000003"


def test_a_broken_document_is_malformed_not_fatal(tmp_path: Path) -> None:
    path = tmp_path / "cut.json"
    path.write_text('{\n  "sessionId": "s",\n  "projectHash": "h",\n  "messages": [\n')
    result = load(path)
    assert isinstance(result, NotEpisode) and result.reason == "malformed"


def test_real_offline_run_of_gemini_cli_0_61() -> None:
    """A chat the real CLI (npm @google/gemini-cli 0.61.0) wrote offline: see fixtures/agents/README.md."""
    home = FIXTURES / "gemini-0.61-home"
    source = GeminiSource(default_scrubber(), roots=[home / ".gemini" / "tmp"])
    (found,) = list(source.discover(None))
    traj = source.load(found)
    assert isinstance(traj, Trajectory)
    assert traj.session_id == "e4c8bcf2-058a-4b70-b041-8b5980455037"
    assert traj.prompts == [
        "run the tests and fix the failing one"
    ]  # the $set-written session_context is not
    assert traj.cwd == "/tmp/gm18/proj"
