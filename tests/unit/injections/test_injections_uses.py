"""The rules that read what a session did with what it was given, one example each way, and the hook's
choice over hits: never the same card twice, a hub shown as a pointer only when its switch is on."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from episodic.core.injected import choose, steer
from episodic.injections.summary import percentile, summarise
from episodic.injections.uses import check_head, read_use
from episodic.kernel.injection_port import CardUse, InjectionRecord, prompt_hash
from episodic.kernel.models import (
    Card,
    CardRecord,
    Confidence,
    DistillerInfo,
    Event,
    Outcome,
    SearchHit,
    ToolCall,
)
from episodic.kernel.settings import Settings

T0 = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
CARD = Card(
    problem="go test fails: undefined nonAlphanumericRegex after the imports were cleaned up",
    insight="the regexp import was removed while paths_util.go still used it",
    critical_checks=["`go test ./...` after restoring the import"],
    outcome=Outcome.VERIFIED,
)


def record(tier: str = "card", at: datetime = T0) -> InjectionRecord:
    return InjectionRecord(
        tenant_id="local",
        session_id="recv",
        card_id="5365b0bc-617d-582c-9369-4cf3b383dd85",
        tier=tier,  # type: ignore[arg-type]
        source="prompt_hook",
        prompt_sha256=prompt_hash("p"),
        chars=600,
        at=at,
    )


def at(n: int) -> datetime:
    return T0 + timedelta(seconds=n)


def tool(name: str, n: int, **extra: object) -> Event:
    return Event(kind="tool", timestamp=at(n), tool=ToolCall(id=f"t{n}", name=name, timestamp=at(n), **extra))  # type: ignore[arg-type]


def session(*middle: Event) -> list[Event]:
    return [
        Event(kind="prompt", text="go build is broken again", timestamp=at(0)),
        *middle,
        Event(kind="prompt", text="next", timestamp=at(50)),
        Event(kind="prompt", text="and the one after", timestamp=at(60)),
        Event(
            kind="assistant",
            text="nonAlphanumericRegex paths_util.go mentioned far too late",
            timestamp=at(61),
        ),
    ]


def test_get_episode_on_the_id_prefix_is_opened() -> None:
    events = session(tool("mcp__episodic__get_episode", 5, input={"session_id": "5365b0bc"}))
    reading = read_use(record("pointer"), CARD, events)
    assert reading is not None and reading.use == "opened"


def test_two_distinctive_terms_in_the_reply_are_cited_but_not_after_the_window() -> None:
    cited = session(
        Event(kind="assistant", text="So nonAlphanumericRegex lives in paths_util.go.", timestamp=at(3))
    )
    assert read_use(record(), CARD, cited).use == "cited"  # type: ignore[union-attr]
    one_term = session(Event(kind="assistant", text="Looking at paths_util.go now.", timestamp=at(3)))
    assert read_use(record(), CARD, one_term).use == "ignored"  # type: ignore[union-attr]
    assert read_use(record(), CARD, session()).use == "ignored"  # type: ignore[union-attr]  # terms after the window


def test_a_term_the_session_used_before_the_injection_is_not_distinctive() -> None:
    events = session(Event(kind="assistant", text="nonAlphanumericRegex and paths_util.go", timestamp=at(3)))
    events[0] = Event(
        kind="prompt", text="nonAlphanumericRegex is undefined in paths_util.go", timestamp=at(0)
    )
    assert read_use(record(), CARD, events).use == "ignored"  # type: ignore[union-attr]


def test_running_the_check_the_card_names_is_acted() -> None:
    events = session(tool("Bash", 4, command="go test ./internal/...", output="ok"))
    reading = read_use(record(), CARD, events)
    assert reading is not None and reading.use == "acted" and "check=go test" in reading.detail
    assert check_head("cd web && npm run lint -- --fix") == "npm run lint"


def test_a_record_whose_moment_is_not_in_the_transcript_is_not_read() -> None:
    assert read_use(record(at=T0 + timedelta(hours=3)), CARD, session()) is None


def hit(session_id: str, confidence: Confidence) -> SearchHit:
    stored = CardRecord(
        card=CARD, session_id=session_id, source_sha256="x", distiller=DistillerInfo(kind="heuristic")
    )
    return SearchHit(record=stored, score=1.0, similarity=0.5, confidence=confidence)


def test_the_hook_never_gives_a_card_twice_and_keeps_the_card_for_the_best_hit() -> None:
    hits = [hit("a", Confidence.STRONG), hit("b", Confidence.STRONG), hit("c", Confidence.WEAK)]
    first = choose(hits, {}, never_twice=True)
    assert [(h.record.session_id, h.confidence) for h in first] == [
        ("a", Confidence.STRONG),
        ("b", Confidence.WEAK),
        ("c", Confidence.WEAK),
    ]
    again = choose(hits, {"a": {"card"}, "b": {"pointer"}, "c": {"pointer"}}, never_twice=True)
    assert again == []  # b is no card: the best hit was a, given already
    upgraded = choose(hits[1:], {"b": {"pointer"}}, never_twice=True)
    assert [(h.record.session_id, h.confidence) for h in upgraded] == [
        ("b", Confidence.STRONG),
        ("c", Confidence.WEAK),
    ]
    assert len(choose(hits, {"a": {"card"}}, never_twice=False)) == 3


def test_a_hub_falls_to_a_pointer_only_with_its_switch_on() -> None:
    hits = [hit("hub", Confidence.STRONG)]
    uses = {"hub": CardUse(given=9, pointers=0, used=0, opened=0, read=9)}
    assert steer(hits, uses, Settings(injections_hubs=False))[0].confidence == Confidence.STRONG
    assert steer(hits, uses, Settings(injections_hubs=True))[0].confidence == Confidence.WEAK
    used = {"hub": CardUse(given=9, pointers=0, used=1, opened=0, read=9)}
    assert steer(hits, used, Settings(injections_hubs=True))[0].confidence == Confidence.STRONG


def test_the_summary_counts_sessions_uses_and_chars() -> None:
    records = [
        record().model_copy(
            update={
                "session_id": f"s{n % 3}",
                "use": "ignored" if n else "cited",
                "use_detail": "" if n else "cited:x,y",
            }
        )
        for n in range(6)
    ]
    summary = summarise(records)
    assert (summary.records, summary.sessions, summary.per_session_median) == (6, 3, 2.0)
    assert summary.share_used == round(1 / 6, 3) and summary.share_by_rule["cited"] == round(1 / 6, 3)
    assert summary.top_cards[0].given == 6 and summary.chars_per_day == {"2026-12-01": 3600}
    assert percentile([1, 2, 3, 4, 100], 0.95) == 100


def test_a_check_many_cards_name_is_no_evidence() -> None:
    from episodic.injections.uses import common_evidence

    others = [CARD.model_copy(update={"problem": f"another go test failure number {n}"}) for n in range(10)]
    common = common_evidence([CARD, *others])
    assert "go test" in common  # eleven cards name it: the project's everyday check
    events = session(tool("Bash", 4, command="go test ./internal/...", output="ok"))
    assert read_use(record(), CARD, events, common=common).use == "ignored"  # type: ignore[union-attr]
    assert common_evidence([CARD]) == frozenset()  # too few cards to call anything common


def test_touching_a_file_the_card_names_is_noted_but_no_use_alone() -> None:
    card = CARD.model_copy(update={"steps": ["restored the import in paths_util.go"]})
    events = session(tool("Edit", 4, file_path="/repo/internal/paths_util.go"))
    reading = read_use(record(), card, events)
    assert (
        reading is not None and reading.use == "ignored" and "touched:file=paths_util.go" in reading.matched
    )
