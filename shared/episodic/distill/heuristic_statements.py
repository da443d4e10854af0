"""Transcript sentences rewritten as card statements: "Perfect! I think the cache is stale." becomes
"The cache is stale."; a question, a to-do, tool narration or a fragment becomes "" (empty beats noisy).

The rewrite strips what a statement never starts with (interjections, connectives, hedges of the
speaker); whatever still breaks a chatter rule of `checks.CHATTER_RULES` is dropped, not repaired."""

from __future__ import annotations

import re
from functools import lru_cache

from episodic.distill.checks import chatter_breaks
from episodic.distill.heuristic_text import safe_line
from episodic.distill.wording_rules import RuleSet, rule

# leading words a statement never starts with; removed repeatedly ("OK, so now …")
_LEADING_RE = re.compile(
    r"(?i)^\W*(?:(?:perfect|great|excellent|awesome|good|nice|ok|okay|alright|sure|yes|yep|hmm+|wait|ah|oh|wow|done"
    r"|got it|cool|interesting|understood|absolutely|exactly|right|good news|important|note)\s*[!.,:;—–-]+(?!\w)"
    r"|(?:so|now|also|then|finally|actually|basically|essentially|anyway|and|but|however|though|ok so|okay so)\b,?"
    r"|(?:I (?:think|believe|suspect|see|notice|found|realized?|can see|now see|understand)|it (?:seems|looks like)"
    r"|looks like|it appears|apparently)(?: that)?\b,?)\s*"
)
# a decision stated as the speaker's intent: "I'll rebase instead of merging" decides "Rebase instead of merging"
_INTENT_RE = re.compile(
    r"(?i)^(?:I'?ll|I will|I'm going to|I am going to|let me|let'?s|we'?ll|we will|we should|I should|I'?d)(?:\s+help(?: you)?)?\s+(?=[a-z])"
)
_TRAILING_CHARS = ":;,–—-"
_TRAILING_RE = re.compile(rf"\s*[{_TRAILING_CHARS}]+\s*$")
_SPEAKER_RULES = RuleSet(  # the speaker's own plans and hedges: never a statement
    (
        rule("hedge", r"(?i)\b(?:maybe|perhaps|I guess|not sure|I wonder)\b"),
        rule("request", r"(?i)^\W*(?:please|can you|could you|would you|let'?s|make sure|don'?t forget)\b"),
    )
)


def strip_speaker(text: str) -> str:
    """Interjections, connectives and the speaker's hedges removed from the front, colons from the end."""
    text = text.lstrip("-–—•*> ")  # a list item's marker is not part of the statement
    for _ in range(4):
        stripped = _LEADING_RE.sub("", text, count=1)
        if stripped == text:
            break
        text = stripped
    if text.rstrip()[-1:] in _TRAILING_CHARS:  # else nothing trails (speed: no scan of every space)
        text = _TRAILING_RE.sub("", text)
    if text[:1].islower() and not re.match(r"\w+[._/(-]\w", text):  # a code name keeps its case
        text = text[0].upper() + text[1:]
    return text


@lru_cache(maxsize=4096)  # the same sentence is a candidate for several fields
def as_statement(sentence: str, limit: int = 200, *, intent: bool = False) -> str:
    """A short declarative statement from one sentence, or "" when it is chatter or too long to keep whole.

    With `intent` (decisions), the speaker's "I'll …" / "Let's …" becomes the decision itself."""
    line = safe_line(sentence, 2000)
    if not line:
        return ""
    line = strip_speaker(line)
    if intent:
        line = strip_speaker(_INTENT_RE.sub("", line, count=1))
    if len(line) > limit or chatter_breaks(line) or _SPEAKER_RULES.matching(line):
        return ""
    return line
