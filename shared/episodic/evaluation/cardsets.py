"""Card sets under evaluation: the configured distiller's cards, or cards from a folder (LLM-written, a backfill).

A folder's cards are validated exactly as an LLM card is (`episodic.cards.files`); a session with no valid file
falls back to its distilled card, and the set's summary says how many of each (and why a file was refused).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from episodic.cards.files import IMPORTED, CardFolder, read_card_folder
from episodic.evaluation.corpus import EvalCorpus
from episodic.kernel.models import Card, DistillerInfo
from episodic.kernel.settings import Settings
from episodic.scrub import Scrubber

FOLDER_LABEL = "cards"
FOLDS = ("A", "B")


@dataclass
class CardSet:
    label: str
    cards: dict[str, Card]
    distiller: DistillerInfo
    summary: dict[str, Any] = field(default_factory=dict)
    # per-session exceptions to `distiller` (a folder's gaps, distilled by the heuristic)
    distillers: dict[str, DistillerInfo] = field(default_factory=dict)


def distilled_set(corpus: EvalCorpus) -> CardSet:
    """The cards `distill_corpus` made (what `episodic index` would store)."""
    distiller = corpus.distiller or DistillerInfo(kind="unknown")
    summary = {"source": f"distiller {distiller.id}", "distilled": len(corpus.cards)}
    return CardSet(distiller.kind, dict(corpus.cards), distiller, summary)


def read_folder(corpus: EvalCorpus, folder: Path, settings: Settings) -> CardFolder:
    """The folder's valid cards for the corpus sessions (scrubbed, validated against each trajectory)."""
    return read_card_folder(folder, Scrubber.from_settings(settings), corpus.trajectories)


def folder_set(corpus: EvalCorpus, folder: Path, read: CardFolder) -> CardSet:
    """Cards from `folder` for the corpus sessions, the distilled card where a session has no valid file."""
    cards: dict[str, Card] = {}
    distillers: dict[str, DistillerInfo] = {}
    distilled = 0
    for session_id in corpus.trajectories:
        if session_id in read.cards:
            cards[session_id] = read.cards[session_id].card
        elif session_id in corpus.cards:
            cards[session_id] = corpus.cards[session_id]
            if corpus.distiller is not None:
                distillers[session_id] = corpus.distiller
            distilled += 1
    summary = {
        "source": str(folder),
        "from_folder": len(read.cards),
        "distilled": distilled,
        "invalid": [{"file": f, "reason": r} for f, r in read.invalid],
        "not_in_corpus": len(read.unmatched),
        "outcome_downgraded": read.downgraded,
    }
    return CardSet(FOLDER_LABEL, cards, IMPORTED, summary, distillers)


def fold_of(session_id: str) -> str:
    """The two-fold split by target session: deterministic, independent of the query order or count."""
    return FOLDS[hashlib.sha256(session_id.encode("utf-8")).digest()[0] % 2]
