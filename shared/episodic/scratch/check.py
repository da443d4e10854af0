"""The no-diff / no-trace check every scratch summary passes before it is embedded or stored.

A summary is one line naming what ran, on what, and the error signature. Refused: line breaks, more than
200 characters, diff hunks or headers, stack traces and source locations (`file.go:42`), code blocks, file
paths with folders (a bare file name is allowed), and anything the scrubber would still redact.
"""

from __future__ import annotations

import re

from episodic.distill.checks import rule_breaks
from episodic.scratch.models import MAX_SUMMARY_CHARS
from episodic.scrub import Scrubber

_DIFF_RE = re.compile(
    r"(?m)^(?:diff --git|index [0-9a-f]{7,}\.\.|@@ -\d|\+\+\+ |--- a/|[+-]{3}\s)|@@ -\d+,\d+ \+\d+"
)
_CARD_RULES_KEPT = ("code block", "stack trace", "source location", "file path")


def summary_problems(summary: str, scrubber: Scrubber | None = None) -> list[str]:
    """Every rule the summary breaks (empty: it may be stored)."""
    problems: list[str] = []
    if not summary.strip():
        problems.append("empty")
    if "\n" in summary or "\r" in summary:
        problems.append("more than one line")
    if len(summary) > MAX_SUMMARY_CHARS:
        problems.append(f"longer than {MAX_SUMMARY_CHARS} characters ({len(summary)})")
    if _DIFF_RE.search(summary):
        problems.append("diff")
    problems += [f"{kind}: {snippet!r}" for kind, snippet in rule_breaks(summary) if kind in _CARD_RULES_KEPT]
    if scrubber is not None and scrubber.scrub(summary) != summary:
        problems.append("holds a secret the scrubber redacts")
    return problems
