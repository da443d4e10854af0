"""The words a heuristic card's problem is built from that come before any judgement: a request's first whole
sentences, whether a line reads as words a person would type, and the task a tracker showed (`bd show`,
`gh issue view`, `gh pr view`: its title and the description's first prose, or a plan's Problem section)."""

from __future__ import annotations

import json
import re

from episodic.distill.evidence import command_segments, shell_command
from episodic.distill.heuristic_text import clip, looks_like_prose, safe_line, sentences, unmark
from episodic.kernel.models import Event

EDIT_TOOL_NAMES = frozenset(
    {"Edit", "Write", "MultiEdit", "NotebookEdit", "apply_patch", "write_file", "replace"}
)

_PROBLEM_HEADING_RE = re.compile(
    r"(?im)^\s*#{1,6}\s*(?:the\s+)?(?:problem|context|background|summary|motivation|symptoms?|bug|issue|why\b[^\n]*)"
    r"(?:\s+statement)?\s*:?\s*$"
)

_TASK_COMMAND_RE = re.compile(
    r"^(?:bd\s+show|gh\s+(?:issue|pr)\s+view|glab\s+(?:issue|mr)\s+view|jira\s+(?:issue\s+)?view|linear\s+issue)\b"
)
_TITLE_LINE_RE = re.compile(r"(?im)^title:\s*(.{8,200})$")
_TRACKER_HEAD_RE = re.compile(
    r"^\W{0,3}\s*[\w.-]*[\d-][\w.-]*\s+(?:\[\w+\]\s*)?[·:-]\s*(.{8,200}?)\s*(?:\[|$)"
)

_VERSION_RE = re.compile(r"\bv?\d+(?:\.\d+)+\b")
_CODE_TOKEN_RE = re.compile(r"[\w]+[.(_/\\*<>{}=]\w|\w\(")


def first_sentences(text: str, limit: int) -> str:
    picked: list[str] = []
    size = 0
    for sentence in sentences(text):
        line = safe_line(sentence, limit)
        if not line:
            continue
        if picked and size + len(line) > limit:
            break
        picked.append(line)
        size += len(line) + 1
    return clip(" ".join(picked), limit)


# a test runner's progress and tally ("F.. 1 failed, 2 passed in 0.3s") says that something failed, not what
_TALLY_RE = re.compile(
    r"^[.FEsxX]*\s*(?:\d+ (?:failed|passed|skipped|errors?|warnings?|xfailed|xpassed|deselected),?\s*)+"
    r"(?:in [\d.]+s)?\W*$"
)


def reads_as_words(text: str) -> bool:
    """Mostly plain words, few code tokens (`a.b`, `f(`, `x_y`): what a person would type."""
    words = text.split()
    if len(words) < 4 or _TALLY_RE.match(text.strip()):
        return False
    if any(c.isdigit() for c in text):  # a version ("1.25.6") is a word, not a code token
        text = _VERSION_RE.sub(" ", text)
    code = len(_CODE_TOKEN_RE.findall(text))
    return code <= max(1, len(words) // 8)


def _json_task(output: str) -> tuple[str, str]:
    try:
        data = json.loads(output[:20000])
    except (ValueError, RecursionError):  # a tool output of 20,000 "[" is not a task
        return "", ""
    if isinstance(data, list) and data and isinstance(data[0], dict):
        data = data[0]
    if not isinstance(data, dict):
        return "", ""
    body = data.get("body")
    if not isinstance(body, str):
        reviews = data.get("reviews")
        first = reviews[0] if isinstance(reviews, list) and reviews else None
        body = first.get("body") if isinstance(first, dict) else ""
    title = data.get("title")
    return (title if isinstance(title, str) else ""), (body if isinstance(body, str) else "")


def _description_prose(body: str, limit: int) -> str:
    """The first prose lines of a ticket or PR description (headings, notes, lists of files skipped)."""
    body = re.sub(r"<!--.*?-->", " ", body, flags=re.S)
    kept: list[str] = []
    size = 0
    for raw in unmark(body[:4000]).splitlines():
        line = raw.strip()
        if line.startswith("[!") or not looks_like_prose(line) or not reads_as_words(line):
            continue
        kept.append(line)
        size += len(line)
        if size >= limit:
            break
    return first_sentences(" ".join(kept), limit)


def section_prose(text: str, limit: int) -> str:
    """The prose of a plan's or ticket's Problem / Context / Background / Summary section, if it has one."""
    heading = _PROBLEM_HEADING_RE.search(text[:8000])
    if heading is None:
        return ""
    body = text[heading.end() : heading.end() + 3000]
    following = re.search(r"(?m)^\s*#{1,6}\s", body)
    return _description_prose(body[: following.start()] if following else body, limit)


def task_description(events: list[Event]) -> str:
    """Title and first description prose of the first ticket / issue / PR shown before any edit."""
    for event in events:
        call = event.tool
        if event.kind != "tool" or call is None:
            continue
        if call.name in EDIT_TOOL_NAMES:
            return ""
        command = shell_command(call) if call.command or call.name == "Bash" else ""
        if not command or call.is_error or not call.output:
            continue
        if not any(_TASK_COMMAND_RE.match(seg.strip()) for seg in command_segments(command)):
            continue
        output = call.output
        title, body = _json_task(output) if output.lstrip()[:1] in "{[" else ("", "")
        if not title:
            head = _TITLE_LINE_RE.search(output[:2000])
            tracker = _TRACKER_HEAD_RE.match(output.lstrip()[:300])
            title = (head.group(1) if head else "") or (tracker.group(1) if tracker else "")
        if not body:
            for marker in ("DESCRIPTION", "\n--\n"):
                at = output.find(marker)
                if at >= 0:
                    body = output[at + len(marker) :]
                    break
        title = safe_line(title, 160)
        prose = (section_prose(body, 400) or _description_prose(body, 400)) if body else ""
        text = " ".join(p if p[-1] in ".?!…" else p + "." for p in (title, prose) if p)
        if text:
            return text
    return ""
