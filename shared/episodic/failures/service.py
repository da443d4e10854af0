"""The failure memory assembled (a store, the scrubber, the settings): its write path (an observer's
`record`) and its one read, `lookup`, which says what to show for a failing command or why nothing."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from episodic.failures import FAILURES  # the feature's name
from episodic.failures.models import FailureFix, FailureMatch
from episodic.failures.port import FailureStore
from episodic.kernel.models import Trajectory
from episodic.kernel.settings import Settings
from episodic.scrub import Scrubber

if TYPE_CHECKING:
    from episodic.kernel.memory import Memory

MAX_COMMAND_CHARS = 4000
MAX_ERROR_CHARS = 20_000


@dataclass
class FailureMemory:
    settings: Settings
    store: FailureStore
    scrubber: Scrubber


def failures_of(memory: Memory) -> FailureMemory | None:
    part = memory.part(FAILURES)
    return part if isinstance(part, FailureMemory) else None


def remember_fixes(failures: FailureMemory, tenant_id: str, trajectory: Trajectory) -> list[FailureFix]:
    """The session's fixes replace what was stored of it (idempotent across index runs)."""
    from episodic.failures.extract import fixes_of  # the write path: a memory that only reads never extracts

    fixes = fixes_of(trajectory, tenant_id, failures.scrubber)
    failures.store.replace_session(tenant_id, trajectory.session_id, fixes)
    return fixes


def lookup(
    failures: FailureMemory,
    tenant_id: str,
    command: str,
    error: str,
    *,
    session_id: str = "",
    before: datetime | None = None,
    admits: Callable[[str], bool] | None = None,
) -> FailureMatch:
    """The fix of an earlier session for this failure when the match is strong: one of its error lines
    (best first), normalised, specific enough (`failure_min_words`), is one another session got past (with
    the same check when `failure_same_check`); else the reason nothing is shown. Scrubs before anything.
    `admits(session_id)`: whether that session's words may be shown (a reviewer's veto, `review_required`)."""
    from episodic.failures.signature import signatures_of  # its ~30 patterns: a memory that never looks up

    command = failures.scrubber.scrub(command[:MAX_COMMAND_CHARS])
    signatures = signatures_of(failures.scrubber.scrub(error[:MAX_ERROR_CHARS]))
    if not signatures:
        return FailureMatch(reason="no error signature in the output")
    specific = [s for s in signatures if s.words >= failures.settings.failure_min_words]
    if not specific:
        return FailureMatch(signature=signatures[0].text, reason="signature too generic")
    from episodic.failures.extract import check_head

    head = check_head(command)
    other_check = withheld = 0
    for signature in specific:  # best line first: the first one an earlier session got past answers
        others = [
            f
            for f in failures.store.fixes_of(tenant_id, signature.key, before=before)
            if f.session_id != session_id
        ]
        found = [f for f in others if admits is None or admits(f.session_id)]
        withheld += len(others) - len(found)
        same = [f for f in found if f.check == head]
        if failures.settings.failure_same_check and not same:
            other_check += len(found)
            continue
        if found:
            best = (same or found)[0]
            return FailureMatch(
                signature=signature.text, fix=best, sessions=len({f.session_id for f in found})
            )
    reason = "got past only with another check" if other_check else "never got past in another session"
    if withheld and not other_check:
        reason = "got past only in sessions a reviewer vetoed or has not approved"
    return FailureMatch(signature=specific[0].text, reason=reason, sessions=other_check)


def render_fix(fix: FailureFix, max_chars: int = 700, has_card: bool = True) -> str:
    """The one short entry: the error, what it turned out to be, what ended it, the check that proved it,
    the session's date and id (get_episode gives its card); the cause is cut first, the reference never."""
    ended = f"edited {', '.join(fix.edits)}" if fix.edits else "no file edit recorded"
    head = f"Episodic memory: an earlier session met this error and got past it: {fix.signature}"
    ending = f"What ended it: {ended}; then `{fix.passed_command}` passed ({fix.check})."
    card = "get_episode with this id gives its card" if has_card else "no card of it is stored yet"
    reference = (
        f"Session {fix.session_id} of {fix.passed_at.date().isoformat()} ({card}); from another session, "
        "not checked against the current code."
    )
    room = max_chars - len(head) - len(ending) - len(reference) - 3
    cause = f"What it turned out to be (that session's own words): {fix.diagnosis}" if fix.diagnosis else ""
    cause = cause if len(cause) <= room else (cause[: room - 1].rstrip() + "…" if room > 80 else "")
    return "\n".join(x for x in (head, cause, ending, reference) if x)
