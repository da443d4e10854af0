"""REM's deep extraction: what a thread decided, left unfinished, learnt and risked, each with its sessions.

`ThreadExtract` is the one shape both paths produce: offline from the cards' fields (`card_extract`); with
an LLM (`llm.DreamModel`) from the thread's cards, its survey blocks and one budgeted transcript survey. Either way a claim citing a session outside
the thread is dropped and counted (summary drift), and an insight is `verified` only when a session it
cites ended verified (context poisoning).
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from episodic.dream.source import SessionDigest, WeekSource
from episodic.dream.threads import Thread
from episodic.kernel.errors import EpisodicError
from episodic.kernel.models import Outcome, Trajectory

MAX_DEEP = 8  # deep extractions a week (the reference caps reading at about eight)
DEEP_SENTENCES = 2
_DECISION_RE = re.compile(
    r"\b(?:decided|decision|we(?:'ll| will) (?:go with|use|keep)|going with|chose|opted|instead of|settled on)\b",
    re.I,
)
_UNFINISHED_RE = re.compile(
    r"\b(?:todo|next step|remaining|not yet|follow[- ]up|left to do|still (?:need|fails|failing)|pending|later)\b",
    re.I,
)
_SENTENCE_RE = re.compile(r"(?<=[.!?])\s+")


class DreamPhaseError(EpisodicError):
    """A phase of the dream failed: the week gets no record and the run fails loudly with the reason."""

    def __init__(self, phase: str, week: str, reason: str) -> None:
        super().__init__(f"dream {week}: the {phase} phase failed: {reason}")
        self.phase = phase
        self.week = week
        self.reason = reason


class Claim(BaseModel):
    text: str = Field(min_length=1, max_length=400)
    sessions: list[str] = Field(min_length=1, max_length=12, description="full session ids it came from")


class InsightClaim(Claim):
    verified: bool = False


class UnfinishedClaim(Claim):
    carry_over_cost: str = Field(default="", max_length=300)


class ThreadExtract(BaseModel):
    label: str = Field(min_length=1, max_length=160)
    summary: str = Field(default="", max_length=600)
    decisions: list[Claim] = Field(default_factory=list, max_length=8)
    unfinished: list[UnfinishedClaim] = Field(default_factory=list, max_length=4)
    insights: list[InsightClaim] = Field(default_factory=list, max_length=6)
    risks: list[Claim] = Field(default_factory=list, max_length=4)


def _sentences(text: str, pattern: re.Pattern[str]) -> list[str]:
    found = []
    for sentence in _SENTENCE_RE.split(" ".join(text.split())):
        if pattern.search(sentence) and 20 <= len(sentence) <= 300 and "`" not in sentence:
            found.append(sentence)
    return found


def deep_sentences(trajectory: Trajectory) -> tuple[list[str], list[str]]:
    """Decision sentences from the assistant's words, unfinished-work sentences from its last words."""
    spoken = [e.text for e in trajectory.events if e.kind == "assistant" and e.text and not e.agent_id]
    decisions = [s for text in spoken for s in _sentences(text, _DECISION_RE)]
    unfinished = _sentences(trajectory.closing_summary, _UNFINISHED_RE)
    return decisions[-DEEP_SENTENCES:], unfinished[:DEEP_SENTENCES]


def pick_deep(threads: list[Thread]) -> dict[int, SessionDigest]:
    """One session per thread to read deeply (its latest with a transcript), MAX_DEEP a week at most."""
    chosen: dict[int, SessionDigest] = {}
    for thread in threads:
        if len(chosen) >= MAX_DEEP:
            break
        with_transcript = [d for d in thread.sessions if d.transcript_found]
        if with_transcript:
            chosen[thread.number] = with_transcript[-1]
    return chosen


def read_deep(source: WeekSource, threads: list[Thread]) -> dict[int, Trajectory]:
    out = {}
    for number, digest in pick_deep(threads).items():
        trajectory = source.deep_detail(digest)
        if trajectory is not None:
            out[number] = trajectory
    return out


def validate_extract(payload: Any, thread: Thread) -> tuple[ThreadExtract, int]:
    """An LLM's extract checked against the schema and the thread: returns it with the uncited claims
    dropped, and how many were dropped. Raises ValueError with the reason when the shape is wrong."""
    try:
        extract = ThreadExtract.model_validate(payload)
    except ValidationError as exc:
        raise ValueError(f"the model's extract does not match the schema: {exc.errors()[:3]}") from exc
    allowed = set(thread.session_ids)
    by_short = {sid[:8]: sid for sid in allowed}
    dropped = 0

    def keep(claims: list[Any]) -> list[Any]:
        nonlocal dropped
        kept = []
        for claim in claims:
            ids = [sid if sid in allowed else by_short.get(sid[:8], "") for sid in claim.sessions]
            ids = [sid for sid in ids if sid]
            if ids:
                kept.append(claim.model_copy(update={"sessions": ids}))
            else:
                dropped += 1
        return kept

    outcomes = {d.session_id: d.record.card.outcome for d in thread.sessions}
    insights = [
        i.model_copy(
            update={"verified": i.verified and any(outcomes[s] is Outcome.VERIFIED for s in i.sessions)}
        )
        for i in keep(extract.insights)
    ]
    return (
        extract.model_copy(
            update={
                "decisions": keep(extract.decisions),
                "unfinished": keep(extract.unfinished),
                "insights": insights,
                "risks": keep(extract.risks),
            }
        ),
        dropped,
    )
