"""An offline (heuristic) card is shown as what the session said, never as a distilled lesson ("found:",
"Insight:"): in the prompt hook, in search_traces / get_episode (and the CLI, which packs the same text).

The card is the one the hook injected in issue 39 (marot__spotter, the OpenTelemetry session), as
heuristic:v5 writes it."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from episodic.cards import present
from episodic.hooks import packing as hook_packing
from episodic.kernel.models import Card, CardRecord, DistillerInfo, Outcome, SearchHit
from episodic.mcp.tools import hit_json

CARD = Card(
    problem="Work on bead spotter-4te. End-to-end OpenTelemetry tracing (plugin -> Phoenix -> Ash -> LiveView).",
    insight="with_span as function vs macro - tests failed because do blocks were passed as keyword args.",
    dead_ends=["None worked because the pre-commit hook blocks even with --no-verify"],
    misleading_intuitions=["The issue is the function doesn't exist with that name (later shown wrong)"],
    critical_checks=["Final check: mix dialyzer passed"],
    outcome=Outcome.VERIFIED,
)


def _record(distiller: DistillerInfo) -> CardRecord:
    return CardRecord(
        card=CARD,
        session_id="ae4a77f8-aedd-4bc1-888f-c94edc91af04",
        project="spotter",
        started_at=datetime(2026, 2, 12, tzinfo=UTC),
        source_sha256="0" * 64,
        distiller=distiller,
    )


HEURISTIC = DistillerInfo(kind="heuristic", model="v5")
LLM = DistillerInfo(kind="claude-code", model="sonnet")


def test_the_hook_says_an_offline_card_is_what_the_session_concluded() -> None:
    hit = hit_json(SearchHit(record=_record(HEURISTIC), score=0.9, similarity=0.8))
    assert hit["distiller"] == "heuristic:v5"
    text = hook_packing.format_episode(hit, 1500)
    assert text.splitlines()[0].endswith(f"The session concluded: {CARD.insight}")
    assert "found:" not in text and "What looked guilty" not in text
    assert "Its problem, as the session put it: Work on bead" in text
    assert "The session said did not work: None worked" in text


def test_the_hook_keeps_the_lesson_wording_for_an_llm_card_and_an_older_server() -> None:
    hit = hit_json(SearchHit(record=_record(LLM), score=0.9, similarity=0.8))
    assert f"found: {CARD.insight}" in hook_packing.format_episode(hit, 1500).splitlines()[0]
    del hit["distiller"]  # a server before heuristic:v5 sends no distiller
    assert "found:" in hook_packing.format_episode(hit, 1500)


def test_search_traces_and_get_episode_say_it_too() -> None:
    packed = present.pack_card(_record(HEURISTIC), similarity=0.8)
    assert f"The session concluded: {CARD.insight}" in packed and "Insight:" not in packed
    full = present.episode_text(_record(HEURISTIC))
    assert "The session concluded:" in full and "\nInsight:" not in full
    assert "the session's own sentences" in full
    assert "Insight: " in present.pack_card(_record(LLM), similarity=0.8)


def test_an_offline_extract_without_an_insight_is_said_plainly() -> None:
    record = _record(HEURISTIC)
    record = record.model_copy(update={"card": CARD.model_copy(update={"insight": ""})})
    lead = hook_packing.format_episode(
        hit_json(SearchHit(record=record, score=0.9, similarity=0.8)), 1500
    ).splitlines()[0]
    assert lead.endswith("in the session's own words.") and "verified fix" not in lead


@pytest.mark.parametrize(
    "distiller",
    ["heuristic:v6", "heuristic:v5", "heuristic:v4", "heuristic", "claude-code:sonnet", "self", ""],
)
def test_the_hooks_copy_tells_an_extract_as_the_presentation_module_does(distiller: str) -> None:
    assert hook_packing.is_extract({"distiller": distiller}) is present.is_extract(distiller)
