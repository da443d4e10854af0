"""The card-writing steps every path shares (the index, the agent's own card, a review's edit, an import,
the evaluation): which distiller outranks which, the texts a card is embedded by, embedding, and storing one
session's one card (a person's review carried over)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Literal

from episodic.cards.opening import opening_text
from episodic.kernel.errors import EpisodicError
from episodic.kernel.memory import Memory
from episodic.kernel.models import (
    OPENING,
    Card,
    CardOrigin,
    CardRecord,
    DistillerInfo,
    DistillUsage,
    Trajectory,
)
from episodic.kernel.ports import StoredVector
from episodic.kernel.settings import Settings
from episodic.store.render import render

if TYPE_CHECKING:
    import numpy as np

HEURISTIC = "heuristic"  # the offline distiller's kind: its cards are extractive (episodic.cards.opening)
# a card from a better distiller is never replaced by a worse one for the same session
DISTILLER_RANK = {
    HEURISTIC: 0,
    "bedrock": 2,
    "claude-code": 2,
    "codex": 2,
    "gemini": 2,
    "import": 2,
    "self": 3,
}


LLM_RANK = 2


def distiller_rank(info: DistillerInfo) -> int:
    return DISTILLER_RANK.get(info.kind, 1)


def takes_opening(settings: Settings, distiller: DistillerInfo) -> bool:
    """Whether this distiller's cards are also embedded by their session's opening words (episodic.cards.opening)."""
    return distiller.kind == HEURISTIC and OPENING in settings.renderings


def card_texts(memory: Memory, card: Card, opening: str | None = None) -> list[tuple[str, str]]:
    """(rendering, text) per configured rendering: the card's, and the session's opening words where it has them."""
    renderings = [r for r in memory.settings.renderings if r != OPENING or opening]
    return [(r, (opening or "") if r == OPENING else render(card, r)) for r in renderings]


def stored_vectors(texts: Sequence[tuple[str, str]], matrix: np.ndarray) -> list[StoredVector]:
    if len(matrix) != len(texts):
        raise EpisodicError(f"the embedder returned {len(matrix)} vectors for {len(texts)} texts")
    return [StoredVector(rendering=r, text=t, vector=matrix[i]) for i, (r, t) in enumerate(texts)]


def embed_card(memory: Memory, card: Card, opening: str | None = None) -> list[StoredVector]:
    """One vector per configured rendering (see card_texts)."""
    texts = card_texts(memory, card, opening)
    return stored_vectors(texts, memory.embedder.embed([t for _, t in texts]))


def session_opening(memory: Memory, trajectory: Trajectory | None, distiller: DistillerInfo) -> str | None:
    """The session's opening words, for a distiller whose cards are also embedded by them."""
    if trajectory is not None and takes_opening(memory.settings, distiller):
        return opening_text(trajectory)
    return None


def store_card(
    memory: Memory,
    tenant_id: str,
    card: Card,
    *,
    session_id: str,
    distiller: DistillerInfo,
    trajectory: Trajectory | None = None,
    usage: DistillUsage | None = None,
    source_sha256: str | None = None,
    vectors: list[StoredVector] | None = None,
    origin: CardOrigin | None = None,
) -> CardRecord:
    """Embed the card's renderings and replace the session's card (one session, one card).

    An offline card is also embedded by the session's opening exchange (episodic.cards.opening); an LLM's or an
    agent's card restates the problem in the user's words already and gets none. `vectors`: already
    embedded (`card_texts` of this card, as the index's batches do)."""
    opening = session_opening(memory, trajectory, distiller)
    # without the transcript (an imported card), the origin its export recorded
    where = CardOrigin.of(trajectory) if trajectory else (origin or CardOrigin())
    record = CardRecord(
        card=card,
        session_id=session_id,
        tenant_id=tenant_id,
        **where.model_dump(),
        source_sha256=source_sha256 or (trajectory.source_sha256 if trajectory else ""),
        distiller=distiller,
        usage=usage or DistillUsage(),
        indexed_at=datetime.now(UTC),
        opening=opening,
    )
    from episodic.cards.review_rules import carry_review

    # a person's review outlives re-indexing (a veto holds when the session grows: episodic.cards.review)
    record = carry_review(memory.store.get(tenant_id, session_id), record)
    embedded = vectors if vectors is not None else embed_card(memory, card, opening)
    memory.store.upsert(record, embedded, memory.manifest)
    return record


def existing_card_verdict(
    memory: Memory, existing: CardRecord | None, trajectory: Trajectory
) -> Literal["unchanged", "kept_better"] | None:
    """'unchanged' / 'kept_better' when no new card is needed, else None."""
    if existing is None:
        return None
    current = memory.distiller.info
    # content hash + distiller id: a new distiller (or version) of equal or higher rank re-distills; an LLM
    # distiller's model is a choice, not a card format: another model re-distils grown sessions only
    same_distiller = existing.distiller.id == current.id or (
        existing.distiller.kind == current.kind and distiller_rank(current) >= LLM_RANK
    )
    # an offline card indexed before the `opening` rendering existed is re-distilled once to gain it
    lacks_opening = existing.opening is None and takes_opening(memory.settings, current)
    if existing.source_sha256 == trajectory.source_sha256 and (
        (same_distiller and not lacks_opening) or distiller_rank(existing.distiller) > distiller_rank(current)
    ):
        return "unchanged"
    if distiller_rank(existing.distiller) > distiller_rank(current):
        return "kept_better"
    return None
