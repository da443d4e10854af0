"""Pseudo-queries (issue 49's second yardstick): each session's later prompts, asked for that session."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from episodic.evaluation.pseudo_queries import PseudoRules, pseudo_queries, write_queries
from episodic.evaluation.queries import read_queries
from episodic.kernel.errors import InvalidArgumentError
from episodic.kernel.models import SessionSource, Trajectory

LONG = "the websocket client drops every message sent while the reconnect backoff is still running here"
HABIT = "please review the changes one more time, be critical, and if it is all fine open a pull request"


def _session(session_id: str, prompts: list[str]) -> Trajectory:
    return Trajectory(
        session_id=session_id,
        source=SessionSource(session_key=session_id, main_path=f"/x/{session_id}.jsonl"),
        source_sha256="0" * 64,
        request=prompts[0],
        prompts=prompts,
    )


def test_later_prompts_that_name_a_problem_become_queries_for_their_session() -> None:
    sessions = {
        "s1": _session("s1", [LONG + " first", "commit", "/compact", LONG, HABIT, LONG + " again and again"]),
        "s2": _session("s2", ["why does the build fail on arm64 runners with an illegal instruction", HABIT]),
        "s3": _session("s3", ["only one prompt in this session, long enough to be a query otherwise"]),
    }
    queries = pseudo_queries(sessions)
    assert [(q.id, q.session_id, q.query) for q in queries] == [
        ("p0001", "s1", LONG),  # the first prompt, "commit" (too short) and the slash command are skipped
        ("p0002", "s1", LONG + " again and again"),  # the habit shared with s2 names no one session
    ]
    assert pseudo_queries(sessions, PseudoRules(per_session=1)) == queries[:1]


def test_a_repeat_of_the_first_prompt_a_pasted_block_and_a_long_paste_are_handled() -> None:
    first = "the docker build fails with permission denied writing the npm cache in CI every time"
    pasted = "```\nTraceback (most recent call last): a long enough pasted block of tool output here\n```"
    huge = "the migration hangs " + "and the lock is never released by the worker " * 30
    queries = pseudo_queries({"s": _session("s", [first, " " + first.upper(), pasted, huge])})
    assert len(queries) == 1 and len(queries[0].query) == PseudoRules().max_chars
    assert queries[0].query.startswith("the migration hangs")


def test_written_queries_read_back_as_the_eval_reads_them(tmp_path: Path) -> None:
    queries = pseudo_queries({"s1": _session("s1", ["first", LONG])})
    out = tmp_path / "sub" / "pseudo.jsonl"
    assert write_queries(queries, out) == 1
    assert read_queries(out) == queries
    assert json.loads(out.read_text().splitlines()[0]) == {"query": LONG, "session_id": "s1", "id": "p0001"}


def test_an_unwritable_output_is_a_clear_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(InvalidArgumentError, match="cannot write the queries to"):
        write_queries(pseudo_queries({"s1": _session("s1", ["first", LONG])}), blocker / "pseudo.jsonl")
