"""What `inspect` and `doctor` say about Claude Code's cleanup: sessions it deletes within a week that are
neither indexed nor kept (episodic.sessions.agent_cleanup), and the command that keeps them."""

from __future__ import annotations

import time
from collections.abc import Sequence

from episodic.cards.present import counted
from episodic.kernel.errors import EpisodicError
from episodic.kernel.ports import TranscriptSource
from episodic.kernel.settings import Settings
from episodic.sessions.agent_cleanup import CleanupRisk, cleanup_risk

KEEP_FIX = "`episodic index` now; to keep transcripts longer: `episodic setup claude-code --keep-transcripts-days 365 --write`"


def risk_for(
    settings: Settings,
    tenant_id: str,
    source: TranscriptSource | None = None,
    paths: Sequence[str] | None = None,
    now: float | None = None,
) -> CleanupRisk:
    """The risk for `tenant_id`'s sessions under Claude Code's config folders (or `paths`)."""
    from episodic.assembly import build_kept, build_scoped_source, build_store
    from episodic.parse.discovery import default_roots

    source = source or build_scoped_source(settings)
    kept = build_kept(settings)
    # no index yet: nothing has a card (and asking must not create one)
    store = None if settings.store == "sqlite" and not settings.db_path.exists() else build_store(settings)

    def indexed(session_id: str) -> bool:
        try:
            carded = store is not None and store.get(tenant_id, session_id) is not None
            return carded or (kept is not None and kept.has(tenant_id, session_id))
        except EpisodicError:  # an id the store refuses was never indexed
            return False

    return cleanup_risk(
        source,
        source.discover(list(paths) if paths else None),
        default_roots(settings),
        indexed=indexed,
        now=time.time() if now is None else now,
    )


def doctor_findings(settings: Settings) -> list[tuple[str, str, str]]:
    """`doctor`'s (status, detail, fix) on Claude Code's cleanup; none when no Claude Code session is here."""
    try:
        risk = risk_for(settings, settings.tenant)
    except EpisodicError as exc:
        return [("warn", f"not checked: {exc}", "")]
    if not risk.sessions:
        return []
    if risk.unindexed:
        return [("warn", risk.sentence(), KEEP_FIX)]
    return [("ok", risk.sentence(), "")]


def kept_usage(settings: Settings, tenant_id: str) -> dict[str, object]:
    """What the tenant's kept trajectories take on disk (`inspect`)."""
    from episodic.assembly import build_kept

    kept = build_kept(settings)
    if kept is None:
        return {"enabled": False}
    sessions, used = kept.usage(tenant_id)
    cap = int(settings.keep_trajectories_max_mb * 1_000_000)
    return {"enabled": True, "sessions": sessions, "bytes": used, "cap_bytes": cap}


def kept_line(usage: dict[str, object]) -> str:
    if not usage["enabled"]:
        return "kept trajectories: off (keep_trajectories = false)"
    used, cap, sessions = usage["bytes"], usage["cap_bytes"], usage["sessions"]
    assert isinstance(used, int) and isinstance(cap, int) and isinstance(sessions, int)
    return f"kept trajectories: {counted(sessions, 'session')}, {used / 1e6:.1f} MB of the {cap / 1e6:.0f} MB cap"


def kept_summary(
    settings: Settings, tenant_id: str, source: TranscriptSource, paths: Sequence[str] | None
) -> tuple[dict[str, object], list[str]]:
    """`inspect`'s JSON fields and lines on Claude Code's cleanup and the tenant's kept trajectories."""
    risk = risk_for(settings, tenant_id, source, paths)
    usage = kept_usage(settings, tenant_id)
    return {"agent_cleanup": risk.as_dict(), "kept": usage}, [risk.sentence(), kept_line(usage)]
