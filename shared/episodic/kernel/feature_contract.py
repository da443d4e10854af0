"""The feature contract: what a feature (history, scratch, dream, experiment) declares to plug into the core.

A feature is a package with a `feature.py` holding one `Feature`, registered by one line in
`episodic.assembly.features.FEATURE_PACKAGES`. The core (`Memory`, ingest, scope, the MCP registry) knows this
contract and never a feature: it calls the session observers on the write path, the assembly builds each
feature's part and adds its MCP tools and CLI commands. Copy `episodic/experiment/feature.py` to start one.
"""

from __future__ import annotations

import importlib
import logging
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from episodic.kernel.models import Trajectory
    from episodic.mcp.registry import Tool

# a feature's callables take the assembled `episodic.kernel.memory.Memory` (typed Any here: Memory holds Features)
Memory = Any

log = logging.getLogger(__name__)
Result = TypeVar("Result")


class SessionObserver(ABC):
    """A feature's part in the write path, called for every loaded session before its card is considered
    (an unchanged card needs it too). Never fatal: a failure is logged and the card's path goes on."""

    @abstractmethod
    def record(self, tenant_id: str, trajectory: Trajectory) -> None:
        """Keep what the feature remembers of this session (idempotent: called again on every index run)."""

    def forget(self, tenant_id: str, session_id: str) -> bool:
        """Drop everything remembered of a session the scope rules now exclude; True when anything was there."""
        return False

    def sweep(self) -> int:
        """Once per index run: expire what the feature no longer keeps; how many records went."""
        return 0  # most features keep what they record until it is forgotten


@dataclass(frozen=True)
class Feature:
    """A feature's declared interface; every field but the name is optional."""

    name: str  # the key of its part in `Memory.parts`
    settings_prefix: str = ""  # its section of the one settings model: the fields starting with this
    # its runtime part from the assembled core memory (None: switched off); a feature whose part depends on
    # local-or-AWS is built by the assembly instead (episodic.assembly.features)
    build: Callable[[Memory], object | None] | None = None
    observer: Callable[[Any, Memory], SessionObserver] | None = None  # (part, memory) → its observer
    # "module:function" references, imported only when used (the MCP server never imports click, and a
    # feature's CLI module, a face, is imported by the CLI alone):
    mcp_tools: str = ""  # `function(memory) -> [Tool]`: its MCP tools, added after the core's
    cli: str = ""  # `function(group)`: adds its commands to the `episodic` click group
    commands: tuple[
        str, ...
    ] = ()  # the top-level commands `cli` adds: the lazy CLI imports it for these alone

    def tools(self, memory: Memory) -> list[Tool]:
        return list(_resolve(self.mcp_tools)(memory)) if self.mcp_tools else []

    def add_commands(self, group: Any) -> None:
        if self.cli:
            _resolve(self.cli)(group)


def _resolve(reference: str) -> Callable[..., Any]:
    module, _, name = reference.partition(":")
    return getattr(importlib.import_module(module), name)  # type: ignore[no-any-return]


def observe_quietly(
    observer: SessionObserver, action: str, call: Callable[[], Result], failed: Result
) -> Result:
    """Run one observer call; a feature's failure is logged (`failed` returned), never raised into the write
    path: the feature retries on the next run."""
    try:
        return call()
    except Exception as exc:  # a feature is a hint beside the card: it never costs one
        log.warning("%s: %s failed: %s", type(observer).__name__, action, exc, exc_info=True)
        return failed
