"""`episodic inspect`: how much history there is, and what an LLM backfill would send and cost."""

from __future__ import annotations

import re
import statistics
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from episodic.kernel.models import NotEpisode, SessionSource, Trajectory
from episodic.kernel.ports import KeptTrajectories, TranscriptSource
from episodic.sessions.pricing import (
    DISTILL_OUTPUT_TOKENS,
    DISTILL_PROMPT_TOKENS,
    TITAN_EMBED_V2_PER_MTOK,
    model_prices,
)
from episodic.sessions.survey import estimate_tokens, render_survey

CARD_RENDERING_TOKENS = 150  # one rendering of a card, for the embedding estimate


@dataclass
class InspectReport:
    sessions: int = 0
    episodes: int = 0
    not_episodes: Counter[str] = field(default_factory=Counter)
    bytes: int = 0
    first: datetime | None = None
    last: datetime | None = None
    survey_tokens: list[int] = field(default_factory=list)
    thinking_with_text: int = 0
    thinking_stripped: int = 0
    malformed_lines: int = 0
    secrets_redacted: Counter[str] = field(default_factory=Counter)
    model_id: str = ""
    token_budget: int = 0
    distill_concurrency: int = 2

    def _percentile(self, q: float) -> int:
        if not self.survey_tokens:
            return 0
        ordered = sorted(self.survey_tokens)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]

    def estimate(self) -> dict[str, float | None]:
        total_in = sum(self.survey_tokens) + DISTILL_PROMPT_TOKENS * self.episodes
        total_out = DISTILL_OUTPUT_TOKENS * self.episodes
        prices = model_prices(self.model_id)
        distill = None if prices is None else (total_in * prices[0] + total_out * prices[1]) / 1e6
        embed = self.episodes * 3 * CARD_RENDERING_TOKENS * TITAN_EMBED_V2_PER_MTOK / 1e6
        return {
            "input_tokens": float(total_in),
            "output_tokens": float(total_out),
            "distill_usd": distill,
            "embed_usd": embed,
            "price_in_per_mtok": prices[0] if prices else None,
            "price_out_per_mtok": prices[1] if prices else None,
        }

    def as_dict(self) -> dict[str, object]:
        return {
            "sessions": self.sessions,
            "episodes": self.episodes,
            "not_episodes": dict(self.not_episodes),
            "bytes": self.bytes,
            "first": self.first.isoformat() if self.first else None,
            "last": self.last.isoformat() if self.last else None,
            "survey_tokens_median": int(statistics.median(self.survey_tokens)) if self.survey_tokens else 0,
            "survey_tokens_p95": self._percentile(0.95),
            "survey_tokens_total": sum(self.survey_tokens),
            "thinking_with_text": self.thinking_with_text,
            "thinking_stripped": self.thinking_stripped,
            "malformed_lines": self.malformed_lines,
            "secrets_redacted": dict(self.secrets_redacted),
            "bedrock_model": self.model_id,
            "survey_token_budget": self.token_budget,
            "estimate": self.estimate(),
            "claude_code": self.agent_cli_estimate(),  # its first name, kept for scripts that read it
            "agent_cli": self.agent_cli_estimate(),
        }

    def agent_cli_estimate(self) -> dict[str, float]:
        """Wall time and tokens for `index --distiller claude-code|codex|gemini` (one planning figure per
        session for the three CLIs, not a measurement; the tokens are the Bedrock estimate's, billed to the
        user's own plan or API key)."""
        from episodic.distill.agent_cli import SECONDS_PER_SESSION, estimate_agent_time

        estimate = self.estimate()
        return {
            "sessions_to_distill": float(self.episodes),
            "concurrency": float(self.distill_concurrency),
            "seconds_per_session": SECONDS_PER_SESSION,
            "estimated_seconds": estimate_agent_time(self.episodes, self.distill_concurrency),
            "input_tokens": float(estimate["input_tokens"] or 0.0),
            "output_tokens": float(estimate["output_tokens"] or 0.0),
        }


def inspect_history(
    source: TranscriptSource,
    paths: Sequence[str] | None,
    *,
    token_budget: int,
    model_id: str,
    distill_concurrency: int = 2,
    progress: Callable[[SessionSource], None] | None = None,
) -> InspectReport:
    report = InspectReport(
        model_id=model_id, token_budget=token_budget, distill_concurrency=distill_concurrency
    )
    for session in source.discover(paths):
        report.sessions += 1
        report.bytes += session.total_bytes
        loaded = source.load(session)
        report.malformed_lines += loaded.stats.malformed_lines
        report.thinking_with_text += loaded.stats.thinking_with_text
        report.thinking_stripped += loaded.stats.thinking_stripped
        report.secrets_redacted.update(loaded.stats.secrets_redacted)
        if isinstance(loaded, NotEpisode):
            report.not_episodes[loaded.reason] += 1
        else:
            _add_episode(report, loaded, token_budget)
        if progress:
            progress(session)
    return report


def _add_episode(report: InspectReport, trajectory: Trajectory, token_budget: int) -> None:
    report.episodes += 1
    report.survey_tokens.append(estimate_tokens(render_survey(trajectory, token_budget)))
    for stamp in (trajectory.started_at, trajectory.ended_at):
        if stamp is None:
            continue
        report.first = stamp if report.first is None or stamp < report.first else report.first
        report.last = stamp if report.last is None or stamp > report.last else report.last


def render_one(
    source: TranscriptSource,
    path: str,
    token_budget: int,
    kept: KeptTrajectories | None = None,
    tenant_id: str = "",
) -> str:
    """The exact scrubbed survey a distiller would receive for the session in `path` (once the agent deleted
    the file: from the tenant's kept trajectory, named by the file or by the session id)."""
    from episodic.kernel.errors import NotFoundError

    if kept is not None and tenant_id and not Path(path).expanduser().exists():
        trajectory = _kept_named(kept, tenant_id, path)
        if trajectory is None:
            raise NotFoundError(f"no session file at {path}, and no kept trajectory of that session")
        admitted = source.admit(trajectory)  # the scope rules apply to a kept session as to a file
        if isinstance(admitted, NotEpisode):
            raise NotFoundError(f"{path} is not an episode to distill ({admitted.reason})")
        return render_survey(admitted, token_budget)
    sessions = list(source.discover([path]))
    if not sessions:
        raise NotFoundError(f"no Claude Code session found at {path}")
    loaded = source.load(sessions[0])
    if isinstance(loaded, NotEpisode):
        raise NotFoundError(f"{path} is not an episode to distill ({loaded.reason})")
    return render_survey(loaded, token_budget)


_UUID_TAIL_RE = re.compile(r"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$", re.I)


def _kept_named(kept: KeptTrajectories, tenant_id: str, path: str) -> Trajectory | None:
    """The kept trajectory a deleted file's path (`<id>.jsonl`, a Codex rollout) or a session id names."""
    stem = Path(path).name.split(".", 1)[0]
    tail = _UUID_TAIL_RE.search(stem)
    for name in dict.fromkeys([path, stem, tail.group(1) if tail else ""]):
        if name and "/" not in name and kept.has(tenant_id, name):
            return kept.get(tenant_id, name)
    return None
