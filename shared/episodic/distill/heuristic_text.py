"""Text tools for the heuristic distiller: turn transcript prose into card-safe lines.

Everything here works on short strings (a prompt, one assistant message, an error line), never on
whole tool outputs, so distilling stays a small fraction of the parse budget."""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

import episodic.plumbing.regex_tree as regex_tree
from episodic.distill.checks import SOURCE_EXTENSIONS, text_violations
from episodic.distill.holes import GAP, closed, without_holes
from episodic.distill.readability import is_cut
from episodic.distill.wording_rules import Rule
from episodic.plumbing.regex_tree import OPS, TREE_ERRORS

_FENCED_RE = re.compile(r"```.*?(?:```|\Z)|~~~.*?(?:~~~|\Z)", re.S)
_INLINE_CODE_RE = re.compile(r"`([^`\n]{0,200})`")
_TAG_BLOCK_RE = re.compile(
    r"<(system-reminder|local-command-stdout|local-command-stderr|command-message|command-name)>.*?</\1>",
    re.S,
)
_TAG_RE = re.compile(r"</?[A-Za-z][\w-]*(?:\s[^<>]{0,200})?/?>")
_URL_RE = re.compile(r"\b(?:https?|ftp|file|s3|git|ssh)://\S+|\bwww\.\S+", re.I)
_MD_LINK_RE = re.compile(r"!?\[([^\]\n]{0,200})\]\([^)\n]*\)")
_MD_PREFIX_RE = re.compile(r"(?m)^\s{0,6}(?:#{1,6}\s+|>\s+|[-*+•]\s+(?:\[[ xX]\]\s+)?|\d{1,2}[.)]\s+)")
_URL = Rule("url", _URL_RE)  # most texts hold neither "://" nor "www.": no substitution scan
_MD_EMPHASIS_RE = re.compile(r"\*\*|__|(?<!\w)\*(?=\w)|(?<=\w)\*(?!\w)")
_REDACTED_RE = re.compile(r"\[REDACTED:[\w-]+\]")
_ABS_PATH_RE = re.compile(
    r"(?<![\w.@+-])(?:~|\$HOME|\.{1,2})?/(?:[\w.@+-]+/)+([\w.@+-]*)|~/([\w.@+-]+)|\b[A-Za-z]:\\(?:[\w. -]+\\)*([\w. -]+)"
)
_REL_PATH_RE = re.compile(rf"(?<![\w/.-])(?:[\w.@+-]+/)+([\w@+-]+\.(?:{SOURCE_EXTENSIONS}))\b")
_LOCATION_RE = re.compile(rf"\b([\w-]+\.(?:{SOURCE_EXTENSIONS})):\d+(?::\d+)?")
_HEX_RE = re.compile(r"\b0x[0-9a-fA-F]+\b|\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,64}\b")
_DIGIT_RE = re.compile(r"[0-9]")
_UUID_RE = re.compile(r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b")
# a number that is not a test report's count: "3 failed, 12 passed" keeps its counts, line numbers go
_NUMBER_RE = re.compile(
    r"(?<![\w.])\d+(?:[.:]\d+)*(?![\w.]*\w)"
    r"(?!\s+(?:failed|passed|skipped|pending|total|errors?|warnings?|failures?|problems?|tests?|suites?)\b)"
)
_SPACE_RE = re.compile(r"[ \t\r\f\v]+")
# `(?=\s)` / `(?=[\s(\[,;:])`: every match starts there; one class test per position skips the rest (speed)
_SENTENCE_SPLIT_RE = re.compile(r"(?=\s)(?:(?<=[.!?])\s+(?=[A-Z\"'(`])|\n+)")
_EMPTY_PUNCT_RE = re.compile(r"(?=[\s(\[,;:])(?:\(\s*\)|\[\s*\]|\s+([,.;:!?])(?!\w)|([,;:])(?=\s*[,;:.]))")
_EMOJI_RE = re.compile("[\U0001f300-\U0001faff\u2600-\u27bf\u2b50\u2705\u274c\u2714\u2716\ufe0f]")


_FILE_NAME_RE = re.compile(r"[\w@+-][\w.@+-]*\.[A-Za-z0-9]{1,10}")


def _inline(match: re.Match[str]) -> str:
    """Keep a short code span when it is a plain name (`npm run check`, `biome.json`); a path names its file
    (`.entire/settings.json` -> settings.json, as a bare path does); anything else goes."""
    content = match.group(1).strip()
    if len(content) <= 40 and "/" not in content and "\\" not in content and not text_violations("", content):
        return content
    if ("/" in content or "\\" in content) and not any(c.isspace() for c in content):
        name = re.split(r"[/\\]", content.rstrip("/\\"))[-1]
        if _FILE_NAME_RE.fullmatch(name) and not text_violations("", name):
            return name
    return GAP


def _basename(match: re.Match[str]) -> str:
    name = next((g for g in match.groups() if g), "")
    return name if "." in name.strip(".") else GAP


def unmark(text: str) -> str:
    """Markdown, tags, code blocks, links and URLs removed; prose and short code names kept."""
    # each substitution runs only when a character its pattern needs is present (speed)
    if "</" in text:
        text = _TAG_BLOCK_RE.sub(" ", text)
    if "```" in text or "~~~" in text:
        text = _FENCED_RE.sub(" ", text)
    if "<" in text:
        text = _TAG_RE.sub(" ", text)
    if "](" in text:
        text = _MD_LINK_RE.sub(r"\1", text)
    if _URL.could_match(text):
        text = _URL_RE.sub(" ", text)
    if "`" in text:
        text = _INLINE_CODE_RE.sub(_inline, text)
    text = strip_md_prefixes(text)
    if "*" in text or "__" in text:
        text = _MD_EMPHASIS_RE.sub("", text)
    return text if text.isascii() else _EMOJI_RE.sub("", text)


def strip_md_prefixes(text: str) -> str:
    """Markdown line prefixes (headings, quotes, list markers) removed; on one line only its start can
    hold one (the pattern needs a line start), so a single `match` replaces the scan of every position."""
    if "\n" in text:
        return _MD_PREFIX_RE.sub("", text)
    prefix = _MD_PREFIX_RE.match(text)
    return text[prefix.end() :] if prefix else text


def depath(text: str) -> str:
    """File paths become their base name; locations, hex, ids and redaction markers go."""
    if "[REDACTED:" in text:
        text = _REDACTED_RE.sub(GAP, text)
    if "-" in text:
        text = _UUID_RE.sub(GAP, text)
    if ":" in text:
        text = _LOCATION_RE.sub(r"\1", text)
    if "/" in text or "\\" in text:
        text = _ABS_PATH_RE.sub(_basename, text)
    if "/" in text:
        text = _REL_PATH_RE.sub(r"\1", text)
    return _HEX_RE.sub(GAP, text) if _DIGIT_RE.search(text) else text  # a hex id holds a digit (speed)


def squash(text: str) -> str:
    text = text.replace("\n", " ")
    if "  " in text or not text.isprintable():  # else every run is one space already (speed: no rebuild)
        text = _SPACE_RE.sub(" ", text)
    text = _EMPTY_PUNCT_RE.sub(lambda m: m.group(1) or m.group(2) or "", text)
    return text.strip(" -–—:;,")


_SENTENCE_STOP_RE = re.compile(r"[.!?][\"')\]]*(?=\s)")
_CLAUSE_STOP_RE = re.compile(r"[,;:](?=\s)|\s[—–-](?=\s)")


def clip(text: str, limit: int) -> str:
    """At most `limit` characters of whole sentences, or of whole clauses ending in a full stop, never
    inside a quote or a bracket; "" when neither fits: a card never shows a statement cut mid-way."""
    if len(text) <= limit:
        return text
    head = text[:limit]
    ends = [m.end() for m in _SENTENCE_STOP_RE.finditer(head) if m.end() >= limit // 3]
    for end in reversed(ends):
        if not is_cut(head[:end]):
            return head[:end]
    clauses = [m.start() for m in _CLAUSE_STOP_RE.finditer(head) if m.start() >= limit // 4]
    for at in reversed(clauses):
        kept = head[:at].rstrip(" ,;:-–—")
        if not is_cut(kept):
            return kept + "."
    return ""


_PLAIN_RE = re.compile(r"[A-Za-z0-9 ,.!?'\-:]*")


@lru_cache(maxsize=4096)  # a candidate line often comes up again (a todo item, a repeated sentence)
def safe_line(text: str, limit: int = 200, *, numbers: bool = True) -> str:
    """One card-safe line: cleaned, then any snippet still breaking a rule removed; "" if it cannot be saved."""
    if numbers and len(text) <= limit and _PLAIN_RE.fullmatch(text):  # plain words: nothing to clean
        text = without_holes(text.strip(" -:,"))
        return text if sum(map(str.isalpha, text)) >= 3 else ""
    text = squash(depath(unmark(text)))
    if not numbers:
        text = squash(_NUMBER_RE.sub(" ", text))
    text = clip(text, limit)
    for _ in range(4):
        violations = text_violations("", text)
        if not violations:
            text = closed(without_holes(text))  # a removed identifier must not leave a gap in the sentence
            return text if sum(map(str.isalpha, text)) >= 3 else ""
        for violation in violations:
            snippet = violation.split(": ", 2)[-1].strip()[1:-1]
            text = squash(_without_snippet(text, snippet)) if snippet else ""
    return ""


def _without_snippet(text: str, snippet: str) -> str:
    """`text` without `snippet`: a gap mark where words follow it (the clause around it goes), nothing where
    it ends the text ("mix dialyzer 2>&1" is the command's name)."""
    head, found, tail = text.partition(snippet)
    while found:
        text = head + (GAP if re.search(r"[A-Za-z]", tail) else " ") + tail
        head, found, tail = text.partition(snippet)
    return text


@lru_cache(maxsize=2048)
def sentences(text: str) -> tuple[str, ...]:
    """Sentences of prose with code blocks removed (markdown prefixes stripped per line first)."""
    if "```" in text or "~~~" in text:
        text = _FENCED_RE.sub("\n", text)
    if "</" in text:
        text = _TAG_BLOCK_RE.sub(" ", text)
    return tuple(s.strip() for s in _SENTENCE_SPLIT_RE.split(strip_md_prefixes(text)) if s.strip())


@lru_cache(maxsize=2048)
def joined_sentences(items: tuple[str, ...]) -> tuple[str, list[int]]:
    """The sentences joined by newlines, and where each starts."""
    starts, at = [], 0
    for item in items:
        starts.append(at)
        at += len(item) + 1
    return "\n".join(items), starts


def sentence_hits(items: tuple[str, ...], pattern: Rule) -> list[int]:
    """Indices of the sentences `pattern` matches, in order, from one scan of them joined by newlines.

    The same as searching each sentence for a pattern that `stays_on_line` and tells a sentence's start
    only by `\\b` (no `^`, `\\A` or lookbehind: in the joined text a newline precedes it)."""
    joined, starts = joined_sentences(items)
    hits: list[int] = []
    for match in pattern.finditer(joined):
        index = bisect_right(starts, match.start()) - 1
        if not hits or hits[-1] != index:
            hits.append(index)
    return hits


def looks_like_prose(line: str) -> bool:
    """A line a person wrote (words and spaces), not a pasted log, table or code."""
    words = line.split()
    if len(words) < 3:
        return False
    letters = sum(map(str.isalpha, line)) + line.count(" ")  # a space is never alpha
    return letters / max(len(line), 1) >= 0.75


def _first_chars(items: Any) -> set[str] | None:
    """Every character a parsed (sub)pattern can start with, or None when that is not simply known."""
    for op, arg in items:
        if op is OPS.AT:  # zero-width (\b, ^): look at what follows
            continue
        if op is OPS.LITERAL:
            return {chr(arg)}
        if op is OPS.SUBPATTERN:
            return _first_chars(arg[-1])
        if op is OPS.BRANCH:
            found: set[str] = set()
            for branch in arg[1]:
                chars = _first_chars(branch)
                if chars is None:
                    return None
                found |= chars
            return found
        return None
    return None


_INLINE_FLAGS_RE = re.compile(r"\(\?[aiLmsux]+\)")


def with_first_chars(pattern: re.Pattern[str]) -> re.Pattern[str]:
    """The same pattern behind a lookahead on the characters a match can start with: one class test per
    position instead of trying every alternative there (same matches, about twice as fast)."""
    tree = regex_tree.parse(pattern)
    try:
        chars = _first_chars(tree) if tree is not None else None
    except TREE_ERRORS:  # a parse tree of another shape: the pattern as it is
        chars = None
    if not chars or not all(c.isalpha() for c in chars):
        return pattern
    flags = _INLINE_FLAGS_RE.match(pattern.pattern)
    head = flags.group(0) if flags else ""
    lookahead = "(?=[" + "".join(sorted(chars)) + "])"
    return re.compile(head + lookahead + pattern.pattern[len(head) :], pattern.flags)


def unique(items: Iterable[str], limit: int) -> list[str]:
    """First `limit` non-empty items, dropping near-duplicates (same lowercase word prefix)."""
    seen: set[str] = set()
    kept: list[str] = []
    for item in items:
        key = " ".join(item.lower().split()[:6])
        if item and key not in seen:
            seen.add(key)
            kept.append(item)
            if len(kept) >= limit:
                break
    return kept


_STATEMENT_WORD_RE = re.compile(r"[a-z0-9]+")
_SAME_SHARE = 0.75  # of the longer sentence's words: one statement, though a few code names left one of them


def _statement_words(sentence: str) -> set[str]:
    return set(_STATEMENT_WORD_RE.findall(sentence.lower()))


def same_statement(one: str, other: str) -> bool:
    """Two sentences that say the same thing: they share most of the longer one's words."""
    a, b = _statement_words(one), _statement_words(other)
    if len(a) < 4 or len(b) < 4:
        return False
    return len(a & b) >= _SAME_SHARE * max(len(a), len(b))


def said_in(sentence: str, text: str) -> bool:
    """`sentence` says what one of `text`'s sentences says."""
    return any(same_statement(sentence, other) for other in sentences(text))
