"""The second stage (ports.Reranker) is one code path: search_traces hands it the first stage's best `depth`
candidates with the query already scrubbed, keeps its order, cuts to k and labels what it returns."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest
from episodic.assembly import build_reranker
from episodic.core.search import search_traces
from episodic.kernel.errors import ConfigError
from episodic.kernel.models import SearchHit
from episodic.kernel.ports import Reranker
from episodic.kernel.settings import load_settings
from kits.mcp_testkit import ALPHA, EPISODES, build_memory, populate

QUERY = "postgres pool exhausted while the pytest fixture and the docker cache misbehave"


def every_card_memory(home: Path):  # type: ignore[no-untyped-def]
    """The test kit's memory with no similarity floor: every card of a tenant is a candidate."""
    return build_memory(load_settings(home=home, embedder="hashing", min_similarity=-1.0))


class ReversingReranker(Reranker):
    """Puts the first stage's last candidate first, with the first's score (so it clears the same tiers)."""

    name = "reversing"

    def __init__(self, depth: int) -> None:
        self.depth = depth
        self.calls: list[tuple[str, list[str]]] = []

    def rerank(self, query: str, hits: Sequence[SearchHit]) -> list[SearchHit]:
        self.calls.append((query, [h.record.session_id for h in hits]))
        scores = [h.score for h in hits]
        return [h.model_copy(update={"score": s}) for h, s in zip(reversed(hits), scores, strict=True)]


def test_search_traces_keeps_the_second_stage_order_and_cuts_to_k(tmp_path: Path) -> None:
    memory = every_card_memory(tmp_path)
    populate(memory)
    first = search_traces(memory, ALPHA, QUERY, k=5)
    assert len(first) >= 2, "the fixture must give the first stage several candidates"
    memory.reranker = judge = ReversingReranker(depth=5)
    second = search_traces(memory, ALPHA, QUERY, k=1)
    assert [h.record.session_id for h in second] == [first[-1].record.session_id]
    # labelled after the second stage, on the score it gave
    assert second[0].score == first[0].score and second[0].confidence == first[0].confidence
    # it read `depth` candidates although the caller asked for one
    assert judge.calls[0][1] == [h.record.session_id for h in first]


def test_the_second_stage_reads_the_scrubbed_query(tmp_path: Path) -> None:
    memory = every_card_memory(tmp_path)
    populate(memory)
    memory.reranker = judge = ReversingReranker(depth=5)
    search_traces(memory, ALPHA, QUERY + " with key AKIAIOSFODNN7EXAMPLE")
    assert judge.calls and "AKIAIOSFODNN7EXAMPLE" not in judge.calls[0][0]


def test_no_second_stage_by_default(tmp_path: Path) -> None:
    assert build_reranker(load_settings(home=tmp_path, embedder="hashing")) is None
    assert len(EPISODES) > 3


def test_an_unknown_reranker_is_a_config_error(tmp_path: Path) -> None:
    settings = load_settings(home=tmp_path, embedder="hashing")
    object.__setattr__(settings, "reranker", "nonesuch")
    with pytest.raises(ConfigError, match="nonesuch"):
        build_reranker(settings)
