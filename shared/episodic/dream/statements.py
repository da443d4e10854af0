"""What a record may say: statements taken from cards, checked and deduplicated by meaning.

A card field becomes a record item only when it reads as a statement: no hole left where a path or an
identifier was stripped ("the error in is…", "(line )": `distill.holes`, and a few more for joined or cut
lines), not a change-log line ("Updated X — replaced…"), not chatter (the distiller's chatter rules), not a
session's raw first prompt. Two statements "say the same thing" when their embeddings' cosine is at least the
embedder's `same_statement` threshold; two threads (this week's and an earlier record's) are the same work at
`same_thread`. Thresholds are data, per embedder family (THRESHOLDS below; how they were measured:
docs/dreaming.md).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath

import numpy as np

from episodic.distill.checks import chatter_breaks
from episodic.distill.holes import hole_breaks
from episodic.kernel.ports import Embedder
from episodic.parse.text import last_path_component


@dataclass(frozen=True)
class Thresholds:
    same_statement: float
    same_thread: float


THRESHOLDS: dict[str, Thresholds] = {
    "minilm": Thresholds(same_statement=0.80, same_thread=0.50),
    "hashing": Thresholds(same_statement=0.60, same_thread=0.30),
    "titan": Thresholds(same_statement=0.85, same_thread=0.55),
}
DEFAULT_THRESHOLDS = THRESHOLDS["minilm"]
PREFETCH_CHUNK = 48  # texts a prefetch call: under minilm.PARALLEL_MIN_TEXTS, so it stays in this process

# holes beyond the card checks' (episodic.distill.holes): what joined or cut lines leave in a dream's items
EXTRA_HOLES: tuple[tuple[str, str], ...] = (
    ("article before a verb", r"(?i)\b(?:the|a|an)\s+(?:are|were|and|or|to)\b"),
    ("word before punctuation", r"(?i)\b(?:in|at|to|on|line|file)\s+[,.;:)](?!\w)"),
    ("empty quotes", r"``|\"\s*\"|'\s'"),
    ("dangling end", r"(?i)\b(?:in|at|to|via|see|because|like|as|and|or|but)\s*\W?$"),
    ("double space", r"\S {2,}\S"),
    ("preposition before a conjunction", r"\b(?:for|in|to|from|of|with|into|on|at)\s+(?:and|or|but)\b"),
    ("joined lines", r"[a-z0-9_)] (?:[A-Z][a-z]+s (?:a|an|the)\b|(?:The|This|It|We|I|A|An|Only|Both|Is)\s)"),
    ("time word where a name was", r"(?i)\b(?:at|in|of|from)\s+now\s+\w+s\b"),  # "the change at now calls"
    (
        "verb missing its object",
        r"(?i)\bto (?:avoid|call|use|replace|import|set)\s+(?:at|in|on)\s+(?:every|each|all)\b",
    ),
    ("cut short", r"(?:…|\.\.\.)\s*$"),
    ("a version or a name missing", r"(?i)\bfrom\s+to\b|\b(?:use|uses|used|call|calls)\s+instead\b"),
    (  # a list item run into the next one: "… (setupClaudeCodeHook) Verifies it returns …"
        "joined items",
        r"[a-z0-9)] (?:Creates|Verifies|Avoids|Adds|Returns|Handles|Ensures|Checks|Calls|Writes|Used|Called"
        r"|Replaced|Added|Removed|Updated|Fixed)\b",
    ),
    ("a fragment of a comparison", r"(?i)^\W*(?:instead of|rather than)(?:\s+\S+){1,3}\W*$"),
)
_HOLES = tuple((name, re.compile(pattern)) for name, pattern in EXTRA_HOLES)

# a change log states what was edited, not what was decided or learnt
CHANGE_LOG_PATTERNS: tuple[str, ...] = (
    r"(?i)^\W*(?:updated|added|replaced|removed|deleted|renamed|changed|created|modified|moved|refactored"
    r"|implemented|wrote|rewrote|introduced|bumped|extracted|converted|committed|pushed|reverted|edited"
    r"|cleaned up|applied|fixed)\b(?!.*\b(?:because|so that|rather than|instead of|to avoid|since|over)\b)",
    r"(?i)^\W*(?:step \d|phase \d|\d+\.)\s",
    r"[✅✓✔❌]",
    r"(?i)^\W*(?:all |the )?(?:\d+ )?(?:tests?|checks?|builds?|lint(?:er)?|ci)\b[^.]{0,60}\b(?:pass(?:es|ed|ing)?|green"
    r"|succeed(?:s|ed)?|clean)\b",  # a status line
    r"(?i)^\W*(?:this|that|it|these|those)\s+(?:is|was|are|were)\b(?!(?:\s+\S+){8})",  # a vague subject
    r"\b[a-zA-Z]*[a-z][A-Z]\w*\b.*\b[a-zA-Z]*[a-z][A-Z]\w*\b",  # two camelCase identifiers: a list of edits
)
_CHANGE_LOG = tuple(re.compile(p) for p in CHANGE_LOG_PATTERNS)
# a record's item is read alone, weeks later: it must not lean on a sentence it was taken from
STANDALONE_RULES: tuple[tuple[str, str], ...] = (
    (  # "They shouldn't contain secrets that get committed.": who are they?
        "unresolved pronoun",
        r"(?i)^\W*(?:they|them|their|it|its|he|she|his|her|these|those)\b"
        r"(?!\s+(?:is|was)\s+\w+\s+(?:to|that)\b)",  # "It is safer to …" refers to nothing before it
    ),
    (
        "this or that without its noun",
        r"(?i)^\W*(?:this|that)\s+(?:is|was|are|were|should|shouldn'?t|will|would|can|could|does|doesn'?t|did"
        r"|didn'?t|has|had|means|makes|needs|won'?t)\b",
    ),
    # "The function at line 1033-1045 filters …": a place in one version of a file, not what the work was
    ("a code location", r"(?i)\b(?:at |on |in )?lines? \d+|\bL\d+\b|\b[\w-]+\.[a-z]{1,5}:\d+"),
)
_STANDALONE = tuple((name, re.compile(pattern)) for name, pattern in STANDALONE_RULES)
# a title names the work: a few words, whole (not cut, not a label left open like "When:")
MIN_TITLE_WORDS = 3
TITLE_RULES: tuple[tuple[str, str], ...] = (
    ("cut or left open", r"(?:…|\.\.\.|[:;,(—–-])\s*$"),
    (  # a template's heading ("When:", "Context: …") is not what the work was about
        "a template label",
        r"(?i)^\W*(?:when|where|what|why|how|context|problem|summary|task|description|steps|expected|actual"
        r"|goal|background|note|todo|issue|question|request)\s*:",
    ),
    ("starts mid-sentence", r"^[a-z]"),
)
_TITLE_RULES = tuple((name, re.compile(pattern)) for name, pattern in TITLE_RULES)
_WORTH_CHATTER = frozenset({"fragment", "first person", "addressed to the user", "narrative opener"})
MIN_WORDS = 4
_SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+")


def holes(text: str) -> list[str]:
    """The names of the hole patterns `text` shows: the card checks' and the dream's own (empty: whole)."""
    return [*hole_breaks(text), *(name for name, pattern in _HOLES if pattern.search(text))]


def is_change_log(text: str) -> bool:
    return any(p.search(text) for p in _CHANGE_LOG)


def normalised(text: str) -> str:
    return " ".join(re.sub(r"[^\w\s]", " ", text.lower()).split())


def prompt_sentences(prompts: Sequence[str]) -> frozenset[str]:
    """Every prompt, whole and sentence by sentence, normalised (what "as typed" is compared with)."""
    out = set()
    for prompt in prompts:
        out.add(normalised(prompt))
        out.update(normalised(s) for s in _SENTENCE_SPLIT.split(" ".join(prompt.split())))
    return frozenset(s for s in out if s)


def is_raw_prompt(text: str, prompts: Sequence[str] | frozenset[str]) -> bool:
    """The text is a prompt as typed: whole, one of its sentences, or its opening cut short."""
    mine = normalised(text.rstrip("…"))
    if len(mine) < 12:
        return False
    typed = prompts if isinstance(prompts, frozenset) else prompt_sentences(prompts)
    return mine in typed or (len(mine) >= 40 and any(p.startswith(mine) for p in typed))


def statement_problems(text: str, prompts: Sequence[str] | frozenset[str] = ()) -> list[str]:
    """Why `text` is not a statement a record should carry (empty: it is one)."""
    found = [f"hole: {h}" for h in holes(text)]
    found += [name for name, pattern in _STANDALONE if pattern.search(text)]
    if is_change_log(text):
        found.append("change log")
    found += [f"chatter: {c}" for c in chatter_breaks(text) if c in _WORTH_CHATTER]
    if len(text.split()) < MIN_WORDS and "fragment" not in " ".join(found):
        found.append("chatter: fragment")
    if prompts and is_raw_prompt(text, prompts):
        found.append("raw prompt")
    return found


def title_problems(title: str) -> list[str]:
    """Why `title` cannot head a thread (empty: it can): too short, cut, a label, or holed."""
    found = [name for name, pattern in (*_TITLE_RULES, *_STANDALONE) if pattern.search(title)]
    if len(title.split()) < MIN_TITLE_WORDS:
        found.append(f"fewer than {MIN_TITLE_WORDS} words")
    return found + [f"hole: {h}" for h in holes(title)]


def first_sentence(text: str, limit: int = 110) -> str:
    """The first sentence, cut at a word boundary to `limit` characters, without its full stop."""
    flat = " ".join(text.split())
    first = re.split(r"(?<=[.!?])\s", flat, maxsplit=1)[0].rstrip(".")
    if len(first) <= limit:
        return first
    head = first[:limit]
    clause = max(
        head.rfind(", "), head.rfind("; "), head.rfind(" — "), head.rfind(" while "), head.rfind(" when ")
    )
    if clause >= limit // 2:  # a whole clause reads better than a cut one
        return head[:clause].rstrip(",;:—- ")
    return head.rsplit(" ", 1)[0].rstrip(",;:—-") + "…"


_ADDRESSING = re.compile(
    r"(?i)^\W*(?:(?:hey|hi|ok|okay|so|now|please|pls|can you|could you|would you|i want(?: you)? to"
    r"|i need(?: you)? to|i'?d like(?: you)? to|let'?s|we need to|help me|go ahead and)\b[\s,:]*)+"
)
_JOINED_LINE = re.compile(
    r"(?<=[a-z0-9)]) (?=(?:The|This|It|We|I|Please|Also|Is|Are|Can|Could|Should|Does|Why|How|What|When)\b)"
    r"|\b(?:and )?let me know\b"
)
_TRAILING_POLITENESS = re.compile(r"(?i)[\s,]*(?:please|pls|thanks|thank you|for me|asap)\W*$")


def as_title(text: str, limit: int = 90) -> str:
    """A title from a card's problem: its first sentence without the request's addressing ("can you",
    "please"), capitalised, cut at a word boundary. An LLM's problem is already one; a heuristic card's
    problem is the user's opening request, and this is as far as it can be distilled without a model."""
    first = _JOINED_LINE.split(first_sentence(text, 400), 1)[0]
    core = _TRAILING_POLITENESS.sub("", _ADDRESSING.sub("", first)).strip(" ,;:-—?!")
    core = core or first
    core = core[0].upper() + core[1:]
    return first_sentence(core, limit)


_DATED_CLONE = re.compile(r"^(?:19|20)\d{6}[-_]")
_WORKTREE_PARTS = frozenset({".worktrees", "worktrees", ".worktree", "worktree", ".claude", "wt", ".git"})


def project_name(cwd: str, fallback: str) -> str:
    """The project as its user knows it: the repository folder, not a worktree's own name ("2" in
    `cli/.worktrees/2` is the cli repository's second worktree). `fallback` is the card's project: when the
    parser named another folder than the cwd's own (a worktree's `.git` file named its repository), it stands."""
    if fallback and cwd and fallback != last_path_component(cwd):
        return fallback
    parts = [p for p in PurePosixPath(cwd.replace("\\", "/")).parts if p not in ("/", "")]
    for i, part in enumerate(parts):
        if part in _WORKTREE_PARTS and i > 0:
            return parts[i - 1]
    if parts and (parts[-1].isdigit() or len(parts[-1]) <= 2) and len(parts) > 1:
        return parts[-2]
    name = _DATED_CLONE.sub("", parts[-1]) if parts else ""  # "20260205-cli": a dated clone of cli
    return name or fallback or "?"


class Meaning:
    """Statement vectors from the configured embedder, embedded once per text and compared by cosine."""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder
        family = embedder.id.split("-", 1)[0].lower()
        self.thresholds = THRESHOLDS.get(family, DEFAULT_THRESHOLDS)
        self._vectors: dict[str, np.ndarray] = {}

    def vectors(self, texts: Sequence[str]) -> np.ndarray:
        missing = [t for t in dict.fromkeys(texts) if t not in self._vectors]
        if missing:
            for text, vector in zip(missing, self.embedder.embed(missing), strict=True):
                self._vectors[text] = np.asarray(vector, dtype=np.float32)
        if not texts:
            return np.zeros((0, self.embedder.dimension), dtype=np.float32)
        return np.stack([self._vectors[t] for t in texts])

    def prefetch(self, texts: Sequence[str]) -> None:
        """Embed now, in as few model calls as possible, texts compared later (a local model's call costs
        about as much for one short text as for dozens: each streams all its weights). Chunks stay below a
        bulk call, whose worker processes cost more to start than a week's statements take."""
        missing = [t for t in dict.fromkeys(texts) if t not in self._vectors]
        for start in range(0, len(missing), PREFETCH_CHUNK):
            self.vectors(missing[start : start + PREFETCH_CHUNK])

    def centroid(self, texts: Sequence[str]) -> np.ndarray:
        mean = self.vectors(texts).mean(axis=0)
        norm = float(np.linalg.norm(mean))
        return mean / norm if norm else mean

    def similarity(self, a: str, b: str) -> float:
        va, vb = self.vectors([a, b])
        return float(va @ vb)

    def distinct(self, texts: Sequence[str]) -> list[int]:
        """Indexes of the texts kept when each later text saying the same thing as a kept one is dropped."""
        if len(texts) < 2:  # nothing to compare: no vector needed
            return list(range(len(texts)))
        vectors = self.vectors(texts)
        kept: list[int] = []
        for i in range(len(texts)):
            if all(float(vectors[i] @ vectors[j]) < self.thresholds.same_statement for j in kept):
                kept.append(i)
        return kept

    def about(self, text: str, topic: str) -> bool:
        """`text` is about `topic` (the embedder's calibrated "similar enough" cosine)."""
        return self.similarity(text, topic) >= self.embedder.default_min_similarity
