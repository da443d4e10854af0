"""recall_similar and the packing rules: tenant scope, TTL on a frozen clock, threshold silence, fail-first
for repair prompts, a mix for greenfield ones, the deadline and the degrade path, and the packed block."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest
from episodic.embed.hashing import HashingEmbedder
from episodic.kernel.errors import InvalidArgumentError
from episodic.kernel.settings import load_settings
from episodic.scratch import recall as recall_module
from episodic.scratch.models import ScratchHit, ScratchRecord, ToolOutcome
from episodic.scratch.pack import CLOSING, MAX_BULLET_CHARS, heading, pack_recalls
from episodic.scratch.recall import classify_task, recall_similar
from episodic.scratch.service import ScratchMemory, forget_session, sweep
from episodic.scratch.sqlite_store import SQLiteScratchStore
from episodic.scrub import Scrubber

NOW = datetime(2026, 3, 10, 12, 0, tzinfo=UTC)
TEAM, OTHER = "team", "other"


class Clock:
    def __init__(self) -> None:
        self.now = NOW

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture()
def clock() -> Clock:
    return Clock()


@pytest.fixture()
def scratch(tmp_path: Path, clock: Clock) -> ScratchMemory:
    settings = load_settings(home=tmp_path, embedder="hashing", scratch_min_similarity=0.2)
    return ScratchMemory(
        settings, SQLiteScratchStore(tmp_path / "scratch.sqlite3"), HashingEmbedder(384), Scrubber(), clock
    )


def put(scratch: ScratchMemory, summary: str, outcome: str = "fail", *, tenant: str = TEAM,
        session: str = "s_0918", tool: str = "typecheck", age_days: float = 1) -> ScratchRecord:  # fmt: skip
    record = ScratchRecord(
        tenant_id=tenant,
        session_id=session,
        tool_name=tool,
        outcome=ToolOutcome(outcome),
        summary=summary,
        created_at=NOW - timedelta(days=age_days),
    )
    scratch.store.add([record], scratch.embedder.embed([summary]), scratch.manifest)
    return record


AUTH = [
    (
        "typecheck failed on auth middleware — cannot find name UserContext; after rename refactor",
        "fail",
        "typecheck",
    ),
    ("patch rejected on auth middleware — import cycle between auth and users", "fail", "patch"),
    ("tests passed on auth middleware after introducing a shared types package", "ok", "tests"),
]


def test_repair_prompts_get_failures_first(scratch: ScratchMemory) -> None:
    for summary, outcome, tool in AUTH:
        put(scratch, summary, outcome, tool=tool)
    found = recall_similar(
        scratch, TEAM, "fix the auth middleware typecheck after the UserContext rename refactor"
    )
    assert found.task == "repair"
    outcomes = [h.record.outcome.value for h in found.hits]
    assert outcomes and outcomes == sorted(outcomes)  # "fail" < "ok": every fail before any ok


def test_greenfield_prompts_mix_outcomes(scratch: ScratchMemory) -> None:
    for i in range(4):
        put(
            scratch,
            f"tests passed on the auth middleware shared types package variant {i}",
            "ok",
            tool="tests",
        )
    put(scratch, "typecheck failed on the auth middleware shared types package", "fail")
    found = recall_similar(scratch, TEAM, "add a shared types package for the auth middleware")
    assert found.task == "greenfield"
    assert {h.record.outcome.value for h in found.hits} == {"ok", "fail"} and len(found.hits) == 3


@pytest.mark.parametrize(
    ("prompt", "task"),
    [
        ("fix the failing login test", "repair"),
        ("refactor the users service into two modules", "repair"),
        ("why does the build crash with error TS2304", "repair"),
        ("add a dark mode toggle to the settings page", "greenfield"),
        ("write a CLI command that exports cards as CSV", "greenfield"),
    ],
)
def test_how_prompts_are_classified(prompt: str, task: str) -> None:
    assert classify_task(prompt) == task


def test_weak_matches_give_silence(scratch: ScratchMemory) -> None:
    put(scratch, AUTH[0][0])
    found = recall_similar(scratch, TEAM, "zebra quantum xylophone marmalade orchestra")
    assert found.hits == [] and pack_recalls(found.hits, 7) == ""


def test_recall_is_tenant_scoped(scratch: ScratchMemory) -> None:
    put(scratch, AUTH[0][0], tenant=OTHER)
    assert recall_similar(scratch, TEAM, AUTH[0][0]).hits == []
    assert len(recall_similar(scratch, OTHER, AUTH[0][0]).hits) == 1


def test_ttl_on_a_frozen_clock_expired_invisible_at_once_then_swept(
    scratch: ScratchMemory, clock: Clock
) -> None:
    put(scratch, AUTH[0][0], age_days=6.5)
    assert len(recall_similar(scratch, TEAM, AUTH[0][0]).hits) == 1
    clock.now = NOW + timedelta(days=1)  # the record is now 7.5 days old, with the 7-day default
    assert recall_similar(scratch, TEAM, AUTH[0][0]).hits == []
    assert scratch.store.count(TEAM) == 1  # invisible before the sweep ran
    assert sweep(scratch) == 1 and scratch.store.count(TEAM) == 0


def test_a_session_dated_in_the_future_is_stored_as_of_now_and_expires_like_the_rest(
    scratch: ScratchMemory, clock: Clock
) -> None:
    from episodic.scratch.service import remember_outcomes
    from kits.distill_builders import bash, trajectory

    event = bash("npx tsc --noEmit", "error TS2304: Cannot find name 'UserContext'.", exit_code=2)
    assert event.tool is not None
    event.tool.timestamp = datetime(2099, 1, 1, tzinfo=UTC)
    (record,) = remember_outcomes(scratch, TEAM, trajectory(event)).records
    assert record.created_at == NOW  # clamped to the time it was read (the file's time is unknown here)
    assert len(recall_similar(scratch, TEAM, "cannot find name UserContext").hits) == 1
    clock.now = NOW + timedelta(days=7, hours=1)
    assert recall_similar(scratch, TEAM, "cannot find name UserContext").hits == []
    assert sweep(scratch) == 1 and scratch.store.count(TEAM) == 0


def test_a_record_dated_in_the_future_is_never_recalled(scratch: ScratchMemory) -> None:
    put(scratch, AUTH[0][0], age_days=-2)  # an older version stored the transcript's own future time
    put(scratch, AUTH[0][0] + " again", age_days=-0.5)  # within the clock skew: a fast clock elsewhere
    assert [h.record.summary for h in recall_similar(scratch, TEAM, AUTH[0][0]).hits] == [
        AUTH[0][0] + " again"
    ]


def test_ttl_setting_is_bounded_to_3_to_14_days(tmp_path: Path) -> None:
    from episodic.kernel.errors import ConfigError

    for bad in (2, 15):
        with pytest.raises(ConfigError):
            load_settings(home=tmp_path, scratch_ttl_days=bad)
    assert load_settings(home=tmp_path).scratch_ttl_days == 7


def test_forgetting_a_session_deletes_its_records(scratch: ScratchMemory) -> None:
    put(scratch, AUTH[0][0], session="s1")
    put(scratch, AUTH[1][0], session="s2", tool="patch")
    assert forget_session(scratch, TEAM, "s1") == 1
    assert [h.record.session_id for h in recall_similar(scratch, TEAM, AUTH[0][0]).hits] == ["s2"]


@pytest.mark.parametrize("k", [0, 2, 6])
def test_k_outside_3_to_5_is_refused(scratch: ScratchMemory, k: int) -> None:
    with pytest.raises(InvalidArgumentError):
        recall_similar(scratch, TEAM, "fix the build", k)


def test_a_failing_store_returns_nothing_and_is_counted(scratch: ScratchMemory, monkeypatch, capsys) -> None:  # type: ignore[no-untyped-def]
    def broken(*args: object, **kwargs: object) -> list[ScratchHit]:
        raise ConnectionError("collection unreachable")

    monkeypatch.setattr(scratch.store, "query", broken)
    before = recall_module.degraded["error"]
    found = recall_similar(scratch, TEAM, "fix the auth middleware")
    assert (found.hits, found.degraded.startswith("error: ConnectionError")) == ([], True)
    assert recall_module.degraded["error"] == before + 1
    assert (
        capsys.readouterr().out == ""
    )  # the embedded metric is printed by a Lambda only (stdout may be MCP)


def test_a_slow_store_is_cut_at_the_deadline(scratch: ScratchMemory, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    release = threading.Event()

    def stalled(*args: object, **kwargs: object) -> list[ScratchHit]:
        release.wait(60)
        return []

    monkeypatch.setattr(scratch.store, "query", stalled)
    started = time.monotonic()
    found = recall_similar(scratch, TEAM, "fix the auth middleware", deadline_seconds=0.2)
    elapsed = time.monotonic() - started
    release.set()
    assert found.degraded == "timeout" and found.hits == []
    assert elapsed < 20.0  # the deadline (0.2 s) with generous slack for a loaded machine; the store: 60 s


def _hit(summary: str, outcome: str = "fail", session: str = "s_0918") -> ScratchHit:
    record = ScratchRecord(tenant_id=TEAM, session_id=session, tool_name="typecheck", outcome=ToolOutcome(outcome),
                           summary=summary, created_at=NOW)  # fmt: skip
    return ScratchHit(record=record, similarity=0.9)


def test_the_packed_block_follows_the_rules() -> None:
    hits = [_hit("typecheck failed on middleware.ts — missing UserContext after rename " + "x" * 120)] + [
        _hit(f"patch rejected — import cycle auth users {i}", "ok", f"s_09{i}") for i in range(7)
    ]
    block = pack_recalls(hits, 7)
    lines = block.splitlines()
    assert lines[0] == heading(7) == "## Prior similar attempts (tenant-scoped, last 7d)"
    assert (
        lines[-1]
        == CLOSING
        == "Use these as hints; verify against the current tree before re-applying patches."
    )
    bullets = lines[1:-1]
    assert 1 <= len(bullets) <= 5
    assert all(len(b) <= MAX_BULLET_CHARS for b in bullets)
    assert bullets[0].startswith("- [fail][typecheck] typecheck failed on middleware.ts") and bullets[
        0
    ].endswith("(session s_0918)")
    assert len(block) <= 300 * 4


def test_the_token_cap_drops_bullets_never_the_closing_line() -> None:
    hits = [_hit("y" * 180, session=f"s{i}") for i in range(5)]
    block = pack_recalls(hits, 7, max_tokens=120)
    assert block.endswith(CLOSING) and len(block) <= 480 and block.count("\n- ") >= 1
    assert pack_recalls(hits, 7, max_tokens=10) == ""


def test_unit_vectors_only(scratch: ScratchMemory) -> None:
    with pytest.raises(InvalidArgumentError):
        scratch.store.query(TEAM, np.zeros(384), 3, NOW, scratch.manifest)
