"""The viewer labels each hit as an agent calling search_traces with its defaults meets it: an episode whose fix
was never verified is a one-line entry there, never a full card, whatever tier its score reached (issue 49)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from episodic.kernel.models import Card, CardRecord, Confidence, DistillerInfo, Outcome, SearchHit
from episodic.ui.data import Browse, SurveyView, ViewerSource
from episodic.ui.views import Viewer


def _hit(session_id: str, outcome: Outcome) -> SearchHit:
    record = CardRecord(
        card=Card(problem=f"the websocket client drops messages ({session_id})", outcome=outcome),
        tenant_id="local",
        session_id=session_id,
        source_sha256="0" * 64,
        started_at=datetime(2026, 1, 1, tzinfo=UTC),
        distiller=DistillerInfo(kind="claude-code"),
    )
    return SearchHit(record=record, score=5.0, similarity=0.7, confidence=Confidence.STRONG)


class Hits(ViewerSource):
    label = "stub"
    can_list = False

    def __init__(self, hits: list[SearchHit]) -> None:
        self.hits = hits

    def search(self, tenant_id: str, query: str, browse: Browse) -> list[SearchHit]:
        return self.hits

    def records(self, tenant_id: str) -> list[CardRecord]:
        return []

    def get(self, tenant_id: str, session_id: str) -> CardRecord | None:
        return None

    def survey(self, record: CardRecord) -> SurveyView:
        return SurveyView(missing="stub")

    def review(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError


def test_an_unverified_strong_hit_is_shown_as_the_entry_the_agent_gets() -> None:
    viewer = Viewer(
        Hits([_hit("unverified-one", Outcome.UNVERIFIED), _hit("verified-one", Outcome.VERIFIED)]), "local"
    )
    page = viewer.route("GET", "/", {"query": "websocket drops messages"}, {}).body.decode()
    verified, unverified = page.index("verified-one"), page.index("unverified-one")
    assert verified < unverified  # the card first, the entry after it
    assert "Problem: the websocket client drops messages (verified-one)" in page  # the packed card
    assert "Problem: the websocket client drops messages (unverified-one)" not in page
    assert "unverifi [weak, unverified] the websocket client drops messages (unverified-one)" in page
