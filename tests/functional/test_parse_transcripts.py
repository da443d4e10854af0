"""The parser over every real transcript in ../shared/transcripts (skipped when absent)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from episodic.kernel.models import NotEpisode, SessionSource, Trajectory
from episodic.parse.claude_code import ClaudeCodeSource
from episodic.scrub import default_scrubber
from episodic.sessions.survey import estimate_tokens, render_survey

pytestmark = pytest.mark.transcripts


@pytest.fixture(scope="module")
def parsed(transcripts_dir: Path) -> dict[str, tuple[SessionSource, Trajectory | NotEpisode]]:
    source = ClaudeCodeSource(default_scrubber(), roots=[])
    out = {}
    for found in source.discover([str(transcripts_dir)]):
        rel = str(Path(found.main_path).relative_to(transcripts_dir))
        out[rel] = (found, source.load(found))
    return out


def _traj(parsed: dict, rel: str) -> Trajectory:
    result = parsed[rel][1]
    assert isinstance(result, Trajectory), result
    return result


def test_session_counts(parsed: dict) -> None:
    entire = {k: v for k, v in parsed.items() if k.startswith("entireio__cli/")}
    assert len(entire) == 151
    entire_reasons = Counter(r.reason for _, r in entire.values() if isinstance(r, NotEpisode))
    assert entire_reasons == {"not-claude-code": 4}  # four Gemini CLI sessions saved as pretty JSON
    others = {k: v for k, v in parsed.items() if not k.startswith(("entireio__cli/", "codex/"))}
    assert sorted(others) == sorted(
        [
            "d-kimuson__claude-code-viewer/5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl",
            "d-kimuson__claude-code-viewer/fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl",
            "kfischer-okarin__scripts-and-tools/-Users-user-project/b3edadab-bca0-4054-9b41-f7ffa6941260.jsonl",
            "marot__spotter/4d5611e5-241a-462a-8d15-5122611a9569.jsonl",
            "marot__spotter/ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl",
            "marot__spotter/short.jsonl",
            "marot__spotter/tool_heavy.jsonl",
            "obra__episodic-memory/large-conversation.jsonl",
            "obra__episodic-memory/long-conversation.jsonl",
            "obra__episodic-memory/medium-conversation.jsonl",
            "obra__episodic-memory/short-conversation.jsonl",
            "obra__episodic-memory/tiny-conversation.jsonl",
            "randlee__claude-history/session.jsonl",
        ]
    )
    codex = [r for k, (_, r) in parsed.items() if k.startswith("codex/")]
    assert len(codex) == 2 and all(isinstance(r, NotEpisode) and r.reason == "not-claude-code" for r in codex)
    assert not any("/agent-" in k for k in parsed)  # subagents belong to parents


def test_not_episodes(parsed: dict) -> None:
    assert parsed["obra__episodic-memory/short-conversation.jsonl"][1].reason == "memory-summariser"
    assert parsed["obra__episodic-memory/medium-conversation.jsonl"][1].reason == "snapshot-only"


def test_subagent_layouts_fold(parsed: dict) -> None:
    marot = _traj(parsed, "marot__spotter/4d5611e5-241a-462a-8d15-5122611a9569.jsonl")
    assert marot.subagents == ["a2898e3"]
    assert [Path(p).name for p in marot.source.skipped_agent_paths] == ["agent-acompact-e1f845.jsonl"]
    assert sum(1 for c in marot.tool_calls if c.agent_id == "a2898e3") == 33
    kfischer = _traj(
        parsed,
        "kfischer-okarin__scripts-and-tools/-Users-user-project/b3edadab-bca0-4054-9b41-f7ffa6941260.jsonl",
    )
    assert kfischer.subagents == ["a434715"] and any(c.agent_id == "a434715" for c in kfischer.tool_calls)
    randlee = _traj(parsed, "randlee__claude-history/session.jsonl")
    assert randlee.subagents == ["aae161c"]
    assert [Path(p).name for p in randlee.source.skipped_agent_paths] == [
        "agent-aprompt_suggestion-aafb27.jsonl"
    ]
    inline = _traj(parsed, "d-kimuson__claude-code-viewer/fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl")
    assert len(inline.subagents) == 5 and all(a.startswith("sidechain-") for a in inline.subagents)
    assert all(not e.text.startswith("You are") or e.agent_id for e in inline.events if e.kind == "prompt")


def test_compaction_is_followed(parsed: dict) -> None:
    marot = _traj(parsed, "marot__spotter/4d5611e5-241a-462a-8d15-5122611a9569.jsonl")
    assert marot.compact_summaries and "continued from a previous conversation" in marot.compact_summaries[0]
    assert not any("continued from a previous conversation" in p for p in marot.prompts)
    assert marot.closing_summary  # work after the boundary is kept


def test_split_assistant_messages_grouped(parsed: dict, transcripts_dir: Path) -> None:
    rel = "kfischer-okarin__scripts-and-tools/-Users-user-project/b3edadab-bca0-4054-9b41-f7ffa6941260.jsonl"
    traj = _traj(parsed, rel)
    ids = [
        json.loads(line)["message"]["id"]
        for line in (transcripts_dir / rel).read_text().splitlines()
        if '"type":"assistant"' in line and '"isSidechain":false' in line
    ]
    assert len(ids) > len(set(ids))  # the file does split responses over lines
    texts = [e for e in traj.events if e.kind == "assistant" and e.agent_id is None]
    assert len(texts) <= len(set(ids))


def test_every_file_parses_and_surveys(parsed: dict) -> None:
    for _, result in parsed.values():
        if isinstance(result, Trajectory):
            assert result.session_id and result.source_sha256
            text = render_survey(result, 6000)
            assert estimate_tokens(text) <= 6000 and "REQUEST:" in text


def test_dev_query_targets_are_loaded(parsed: dict, dev_queries: Path) -> None:
    loaded = {r.session_id for _, r in parsed.values() if isinstance(r, Trajectory)}
    targets = {
        json.loads(line)["session_id"] for line in dev_queries.read_text().splitlines() if line.strip()
    }
    assert targets and targets <= loaded
