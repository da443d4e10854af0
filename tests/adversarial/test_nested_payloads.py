"""Issue 14, "every JSON parse of untrusted input bounded": a tool output, a harvested line or an LLM card
nested 100,000 deep, or holding a 5,000-digit number, is refused for what it is, never a RecursionError."""

from __future__ import annotations

from pathlib import Path

import pytest
from episodic.distill.checks import parse_card_payload
from episodic.distill.heuristic_task import _json_task
from episodic.harvest.body import build_body, read_source_files
from episodic.kernel.errors import InvalidCardError
from episodic.kernel.models import SessionSource
from episodic.scrub import default_scrubber

DEEP = "[" * 100_000
HUGE_INT = '{"n": ' + "9" * 5000 + "}"


@pytest.mark.parametrize("output", [DEEP, HUGE_INT])
def test_a_hostile_tool_output_is_not_a_task(output: str) -> None:
    assert _json_task(output) == ("", "")


@pytest.mark.parametrize("text", [DEEP, HUGE_INT])
def test_a_hostile_llm_card_is_an_invalid_card(text: str) -> None:
    with pytest.raises(InvalidCardError):
        parse_card_payload(text)


def test_hostile_lines_are_dropped_from_a_harvested_body(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text(DEEP + "\n" + HUGE_INT + "\n" + '{"type":"user","message":{"content":"hi"}}\n')
    source = SessionSource(session_key="s", main_path=str(path), total_bytes=path.stat().st_size, mtime=0.0)
    files, sha = read_source_files(source)
    body = build_body(files, sha, default_scrubber())
    assert body.dropped_lines == 2
