"""The index's batched, background embedding stores what the one-card-at-a-time path stores."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from episodic.assembly import build_memory
from episodic.core.ingest import index_sessions, ingest_one, newest_first
from episodic.embed import batcher as batcher_module
from episodic.embed.batcher import EmbedBatcher
from episodic.embed.hashing import HashingEmbedder
from episodic.kernel.memory import Memory
from episodic.kernel.models import SessionSource
from episodic.kernel.ports import Embedder
from episodic.kernel.settings import load_settings

DEMO = Path(__file__).resolve().parents[3] / "shared" / "episodic" / "demo"


def memory_in(home: Path, embedder: Embedder) -> Memory:
    return build_memory(load_settings(home=home), embedder=embedder)


def stored(memory: Memory) -> dict[str, tuple[str, dict[str, np.ndarray]]]:
    """session id -> (card JSON, rendering -> vector), read from the index file itself."""
    path = Path(memory.store.index_name)  # type: ignore[attr-defined]
    with sqlite3.connect(path) as conn:
        cards = {
            card_id: (session_id, record)
            for card_id, session_id, record in conn.execute("SELECT id, session_id, record FROM cards")
        }
        vectors: dict[int, dict[str, np.ndarray]] = {}
        for card_id, rendering, blob in conn.execute("SELECT card_id, rendering, vector FROM vectors"):
            vectors.setdefault(card_id, {})[rendering] = np.frombuffer(blob, dtype=np.float32)
    from episodic.kernel.models import CardRecord

    out = {}
    for card_id, (session_id, record) in cards.items():
        card = CardRecord.model_validate_json(record).card.model_dump_json()
        out[session_id] = (card, vectors[card_id])
    return out


def serial(memory: Memory) -> None:
    """The one-session-at-a-time write path (the AWS pipeline's): each card embedded on its own."""
    for source in memory.source.discover([str(DEMO)]):
        ingest_one(memory, "local", memory.source.load(source))


def assert_same(batched: dict, one_by_one: dict, atol: float) -> None:  # type: ignore[type-arg]
    assert batched.keys() == one_by_one.keys() and len(batched) == 6
    for session_id, (card, vectors) in batched.items():
        other_card, other_vectors = one_by_one[session_id]
        assert card == other_card
        assert vectors.keys() == other_vectors.keys() and "opening" in vectors
        for rendering, vector in vectors.items():
            assert np.allclose(vector, other_vectors[rendering], atol=atol), (session_id, rendering)


@pytest.mark.usefixtures("episodic_home")
@pytest.mark.parametrize("batch_texts", [1, 5, 1000])
def test_batched_index_stores_the_serial_paths_cards_and_vectors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, batch_texts: int
) -> None:
    monkeypatch.setattr(batcher_module, "BATCH_TEXTS", batch_texts)
    monkeypatch.setattr(batcher_module, "FIRST_BATCH_TEXTS", max(1, batch_texts // 2))
    batched = memory_in(tmp_path / "a", HashingEmbedder(384))
    assert index_sessions(batched, [str(DEMO)], "local").indexed == 6
    one_by_one = memory_in(tmp_path / "b", HashingEmbedder(384))
    serial(one_by_one)
    assert_same(stored(batched), stored(one_by_one), atol=0.0)


@pytest.mark.usefixtures("episodic_home")
def test_batched_minilm_vectors_match_one_card_at_a_time(tmp_path: Path) -> None:
    from episodic.embed import minilm
    from episodic.kernel.errors import ConfigError

    try:
        minilm.find_model_dir()
    except ConfigError:
        pytest.skip(f"model files missing: {minilm.INSTALL_HINT}")
    # workers=2 with a 64-text floor: the demo's ~24 texts stay in process; lower it to cross processes
    embedder = minilm.MiniLMEmbedder(workers=2)
    floor = minilm.PARALLEL_MIN_TEXTS
    minilm.PARALLEL_MIN_TEXTS = 4
    try:
        batched = memory_in(tmp_path / "a", embedder)
        assert index_sessions(batched, [str(DEMO)], "local").indexed == 6
    finally:
        minilm.PARALLEL_MIN_TEXTS = floor
        embedder.close()
    one_by_one = memory_in(tmp_path / "b", minilm.MiniLMEmbedder(workers=1))
    serial(one_by_one)
    assert_same(stored(batched), stored(one_by_one), atol=1e-5)


class Recording(Embedder):
    """Hashing vectors; records each call's size, can fail a call, and counts calls running at once."""

    id = "recording"
    dimension = 8
    default_min_similarity = 0.1

    def __init__(self, fail_on: int | None = None, gate: threading.Event | None = None) -> None:
        self.inner = HashingEmbedder(8)
        self.calls: list[int] = []
        self.fail_on = fail_on
        self.gate = gate
        self.running = 0
        self.most_running = 0
        self._lock = threading.Lock()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        with self._lock:
            self.calls.append(len(texts))
            self.running += 1
            self.most_running = max(self.most_running, self.running)
            call = len(self.calls)
        try:
            if self.gate is not None:
                assert self.gate.wait(timeout=60)
            if call == self.fail_on:
                raise RuntimeError("embedder down")
            return self.inner.embed(texts)
        finally:
            with self._lock:
                self.running -= 1


def test_batcher_keeps_order_and_each_items_rows() -> None:
    embedder = Recording()
    texts = {i: [f"text {i} {j}" for j in range(i % 4 + 1)] for i in range(20)}
    out: list[tuple[int, np.ndarray | BaseException]] = []
    with EmbedBatcher[int](embedder.embed, batch_texts=7, in_flight=2) as batcher:
        for i, item_texts in texts.items():
            out.extend(batcher.add(i, item_texts))
        out.extend(batcher.finish())
    assert [i for i, _ in out] == list(range(20))
    for i, rows in out:
        assert isinstance(rows, np.ndarray)
        assert np.array_equal(rows, embedder.inner.embed(texts[i]))
    assert all(size >= 7 for size in embedder.calls[:-1])  # batches, not one call a card


def test_the_first_call_is_small_so_the_newest_cards_are_stored_early() -> None:
    embedder = Recording()
    with EmbedBatcher[int](embedder.embed, batch_texts=10, first_batch_texts=3) as batcher:
        for i in range(12):
            batcher.add(i, [f"a {i}", f"b {i}"])
        list(batcher.finish())
    assert embedder.calls[0] == 4 and all(size >= 10 for size in embedder.calls[1:-1]), embedder.calls


def test_a_failed_call_fails_its_items_only() -> None:
    embedder = Recording(fail_on=2)
    out: list[tuple[int, np.ndarray | BaseException]] = []
    with EmbedBatcher[int](embedder.embed, batch_texts=2, in_flight=1) as batcher:
        for i in range(6):
            out.extend(batcher.add(i, [f"a {i}", f"b {i}"]))
        out.extend(batcher.finish())
    failed = [i for i, rows in out if isinstance(rows, BaseException)]
    assert failed == [1] and len(out) == 6


def test_at_most_in_flight_calls_run_at_once() -> None:
    gate = threading.Event()
    embedder = Recording(gate=gate)
    with EmbedBatcher[int](embedder.embed, batch_texts=1, in_flight=2) as batcher:
        opener = threading.Timer(0.2, gate.set)
        opener.start()
        out = [pair for i in range(8) for pair in batcher.add(i, [f"t {i}"])]
        out.extend(batcher.finish())
    assert len(out) == 8 and embedder.most_running <= 2


def test_newest_sessions_first_and_the_largest_file_of_a_key_first() -> None:
    def source(key: str, mtime: float, size: int) -> SessionSource:
        return SessionSource(session_key=key, main_path=f"/{key}-{size}.jsonl", mtime=mtime, total_bytes=size)

    old, new_small, new_large, middle = (
        source("old", 1.0, 10),
        source("new", 5.0, 1),
        source("new", 2.0, 50),
        source("mid", 3.0, 5),
    )
    assert newest_first([old, new_small, middle, new_large]) == [new_large, new_small, middle, old]


@pytest.mark.usefixtures("episodic_home")
def test_reflect_is_embedded_only_where_it_is_used_and_an_index_built_with_it_stays_valid(
    tmp_path: Path,
) -> None:
    from episodic.core.search import search_traces
    from episodic.kernel.models import RENDERINGS

    assert load_settings().renderings == ["struct", "semantic", "opening"]  # reflect votes 0 by default
    assert "reflect" in load_settings(query_rendering="reflect").renderings
    assert "reflect" in load_settings(rendering_weights="struct:1,reflect:0.5").renderings
    home = tmp_path / "home"
    before = build_memory(
        load_settings(home=home, renderings=",".join(RENDERINGS)), embedder=HashingEmbedder(384)
    )
    assert index_sessions(before, [str(DEMO)], "local").indexed == 6  # what every index held until now
    query = "go test hangs forever in the worker pool package"
    hits = [h.record.session_id for h in search_traces(before, "local", query)]

    now = memory_in(home, HashingEmbedder(384))  # the new default on the old index: no ParityError
    assert [h.record.session_id for h in search_traces(now, "local", query)] == hits
    again = index_sessions(now, [str(DEMO)], "local")
    assert (again.indexed, again.unchanged) == (0, 6)  # nothing re-embedded
    assert all(set(vectors) == set(RENDERINGS) for _, vectors in stored(now).values())  # kept
    asked = build_memory(load_settings(home=home, query_rendering="reflect"), embedder=HashingEmbedder(384))
    assert search_traces(asked, "local", query)  # the kept reflect vectors still answer a reflect query
