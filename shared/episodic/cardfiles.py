"""Cards as files: one `<session_id>.json` of the nine card fields per session (`../shared/eval/cards/` format).

Read path: every file is scrubbed, then validated exactly as an LLM card is (schema, no code/paths/stack
traces, evidence may only downgrade `verified`); an invalid file is reported with its reason, never used.
Write path (`export`): the index's cards in the same format, plus one `episodic-cards.json` beside them
recording each card's distiller and source hash, so an import keeps a card's rank against existing ones.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from episodic.distill.checks import enforce_card, parse_card_payload
from episodic.errors import EpisodicError, InvalidArgumentError, InvalidCardError
from episodic.models import Card, CardRecord, DistillerInfo, Trajectory
from episodic.scrub import Scrubber

META_FILE = "episodic-cards.json"
META_FORMAT = 1
MAX_CARD_FILE_BYTES = 256 * 1024  # a card is a few KB; anything larger is not a card
IMPORTED = DistillerInfo(kind="import")  # a card file with no recorded distiller (ranked like an LLM card)
# a session id is a file-name stem; anything else in the folder (README.md, the meta file) is not a card
_SESSION_FILE_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}\.json$")


@dataclass
class CardFile:
    """A validated card from a file, with what validation changed (e.g. a downgraded outcome)."""

    session_id: str
    path: Path
    card: Card
    notes: list[str] = field(default_factory=list)
    distiller: DistillerInfo = field(default_factory=lambda: IMPORTED)
    source_sha256: str = ""
    review: dict[str, Any] | None = None  # a person's review (episodic.review), as exported


@dataclass
class CardFolder:
    cards: dict[str, CardFile] = field(default_factory=dict)
    invalid: list[tuple[str, str]] = field(default_factory=list)  # (file, reason)
    unmatched: list[str] = field(default_factory=list)  # files whose session is not among the given ones

    @property
    def downgraded(self) -> int:
        return sum(1 for c in self.cards.values() if any("downgraded" in n for n in c.notes))


def distiller_from_id(value: str) -> DistillerInfo:
    """`kind` or `kind:model` (the model id may itself hold colons) back to a DistillerInfo."""
    kind, _, model = value.partition(":")
    if not kind:
        raise InvalidCardError(f"distiller id {value!r} has no kind")
    return DistillerInfo(kind=kind, model=model or None)


def _read_meta(folder: Path) -> dict[str, dict[str, str]]:
    path = folder / META_FILE
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        cards = data["cards"] if data.get("format") == META_FORMAT else None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError, AttributeError) as exc:
        raise InvalidArgumentError(f"{path} is not an episodic cards index: {exc}") from exc
    if not isinstance(cards, dict):
        raise InvalidArgumentError(f"{path}: expected format {META_FORMAT} with a 'cards' object")
    return {str(k): v for k, v in cards.items() if isinstance(v, dict)}


def _review_of(entry: Mapping[str, Any]) -> dict[str, Any] | None:
    """The exported review of one card (episodic.review), when the index holds one."""
    review = entry.get("review")
    return review if isinstance(review, dict) else None


def read_card_file(path: Path, scrubber: Scrubber, trajectory: Trajectory | None) -> tuple[Card, list[str]]:
    """One file to a valid card, or InvalidCardError with the reason (secrets scrubbed before anything)."""
    try:
        if not path.is_file():
            raise InvalidCardError("not a regular file")
        if path.stat().st_size > MAX_CARD_FILE_BYTES:
            raise InvalidCardError(f"larger than {MAX_CARD_FILE_BYTES} bytes")
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InvalidCardError(f"cannot read: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise InvalidCardError(f"not UTF-8 text: {exc.reason}") from exc
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidCardError(f"not valid JSON: {exc.msg} at line {exc.lineno}") from exc
    card = parse_card_payload(scrubber.scrub_obj(data))
    return enforce_card(card, trajectory)


def card_file_sessions(folder: Path | str) -> list[str]:
    """The session ids that have a card file in `folder`."""
    return sorted(
        p.stem for p in Path(folder).iterdir() if p.name != META_FILE and _SESSION_FILE_RE.match(p.name)
    )


def read_card_folder(
    folder: Path | str,
    scrubber: Scrubber,
    trajectories: Mapping[str, Trajectory] | None = None,
    *,
    only_known: bool = True,
) -> CardFolder:
    """Every card file in `folder`, validated against its session's trajectory where given.

    With `trajectories` and `only_known`, files of other sessions are left out (`unmatched`). A session
    without its trajectory can still be read: its `verified` then becomes `unverified`, as for an agent
    card whose transcript is not on this machine."""
    folder = Path(folder)
    if not folder.is_dir():
        raise InvalidArgumentError(f"cards folder not found: {folder}")
    meta = _read_meta(folder)
    result = CardFolder()
    for path in sorted(folder.iterdir()):
        if path.name == META_FILE or not _SESSION_FILE_RE.match(path.name):
            continue
        session_id = path.stem
        if only_known and trajectories is not None and session_id not in trajectories:
            result.unmatched.append(str(path))
            continue
        trajectory = trajectories.get(session_id) if trajectories is not None else None
        entry = meta.get(session_id, {})
        try:
            card, notes = read_card_file(path, scrubber, trajectory)
            distiller = distiller_from_id(str(entry["distiller"])) if "distiller" in entry else IMPORTED
        except EpisodicError as exc:
            result.invalid.append((str(path), str(exc)))
            continue
        result.cards[session_id] = CardFile(
            session_id=session_id,
            path=path,
            card=card,
            notes=notes,
            distiller=distiller,
            source_sha256=str(entry.get("source_sha256", "")),
            review=_review_of(entry),
        )
    return result


def write_card_folder(records: Iterable[CardRecord], folder: Path | str) -> int:
    """Write each record's card as `<session_id>.json` and the distiller index; returns the count."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    meta = _read_meta(folder)
    written = 0
    for record in records:
        if not _SESSION_FILE_RE.match(f"{record.session_id}.json"):
            raise InvalidArgumentError(f"session id {record.session_id[:80]!r} cannot be a file name")
        path = folder / f"{record.session_id}.json"
        body = json.dumps(record.card.model_dump(mode="json"), indent=1, ensure_ascii=False)
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(body + "\n", encoding="utf-8")
        tmp.replace(path)
        meta[record.session_id] = {
            "distiller": record.distiller.id,
            "source_sha256": record.source_sha256,
            "tenant": record.tenant_id,
        }
        if record.review is not None:  # the review travels with the card (its original beside an edit)
            reviewed: dict[str, Any] = meta[record.session_id]
            reviewed["review"] = record.review.model_dump(mode="json")
        written += 1
    index = {"format": META_FORMAT, "cards": dict(sorted(meta.items()))}
    (folder / META_FILE).write_text(json.dumps(index, indent=1) + "\n", encoding="utf-8")
    return written
