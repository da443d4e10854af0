"""Which of search_traces' results the prompt hook injects, and at which tier: shared by the hook process and
the server (which records what the hook gives and never gives a session the same card twice). Stdlib only."""

from __future__ import annotations

from typing import Any

MAX_CARDS = 3
MAX_POINTERS = 2  # unasked, a pointer is a hint: two at most
# the session id `episodic doctor` and `setup` probe the hook with: no user's session, so nothing is recorded
PROBE_SESSION = "episodic-hook-probe"


def is_strong(hit: dict[str, Any]) -> bool:
    """A full card only for a confident match; a hit without a confidence (an older server) is weak."""
    return hit.get("confidence") == "strong"


def select_hits(results: list[Any], approved_only: bool) -> list[dict[str, Any]]:
    """What the hook injects of search_traces' results: verified (and approved) strong or weak ones; a full
    card only for the best hit when it is strong (a second strong card was the wrong one too often:
    docs/retrieval.md), the rest as at most MAX_POINTERS pointers; faint ones never (the agent can ask)."""
    verified = [
        r
        for r in results
        if isinstance(r, dict)
        and (r.get("card") or {}).get("outcome") == "verified"
        and r.get("confidence") in ("strong", "weak", None)
    ]
    if approved_only:
        verified = [r for r in verified if r.get("review") == "approved"]
    if not verified:
        return []
    best, rest = verified[0], verified[1:]
    pointers = [{**r, "confidence": "weak"} if is_strong(r) else r for r in rest]
    return [best, *pointers[:MAX_POINTERS]]


def tier_of(hit: dict[str, Any]) -> str:
    """'card' or 'pointer': how the hook shows a selected hit."""
    return "card" if is_strong(hit) else "pointer"
