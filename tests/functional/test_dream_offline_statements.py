"""An offline dream record reads as whole, standalone statements, through the CLI as a user runs it (`index`
with the heuristic, then `dream --offline`): no theme titled by a code location ("The function at line
1033-1045 filters …"), no decision that leans on a sentence it was cut from ("They shouldn't contain …")."""

from __future__ import annotations

import re
from pathlib import Path

from episodic.dream.record import parse_record, section_items
from kits.session_builder import SessionWriter
from test_dream_record_quality import run

LOCATION = re.compile(r"(?i)\blines? \d+")
PRONOUN_LED = re.compile(r"(?i)^(?:\d{4}-\d{2}-\d{2}: )?(?:they|it|these|those|this|that)\b")


def _week(folder: Path) -> None:
    """Three sessions of one thread: the assistant points at a code location, then says what "they" are."""
    for n, day in enumerate(["2026-03-02", "2026-03-03", "2026-03-04"]):
        (
            SessionWriter(f"7e7e7e7e-4444-4444-8444-00000000000{n}", day, cwd="/home/dev/hooks")
            .prompt(f"secrets from .env files end up in the transcript the hook stores, fix the filter ({n})")
            .reply(
                "The function at line 1033-1045 filters transcripts, prompts, context and tool outputs before "
                "they are stored."
            )
            .tool(
                "Read", {"file_path": "/home/dev/hooks/src/filter.py"}, "def scrub(text):\n    return text\n"
            )
            .reply(
                "They shouldn't contain secrets that get committed. The filter should scrub .env values before "
                "the transcript is written, instead of after."
            )
            .tool(
                "Edit",
                {"file_path": "/home/dev/hooks/src/filter.py", "old_string": "a", "new_string": "b"},
                "ok",
            )
            .tool("Bash", {"command": "pytest -q"}, "3 passed in 0.2s\n")
            .reply("The filter now scrubs .env values before the transcript is written; the tests pass.")
            .write(folder)
        )


def test_an_offline_record_says_whole_standalone_statements(tmp_path: Path) -> None:
    home, sessions = tmp_path / "home", tmp_path / "sessions"
    _week(sessions)
    indexed = run(["index", str(sessions), "--distiller", "heuristic"], home)
    assert indexed.returncode == 0, indexed.stderr
    dreamt = run(["dream", "--week", "2026-W10", "--offline", "--transcripts", str(sessions)], home)
    assert dreamt.returncode == 0, dreamt.stderr
    record = parse_record((home / "dreams" / "local" / "2026-W10.md").read_text(encoding="utf-8"))

    narrative = " ".join(section_items(record, "narrative"))
    assert "the work that came back most was" in narrative, narrative
    titled = re.search(r"came back most was “([^”]+)”", narrative)
    assert titled and not LOCATION.search(titled.group(1)), narrative
    assert not PRONOUN_LED.match(titled.group(1))
    for section in ("decisions", "insights", "flags"):
        for item in section_items(record, section):
            assert not LOCATION.search(item), (section, item)
            text = re.sub(r"^\d+\.\s*|^\(unverified\)\s*", "", item)
            assert not PRONOUN_LED.match(text), (section, item)
    assert "They shouldn't" not in record.text and "line 1033" not in record.text
    decisions = section_items(record, "decisions")
    assert any("scrub .env values before the transcript is written" in d for d in decisions), decisions
