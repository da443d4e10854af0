"""`episodic cards check`: the readability (`distill.readability`) of a card set — a folder's cards, the index's
cards, or the offline cards the heuristic would write for the sessions under some folders."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from episodic.cards.files import read_card_folder
from episodic.cards.transfer import trajectories_for
from episodic.distill.heuristic import HeuristicDistiller
from episodic.distill.readability import check_cards
from episodic.kernel.memory import Memory
from episodic.kernel.models import Card, NotEpisode, Trajectory
from episodic.scrub import Scrubber


def _distilled(memory: Memory, paths: Sequence[str] | None) -> tuple[dict[str, Card], dict[str, str]]:
    """The heuristic's card and the first prompt of every session under `paths` (default: every agent's roots)."""
    distiller = HeuristicDistiller()
    cards: dict[str, Card] = {}
    prompts: dict[str, str] = {}
    for source in memory.source.discover(paths):
        loaded = memory.source.load(source)
        if isinstance(loaded, NotEpisode):
            continue
        cards[loaded.session_id] = distiller.distill(loaded, survey="").card
        prompts[loaded.session_id] = loaded.request
    return cards, prompts


def check_card_set(
    memory: Memory,
    tenant_id: str,
    *,
    folder: Path | str | None = None,
    distil: bool = False,
    paths: Sequence[str] | None = None,
) -> dict[str, Any]:
    """The readability report of one card set; each problem is checked against its session's first prompt
    where the session's transcript is found (under `paths`, default every agent's roots)."""
    invalid: list[dict[str, str]] = []
    if distil:
        cards, prompts = _distilled(memory, paths)
        source = "heuristic cards of the sessions found"
    else:
        if folder is not None:
            read = read_card_folder(folder, Scrubber.from_settings(memory.settings), None, only_known=False)
            cards = {sid: found.card for sid, found in read.cards.items()}
            invalid = [{"file": f, "reason": r} for f, r in read.invalid]
            source = str(folder)
        else:
            cards = {r.session_id: r.card for r in memory.store.iter_records(tenant_id)}
            source = f"the index (tenant {tenant_id})"
        found: dict[str, Trajectory] = trajectories_for(memory, set(cards), paths)
        prompts = {sid: traj.request for sid, traj in found.items()}
    report = check_cards(cards, prompts).as_dict()
    return {"source": source, **report, "invalid": invalid}
