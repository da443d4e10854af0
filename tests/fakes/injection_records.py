"""Injection records for tests: one card given to one session, now unless told."""

from __future__ import annotations

from datetime import UTC, datetime

from episodic.kernel.injection_port import InjectionRecord, Tier, prompt_hash


def given_record(
    tenant: str,
    session_id: str,
    card_id: str,
    *,
    tier: Tier = "card",
    at: datetime | None = None,
    chars: int = 600,
) -> InjectionRecord:
    return InjectionRecord(
        tenant_id=tenant,
        session_id=session_id,
        card_id=card_id,
        tier=tier,
        source="prompt_hook",
        prompt_sha256=prompt_hash(f"{session_id}:{card_id}"),
        chars=chars,
        at=at or datetime.now(UTC),
    )
