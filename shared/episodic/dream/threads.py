"""REM: the week's sessions grouped into threads (same topic, same work item, same files), noise set aside.

Offline and deterministic. Each session is described by the words of its card problem, tags, titles and
first prompt (IDF-weighted over the week), its files and its branch. Two sessions are similar by the
largest of: the cosine of their word vectors, the Jaccard overlap of their files, and 0.8 when they share
a feature branch (a work item). Threads are grown by average-linkage agglomeration while the two closest
groups are at least LINK_SIMILARITY alike (average linkage does not chain a week into one blob).
Before grouping, three kinds of noise are filtered (and counted): retries (a session opening with the same
prompt as one less than RETRY_HOURS earlier), ticks of unattended loops (a first prompt repeated in
LOOP_TICKS or more sessions) and one-off chatter (one prompt, no files, nothing changed).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from episodic.dream.source import SessionDigest
from episodic.dream.statements import project_name
from episodic.kernel.models import Outcome

LINK_SIMILARITY = 0.3
RETRY_HOURS = 2.0
LOOP_TICKS = 3
MAX_THREADS = 8  # REM's picks (5-8 in the reference)
MIN_THREADS = 5
TOP_TERMS = 6
_MAIN_BRANCHES = frozenset({"", "main", "master", "develop", "dev", "trunk", "head"})
_WORD_RE = re.compile(r"[a-z][a-z0-9_+-]{2,}")
_STOP_WORDS = """the and for with that this from into when what which while have has had not but are was were
    been being can could should would will just also then than them they their there here about after
    before over under again more most some such only other your you our its it's use using used make made
    need needs want wants like does did doing done get got let lets see seen now all any each out off
    please thanks thank session work working file files code issue issues fix fixed fixes change changes
    check checks run runs running test tests make sure way one two new add added adds"""
_STOP = frozenset(_STOP_WORDS.split())


def words(text: str) -> list[str]:
    return [w for w in _WORD_RE.findall(text.lower()) if w not in _STOP]


def first_prompt_key(digest: SessionDigest) -> str:
    first = digest.prompts[0] if digest.prompts else digest.record.card.problem
    return " ".join(first.lower().split())[:200]


@dataclass
class Noise:
    retries: list[SessionDigest] = field(default_factory=list)
    loop_ticks: list[SessionDigest] = field(default_factory=list)
    chatter: list[SessionDigest] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        return {
            "retries": len(self.retries),
            "loop_ticks": len(self.loop_ticks),
            "chatter": len(self.chatter),
        }


def is_chatter(digest: SessionDigest) -> bool:
    card = digest.record.card
    return (
        len(digest.prompts) <= 1
        and not digest.files_touched
        and card.outcome is Outcome.INFORMATIONAL
        and not card.key_decisions
    )


def split_noise(digests: list[SessionDigest]) -> tuple[list[SessionDigest], Noise]:
    noise = Noise()
    keys = Counter(first_prompt_key(d) for d in digests)
    last_seen: dict[str, SessionDigest] = {}
    kept: list[SessionDigest] = []
    for digest in digests:
        key = first_prompt_key(digest)
        earlier = last_seen.get(key)
        last_seen[key] = digest
        if keys[key] >= LOOP_TICKS:
            noise.loop_ticks.append(digest)
        elif (
            earlier is not None
            and earlier.started_at
            and digest.started_at
            and digest.started_at - earlier.started_at < timedelta(hours=RETRY_HOURS)
        ):
            noise.retries.append(digest)
        elif is_chatter(digest):
            noise.chatter.append(digest)
        else:
            kept.append(digest)
    return kept, noise


def session_text(digest: SessionDigest) -> str:
    card = digest.record.card
    return " ".join([card.problem, " ".join(card.tags), " ".join(digest.titles), *digest.prompts[:1]])


def _vectors(digests: list[SessionDigest]) -> list[dict[str, float]]:
    bags = [Counter(words(session_text(d))) for d in digests]
    df = Counter(w for bag in bags for w in bag)
    n = len(digests)
    out = []
    for bag in bags:
        vec = {w: (1 + math.log(c)) * math.log(1 + n / df[w]) for w, c in bag.items()}
        norm = math.sqrt(sum(v * v for v in vec.values())) or 1.0
        out.append({w: v / norm for w, v in vec.items()})
    return out


def _cosine(a: dict[str, float], b: dict[str, float]) -> float:
    if len(a) > len(b):
        a, b = b, a
    return sum(v * b.get(w, 0.0) for w, v in a.items())


def _jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a and b else 0.0


def similarity_matrix(digests: list[SessionDigest]) -> list[list[float]]:
    vectors = _vectors(digests)
    files = [set(d.files_touched) for d in digests]
    branches = [d.record.git_branch.strip().lower() for d in digests]
    n = len(digests)
    sim = [[0.0] * n for _ in range(n)]
    for i in range(n):
        for j in range(i + 1, n):
            same_branch = branches[i] == branches[j] and branches[i] not in _MAIN_BRANCHES
            value = max(_cosine(vectors[i], vectors[j]), _jaccard(files[i], files[j]), 0.8 * same_branch)
            sim[i][j] = sim[j][i] = value
    return sim


def group(digests: list[SessionDigest]) -> list[list[int]]:
    """Average-linkage agglomeration down to LINK_SIMILARITY; groups as index lists, largest first."""
    sim = similarity_matrix(digests)
    groups: list[list[int]] = [[i] for i in range(len(digests))]

    def linkage(a: list[int], b: list[int]) -> float:
        return sum(sim[i][j] for i in a for j in b) / (len(a) * len(b))

    while len(groups) > 1:
        best, pair = -1.0, (0, 0)
        for x in range(len(groups)):
            for y in range(x + 1, len(groups)):
                value = linkage(groups[x], groups[y])
                if value > best:
                    best, pair = value, (x, y)
        if best < LINK_SIMILARITY:
            break
        x, y = pair
        groups[x] = sorted(groups[x] + groups[y])
        del groups[y]
    return sorted(groups, key=lambda g: (-len(g), g[0]))


@dataclass
class Thread:
    """Sessions that belong together; `terms` are the words they share most (the thread's signature)."""

    number: int
    sessions: list[SessionDigest]
    terms: list[str]
    label: str
    vector: Any = None  # the mean of its cards' problem vectors, when the cycle has an embedder

    @property
    def session_ids(self) -> list[str]:
        return [d.session_id for d in self.sessions]

    @property
    def projects(self) -> Counter[str]:
        return Counter(project_name(d.record.cwd, d.record.project) for d in self.sessions)


def _terms(sessions: list[SessionDigest]) -> list[str]:
    spread = Counter(w for d in sessions for w in set(words(session_text(d))))
    return [w for w, _ in sorted(spread.items(), key=lambda kv: (-kv[1], kv[0]))[:TOP_TERMS]]


LABEL_CHARS = 100


def _label(sessions: list[SessionDigest]) -> str:
    """The first sentence of the thread's first card problem, cut to LABEL_CHARS."""
    problem = " ".join(sessions[0].record.card.problem.split())
    first = re.split(r"(?<=[.!?])\s", problem, maxsplit=1)[0].rstrip(".")
    return first if len(first) <= LABEL_CHARS else first[: LABEL_CHARS - 1] + "…"


def find_threads(digests: list[SessionDigest]) -> tuple[list[Thread], Noise]:
    """Every candidate thread (largest first) and the noise set aside."""
    kept, noise = split_noise(digests)
    threads = []
    for number, indexes in enumerate(group(kept), 1):
        sessions = [kept[i] for i in indexes]
        threads.append(
            Thread(number=number, sessions=sessions, terms=_terms(sessions), label=_label(sessions))
        )
    return threads, noise


def pick_threads(threads: list[Thread]) -> list[Thread]:
    """REM's picks: the recurring threads (most sessions first) up to MAX_THREADS, topped up with the
    largest single sessions to MIN_THREADS so the gates have something to refuse on the record."""
    recurring = [t for t in threads if len(t.sessions) >= 2][:MAX_THREADS]
    singles = [t for t in threads if len(t.sessions) < 2]
    singles.sort(key=lambda t: -sum(len(d.prompts) for d in t.sessions))
    return recurring + singles[: max(0, MIN_THREADS - len(recurring))]
