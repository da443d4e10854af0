"""Which recorded distil failures are still owed a card, and which a distiller switch has settled.

A failure is recorded when the configured distiller could not write a session's card; the session is retried by
the next `index`. After a switch of distiller (e.g. back to the offline heuristic after a logged-out Claude Code
run), a session that already holds a card the configured distiller keeps as it is (the same transcript, a
distiller of at least its rank) is not retried: its failure is history, not something "waiting for a retry".
`stats` lists the two apart; `index` drops the settled ones when it finds those sessions unchanged."""

from __future__ import annotations

from collections.abc import Sequence

from episodic.cards.write import DISTILLER_RANK, distiller_rank
from episodic.kernel.ports import IngestFailure, VectorStore


def settled(store: VectorStore, failure: IngestFailure, distiller_kind: str) -> str:
    """The distiller id of the card that settles `failure` for `distiller_kind`; "" when the session is still
    owed a card (none stored, the transcript changed since, or the configured distiller would replace it)."""
    record = store.get(failure.tenant_id, failure.session_key)
    if record is None or (failure.source_sha256 and record.source_sha256 != failure.source_sha256):
        return ""
    return (
        record.distiller.id
        if distiller_rank(record.distiller) >= DISTILLER_RANK.get(distiller_kind, 1)
        else ""
    )


def split_failures(
    store: VectorStore, failures: Sequence[IngestFailure], distiller_kind: str
) -> tuple[list[IngestFailure], list[tuple[IngestFailure, str]]]:
    """(waiting for a retry by `distiller_kind`, settled with the distiller id of the card that stays)."""
    waiting: list[IngestFailure] = []
    done: list[tuple[IngestFailure, str]] = []
    for failure in failures:
        card_by = settled(store, failure, distiller_kind)
        if card_by:
            done.append((failure, card_by))
        else:
            waiting.append(failure)
    return waiting, done
