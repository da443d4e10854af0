"""SQLiteStore: the VectorStore contract plus what only the SQLite index has (schema, WAL, FTS, ledger)."""

from __future__ import annotations

import multiprocessing
import sqlite3
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from contract.vector_store_contract import (
    MANIFEST,
    PROBLEMS,
    TENANT_A,
    TENANT_B,
    VectorStoreContract,
    ids,
    keyword_scenario,
    make_record,
    put,
    search,
)
from episodic.kernel.errors import ConfigError, ParityError
from episodic.kernel.models import DEFAULT_RENDERING_WEIGHTS, SearchFilters
from episodic.kernel.ports import IngestFailure
from episodic.store import hybrid, schema
from episodic.store.sqlite import SQLiteStore


class TestSQLiteStoreContract(VectorStoreContract):
    @pytest.fixture()
    def store_factory(self, tmp_path: Path) -> Callable[[], SQLiteStore]:
        counter = iter(range(1000))
        return lambda: SQLiteStore(tmp_path / f"index-{next(counter)}.sqlite3")


@pytest.fixture()
def db(tmp_path: Path) -> Path:
    return tmp_path / "index.sqlite3"


def test_schema_version_and_wal(db: Path) -> None:
    store = SQLiteStore(db)
    assert store.schema_version == schema.SCHEMA_VERSION == len(schema.MIGRATIONS)
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("SELECT version FROM schema_version").fetchone()[0] == schema.SCHEMA_VERSION
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type IN ('table')")}
    assert {"manifest", "cards", "vectors", "cards_fts", "failures", "generations"} <= tables
    SQLiteStore(db)  # reopening an up-to-date file migrates nothing
    assert conn.execute("SELECT COUNT(*) FROM schema_version").fetchone()[0] == 1


def test_future_migrations_run_in_order(db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    SQLiteStore(db).close()
    added: list[int] = []

    future = schema.SCHEMA_VERSION + 1

    def next_version(conn: sqlite3.Connection) -> None:
        conn.execute("CREATE TABLE extra (x INTEGER)")
        added.append(future)

    monkeypatch.setattr(schema, "MIGRATIONS", [*schema.MIGRATIONS, next_version])
    monkeypatch.setattr(schema, "SCHEMA_VERSION", future)
    store = SQLiteStore(db)
    assert added == [future] and store.schema_version == future
    assert sqlite3.connect(db).execute("SELECT version FROM schema_version").fetchone()[0] == future


def test_a_failing_migration_leaves_the_old_version(db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    SQLiteStore(db).close()

    def broken(conn: sqlite3.Connection) -> None:
        conn.execute("CREATE TABLE half (x INTEGER)")
        raise RuntimeError("boom")

    current = schema.SCHEMA_VERSION
    monkeypatch.setattr(schema, "MIGRATIONS", [*schema.MIGRATIONS, broken])
    monkeypatch.setattr(schema, "SCHEMA_VERSION", current + 1)
    with pytest.raises(RuntimeError):
        SQLiteStore(db)
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT version FROM schema_version").fetchone()[0] == current
    assert not conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'half'").fetchone()


def test_a_version_1_index_gains_the_agent_column_as_claude_code(db: Path) -> None:
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
    conn.execute("INSERT INTO schema_version (version) VALUES (1)")
    schema.MIGRATIONS[0](conn)
    conn.execute(
        "INSERT INTO cards (tenant_id, session_id, record, outcome, project, tags, source_sha256, distiller, "
        "card_schema_version, indexed_at) VALUES ('t', 's', '{}', 'verified', 'p', '[]', 'x', 'heuristic', 1, 'now')"
    )
    conn.commit()
    conn.close()
    store = SQLiteStore(db)
    assert store.schema_version == schema.SCHEMA_VERSION
    assert sqlite3.connect(db).execute("SELECT agent FROM cards").fetchall() == [("claude-code",)]


def test_a_newer_schema_is_refused(db: Path) -> None:
    SQLiteStore(db).close()
    conn = sqlite3.connect(db)
    conn.execute("UPDATE schema_version SET version = 99")
    conn.commit()
    with pytest.raises(ConfigError, match="newer"):
        SQLiteStore(db)


def test_reopen_persists_cards_manifest_and_failures(db: Path) -> None:
    store = SQLiteStore(db)
    for key, problem in PROBLEMS.items():
        put(store, make_record(key, problem))
    store.record_failure(IngestFailure(TENANT_A, "bad-session", "/x.jsonl", "abc", "no card"))
    store.close()
    again = SQLiteStore(db)
    assert again.manifest() == MANIFEST
    assert again.count(TENANT_A) == len(PROBLEMS)
    assert ids(search(again, TENANT_A, PROBLEMS["db"]))[0] == "db"
    assert [f.session_key for f in again.failures(TENANT_A)] == ["bad-session"]
    with pytest.raises(ParityError, match="hashing-v1-384"):
        again.ensure_manifest(MANIFEST.model_copy(update={"embedder_id": "minilm-l6-v2"}))


def test_parity_message_names_both_sides_and_the_fix(db: Path) -> None:
    store = SQLiteStore(db)
    put(store, make_record("s1", PROBLEMS["ws"]))
    other = MANIFEST.model_copy(update={"embedder_id": "minilm-l6-v2"})
    with pytest.raises(ParityError) as err:
        store.ensure_manifest(other)
    message = str(err.value)
    assert "hashing-v1-384 (384-d, renderings struct,semantic,reflect" in message
    assert "minilm-l6-v2 (384-d" in message
    assert "EPISODIC_EMBEDDER=hashing" in message and "re-index" in message


def test_fts_query_is_injection_safe() -> None:
    assert hybrid.fts_query("foo AND (bar") == '"foo" OR "and" OR "bar"'
    assert (
        hybrid.fts_query('title:"x" NEAR(a b) c* -d ^e')
        == '"title" OR "x" OR "near" OR "a" OR "b" OR "c" OR "d" OR "e"'
    )
    assert hybrid.fts_query("  ( ) * \" ' ") is None
    many = " ".join(f"w{i}" for i in range(100))
    assert (hybrid.fts_query(many) or "").count(" OR ") == hybrid.MAX_QUERY_TERMS - 1


def test_hostile_query_text_searches_as_words(db: Path) -> None:
    store = SQLiteStore(db)
    put(store, make_record("s1", "websocket AND (reconnect fails"))
    for text in [
        "websocket AND (reconnect",
        'cards_fts MATCH "x"',
        "'; DROP TABLE cards; --",
        '"',
        "NOT websocket",
    ]:
        hits = search(store, TENANT_A, text, min_similarity=-1.0)
        assert [h.record.session_id for h in hits] in ([], ["s1"])
    assert store.count() == 1


def test_keyword_half_respects_filters_and_tenant(db: Path) -> None:
    store = SQLiteStore(db, keyword_weight=0.5)
    put(store, make_record("a", "zebrafish ingestion", tenant=TENANT_A, project="p1"))
    put(store, make_record("b", "zebrafish ingestion", tenant=TENANT_B, project="p1"))
    conn = store._conn  # the keyword half alone: never another tenant's row, filters applied in SQL
    assert [r for r, _ in store._keyword_ranked(conn, TENANT_A, "zebrafish", SearchFilters(), 10)] == [1]
    assert [r for r, _ in store._keyword_ranked(conn, TENANT_B, "zebrafish", SearchFilters(), 10)] == [2]
    assert store._keyword_ranked(conn, TENANT_A, "zebrafish", SearchFilters(project="p2"), 10) == []


def test_threshold_rescue_needs_keyword_rank_one_and_half_the_threshold() -> None:
    sims = {1: (0.06, "struct"), 2: (0.04, "struct"), 3: (0.5, "struct")}
    z = {3: 1.0, 1: 0.0, 2: -1.0}
    fused = hybrid.fuse(z, [(1, 2.0), (2, 1.0)], sims, k=5, min_similarity=0.1, keyword_weight=0.5)
    assert sorted(f.key for f in fused) == [1, 3]  # 1 rescued (keyword #1, 0.06 >= 0.05); 2 is not (#2)
    fused = hybrid.fuse(z, [(2, 2.0), (1, 1.0)], sims, k=5, min_similarity=0.1, keyword_weight=0.5)
    assert [f.key for f in fused] == [3]  # 2 is keyword #1 but 0.04 < 0.05; 1 is keyword #2
    assert hybrid.fuse({3: 1.0}, [], sims, k=5, min_similarity=0.6, keyword_weight=0.5) == []


def test_without_the_keyword_half_the_keyword_target_is_missed(db: Path) -> None:
    store = SQLiteStore(db, keyword_weight=0.0)
    query, _ = keyword_scenario(store)
    hits = search(store, TENANT_A, query, k=3)
    assert len(hits) == 3 and "target" not in ids(hits)  # the contract's hybrid test is not vacuous


def test_keyword_weight_zero_is_pure_vector_ranking(db: Path) -> None:
    store = SQLiteStore(db, keyword_weight=0.0)
    for key, problem in PROBLEMS.items():
        put(store, make_record(key, problem))
    hits = search(store, TENANT_A, PROBLEMS["docker"], k=4, min_similarity=-1.0)
    assert [h.similarity for h in hits] == sorted((h.similarity for h in hits), reverse=True)


def test_writes_from_another_connection_are_seen(db: Path) -> None:
    reader = SQLiteStore(db)
    writer = SQLiteStore(db)
    put(writer, make_record("s1", PROBLEMS["ws"]))
    assert ids(search(reader, TENANT_A, PROBLEMS["ws"])) == ["s1"]  # builds the reader's matrix
    put(writer, make_record("s2", PROBLEMS["db"]))
    assert ids(search(reader, TENANT_A, PROBLEMS["db"])) == ["s2"]  # the generation moved: rebuilt
    writer.delete(TENANT_A, "s1")
    assert search(reader, TENANT_A, PROBLEMS["ws"]) == []


def _write_many(path: str, start: int, count: int) -> None:
    store = SQLiteStore(path)
    for i in range(start, start + count):
        put(store, make_record(f"p{i}", f"{PROBLEMS['ws']} number {i}"))
    store.close()


def test_one_writer_process_while_this_process_reads(db: Path) -> None:
    reader = SQLiteStore(db)
    put(reader, make_record("seed", PROBLEMS["ws"]))
    ctx = multiprocessing.get_context("spawn")
    writer = ctx.Process(target=_write_many, args=(str(db), 0, 40))
    writer.start()
    while writer.is_alive():  # every read sees a consistent snapshot while the writer commits
        hits = search(reader, TENANT_A, PROBLEMS["ws"], k=5)
        assert hits and all(h.record.tenant_id == TENANT_A for h in hits)
    writer.join(timeout=60)
    assert writer.exitcode == 0
    assert reader.count(TENANT_A) == 41
    assert len(search(reader, TENANT_A, PROBLEMS["ws"], k=5)) == 5


def test_failure_ledger(db: Path) -> None:
    store = SQLiteStore(db)
    store.record_failure(IngestFailure(TENANT_A, "s1", "/a.jsonl", "h1", "schema violation"))
    store.record_failure(IngestFailure(TENANT_A, "s1", "/a.jsonl", "h2", "timeout"))
    store.record_failure(IngestFailure(TENANT_B, "s1", "/b.jsonl", "h3", "other tenant"))
    [failure] = store.failures(TENANT_A)
    assert (failure.attempts, failure.reason, failure.source_sha256) == (2, "timeout", "h2")
    assert failure.last_attempt_at
    assert len(store.failures()) == 2
    store.clear_failure(TENANT_A, "s1")
    assert store.failures(TENANT_A) == [] and len(store.failures(TENANT_B)) == 1


def test_stored_vectors_are_unit_float32(db: Path) -> None:
    store = SQLiteStore(db)
    record = make_record("s1", PROBLEMS["ws"])
    from episodic.kernel.ports import StoredVector

    raw = [StoredVector(r, "t", np.full(384, 3.0)) for r in MANIFEST.renderings]  # float64, not unit
    store.upsert(record, raw, MANIFEST)
    blob = sqlite3.connect(db).execute("SELECT vector FROM vectors LIMIT 1").fetchone()[0]
    vector = np.frombuffer(blob, dtype=np.float32)
    assert vector.shape == (384,) and abs(float(np.linalg.norm(vector)) - 1.0) < 1e-5


def test_selective_terms_skip_what_most_cards_contain() -> None:
    counts = {"error": 900, "zebrafish": 3, "absent": 0}
    assert hybrid.selective_terms(["error", "zebrafish", "absent", "unknown"], counts, 1000) == ["zebrafish"]
    assert hybrid.selective_terms(["error"], {"error": 15}, 30) == ["error"]  # small index: keep everything


def test_keyword_half_ignores_terms_in_most_cards(db: Path) -> None:
    store = SQLiteStore(db)
    for i in range(60):
        put(store, make_record(f"s{i}", f"build error number {i}"))
    put(store, make_record("rare", "build error with zebrafish"))
    conn = store._conn
    assert [r for r, _ in store._keyword_ranked(conn, TENANT_A, "error zebrafish", SearchFilters(), 50)] == [
        61
    ]
    assert store._keyword_ranked(conn, TENANT_A, "build error", SearchFilters(), 50) == []


def test_a_large_k_ranks_every_session(db: Path) -> None:
    store = SQLiteStore(db)
    for i in range(120):  # more than the per-half candidate depth
        put(store, make_record(f"s{i}", f"{PROBLEMS['db']} case {i}"))
    hits = search(store, TENANT_A, PROBLEMS["db"], k=500, min_similarity=-1.0)
    assert sorted(ids(hits)) == sorted(f"s{i}" for i in range(120))


def test_selective_terms_keep_shared_vocabulary_that_still_ranks() -> None:
    # a word in a third of the cards still has a positive bm25 idf: a team's shared words discriminate
    assert hybrid.selective_terms(["flaky", "the"], {"flaky": 330, "the": 990}, 1000) == ["flaky"]
    assert hybrid.selective_terms(["half"], {"half": 500}, 1000) == ["half"]
    assert hybrid.selective_terms(["most"], {"most": 501}, 1000) == []


def test_score_fusion_adds_the_keyword_half_scaled_to_the_best_keyword_match() -> None:
    sims = {1: (0.5, None), 2: (0.6, None), 3: (0.55, None)}
    z = {1: 0.2, 2: 1.0, 3: 0.5}
    fused = hybrid.fuse(z, [], sims, k=3, min_similarity=0.1, keyword_weight=1.25)
    assert [f.key for f in fused] == [2, 3, 1] and fused[0].score == pytest.approx(1.0)
    keyword = hybrid.fuse(z, [(1, 8.0), (3, 2.0)], sims, k=3, min_similarity=0.1, keyword_weight=1.25)
    # 1: 0.2 + 1.25 x 8/8 = 1.45; 3: 0.5 + 1.25 x 2/8 = 0.8125; 2: 1.0
    assert [f.key for f in keyword] == [1, 2, 3]
    assert keyword[0].score == pytest.approx(1.45) and keyword[0].keyword_rank == 1
    assert keyword[2].score == pytest.approx(0.8125) and keyword[1].keyword_rank is None


def test_blend_weights_renderings_and_standardise_is_over_the_pool() -> None:
    import numpy as np

    per_rendering = np.array([[0.8, 0.2, -np.inf], [0.4, 0.6, 0.3], [0.0, 0.0, 0.9]])
    weights = hybrid.rendering_weights(["struct", "semantic", "reflect"], DEFAULT_RENDERING_WEIGHTS)
    assert weights.tolist() == [0.5, 0.5, 0.0]
    blended = hybrid.blend(per_rendering, weights)
    # session 2 lacks `struct`: its mean is over what it has; a zero weight never votes
    assert blended.tolist() == pytest.approx([0.6, 0.4, 0.3])
    z = hybrid.standardise(blended, np.array([0, 1, 2]))
    assert z.mean() == pytest.approx(0.0) and z.std() == pytest.approx(1.0)
    assert hybrid.standardise(blended, np.array([1])).tolist() == [0.0, 0.0, 0.0]  # a pool of one: no spread
    # no positive weight among the renderings given: equal weights
    assert hybrid.rendering_weights(["reflect"], DEFAULT_RENDERING_WEIGHTS).tolist() == [1.0]


def test_on_a_large_index_the_most_common_terms_go_first_to_fit_the_posting_budget() -> None:
    counts = {"flaky": 40, "timeout": 900, "the": 1400, "deploy": 700}
    kept = hybrid.selective_terms(["flaky", "timeout", "the", "deploy"], counts, 10_000)
    assert kept == ["flaky", "deploy"] and sum(counts[t] for t in kept) <= hybrid.POSTING_BUDGET
    assert hybrid.selective_terms(["the"], {"the": 4000}, 10_000) == ["the"]  # never left with nothing


def test_another_tenants_writes_never_move_a_tenants_keyword_ranking(db: Path) -> None:
    store = SQLiteStore(db)
    put(store, make_record("a1", "flaky websocket reconnect after deploy", tenant=TENANT_A))
    put(store, make_record("a2", "websocket handshake rejected by the proxy", tenant=TENANT_A))
    conn = store._conn
    before = store._keyword_ranked(conn, TENANT_A, "flaky websocket proxy", SearchFilters(), 10)
    for i in range(25):  # the other tenant floods the shared FTS table with the same words
        put(store, make_record(f"b{i}", f"flaky websocket proxy {i}", tenant=TENANT_B))
    after = store._keyword_ranked(conn, TENANT_A, "flaky websocket proxy", SearchFilters(), 10)
    assert after == before and len(before) == 2  # same rows, same scores to the last bit
    hits = search(store, TENANT_A, "flaky websocket proxy", k=2, min_similarity=-1.0)
    assert {h.record.tenant_id for h in hits} == {TENANT_A}


def test_tenant_keywords_match_fts5_bm25_on_one_tenant(db: Path) -> None:
    from episodic.store.keywords import TenantKeywords

    store = SQLiteStore(db)
    texts = ["zebra crossing light stuck", "zebra fish tank", "light bulb flickers light", "nothing here"]
    for i, text in enumerate(texts):
        put(store, make_record(f"s{i}", text))
    conn = store._conn
    bodies = conn.execute("SELECT rowid, body FROM cards_fts").fetchall()
    ours = TenantKeywords.build(((r - 1, b) for r, b in bodies), len(bodies)).scores(["zebra", "light"])
    theirs = dict(
        conn.execute(
            "SELECT rowid, -bm25(cards_fts, 0.0, 1.0) FROM cards_fts WHERE cards_fts MATCH 'zebra OR light'"
        )
    )
    for rowid, score in theirs.items():
        assert ours[rowid - 1] == pytest.approx(score, rel=1e-6)
    assert ours[3] == 0.0
