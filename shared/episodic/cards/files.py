"""Cards as files: one `<session_id>.json` of the nine card fields per session (`../shared/eval/cards/` format).

Read path: every file is scrubbed, then validated exactly as an LLM card is (schema, no code/paths/stack
traces, evidence may only downgrade `verified`); an invalid file is reported with its reason, never used.
Write path (`export`): the index's cards in the same format, plus one `episodic-cards.json` beside them
recording each card's distiller, source hash, origin (source path, project, agent, dates) and the card's
own hash, so an import keeps a card's rank against existing ones, finds its transcript where it was
indexed from, and keeps an unchanged card's metadata and outcome (episodic.cards.transfer).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from episodic.distill.checks import enforce_card, parse_card_payload
from episodic.kernel.errors import EpisodicError, InvalidArgumentError, InvalidCardError
from episodic.kernel.models import Card, CardOrigin, CardRecord, DistillerInfo, Outcome, Trajectory
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
    review: dict[str, Any] | None = None  # a person's review (episodic.cards.review), as exported
    origin: CardOrigin | None = None  # where the session was indexed from, as exported
    unchanged: bool = False  # the file holds the card exactly as exported (its hash matches the index)
    claimed: Outcome | None = None  # the outcome the file states, before the evidence check


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


def card_sha256(payload: Any) -> str:
    """The hash of a card's fields, independent of key order and indentation."""
    canonical = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def card_origins(folder: Path | str) -> dict[str, CardOrigin]:
    """The origin the index records for each exported card (none for folders written by hand)."""
    found = {sid: _origin_of(entry) for sid, entry in _read_meta(Path(folder)).items()}
    return {sid: origin for sid, origin in found.items() if origin is not None}


def _origin_of(entry: Mapping[str, Any]) -> CardOrigin | None:
    try:
        return CardOrigin.model_validate(entry["origin"]) if isinstance(entry.get("origin"), dict) else None
    except ValueError:  # a damaged origin only costs the metadata, never the card
        return None


def _review_of(entry: Mapping[str, Any]) -> dict[str, Any] | None:
    """The exported review of one card (episodic.cards.review), when the index holds one."""
    review = entry.get("review")
    return review if isinstance(review, dict) else None


def read_card_file(
    path: Path, scrubber: Scrubber, trajectory: Trajectory | None, exported_sha256: str = ""
) -> tuple[Card, list[str], Outcome, bool]:
    """One file to a valid card, or InvalidCardError with the reason (secrets scrubbed before anything);
    the flag says the file still holds the card as exported (its hash is `exported_sha256`)."""
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
    unchanged = bool(exported_sha256) and card_sha256(data) == exported_sha256
    card = parse_card_payload(scrubber.scrub_obj(data))
    checked, notes = enforce_card(card, trajectory)
    return checked, notes, card.outcome, unchanged


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
            card, notes, claimed, unchanged = read_card_file(
                path, scrubber, trajectory, str(entry.get("card_sha256", ""))
            )
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
            origin=_origin_of(entry),
            unchanged=unchanged,
            claimed=claimed,
        )
    return result


def write_card_folder(records: Iterable[CardRecord], folder: Path | str) -> int:
    """Write each record's card as `<session_id>.json` and the distiller index; returns the count."""
    folder = Path(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        return _write_cards(records, folder)
    except OSError as exc:  # a folder that cannot be made or written: one clear line, nothing half-said
        where = f" ({exc.filename})" if exc.filename and str(exc.filename) != str(folder) else ""
        raise InvalidArgumentError(
            f"cannot write the cards to {folder}: {exc.strerror or exc}{where}"
        ) from exc


def _write_cards(records: Iterable[CardRecord], folder: Path) -> int:
    meta = _read_meta(folder)
    written = 0
    for record in records:
        if not _SESSION_FILE_RE.match(f"{record.session_id}.json"):
            raise InvalidArgumentError(f"session id {record.session_id[:80]!r} cannot be a file name")
        path = folder / f"{record.session_id}.json"
        payload = record.card.model_dump(mode="json")
        body = json.dumps(payload, indent=1, ensure_ascii=False)
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(body + "\n", encoding="utf-8")
        tmp.replace(path)
        meta[record.session_id] = entry = {
            "distiller": record.distiller.id,
            "source_sha256": record.source_sha256,
            "tenant": record.tenant_id,
            "card_sha256": card_sha256(payload),
        }
        entry["origin"] = record.origin.model_dump(mode="json")  # type: ignore[assignment]
        if record.review is not None:  # the review travels with the card (its original beside an edit)
            reviewed: dict[str, Any] = meta[record.session_id]
            reviewed["review"] = record.review.model_dump(mode="json")
        written += 1
    index = {"format": META_FORMAT, "cards": dict(sorted(meta.items()))}
    (folder / META_FILE).write_text(json.dumps(index, indent=1) + "\n", encoding="utf-8")
    return written
