"""How a topic becomes terms, an FTS5 query and a mention pattern, and how a matching session is described
(which turns, how many mentions): one rule for every history store."""

from __future__ import annotations

import re
from collections.abc import Sequence

from episodic.history.models import HistoryRecord, SessionMatch

MAX_QUERY_TERMS = 16
_WORD = re.compile(r"\w+", re.UNICODE)


def query_terms(text: str) -> list[str]:
    """The words of a query, lower-cased, in order, each once (at most MAX_QUERY_TERMS)."""
    return list(dict.fromkeys(w.lower() for w in _WORD.findall(text)))[:MAX_QUERY_TERMS]


_MIN_STEM = 4  # a shorter stem would match unrelated words as a prefix ("set" for "setting": "setup")


def _undoubled(stem: str) -> str:
    """ "wrapp" → "wrap", so the prefix also matches the bare word; kept when that would be too short."""
    if len(stem) > _MIN_STEM and stem[-1] == stem[-2] and stem[-1] not in "aeiousl":
        return stem[:-1]
    return stem


def stem(term: str) -> str:
    """A light stem, used as a word prefix: one inflection off ("files" → "file", "wrapping" → "wrap",
    "libraries" → "librar"), never below a few letters; no dictionary, so every language's words pass."""
    if term.endswith("ing") and len(term) - 3 >= _MIN_STEM:
        return _undoubled(term[:-3])
    if term.endswith("ed") and len(term) - 2 >= _MIN_STEM:
        return _undoubled(term[:-2])
    if term.endswith("ies") and len(term) - 3 >= _MIN_STEM - 1:
        return term[:-3]
    if term.endswith("s") and not term.endswith(("ss", "us", "is")) and len(term) - 1 >= _MIN_STEM - 1:
        return term[:-1]
    return term


def fts_query(terms: Sequence[str], every: bool = True) -> str:
    """Every term as a quoted word prefix, all required (`every`) or any (no FTS5 syntax from the user
    reaches MATCH)."""
    return (" " if every else " OR ").join(f'"{term}"*' for term in terms)


def term_pattern(terms: Sequence[str]) -> re.Pattern[str]:
    """The terms at a word start, case-insensitively: how a mention is counted."""
    return re.compile("|".join(rf"(?<![^\W_]){re.escape(t)}" for t in terms), re.IGNORECASE)


SNIPPET_BEFORE, SNIPPET_AFTER = 80, 160


def snippet(text: str, pattern: re.Pattern[str]) -> str:
    """The first mention with some words around it, the mention in [brackets]."""
    found = pattern.search(text)
    if found is None:
        return ""
    start, end = found.span()
    head = text[max(0, start - SNIPPET_BEFORE) : start]
    tail = text[end : end + SNIPPET_AFTER]
    lead = "…" if start > SNIPPET_BEFORE else ""
    return " ".join(f"{lead}{head}[{text[start:end]}]{tail}…".split())


def describe_match(
    record: HistoryRecord, terms: Sequence[str], score: float, words: Sequence[str] = ()
) -> SessionMatch:
    """The turns that mention every term (else any), the mentions in the whole record, the summaries, a
    snippet from the first matching turn (else from wherever the record mentions it), and which of the
    query's `words` (one a term, in order) it never mentions."""
    anywhere = term_pattern(terms)
    each = [term_pattern([t]) for t in terms]
    texts = [(turn.index, f"{turn.prompt}\n{turn.reply}") for turn in record.turns]
    turns = [i for i, text in texts if all(p.search(text) for p in each)]
    turns = turns or [i for i, text in texts if anywhere.search(text)]
    summaries = "\n".join([*record.titles, record.closing_summary, *record.compact_summaries])
    whole = record.search_text()
    missing = [word for word, pattern in zip(words, each, strict=False) if not pattern.search(whole)]
    return SessionMatch(
        session_id=record.session_id,
        score=round(score, 4),
        count=len(anywhere.findall(whole)),
        turns=turns,
        in_summary=bool(anywhere.search(summaries)),
        snippet=snippet(texts[turns[0]][1] if turns else whole, anywhere),
        missing=missing,
    )


def some_words_heading(topic: str, every: bool) -> str:
    """The line before the sessions that name only some of the query's words (`every`: others name all)."""
    if every:
        return f"Sessions naming only some of the words of {topic!r}, most first:"
    return f"No session names every word of {topic!r}; these name some of them, most first:"
