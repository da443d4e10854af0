"""The query rendering setting: `all` fuses every indexed rendering; one name narrows the comparison."""

from __future__ import annotations

from pathlib import Path

import pytest
from episodic.backends import build_memory
from episodic.embed.hashing import HashingEmbedder
from episodic.errors import ConfigError
from episodic.ingest import index_sessions
from episodic.search import search_traces
from episodic.settings import load_settings

DEMO = Path(__file__).resolve().parents[2] / "shared" / "episodic" / "demo"


@pytest.mark.usefixtures("episodic_home")
def test_query_rendering_must_be_all_or_a_known_rendering() -> None:
    assert load_settings().query_rendering == "all"
    assert load_settings(query_rendering="reflect").query_rendering == "reflect"
    with pytest.raises(ConfigError, match="query_rendering"):
        load_settings(query_rendering="summary")


@pytest.mark.usefixtures("episodic_home")
def test_a_query_rendering_that_is_not_indexed_is_a_clear_error() -> None:
    settings = load_settings(renderings="struct,semantic", query_rendering="reflect")
    memory = build_memory(settings, embedder=HashingEmbedder(384))
    index_sessions(memory, [str(DEMO)], "local")
    with pytest.raises(ConfigError, match="not indexed"):
        search_traces(memory, "local", "go test hangs in the worker pool")
    narrowed = build_memory(
        load_settings(renderings="struct,semantic", query_rendering="struct"), embedder=HashingEmbedder(384)
    )
    assert search_traces(narrowed, "local", "go test hangs forever in the worker pool package")
