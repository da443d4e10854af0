"""Retrieval systems under evaluation; importing this package registers the built-in ones."""

from episodic.evaluation.systems import cards, raw
from episodic.evaluation.systems.base import (
    SYSTEMS,
    RetrievalSystem,
    SystemContext,
    register_system,
    select_systems,
)

__all__ = ["SYSTEMS", "RetrievalSystem", "SystemContext", "cards", "raw", "register_system", "select_systems"]
