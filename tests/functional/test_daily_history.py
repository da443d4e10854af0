"""Daily commands through the `episodic` entry point on small indexed sessions: session-id prefixes (unique,
ambiguous, other tenant), `resume NAME`, links carrying the session's name, threads with tool uses and web
searches and an explicit "N more sessions", decisions tied to the topic, and a vetoed card out of every
history answer (CLI and the MCP history tools)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kits.session_builder import SessionWriter
from test_history_cli import ok, run

A = "aaaa1111-0000-4000-8000-000000000001"
B = "aaaa1111-0000-4000-8000-000000000002"
C = "cccc2222-0000-4000-8000-000000000003"
D = "dddd3333-0000-4000-8000-000000000004"
NAME_A = "Pre-push hook default to yes with skip option"
TOKEN = "ghp_" + "Zq8" * 12  # a GitHub token shape the scrubber redacts
DECIDED = "We decided to keep the hook prompt defaulting to yes, with SKIP_PREPUSH=1 to skip it."


def _sessions(folder: Path) -> None:
    (
        SessionWriter(A, "2026-03-02")
        .title("pre-push hook asks")
        .prompt("the pre-push hook asks before every push; make it default to yes and add a way to skip it")
        .tool("Bash", {"command": f"git push --dry-run # token {TOKEN}\nsecond line"}, "ok")
        .tool("WebSearch", {"query": "git pre-push hook skip environment variable"}, "results")
        .tool("Edit", {"file_path": "/home/dev/webshop/.githooks/pre-push", "old_string": "a"}, "done")
        .tool("Bash", {"command": "npm test"}, "1 failing", error=True)
        .reply(DECIDED + " You should also tell the team.")
        .title(NAME_A)
        .write(folder)
    )
    (
        SessionWriter(B, "2026-03-05")
        .title("Pre-push hook flaky on CI")
        .prompt("the pre-push hook is flaky on CI, it hangs waiting for an answer")
        .tool("Bash", {"command": "git push"}, "hangs")
        .reply(DECIDED)
        .write(folder)
    )
    (
        SessionWriter(C, "2026-03-09", cwd="/home/dev/infra")
        .prompt("the commit hook prints its banner twice")
        .reply("It is sourced twice from the profile.")
        .prompt("unrelated: the docker build cache is cold on every run")
        .reply("We decided to use buildx with a registry cache for docker.")
        .write(folder)
    )
    (
        SessionWriter(D, "2026-03-11", cwd="/home/dev/shop")
        .prompt("the cart total rounds the price wrong by one cent")
        .tool("Read", {"file_path": "/home/dev/shop/src/cart.ts"}, "export function total() {}")
        .tool("Edit", {"file_path": "/home/dev/shop/src/cart.ts", "old_string": "a", "new_string": "b"}, "ok")
        .tool("Bash", {"command": "npm test"}, "Tests: 12 passed, 12 total")
        .reply("Fixed: the total now rounds once, at the end.")
        .write(folder)
    )


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("daily")
    _sessions(root / "sessions")
    home = root / "episodic-home"
    home.mkdir()
    (root / "user-home").mkdir()
    report = json.loads(ok(["index", str(root / "sessions"), "--json"], home))
    assert report["indexed"] == 4, report
    return home


def test_a_unique_prefix_works_everywhere_an_id_is_typed(home: Path) -> None:
    assert json.loads(ok(["show", "cccc22", "--json"], home))["session_id"] == C
    assert json.loads(ok(["history", "show", "cccc2222"], home))["session_id"] == C
    assert ok(["resume", "cccc22", "--print"], home).strip().endswith(f"claude --resume {C}")
    query = json.loads(ok(["history", "query", "docker", "--session", "cccc22", "--json"], home))["results"]
    assert [r["session_id"] for r in query] == [C]
    assert C in ok(["link", "cccc22", "ENT-31"], home)
    assert [x["item"] for x in json.loads(ok(["link", "show", "cccc22", "--json"], home))["links"]] == [
        "ENT-31"
    ]


def test_an_ambiguous_prefix_lists_the_matches_and_an_unknown_one_says_no_episode(home: Path) -> None:
    for args in (["show", "aaaa1111"], ["history", "show", "aaaa11"], ["resume", "aaaa1111-0000", "--print"]):
        done = run(args, home)
        assert done.returncode == 1, args
        assert "matches several sessions" in done.stderr and A in done.stderr and B in done.stderr
    assert json.loads(ok(["show", A[:-1] + "1", "--json"], home))["session_id"] == A
    missing = run(["show", "eeee00"], home)
    assert missing.returncode == 1 and "no episode with session id 'eeee00'" in missing.stderr
    short = run(["show", "cccc2"], home)  # under six characters: not taken as a prefix
    assert short.returncode == 1 and "no episode" in short.stderr


def test_prefixes_stay_within_the_tenant(home: Path) -> None:
    other = run(["show", "cccc22", "--tenant", "someone-else"], home)
    assert other.returncode == 1 and "no episode" in other.stderr and C not in other.stderr
    assert run(["history", "show", "aaaa11", "--tenant", "someone-else"], home).returncode == 1


def test_resume_by_name_exact_prefix_or_listed(home: Path) -> None:
    assert ok(["resume", "--print", NAME_A], home).strip().endswith(f"claude --resume {A}")
    assert ok(["resume", "--print", "PRE-PUSH hook default"], home).strip().endswith(A)
    assert ok(["resume", "Pre-push hook default to yes", "--print"], home).strip().endswith(A)  # README
    several = run(["resume", "--print", "pre-push hook"], home)
    assert several.returncode == 1 and A in several.stderr and B in several.stderr
    assert NAME_A in several.stderr and "Pre-push hook flaky on CI" in several.stderr
    unknown = run(["resume", "--print", "no such session name"], home)
    assert unknown.returncode == 1 and "no session with id or name" in unknown.stderr


def test_a_link_carries_the_sessions_name(home: Path) -> None:
    assert NAME_A in ok(["link", A, "#77"], home)
    links = json.loads(ok(["link", "show", "#77", "--json"], home))["links"]
    assert [(x["session_id"], x["session_name"]) for x in links] == [(A, NAME_A)]
    assert NAME_A in ok(["link", "show", "#77"], home)


def test_thread_shows_tool_uses_and_web_searches_in_order_scrubbed(home: Path) -> None:
    text = ok(["history", "thread", "pre-push"], home)
    lines = [line.strip() for line in text.splitlines()]
    start = lines.index(next(x for x in lines if x.startswith("- Bash git push --dry-run")))
    assert lines[start + 1] == "- web search: git pre-push hook skip environment variable"
    assert lines[start + 2] == "- Edit /home/dev/webshop/.githooks/pre-push"
    assert lines[start + 3] == "- Bash npm test (error)"
    assert TOKEN not in text and "second line" not in text
    record = json.loads(ok(["history", "show", A], home))
    assert [t["tool"] for t in record["turns"][0]["tools"]] == ["Bash", "WebSearch", "Edit", "Bash"]


def test_thread_says_how_many_more_sessions_when_cut(home: Path) -> None:
    doc = json.loads(ok(["history", "thread", "hook", "--limit", "1", "--json"], home))
    assert len(doc["sessions"]) == 1 and doc["more_sessions"] == 2 and doc["truncated"] is True
    assert "2 more session(s) matched and are not shown" in doc["text"]
    whole = json.loads(ok(["history", "thread", "hook", "--json"], home))
    assert whole["more_sessions"] == 0 and "more session" not in whole["text"]


def test_decisions_are_about_the_topic_deduplicated_with_session_and_date(home: Path) -> None:
    found = json.loads(ok(["history", "decisions", "hook", "--json"], home))["decisions"]
    texts = [d["decision"] for d in found]
    assert texts.count(DECIDED) == 1  # said in two sessions, listed once (the newest)
    first = next(d for d in found if d["decision"] == DECIDED)
    assert (first["session_id"], first["date"]) == (B, "2026-03-05")
    assert not any("buildx" in t for t in texts)  # a decision in C's turn about docker, not about the hook
    assert not any("should also tell" in t for t in texts)  # "should" is no decision
    text = ok(["history", "decisions", "hook"], home)
    assert DECIDED in text and "One decision about 'hook' was found." in text


def test_a_vetoed_cards_problem_and_decisions_leave_history_answers(home: Path, tmp_path: Path) -> None:
    card = json.loads(ok(["show", "cccc22", "--json"], home))["card"]
    card.update(
        problem="ZEBRA problem of the commit hook banner", key_decisions=["ZEBRA decision on the hook"]
    )
    folder = tmp_path / "cards"
    folder.mkdir()
    (folder / f"{C}.json").write_text(json.dumps(card), encoding="utf-8")
    ok(["cards", "import", str(folder)], home)
    assert "ZEBRA decision" in ok(["history", "thread", "hook"], home)
    assert "ZEBRA decision" in ok(["history", "decisions", "hook"], home)

    _veto(home, C)
    for args in (
        ["history", "thread", "hook"],
        ["history", "decisions", "hook"],
        ["history", "search", "hook"],
    ):
        assert "ZEBRA" not in ok(args, home), args
    assert "ZEBRA" not in ok(["history", "timeline"], home)
    mcp = _mcp_texts(home, {"history_thread": {"topic": "hook"}, "history_decisions": {"topic": "hook"}})
    assert "ZEBRA" not in mcp and "banner" in mcp  # the session's own words stay; the vetoed card goes


def _veto(home: Path, session_id: str) -> None:
    from episodic.mcp.tools import default_registry

    memory = _memory(home)
    result = _call(
        default_registry(memory),
        "review_episode",
        {"session_id": session_id[:6], "action": "veto", "reason": "wrong"},
    )
    assert result["isError"] is False, result


def _mcp_texts(home: Path, calls: dict[str, dict[str, object]]) -> str:
    from episodic.mcp.tools import default_registry

    registry = default_registry(_memory(home))
    return json.dumps([_call(registry, name, args) for name, args in calls.items()])


def _memory(home: Path):  # type: ignore[no-untyped-def]
    from episodic.assembly import build_memory
    from episodic.kernel.settings import load_settings

    return build_memory(load_settings(home=home, embedder="hashing"))


def _call(registry, name: str, args: dict[str, object]) -> dict[str, object]:  # type: ignore[no-untyped-def]
    from episodic.kernel.auth import READ, WRITE, Principal
    from episodic.kernel.models import LOCAL_TENANT

    principal = Principal(tenant_id=LOCAL_TENANT, scopes=frozenset({READ, WRITE}))
    return registry.call(name, args, principal)  # type: ignore[no-any-return]


ORIGIN = ("project", "agent", "cwd", "git_branch", "started_at", "ended_at", "source_sha256", "source_path")


def _cards(home: Path) -> dict[str, dict[str, object]]:
    """What `show ID --json` prints for A, B and D (the same call and dump), read in this process: three
    `episodic` processes less per look, three looks in the export test."""
    from episodic.core.search import get_episode
    from episodic.kernel.models import LOCAL_TENANT

    memory = _memory(home)
    return {sid: get_episode(memory, LOCAL_TENANT, sid).model_dump(mode="json") for sid in (A, B, D)}


def test_cards_export_then_import_is_lossless(home: Path, tmp_path: Path) -> None:
    before = _cards(home)
    assert json.loads(ok(["show", D, "--json"], home)) == before[D]  # the look is the command's output
    assert before[D]["card"]["outcome"] == "verified" and before[D]["source_path"].endswith(f"{D}.jsonl")  # type: ignore[index,union-attr]
    out = tmp_path / "cards"
    assert "exported 4 cards" in ok(["cards", "export", str(out)], home)

    # the sessions were indexed from a folder outside the agents' roots: the export says where
    report = json.loads(ok(["cards", "import", str(out), "--json"], home))
    assert (report["imported"], report["downgraded"], report["without_transcript"], report["invalid"]) == (
        4,
        0,
        0,
        [],
    )
    after = _cards(home)
    for sid in (A, B, D):
        assert after[sid]["card"] == before[sid]["card"], sid
        assert {k: after[sid][k] for k in ORIGIN} == {k: before[sid][k] for k in ORIGIN}, sid

    # the transcripts gone: an unchanged card keeps its outcome where the index holds its source hash
    sessions = home.parent / "sessions"
    sessions.rename(home.parent / "sessions-away")
    try:
        line = ok(["cards", "import", str(out)], home)
        assert "outcome downgraded 0, no transcript found 4 (outcome kept for 1 unchanged)" in line, line
        again = _cards(home)
        assert again[D]["card"] == before[D]["card"]
        assert {k: again[D][k] for k in ORIGIN} == {k: before[D][k] for k in ORIGIN}

        edited = json.loads((out / f"{D}.json").read_text())  # a changed card is checked again: no evidence
        edited["insight"] = "Round once, at the end, never per line."
        (out / f"{D}.json").write_text(json.dumps(edited))
        report = json.loads(ok(["cards", "import", str(out), "--json"], home))
        assert (report["downgraded"], report["outcome_kept"]) == (1, 0)
        assert json.loads(ok(["show", D, "--json"], home))["card"]["outcome"] == "unverified"
    finally:
        (home.parent / "sessions-away").rename(sessions)


CODEX = Path(__file__).resolve().parents[1] / "fixtures" / "agents" / "codex-0.171-answered-rollout.jsonl"


def _viewer(home: Path):  # type: ignore[no-untyped-def]
    from episodic.kernel.models import LOCAL_TENANT
    from episodic.ui.data import LocalSource
    from episodic.ui.views import Viewer

    return Viewer(LocalSource(_memory(home)), LOCAL_TENANT, eval_dir=home / "eval", dream_dir=home / "dream")


def test_the_viewer_reads_transcripts_where_each_session_was_indexed_from(home: Path) -> None:
    codex_folder = home.parent / "codex-sessions"
    codex_folder.mkdir(exist_ok=True)
    (codex_folder / CODEX.name).write_bytes(CODEX.read_bytes())
    assert json.loads(ok(["index", str(codex_folder), "--json"], home))["agents"] == {"codex": 1}
    viewer = _viewer(home)
    codex = next(r for r in viewer.source.records("local") if r.agent == "codex")
    for record_id in (D, codex.session_id):  # a folder outside ~/.claude/projects; a Codex rollout
        page = viewer.route("GET", f"/episode/{record_id}", {}, {}).body.decode()
        assert "transcript was not found" not in page, record_id
        assert 'class="survey"' in page, record_id
    assert "npm test passed" in viewer.route("GET", f"/episode/{D}", {}, {}).body.decode()
    moved = viewer.route("GET", f"/episode/{D[:8]}", {}, {})  # a unique prefix goes to the episode
    assert moved.status == 303 and moved.headers["Location"] == f"/episode/{D}"
    ambiguous = viewer.route("GET", "/episode/aaaa1111", {}, {})
    assert ambiguous.status == 404 and A in ambiguous.body.decode()
    record = viewer.source.get("local", D)
    row = str(viewer.env.get_template("_card.html").module.row(record, 0.72))  # type: ignore[attr-defined]
    assert "similarity 0.72</span> · project shop" in row  # not "similarity 0.72· project"


def test_the_refusal_page_is_styled_without_the_secret(home: Path) -> None:
    import urllib.error
    import urllib.request

    from episodic.ui.server import BackgroundUi

    with BackgroundUi(_viewer(home)) as ui:
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(ui.base + "/", timeout=10)
        assert refused.value.code == 403 and "/static/app.css" in refused.value.read().decode()
        with urllib.request.urlopen(ui.base + "/static/app.css", timeout=10) as css:  # no secret needed
            assert css.status == 200 and b"overflow-wrap: anywhere" in css.read()
        with pytest.raises(urllib.error.HTTPError) as data:  # data pages still need it
            urllib.request.urlopen(ui.base + f"/episode/{D}", timeout=10)
        assert data.value.code == 403


def test_a_vetoed_card_leaves_the_dream_sources_too(home: Path) -> None:
    from datetime import UTC, datetime

    from episodic.dream.source import records_in

    memory = _memory(home)
    if memory.store.get("local", C).review_state.value != "vetoed":  # type: ignore[union-attr]
        _veto(home, C)  # run alone, not after the veto test
    chosen = records_in(
        memory.store, "local", datetime(2026, 1, 1, tzinfo=UTC), datetime(2027, 1, 1, tzinfo=UTC)
    )
    ids = {r.session_id for r in chosen}
    assert C not in ids and {A, B, D} <= ids


def test_history_records_written_before_tool_uses_still_load() -> None:
    from episodic.history.models import HistoryRecord

    old = {
        "tenant_id": "local",
        "session_id": "old-1",
        "source_sha256": "a" * 64,
        "turns": [{"index": 0, "prompt": "the hook prints twice", "reply": "fixed"}],
        "tools_used": {"Bash": 2},
        "schema_version": 1,
    }
    record = HistoryRecord.model_validate_json(json.dumps(old))
    assert record.turns[0].tools == [] and record.tools_used == {"Bash": 2}


def test_a_long_turn_keeps_its_web_searches_and_counts_the_tool_uses_left_out() -> None:
    from episodic.history.models import ToolUse
    from episodic.history.views import tool_lines

    uses = [ToolUse(tool="Read", target=f"src/f{i}.py") for i in range(20)]
    uses.insert(15, ToolUse(tool="WebSearch", target="vite proxy websocket", web=True))
    lines = tool_lines(uses, most=12)
    assert lines[:12] == [f"  - Read src/f{i}.py" for i in range(12)]
    assert lines[12] == "  - web search: vite proxy websocket"
    assert (
        lines[13] == "  - … 8 more tool use(s): `episodic history show` lists them all" and len(lines) == 14
    )
