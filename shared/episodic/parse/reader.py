"""Read a JSONL transcript's bytes into entries, counting (never raising on) bad lines."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from episodic.kernel.models import ParseStats
from episodic.plumbing import bounded

try:  # a core dependency; the Lambda package does without it (stdlib only)
    import orjson
except ImportError:  # pragma: no cover - exercised only where orjson is absent
    orjson = None  # type: ignore[assignment]

_decoder = json.JSONDecoder()
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")

# Entry types dropped without parsing when the envelope says so (progress is 44-70 % of 2.1.x lines).
# Nested JSON strings are escaped, so these exact bytes only appear as the line's own structure.
_TYPE_KEY = b'"type":"'
_CHEAP_SKIPS = (
    (b'progress"', "progress"),
    (b'file-history-snapshot"', "file-history-snapshot"),
)
_ENVELOPE_BYTES = 1500

CODEX_TYPES = frozenset({"session_meta", "response_item", "event_msg", "turn_context", "compacted"})


def _cheap_skip(line: bytes, start: int = 0, end: int | None = None) -> str | None:
    """The kind of a line to drop unparsed; `line[start:end]` is the line (offsets into a whole file: no copy)."""
    head_end = min(len(line) if end is None else end, start + _ENVELOPE_BYTES)
    pos = line.find(_TYPE_KEY, start, head_end)  # the first "type" key: a bounded find, no copy of the head
    # top level only: no nested object opened before it (a string value holding "{" only costs a parse)
    if pos <= start or line.find(b"{", start + 1, pos) >= 0:
        return None
    value = pos + len(_TYPE_KEY)
    for needle, kind in _CHEAP_SKIPS:
        if line.startswith(needle, value) and value + len(needle) <= head_end:
            return kind
    return None


_RESULT_KEY = b',"toolUseResult":'
_LAZY_RESULT_MIN = 4000
_AGENT_ID_KEY = b'"agentId":"'
_AGENT_ID_RE = re.compile(rb'"agentId":"([^"\\]{1,100})"')


def _find_agent_id(data: bytes, start: int, end: int) -> re.Match[bytes] | None:
    """`_AGENT_ID_RE.search(data, start, end)`: bytes.find jumps to each key (re steps byte by byte)."""
    pos = data.find(_AGENT_ID_KEY, start, end)
    while pos >= 0:
        found = _AGENT_ID_RE.match(data, pos, end)
        if found is not None:
            return found
        pos = data.find(_AGENT_ID_KEY, pos + 1, end)
    return None


def _loads(line: bytes | memoryview) -> Any:
    """orjson on the raw bytes (no decode); the stdlib, on the text decoded with replacement characters,
    decides whatever orjson refuses (invalid UTF-8, NaN, huge ints, lone surrogates)."""
    if orjson is not None:
        try:
            return orjson.loads(line)
        except orjson.JSONDecodeError:
            pass
    return _stdlib_loads(bytes(line))


def load_document(data: bytes) -> Any:
    """A whole JSON document (a Gemini session file) read as a line is: ValueError (or RecursionError) for
    bad syntax or a number too long for `int()`, lone surrogates replaced."""
    return _loads(data)


def _stdlib_loads(line: bytes) -> Any:
    value = json.loads(line.decode("utf-8", errors="replace").strip())
    # `\ud800` alone decodes to a str no store can encode (orjson refuses such a line: only the stdlib sees it)
    return bounded.clean_obj(value) if _SURROGATE_ESCAPE.search(line) else value


def _without_tool_use_result(data: bytes, start: int, end: int, pos: int) -> dict[str, Any] | None:
    """The user line `data[start:end]`, whose `toolUseResult` key the caller found at `pos`, minus that
    bulky value (half the bytes of a transcript: file copies, diffs).

    It comes last in the envelope (only `sourceToolAssistantUUID` follows); the prefix parsing as an
    object proves the key is top-level. The few facts the parser needs are read from the value's head.
    """
    if end - pos < _LAZY_RESULT_MIN:
        return None
    # the threshold counts characters, as the text-based reader did (UTF-8: up to 4 bytes each)
    if end - pos < 4 * _LAZY_RESULT_MIN and len(data[pos:end].decode("utf-8", "replace")) < _LAZY_RESULT_MIN:
        return None
    try:
        entry = _loads(data[start:pos] + b"}")
    except json.JSONDecodeError:
        return None
    if not isinstance(entry, dict):
        return None
    head = pos + len(_RESULT_KEY)
    if data.startswith(b'"', head):
        rejected = data.startswith(b'"User rejected tool use"', head)
        entry["toolUseResult"] = "User rejected tool use" if rejected else ""
    else:
        agent = _find_agent_id(data, pos, end)
        entry["toolUseResult"] = {
            "interrupted": data.find(b'"interrupted":true', pos, end) >= 0,
            "agentId": agent.group(1).decode("utf-8", errors="replace") if agent else None,
            "summarised": True,
        }
    return entry


def _decode_objects(data: bytes, view: memoryview, start: int, end: int) -> list[Any]:
    """The JSON values of the line `data[start:end]`; a line holding two concatenated objects (a lost
    newline) yields both."""
    # only a line holding the key can be read lazily: the find stays here (one call less on the others)
    pos = data.find(_RESULT_KEY, start, end)
    if pos >= 0:
        lazy = _without_tool_use_result(data, start, end, pos)
        if lazy is not None:
            return [lazy]
    try:
        return [_loads(view[start:end])]
    except json.JSONDecodeError as exc:
        if not exc.msg.startswith("Extra data"):
            raise
    line = data[start:end]
    text = line.decode("utf-8", errors="replace").strip()
    values: list[Any] = []
    pos = 0
    while pos < len(text):
        value, stop = _decoder.raw_decode(text, pos)
        values.append(value)
        while stop < len(text) and text[stop] in " \t\r":
            stop += 1
        pos = stop
    return [bounded.clean_obj(v) for v in values] if _SURROGATE_ESCAPE.search(line) else values


_WHITESPACE = frozenset(b" \t\r\n\x0b\x0c")


def _line_spans(data: bytes) -> Iterator[tuple[int, int, bool]]:
    """(start, end, is_last) of every non-blank line, stripped of ASCII whitespace, as offsets into
    `data`: splitting a file into copies of its lines costs as much as parsing them."""
    size = len(data)
    pos = 0
    while pos < size:
        end = data.find(b"\n", pos)
        last = end < 0
        if last:
            end = size
        start, stop = pos, end
        while start < stop and data[start] in _WHITESPACE:
            start += 1
        while stop > start and data[stop - 1] in _WHITESPACE:
            stop -= 1
        if stop > start:
            yield start, stop, last
        pos = end + 1


def iter_entries(data: bytes, stats: ParseStats) -> Iterator[dict[str, Any]]:
    """Every JSON object of a JSONL file in order; malformed lines and a truncated last line are counted.

    Lines are found and parsed in place, as offsets into the file's bytes (no decode, no copies)."""
    view = memoryview(data)
    counted = 0  # ParseStats validates each assignment: the line count is added once, at the end
    try:
        for start, end, last in _line_spans(data):
            counted += 1
            skip = _cheap_skip(data, start, end)
            if skip:
                stats.skipped_entry_types[skip] = stats.skipped_entry_types.get(skip, 0) + 1
                continue
            try:
                values = _decode_objects(data, view, start, end)
            except (ValueError, RecursionError):  # bad syntax, 100,000 "[", an int too long for int()
                if last:
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
