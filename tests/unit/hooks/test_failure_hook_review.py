"""Review in every face (issue 52 item 2): the failure hook, run as Claude Code runs it (a subprocess), never
serves the words of a session a reviewer vetoed, and under `review_required` only those of a session whose
card a person approved; a restore or an approval brings the entry back."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from episodic.cards.review import review_episode
from episodic.failures.service import FailureMemory, remember_fixes
from episodic.failures.sqlite_store import SQLiteFailureStore
from episodic.kernel.auth import LocalTokenStore
from episodic.kernel.memory import Memory
from episodic.kernel.models import Outcome
from episodic.mcp.http_server import BackgroundServer, build_endpoint
from episodic.scrub import default_scrubber
from kits.mcp_testkit import ALPHA, _card, build_memory, populate, settings_for
from test_failure_hook import payload, run_hook
from unit.failures.test_failure_memory import _session

CARDED, CARDLESS = "s-fixed", "s-no-card"
DIAGNOSIS = "regexp import was removed"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str, Path, Memory]]:
    """One session with a card and its fix stored; the server in this process, the hook a subprocess."""
    tmp = tmp_path_factory.mktemp("failure-review")
    settings = settings_for(tmp / "server")
    memory = build_memory(settings)
    failures = FailureMemory(settings, SQLiteFailureStore(tmp / "failures.sqlite3"), default_scrubber())
    memory.parts["failures"] = failures
    remember_fixes(failures, ALPHA, _session(tmp, CARDED, "2026-02-15"))
    card = _card("go test fails with undefined: regexp", "the import was removed", Outcome.VERIFIED, ["go"])
    populate(memory, [(ALPHA, CARDED, "shop", "2026-02-15", card)])
    with BackgroundServer(build_endpoint(settings, memory)) as server:
        yield server.url, LocalTokenStore(settings.tokens_path).add(ALPHA), tmp, memory


def _entry(served: tuple[str, str, Path, Memory], **env: str) -> tuple[str, str]:
    url, token, tmp, _ = served
    code, out, log = run_hook(tmp / "client", payload(), url, token, **env)
    assert code == 0
    return (json.loads(out)["hookSpecificOutput"]["additionalContext"] if out else ""), log


def test_a_vetoed_session_is_never_served_and_a_restore_brings_it_back(served) -> None:  # type: ignore[no-untyped-def]
    memory = served[3]
    assert DIAGNOSIS in _entry(served)[0]
    review_episode(memory, ALPHA, CARDED, "veto", reason="the fix it points to is wrong")
    try:
        context, log = _entry(served)
        assert context == ""
        assert "no strong match (got past only in sessions a reviewer vetoed" in log
    finally:
        review_episode(memory, ALPHA, CARDED, "restore")
    assert DIAGNOSIS in _entry(served)[0]


def test_under_review_required_only_an_approved_session_is_served(served) -> None:  # type: ignore[no-untyped-def]
    tmp, memory = served[2], served[3]
    remember_fixes(memory.parts["failures"], ALPHA, _session(tmp, CARDLESS, "2026-02-16"))  # no card
    try:
        assert _entry(served, EPISODIC_REVIEW_REQUIRED="true")[0] == ""  # unreviewed, and no card
        review_episode(memory, ALPHA, CARDED, "approve")
        context = _entry(served, EPISODIC_REVIEW_REQUIRED="true")[0]
        assert DIAGNOSIS in context and f"Session {CARDED} of" in context
    finally:
        memory.parts["failures"].store.delete_session(ALPHA, CARDLESS)
