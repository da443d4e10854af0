"""Holes: what is left of a sentence when an identifier, a path or a code span was removed from it.

"The lint error in is a bug", "(line )", "exit status)", "a variable with." read as broken text to the
agent that receives the card. A hole is found by the grammar around the gap, never by the removed word
(rules as data, real examples in tests/unit/distill/test_card_holes.py). `without_holes` drops the clause that holds
one (a bracketed aside, or the part between commas, semicolons or dashes) and keeps the rest only when it
is still a statement. The heuristic distiller also marks each gap it makes (`GAP`), so its own removals are found
whatever the grammar around them.
"""

from __future__ import annotations

import re
from functools import lru_cache

# a word that needs a word after it, directly before punctuation, or before a verb
_NEEDS_OBJECT = r"(?:with|of|for|from|into|via|the|an|called|named|between|than|like|after)"
# words after which "in" / "at" end a phrasal verb or an idiom and need no object ("logged in", "look at")
_PARTICLE_VERBS = (
    r"(?:opted|opt|logged|log|signed|sign|checked|check|built|baked|mixed|plugged|plug|filled|fill|zoomed|zoom"
    r"|kicked|kick|locked|lock|factored|chimed|pitched|handed|hand|turned|turn|given|give|gave|dove|dive|dig"
    r"|dug|caved|tucked|dropped|drop|popped|pop|stepped|step|stayed|stay|moved|move|came|come|comes|coming"
    r"|went|go|goes|going|got|get|gets|let|put|brought|bring|kept|keep|stuck|fit|fits|sat|sit|hung|hang"
    r"|broke|break|sink|sank|sunk|cut|cuts|join|joined|joins|sneak|snuck|creep|crept|thrown|threw|roped"
    r"|keyed|typed|phased|settled|folded|wired|bake|mix|piled|pulled|pull|rolled|roll|leaned|jumped|look"
    r"|looks|looked|aim|aimed|arrive|arrived|arrives|stop|stopped|stops|point|pointed|points|glance|glanced"
    r"|hint|hinted|guess|guessed|laugh|laughed|work|works|worked|is|are|was|were|be|been|being|and|or|but"
    r"|pointing|looking|aiming|arriving|logging|signing|checking|opting|getting|digging|diving|plugging"
    r"|filling|mixing|zooming|stopping|working|glancing|staying|moving|the|a)"
)
# where the distiller removed a name, a path or a code span it marks the gap, so the clause around it goes
# whatever the grammar left; `closed` removes the marks that remain (a clause that stood without the name)
GAP = "\u2060"
HOLE_RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("removed name", re.compile(GAP)),
    ("empty brackets", re.compile(r"[(\[{]\s*[)\]}]")),
    (
        "bracket missing its word",
        re.compile(r"(?i)\((?:line|file|in|at|see|from|via|exit code|status|code)\s*[),]"),
    ),
    ("word missing before punctuation", re.compile(rf"(?i)\b{_NEEDS_OBJECT}\s*[,.;:!?)](?!\w)")),
    (
        "word missing before the verb",
        re.compile(r"(?i)\b(?:in|of|for|from|with|into|the|an|at)\s+(?:is|are|was|were)\b"),
    ),
    (
        "two function words in a row",
        re.compile(r"(?i)\b(?:the|an)\s+(?:the|an|a|of|in|to|with|is|was|while|and|or|but)\b"),
    ),
    (
        "two prepositions in a row",
        re.compile(r"(?i)\b(?:in|at|of|from|into)\s+(?:in|at|of|from|with|into)\b(?!-)"),
    ),
    # "Updated Go from to 1.25.6", "The change at now calls …": the removed word sat between the two
    (
        "word missing between two words",
        re.compile(
            r"(?i)\bfrom\s+to\b|\bat\s+now\b|\bbetween\s+and\b|\bto\s+for\b|\bwith\s+as\s+the\b|\bin\s+not\b"
            r"|\bboth\s+and\s*[.,;:]"
        ),
    ),
    ("line number missing", re.compile(r"(?i)\b(?:at|on) line\s*(?:[,.;:)]|$)")),
    ("dangling article at the end", re.compile(r"(?i)\b(?:the|an|with|of|for|from|into)\s*$")),
    # where a path or a name was removed: "makes more sense because. Both files …"
    (
        "connective missing its clause",
        re.compile(r"(?i)\b(?:because|since|whereas|although)\s*[.,;!?](?!\w)"),
    ),
    # "writes transcripts to but X looks for them at", "are sent to, but", "a command line to or, and"
    (
        "preposition missing its word before a conjunction",
        re.compile(
            r"(?i)\b(?:to|at|from|into|via|as)\s*,?\s+(?:but|or|so)\b"
            r"|\b(?:to|at|into|via)\s+and\b(?!\s+(?:from|back|forth|including)\b)"
        ),
    ),
    ("preposition missing its word before a comma", re.compile(r"(?i)\b(?:to|at|as|into|via)\s*,(?=\s)")),
    # "is configured in, but", "unused parameters in. Asked": not after a phrasal verb ("logged in, but")
    (
        "in or at missing its word",
        re.compile(
            rf"(?i)\b(?!{_PARTICLE_VERBS}\b)[a-z]+\s+(?:in|at)\s*"
            r"(?:,\s+(?:but|and|or|so|the)\b|\s+(?:but|so)\b|[.;](?=\s+[A-Z])|[.;]?\s*$)"
        ),
    ),
    ("gap of spaces after a preposition", re.compile(r"(?i)\b(?:in|at|to|from|of|on|into|with)\s{3,}\S")),
    ("relative word missing its clause", re.compile(r"(?i)\b(?:approach|way|so)\s+that\s*[.;](?!\w)")),
    # "splits on every comma with instead of using the csv module": the name used sat before "instead of"
    (
        "word missing before instead of",
        re.compile(
            r"(?i)\b(?:with|to|from|of|for|into|via|by|the|an|using)"
            r"\s+instead\s+of\b"
        ),
    ),
    # "The signature is now but the test calls pass only 3 args": what it is now was removed
    (
        "verb missing its complement",
        re.compile(r"(?i)\b(?:is|are|was|were)\s+now\s*,?\s+(?:but|whereas|instead|and)\b"),
    ),
    # "npm test: failed (Tests: failed, passed)": a test report's counts removed with the other numbers
    (
        "count missing its number",
        re.compile(
            r"\b(?:Tests|Test Suites|Suites|Assertions|Examples|Specs)\s*:\s*(?i:failed|passed|skipped|pending|total)\b"
            r"|\b(?i:failed|passed|skipped|pending),\s*(?i:failed|passed|skipped|pending|total)\b"
        ),
    ),
)
# "because." where the reasons were a list the card could not keep: the sentence stands without the word
MENDS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"(?i)[\s,]+(?:because|since)\s*(?=[.;!?](?!\w)|$)"), ""),
)
# words that open a clause leaning on the one before it
_TAIL_CLAUSE = re.compile(
    r"(?i)(?:instead|and|but|or|so|which|who|whose|where|when|while|because|since|although|though|then|than|that"
    r"|as|with|without|including|plus|unless|until|if|whereas|rather|not|to|e\.g\.|i\.e\.|even|also|too)\b"
)
_CLAUSE_SPLIT = re.compile(r"(?<=[,;])\s+|\s+[—–]\s+|\s+-\s+")
_ASIDE = re.compile(r"\s*\([^()]*\)")
MIN_WORDS = 4


def closed(text: str) -> str:
    """`text` without gap marks, its spaces and punctuation tidied where one stood."""
    if GAP not in text:
        return text
    text = re.sub(rf"\s*{GAP}+\s*", " ", text)
    return re.sub(r"\s+([,.;:!?)])", r"\1", re.sub(r"\s{2,}", " ", text)).strip()


def _unbalanced(text: str) -> bool:
    depth = 0
    for char in text:
        if char in "([":
            depth += 1
        elif char in ")]":
            depth -= 1
            if depth < 0:
                return True
    return False


UNBALANCED = "closing bracket without its opening"
HOLE_SHAPES = (*(name for name, _ in HOLE_RULES), UNBALANCED)  # every shape `hole_breaks` can name


@lru_cache(maxsize=8192)
def hole_breaks(text: str) -> tuple[str, ...]:
    """The names of the hole rules `text` breaks (an unbalanced closing bracket is one too)."""
    found = [name for name, pattern in HOLE_RULES if pattern.search(text)]
    if (")" in text or "]" in text) and _unbalanced(text):
        found.append(UNBALANCED)
    return tuple(found)


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")


@lru_cache(maxsize=8192)
def without_holes(text: str) -> str:
    """`text` with every clause holding a hole dropped, sentence by sentence; a sentence that is no longer
    a statement goes whole; "" when nothing is left."""
    if not hole_breaks(text):
        return text
    for pattern, replacement in MENDS:
        text = pattern.sub(replacement, text)
    kept = [s for s in (_sentence_without_holes(part) for part in _SENTENCE_END.split(text)) if s]
    return " ".join(kept)


def _sentence_without_holes(text: str) -> str:
    if not hole_breaks(text):
        return text
    text = _ASIDE.sub(
        lambda m: (
            "" if hole_breaks(m.group(0).strip()[1:-1] + ".") or hole_breaks(m.group(0)) else m.group(0)
        ),
        text,
    )
    if hole_breaks(text):
        ending = "." if text.rstrip().endswith(".") else ""
        parts = [part for part in _CLAUSE_SPLIT.split(text) if part]
        kept = [part for part in parts if not hole_breaks(part.rstrip(",;") + ending)]
        if kept and kept[0] is not parts[0] and _TAIL_CLAUSE.match(kept[0]):
            return ""  # the main clause went: "instead of all the commits from main." is not a statement
        text = " ".join(kept).strip().rstrip(",;:—–- ")
        if text and ending and not text.endswith((".", "!", "?")):
            text += "."
    text = re.sub(r"\s{2,}", " ", text).strip()
    if hole_breaks(text) or len(text.split()) < MIN_WORDS:
        return ""
    return text
