"""The dream feature's declared interface: weekly records of what the sessions taught, the `memory_dream`
MCP tool and `episodic dream …`."""

from __future__ import annotations

from episodic.kernel.feature_contract import Feature

FEATURE = Feature(
    name="dream",
    settings_prefix="dream",
    mcp_tools="episodic.dream.tools:dream_tools",
    cli="episodic.dream.cli:register",
    commands=("dream",),
)
