"""What memory gives a session, decided where the hook's answer is decided (the server), and recorded there:
a card already given to the session is not given again, the steering rules move a card between tiers by what
earlier sessions did with it, and each card or pointer given is an injection record (no prompt text).

The hook process stays as it was (one request): it names the receiving session, the server answers with
exactly what the hook injects.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from episodic.kernel.injection_port import (
    INJECTIONS,
    CardUse,
    InjectionRecord,
    InjectionStore,
    Source,
    Tier,
    prompt_hash,
)
from episodic.kernel.models import Confidence, SearchHit
from episodic.plumbing.hook_choice import MAX_POINTERS

if TYPE_CHECKING:
    from episodic.kernel.memory import Memory
    from episodic.kernel.settings import Settings

log = logging.getLogger(__name__)
HOOK_CARD_CHARS = 1400  # a card as the hook packs it (episodic.hooks.packing.MAX_CARD_CHARS)


def injection_store(memory: Memory) -> InjectionStore | None:
    """The injections feature's store (None when the feature is off)."""
    part = memory.part(INJECTIONS)
    return part if isinstance(part, InjectionStore) else None


@dataclass(frozen=True)
class Receiver:
    """The session an answer goes to, and what asked on its behalf."""

    tenant_id: str
    session_id: str
    agent: str
    source: Source
    asked: str  # the prompt (or command and error): only its hash is kept
    at: datetime | None = None  # when it was given (None: now; a replay gives the prompt's own time)


def steer(hits: Sequence[SearchHit], uses: dict[str, CardUse], settings: Settings) -> list[SearchHit]:
    """The steering rules, each behind its switch: a card given often and never used rises to a pointer's bar
    (a hub); a pointer opened often may rise to a card."""
    out = []
    for hit in hits:
        use = uses.get(hit.record.session_id)
        if use is not None and hit.confidence == Confidence.STRONG and settings.injections_hubs:
            if use.given >= settings.injections_hub_given and use.used == 0:
                hit = hit.model_copy(update={"confidence": Confidence.WEAK})
        elif use is not None and hit.confidence == Confidence.WEAK and settings.injections_promote:
            opened_often = use.opened >= settings.injections_promote_opened
            if opened_often and use.opened * 2 >= use.pointers:
                hit = hit.model_copy(update={"confidence": Confidence.STRONG})
        out.append(hit)
    return out


def choose(hits: Sequence[SearchHit], given: dict[str, set[str]], never_twice: bool) -> list[SearchHit]:
    """The hook's selection (episodic.plumbing.hook_choice.select_hits) over hits it may still give: the best
    as a card when strong, the rest as at most MAX_POINTERS pointers. A card already given to the session
    is never given again, nor is a pointer; a pointer given earlier comes back once as the full card when it
    is now the best hit and strong. The card is decided before the session's earlier gifts are left out."""
    verified = [h for h in hits if h.record.card.outcome.value == "verified" and h.confidence is not None]
    verified = [h for h in verified if h.confidence in (Confidence.STRONG, Confidence.WEAK)]
    chosen: list[SearchHit] = []
    for position, hit in enumerate(verified):
        # the best hit alone may be a card: when it was given already, the others stay pointers
        as_card = position == 0 and hit.confidence == Confidence.STRONG
        tiers = given.get(hit.record.session_id, set())
        if never_twice and ("card" in tiers or ("pointer" in tiers and not as_card)):
            continue
        if not as_card:
            hit = hit.model_copy(update={"confidence": Confidence.WEAK})
        chosen.append(hit)
    first, rest = chosen[:1], chosen[1:]
    return first + rest[:MAX_POINTERS]


def injected_chars(hit: SearchHit) -> int:
    """Characters the hook injects for one hit (≈ 4 a token): its packed card, or its pointer line."""
    from episodic.cards.present import pack_card, pointer_line

    if hit.confidence == Confidence.STRONG:
        return len(pack_card(hit.record, similarity=hit.similarity, max_chars=HOOK_CARD_CHARS))
    date = hit.record.started_at.date().isoformat() if hit.record.started_at else None
    return len(pointer_line(hit.record.session_id, date, hit.record.card.problem))


def give(memory: Memory, receiver: Receiver, hits: Sequence[SearchHit]) -> list[SearchHit]:
    """Exactly what the hook injects for the receiving session, recorded; the hits unchanged when the
    injections feature is off (the hook then selects as before)."""
    store = injection_store(memory)
    if store is None:
        return list(hits)
    settings = memory.settings
    given = store.given(receiver.tenant_id, receiver.session_id)
    if settings.injections_hubs or settings.injections_promote:
        ids = [h.record.session_id for h in hits]
        hits = steer(hits, store.uses_of_cards(receiver.tenant_id, ids), settings)
    chosen = choose(hits, given, settings.injections_never_twice)
    record(store, receiver, [(h.record.session_id, _tier(h), injected_chars(h)) for h in chosen])
    return chosen


def record(store: InjectionStore, receiver: Receiver, given: Sequence[tuple[str, Tier, int]]) -> None:
    """One record per card or pointer given; a failure to record is logged, never the hook's failure."""
    at = receiver.at or datetime.now(UTC)
    digest = prompt_hash(receiver.asked)
    records = [
        InjectionRecord(
            tenant_id=receiver.tenant_id,
            session_id=receiver.session_id,
            agent=receiver.agent,
            card_id=card_id,
            tier=tier,
            source=receiver.source,
            prompt_sha256=digest,
            chars=chars,
            at=at,
        )
        for card_id, tier, chars in given
    ]
    try:
        store.add(receiver.tenant_id, records)
    except Exception as exc:  # a record is a measurement beside the answer: it never costs the answer
        log.warning("injection records not written: %s", exc)


def _tier(hit: SearchHit) -> Tier:
    return "card" if hit.confidence == Confidence.STRONG else "pointer"
