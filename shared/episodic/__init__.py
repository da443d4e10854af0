"""episodic: memory for coding agents that remembers occasions, not just rules."""

__version__ = "0.1.0"
