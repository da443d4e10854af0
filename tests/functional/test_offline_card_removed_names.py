"""Offline cards where a name, a code span or a test report's counts were removed, through the CLI as a user
runs it: `episodic cards check` counts the shapes by name in a card folder, and the heuristic's own card of a
session that holds them has no hole and keeps the counts ("Tests: 3 failed, 12 passed")."""

from __future__ import annotations

import json
from pathlib import Path

from kits.session_builder import SessionWriter
from test_cards_check_cli import run
from test_dream_record_quality import run as index_run

SESSION = "5c5c5c5c-2222-4222-8222-000000000059"
JEST = "FAIL src/import.test.ts\n  ● import › keeps quoted commas\n\nTests:       3 failed, 12 passed, 15 total\n"


def _session(folder: Path) -> None:
    """A long code span in the sentence that states the cause, another before "but", a Jest report."""
    (
        SessionWriter(SESSION, "2026-03-04", cwd="/home/dev/importer")
        .prompt("the CSV import drops rows whose fields hold quoted commas, can you fix it?")
        .tool("Bash", {"command": "npm test"}, JEST, error=True)
        .reply(
            "The importer splits on every comma with `line.split(',').map((field) => field.trim())` instead of "
            "using the csv module, so a quoted field is cut in two."
        )
        .reply(
            "The signature is now `(row: string, options: ParseOptions, onError: ErrorHandler)` but the test "
            "calls pass only 2 args."
        )
        .tool(
            "Edit",
            {"file_path": "/home/dev/importer/src/import.ts", "old_string": "a", "new_string": "b"},
            "ok",
        )
        .tool("Bash", {"command": "npm test"}, "Tests:       15 passed, 15 total\n")
        .write(folder)
    )


def test_cards_check_counts_the_removed_name_shapes_by_name(tmp_path: Path) -> None:
    folder = tmp_path / "cards"
    folder.mkdir()
    card = {  # what heuristic:v6 wrote for such sessions
        "problem": "The importer splits on every comma with instead of using the csv module.",
        "steps": ["Ran npm test: failed (Tests: failed, passed)", "Edited import.ts"],
        "insight": "The signature is now but the test calls pass only 3 args.",
        "key_decisions": [],
        "dead_ends": [],
        "misleading_intuitions": [],
        "critical_checks": ["npm test: failed (Tests: failed, passed), which changed the course of the fix"],
        "tags": [],
        "outcome": "verified",
    }
    (folder / f"{SESSION}.json").write_text(json.dumps(card))
    done = run(["--cards", str(folder), "--json"], tmp_path / "home")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["holes"] == 4, report
    assert report["hole_kinds"] == {
        "count missing its number": 2,
        "verb missing its complement": 1,
        "word missing before instead of": 1,
    }
    text = run(["--cards", str(folder)], tmp_path / "home").stdout
    assert "holes by shape: count missing its number 2" in text, text


def test_the_offline_card_of_such_a_session_has_no_hole_and_keeps_the_counts(tmp_path: Path) -> None:
    _session(tmp_path / "sessions")
    done = run(["--distil", str(tmp_path / "sessions"), "--json"], tmp_path / "home")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["cards"] == 1 and report["holes"] == 0 and report["hole_kinds"] == {}, report
    text = run(["--distil", str(tmp_path / "sessions")], tmp_path / "home").stdout
    assert f"no hole of the {report['hole_shapes_checked']} shapes checked" in text, text

    indexed = index_run(["index", str(tmp_path / "sessions"), "--distiller", "heuristic"], tmp_path / "home")
    assert indexed.returncode == 0, indexed.stderr
    exported = index_run(["cards", "export", str(tmp_path / "out")], tmp_path / "home")
    assert exported.returncode == 0, exported.stderr
    card = json.loads((tmp_path / "out" / f"{SESSION}.json").read_text())
    texts = [
        card["problem"],
        card["insight"],
        *card["steps"],
        *card["critical_checks"],
        *card["key_decisions"],
    ]
    assert any("Tests: 3 failed, 12 passed" in t for t in texts), texts
    for text in texts:
        assert " with instead of" not in text and "is now but" not in text and "failed, passed" not in text
