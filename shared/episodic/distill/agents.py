"""The agent distillers by name: `distiller` = claude-code | codex | gemini (distill.agent_cli)."""

from __future__ import annotations

from episodic.distill.agent_cli import AGENT_KINDS, AgentCli, AgentCliDistiller, options_from
from episodic.distill.claude_code import ClaudeCodeCli
from episodic.distill.codex import CodexCli
from episodic.distill.gemini import GeminiCli
from episodic.kernel.errors import ConfigError
from episodic.kernel.settings import Settings

AGENTS: dict[str, type[AgentCli]] = {"claude-code": ClaudeCodeCli, "codex": CodexCli, "gemini": GeminiCli}
assert tuple(AGENTS) == AGENT_KINDS


def agent_cli(kind: str) -> AgentCli:
    if kind not in AGENTS:
        raise ConfigError(f"no agent distiller {kind!r} (one of {', '.join(AGENTS)})")
    return AGENTS[kind]()


def distiller_for(settings: Settings, kind: str) -> AgentCliDistiller:
    """The agent distiller `kind` configured from the settings."""
    return AgentCliDistiller(agent_cli(kind), **options_from(settings, kind))
