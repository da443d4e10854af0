"""The history store on the real transcripts: written by ingestion, idempotent, scrubbed, and its search
finds every session that grep over the scrubbed prompts finds."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest
from episodic.assembly import build_memory
from episodic.core.ingest import index_sessions
from episodic.history import service, views
from episodic.history.service import kept_history
from episodic.history.sqlite_store import SQLiteHistoryStore
from episodic.kernel.memory import Memory
from episodic.kernel.models import LOCAL_TENANT, Trajectory
from episodic.kernel.settings import load_settings

TERMS = [
    "worktree",
    "checkpoint",
    "rebase",
    "gemini",
    "telemetry",
    "lint",
    "go-git",
    "posthog",
    "shadow branch",
]


@pytest.fixture(scope="module")
def corpus(
    transcripts_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Memory, list[Trajectory]]:
    """Every entireio session's history record, stored the way ingestion stores it (no card needed)."""
    home = tmp_path_factory.mktemp("history-home")
    memory = build_memory(load_settings(home=home, embedder="hashing", distiller="heuristic"))
    loaded = []
    for source in memory.source.discover([str(transcripts_dir / "entireio__cli")]):
        trajectory = memory.source.load(source)
        if isinstance(trajectory, Trajectory):
            loaded.append(trajectory)
            service.record_history(memory, LOCAL_TENANT, trajectory)
    return memory, loaded


def _grep(trajectories: list[Trajectory], term: str) -> set[str]:
    """grep -i for the term at a word start over the scrubbed prompts of each session."""
    pattern = re.compile(rf"(?<![^\W_]){re.escape(term)}", re.IGNORECASE)
    return {t.session_id for t in trajectories if any(pattern.search(p) for p in t.prompts)}


@pytest.mark.parametrize("term", TERMS)
def test_search_finds_every_session_grep_finds(corpus: tuple[Memory, list[Trajectory]], term: str) -> None:
    memory, trajectories = corpus
    expected = _grep(trajectories, term)
    hits = service.search_history(memory, LOCAL_TENANT, term, limit=200)
    found = {h.match.session_id for h in hits}
    assert expected <= found, f"{term}: grep found {sorted(expected - found)} that search missed"
    assert expected, f"{term} should occur in the corpus' prompts"
    for hit in hits:  # nothing found that the record does not say
        text = kept_history(memory).get(LOCAL_TENANT, hit.match.session_id).search_text()  # type: ignore[union-attr]
        assert all(w.lower() in text.lower() for w in re.findall(r"\w+", term))
        assert hit.match.count >= 1


def test_thread_is_in_time_order_and_within_budget(corpus: tuple[Memory, list[Trajectory]]) -> None:
    memory, _ = corpus
    doc = views.topic_thread(memory, LOCAL_TENANT, "worktree", max_chars=8000)
    assert len(doc.text) <= 8000 and doc.truncated
    dates = re.findall(r"^## (\d{4}-\d{2}-\d{2})", doc.text, re.MULTILINE)
    assert dates == sorted(dates) and len(dates) >= 2


def test_timeline_shows_every_session_once(corpus: tuple[Memory, list[Trajectory]]) -> None:
    memory, trajectories = corpus
    days = views.timeline(memory, LOCAL_TENANT)
    shown = [s.record.session_id for _, sessions in days for s in sessions]
    assert sorted(shown) == sorted({t.session_id for t in trajectories})
    assert [d for d, _ in days] == sorted(d for d, _ in days)


def test_branch_links_detected_in_the_team_corpus(corpus: tuple[Memory, list[Trajectory]]) -> None:
    memory, trajectories = corpus
    assert kept_history(memory) is not None
    branch_links = [
        link
        for t in trajectories
        for link in kept_history(memory).links(LOCAL_TENANT, session_id=t.session_id)
        if link.evidence == "branch"
    ]
    assert all(link.origin == "detected" and link.kind == "jira" for link in branch_links)
    items = {link.item for link in branch_links}
    assert {"ENT-297", "ENT-221"} <= items
    kind, sessions = service.show_links(memory, LOCAL_TENANT, "ent-297")
    assert kind == "item" and sessions and all(s.summary is not None for s in sessions)
    print(
        f"branch-detected links: {len(branch_links)} over {len({ln.session_id for ln in branch_links})} sessions, "
        f"{len(items)} items; all detected: {sum(len(kept_history(memory).links(LOCAL_TENANT, session_id=t.session_id)) for t in trajectories)}"
    )


def test_index_writes_history_idempotently_and_backfills_without_redistilling(
    transcripts_dir: Path, tmp_path: Path
) -> None:
    folder = transcripts_dir / "marot__spotter"
    settings = load_settings(home=tmp_path / "home", embedder="hashing", distiller="heuristic")
    memory = build_memory(settings)
    cards_only = index_sessions(
        replace(memory, parts={**memory.parts, "history": None}), [str(folder)], LOCAL_TENANT
    )
    assert cards_only.indexed >= 3
    history = kept_history(memory)
    assert isinstance(history, SQLiteHistoryStore) and history.count(LOCAL_TENANT) == 0
    again = index_sessions(memory, [str(folder)], LOCAL_TENANT)
    assert again.indexed == 0 and again.unchanged == cards_only.indexed  # no card re-distilled...
    assert history.count(LOCAL_TENANT) == cards_only.indexed  # ...and every session got its history
    before = {
        r.session_id: r.model_dump_json() for r in history.sessions(LOCAL_TENANT, views.HistoryFilters())
    }
    index_sessions(memory, [str(folder)], LOCAL_TENANT)
    after = {
        r.session_id: r.model_dump_json() for r in history.sessions(LOCAL_TENANT, views.HistoryFilters())
    }
    assert after == before
    record = history.get(LOCAL_TENANT, "4d5611e5-241a-462a-8d15-5122611a9569")
    assert record is not None and record.subagents and record.files_touched and record.closing_summary
    beads = {ln.item for ln in history.links(LOCAL_TENANT, session_id=record.session_id)}
    assert "spotter-dov" in beads
