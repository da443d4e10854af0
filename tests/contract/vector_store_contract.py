"""The contract every VectorStore keeps (DESIGN invariants 1-3), as a reusable test base class.

Use it by subclassing in a test module and providing a `store_factory` fixture that returns a
callable making a fresh, empty store:

    class TestMyStore(VectorStoreContract):
        @pytest.fixture()
        def store_factory(self, tmp_path):
            return lambda: MyStore(...)

Texts are embedded with the deterministic HashingEmbedder, so similarities are lexical and stable.
Filter semantics the contract fixes: `project` is an exact match, `tags` match when the card has ANY of
them (case-insensitive), `since` admits cards whose `started_at` is at or after it (unknown start: no).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from episodic.embed.hashing import HashingEmbedder
from episodic.kernel.errors import InvalidArgumentError, ParityError, TenantError
from episodic.kernel.models import (
    CARD_RENDERINGS,
    OPENING,
    RENDERINGS,
    Card,
    CardRecord,
    DistillerInfo,
    IndexManifest,
    Outcome,
    SearchFilters,
    SearchHit,
)
from episodic.kernel.ports import StoredVector, VectorStore
from episodic.store import hybrid
from episodic.store.base import InvalidStoreInputError, InvalidVectorError
from episodic.store.parity import describe, settings_for
from episodic.store.render import render

EMBEDDER = HashingEmbedder(384)
MANIFEST = IndexManifest(embedder_id=EMBEDDER.id, dimension=EMBEDDER.dimension, renderings=list(RENDERINGS))
MIN_SIMILARITY = EMBEDDER.default_min_similarity
TENANT_A = "tenant-a"
TENANT_B = "tenant-b"
T0 = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)

StoreFactory = Callable[[], VectorStore]


def make_record(
    session_id: str,
    problem: str,
    *,
    tenant: str = TENANT_A,
    outcome: Outcome = Outcome.VERIFIED,
    steps: Sequence[str] = (),
    insight: str = "",
    tags: Sequence[str] = (),
    project: str = "demo",
    started_at: datetime | None = T0,
    agent: str = "claude-code",
) -> CardRecord:
    card = Card(
        problem=problem,
        steps=list(steps) or [f"investigated {problem}"],
        insight=insight,
        outcome=outcome,
        tags=list(tags),
    )
    return CardRecord(
        card=card,
        session_id=session_id,
        tenant_id=tenant,
        project=project,
        agent=agent,
        started_at=started_at,
        source_sha256=f"sha-{session_id}-{problem}"[:64],
        distiller=DistillerInfo(kind="heuristic"),
    )


def vectors_for(
    record: CardRecord, manifest: IndexManifest = MANIFEST, embedder: HashingEmbedder = EMBEDDER
) -> list[StoredVector]:
    renderings = [r for r in manifest.renderings if r in CARD_RENDERINGS]  # a card with no opening words
    texts = [render(record.card, r) for r in renderings]
    vectors = embedder.embed(texts)
    return [
        StoredVector(rendering=r, text=t, vector=v)
        for r, t, v in zip(renderings, texts, vectors, strict=True)
    ]


def put(store: VectorStore, record: CardRecord, manifest: IndexManifest = MANIFEST) -> None:
    store.upsert(record, vectors_for(record, manifest), manifest)


def search(
    store: VectorStore,
    tenant: str,
    text: str,
    *,
    k: int = 3,
    filters: SearchFilters | None = None,
    manifest: IndexManifest = MANIFEST,
    min_similarity: float = MIN_SIMILARITY,
    vector: np.ndarray | None = None,
) -> list[SearchHit]:
    query = EMBEDDER.embed([text])[0] if vector is None else vector
    return store.query(tenant, query, text, k, filters or SearchFilters(), manifest, min_similarity)


def ids(hits: Sequence[SearchHit]) -> list[str]:
    return [h.record.session_id for h in hits]


OTHER_MANIFESTS = {
    "embedder": MANIFEST.model_copy(update={"embedder_id": "minilm-l6-v2"}),
    "dimension": MANIFEST.model_copy(update={"embedder_id": "hashing-v1-256", "dimension": 256}),
    "renderings": MANIFEST.model_copy(update={"renderings": ["struct"]}),
}

PROBLEMS = {
    "ws": "websocket client disconnects after idle timeout and never reconnects",
    "db": "pytest fixture cannot connect to the postgres database, connection refused",
    "docker": "docker image build is slow because the layer cache is invalidated every time",
    "css": "sidebar layout overflows on narrow mobile screens in the flexbox grid",
}


BACKGROUND = [
    "spreadsheet export drops the currency column for some locales",
    "cron job sends duplicate reminder emails on daylight saving change",
    "image thumbnails render blurry on retina displays",
    "search results page is slow when many facets are selected",
    "payment webhook signature check rejects valid events",
    "markdown preview loses scroll position while typing",
    "mobile push notifications arrive hours late on android",
    "translation keys missing after the locale files were split",
]


def _at_cosine(direction: np.ndarray, cosine: float, seed: int) -> np.ndarray:
    """A unit vector whose cosine with the unit `direction` is exactly `cosine`."""
    noise = np.random.default_rng(seed).standard_normal(direction.shape[0]).astype(np.float32)
    orthogonal = noise - float(noise @ direction) * direction
    orthogonal /= np.linalg.norm(orthogonal)
    return (cosine * direction + np.sqrt(1 - cosine**2) * orthogonal).astype(np.float32)


def keyword_scenario(store: VectorStore) -> tuple[str, float]:
    """A target only the keyword half can find, and four closer vector neighbours; (query, target sim).

    The neighbours are a little closer to the query than the target (the near-ties among sessions of one
    codebase that a keyword breaks), over a background of unrelated sessions (a realistic spread)."""
    query = "dev server start fails with EADDRINUSE"
    for i, problem in enumerate(BACKGROUND):
        put(store, make_record(f"bg{i}", problem))
    # the target names the error code only in its tags (never embedded: renderings leave tags out)
    target = make_record("target", "dev server will not start on the release branch", tags=["eaddrinuse"])
    put(store, target)
    query_vector = EMBEDDER.embed([query])[0]
    direction = query_vector / np.linalg.norm(query_vector)
    target_similarity = max(float(v.vector @ direction) for v in vectors_for(target))
    for i in range(4):  # text sharing no query word, vectors closer than the target's
        neighbour = make_record(f"near{i}", f"local web app refuses to boot, case {i}")
        vector = _at_cosine(direction, min(target_similarity + 0.01 * (i + 1), 0.99), seed=i)
        store.upsert(neighbour, [StoredVector(r, "t", vector) for r in MANIFEST.renderings], MANIFEST)
    return query, target_similarity


class VectorStoreContract:
    @pytest.fixture()
    def store_factory(self) -> StoreFactory:
        raise NotImplementedError("subclasses provide a store_factory fixture")

    @pytest.fixture()
    def store(self, store_factory: StoreFactory) -> VectorStore:
        return store_factory()

    @pytest.fixture()
    def corpus(self, store: VectorStore) -> VectorStore:
        for key, problem in PROBLEMS.items():
            put(store, make_record(key, problem))
        return store

    # ---------------------------------------------------------------- parity (invariant 1)

    def test_manifest_recorded_on_first_write(self, store: VectorStore) -> None:
        assert store.manifest() is None
        put(store, make_record("s1", PROBLEMS["ws"]))
        assert store.manifest() == MANIFEST
        store.ensure_manifest(MANIFEST)  # the same manifest again is fine

    @pytest.mark.parametrize("mismatch", sorted(OTHER_MANIFESTS))
    def test_parity_error_on_write(self, corpus: VectorStore, mismatch: str) -> None:
        other = OTHER_MANIFESTS[mismatch]
        with pytest.raises(ParityError) as err:
            corpus.ensure_manifest(other)
        message = str(err.value)
        assert MANIFEST.embedder_id in message and other.embedder_id in message
        record = make_record("new", PROBLEMS["css"])
        with pytest.raises(ParityError):
            corpus.upsert(record, vectors_for(record, other), other)
        assert corpus.get(TENANT_A, "new") is None
        assert corpus.manifest() == MANIFEST

    @pytest.mark.parametrize("mismatch", sorted(OTHER_MANIFESTS))
    def test_parity_error_on_query(self, corpus: VectorStore, mismatch: str) -> None:
        other = OTHER_MANIFESTS[mismatch]
        vector = HashingEmbedder(other.dimension).embed([PROBLEMS["ws"]])[0]
        with pytest.raises(ParityError) as err:
            search(corpus, TENANT_A, PROBLEMS["ws"], manifest=other, vector=vector)
        assert MANIFEST.embedder_id in str(err.value)

    def test_vectors_of_the_wrong_dimension_raise(self, corpus: VectorStore) -> None:
        record = make_record("bad", PROBLEMS["css"])
        short = [StoredVector(r, "text", np.ones(128, dtype=np.float32)) for r in MANIFEST.renderings]
        with pytest.raises(ParityError):
            corpus.upsert(record, short, MANIFEST)
        with pytest.raises(ParityError):
            search(corpus, TENANT_A, "anything", vector=np.ones(128, dtype=np.float32))
        assert corpus.get(TENANT_A, "bad") is None

    def test_a_rendering_outside_the_manifest_raises(self, store: VectorStore) -> None:
        record = make_record("s1", PROBLEMS["ws"])
        stray = [StoredVector("everything", "text", EMBEDDER.embed(["text"])[0])]
        with pytest.raises(ParityError):
            store.upsert(record, stray, MANIFEST)

    def test_an_all_zero_vector_is_refused(self, store: VectorStore) -> None:
        record = make_record("s1", PROBLEMS["ws"])
        zeros = [StoredVector(r, "t", np.zeros(384, dtype=np.float32)) for r in MANIFEST.renderings]
        with pytest.raises(ValueError):
            store.upsert(record, zeros, MANIFEST)

    # ---------------------------------------------------------------- tenants (invariant 2)

    @pytest.mark.parametrize("tenant", ["", None, "   "])
    def test_no_call_without_a_tenant(self, corpus: VectorStore, tenant: str | None) -> None:
        with pytest.raises(TenantError):
            search(corpus, tenant, PROBLEMS["ws"])  # type: ignore[arg-type]
        with pytest.raises(TenantError):
            corpus.get(tenant, "ws")  # type: ignore[arg-type]
        with pytest.raises(TenantError):
            corpus.delete(tenant, "ws")  # type: ignore[arg-type]
        with pytest.raises(TenantError):
            put(corpus, make_record("x", PROBLEMS["ws"], tenant=tenant or ""))

    def test_tenant_isolation(self, store: VectorStore) -> None:
        # the same session ids in both tenants, with different cards
        for key, problem in PROBLEMS.items():
            put(store, make_record(key, problem, tenant=TENANT_A, tags=["alpha"]))
            put(store, make_record(key, problem + " in production", tenant=TENANT_B, tags=["beta"]))
        filters = SearchFilters(include_unverified=True)
        for tenant, tag in ((TENANT_A, "alpha"), (TENANT_B, "beta")):
            for problem in [*PROBLEMS.values(), "production", "alpha beta"]:
                hits = search(store, tenant, problem, k=5, filters=filters, min_similarity=-1.0)
                assert hits, problem
                assert all(h.record.tenant_id == tenant and h.record.card.tags == [tag] for h in hits)
            assert {r.tenant_id for r in store.iter_records(tenant)} == {tenant}
            assert store.count(tenant) == len(PROBLEMS)
        assert store.count() == 2 * len(PROBLEMS)
        assert search(store, "tenant-c", PROBLEMS["ws"], min_similarity=-1.0) == []
        a = store.get(TENANT_A, "ws")
        assert a is not None and a.card.problem == PROBLEMS["ws"]
        assert store.delete(TENANT_B, "ws")
        assert store.get(TENANT_A, "ws") is not None
        assert store.get(TENANT_B, "ws") is None

    # ---------------------------------------------------------------- verified-only, filters (invariant 3)

    def test_verified_only_by_default(self, store: VectorStore) -> None:
        put(store, make_record("good", PROBLEMS["ws"], outcome=Outcome.VERIFIED))
        for i, outcome in enumerate((Outcome.UNVERIFIED, Outcome.FAILED, Outcome.INFORMATIONAL)):
            put(store, make_record(f"other{i}", PROBLEMS["ws"], outcome=outcome))
        assert ids(search(store, TENANT_A, PROBLEMS["ws"], k=5)) == ["good"]
        every = search(store, TENANT_A, PROBLEMS["ws"], k=5, filters=SearchFilters(include_unverified=True))
        assert sorted(ids(every)) == ["good", "other0", "other1", "other2"]

    def test_filters(self, store: VectorStore) -> None:
        problem = PROBLEMS["db"]
        put(store, make_record("old", problem, project="api", tags=["Postgres"], started_at=T0))
        put(
            store,
            make_record("new", problem, project="api", tags=["pytest"], started_at=T0 + timedelta(days=9)),
        )
        put(store, make_record("web", problem, project="web", tags=["postgres", "ci"], started_at=None))

        def found(**kwargs: object) -> list[str]:
            return sorted(ids(search(store, TENANT_A, problem, k=5, filters=SearchFilters(**kwargs))))  # type: ignore[arg-type]

        assert found() == ["new", "old", "web"]
        assert found(project="api") == ["new", "old"]
        assert found(project="nope") == []
        assert found(tags=["postgres"]) == ["old", "web"]  # case-insensitive
        assert found(tags=["ci", "pytest"]) == ["new", "web"]  # any of the tags
        assert found(since=T0 + timedelta(days=1)) == ["new"]  # unknown start never passes
        assert found(since=(T0 + timedelta(days=1)).replace(tzinfo=None)) == ["new"]  # naive = UTC
        assert found(project="api", tags=["postgres"]) == ["old"]

    def test_excluded_sessions_leave_the_pool(self, store: VectorStore) -> None:
        problem = PROBLEMS["db"]
        for name in ("target", "cousin", "neighbour"):
            put(store, make_record(name, problem))
        put(store, make_record("target", problem, tenant=TENANT_B))

        def found(*excluded: str, tenant: str = TENANT_A) -> list[SearchHit]:
            return search(store, tenant, problem, k=5, filters=SearchFilters(exclude_sessions=list(excluded)))

        assert sorted(ids(found())) == ["cousin", "neighbour", "target"]
        left = found("target", "cousin")
        assert ids(left) == ["neighbour"]
        assert all(hit.pool_size in (0, 1) for hit in left)  # the pool the score was standardised over
        assert ids(found("target", tenant=TENANT_B)) == []  # the same id in another tenant: left out too
        assert sorted(ids(found("no-such-session"))) == ["cousin", "neighbour", "target"]

    def test_agent_filter(self, store: VectorStore) -> None:
        problem = PROBLEMS["db"]
        put(store, make_record("claude", problem))
        put(store, make_record("codex", problem, agent="codex"))
        put(store, make_record("gemini", problem, agent="gemini", tenant=TENANT_B))

        def found(tenant: str = TENANT_A, **kwargs: object) -> list[str]:
            return sorted(ids(search(store, tenant, problem, k=5, filters=SearchFilters(**kwargs))))  # type: ignore[arg-type]

        assert found() == ["claude", "codex"]
        assert found(agent="codex") == ["codex"]
        assert found(agent="claude-code") == ["claude"]
        assert found(agent="gemini") == []  # another tenant's episode never shows
        assert found(TENANT_B, agent="gemini") == ["gemini"]
        assert store.get(TENANT_A, "codex").agent == "codex"  # type: ignore[union-attr]

    def test_weak_matches_return_nothing(self, corpus: VectorStore) -> None:
        assert search(corpus, TENANT_A, "chocolate cake recipe with fresh strawberries") == []
        # even an exact match is dropped when the threshold is out of reach (the keyword rescue needs half)
        assert search(corpus, TENANT_A, PROBLEMS["ws"], min_similarity=2.5) == []
        hits = search(corpus, TENANT_A, PROBLEMS["ws"], k=5)
        assert hits and all(h.similarity >= MIN_SIMILARITY for h in hits)

    # ---------------------------------------------------------------- results

    def test_best_match_first_with_its_fields(self, corpus: VectorStore) -> None:
        hits = search(corpus, TENANT_A, "the websocket disconnects when idle", k=5)
        assert ids(hits)[0] == "ws"
        assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
        top = hits[0]
        assert top.rendering in MANIFEST.renderings
        assert 0.0 < top.similarity <= 1.0 + 1e-5 and top.score > 0.0
        assert top.record.tenant_id == TENANT_A and top.record.card.problem == PROBLEMS["ws"]

    @pytest.mark.parametrize("k", [1, 2, 3, 5])
    def test_k_is_respected(self, store: VectorStore, k: int) -> None:
        for i in range(8):
            put(store, make_record(f"s{i}", f"{PROBLEMS['ws']} variant {i}"))
        assert len(search(store, TENANT_A, PROBLEMS["ws"], k=k)) == k

    def test_upsert_replaces_the_sessions_card(self, store: VectorStore) -> None:
        put(store, make_record("s1", PROBLEMS["ws"]))
        put(store, make_record("s1", PROBLEMS["docker"]))
        assert store.count(TENANT_A) == 1
        record = store.get(TENANT_A, "s1")
        assert record is not None and record.card.problem == PROBLEMS["docker"]
        assert search(store, TENANT_A, PROBLEMS["ws"]) == []  # the old card's vectors and text are gone
        assert ids(search(store, TENANT_A, PROBLEMS["docker"])) == ["s1"]

    def test_delete(self, corpus: VectorStore) -> None:
        assert corpus.delete(TENANT_A, "ws") is True
        assert corpus.delete(TENANT_A, "ws") is False
        assert corpus.get(TENANT_A, "ws") is None
        assert "ws" not in ids(search(corpus, TENANT_A, PROBLEMS["ws"], k=5))
        assert corpus.count(TENANT_A) == len(PROBLEMS) - 1

    def test_query_on_an_empty_store_returns_nothing(self, store: VectorStore) -> None:
        assert search(store, TENANT_A, PROBLEMS["ws"]) == []

    def test_hybrid_finds_an_exact_keyword_match_the_vectors_miss(self, store: VectorStore) -> None:
        query, target_similarity = keyword_scenario(store)
        assert target_similarity >= MIN_SIMILARITY  # similar enough to count, but ...
        hits = search(store, TENANT_A, query, k=3)
        # ... four neighbours are closer by vector, so vector ranking alone would leave it out of the top 3
        assert all(h.similarity > target_similarity for h in hits if h.record.session_id != "target")
        assert "target" in ids(hits)
        assert next(h for h in hits if h.record.session_id == "target").keyword_rank == 1

    def test_keyword_rescue_when_the_floor_is_above_the_target(self, store: VectorStore) -> None:
        # the probe that found the divergence: SQLite kept the target, S3 Vectors dropped it
        query, target_similarity = keyword_scenario(store)
        floor = target_similarity + 0.005  # above the target, below its neighbours, within the rescue band
        assert target_similarity >= hybrid.KEYWORD_RESCUE_FACTOR * floor
        hits = search(store, TENANT_A, query, k=3, min_similarity=floor)
        assert "target" in ids(hits) and len(hits) == 3
        rescued = next(h for h in hits if h.record.session_id == "target")
        assert rescued.keyword_rank == 1 and rescued.similarity == pytest.approx(target_similarity, abs=1e-4)
        assert all(h.similarity >= floor for h in hits if h is not rescued)
        # below half the floor nothing rescues it: silence beats noise
        too_high = target_similarity / hybrid.KEYWORD_RESCUE_FACTOR + 0.01
        assert "target" not in ids(search(store, TENANT_A, query, k=3, min_similarity=too_high))

    @pytest.mark.parametrize("bad", ["zeros", "nan", "inf"])
    def test_bad_vectors_raise_one_error_type_on_write_and_query(self, corpus: VectorStore, bad: str) -> None:
        vector = np.ones(MANIFEST.dimension, dtype=np.float32)
        if bad == "zeros":
            vector[:] = 0.0
        else:
            vector[3] = np.nan if bad == "nan" else np.inf
        record = make_record("bad", PROBLEMS["css"])
        with pytest.raises(InvalidVectorError) as on_write:
            corpus.upsert(record, [StoredVector("struct", "text", vector)], MANIFEST)
        with pytest.raises(InvalidVectorError) as on_query:
            search(corpus, TENANT_A, "anything", vector=vector)
        for err in (on_write, on_query):  # one type, both of the kinds callers catch
            assert isinstance(err.value, InvalidArgumentError) and isinstance(err.value, ValueError)
        assert corpus.get(TENANT_A, "bad") is None

    def test_unknown_duplicate_or_missing_renderings_raise_the_same_errors(self, store: VectorStore) -> None:
        record = make_record("s1", PROBLEMS["ws"])
        vector = EMBEDDER.embed(["text"])[0]
        with pytest.raises(ParityError, match="not in the index manifest"):
            store.upsert(record, [StoredVector("everything", "text", vector)], MANIFEST)
        with pytest.raises(InvalidStoreInputError, match="twice"):
            store.upsert(
                record, [StoredVector("struct", "a", vector), StoredVector("struct", "b", vector)], MANIFEST
            )
        with pytest.raises(InvalidStoreInputError, match="at least one"):
            store.upsert(record, [], MANIFEST)
        assert store.get(TENANT_A, "s1") is None

    def test_k_below_one_and_parity_messages_are_the_same_on_every_store(self, corpus: VectorStore) -> None:
        with pytest.raises(InvalidStoreInputError, match="k must be at least 1"):
            search(corpus, TENANT_A, PROBLEMS["ws"], k=0)
        other = OTHER_MANIFESTS["embedder"]
        with pytest.raises(ParityError) as err:
            corpus.ensure_manifest(other)
        message = str(err.value)  # both sides, the settings that match the index, and the way out
        assert describe(MANIFEST) in message and describe(other) in message
        assert settings_for(MANIFEST) in message and "re-index" in message

    def test_keyword_text_is_never_query_syntax(self, corpus: VectorStore) -> None:
        for text in [
            "foo AND (bar",
            '"unbalanced',
            "col:value",
            "NEAR(a b)",
            "*",
            "-x",
            "a OR",
            "^start",
            "'",
        ]:
            search(corpus, TENANT_A, text, min_similarity=-1.0)  # must not raise

    def test_iter_records_and_count(self, corpus: VectorStore) -> None:
        records = list(corpus.iter_records(TENANT_A))
        assert sorted(r.session_id for r in records) == sorted(PROBLEMS)
        assert corpus.count(TENANT_A) == len(PROBLEMS) == corpus.count()
        assert sorted(r.session_id for r in corpus.iter_records()) == sorted(PROBLEMS)

    def test_many_queries_never_cross_tenants(self, store: VectorStore) -> None:
        words = [
            "retry",
            "timeout",
            "socket",
            "database",
            "migration",
            "cache",
            "index",
            "token",
            "deploy",
            "build",
        ]
        for i, combo in enumerate(itertools.combinations(words, 3)):
            if i >= 30:
                break
            tenant = TENANT_A if i % 2 else TENANT_B
            put(store, make_record(f"s{i // 2}", " ".join(combo), tenant=tenant))
        for pair in itertools.combinations(words, 2):
            for tenant in (TENANT_A, TENANT_B):
                hits = search(store, tenant, " ".join(pair), k=5, min_similarity=-1.0)
                assert all(h.record.tenant_id == tenant for h in hits)

    def test_a_query_rendering_compares_with_that_rendering_only(self, store: VectorStore) -> None:
        unit = np.zeros(EMBEDDER.dimension, dtype=np.float32)
        unit[0] = 1.0
        other = np.zeros(EMBEDDER.dimension, dtype=np.float32)
        other[1] = 1.0
        # "steps-match" matches the query on its struct vector, "lesson-match" on its reflect vector
        for session, close in (("steps-match", "struct"), ("lesson-match", "reflect")):
            record = make_record(session, f"zzq{session}")
            vectors = [
                StoredVector(rendering=r, text=r, vector=unit if r == close else other)
                for r in MANIFEST.renderings
            ]
            store.upsert(record, vectors, MANIFEST)
        only = SearchFilters(renderings=["reflect"])
        hits = search(store, TENANT_A, "qqq", k=2, filters=only, vector=unit, min_similarity=0.5)
        assert ids(hits) == ["lesson-match"]
        named = SearchFilters(renderings=["struct", "reflect"])  # renderings named in a query vote equally
        both = search(store, TENANT_A, "qqq", k=2, filters=named, vector=unit, min_similarity=0.5)
        assert sorted(ids(both)) == ["lesson-match", "steps-match"]

    def test_an_opening_vector_votes_but_is_never_the_similarity_or_the_best_rendering(
        self, store: VectorStore
    ) -> None:
        unit = np.zeros(EMBEDDER.dimension, dtype=np.float32)
        unit[0] = 1.0
        other = np.zeros(EMBEDDER.dimension, dtype=np.float32)
        other[1] = 1.0
        card = np.zeros(EMBEDDER.dimension, dtype=np.float32)
        card[:2] = (0.6, 0.8)  # cosine 0.6 with the query on every card rendering
        # both cards match alike; only "opening-match" has raw opening words equal to the query
        for session, opening in (("opening-match", unit), ("card-only", other)):
            vectors = [StoredVector(rendering=r, text=r, vector=card) for r in CARD_RENDERINGS]
            store.upsert(
                make_record(session, f"zzq{session}"),
                [*vectors, StoredVector(OPENING, "o", opening)],
                MANIFEST,
            )
        hits = search(store, TENANT_A, "qqq", k=2, vector=unit, min_similarity=0.5)
        assert ids(hits) == ["opening-match", "card-only"]  # the opening's vote ranks it first
        assert all(h.rendering in CARD_RENDERINGS and h.similarity == pytest.approx(0.6) for h in hits)
        assert search(store, TENANT_A, "qqq", k=2, vector=unit, min_similarity=0.7) == []  # the card sets it
