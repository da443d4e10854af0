"""The dream feature's declared interface: weekly records of what the sessions taught, the `memory_dream`
MCP tool and `episodic dream …`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from episodic.feature import Feature

if TYPE_CHECKING:
    from episodic.mcp.registry import Tool
    from episodic.memory import Memory


def _tools(memory: Memory) -> list[Tool]:
    from episodic.dream.tools import memory_dream_tool

    return [memory_dream_tool(memory)]


FEATURE = Feature(name="dream", settings_prefix="dream", mcp_tools=_tools, cli="episodic.dream.cli")
