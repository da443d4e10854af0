"""How a card reads: each field a complete statement, not the first prompt echoed, no hole, no cut.

Run on any card set (`episodic cards check`, and the eval report for both card sets). For each text field:
  - cut: it ends mid-way — an ellipsis at the end ("…", "..."), a cut marker ("[… 40 chars cut …]"), or a
    bracket or quote left open ("[do: %Plug.…");
  - hole: a gap left where an identifier, a path or a code span was removed (`distill.holes`);
  - complete: a statement a reader can take whole — no cut, no hole, at least `MIN_WORDS` words (two for a
    step or a check, which are phrases: "Ran go test: passed"), starting with a capital, a digit or a quote,
    not ending on a colon, a dash or a connective.
For the problem, with the session's first prompt at hand:
  - echo: its first sentence is a run of at least `ECHO_WORDS` words found verbatim in the first prompt
    (case and punctuation aside): the request copied, not the problem as the session came to understand it;
  - injected: its first sentence reads as the start of an injected instruction block (`parse.injected`).
Real examples both ways: tests/unit/distill/test_readability.py.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from episodic.distill.boilerplate import boilerplate_of
from episodic.distill.holes import HOLE_SHAPES, hole_breaks
from episodic.kernel.models import Card
from episodic.parse.injected import reads_injected, split_injected

MIN_WORDS = 4
ECHO_WORDS = 5
EXAMPLES = 5  # of each finding, in a report
STATEMENT_FIELDS = ("problem", "insight", "key_decisions", "dead_ends", "misleading_intuitions")
PHRASE_FIELDS = ("steps", "critical_checks")

_CUT_END_RE = re.compile(r"(?:…|\.\.\.|\[…[^\]]*)\W{0,3}$")
_CUT_MARKER_RE = re.compile(r"\[… \d+ chars cut …\]")
_DANGLING_END_RE = re.compile(
    r"(?i)(?:[:\-–—,;/(]|\b(?:and|or|but|the|a|an|of|to|with|for|from|in|on|at|by|because|so|that|which|than))\s*$"
)
_STARTS_RE = re.compile(r"^[\"'“‘(]?[A-Z0-9]")
_SENTENCE_END_RE = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'(`])")
_WORD_RE = re.compile(r"[a-z0-9]+(?:[.'-][a-z0-9]+)*")
_EMOTICON_RE = re.compile(r"[:;]-?[()]")  # ":(" opens nothing
_PAIRS = (("(", ")"), ("[", "]"), ("{", "}"), ("`", "`"), ("“", "”"))


def is_cut(text: str) -> bool:
    """The text ends mid-way: an ellipsis at its end, a cut marker, or a bracket or quote left open."""
    text = text.strip()
    if not text:
        return False
    if _CUT_END_RE.search(text) or _CUT_MARKER_RE.search(text):
        return True
    text = _EMOTICON_RE.sub(" ", text) if ":" in text or ";" in text else text
    for opening, closing in _PAIRS:
        if opening == closing:
            if text.count(opening) % 2:
                return True
        elif text.count(opening) > text.count(closing):
            return True
    return text.count('"') % 2 == 1


def is_complete(text: str, *, phrase: bool = False) -> bool:
    """A statement (or, for a step or a check, a phrase) a reader can take whole."""
    text = text.strip()
    words = text.split()
    if len(words) < (2 if phrase else MIN_WORDS) or is_cut(text) or hole_breaks(text):
        return False
    if phrase:
        return True
    return bool(_STARTS_RE.match(text)) and not _DANGLING_END_RE.search(text)


def first_sentence(text: str) -> str:
    return _SENTENCE_END_RE.split(text.strip(), 1)[0]


def whole_sentences(text: str) -> str:
    """`text` without its sentences that are cut: one holding a cut marker, and the last ones while the
    text still ends cut (a clipped error line, an open bracket)."""
    if not is_cut(text):
        return text
    kept = [s for s in _SENTENCE_END_RE.split(text.strip()) if s and not _CUT_MARKER_RE.search(s)]
    while kept and is_cut(" ".join(kept)):  # a cut is at the end: a quote may span sentences before it
        kept.pop()
    return " ".join(kept)


def _words(text: str) -> list[str]:
    """Lowercase words; bare numbers left out (a card drops "common.go:296"'s line number)."""
    return [w for w in _WORD_RE.findall(text.lower()) if not w.isdigit()]


def echoes(problem: str, prompt: str) -> bool:
    """The problem's first sentence is a verbatim run of the prompt's words (ECHO_WORDS or more)."""
    said = _words(first_sentence(problem))
    if len(said) < ECHO_WORDS or not prompt:
        return False
    return f" {' '.join(said)} " in f" {' '.join(_words(prompt))} "


def from_injected(problem: str, prompt: str = "") -> bool:
    """The problem's first sentence reads as, or is taken from, an injected instruction block."""
    sentence = first_sentence(problem)
    if reads_injected(sentence):
        return True
    said = _words(sentence)
    if len(said) < ECHO_WORDS or not prompt:
        return False
    return any(f" {' '.join(said)} " in f" {' '.join(_words(b))} " for b in split_injected(prompt)[0])


@dataclass
class Finding:
    session_id: str
    field: str
    text: str


@dataclass
class ReadabilityReport:
    """Shares over every text field of a card set (tags aside); problems against their first prompts."""

    cards: int = 0
    fields: int = 0
    complete: int = 0
    holes: int = 0
    cuts: int = 0
    problems_with_prompt: int = 0
    echoes: int = 0
    injected: int = 0
    boilerplate: int = 0
    hole_kinds: dict[str, int] = field(default_factory=dict)  # fields per hole rule (`distill.holes`)
    examples: dict[str, list[Finding]] = field(default_factory=dict)

    def _note(self, kind: str, finding: Finding) -> None:
        found = self.examples.setdefault(kind, [])
        if len(found) < EXAMPLES:
            found.append(finding)

    def add(self, session_id: str, card: Card, first_prompt: str | None = None) -> None:
        self.cards += 1
        for name, text in _fields(card):
            self.fields += 1
            phrase = name.split("[", 1)[0] in PHRASE_FIELDS
            if is_complete(text, phrase=phrase):
                self.complete += 1
            else:
                self._note("incomplete", Finding(session_id, name, text))
            if kinds := hole_breaks(text):
                self.holes += 1
                self._note("hole", Finding(session_id, name, text))
                for kind in kinds:
                    self.hole_kinds[kind] = self.hole_kinds.get(kind, 0) + 1
            if boilerplate_of(text):
                self.boilerplate += 1
                self._note("boilerplate", Finding(session_id, name, text))
            if is_cut(text):
                self.cuts += 1
                self._note("cut", Finding(session_id, name, text))
        if first_prompt is not None:
            self.problems_with_prompt += 1
            if echoes(card.problem, split_injected(first_prompt)[1]):
                self.echoes += 1
                self._note("echo", Finding(session_id, "problem", card.problem))
        if from_injected(card.problem, first_prompt or ""):
            self.injected += 1
            self._note("injected", Finding(session_id, "problem", card.problem))

    def as_dict(self) -> dict[str, Any]:
        def share(count: int, total: int) -> float | None:
            return round(count / total, 4) if total else None

        return {
            "cards": self.cards,
            "fields": self.fields,
            "complete_share": share(self.complete, self.fields),
            "hole_share": share(self.holes, self.fields),
            "cut_share": share(self.cuts, self.fields),
            "holes": self.holes,
            "hole_kinds": dict(sorted(self.hole_kinds.items())),
            "hole_shapes_checked": len(HOLE_SHAPES),
            "cuts": self.cuts,
            "boilerplate": self.boilerplate,
            "problems_with_prompt": self.problems_with_prompt,
            "echo_share": share(self.echoes, self.problems_with_prompt),
            "echoes": self.echoes,
            "injected": self.injected,
            "examples": {
                kind: [{"session_id": f.session_id, "field": f.field, "text": f.text[:200]} for f in found]
                for kind, found in self.examples.items()
            },
        }


def _fields(card: Card) -> Iterable[tuple[str, str]]:
    yield "problem", card.problem
    if card.insight:
        yield "insight", card.insight
    for name in ("steps", "key_decisions", "dead_ends", "misleading_intuitions", "critical_checks"):
        for index, item in enumerate(getattr(card, name)):
            yield f"{name}[{index}]", item


def check_cards(
    cards: Mapping[str, Card], first_prompts: Mapping[str, str] | None = None
) -> ReadabilityReport:
    """The readability of a card set; `first_prompts` (session id → the first user message as typed) adds
    the echo and injected-block checks of each problem."""
    report = ReadabilityReport()
    for session_id, card in cards.items():
        prompt = first_prompts.get(session_id) if first_prompts is not None else None
        report.add(session_id, card, prompt)
    return report


def summary_line(label: str, report: dict[str, Any]) -> str:
    """One line of a report: the shares as percentages."""

    def pct(value: float | None) -> str:
        return "n/a" if value is None else f"{value * 100:.1f}%"

    return (
        f"{label}: {report['cards']} cards, {report['fields']} fields: complete statements {pct(report['complete_share'])},"
        f" with a hole {pct(report['hole_share'])} ({report['holes']}), cut {pct(report['cut_share'])} ({report['cuts']});"
        f" problems echoing the first prompt {pct(report['echo_share'])} ({report['echoes']} of"
        f" {report['problems_with_prompt']}), from an injected block {report['injected']},"
        f" agent-CLI boilerplate {report.get('boilerplate', 0)}"
    )
