"""Issue 41's everyday frictions, each through the CLI as a user meets it: the demo leaves when real sessions
are indexed, mistakes get one clear line (not a traceback, not "found 0"), ids and names resolve, and
history decisions are decisions (each shown once, with its own context)."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from kits.client_env import DemoIndexed, episodic, index_demo, isolate
from kits.session_builder import SessionWriter

DEMO = Path(__file__).resolve().parents[2] / "shared" / "episodic" / "demo"


CONFIG = 'embedder = "hashing"\ndistiller = "heuristic"\n'


@pytest.fixture()
def home(episodic_home: Path) -> Path:
    (episodic_home / "config.toml").write_text(CONFIG)
    return episodic_home


def _isolate(env: pytest.MonkeyPatch, home: Path) -> None:
    """The environment `episodic_home` gives a test, for `home` and its sibling `user-home`."""
    isolate(env, home)


@pytest.fixture(scope="module")
def demo_indexed(tmp_path_factory: pytest.TempPathFactory) -> DemoIndexed:
    """One home with the demo corpus indexed on purpose, for the tests that only read it."""
    return index_demo(tmp_path_factory.mktemp("demo-indexed"), CONFIG)


@pytest.fixture()
def demo_home(demo_indexed: DemoIndexed, monkeypatch: pytest.MonkeyPatch) -> Path:
    home, done = demo_indexed
    assert done.returncode == 0, done.stderr
    _isolate(monkeypatch, home)
    return home


def _projects() -> Path:
    return Path(os.environ["HOME"]) / ".claude" / "projects" / "-home-dev-webshop"


def real_session(session_id: str = "5f0c1d2e-aaaa-4bbb-8ccc-000000000001") -> Path:
    """One real (non-demo) Claude Code session in ~/.claude/projects, with a verified fix."""
    writer = SessionWriter(session_id, "2026-11-20")
    writer.prompt("Mise run lint fails on CI with a ruff error about unused imports in the checkout module")
    writer.tool(
        "Bash", {"command": "mise run lint"}, "F401 `os` imported but unused\nFound 1 error.", error=True
    )
    writer.reply("The lint fails because os is imported but never used in checkout.py. I removed the import.")
    writer.tool("Bash", {"command": "mise run lint"}, "All checks passed!")
    writer.reply("Lint passes now: the unused import was the cause.")
    return writer.write(_projects())


# ---------------------------------------------------------------- 3. the demo leaves


def test_indexing_real_sessions_takes_the_demo_out(home: Path) -> None:
    quick = episodic("quickstart")
    assert quick.returncode == 0, quick.stderr
    assert json.loads(episodic("stats", "--json").stdout)["by_tenant"] == {"demo": 6}
    real_session()
    done = episodic("index")
    assert done.returncode == 0, done.stderr
    assert "removed the 6 demo card(s)" in done.stdout
    stats = json.loads(episodic("stats", "--json").stdout)
    assert stats["by_tenant"] == {"local": 1}


def test_indexing_the_demo_on_purpose_keeps_it(demo_home: Path, demo_indexed: DemoIndexed) -> None:
    _, done = demo_indexed
    assert done.returncode == 0, done.stderr
    assert json.loads(episodic("stats", "--json").stdout)["by_tenant"] == {"local": 6}


# ---------------------------------------------------------------- 4. clear errors


def test_index_of_a_missing_folder_is_an_error(home: Path, tmp_path: Path) -> None:
    missing = tmp_path / "no-such-folder"
    done = episodic("index", str(missing))
    assert done.returncode != 0
    assert f"no such file or folder: {missing}" in done.stderr
    assert "found 0 sessions" not in done.stdout and "Traceback" not in done.stderr


def test_ui_on_a_busy_port_says_so(home: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        done = episodic("ui", "--host", "127.0.0.1", "--port", str(port), "--no-open")
    assert done.returncode != 0
    assert f"127.0.0.1:{port} is already in use" in done.stderr
    assert "Traceback" not in done.stderr


def test_cards_export_into_a_folder_that_cannot_be_made(demo_home: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    done = episodic("cards", "export", str(blocker / "cards"))
    assert done.returncode != 0
    assert f"cannot write the cards to {blocker / 'cards'}: Not a directory" in done.stderr
    assert "Traceback" not in done.stderr


def test_invalid_config_is_named_with_its_line_by_the_hook_and_the_cli(home: Path) -> None:
    config = home / "config.toml"
    config.write_text('embedder = "hashing"\ntoken = "abc"\nport = \n')
    payload = json.dumps(
        {
            "hook_event_name": "UserPromptSubmit",
            "session_id": "s1",
            "cwd": "/tmp",
            "prompt": "why does the lint step fail on CI but pass here",
        }
    )
    hook = subprocess.run(
        [sys.executable, "-m", "episodic.hooks.prompt"],
        input=payload,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert hook.returncode == 0 and hook.stdout == ""
    logged = (home / "logs" / "hook.log").read_text()
    assert f"config file {config} is not valid TOML" in logged and "line 3" in logged
    assert "missing config" not in logged
    cli = episodic("stats")
    assert cli.returncode != 0 and f"config file {config} is not valid TOML" in cli.stderr
    assert "line 3" in cli.stderr


# ---------------------------------------------------------------- 7. history decisions


def test_history_decisions_are_decisions_each_with_its_own_context(home: Path) -> None:
    writer = SessionWriter("7d1e5c3a-bbbb-4ccc-8ddd-000000000007", "2026-11-21")
    writer.prompt(
        'Another session is active: "fix the shadow branch cleanup". You can continue here, but checkpoints '
        "from both sessions will be interleaved. To resume the other session instead, exit Claude and run: "
        "claude -r 0f3e2a1b-1111-4222-8333-444455556666"
    )
    writer.reply("Continuing here. Let me look at how the shadow branch is created for each commit.")
    writer.prompt(
        "Should the shadow branch be named per commit or per session? Pick one for the checkpoints."
    )
    writer.tool("Bash", {"command": "go test ./..."}, "ok  \tentire/checkpoint\t0.412s")
    writer.reply(
        "We decided to name the shadow branch per commit instead of per session, so two sessions on one "
        "commit share it."
    )
    writer.prompt("And what about cleaning up old shadow branches after a merge, keep them or delete them?")
    writer.tool("Bash", {"command": "go test ./..."}, "ok  \tentire/cleanup\t0.233s")
    writer.reply(
        "We'll delete the shadow branch after the merge rather than keeping it, since the checkpoints are "
        "copied to the metadata branch first. Tests pass."
    )
    writer.write(_projects())
    assert episodic("index").returncode == 0
    done = episodic("history", "decisions", "shadow branch", "--json")
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)["decisions"]
    texts = [d["decision"] for d in found]
    assert not [t for t in texts if "To resume the other session" in t or "claude -r" in t], texts
    assert any("per commit instead of per session" in t for t in texts), texts
    assert any("delete the shadow branch after the merge" in t for t in texts), texts
    contexts = [d["context"] for d in found if d["context"]]
    assert len(contexts) == len(set(contexts)), contexts  # no context repeated under several decisions
    said = {d["decision"]: d["context"] for d in found}
    per_commit = next(c for t, c in said.items() if "per commit" in t)
    assert not per_commit or "named per commit or per session" in per_commit


# ---------------------------------------------------------------- 5. ids and names

# Claude Code's `--resume ID` as the real CLI does it (its project folder is the current folder with every
# character but a letter or digit made `-`): the transcript must be under that folder, else it refuses.
FAKE_RESUMING_CLAUDE = """#!{python}
import os, re, sys
from pathlib import Path
args = sys.argv[1:]
assert args[0] == "--resume", args
slug = re.sub(r"[^a-zA-Z0-9]", "-", os.getcwd())
found = Path(os.environ["HOME"]) / ".claude" / "projects" / slug / (args[1] + ".jsonl")
if not found.is_file():
    print("No conversation found with session ID: " + args[1], file=sys.stderr)
    sys.exit(1)
print("resumed " + args[1] + " with " + str(len(found.read_text().splitlines())) + " lines")
"""


def test_show_with_a_short_prefix_says_a_prefix_needs_six_characters(demo_home: Path) -> None:
    done = episodic("show", "967e5")
    assert done.returncode == 1
    assert "a prefix of a session id needs at least 6 characters" in done.stderr


def test_resume_by_the_first_prompt_of_an_untitled_session(home: Path) -> None:
    real_session()
    assert episodic("index").returncode == 0
    done = episodic("resume", "Mise run lint", "--print")
    assert done.returncode == 0, done.stderr
    assert (
        done.stdout.strip() == "cd /home/dev/webshop && claude --resume 5f0c1d2e-aaaa-4bbb-8ccc-000000000001"
    )


def test_resume_when_the_sessions_folder_is_gone(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    transcript = real_session()  # its folder, /home/dev/webshop, does not exist here
    assert episodic("index").returncode == 0
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    claude = bin_dir / "claude"
    claude.write_text(FAKE_RESUMING_CLAUDE.format(python=sys.executable))
    claude.chmod(0o755)
    here = tmp_path / "somewhere else"
    here.mkdir()
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    done = episodic("resume", "5f0c1d2e", cwd=here)
    assert done.returncode == 0, done.stderr
    assert "resumed 5f0c1d2e-aaaa-4bbb-8ccc-000000000001 with 7 lines" in done.stdout
    assert "the folder /home/dev/webshop is gone: copied the transcript to" in done.stderr
    transcript.unlink()  # the agent's cleanup took it, and the copy too: say so, do not run claude
    (Path(os.environ["HOME"]) / ".claude" / "projects" / re.sub(r"[^a-zA-Z0-9]", "-", str(here))).rename(
        tmp_path / "moved"
    )
    gone = episodic("resume", "5f0c1d2e", cwd=here)
    assert gone.returncode == 1
    assert "Claude Code no longer has the transcript of 5f0c1d2e" in gone.stderr
    assert "episodic history show 5f0c1d2e" in gone.stderr


# ---------------------------------------------------------------- 6. Codex exec rollouts

CODEX_FIXTURE = (
    Path(__file__).resolve().parents[1] / "fixtures" / "agents" / "codex-0.171-offline-rollout.jsonl"
)
# codex-rs/protocol/src/prompts/base_instructions/default.md, which session_meta carries whole, is 21,203
# characters: a first line that long is what a real rollout starts with (placeholder words here, same length)
BASE_INSTRUCTIONS_CHARS = 21_203


def codex_exec_rollout(model_turn: bool) -> Path:
    """A `codex exec` rollout of Codex 0.171 in ~/.codex/sessions: the records the real CLI wrote offline
    (tests/fixtures/agents/README.md) with session_meta's base_instructions at its real length; with
    `model_turn`, the model's answer follows in the documented rollout format (reasoning, exec_command calls
    and their outputs, an apply_patch, the final message, task_complete), in 0.171's envelope."""
    lines = [json.loads(raw) for raw in CODEX_FIXTURE.read_text().splitlines()]
    filler = "You are a coding agent running in the Codex CLI. "
    lines[0]["payload"]["base_instructions"]["text"] = (filler * 500)[:BASE_INSTRUCTIONS_CHARS]
    if model_turn:
        turn = lines[1]["payload"]["turn_id"]

        def item(payload: dict[str, object]) -> dict[str, object]:
            return {"type": "response_item", "payload": payload}

        def shell(call_id: str, cmd: str, code: int, out: str) -> list[dict[str, object]]:
            arguments = json.dumps({"cmd": cmd, "workdir": "/tmp/cx18/proj", "yield_time_ms": 10000})
            body = f"Chunk ID: 7f3a\nWall time: 0.8 seconds\nProcess exited with code {code}\nOutput:\n{out}"
            return [
                item(
                    {
                        "type": "function_call",
                        "name": "exec_command",
                        "arguments": arguments,
                        "call_id": call_id,
                    }
                ),
                item({"type": "function_call_output", "call_id": call_id, "output": body}),
            ]

        patch = (
            "*** Begin Patch\n*** Update File: pricing.py\n@@ def total(items):\n-    return sum(items) * 1.2\n"
            "+    return round(sum(items) * 1.2, 2)\n*** End Patch\n"
        )
        answer = (
            "The failing test compared an unrounded float; total() now rounds to cents and pytest -q passes."
        )
        lines += [
            item({"type": "reasoning", "summary": [{"type": "summary_text", "text": "Running the tests first."}], "content": None, "encrypted_content": "gAAAAB"}),
            *shell("call_pytest_1", "pytest -q", 1, "F.\nFAILED test_pricing.py::test_total - assert 3.5999999999999996 == 3.6\n1 failed, 1 passed in 0.05s"),
            item({"type": "custom_tool_call", "name": "apply_patch", "input": patch, "call_id": "call_patch_1", "status": "completed"}),
            item({"type": "custom_tool_call_output", "call_id": "call_patch_1", "output": "Success. Updated the following files:\nM pricing.py\n"}),
            *shell("call_pytest_2", "pytest -q", 0, "..\n2 passed in 0.04s"),
            item({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": answer}], "phase": "final_answer"}),
            {"type": "event_msg", "payload": {"type": "agent_message", "message": answer}},
            {"type": "event_msg", "payload": {"type": "task_complete", "turn_id": turn, "last_agent_message": answer}},
        ]  # fmt: skip
        for ordinal, entry in enumerate(lines[14:], start=14):
            entry.update(timestamp=f"2026-12-01T13:37:{ordinal:02d}.000Z", ordinal=ordinal)
    folder = Path(os.environ["HOME"]) / ".codex" / "sessions" / "2026" / "12" / "01"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "rollout-2026-12-01T13-36-38-01a231d2-5845-7171-b1d1-c83bdd7304e5.jsonl"
    path.write_text("".join(json.dumps(entry, separators=(",", ":")) + "\n" for entry in lines))
    return path


def test_a_codex_exec_run_without_a_model_turn_is_skipped_as_such(home: Path) -> None:
    rollout = codex_exec_rollout(model_turn=False)
    assert len(rollout.read_text().splitlines()[0]) > 21_000  # past any sniffed head
    done = episodic("index", str(rollout.parents[3]), "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["skipped"] == {"no-model-turn": 1} and report["agents"] == {"codex": 1}, report


def test_a_codex_exec_run_is_indexed_and_found(home: Path) -> None:
    codex_exec_rollout(model_turn=True)
    done = episodic("index", "--json")  # the default roots: ~/.codex/sessions among them
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert (report["indexed"], report["agents"], report["skipped"]) == (1, {"codex": 1}, {}), report
    found = json.loads(episodic("search", "pytest total rounding float test fails", "--json").stdout)
    (hit,) = [h for h in found["results"] if h["agent"] == "codex"]
    assert hit["session_id"] == "01a231d2-5845-7171-b1d1-c83bdd7304e5"
    assert hit["card"]["outcome"] == "verified", hit["card"]
