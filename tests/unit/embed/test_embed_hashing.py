"""HashingEmbedder: deterministic, unit-length, lexical, never all-zero."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from episodic.embed.hashing import HashingEmbedder, tokens


def test_id_dimension_and_unit_float32_rows() -> None:
    embedder = HashingEmbedder(256)
    assert embedder.id == "hashing-v1-256" and embedder.dimension == 256
    vectors = embedder.embed(["The websocket reconnects", "a b c", "x"])
    assert vectors.shape == (3, 256) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-6)
    assert HashingEmbedder().embed([]).shape == (0, 384)


def test_same_text_same_vector_across_processes() -> None:
    text = "pytest fixture cannot reach the database"
    here = HashingEmbedder().embed([text])[0]
    code = (
        "import sys, numpy as np; from episodic.embed.hashing import HashingEmbedder; "
        f"sys.stdout.write(HashingEmbedder().embed([{text!r}])[0].tobytes().hex())"
    )
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert np.array_equal(here, np.frombuffer(bytes.fromhex(other), dtype=np.float32))  # no salted hash()


@pytest.mark.parametrize("text", ["", "   ", "!!! ??? ---", "\n\t"])
def test_text_without_words_is_a_fixed_nonzero_unit_vector(text: str) -> None:
    embedder = HashingEmbedder()
    vector = embedder.embed([text])[0]
    assert float(np.linalg.norm(vector)) == pytest.approx(1.0)
    assert np.array_equal(vector, embedder.embed([""])[0])


def test_similarity_follows_shared_words() -> None:
    embedder = HashingEmbedder()
    query, close, far = embedder.embed(
        [
            "flaky websocket reconnect test",
            "the websocket reconnect test is flaky in CI",
            "chocolate cake recipe with strawberries",
        ]
    )
    assert float(query @ close) > 0.5
    assert abs(float(query @ far)) < embedder.default_min_similarity
    assert float(query @ close) > float(query @ far)


def test_case_and_simple_suffixes_do_not_matter() -> None:
    embedder = HashingEmbedder()
    a, b = embedder.embed(["Testing the failed Builds", "test the fail build"])
    assert float(a @ b) == pytest.approx(1.0, abs=1e-6)
    assert tokens("Tests passed; class") == ["test", "pass", "class"]


def test_word_order_counts_through_bigrams() -> None:
    embedder = HashingEmbedder()
    a, b, c = embedder.embed(
        ["cache invalidates build", "cache invalidates build", "build invalidates cache"]
    )
    assert float(a @ b) == pytest.approx(1.0)
    assert 0.5 < float(a @ c) < 0.999


def test_tiny_dimension_is_refused() -> None:
    with pytest.raises(ValueError):
        HashingEmbedder(4)
