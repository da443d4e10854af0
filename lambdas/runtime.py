"""What every handler shares: settings (the one configuration path) and a Lambda-context stand-in type."""

from __future__ import annotations

from typing import Any

from episodic.settings import Settings


def setting(settings: Settings, name: str, default: str) -> str:
    """A Settings field that may not exist yet in this version of the core (then: the stack's default)."""
    value: Any = getattr(settings, name, None)
    return str(value) if value else default
