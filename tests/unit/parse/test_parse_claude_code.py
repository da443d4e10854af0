"""The Claude Code parser on small hand-written fixtures: one test per gotcha of the format."""

from __future__ import annotations

from pathlib import Path

import pytest
from episodic.kernel.models import NotEpisode, SessionSource, Trajectory
from episodic.parse.claude_code import ClaudeCodeSource
from episodic.plumbing.marker import INJECTED_OPEN
from episodic.scrub import Scrubber, default_scrubber

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "transcripts"
PROJECT = FIXTURES / "projects" / "-home-dev-my-app-v2-0"
S1 = "11111111-1111-4111-8111-111111111111"
S2 = "22222222-2222-4222-8222-222222222222"
S3 = "33333333-3333-4333-8333-333333333333"


def scrubber() -> Scrubber:
    return default_scrubber()


@pytest.fixture(scope="module")
def source() -> ClaudeCodeSource:
    return ClaudeCodeSource(scrubber(), roots=[])


@pytest.fixture(scope="module")
def sessions(source: ClaudeCodeSource) -> dict[str, SessionSource]:
    return {s.session_key: s for s in source.discover([str(FIXTURES)])}


@pytest.fixture(scope="module")
def main(source: ClaudeCodeSource, sessions: dict[str, SessionSource]) -> Trajectory:
    result = source.load(sessions[S1])
    assert isinstance(result, Trajectory), result
    return result


def test_discovery_groups_every_layout_and_ignores_non_transcripts(
    sessions: dict[str, SessionSource],
) -> None:
    assert set(sessions) == {S1, S2, S3}
    s1 = sessions[S1]
    assert [Path(p).name for p in s1.subagent_paths] == ["agent-a1b2c3d.jsonl", "agent-a9f9f9f.jsonl"]
    assert [Path(p).name for p in s1.skipped_agent_paths] == ["agent-acompact-0f0f0f.jsonl"]
    assert [Path(p).name for p in sessions[S2].subagent_paths] == ["agent-a4444444.jsonl"]  # flat 2.0 layout
    s3 = sessions[S3]  # export layout: keyed by the sessionId inside session.jsonl
    assert Path(s3.main_path).name == "session.jsonl"
    assert [Path(p).name for p in s3.subagent_paths] == ["agent-a5555555.jsonl"]
    assert [Path(p).name for p in s3.skipped_agent_paths] == ["agent-aprompt_suggestion-123abc.jsonl"]
    every = {Path(p).name for s in sessions.values() for p in [*s.paths, *s.skipped_agent_paths]}
    assert not every & {"history.jsonl", "journal.jsonl", "notes.jsonl", "toolu_1.jsonl"}
    assert s1.total_bytes == sum(Path(p).stat().st_size for p in s1.paths)


def test_session_identity_comes_from_entries(main: Trajectory) -> None:
    assert main.session_id == S1
    assert main.cwd == "/home/dev/my app_v2.0"
    assert main.project == "my app_v2.0"  # from cwd, not the lossy folder name
    assert main.git_branch == "HEAD"  # detached HEAD kept as is
    assert main.entrypoint == "cli"
    assert main.started_at is not None and main.ended_at is not None and main.started_at < main.ended_at


def test_real_prompts_exclude_noise_and_keep_slash_commands_with_args(main: Trajectory) -> None:
    assert main.request == "The login test fails randomly on CI with a timeout."
    assert main.prompts == [
        "The login test fails randomly on CI with a timeout.",
        "Use a per-test event loop instead of widening the timeout",
        "also check the logout test",  # queued while the agent worked
        "/review the fixture change",
    ]
    for prompt in main.prompts:
        assert "system-reminder" not in prompt and "Caveat" not in prompt and "/clear" not in prompt


def test_injected_context_is_stripped_and_counted(main: Trajectory) -> None:
    everything = main.model_dump_json()
    assert INJECTED_OPEN not in everything and "PAST CARD" not in everything
    assert main.stats.injected_context_stripped == 2  # one in a prompt, one in a hook attachment


def test_interrupts_and_compact_summaries_are_events_not_prompts(main: Trajectory) -> None:
    kinds = [e.kind for e in main.events]
    assert "interrupt" in kinds
    assert main.compact_summaries and main.compact_summaries[0].startswith("This session is being continued")
    assert not any(p.startswith("This session is being continued") for p in main.prompts)


def test_split_assistant_lines_group_by_message_id_and_duplicates_drop(main: Trajectory) -> None:
    texts = [e.text for e in main.events if e.kind == "assistant" and e.agent_id is None]
    assert texts[0] == "Let me run the test first."
    bash = [c for c in main.tool_calls if c.name == "Bash"]
    assert len(bash) == 2  # the repeated line did not add a call
    assert main.stats.duplicate_uuids == 1
    assert main.models == ["claude-opus-4-6", "claude-haiku-4-5"]  # <synthetic> is not a model


def test_tool_calls_carry_results_errors_and_rejections(main: Trajectory) -> None:
    calls = {c.id: c for c in main.tool_calls}
    failed = calls["toolu_1"]
    assert failed.command == "pytest tests/test_login.py -q"
    assert failed.is_error and failed.exit_code == 1 and "TimeoutError" in failed.output
    assert calls["toolu_2"].file_path == "/home/dev/my app_v2.0/tests/conftest.py"
    assert "import pytest" in calls["toolu_2"].output  # tool_result content as a list of text blocks
    assert calls["toolu_3"].rejected
    assert calls["toolu_5"].exit_code == 0 and not calls["toolu_5"].is_error
    assert main.files_read == ["/home/dev/my app_v2.0/tests/conftest.py"]
    assert main.files_edited == []  # the only edit was rejected


def test_secrets_are_scrubbed_and_counted(main: Trajectory) -> None:
    assert "AKIAIOSFODNN7EXAMPLE" not in main.model_dump_json()
    assert main.stats.secrets_redacted.get("aws-access-key", 0) >= 1


def test_thinking_counts_text_and_stripped_blocks(main: Trajectory) -> None:
    assert main.thinking == ["The timeout suggests a race in the session fixture."]
    assert main.stats.thinking_with_text == 1 and main.stats.thinking_stripped == 1


def test_titles_closing_summary_and_skipped_types(main: Trajectory) -> None:
    assert main.titles == ["Fix the flaky login test", "login flake"]
    assert main.closing_summary == "All 12 tests pass with a per-test event loop."
    skipped = main.stats.skipped_entry_types
    assert skipped["progress"] == 2 and skipped["file-history-snapshot"] == 1
    assert skipped["brand-new-entry-type"] == 1 and skipped["system:compact_boundary"] == 1
    assert main.stats.skipped_block_types.get("assistant:server_tool_use") == 1
    assert main.stats.truncated_last_line and main.stats.malformed_lines == 0


def test_subagents_fold_after_their_task_call(main: Trajectory) -> None:
    assert main.subagents == ["a1b2c3d", "a9f9f9f"]  # the internal compaction agent is not folded
    kinds = [(e.kind, e.agent_id, e.tool.id if e.tool else None) for e in main.events]
    task_at = kinds.index(("tool", None, "toolu_4"))
    assert kinds[task_at + 1] == ("prompt", "a1b2c3d", None)
    grep = next(c for c in main.tool_calls if c.name == "Grep")
    assert grep.agent_id == "a1b2c3d" and "conftest" in grep.output
    assert "Find every use" not in main.prompts  # a subagent's task is not a user prompt
    assert "internal" not in main.model_dump_json()


def test_flat_and_export_layouts_fold(source: ClaudeCodeSource, sessions: dict[str, SessionSource]) -> None:
    old = source.load(sessions[S2])
    assert isinstance(old, Trajectory) and old.subagents == ["a4444444"]
    assert old.files_edited == ["/home/dev/my app_v2.0/config.py"]
    export = source.load(sessions[S3])
    assert isinstance(export, Trajectory) and export.session_id == S3 and export.subagents == ["a5555555"]


def test_source_hash_covers_every_path_in_order(main: Trajectory) -> None:
    import hashlib

    digest = hashlib.sha256()
    for path in main.source.paths:
        digest.update(Path(path).read_bytes())
    assert main.source_sha256 == digest.hexdigest()


def test_an_explicit_file_brings_its_subagents(source: ClaudeCodeSource) -> None:
    found = list(source.discover([str(PROJECT / f"{S1}.jsonl")]))
    assert len(found) == 1 and len(found[0].subagent_paths) == 2
    by_agent = list(source.discover([str(PROJECT / f"{S1}" / "subagents" / "agent-a1b2c3d.jsonl")]))
    assert [s.session_key for s in by_agent] == [S1]  # the parent beside it is found


def test_orphan_subagent_stands_as_its_own_session(source: ClaudeCodeSource, tmp_path: Path) -> None:
    folder = tmp_path / "p"
    folder.mkdir()
    agent = folder / "agent-a4444444.jsonl"
    agent.write_bytes((PROJECT / "agent-a4444444.jsonl").read_bytes())
    found = list(source.discover([str(folder)]))
    assert [s.session_key for s in found] == [S2]
    loaded = source.load(found[0])
    assert isinstance(loaded, Trajectory) and loaded.request == "rename it"


def test_internal_agent_alone_is_not_an_episode(source: ClaudeCodeSource, tmp_path: Path) -> None:
    agent = tmp_path / "agent-acompact-0f0f0f.jsonl"
    agent.write_bytes((PROJECT / S1 / "subagents" / "agent-acompact-0f0f0f.jsonl").read_bytes())
    (found,) = source.discover([str(tmp_path)])
    result = source.load(found)
    assert isinstance(result, NotEpisode) and result.reason == "internal-agent"
