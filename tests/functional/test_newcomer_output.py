"""What a newcomer reads from `quickstart`, `setup` and `experiment report` in a fresh home: a drawn question
that finds its own session, the next step once the search has been shown, headings and counts that say
what they hold."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from conftest import TRANSCRIPTS_DIR
from kits.client_env import episodic

TEAM = TRANSCRIPTS_DIR / "entireio__cli"
# one team's sessions; the newest verified one's problem ("Already up to date — your branch already has all
# of main's changes.") is a git message, which its own card matches only weakly
SESSIONS = ("37a27d31", "3de3ff10", "1ed1f046", "ab8c5aa0", "87a7858d", "8c816805")


def _config(home: Path) -> None:
    (home / "config.toml").write_text('embedder = "hashing"\n')


def test_quickstart_ends_on_the_setup_that_wires_the_memory_into_claude_code(episodic_home: Path) -> None:
    _config(episodic_home)
    done = episodic("quickstart")
    assert done.returncode == 0, done.stderr
    last = done.stdout.strip().splitlines()[-1]
    assert last.startswith("Next, to give this memory to your agent"), done.stdout
    assert "setup claude-code --write`" in last and "doctor` then checks every link" in last, last


def test_quickstart_names_only_the_agents_found_and_not_yet_wired(episodic_home: Path) -> None:
    _config(episodic_home)
    user_home = episodic_home.parent / "user-home"
    (user_home / ".claude" / "projects").mkdir(parents=True)
    (user_home / ".codex" / "sessions").mkdir(parents=True)
    (user_home / ".claude.json").write_text('{"mcpServers": {"episodic": {"type": "stdio", "command": "x"}}}')
    done = episodic("quickstart")
    assert done.returncode == 0, done.stderr
    last = done.stdout.strip().splitlines()[-1]
    assert "setup codex --write`" in last and "claude-code" not in last, done.stdout
    (user_home / ".codex" / "sessions").rmdir()
    (user_home / ".codex").rmdir()
    again = episodic("quickstart")
    assert "Next, to give" not in again.stdout, again.stdout  # every agent found is wired: nothing to add


def test_setup_preview_heads_the_hooks_json_with_every_hook_it_holds(episodic_home: Path) -> None:
    _config(episodic_home)
    done = episodic("setup", "claude-code")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    heading = next(i for i, line in enumerate(lines) if line.startswith("# Hooks"))
    end = next(i for i in range(heading + 1, len(lines)) if lines[i] == "}")
    events = list(json.loads("\n".join(lines[heading + 1 : end + 1]))["hooks"])
    assert {"UserPromptSubmit", "PostToolUseFailure"} <= set(events), events
    assert lines[heading].startswith(f"# Hooks ({', '.join(events)}): merge this into "), lines[heading]


def test_experiment_report_counts_one_logged_session_in_the_singular(episodic_home: Path) -> None:
    _config(episodic_home)
    (episodic_home / "experiment").mkdir()
    logged = {  # as the prompt hook logs a session it would give memory to
        "at": "2026-12-07T18:37:57Z",
        "session_id": "aaaa1111-0000-4000-8000-000000000001",
        "arm": "with",
        "holdout": 0.1,
        "would_inject": [{"session_id": "2b945d54-dd2b-4f60-b3b0-7b0252349003", "similarity": 0.56}],
        "would_inject_prior_attempts": False,
    }
    (episodic_home / "experiment" / "log.jsonl").write_text(json.dumps(logged) + "\n")
    done = episodic("experiment", "report")
    assert done.returncode == 0, done.stderr
    assert "  1 logged session is not measured yet (logged 1 with, 0 without)" in done.stdout, done.stdout


@pytest.mark.skipif(not TEAM.is_dir(), reason="the shared transcripts are not beside this checkout")
def test_quickstart_asks_a_question_of_its_own_sessions_that_finds_its_session_as_a_close_match(
    episodic_home: Path,
) -> None:
    projects = (
        episodic_home.parent / "user-home" / ".claude" / "projects" / "-Users-soph-Work-entire-devenv-cli"
    )
    projects.mkdir(parents=True)
    for prefix in SESSIONS:
        shutil.copy(next(TEAM.glob(f"{prefix}*.jsonl")), projects)
    done = episodic("quickstart")  # the default embedder: the labels a user sees
    assert done.returncode == 0, done.stderr
    drawn = re.search(r"drawn from your session ([0-9a-f]{8})", done.stdout)
    assert drawn, done.stdout
    first = next(line for line in done.stdout.splitlines() if line.startswith("[1] "))
    assert first.startswith(f"[1] (close match) Episode {drawn.group(1)}"), done.stdout
