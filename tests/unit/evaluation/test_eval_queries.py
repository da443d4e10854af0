"""The queries file reader: extra fields ignored, bad lines a clear error naming the line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from episodic.evaluation.queries import read_queries
from episodic.kernel.errors import InvalidArgumentError

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "eval" / "queries.jsonl"


def _write(tmp_path: Path, *lines: str) -> Path:
    path = tmp_path / "queries.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_reads_queries_and_ignores_unknown_fields(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        json.dumps(
            {
                "id": "d1",
                "session_id": "s-1",
                "query": "tests hang",
                "difficulty": "easy",
                "file": "x",
                "new": {"a": 1},
            }
        ),
        "",
        json.dumps({"session_id": "s-2", "query": "  ci fails  ", "score": 3}),
    )
    queries = read_queries(path)
    assert [(q.id, q.session_id, q.query, q.difficulty) for q in queries] == [
        ("d1", "s-1", "tests hang", "easy"),
        ("line3", "s-2", "ci fails", None),
    ]


def test_the_shipped_fixture_reads() -> None:
    queries = read_queries(FIXTURE)
    assert len(queries) == 11
    assert {q.difficulty for q in queries} == {"easy", "hard"}


@pytest.mark.parametrize(
    ("bad_line", "message"),
    [
        ("{not json", "line 2: not valid JSON"),
        ('["a", "b"]', "line 2: expected a JSON object"),
        ('{"session_id": "s"}', "line 2: field 'query' must be a non-empty string"),
        ('{"query": "q", "session_id": ""}', "line 2: field 'session_id' must be a non-empty string"),
        ('{"query": 3, "session_id": "s"}', "line 2: field 'query' must be a non-empty string"),
        ('{"id": "a", "query": "q", "session_id": "s"}', "line 2: duplicate query id 'a'"),
    ],
)
def test_bad_lines_raise_with_the_line_number(tmp_path: Path, bad_line: str, message: str) -> None:
    path = _write(tmp_path, json.dumps({"id": "a", "query": "ok", "session_id": "s"}), bad_line)
    with pytest.raises(InvalidArgumentError) as info:
        read_queries(path)
    assert message in str(info.value)
    assert str(path) in str(info.value)


def test_missing_and_empty_files_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(InvalidArgumentError, match="not found"):
        read_queries(tmp_path / "nope.jsonl")
    with pytest.raises(InvalidArgumentError, match="holds no queries"):
        read_queries(_write(tmp_path, "", "  "))
