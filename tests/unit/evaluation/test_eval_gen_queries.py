"""gen-queries: the leak check alone, and the Bedrock Converse path through a botocore Stubber."""

from __future__ import annotations

import json
from pathlib import Path

import boto3
import pytest
from botocore.stub import ANY, Stubber
from episodic.evaluation.gen_queries import (
    MAX_SOLUTION_SHARE,
    TranscriptVocabulary,
    bedrock_writer,
    generate_queries,
    leak_check,
    parse_answer,
)
from episodic.kernel.errors import ConfigError
from episodic.kernel.models import Card, Event, Outcome, SessionSource, ToolCall, Trajectory
from episodic.plumbing.marker import DISTILLER_MARKER

MODEL = "us.anthropic.claude-sonnet-4-6"


def _trajectory(session_id: str = "s-1") -> Trajectory:
    failing = ToolCall(
        id="t1",
        name="Bash",
        command="TZ=UTC pytest tests/test_invoices.py -q",
        output="FAILED tests/test_invoices.py::test_due_date - AssertionError: due date off by one day",
        is_error=True,
    )
    return Trajectory(
        session_id=session_id,
        source=SessionSource(session_key=session_id, main_path=f"/corpus/proj/{session_id}.jsonl"),
        source_sha256="0" * 64,
        request="invoice tests fail in CI",
        events=[Event(kind="prompt", text="invoice tests fail in CI"), Event(kind="tool", tool=failing)],
        tool_calls=[failing],
        files_edited=["/home/dev/billing/invoices.py"],
    )


def _card() -> Card:
    return Card(
        problem="Invoice date tests fail on CI runners only.",
        insight="Naive local datetimes depend on the machine timezone; use aware UTC datetimes.",
        key_decisions=["Use timezone-aware UTC timestamps instead of naive local time"],
        outcome=Outcome.VERIFIED,
    )


def test_a_clean_paraphrase_passes() -> None:
    report = leak_check(
        "my tests are green at home but the build server computes dates that are wrong by a day",
        ["timezone", "UTC", "aware datetime"],
        TranscriptVocabulary.of(_trajectory()),
        _card(),
    )
    assert not report.leaked, report
    assert report.solution_share <= MAX_SOLUTION_SHARE


def test_naming_the_fix_is_a_leak() -> None:
    report = leak_check(
        "dates wrong in CI because of timezone, need aware UTC datetimes",
        ["timezone", "UTC", "aware datetime"],
        TranscriptVocabulary(),
    )
    assert report.leaked
    assert report.solution_share > MAX_SOLUTION_SHARE
    assert {"timezone", "utc", "aware"} <= set(report.solution_words)


def test_the_card_insight_counts_as_solution_vocabulary() -> None:
    query = "machine timezone makes naive datetimes shift"
    assert not leak_check(query, [], TranscriptVocabulary()).leaked
    assert leak_check(query, [], TranscriptVocabulary(), _card()).leaked


def test_identifiers_from_the_transcript_are_leaks() -> None:
    vocabulary = TranscriptVocabulary.of(_trajectory())
    report = leak_check("why does test_invoices.py fail on the build server", [], vocabulary)
    assert report.leaked and report.identifiers == ["test_invoices.py"]
    # an identifier-looking word the transcript never used is not a copy of it
    assert not leak_check("why does my_other_thing break on the build server", [], vocabulary).leaked


def test_copied_error_text_is_a_leak() -> None:
    report = leak_check("the check says due date off by one day", [], TranscriptVocabulary.of(_trajectory()))
    assert report.leaked and report.error_runs


def test_parse_answer_reads_the_first_json_object() -> None:
    assert parse_answer('Sure:\n{"query": " a  b ", "solution_terms": ["x", 3]}') == ("a b", ["x", "3"])
    with pytest.raises(ValueError):
        parse_answer("no json here")
    with pytest.raises(ValueError):
        parse_answer('{"solution_terms": []}')


def _converse_response(text: str) -> dict[str, object]:
    return {
        "output": {"message": {"role": "assistant", "content": [{"text": text}]}},
        "stopReason": "end_turn",
        "usage": {"inputTokens": 900, "outputTokens": 40, "totalTokens": 940},
        "metrics": {"latencyMs": 800},
    }


def test_generation_over_a_stubbed_bedrock_client(tmp_path: Path, episodic_home: Path) -> None:
    client = boto3.client("bedrock-runtime", region_name="us-east-1")
    expected = {"modelId": MODEL, "messages": ANY, "inferenceConfig": ANY}
    leaky = json.dumps(
        {
            "query": "CI dates off because of timezone, use aware UTC datetimes",
            "solution_terms": ["timezone", "UTC"],
        }
    )
    clean = json.dumps(
        {
            "query": "tests pass on my laptop but the build server gets billing dates wrong by one day",
            "solution_terms": ["timezone", "UTC"],
        }
    )
    prompts: list[str] = []
    with Stubber(client) as stub:
        stub.add_response("converse", _converse_response(leaky), expected)  # s-1, first try: rejected
        stub.add_response("converse", _converse_response(clean), expected)  # s-1, retry: kept
        stub.add_response("converse", _converse_response(leaky), expected)  # s-2: leaks twice → skipped
        stub.add_response("converse", _converse_response(leaky), expected)
        inner = bedrock_writer(client, MODEL)

        def writer(prompt: str) -> str:
            prompts.append(prompt)
            return inner(prompt)

        out = tmp_path / "generated.jsonl"
        report = generate_queries(
            [_trajectory("s-1"), _trajectory("s-2")],
            lambda t: f"Request: {t.request}",
            writer,
            out,
            [Path("/corpus")],
        )
        stub.assert_no_pending_responses()
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(x["id"], x["session_id"], x["difficulty"], x["file"]) for x in lines] == [
        ("g001", "s-1", "hard", "proj/s-1.jsonl")
    ]
    assert lines[0]["query"].startswith("tests pass on my laptop")
    assert [s for s, _ in report.rejected] == ["s-2"]
    assert prompts[0].startswith(DISTILLER_MARKER)  # a logged distiller run is never re-indexed
    assert "do not use these words" in prompts[1] and "timezone" in prompts[1]


def test_without_an_llm_it_refuses_clearly(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="needs an LLM"):
        generate_queries([_trajectory()], str, None, tmp_path / "x.jsonl", [])
    assert not (tmp_path / "x.jsonl").exists()
