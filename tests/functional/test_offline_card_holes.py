"""Offline cards with no hole where a path was removed and no agent-CLI boilerplate as a decision (issue 50,
item 13), through `episodic cards check` as a user runs it: the shapes are counted by name in a card folder,
and the heuristic's own cards of a session that holds them come out with none."""

from __future__ import annotations

import json
from pathlib import Path

from kits.session_builder import SessionWriter
from test_cards_check_cli import run

SESSION = "5a5a5a5a-1111-4111-8111-000000000050"
RESUME = (
    "To resume the other session instead, exit Claude and run: claude -r 0276a600-2f22-4d2b-844c-3feb9c5aa108"
)


def _session(folder: Path) -> None:
    """A real shape (entireio/cli): another tool's hook text in a user turn, a path in a code span in the
    sentence that states the problem, and a "because:" before a list."""
    (
        SessionWriter(SESSION, "2026-03-02", cwd="/home/dev/entire")
        .prompt("secrets show up in plaintext in git show although the output filter is set, can you fix it?")
        .prompt(
            'Operation stopped by hook: Another session is active: "tests with a real repo"\n\n'
            f"You can continue here, but checkpoints from both sessions will be interleaved.\n\n{RESUME}\n\n"
            "To suppress this warning in future sessions, run: entire config"
        )
        .reply(
            'The `output_filter` setting (e.g., `["gitleaks-filter"]`) is configured in `.entire/settings.json`, '
            "but secrets appear in plaintext when viewing `git show` because the filter only runs on push."
        )
        .tool(
            "Edit",
            {"file_path": "/home/dev/entire/cli/filter.go", "old_string": "a", "new_string": "b"},
            "ok",
        )
        .tool("Bash", {"command": "go test ./..."}, "ok  \tgithub.com/entire/cli\t0.2s")
        .reply(
            "Given your setup, **pre-built binaries** makes more sense because:\n1. You have telemetry keys that "
            "need to be embedded at build time\n2. You're shipping to users\n\nBoth files have been updated."
        )
        .write(folder)
    )


def test_cards_check_counts_the_hole_shapes_and_the_boilerplate_by_name(tmp_path: Path) -> None:
    folder = tmp_path / "cards"
    folder.mkdir()
    card = {  # what heuristic:v5 wrote for such a session
        "problem": "The output_filter setting is configured in, but secrets appear in plaintext when viewing.",
        "steps": ["Edited filter.go", "Ran go test: passed"],
        "insight": "Given your setup, pre-built binaries makes more sense because. You have telemetry keys.",
        "key_decisions": [RESUME, "It writes transcripts to but ComputeTranscriptPath looks for them at"],
        "dead_ends": [],
        "misleading_intuitions": [],
        "critical_checks": [],
        "tags": [],
        "outcome": "verified",
    }
    (folder / f"{SESSION}.json").write_text(json.dumps(card))
    done = run(["--cards", str(folder), "--json"], tmp_path / "home")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["holes"] == 3 and report["boilerplate"] == 1, report
    assert report["hole_kinds"] == {
        "connective missing its clause": 1,
        "in or at missing its word": 2,
        "preposition missing its word before a conjunction": 1,
    }
    text = run(["--cards", str(folder)], tmp_path / "home").stdout
    assert "agent-CLI boilerplate 1" in text and "holes by shape: connective missing its clause 1" in text


def test_the_offline_card_of_such_a_session_has_neither(tmp_path: Path) -> None:
    _session(tmp_path / "sessions")
    done = run(["--distil", str(tmp_path / "sessions"), "--json"], tmp_path / "home")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["cards"] == 1 and report["holes"] == 0 and report["boilerplate"] == 0, report
    assert report["hole_kinds"] == {}
