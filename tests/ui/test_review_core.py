"""Review state in both stores: veto hides a card from every query and survives re-indexing (unchanged and
grown sessions), restore brings it back, edits are validated like LLM cards, `approved_only` narrows, and
`cards export/import` carries the review."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from episodic.assembly import build_source
from episodic.cards.review import review_episode, review_queue
from episodic.cards.transfer import export_cards, import_cards
from episodic.core.ingest import index_sessions
from episodic.core.search import get_episode, search_traces
from episodic.distill.heuristic import HeuristicDistiller
from episodic.embed.hashing import HashingEmbedder
from episodic.kernel.errors import InvalidArgumentError, InvalidCardError, NotFoundError
from episodic.kernel.memory import Memory
from episodic.kernel.models import SearchFilters
from episodic.kernel.settings import load_settings
from episodic.store.sqlite import SQLiteStore
from fakes.s3vectors_fake import FakeS3VectorsClient, make_index

from ui.sessions import SESSIONS, write_session

CHECKOUT, LOGIN, EXPORT = (s[0] for s in SESSIONS)
QUERY = "checkout total is blank for a discounted cart item"


def _memory(backend: str, home: Path) -> Memory:
    settings = load_settings(embedder="hashing", home=home)
    settings.home.mkdir(parents=True, exist_ok=True)
    if backend == "sqlite":
        store: object = SQLiteStore(settings.db_path)
    else:
        from episodic.aws.s3vectors_store import S3VectorsStore

        client = FakeS3VectorsClient()
        make_index(client, "episodic-vectors", "episodes", settings.hashing_dimension)
        store = S3VectorsStore(client, "episodic-vectors", "episodes", sleep=lambda _s: None)
    return Memory(
        settings=settings,
        source=build_source(settings),
        distiller=HeuristicDistiller(),
        embedder=HashingEmbedder(settings.hashing_dimension),
        store=store,  # type: ignore[arg-type]
        ledger=store if isinstance(store, SQLiteStore) else None,
    )


@pytest.fixture(params=["sqlite", "s3vectors"])
def memory(
    request: pytest.FixtureRequest, episodic_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Memory]:
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude"))
    for session_id, prompt, closing, day in SESSIONS:
        write_session(tmp_path / "claude" / "projects", session_id, prompt, closing, day)
    memory = _memory(request.param, episodic_home)
    assert index_sessions(memory, None, "local").indexed == 3
    yield memory


def found(memory: Memory, query: str = QUERY, **filters: object) -> list[str]:
    hits = search_traces(
        memory, "local", query, k=5, filters=SearchFilters(include_unverified=True, **filters)
    )  # type: ignore[arg-type]
    return [h.record.session_id for h in hits]


def grow(tmp_path: Path, session_id: str) -> None:
    sid, prompt, closing, day = next(s for s in SESSIONS if s[0] == session_id)
    write_session(tmp_path / "claude" / "projects", sid, prompt, closing, day, turns=2)


def test_veto_hides_the_card_until_restored(memory: Memory) -> None:
    assert found(memory)[0] == CHECKOUT
    with pytest.raises(InvalidArgumentError, match="reason"):
        review_episode(memory, "local", CHECKOUT, "veto")
    review_episode(memory, "local", CHECKOUT, "veto", reason="misstates the cause")
    assert CHECKOUT not in found(memory)
    assert CHECKOUT not in found(memory, "checkout")  # the keyword half too
    with pytest.raises(NotFoundError, match="vetoed"):
        get_episode(memory, "local", CHECKOUT)
    stored = memory.store.get("local", CHECKOUT)
    assert stored is not None and stored.review is not None and stored.review.reason == "misstates the cause"
    with pytest.raises(InvalidArgumentError, match="restore"):
        review_episode(memory, "local", CHECKOUT, "approve")
    review_episode(memory, "local", CHECKOUT, "restore")
    assert found(memory)[0] == CHECKOUT
    assert [e.action for e in memory.store.get("local", CHECKOUT).review.history] == ["veto", "restore"]  # type: ignore[union-attr]


def test_approved_only_returns_approved_cards(memory: Memory) -> None:
    assert found(memory, approved_only=True) == []
    review_episode(memory, "local", CHECKOUT, "approve")
    assert found(memory, approved_only=True) == [CHECKOUT]


def test_a_veto_survives_reindex_of_unchanged_and_grown_sessions(memory: Memory, tmp_path: Path) -> None:
    review_episode(memory, "local", CHECKOUT, "veto", reason="wrong root cause")
    review_episode(memory, "local", LOGIN, "approve")
    again = index_sessions(memory, None, "local")
    assert again.unchanged == 3 and again.indexed == 0  # not re-created, not re-distilled
    assert CHECKOUT not in found(memory)
    before = memory.store.get("local", CHECKOUT)
    grow(tmp_path, CHECKOUT)
    grow(tmp_path, LOGIN)
    grown = index_sessions(memory, None, "local")
    assert grown.indexed == 2 and grown.replaced == 2
    vetoed = memory.store.get("local", CHECKOUT)
    assert vetoed is not None and before is not None and vetoed.source_sha256 != before.source_sha256
    assert vetoed.review is not None and vetoed.review.state.value == "vetoed" and vetoed.review.session_grew
    assert CHECKOUT not in found(memory)  # a grown session's new card stays vetoed...
    assert CHECKOUT in [r.session_id for r in review_queue(memory, "local")]  # ...and waits for a look
    approved = memory.store.get("local", LOGIN)
    assert approved is not None and approved.review_state.value == "unreviewed"  # approval was of old text
    assert approved.review is not None and approved.review.history[-1].action == "session-grew"


def test_edits_are_validated_like_llm_cards_and_keep_the_original(memory: Memory, tmp_path: Path) -> None:
    record = memory.store.get("local", CHECKOUT)
    assert record is not None
    card = record.card.model_dump(mode="json")
    with pytest.raises(InvalidCardError, match="file path"):
        review_episode(memory, "local", CHECKOUT, "edit", card={**card, "insight": "see /srv/app/pricing.py"})
    with pytest.raises(InvalidCardError, match="schema"):
        review_episode(memory, "local", CHECKOUT, "edit", card={**card, "outcome": "great"})
    assert memory.store.get("local", CHECKOUT) == record  # nothing changed
    done = review_episode(
        memory, "local", CHECKOUT, "edit", card={**card, "insight": "Round only after discounts."}
    )
    assert done.record.card.insight == "Round only after discounts."
    assert done.record.review is not None and done.record.review.original == record.card
    assert found(memory, "round only after discounts")[0] == CHECKOUT  # re-embedded
    grow(tmp_path, CHECKOUT)
    index_sessions(memory, None, "local")
    replaced = memory.store.get("local", CHECKOUT)
    assert replaced is not None and replaced.review is not None
    assert (
        replaced.review.superseded is not None
        and replaced.review.superseded.insight == "Round only after discounts."
    )


def test_an_unsupported_verified_in_an_edit_is_downgraded(memory: Memory) -> None:
    record = memory.store.get("local", EXPORT)
    assert record is not None
    failed = {**record.card.model_dump(mode="json"), "outcome": "failed"}
    review_episode(memory, "local", EXPORT, "edit", card=failed)
    # the transcript backs `verified` (a passing check after the last edit): the upgrade is allowed
    back = review_episode(memory, "local", EXPORT, "edit", card={**failed, "outcome": "verified"})
    assert back.record.card.outcome.value == "verified"
    for path in (Path(memory.settings.claude_config_dir or "") / "projects").rglob(f"{EXPORT}.jsonl"):
        path.unlink()  # no transcript: no evidence, so the claim is downgraded
    review_episode(memory, "local", EXPORT, "edit", card=failed)
    down = review_episode(memory, "local", EXPORT, "edit", card={**failed, "outcome": "verified"})
    assert down.record.card.outcome.value == "unverified" and down.notes


def test_cards_export_and_import_carry_the_review(memory: Memory, tmp_path: Path) -> None:
    if not isinstance(memory.store, SQLiteStore):
        pytest.skip("one round trip is enough (the review is part of the record either way)")
    record = memory.store.get("local", CHECKOUT)
    assert record is not None
    edited = {**record.card.model_dump(mode="json"), "insight": "Round only after discounts."}
    review_episode(memory, "local", CHECKOUT, "edit", card=edited)
    review_episode(memory, "local", CHECKOUT, "approve")
    review_episode(memory, "local", LOGIN, "veto", reason="the cookie flag was not the cause")
    folder = tmp_path / "cards"
    assert export_cards(memory, "local", folder) == 3
    fresh = _memory("sqlite", tmp_path / "other-home")
    report = import_cards(fresh, "local", folder)
    assert report.imported == 3 and report.reviewed == 2, report.as_dict()
    approved = fresh.store.get("local", CHECKOUT)
    assert approved is not None and approved.review_state.value == "approved"
    assert approved.card.insight == "Round only after discounts." and approved.review.original == record.card  # type: ignore[union-attr]
    assert LOGIN not in found(fresh, "login redirects back to the form")
