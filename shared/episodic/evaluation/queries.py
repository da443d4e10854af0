"""The queries file: one JSON object a line with at least `query` and `session_id`; other fields ignored."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from episodic.kernel.errors import InvalidArgumentError


class EvalQuery(BaseModel):
    """One held-out query and the session it should retrieve."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    query: str = Field(min_length=1)
    session_id: str = Field(min_length=1)
    id: str = ""  # kept for the per-query output; line number when absent
    difficulty: str | None = None  # kept for the per-group breakdown (e.g. easy / hard)
    # sessions that handled the same problem: the leave-one-out view removes them with the target
    cousins: tuple[str, ...] = ()


def parse_query_line(line: str, where: str) -> EvalQuery:
    """One line to a query; `where` ("FILE line N") prefixes every error so the user can fix it."""
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as exc:
        raise InvalidArgumentError(f"{where}: not valid JSON ({exc.msg} at column {exc.colno})") from exc
    if not isinstance(obj, dict):
        raise InvalidArgumentError(f"{where}: expected a JSON object, got {type(obj).__name__}")
    for field in ("query", "session_id"):
        value = obj.get(field)
        if not isinstance(value, str) or not value.strip():
            raise InvalidArgumentError(f"{where}: field {field!r} must be a non-empty string")
    known = {"query": obj["query"].strip(), "session_id": obj["session_id"].strip()}
    for field in ("id", "difficulty"):
        if isinstance(obj.get(field), str | int) and str(obj[field]).strip():
            known[field] = str(obj[field]).strip()
    cousins = obj.get("cousins")
    if cousins is not None and not (isinstance(cousins, list) and all(isinstance(c, str) for c in cousins)):
        raise InvalidArgumentError(f"{where}: field 'cousins' must be a list of session ids")
    try:
        return EvalQuery(**known, cousins=tuple(c.strip() for c in cousins or [] if c.strip()))
    except ValidationError as exc:  # pragma: no cover - the checks above cover the model's rules
        raise InvalidArgumentError(f"{where}: {exc}") from exc


def read_queries(path: Path | str) -> list[EvalQuery]:
    """Every query in the file; blank lines skipped; the first bad line raises with its line number."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise InvalidArgumentError(f"queries file not found: {path}") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidArgumentError(f"cannot read queries file {path}: {exc}") from exc
    queries: list[EvalQuery] = []
    seen_ids: set[str] = set()
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        query = parse_query_line(line, f"{path} line {number}")
        if not query.id:
            query = query.model_copy(update={"id": f"line{number}"})
        if query.id in seen_ids:
            raise InvalidArgumentError(f"{path} line {number}: duplicate query id {query.id!r}")
        seen_ids.add(query.id)
        queries.append(query)
    if not queries:
        raise InvalidArgumentError(f"queries file {path} holds no queries")
    return queries
