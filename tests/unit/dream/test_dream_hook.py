"""The SessionStart hook: off by default; on, the latest synthesis within its budget; silent on failure."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from episodic.dream.archive import LocalArchive
from episodic.dream.hook import main
from episodic.dream.weeks import IsoWeek


def _run() -> str:
    out = io.StringIO()
    assert main(out) == 0
    return out.getvalue()


def test_off_by_default_then_the_latest_synthesis_within_the_budget(
    episodic_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    archive = LocalArchive(episodic_home / "dreams")
    archive.write("local", IsoWeek(2026, 29), "synthesis", "old week\n")
    archive.write("local", IsoWeek(2026, 29), "record", "---\nweek: 2026-W29\n---\n")
    archive.write("local", IsoWeek(2026, 30), "record", "---\nweek: 2026-W30\n---\n")
    archive.write("local", IsoWeek(2026, 30), "synthesis", "## Flags for Review\n" + "1. a flag\n" * 400)
    assert _run() == ""
    monkeypatch.setenv("EPISODIC_DREAM_SESSION_START", "true")
    monkeypatch.setenv("EPISODIC_DREAM_SESSION_START_CHARS", "500")
    payload = json.loads(_run())
    context = payload["hookSpecificOutput"]["additionalContext"]
    assert payload["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    assert "Flags for Review" in context and "old week" not in context and len(context) <= 500


def test_silent_without_records_inside_a_distiller_run_and_on_bad_settings(
    episodic_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EPISODIC_DREAM_SESSION_START", "true")
    assert _run() == ""  # no record yet
    LocalArchive(episodic_home / "dreams").write("local", IsoWeek(2026, 30), "record", "x")
    LocalArchive(episodic_home / "dreams").write("local", IsoWeek(2026, 30), "synthesis", "synth")
    monkeypatch.setenv("EPISODIC_DISTILLING", "1")
    assert _run() == ""
    monkeypatch.delenv("EPISODIC_DISTILLING")
    monkeypatch.setenv("EPISODIC_DREAM_SESSION_START_CHARS", "not a number")
    assert _run() == ""


def test_an_empty_weeks_synthesis_left_by_an_older_version_is_skipped(
    episodic_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    archive = LocalArchive(episodic_home / "dreams")
    archive.write("local", IsoWeek(2026, 29), "record", "---\nweek: 2026-W29\nsessions_analysed: 12\n---\n")
    archive.write("local", IsoWeek(2026, 29), "synthesis", "## Patterns Across Weeks\n- the busy week\n")
    empty = "---\nweek: 2026-W30\nsessions_analysed: 0\n---\n"
    archive.write("local", IsoWeek(2026, 30), "record", empty)
    archive.write(
        "local", IsoWeek(2026, 30), "synthesis", "- First record: no earlier week to compare with.\n"
    )
    monkeypatch.setenv("EPISODIC_DREAM_SESSION_START", "true")
    context = json.loads(_run())["hookSpecificOutput"]["additionalContext"]
    assert "the busy week" in context and "First record" not in context
