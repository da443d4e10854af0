"""`cards export` / `cards import`: keep the cards of a paid backfill and load them again without paying twice.

Import goes through the same validation as any LLM card (`episodic.cards.files`) and is ranked like one against
the session's existing card: a better card (e.g. the agent's own) is kept; a heuristic card is replaced.

Lossless round trip: the transcript is looked for under PATHS (default: every agent's roots) and where the
export recorded it; a card without its transcript keeps the exported origin (project, agent, dates, source)
and, when the file is unchanged since export and its source hash is the one the index holds, its outcome.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from episodic.cards.files import (
    CardFile,
    card_file_sessions,
    card_origins,
    read_card_folder,
    write_card_folder,
)
from episodic.cards.write import distiller_rank, store_card
from episodic.kernel.errors import InvalidArgumentError
from episodic.kernel.memory import Memory
from episodic.kernel.models import CardRecord, NotEpisode, Trajectory
from episodic.scrub import Scrubber

log = logging.getLogger(__name__)


@dataclass
class ImportReport:
    files: int = 0
    imported: int = 0
    replaced: int = 0
    kept_better: int = 0
    without_transcript: int = 0  # no transcript found: checked against the index's source hash instead
    downgraded: int = 0
    outcome_kept: int = 0  # unchanged cards without a transcript whose source hash the index holds
    reviewed: int = 0  # cards whose exported review (approved, vetoed, edited) was restored
    invalid: list[tuple[str, str]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        data = dict(self.__dict__)
        data["invalid"] = [{"file": f, "reason": r} for f, r in self.invalid]
        return data


def export_cards(memory: Memory, tenant_id: str, folder: Path | str) -> int:
    """Write every card of the tenant as `<session_id>.json` (+ the distiller index); the count."""
    return write_card_folder(memory.store.iter_records(tenant_id), folder)


def trajectories_for(
    memory: Memory, wanted: set[str], paths: Sequence[str] | None, files: frozenset[str] = frozenset()
) -> dict[str, Trajectory]:
    """The parsed sessions (default roots, or `paths`) whose id has a card file (or whose file is one of
    `files`, the recorded sources: a Codex rollout is not named by its session id)."""
    found: dict[str, Trajectory] = {}
    if not wanted:
        return found
    for source in memory.source.discover(paths):
        named = source.session_key in wanted or Path(source.main_path).stem in wanted
        if not named and source.main_path not in files:
            continue
        try:
            loaded = memory.source.load(source)
        except Exception:  # the parser promises not to raise; a bad file means "no evidence", not a crash
            log.exception("parsing %s failed", source.main_path)
            continue
        if not isinstance(loaded, NotEpisode) and loaded.session_id in wanted:
            found[loaded.session_id] = loaded
    return found


def import_cards(
    memory: Memory, tenant_id: str, folder: Path | str, paths: Sequence[str] | None = None
) -> ImportReport:
    """Validate and store every card file in `folder`, checking outcomes against the local transcripts."""
    if not Path(folder).is_dir():
        raise InvalidArgumentError(f"cards folder not found: {folder}")
    memory.store.ensure_manifest(memory.manifest)
    wanted = set(card_file_sessions(folder))
    trajectories = trajectories_for(memory, wanted, paths)
    origins = card_origins(folder)
    files = frozenset(
        o.source_path
        for sid, o in origins.items()
        if o.source_path and sid in wanted and sid not in trajectories and Path(o.source_path).is_file()
    )
    if files:  # where the export says each session was indexed from (another folder, another agent)
        folders = sorted({str(Path(f).parent) for f in files})
        trajectories.update(trajectories_for(memory, wanted - set(trajectories), folders, files))
    read = read_card_folder(folder, Scrubber.from_settings(memory.settings), trajectories, only_known=False)
    report = ImportReport(files=len(wanted), invalid=list(read.invalid))
    for session_id, cardfile in read.cards.items():
        existing = memory.store.get(tenant_id, session_id)
        if existing is not None and distiller_rank(existing.distiller) > distiller_rank(cardfile.distiller):
            report.kept_better += 1
            continue
        trajectory = trajectories.get(session_id)
        fallback = cardfile.source_sha256 or (existing.source_sha256 if existing else "")
        card, kept = cardfile.card, _keeps_outcome(cardfile, existing, trajectory)
        if kept:  # the claim was checked when this index stored the same source; nothing changed since
            card = card.model_copy(update={"outcome": cardfile.claimed})
        stored = store_card(
            memory,
            tenant_id,
            card,
            session_id=session_id,
            distiller=cardfile.distiller,
            trajectory=trajectory,
            source_sha256=None if trajectory else fallback,
            origin=cardfile.origin or (existing.origin if existing else None),
        )
        if cardfile.review is not None:
            from episodic.cards.review import import_review

            report.reviewed += import_review(memory, stored, cardfile.review, report.invalid, cardfile.path)
        report.imported += 1
        report.replaced += existing is not None
        report.without_transcript += trajectory is None
        report.outcome_kept += kept
        report.downgraded += not kept and any("downgraded" in note for note in cardfile.notes)
    return report


def _keeps_outcome(cardfile: CardFile, existing: CardRecord | None, trajectory: Trajectory | None) -> bool:
    """An unchanged exported card, with no transcript to check, whose source hash this index holds."""
    return (
        trajectory is None
        and cardfile.unchanged
        and cardfile.claimed is not None
        and cardfile.claimed is not cardfile.card.outcome
        and existing is not None
        and bool(cardfile.source_sha256)
        and existing.source_sha256 == cardfile.source_sha256
    )
