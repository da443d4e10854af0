"""REM offline: a thread's extract read from its sessions' cards (the distilled statements), not re-mined
from raw prompts.

- title: the first sentence of the problem of the thread's most central card (closest to the mean of its
  cards' problem vectors);
- decisions: the cards' `key_decisions`; where no card of the thread has one, decision sentences of its
  latest transcript that are about the thread's title (cosine at the embedder's "similar" threshold);
- insights: the cards' `insight` and `misleading_intuitions`;
- unfinished: the thread's latest session ended unverified or failed; the reason comes from its card (the
  last check it names, what still failed);
- risks: a dead end met in two or more sessions, and a fix left unverified that a later session of the
  week touched again.
Every statement passes `statements.statement_problems` (no holes, no change log, no chatter, no prompt).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from pathlib import PurePosixPath

import numpy as np

from episodic.dream.extract import Claim, InsightClaim, ThreadExtract, UnfinishedClaim, deep_sentences
from episodic.dream.source import SessionDigest
from episodic.dream.statements import (
    Meaning,
    as_title,
    first_sentence,
    is_raw_prompt,
    statement_problems,
    title_problems,
)
from episodic.dream.threads import Thread
from episodic.kernel.models import Outcome, Trajectory

OPEN = (Outcome.UNVERIFIED, Outcome.FAILED)
_SENTENCES = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'])")
_LEAD_LABEL = re.compile(r"^(?:Asked|Symptom):\s*")  # the heuristic card's labels inside its problem


def _day(digest: SessionDigest) -> str:
    return digest.started_at.date().isoformat() if digest.started_at else "undated"


def thread_problems(thread: Thread) -> list[str]:
    """The problem texts `thread_title` and `thread_vector` embed (for `Meaning.prefetch`)."""
    raw = [d.record.card.problem for d in thread.sessions]
    return raw + ([" ".join(p.split()) for p in raw] if len(raw) > 2 else [])


def thread_title(
    sessions: Sequence[SessionDigest], meaning: Meaning, prompts: frozenset[str] = frozenset()
) -> str:
    """The first sentence of the most central card's problem (the one nearest the thread's mean) that is
    not a prompt as typed and reads as a title (`statements.title_problems`: not one word, not cut, not a
    label like "When:", no hole, no code location, no pronoun without its noun), else its next sentences,
    then the other cards' problems; when none is one (a heuristic card may state only the opening
    request), what the thread worked on: its most touched files and its cards' tags."""
    problems = [" ".join(d.record.card.problem.split()) for d in sessions]
    order = list(range(len(problems)))
    if len(problems) > 2:
        vectors = meaning.vectors(problems)
        order.sort(key=lambda i: -float(vectors[i] @ vectors.mean(axis=0)))
    for i in order:
        for sentence in _SENTENCES.split(problems[i]):
            title = as_title(_LEAD_LABEL.sub("", sentence))
            if title and not is_raw_prompt(title, prompts) and not title_problems(title):
                return title
    return _work_title(sessions)


def _work_title(sessions: Sequence[SessionDigest]) -> str:
    files = Counter(PurePosixPath(f).name for d in sessions for f in d.files_touched)
    tags = Counter(t for d in sessions for t in d.record.card.tags)
    named = " and ".join(f for f, _ in files.most_common(2))
    tagged = ", ".join(t for t, _ in tags.most_common(3))
    if not named:
        return (
            f"Work tagged {tagged}" if tagged else f"Work of {len(sessions)} session(s) without a file edit"
        )
    return f"Work on {named}" + (f" ({tagged})" if tagged else "")


def thread_vector(thread: Thread, meaning: Meaning) -> np.ndarray:
    """The thread's meaning, as threads are joined across weeks: its cards' problem vectors averaged, then
    averaged with its title's (what an earlier record keeps of it)."""
    both = (
        meaning.centroid([d.record.card.problem for d in thread.sessions])
        + meaning.vectors([thread.label])[0]
    )
    norm = float(np.linalg.norm(both))
    return both / norm if norm else both


def _ok(text: str, prompts: Sequence[str] | frozenset[str]) -> bool:
    return bool(text.strip()) and not statement_problems(text, prompts)


def _open_reason(digest: SessionDigest) -> str:
    """Why the session is not done, from its card: what still failed, or which check is missing."""
    card = digest.record.card
    checks = [c for c in card.critical_checks if c.strip()]
    if card.outcome is Outcome.FAILED:
        still = checks[-1] if checks else (card.dead_ends[-1] if card.dead_ends else "")
        return "the last check after the last change failed" + (
            f" ({first_sentence(still, 160)})" if still else ""
        )
    failing = [c for c in checks if "fail" in c.lower()]
    last = f" (the card's last failing check: {first_sentence(failing[-1], 160)})" if failing else ""
    return "no passing check ran after the last change" + last


def _unfinished(thread: Thread, title: str) -> list[UnfinishedClaim]:
    latest = thread.sessions[-1]
    if latest.record.card.outcome not in OPEN:
        return []
    resumed = len(thread.sessions) - 1
    days = sorted({_day(d) for d in thread.sessions})
    cost = f"resumed {resumed} time(s) over {len(days)} day(s) and still open" if resumed else ""
    return [
        UnfinishedClaim(
            text=f"{title}: its last session ({_day(latest)}) ended {latest.record.card.outcome.value}, "
            f"{_open_reason(latest)}",
            sessions=[d.session_id for d in thread.sessions][-3:],
            carry_over_cost=cost,
        )
    ]


def _dead_ends(
    thread: Thread, prompts: Sequence[str] | frozenset[str]
) -> list[tuple[SessionDigest, str]] | None:
    """The thread's dead ends worth comparing (None when fewer than two sessions met one)."""
    dead = [(d, e) for d in thread.sessions for e in d.record.card.dead_ends if _ok(e, prompts)]
    return dead if len({d.session_id for d, _ in dead}) >= 2 else None


def _risks(thread: Thread, meaning: Meaning, prompts: Sequence[str] | frozenset[str]) -> list[Claim]:
    risks: list[Claim] = []
    dead = _dead_ends(thread, prompts)
    if dead is not None:
        texts = [e for _, e in dead]
        vectors = meaning.vectors(texts)
        for i, (digest, text) in enumerate(dead):  # a dead end met again in another session
            again = [
                d.session_id
                for j, (d, _) in enumerate(dead)
                if d.session_id != digest.session_id
                and float(vectors[i] @ vectors[j]) >= meaning.thresholds.same_thread
            ]
            if again:
                risks.append(
                    Claim(
                        text=f"A dead end met in {1 + len(set(again))} sessions: {first_sentence(text, 200)}",
                        sessions=list(dict.fromkeys([digest.session_id, *again]))[:6],
                    )
                )
                break
    for n, digest in enumerate(thread.sessions[:-1]):
        if digest.record.card.outcome in OPEN:
            later = thread.sessions[n + 1 :]
            risks.append(
                Claim(
                    text=f"{thread.label or 'A thread'}: a change left {digest.record.card.outcome.value} on "
                    f"{_day(digest)} was touched again "
                    f"by {len(later)} later session(s): {_open_reason(digest)}",
                    sessions=[digest.session_id, *[d.session_id for d in later][:3]],
                )
            )
            break
    return risks


def _card_claims(thread: Thread, prompts: frozenset[str]) -> tuple[list[Claim], list[InsightClaim]]:
    """The decisions and insights the thread's cards state, each a statement (`_ok`)."""
    decisions: list[Claim] = []
    insights: list[InsightClaim] = []
    for digest in thread.sessions:
        card = digest.record.card
        decisions += [
            Claim(text=d[:400], sessions=[digest.session_id]) for d in card.key_decisions if _ok(d, prompts)
        ]
        verified = card.outcome is Outcome.VERIFIED
        if _ok(card.insight, prompts):
            insights.append(
                InsightClaim(text=card.insight[:400], sessions=[digest.session_id], verified=verified)
            )
        insights += [
            InsightClaim(text=f"Misleading: {m[:380]}", sessions=[digest.session_id], verified=verified)
            for m in card.misleading_intuitions
            if _ok(m, prompts)
        ]
    return decisions, insights


def compared_statements(thread: Thread, prompts: frozenset[str]) -> list[str]:
    """The card statements `card_extract` compares by meaning (two or more of a kind), so that a week's
    can be embedded in one model call beforehand (`Meaning.prefetch`)."""
    decisions, insights = _card_claims(thread, prompts)
    texts = [e for _, e in _dead_ends(thread, prompts) or []]
    for kind in ([c.text for c in decisions], [i.text for i in insights]):
        texts += kind if len(kind) > 1 else []  # `Meaning.distinct` needs no vector for one
    return texts


def card_extract(
    thread: Thread, deep: Trajectory | None, meaning: Meaning, prompts: frozenset[str]
) -> ThreadExtract:
    """`prompts`: the week's prompts (no item may be one of them as typed)."""
    title = thread.label or thread_title(thread.sessions, meaning, prompts)
    decisions, insights = _card_claims(thread, prompts)
    if not decisions and deep is not None:  # the card made none: the transcript's, when about the thread
        found, _ = deep_sentences(deep)
        latest = thread.sessions[-1].session_id
        decisions += [
            Claim(text=s, sessions=[latest]) for s in found if _ok(s, prompts) and meaning.about(s, title)
        ]
    kept = meaning.distinct([c.text for c in decisions])
    return ThreadExtract(
        label=title,
        summary=_summary(thread),
        decisions=[decisions[i] for i in kept][:8],
        unfinished=_unfinished(thread, title)[:4],
        insights=[insights[i] for i in meaning.distinct([i.text for i in insights])][:6],
        risks=_risks(thread, meaning, prompts)[:4],
    )


def _summary(thread: Thread) -> str:
    days = sorted({_day(d) for d in thread.sessions})
    outcomes: dict[str, int] = {}
    for d in thread.sessions:
        outcomes[d.record.card.outcome.value] = outcomes.get(d.record.card.outcome.value, 0) + 1
    told = ", ".join(f"{n} {name}" for name, n in sorted(outcomes.items(), key=lambda kv: -kv[1]))
    span = days[0] if len(days) == 1 else f"{days[0]} to {days[-1]}"
    return f"{len(thread.sessions)} session(s), {span} ({told})"
