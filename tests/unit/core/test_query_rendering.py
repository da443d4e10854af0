"""The query rendering setting: `all` fuses every indexed rendering; one name narrows the comparison."""

from __future__ import annotations

from pathlib import Path

import pytest
from episodic.assembly import build_memory
from episodic.core.ingest import index_sessions
from episodic.core.search import search_traces
from episodic.embed.hashing import HashingEmbedder
from episodic.kernel.errors import ConfigError
from episodic.kernel.settings import load_settings

DEMO = Path(__file__).resolve().parents[3] / "shared" / "episodic" / "demo"


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


def test_rendering_and_keyword_weights_come_from_the_environment(
    episodic_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    defaults = load_settings()
    assert defaults.rendering_weights == {"struct": 1.0, "semantic": 1.0, "reflect": 0.0, "opening": 1.0}
    assert defaults.keyword_weight == 1.25
    monkeypatch.setenv("EPISODIC_RENDERING_WEIGHTS", "struct:2, reflect:1")
    monkeypatch.setenv("EPISODIC_KEYWORD_WEIGHT", "0")
    settings = load_settings()
    assert settings.rendering_weights == {"struct": 2.0, "reflect": 1.0} and settings.keyword_weight == 0.0
    from episodic.assembly import build_store

    store = build_store(settings)
    assert store.rendering_weights == {"struct": 2.0, "reflect": 1.0} and store.keyword_weight == 0.0  # type: ignore[attr-defined]
    for bad in ("struct:-1", "summary:1", "struct", "struct:0,semantic:0"):
        monkeypatch.setenv("EPISODIC_RENDERING_WEIGHTS", bad)
        with pytest.raises(ConfigError, match="rendering_weights"):
            load_settings()
