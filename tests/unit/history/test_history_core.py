"""The history core over the SQLite store: search, thread, query, decisions, timeline, links, resume."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from episodic.history import service, views
from episodic.history.models import HistoryFilters
from episodic.history.params import filters_from
from episodic.history.service import kept_history
from episodic.history.tracker import Tracker
from episodic.kernel.errors import InvalidArgumentError, NotFoundError
from episodic.kernel.memory import Memory
from episodic.kernel.models import LOCAL_TENANT
from kits.history_kit import RECORDS, history_memory, record
from kits.mcp_testkit import ALPHA, BETA


@pytest.fixture()
def memory(tmp_path: Path) -> Memory:
    return history_memory(tmp_path / "home")


def test_put_is_idempotent_on_the_content_hash_and_replaces_a_grown_session(memory: Memory) -> None:
    store = kept_history(memory)
    assert store is not None
    assert store.put(RECORDS[0]) is False  # same hash: nothing written
    grown = RECORDS[0].model_copy(update={"source_sha256": "b" * 64, "closing_summary": "grown quokka"})
    assert store.put(grown) is True
    assert [h.match.session_id for h in service.search_history(memory, ALPHA, "quokka")] == [
        "alpha-pytest-fixture"
    ]
    assert store.count(ALPHA) == 3


def test_search_ranks_counts_and_stays_in_its_tenant(memory: Memory) -> None:
    hits = service.search_history(memory, ALPHA, "worktree")
    assert {h.match.session_id for h in hits} == {"alpha-pytest-fixture", "alpha-postgres-pool"}
    first = {h.match.session_id: h for h in hits}["alpha-pytest-fixture"]
    assert first.match.count == 1 and first.match.turns == [0] and "[worktree]" in first.match.snippet
    assert first.summary.outcome == "verified"  # from the card beside it
    assert first.summary.resume() == "cd /home/dev/shop && claude --resume alpha-pytest-fixture"
    beta = service.search_history(memory, BETA, "worktree")
    assert {h.match.session_id for h in beta} == {"beta-pytest-fixture", "beta-postgres-pool"}
    assert service.search_history(memory, ALPHA, "secret") == []


def test_search_filters_and_prefixes(memory: Memory) -> None:
    since = filters_from(since="2026-02-01")
    assert [h.match.session_id for h in service.search_history(memory, ALPHA, "work", since)] == [
        "alpha-postgres-pool"
    ]
    assert service.search_history(memory, ALPHA, "worktree", filters_from(project="billing"))[
        0
    ].match.session_id == ("alpha-postgres-pool")
    # FTS5 syntax in a topic is words, not operators
    assert service.search_history(memory, ALPHA, 'worktree" OR "docker') == []
    with pytest.raises(InvalidArgumentError):
        service.search_history(memory, ALPHA, "   ")


def test_thread_is_in_time_order_and_within_its_budget(memory: Memory) -> None:
    doc = views.topic_thread(memory, ALPHA, "worktree", max_chars=20_000)
    assert doc.sessions == ["alpha-pytest-fixture", "alpha-postgres-pool"]
    assert doc.text.index("2026-01-12") < doc.text.index("2026-03-20")
    assert "Closing summary: Moved conftest back" in doc.text and not doc.truncated
    small = views.topic_thread(memory, ALPHA, "worktree", max_chars=500)
    assert small.truncated and len(small.text) <= 500 and "truncated" in small.text


def test_query_gives_surrounding_turns(memory: Memory) -> None:
    results = views.query_history(
        memory, ALPHA, "moving", filters_from(session_id="alpha-pytest-fixture"), context=1
    )
    assert len(results) == 1
    assert [(t["turn"], t["matched"]) for t in results[0]["context"]] == [(0, True), (1, False)]  # type: ignore[index]


def test_decisions_are_about_the_topic_and_ask_back(memory: Memory) -> None:
    found, message = views.find_decisions(memory, ALPHA, "conftest")
    # the card's key decision names neither conftest nor sits in a turn about it: not a decision about it
    assert not any("kept the change minimal" in d.text for d in found)
    assert found[0].source == "prompt" and found[0].session.record.session_id == "alpha-pytest-fixture"
    assert "let's go with" in found[0].text
    assert message == "One decision about 'conftest' was found."
    # the fixture session mentions worktrees in one prompt and decides in another, about conftest
    worktree, _ = views.find_decisions(memory, ALPHA, "worktree")
    assert {d.session.record.session_id for d in worktree} == {"alpha-postgres-pool"}

    pool, _ = views.find_decisions(memory, ALPHA, "pool")
    assert any("decided to use one shared pool" in d.text for d in pool)


def test_timeline_shows_every_session_once_per_day(memory: Memory) -> None:
    days = views.timeline(memory, ALPHA)
    assert [d for d, _ in days] == ["2026-01-12", "2026-02-03", "2026-03-20"]
    assert sorted(s.record.session_id for _, ss in days for s in ss) == sorted(
        r.session_id for r in RECORDS if r.tenant_id == ALPHA
    )
    week = views.timeline(memory, ALPHA, filters_from(week="2026-W03"))  # 12-18 January
    assert [s.record.session_id for _, ss in week for s in ss] == ["alpha-pytest-fixture"]
    text = views.timeline_text(days, 10_000).text
    assert "[verified] shop: pytest cannot find a fixture" in text
    with pytest.raises(InvalidArgumentError):
        filters_from(week="2026-W99")


class _Epics(Tracker):
    def is_container(self, item: str, cwd: str) -> bool:
        return item == "bd-epic1"


def test_links_append_both_ways_and_epics_are_refused(memory: Memory) -> None:
    t1, t2 = datetime(2026, 4, 1, tzinfo=UTC), datetime(2026, 4, 2, tzinfo=UTC)
    service.link_session(memory, ALPHA, "alpha-docker-cache", "ENT-9", now=t1, cwd="/w", terminal="ttys001")
    service.link_session(memory, ALPHA, "alpha-docker-cache", "ent-9", now=t2)  # re-link: appended
    service.link_session(memory, ALPHA, "alpha-postgres-pool", "#41", now=t2)
    # the server's own tenant may link its current session before it is indexed; another tenant may not,
    # and its error is the same for another tenant's session as for an id nobody has
    service.link_session(memory, LOCAL_TENANT, "not-yet-indexed-session", "ENT-9", now=t2)
    refusals = []
    for session_id in ("beta-pytest-fixture", "no-such-session"):
        with pytest.raises(NotFoundError) as refused:
            service.link_session(memory, ALPHA, session_id, "ENT-9", now=t2)
        refusals.append(str(refused.value).replace(session_id, "<id>"))
    assert refusals[0] == refusals[1]
    assert [x.link.session_id for x in service.show_links(memory, LOCAL_TENANT, "ENT-9")[1]] == [
        "not-yet-indexed-session"
    ]
    kind, found = service.show_links(memory, ALPHA, "ENT-9")
    assert kind == "item" and [x.link.session_id for x in found] == [
        "alpha-docker-cache",
        "alpha-docker-cache",
    ]
    assert found[0].summary is not None
    assert found[1].link.terminal == "ttys001" and found[1].link.origin == "confirmed"
    kind, items = service.show_links(memory, ALPHA, "alpha-docker-cache")
    assert kind == "session" and [x.link.item for x in items] == ["ENT-9", "ENT-9"]
    assert service.show_links(memory, BETA, "ENT-9")[1] == []  # another tenant sees none of it
    with pytest.raises(InvalidArgumentError, match="epic"):
        service.link_session(memory, ALPHA, "alpha-docker-cache", "bd-epic1", tracker=_Epics())
    service.link_session(memory, ALPHA, "alpha-docker-cache", "bd-task1", tracker=_Epics())
    with pytest.raises(InvalidArgumentError):
        service.link_session(memory, ALPHA, "bad id with spaces", "ENT-9")


def test_resume_and_missing_history(memory: Memory) -> None:
    codex = record(ALPHA, "c1", "2026-01-01", ["x"], agent="codex", cwd="/tmp/a b")
    assert service.resume_command(codex) == "cd '/tmp/a b' && codex resume c1"
    gemini = record(ALPHA, "g1", "2026-01-01", ["x"], agent="gemini")
    assert service.resume_command(gemini) == ""
    with pytest.raises(NotFoundError):
        service.get_history(memory, ALPHA, "beta-pytest-fixture")


def test_sessions_in_range_for_the_weekly_dream(memory: Memory) -> None:
    service.link_session(memory, ALPHA, "alpha-docker-cache", "ENT-9")
    week = service.sessions_in_range(
        memory, ALPHA, datetime(2026, 2, 2, tzinfo=UTC), datetime(2026, 2, 9, tzinfo=UTC)
    )
    assert [s.record.session_id for s in week] == ["alpha-docker-cache"]
    assert week[0].card is not None and week[0].links[0].item == "ENT-9"
    assert week[0].record.prompts[0].startswith("docker build fails")
    assert (
        service.sessions_in_range(memory, ALPHA, None, None, project="billing")[0].record.project == "billing"
    )


def test_a_memory_without_history_says_so(memory: Memory) -> None:
    memory.parts["history"] = None
    from episodic.kernel.errors import ConfigError

    with pytest.raises(ConfigError, match="no history store"):
        service.search_history(memory, ALPHA, "x")
    assert HistoryFilters().since is None


def test_forget_drops_the_record_its_full_text_and_links_in_its_tenant_only(memory: Memory) -> None:
    store = kept_history(memory)
    assert store is not None
    target = RECORDS[0]
    service.link_session(memory, ALPHA, target.session_id, "ENT-297")
    assert store.forget(BETA, target.session_id) is False  # another tenant cannot reach it
    before = store.count(ALPHA)
    assert store.forget(ALPHA, target.session_id) is True
    assert store.get(ALPHA, target.session_id) is None and store.count(ALPHA) == before - 1
    assert store.links(ALPHA, session_id=target.session_id) == []
    assert target.session_id not in {
        h.match.session_id for h in service.search_history(memory, ALPHA, "pytest")
    }
    assert store.forget(ALPHA, target.session_id) is False
