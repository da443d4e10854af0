"""What `episodic search` prints for a person: the heading says what the list is, and each label what
decided it (the judge's probability, or the outcome that kept a close episode from being a card)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from episodic.cli.core_print import ALSO_HEADER, LEADS_HEADER, NO_MATCH, print_hits
from episodic.kernel.models import CardRecord, Confidence, DistillerInfo, SearchHit
from kits.mcp_testkit import EPISODES


def _hit(
    index: int, confidence: Confidence | None, similarity: float, judge: float | None = None
) -> SearchHit:
    tenant, session_id, project, day, card = EPISODES[index]
    record = CardRecord(
        card=card,
        session_id=session_id,
        tenant_id=tenant,
        project=project,
        started_at=datetime.fromisoformat(day).replace(tzinfo=UTC),
        source_sha256="0" * 64,
        distiller=DistillerInfo(kind="heuristic"),
    )
    return SearchHit(record=record, score=1.0, similarity=similarity, confidence=confidence, judge=judge)


def _entries(out: str) -> list[str]:
    return [line for line in out.splitlines() if line.startswith("[")]


def _verified(index: int) -> bool:
    return EPISODES[index][4].outcome.value == "verified"


VERIFIED = next(i for i in range(len(EPISODES)) if _verified(i))
UNVERIFIED = next(i for i in range(len(EPISODES)) if not _verified(i))


def test_the_judge_that_decided_a_label_is_named_beside_it(capsys: pytest.CaptureFixture[str]) -> None:
    print_hits(
        [
            _hit(VERIFIED, Confidence.WEAK, 0.52, judge=0.41),
            _hit(VERIFIED, Confidence.FAINT, 0.53, judge=0.04),
        ]
    )
    out = capsys.readouterr().out
    assert out.startswith(LEADS_HEADER) and NO_MATCH not in out
    weak, faint = _entries(out)
    assert "(weak match, maybe related; the judge: 0.41 likely the same problem)" in weak
    assert "(faint match, probably unrelated; the judge: 0.04 likely the same problem)" in faint


def test_a_close_episode_never_verified_is_a_lead_and_says_why(capsys: pytest.CaptureFixture[str]) -> None:
    print_hits([_hit(UNVERIFIED, Confidence.STRONG, 0.92)])
    (line,) = _entries(capsys.readouterr().out)
    outcome = EPISODES[UNVERIFIED][4].outcome.value
    assert f"(close, but {outcome}: a lead, not a fix)" in line and "(close match" not in line
    print_hits([_hit(UNVERIFIED, Confidence.STRONG, 0.92)], leads_unless_verified=False)  # --all-outcomes
    assert "(close match)" in _entries(capsys.readouterr().out)[0]


def test_an_empty_answer_alone_says_no_confident_match(capsys: pytest.CaptureFixture[str]) -> None:
    print_hits([_hit(VERIFIED, None, 0.2)])  # below the faint bar: never printed
    assert capsys.readouterr().out == NO_MATCH + "\n"


def test_leads_after_close_matches_are_headed_as_such(capsys: pytest.CaptureFixture[str]) -> None:
    print_hits([_hit(VERIFIED, Confidence.STRONG, 0.7), _hit(VERIFIED, Confidence.WEAK, 0.45)])
    out = capsys.readouterr().out
    assert out.startswith("[1] (close match)") and LEADS_HEADER not in out
    assert out.index("[1] (close match)") < out.index(ALSO_HEADER) < out.index("[2] (weak match")
