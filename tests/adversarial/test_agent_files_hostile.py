"""Issue 31, hostile Codex and Gemini files: each becomes a counted, skipped session with a reason (or is
read with its oddity repaired); none crashes `index`, `inspect` or `scratch extract`, none disappears."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from .conftest import cli

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "agents"
CODEX_ROLLOUT = FIXTURES / "codex-0.171-answered-rollout.jsonl"  # the offline run, answered
GEMINI_HOME = FIXTURES / "gemini-0.61-home"


def gemini_document(session_id: str, prompt: str, extra: str = "") -> str:
    """The older Gemini CLI form: one pretty-printed JSON document (`extra` is spliced into its header)."""
    document = {
        "sessionId": session_id,
        "projectHash": "0" * 64,
        "startTime": "2026-01-10T10:00:00Z",
        "messages": [
            {"id": "m1", "type": "user", "timestamp": "2026-01-10T10:00:00Z", "content": prompt},
            {
                "id": "m2",
                "type": "gemini",
                "timestamp": "2026-01-10T10:01:00Z",
                "content": "Fixed the include path; the tests pass now.",
                "toolCalls": [
                    {
                        "id": "c1",
                        "name": "run_shell_command",
                        "args": {"command": "pytest -q"},
                        "status": "success",
                        "result": [
                            {
                                "functionResponse": {
                                    "response": {
                                        "output": "Command: pytest -q\nDirectory: .\nOutput: 3 passed\n"
                                        "Error: (none)\nExit Code: 0"
                                    }
                                }
                            }
                        ],
                    }
                ],
            },
        ],
    }
    text = json.dumps(document, indent=2)
    return text.replace('"projectHash"', extra + '"projectHash"', 1) if extra else text


def run_json(home: Path, *args: str, **env: str) -> dict:
    done = cli(home, *args, "--json", timeout=120, **env)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    return json.loads(done.stdout)


PROMPT = "the build fails with a missing header file after the compiler upgrade, please fix it"


def test_a_5000_digit_number_in_a_gemini_document_is_a_skipped_session(tmp_path: Path) -> None:
    folder = tmp_path / "D"
    folder.mkdir()
    (folder / "session-good.json").write_text(gemini_document("g-good", PROMPT))
    (folder / "session-big.json").write_text(gemini_document("g-big", PROMPT, '"n": ' + "9" * 5000 + ",\n"))
    home = tmp_path / "home"
    shown = run_json(home, "inspect", str(folder))  # rc 1 with a ValueError before
    assert shown["sessions"] == 2 and shown["not_episodes"] == {"malformed": 1}, shown
    extracted = run_json(home, "scratch", "extract", str(folder))
    assert extracted["sessions"] == 1 and extracted["skipped"] == {"malformed": 1}, extracted
    report = run_json(home, "index", str(folder))
    assert report["indexed"] == 1 and report["skipped"] == {"malformed": 1} and not report["failed"], report


def test_a_lone_surrogate_in_a_gemini_document_is_replaced(tmp_path: Path) -> None:
    folder = tmp_path / "D"
    folder.mkdir()
    document = gemini_document("g-sur", PROMPT + " SURROGATE now").replace("SURROGATE", "\\ud800")
    (folder / "session-s.json").write_text(document)  # the JSON escape itself: a lone surrogate once read
    home = tmp_path / "home"
    report = run_json(home, "index", str(folder))  # failed with a traceback (store could not encode)
    assert report["indexed"] == 1 and not report["failed"], report
    shown = cli(home, "show", "g-sur")
    assert shown.returncode == 0 and "\ufffd" in shown.stdout, shown.stdout + shown.stderr


@pytest.mark.parametrize("kind", ["nested", "fifo", "loop", "surrogate"])
def test_a_hostile_projects_json_is_treated_as_absent(tmp_path: Path, kind: str) -> None:
    gemini = tmp_path / "gemini-home"
    shutil.copytree(GEMINI_HOME, gemini)
    chats = gemini / ".gemini" / "tmp" / "proj" / "chats"
    (chats / "session-doc.json").write_text(gemini_document("g-doc", PROMPT))
    registry = gemini / ".gemini" / "projects.json"
    registry.unlink()
    if kind == "nested":
        registry.write_text('{"projects": ' + "[" * 100_000 + "]" * 100_000 + "}")
    elif kind == "fifo":
        os.mkfifo(registry)  # never opened for a blocking read
    elif kind == "loop":
        registry.symlink_to(registry)
    else:
        registry.write_text('{"projects": {"/home/dev/\\ud800x": "proj"}}')
    report = run_json(tmp_path / "home", "index", GEMINI_CLI_HOME=str(gemini))
    # every Gemini session failed with a RecursionError before; the registry now reads as absent
    assert report["agents"] == {"gemini": 2} and report["indexed"] >= 1 and not report["failed"], report


def hostile_files(folder: Path, names: tuple[str, str, str]) -> None:
    """A FIFO, a symlink to /dev/zero and a symlink loop, named as the agent names its files."""
    fifo, zero, loop = names
    os.mkfifo(folder / fifo)
    (folder / zero).symlink_to("/dev/zero")
    (folder / loop).symlink_to(folder / loop)


SKIPPED = {"not-a-regular-file": 2, "symlink-loop": 1}


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_codex_fifo_device_and_loop_are_counted_as_skipped(tmp_path: Path) -> None:
    codex = tmp_path / "codex"
    day = codex / "sessions" / "2026" / "12" / "01"
    day.mkdir(parents=True)
    shutil.copy(CODEX_ROLLOUT, day / CODEX_ROLLOUT.name.replace("codex-0.171-answered-", ""))
    hostile_files(day, ("rollout-fifo.jsonl", "rollout-zero.jsonl", "session-loop.jsonl"))
    # their own folder (CODEX_HOME): every file there is Codex's, whatever its name
    report = run_json(
        tmp_path / "home", "index", CODEX_HOME=str(codex)
    )  # a FIFO read would hang: cli times out
    assert report["agents"] == {"codex": 4} and report["skipped"] == SKIPPED, report
    assert report["indexed"] + report["unchanged"] == 1 and not report["failed"], report
    # named by hand: the file names say which agent's files they are
    shown = run_json(tmp_path / "home2", "inspect", str(day))
    assert shown["sessions"] == 4 and shown["not_episodes"] == SKIPPED, shown


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_gemini_fifo_device_and_loop_are_counted_as_skipped(tmp_path: Path) -> None:
    gemini = tmp_path / "gemini-home"
    shutil.copytree(GEMINI_HOME, gemini)
    chats = gemini / ".gemini" / "tmp" / "proj" / "chats"
    (chats / "session-doc.json").write_text(gemini_document("g-doc", PROMPT))
    hostile_files(chats, ("session-fifo.json", "session-zero.jsonl", "session-loop.json"))
    report = run_json(tmp_path / "home", "index", GEMINI_CLI_HOME=str(gemini))
    assert report["agents"] == {"gemini": 5} and report["skipped"].items() >= SKIPPED.items(), report
    assert not report["failed"], report
    extracted = run_json(tmp_path / "home", "scratch", "extract", str(chats))
    assert extracted["skipped"].items() >= SKIPPED.items(), extracted


def test_codex_and_gemini_files_over_the_size_cap_are_skipped(tmp_path: Path) -> None:
    folder = tmp_path / "D"
    folder.mkdir()
    shutil.copy(CODEX_ROLLOUT, folder / "rollout-big.jsonl")
    (folder / "session-big.json").write_text(gemini_document("g-big", PROMPT + " x" * 5000))
    (folder / "session-small.json").write_text(gemini_document("g-small", PROMPT))
    # the Codex and Gemini readers read up to 512 MB whatever the setting said
    report = run_json(tmp_path / "home", "index", str(folder), EPISODIC_MAX_TRANSCRIPT_BYTES="8000")
    assert report["skipped"] == {"too-large": 2} and report["indexed"] == 1, report
