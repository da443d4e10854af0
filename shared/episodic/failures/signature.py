"""An error's signature: the one line of a tool's output that names the error, normalised so the same error
met in another checkout, on another day, matches exactly — paths, line numbers, hashes, temp names, times and
bare numbers removed; the error's own words, quoted names, rule ids and error codes kept.

The rules are data (the tuples below); `signature_of` never raises.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# the lines that name an error, best first (a compiler's, a test runner's, a linter's, an exception's)
ERROR_LINES: tuple[re.Pattern[str], ...] = (
    re.compile(r"error TS\d+: [^\n]+"),
    re.compile(r"(?m)^(?:[\w.]+\.)?[A-Z]\w*(?:Error|Exception): [^\n]+"),
    re.compile(r"(?m)^error(?:\[E\d+\])?: [^\n]+"),
    re.compile(r"(?m)^\S+:\d+(?::\d+)?: [^\n]+"),  # file:line[:col]: message (go, gcc, linters)
    re.compile(r"(?m)^\S+: error: [^\n]+"),
    re.compile(r"(?m)^E\s{2,}([^\n]+)"),
    re.compile(r"(?m)^(?:--- )?FAIL:? [^\n]+"),
    re.compile(r"(?m)^FAILED [^\n]+"),
    re.compile(r"(?m)^\*\* \(\w+\) [^\n]+"),  # Elixir
    re.compile(r"(?m)^panic: [^\n]+"),
    re.compile(r"npm ERR! [^\n]+"),
    re.compile(r"(?m)^(?:Error|ERROR|fatal|FATAL|error): [^\n]+"),
    re.compile(r"(?m)^[^\n]*\b(?:No such file or directory|command not found|not found|Permission denied)\b[^\n]*"),
    re.compile(r"(?im)^[^\n]*\b(?:error|failed|failure|cannot|undefined|denied|refused|invalid)\b[^\n]*"),
)  # fmt: skip
# lines that only say that something failed (a task runner, make, npm's footer): the error is elsewhere
WRAPPER_LINES = re.compile(
    r"ERROR task failed|^\[[\w:-]+\] ERROR|make(?:\[\d+\])?: \*\*\*|npm ERR! (?:code|errno|A complete log|\s*$)"
    r"|exit (?:status|code) \d+|Process completed with exit code|^FAIL\s*$|^\d+ errors?$|^FAIL\s+\S+\s+[\d.]+s$"
    r"|^(?:error|ERROR|Error):?\s*$|tool_use_error|^ok\s|^FAIL\s+\S+\s+\[(?:build|setup) failed\]"
    r"|^(?:[\d/:.T -]+)?(?:level=)?(?:warn(?:ing)?|info|debug)\b",  # a program's own log lines
    re.I,
)
# removed from a signature, in order: (pattern, replacement)
NORMALISE: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\x1b\[[0-9;]*[A-Za-z]"), ""),  # ANSI colours
    (re.compile(r"^\[[\w:.-]+\]\s*"), ""),  # a task runner's prefix (`[lint:go] `)
    (re.compile(r"\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2})?(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?"), " "),
    (re.compile(r"\b\d{4}[/-]\d{2}[/-]\d{2}\b|\b\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?\b"), " "),  # dates, times
    (re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", re.I), " "),  # uuids
    (re.compile(r"\b0x[0-9a-fA-F]+\b"), " "),  # addresses
    (re.compile(r"\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,}\b"), " "),  # hashes
    (re.compile(r"\b(?:tmp|temp)[\w.-]*\d[\w.-]*|\btmp[A-Za-z0-9_]{6,}\b"), " "),  # temp names
    # paths (anything with a folder separator), and a bare file name with its line (`paths.go:149:28`)
    (re.compile(r"(?:[A-Za-z]:)?[~.\w@+-]*(?:[/\\][\w.@+-]+)+[/\\]?"), " "),
    (re.compile(r"\b[\w-]+\.[A-Za-z]{1,6}(?::\d+)+\b:?|\(\d+,\d+\)|\(line \d+\)|,? line \d+"), " "),
    (re.compile(r"\b\d+(?:\.\d+)?\s?(?:ms|s|sec|seconds|m|min|µs|us|ns)\b"), " "),  # durations
    (re.compile(r"(?<![\w.])\d+(?:\.\d+)*(?![\w.])"), " "),  # bare numbers (E0425, TS2307, v2 stay)
    (re.compile(r"[\"'`]{2,}|[✗✖×]"), " "),
    (re.compile(r"(?<!\S)[^\w\s]+(?!\S)"), " "),  # what the removals left: `( )`, `' '`, a lone `:`
)
WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]+")
MAX_SIGNATURE_CHARS = 160
MAX_SCANNED_CHARS = 8000
MAX_SIGNATURES = 8  # error lines of one output that are indexed and looked up


@dataclass(frozen=True)
class Signature:
    text: str  # the normalised line as shown
    key: str  # what is matched: lower case, spaces collapsed
    words: int  # how many words it has (a short one is too generic to trust)


def normalise(line: str) -> str:
    for pattern, replacement in NORMALISE:
        line = pattern.sub(replacement, line)
    line = " ".join(line.replace("\t", " ").split()).strip(" -:;,.|>")
    return line if len(line) <= MAX_SIGNATURE_CHARS else line[: MAX_SIGNATURE_CHARS - 1].rstrip() + "…"


def _lines(output: str) -> str:
    """The output without Claude Code's `Exit code N` header, JSON-escaped line breaks undone."""
    text = output[:MAX_SCANNED_CHARS].replace("\\n", "\n")
    return re.sub(r"^\s*(?:Error: )?Exit code \d+\s*\n", "", text)


def signatures_of(output: str, limit: int = MAX_SIGNATURES) -> list[Signature]:
    """The error lines of a failed tool's output of the best kind that has any (a linter's or a compiler's
    several findings, a test runner's several failures), normalised and deduplicated, at most `limit`; a
    line of a lesser kind (a log line that happens to say `fatal:`) never stands beside them."""
    text = _lines(output)
    found: dict[str, Signature] = {}
    for pattern in ERROR_LINES:
        for match in pattern.finditer(text):
            raw = (match.group(1) if match.groups() else match.group(0)).strip()
            if WRAPPER_LINES.search(raw):
                continue
            shown = normalise(raw)
            words = len(WORD.findall(shown))
            if words and shown.lower() not in found:
                found[shown.lower()] = Signature(text=shown, key=shown.lower(), words=words)
                if len(found) >= limit:
                    break
        if found:
            return list(found.values())
    return []


def signature_of(output: str) -> Signature | None:
    """The best error line of a failed tool's output, normalised; None when no line names an error."""
    found = signatures_of(output, limit=1)
    return found[0] if found else None
