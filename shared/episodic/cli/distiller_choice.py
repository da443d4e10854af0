"""Which distiller `setup claude-code|codex|gemini` configures: the user's choice, else the saved one, else
that agent's CLI when it is on PATH and logged in (checked without a model call: the user's own agent
writes the cards), else the offline heuristic.

Heuristic cards are still written at once; with Claude Code, each ended session's card is replaced in the
background (episodic.hooks.session_end, within `distill_daily_cap`) and `index` re-distils the rest.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass

from episodic.kernel.errors import ConfigError, EpisodicError
from episodic.kernel.settings import Settings
from episodic.plumbing import envsource

CLAUDE_CODE, HEURISTIC = "claude-code", "heuristic"


@dataclass(frozen=True)
class DistillerChoice:
    distiller: str
    source: str  # option | saved | default
    reason: str


def saved_distiller(settings: Settings) -> bool:
    """True when the user set `distiller` (environment or config file): setup keeps it."""
    if envsource.environ().get(f"{envsource.ENV_PREFIX}DISTILLER"):
        return True
    try:
        return "distiller" in envsource.read_config_file(envsource.config_path())
    except ValueError:
        return True  # an unreadable config file is load_settings' to report; change nothing


def choose_distiller(settings: Settings, asked: str | None, agent: str = CLAUDE_CODE) -> DistillerChoice:
    """`agent` is the coding agent being set up (claude-code | codex | gemini): its CLI is the candidate."""
    if asked:
        return DistillerChoice(asked, "option", "--distiller")
    if saved_distiller(settings):
        return DistillerChoice(settings.distiller, "saved", "saved in the configuration")
    from episodic.distill.agent_cli import options_from

    binary = options_from(settings, agent)["binary"]
    if shutil.which(binary) is None:
        return DistillerChoice(HEURISTIC, "default", f"{binary!r} is not on PATH")
    from episodic.distill.agents import distiller_for

    distiller = distiller_for(settings, agent)
    logged_in, how = distiller.login()
    if logged_in:
        return DistillerChoice(agent, "default", f"{distiller.agent.label} is on PATH and {how}")
    return DistillerChoice(HEURISTIC, "default", how)


def refuse_unrunnable(settings: Settings, asked: str | None) -> None:
    """`setup … --distiller <agent>` with an agent CLI that cannot run (not on PATH, logged out): a
    ConfigError (exit 1) before anything is written, with the reason `doctor` and `index` give."""
    from episodic.distill.agent_cli import AGENT_KINDS

    if asked not in AGENT_KINDS:
        return
    from episodic.distill.agents import distiller_for

    reason = distiller_for(settings, asked).cannot_run()
    if reason is not None:
        raise ConfigError(
            f"--distiller {asked}: {reason}. Nothing was written; fix that and run this again, "
            "or choose --distiller heuristic"
        )


def heuristic_cards(settings: Settings) -> int:
    """Cards the offline heuristic wrote so far (an LLM distiller would re-distil them); 0 without an index."""
    from episodic.assembly import build_store

    if settings.store == "sqlite" and not settings.db_path.exists():  # asking must not create an index
        return 0
    try:
        records = build_store(settings).iter_records(settings.tenant)
        return sum(1 for r in records if r.distiller.id.startswith(HEURISTIC))
    except EpisodicError:
        return 0


def about_minutes(minutes: float) -> str:
    """A duration estimate a person reads: never "about 0 min" for work that takes some."""
    return "under a minute" if minutes < 1 else f"about {minutes:.0f} min"


def distiller_cost(settings: Settings, agent: str = CLAUDE_CODE) -> str:
    """What distilling with an agent's CLI takes: `inspect`'s planning figure for the indexed sessions,
    and (Claude Code, whose SessionEnd hook distils in the background) the daily cap."""
    from episodic.distill.agent_cli import estimate_agent_time

    cards = heuristic_cards(settings)
    minutes = estimate_agent_time(cards, settings.distill_concurrency) / 60
    if cards:
        cost = (
            f"{about_minutes(minutes)} at concurrency {settings.distill_concurrency} for the {cards} heuristic "
            "cards indexed so far (`episodic index` re-distils them; `episodic inspect` estimates your whole "
            "history)"
        )
    else:
        cost = "no heuristic card to re-distil so far (`episodic inspect` estimates your whole history)"
    if agent != CLAUDE_CODE:
        return cost + "; each `episodic index` distils the new sessions with it (not capped)"
    return cost + (
        "; each ended session gets a heuristic card at once, replaced in the background, at most "
        f"{settings.distill_daily_cap} a day (`distill_daily_cap`)"
    )


def claude_code_cost(settings: Settings) -> str:
    return distiller_cost(settings, CLAUDE_CODE)
