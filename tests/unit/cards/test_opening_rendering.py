"""The `opening` rendering: an offline card is also embedded by the session's first exchange (never shown),
an LLM's card is not, and an index built before the rendering existed is extended in place, not refused."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import numpy as np
import pytest
from episodic.assembly import build_memory
from episodic.aws.s3vectors_store import S3VectorsStore
from episodic.cards.opening import EXCHANGE_CHARS, opening_text
from episodic.cards.review import review_episode
from episodic.cli.doctor import OK, WARN, check_opening
from episodic.core.ingest import index_sessions
from episodic.core.search import search_traces
from episodic.distill.heuristic import HeuristicDistiller
from episodic.embed.hashing import HashingEmbedder
from episodic.kernel.memory import Memory
from episodic.kernel.models import (
    CARD_RENDERINGS,
    OPENING,
    RENDERINGS,
    Card,
    CardRecord,
    DistillerInfo,
    Event,
    IndexManifest,
    Outcome,
    SearchFilters,
    SessionSource,
    Trajectory,
)
from episodic.kernel.ports import Distiller, DistillResult, StoredVector
from episodic.kernel.settings import load_settings
from episodic.mcp.tools import episode_json, hit_json
from episodic.store import hybrid
from fakes.s3vectors_fake import FakeS3VectorsClient, make_index

DEMO = Path(__file__).resolve().parents[3] / "shared" / "episodic" / "demo"
OLD_RENDERINGS = ",".join(CARD_RENDERINGS)  # what every index held before `opening`
INDEXED = {"struct", "semantic", OPENING}  # the default: `reflect` (weight 0) is not embedded


class LLMWritten(Distiller):
    """The heuristic's cards under an LLM distiller's id: the same text, so only the kind differs."""

    info = DistillerInfo(kind="claude-code", model="sonnet")

    def distill(self, trajectory: Trajectory, survey: str) -> DistillResult:
        return HeuristicDistiller().distill(trajectory, survey)


def memory_with(distiller: Distiller, **settings: str) -> Memory:
    return build_memory(load_settings(**settings), embedder=HashingEmbedder(384), distiller=distiller)


def stored_renderings(memory: Memory) -> dict[str, set[str]]:
    with sqlite3.connect(memory.settings.db_path) as conn:
        rows = conn.execute(
            "SELECT c.session_id, v.rendering FROM cards c JOIN vectors v ON v.card_id = c.rowid"
        )
        found: dict[str, set[str]] = {}
        for session_id, rendering in rows:
            found.setdefault(session_id, set()).add(rendering)
    return found


def trajectory(*events: Event) -> Trajectory:
    return Trajectory(
        session_id="s1",
        source=SessionSource(session_key="s1", main_path="/x/s1.jsonl"),
        source_sha256="0" * 64,
        events=list(events),
    )


def test_the_opening_is_the_first_main_thread_prompt_and_the_replies_that_follow_it() -> None:
    found = trajectory(
        Event(kind="prompt", text="the worker sidecar loses its queue", agent_id="sub-1"),  # a subagent's
        Event(kind="assistant", text="No prompt yet, so not an opening."),
        Event(kind="prompt", text="pytest hangs after the upgrade"),
        Event(kind="assistant", text="Looking at the fixtures."),
        Event(kind="tool", text=""),
        Event(kind="assistant", text="The event loop fixture is session-scoped."),
        Event(kind="prompt", text="now the docs build fails"),
    )
    assert opening_text(found) == (
        "User: pytest hangs after the upgrade\nAssistant: Looking at the fixtures.\n"
        "Assistant: The event loop fixture is session-scoped."
    )
    long = trajectory(Event(kind="prompt", text="x" * 5000))
    assert len(opening_text(long)) == EXCHANGE_CHARS
    assert opening_text(trajectory(Event(kind="assistant", text="nobody asked"))) == ""


@pytest.mark.usefixtures("episodic_home")
def test_offline_cards_get_an_opening_vector_and_llm_cards_do_not() -> None:
    offline = memory_with(HeuristicDistiller())
    assert index_sessions(offline, [str(DEMO)], "local").indexed == 6
    assert list(stored_renderings(offline).values()) == [INDEXED] * 6
    records = list(offline.store.iter_records("local"))
    assert all(r.opening and r.opening.startswith("User: ") for r in records)

    written = memory_with(LLMWritten())  # a better distiller replaces every offline card
    assert index_sessions(written, [str(DEMO)], "local").replaced == 6
    assert list(stored_renderings(written).values()) == [INDEXED - {OPENING}] * 6
    assert all(r.opening is None for r in written.store.iter_records("local"))


@pytest.mark.usefixtures("episodic_home")
def test_an_index_built_without_the_opening_rendering_is_extended_and_its_cards_redistilled_once() -> None:
    old = memory_with(HeuristicDistiller(), renderings=OLD_RENDERINGS)
    index_sessions(old, [str(DEMO)], "local")
    assert all(r.opening is None for r in old.store.iter_records("local"))
    query = "go test hangs forever in the worker pool package"
    before = [h.record.session_id for h in search_traces(old, "local", query)]

    new = memory_with(HeuristicDistiller())  # the default settings: struct, semantic, opening
    assert [h.record.session_id for h in search_traces(new, "local", query)] == before  # no ParityError
    told = check_opening(new.settings, new.store.iter_records("local"))
    assert (
        told
        and told.status == WARN
        and "6 of 6 offline cards" in told.detail
        and "episodic index" in told.fix
    )
    report = index_sessions(new, [str(DEMO)], "local")
    assert (report.indexed, report.replaced) == (6, 6)  # each offline card once, to gain its opening
    assert new.store.manifest().renderings == [*CARD_RENDERINGS, OPENING]  # type: ignore[union-attr]
    assert list(stored_renderings(new).values()) == [INDEXED] * 6
    told = check_opening(new.settings, new.store.iter_records("local"))
    assert told and told.status == OK and "6 offline cards" in told.detail
    again = index_sessions(memory_with(HeuristicDistiller()), [str(DEMO)], "local")
    assert (again.indexed, again.unchanged) == (0, 6)
    assert search_traces(old, "local", query)  # the old settings still read the extended index


@pytest.mark.usefixtures("episodic_home")
def test_the_opening_is_never_shown_and_survives_an_edit() -> None:
    memory = memory_with(HeuristicDistiller())
    index_sessions(memory, [str(DEMO)], "local")
    hits = search_traces(
        memory,
        "local",
        "go test hangs forever in the worker pool package",
        filters=SearchFilters(include_unverified=True),
    )
    assert hits and all(h.rendering in CARD_RENDERINGS for h in hits)
    record = hits[0].record
    assert record.opening
    shown = json.dumps([hit_json(hits[0]), episode_json(record)])
    assert "opening" not in shown and record.opening[:60] not in shown

    edited = record.card.model_dump(mode="json") | {
        "problem": "The worker pool deadlocks under go test -race"
    }
    review_episode(memory, "local", record.session_id, "edit", card=edited, reviewer="me")
    assert stored_renderings(memory)[record.session_id] == INDEXED
    assert memory.store.get("local", record.session_id).opening == record.opening  # type: ignore[union-attr]


def test_a_hits_similarity_and_best_rendering_come_from_its_card_renderings_only() -> None:
    # (renderings x sessions): session 1's raw words match best but its card does not reach the 0.25 floor
    cosines = np.array([[0.30, 0.20, 0.40], [0.28, 0.22, 0.10], [0.90, 0.95, -np.inf]], dtype=np.float32)
    names = ["struct", "semantic", OPENING]
    fused = hybrid.rank_pool(
        cosines,
        hybrid.rendering_weights(names, {"struct": 1, "semantic": 1, OPENING: 1}),
        names,
        [],
        k=3,
        depth=50,
        min_similarity=0.25,
        keyword_weight=1.25,
    )
    assert [(f.key, f.rendering) for f in fused] == [(0, "struct"), (2, "struct")]  # 1's card is below 0.25
    assert fused[0].similarity == pytest.approx(0.30)


def _card(problem: str) -> Card:
    return Card(problem=problem, steps=["Pinned the dependency"], outcome=Outcome.VERIFIED)


def test_s3_vectors_index_of_three_renderings_gains_the_opening_in_place() -> None:
    client = FakeS3VectorsClient()
    make_index(client, "episodic-vectors", "episodes", 384)
    store = S3VectorsStore(client, "episodic-vectors", "episodes", sleep=lambda _s: None)
    embedder = HashingEmbedder(384)
    old = IndexManifest(embedder_id=embedder.id, dimension=384, renderings=list(CARD_RENDERINGS))
    new = old.model_copy(update={"renderings": list(RENDERINGS)})

    def put(session: str, problem: str, manifest: IndexManifest, opening: str | None) -> None:
        record = CardRecord(
            card=_card(problem),
            session_id=session,
            tenant_id="acme",
            source_sha256="a" * 64,
            distiller=DistillerInfo(kind="heuristic"),
            opening=opening,
        )
        texts = {r: problem for r in CARD_RENDERINGS} | ({OPENING: opening} if opening else {})
        vectors = embedder.embed(list(texts.values()))
        store.upsert(
            record,
            [StoredVector(r, t, v) for (r, t), v in zip(texts.items(), vectors, strict=True)],
            manifest,
        )

    put("old", "The build fails after upgrading the linter", old, None)
    put("new", "The deploy step times out", new, "User: kafka consumer lag grows every night")
    assert store.manifest() == new
    fresh = S3VectorsStore(client, "episodic-vectors", "episodes", sleep=lambda _s: None)
    assert fresh.manifest() == new  # written to the index, not only cached
    query = "kafka consumer lag grows every night"
    hits = fresh.query(
        "acme", embedder.embed([query])[0], query, 2, SearchFilters(include_unverified=True), new, -1.0
    )
    assert hits[0].record.session_id == "new" and hits[0].rendering in CARD_RENDERINGS
    assert {h.record.session_id for h in hits} == {"new", "old"}


def test_a_cards_folder_set_keeps_the_heuristic_id_of_the_cards_it_fills_in() -> None:
    from episodic.cards.files import IMPORTED, CardFile, CardFolder
    from episodic.evaluation.cardsets import folder_set
    from episodic.evaluation.corpus import EvalCorpus

    heuristic = HeuristicDistiller().info
    sessions = {s: trajectory().model_copy(update={"session_id": s}) for s in ("a", "b")}
    corpus = EvalCorpus(
        trajectories=sessions, cards={s: _card(f"problem {s}") for s in sessions}, distiller=heuristic
    )
    read = CardFolder(cards={"a": CardFile("a", Path("a.json"), _card("written by a model"))})
    card_set = folder_set(corpus, Path("cards"), read)
    # the eval's default system embeds the gap's opening words, as `episodic index` would
    assert (card_set.distiller, card_set.distillers) == (IMPORTED, {"b": heuristic})
