"""CachedEmbedder: a second run over the same texts never calls the model."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
from episodic.embed.cache import CachedEmbedder
from episodic.embed.hashing import HashingEmbedder
from episodic.kernel.ports import Embedder
from kits import warm_cli


class CountingEmbedder(Embedder):
    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.id = inner.id
        self.dimension = inner.dimension
        self.default_min_similarity = 0.123
        self.calls: list[list[str]] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.append(list(texts))
        return self.inner.embed(texts)


def test_second_run_is_served_from_disk(tmp_path: Path) -> None:
    texts = [f"text number {i}" for i in range(1200)]  # more than one lookup chunk
    inner = CountingEmbedder(HashingEmbedder())
    first = CachedEmbedder(inner, tmp_path / "cache")
    assert (first.id, first.dimension, first.default_min_similarity) == (inner.id, 384, 0.123)
    a = first.embed(texts)
    assert len(inner.calls) == 1 and first.misses == 1200
    first.close()

    again = CountingEmbedder(HashingEmbedder())
    second = CachedEmbedder(again, tmp_path / "cache")  # a new process would see the same file
    b = second.embed(list(reversed(texts)))
    assert again.calls == [] and second.hits == 1200
    assert np.array_equal(a, b[::-1]) and b.dtype == np.float32


def test_only_missing_texts_are_embedded_once_each(tmp_path: Path) -> None:
    inner = CountingEmbedder(HashingEmbedder())
    cached = CachedEmbedder(inner, tmp_path)
    cached.embed(["a", "b"])
    out = cached.embed(["b", "c", "c", "a", "d"])
    assert inner.calls == [["a", "b"], ["c", "d"]]
    assert np.array_equal(out, HashingEmbedder().embed(["b", "c", "c", "a", "d"]))
    assert cached.embed([]).shape == (0, 384)


def test_embedders_never_share_entries(tmp_path: Path) -> None:
    small = CachedEmbedder(HashingEmbedder(64), tmp_path)
    large = CachedEmbedder(HashingEmbedder(128), tmp_path)
    assert small.embed(["same text"]).shape == (1, 64)
    assert large.embed(["same text"]).shape == (1, 128)
    assert large.misses == 1


def test_the_setting_puts_the_model_behind_one_cache_that_a_second_home_reuses(tmp_path: Path) -> None:
    """`embedding_cache_dir`: the assembly wraps MiniLM (never the hashing embedder, cheaper to compute than
    to look up); a second home indexing the same sessions finds every vector there."""
    import os
    import sqlite3
    import sys

    from episodic.assembly import build_embedder
    from episodic.kernel.settings import load_settings

    cache = tmp_path / "vectors"
    built = build_embedder(load_settings(home=tmp_path / "h", embedder="minilm", embedding_cache_dir=cache))
    assert isinstance(built, CachedEmbedder) and built.id == "minilm-l6-v2" and built.path.parent == cache
    hashing = build_embedder(
        load_settings(home=tmp_path / "h", embedder="hashing", embedding_cache_dir=cache)
    )
    assert isinstance(hashing, HashingEmbedder)
    assert not isinstance(
        build_embedder(load_settings(home=tmp_path / "h", embedder="minilm")), CachedEmbedder
    )

    demo = Path(__file__).resolve().parents[3] / "shared" / "episodic" / "demo"
    rows = []
    for home in ("first", "second"):
        env = {**os.environ, "EPISODIC_HOME": str(tmp_path / home), "HOME": str(tmp_path / "user")}
        env |= {"EPISODIC_EMBEDDER": "minilm", "EPISODIC_EMBEDDING_CACHE_DIR": str(cache)}
        done = warm_cli.run(
            [sys.executable, "-m", "episodic", "index", str(demo)], env=env, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr
        with sqlite3.connect(cache / "embeddings.sqlite3") as conn:
            rows.append(conn.execute("SELECT count(*) FROM embeddings").fetchone()[0])
    assert rows[0] > 6 and rows[1] == rows[0]  # every rendering of the 6 demo cards, and nothing new


class HeldEmbedder(CountingEmbedder):
    """Says when its first embed starts and holds it until released."""

    def __init__(self, inner: Embedder) -> None:
        super().__init__(inner)
        import threading

        self.entered, self.release = threading.Event(), threading.Event()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.entered.set()
        assert self.release.wait(60), "never released"
        return super().embed(texts)


def test_a_bulk_fill_under_way_elsewhere_is_waited_for_not_repeated(tmp_path: Path) -> None:
    import threading

    texts = [f"card text {i}" for i in range(40)]
    held = HeldEmbedder(HashingEmbedder())
    filling = CachedEmbedder(held, tmp_path / "cache")
    second_inner = CountingEmbedder(HashingEmbedder())
    second = CachedEmbedder(second_inner, tmp_path / "cache")  # another process's connection to the folder
    looked = threading.Event()
    lookup = second._lookup

    def watched_lookup(keys: list[bytes]) -> dict[bytes, np.ndarray]:
        found = lookup(keys)
        looked.set()
        return found

    second._lookup = watched_lookup  # type: ignore[method-assign]
    results: dict[str, np.ndarray] = {}
    first_thread = threading.Thread(target=lambda: results.setdefault("first", filling.embed(texts)))
    first_thread.start()
    assert held.entered.wait(60)
    second_thread = threading.Thread(target=lambda: results.setdefault("second", second.embed(texts)))
    second_thread.start()
    assert looked.wait(60)  # the second has seen an empty cache before the first stores anything
    held.release.set()
    first_thread.join(60)
    second_thread.join(60)
    assert len(held.calls) == 1 and second_inner.calls == []
    assert np.array_equal(results["first"], results["second"]) and second.hits == 40


def test_a_query_never_waits_for_a_bulk_fill(tmp_path: Path) -> None:
    from episodic.embed.cache import FILL_LOCK_NAME, fill_lock

    cache = CachedEmbedder(CountingEmbedder(HashingEmbedder()), tmp_path / "cache")
    with fill_lock(cache.path.with_name(FILL_LOCK_NAME)):  # another process is filling the folder
        vector = cache.embed(["one query"])
    assert vector.shape == (1, 384) and cache.misses == 1


UNGUARDED_SCRIPT = """
import concurrent.futures, multiprocessing, sys
from episodic.embed.cache import CachedEmbedder
from episodic.embed.hashing import HashingEmbedder

class PoolEmbedder(HashingEmbedder):
    def embed(self, texts):
        pool = concurrent.futures.ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"))
        pool.submit(len, list(texts)).result()  # a worker starts: it runs this script again first
        return super().embed(texts)

CachedEmbedder(PoolEmbedder(), sys.argv[1]).embed([f"card text {i}" for i in range(40)])
"""


def test_a_script_without_a_main_guard_gets_pythons_error_not_a_hang(tmp_path: Path) -> None:
    """Its spawned worker re-runs the script while the parent holds the fill lock: the worker must not wait."""
    import subprocess
    import sys

    script = tmp_path / "unguarded.py"
    script.write_text(UNGUARDED_SCRIPT, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "cache")], capture_output=True, text=True, timeout=300
    )
    assert done.returncode != 0
    assert "bootstrapping phase" in done.stderr or "BrokenProcessPool" in done.stderr, done.stderr[-2000:]
