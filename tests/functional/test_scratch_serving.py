"""Scratch memory served: the recall_similar MCP tool (tenant from the credential) and the prompt hook
adding "Prior similar attempts" after the episodes, inside the same marker, within the budget; off by a
setting. Plus the write path: indexing a session stores its outcome records, and the CLI commands."""

from __future__ import annotations

import json
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

from click.testing import CliRunner
from episodic.assembly.features import scratch_part
from episodic.aws.clients import AwsClients
from episodic.cli import build_cli
from episodic.kernel.auth import LocalTokenStore, Principal
from episodic.mcp.http_server import BackgroundServer, build_endpoint
from episodic.mcp.tools import default_registry
from episodic.plumbing.marker import INJECTED_CLOSE, INJECTED_OPEN, strip_injected
from episodic.scratch.models import ScratchRecord, ToolOutcome
from episodic.scratch.service import scratch_of
from kits.mcp_testkit import ALPHA, BETA, EPISODES, build_memory, populate, settings_for
from unit.hooks.test_hook_faults import PROMPT, hook_input, log_lines, run_hook

OUTCOMES = [
    (
        "tests",
        "fail",
        "tests failed on test_fixtures.py — fixture 'db' not found; after moving conftest into a subpackage",
    ),
    (
        "tests",
        "ok",
        "tests passed after failing on test_fixtures.py — was: fixture 'db' not found; after editing conftest.py",
    ),
]


def scratch_memory(home: Path):  # type: ignore[no-untyped-def]
    settings = settings_for(home)
    memory = build_memory(settings)
    memory.parts["scratch"] = scratch_part(settings, memory, AwsClients(settings))
    assert scratch_of(memory) is not None
    now = datetime.now(UTC)
    records = [
        ScratchRecord(
            tenant_id=ALPHA,
            session_id=f"s_091{i}",
            tool_name=tool,
            outcome=ToolOutcome(outcome),
            summary=summary,
            created_at=now - timedelta(days=1),
        )
        for i, (tool, outcome, summary) in enumerate(OUTCOMES)
    ]
    scratch_of(memory).store.add(  # type: ignore[union-attr]
        records,
        memory.embedder.embed([r.summary for r in records]),
        scratch_of(memory).manifest,  # type: ignore[union-attr]
    )
    return settings, memory


def test_the_mcp_tool_recalls_the_callers_tenant_only(tmp_path: Path) -> None:
    _, memory = scratch_memory(tmp_path)
    registry = default_registry(memory)
    args = {"query": "pytest says fixture db not found after I moved the conftest, fix it"}
    mine = registry.call("recall_similar", args, Principal(ALPHA))
    theirs = registry.call("recall_similar", args, Principal(BETA))
    assert not mine["isError"] and mine["structuredContent"]["task"] == "repair"
    assert [r["outcome"] for r in mine["structuredContent"]["results"]] == ["fail", "ok"]  # fail first
    text = mine["content"][0]["text"]
    assert text.startswith("## Prior similar attempts (tenant-scoped, last 7d)\n- [fail][tests] ")
    assert "(session s_0910)" in text
    assert (
        theirs["structuredContent"]["results"] == []
        and "No sufficiently similar" in theirs["content"][0]["text"]
    )
    bad = registry.call("recall_similar", {**args, "k": 9}, Principal(ALPHA))
    assert bad["isError"]


def test_the_hook_adds_prior_attempts_after_the_episodes_inside_the_marker(tmp_path: Path) -> None:
    settings, memory = scratch_memory(tmp_path / "server")
    populate(memory)
    token = LocalTokenStore(settings.tokens_path).add(ALPHA)
    home = tmp_path / "home"
    with BackgroundServer(build_endpoint(settings, memory)) as server:
        code, stdout, _ = run_hook(home, hook_input(PROMPT), server.url, token)
        off_code, off_stdout, _ = run_hook(
            home, hook_input(PROMPT), server.url, token, EPISODIC_HOOK_SCRATCH="false"
        )
    assert code == 0 and off_code == 0
    context = json.loads(stdout)["hookSpecificOutput"]["additionalContext"]
    assert context.startswith(INJECTED_OPEN) and context.endswith(INJECTED_CLOSE)
    assert strip_injected(context) == ("", 1)  # one marker around both: never re-indexed
    assert len(context) <= 4000
    episode_at = context.index("A close past match")
    scratch_at = context.index("## Prior similar attempts (tenant-scoped, last 7d)")
    assert episode_at < scratch_at
    assert "Use these as hints; verify against the current tree before re-applying patches." in context
    off_context = json.loads(off_stdout)["hookSpecificOutput"]["additionalContext"]
    assert "Prior similar attempts" not in off_context and "A close past match" in off_context
    assert "+ prior similar attempts" in log_lines(home)[0]


def _session_file(folder: Path) -> Path:
    """A Claude Code session whose typecheck fails, then passes after an edit (with a planted secret)."""
    stamp = (datetime.now(UTC) - timedelta(hours=2)).isoformat().replace("+00:00", "Z")
    base = {"sessionId": "sess-scratch-1", "cwd": "/home/dev/shop", "timestamp": stamp, "version": "2.1.0"}
    lines = [
        {**base, "type": "user", "uuid": "u1", "message": {"role": "user", "content": "rename UserContext and fix the type errors in the auth middleware"}},
        {**base, "type": "assistant", "uuid": "a1", "parentUuid": "u1", "message": {"role": "assistant", "content": [
            {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "npx tsc --noEmit"}}]}},
        {**base, "type": "user", "uuid": "u2", "parentUuid": "a1", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "is_error": True,
             "content": "Exit code 2\nsrc/auth/middleware.ts(12,5): error TS2304: Cannot find name 'UserContext'. key AKIAIOSFODNN7EXAMPLE"}]}},
        {**base, "type": "assistant", "uuid": "a2", "parentUuid": "u2", "message": {"role": "assistant", "content": [
            {"type": "tool_use", "id": "t2", "name": "Edit", "input": {"file_path": "/home/dev/shop/src/auth/middleware.ts", "old_string": "UserContext", "new_string": "RequestUser"}}]}},
        {**base, "type": "user", "uuid": "u3", "parentUuid": "a2", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t2", "content": "The file has been updated."}]}},
        {**base, "type": "assistant", "uuid": "a3", "parentUuid": "u3", "message": {"role": "assistant", "content": [
            {"type": "tool_use", "id": "t3", "name": "Bash", "input": {"command": "npx tsc --noEmit"}}]}},
        {**base, "type": "user", "uuid": "u4", "parentUuid": "a3", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t3", "content": ""}]}},
        {**base, "type": "assistant", "uuid": "a4", "parentUuid": "u4", "message": {"role": "assistant", "content": [{"type": "text", "text": "The typecheck passes now."}]}},
    ]  # fmt: skip
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "sess-scratch-1.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")
    return path


def test_indexing_stores_the_sessions_outcomes_and_the_cli_recalls_sweeps_and_forgets(
    tmp_path: Path, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    home = tmp_path / "home"
    monkeypatch.setenv("EPISODIC_HOME", str(home))
    monkeypatch.setenv("EPISODIC_EMBEDDER", "hashing")
    transcripts = tmp_path / "projects" / "-home-dev-shop"
    _session_file(transcripts)
    runner = CliRunner()
    indexed = runner.invoke(build_cli(), ["index", str(transcripts), "--json"])
    assert indexed.exit_code == 0, indexed.output
    extracted = runner.invoke(build_cli(), ["scratch", "extract", str(transcripts), "--json"])
    report = json.loads(extracted.output)
    assert report["records"] == 2 and report["stored_records_failing_check"] == 0
    assert all("AKIA" not in s for s in report["samples"])
    recalled = runner.invoke(
        build_cli(), ["scratch", "recall", "fix the typecheck error: cannot find name UserContext"]
    )
    assert recalled.exit_code == 0, recalled.output
    assert (
        "[fail][typecheck] typecheck failed — error TS2304: Cannot find name 'UserContext'."
        in recalled.output
    )
    assert "AKIA" not in recalled.output
    swept = runner.invoke(build_cli(), ["scratch", "sweep"])
    assert swept.exit_code == 0 and "swept 0 expired" in swept.output and "2 kept" in swept.output
    forgot = runner.invoke(build_cli(), ["scratch", "forget", "sess-scratch-1"])
    assert forgot.exit_code == 0 and "the card and 2 outcome record(s)" in forgot.output, forgot.output
    empty = runner.invoke(
        build_cli(), ["scratch", "recall", "fix the typecheck error: cannot find name UserContext"]
    )
    assert "No similar tool outcome." in empty.output


def test_the_session_end_worker_stores_the_ended_sessions_outcomes(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from episodic.hooks.session_end import distill_session
    from episodic.kernel.settings import load_settings
    from episodic.scratch.sqlite_store import SCRATCH_FILE, SQLiteScratchStore

    home = tmp_path / "home"
    monkeypatch.setenv("EPISODIC_HOME", str(home))
    monkeypatch.setenv("EPISODIC_EMBEDDER", "hashing")
    monkeypatch.delenv("EPISODIC_DISTILLING", raising=False)
    transcript = _session_file(tmp_path / "projects" / "-home-dev-shop")
    message = distill_session(load_settings(), str(transcript))
    assert message.startswith("heuristic card only")
    store = SQLiteScratchStore(home / SCRATCH_FILE)
    assert store.count() == 2  # the failing typecheck and its pass after the edit


def _stall(monkeypatch, release: threading.Event) -> None:  # type: ignore[no-untyped-def]
    from episodic.scratch.sqlite_store import SQLiteScratchStore

    def stalled(*args: object, **kwargs: object) -> list[object]:
        release.wait(10)
        return []

    monkeypatch.setattr(SQLiteScratchStore, "query", stalled)


def test_a_recall_timeout_is_reported_as_a_timeout_over_mcp(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    _, memory = scratch_memory(tmp_path)
    release = threading.Event()
    _stall(monkeypatch, release)
    try:
        args = {
            "query": "pytest says fixture db not found after I moved the conftest",
            "deadline_seconds": 0.2,
        }
        answer = default_registry(memory).call("recall_similar", args, Principal(ALPHA))
    finally:
        release.set()
    text = answer["content"][0]["text"]
    assert answer["isError"] is True and "timed out after 0.2 s" in text
    assert "No sufficiently similar" not in text and "real answer" not in text


def test_a_recall_timeout_is_reported_as_a_timeout_by_the_cli(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("EPISODIC_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("EPISODIC_EMBEDDER", "hashing")
    monkeypatch.setenv("EPISODIC_SCRATCH_AGENT_DEADLINE_SECONDS", "0.2")
    release = threading.Event()
    _stall(monkeypatch, release)
    try:
        done = CliRunner().invoke(
            build_cli(), ["scratch", "recall", "fix the typecheck error in the middleware"]
        )
        as_json = CliRunner().invoke(
            build_cli(), ["scratch", "recall", "fix the typecheck error in the middleware", "--json"]
        )
    finally:
        release.set()
    assert done.exit_code == 1 and "timed out after 0.2 s" in done.output
    assert "No similar tool outcome" not in done.output
    assert as_json.exit_code == 1 and json.loads(as_json.output)["degraded"] == "timeout"


def test_the_agents_deadline_is_longer_than_the_hooks() -> None:
    from episodic.kernel.settings import Settings

    fields = Settings.model_fields
    assert fields["scratch_agent_deadline_seconds"].default > fields["scratch_deadline_seconds"].default


def test_the_hook_never_adds_a_vetoed_sessions_attempts_nor_unapproved_ones_under_review(
    tmp_path: Path,
) -> None:
    """Issue 52 item 2: a veto removes a session from every face, scratch recall included; under
    `review_required` only an approved session's attempts are added."""
    from episodic.cards.review import review_episode

    settings, memory = scratch_memory(tmp_path / "server")
    populate(memory, [(ALPHA, "s_0910", "shop", "2026-01-12", EPISODES[0][4])])  # its card
    token = LocalTokenStore(settings.tokens_path).add(ALPHA)
    home = tmp_path / "home"
    attempt = "(session s_0910)"  # the scratch line's reference (an episode's reads "(session s_0910; …")

    def context(**env: str) -> str:
        out = run_hook(home, hook_input(PROMPT), server.url, token, **env)[1]
        return json.loads(out)["hookSpecificOutput"]["additionalContext"] if out else ""

    required = {"EPISODIC_REVIEW_REQUIRED": "true"}
    with BackgroundServer(build_endpoint(settings, memory)) as server:
        assert attempt in context()
        review_episode(memory, ALPHA, "s_0910", "veto", reason="the attempt it records is misleading")
        assert attempt not in context()
        review_episode(memory, ALPHA, "s_0910", "restore")  # unreviewed again
        assert attempt in context() and attempt not in context(**required)
        review_episode(memory, ALPHA, "s_0910", "approve")
        assert attempt in context(**required)
