"""Read a JSONL transcript's bytes into entries, counting (never raising on) bad lines."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from episodic import bounded
from episodic.models import ParseStats

try:  # a core dependency; the Lambda package does without it (stdlib only)
    import orjson
except ImportError:  # pragma: no cover - exercised only where orjson is absent
    orjson = None  # type: ignore[assignment]

_decoder = json.JSONDecoder()
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")

# Entry types dropped without parsing when the envelope says so (progress is 44-70 % of 2.1.x lines).
# Nested JSON strings are escaped, so these exact bytes only appear as the line's own structure.
_CHEAP_SKIPS = (
    (b'"type":"progress"', "progress"),
    (b'"type":"file-history-snapshot"', "file-history-snapshot"),
)
_ENVELOPE_BYTES = 1500

CODEX_TYPES = frozenset({"session_meta", "response_item", "event_msg", "turn_context", "compacted"})


def _cheap_skip(line: bytes) -> str | None:
    for needle, kind in _CHEAP_SKIPS:
        pos = line.find(needle, 0, _ENVELOPE_BYTES)  # bounded finds: no copy of the head
        # top level only: no nested object opened before it (a string value holding "{" only costs a parse)
        if pos > 0 and line.find(b"{", 1, pos) < 0:
            return kind
    return None


_RESULT_KEY = b',"toolUseResult":'
_LAZY_RESULT_MIN = 4000
_AGENT_ID_RE = re.compile(rb'"agentId":"([^"\\]{1,100})"')


def _loads(line: bytes) -> Any:
    """orjson on the raw bytes (no decode); the stdlib, on the text decoded with replacement characters,
    decides whatever orjson refuses (invalid UTF-8, NaN, huge ints, lone surrogates)."""
    if orjson is not None:
        try:
            return orjson.loads(line)
        except orjson.JSONDecodeError:
            pass
    return json.loads(line.decode("utf-8", errors="replace").strip())


def _without_tool_use_result(line: bytes) -> dict[str, Any] | None:
    """A user line minus its bulky `toolUseResult` (half the bytes of a transcript: file copies, diffs).

    It comes last in the envelope (only `sourceToolAssistantUUID` follows); the prefix parsing as an
    object proves the key is top-level. The few facts the parser needs are read from the value's head.
    """
    pos = line.find(_RESULT_KEY)
    if pos < 0 or len(line) - pos < _LAZY_RESULT_MIN:
        return None
    if (
        len(line) - pos < 4 * _LAZY_RESULT_MIN
        and len(line[pos:].decode("utf-8", "replace")) < _LAZY_RESULT_MIN
    ):
        return (
            None  # the threshold counts characters, as the text-based reader did (UTF-8: up to 4 bytes each)
        )
    try:
        entry = _loads(line[:pos] + b"}")
    except json.JSONDecodeError:
        return None
    if not isinstance(entry, dict):
        return None
    value_head = line[pos + len(_RESULT_KEY) : pos + len(_RESULT_KEY) + 2000]
    if value_head.startswith(b'"'):
        entry["toolUseResult"] = (
            "User rejected tool use" if value_head.startswith(b'"User rejected tool use"') else ""
        )
    else:
        agent = _AGENT_ID_RE.search(line, pos)
        entry["toolUseResult"] = {
            "interrupted": line.find(b'"interrupted":true', pos) >= 0,
            "agentId": agent.group(1).decode("utf-8", errors="replace") if agent else None,
            "summarised": True,
        }
    return entry


def _decode_objects(line: bytes) -> list[Any]:
    """One line's JSON values; a line holding two concatenated objects (a lost newline) yields both."""
    lazy = _without_tool_use_result(line)
    if lazy is not None:
        return [lazy]
    try:
        return [_loads(line)]
    except json.JSONDecodeError as exc:
        if not exc.msg.startswith("Extra data"):
            raise
    text = line.decode("utf-8", errors="replace").strip()
    values: list[Any] = []
    pos = 0
    while pos < len(text):
        value, end = _decoder.raw_decode(text, pos)
        values.append(value)
        while end < len(text) and text[end] in " \t\r":
            end += 1
        pos = end
    return values


def iter_entries(data: bytes, stats: ParseStats) -> Iterator[dict[str, Any]]:
    """Every JSON object of a JSONL file in order; malformed lines and a truncated last line are counted.

    Lines are split and parsed as bytes (decoding a whole file first costs as much as splitting it)."""
    lines = data.split(b"\n")
    ends_with_newline = data.endswith(b"\n")
    last = len(lines) - 1
    counted = 0  # ParseStats validates each assignment: the line count is added once, at the end
    try:
        for index, raw in enumerate(lines):
            line = raw.strip()
            if not line:
                continue
            counted += 1
            skip = _cheap_skip(line)
            if skip:
                stats.skipped_entry_types[skip] = stats.skipped_entry_types.get(skip, 0) + 1
                continue
            try:
                values = _decode_objects(line)
                if _SURROGATE_ESCAPE.search(line):  # `\ud800` alone decodes to a str no store can encode
                    values = [bounded.clean_obj(v) for v in values]
            except (ValueError, RecursionError):  # bad syntax, 100,000 "[", an int too long for int()
                if index == last and not ends_with_newline:
                    stats.truncated_last_line = True  # a live file being written, or cut short
                else:
                    stats.malformed_lines += 1
                continue
            for value in values:
                if isinstance(value, dict):
                    yield value
                else:
                    stats.malformed_lines += 1
    finally:
        stats.lines += counted


def looks_like_codex(entry: dict[str, Any]) -> bool:
    return "payload" in entry and entry.get("type") in CODEX_TYPES


def looks_like_json_document(data: bytes) -> bool:
    """A pretty-printed JSON document (e.g. a Gemini CLI session saved as .jsonl), not JSON lines."""
    head = data[:4096].lstrip()
    return head.startswith(b"{\n") or head.startswith(b"{\r\n") or head.startswith(b"[\n")
