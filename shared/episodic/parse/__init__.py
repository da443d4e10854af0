"""Transcript parsing: find sessions on disk and turn them into scrubbed trajectories.

May import: `kernel/`, `plumbing/`, `scrub/`.
"""

from episodic.parse.claude_code import ClaudeCodeSource
from episodic.parse.discovery import default_roots

__all__ = ["ClaudeCodeSource", "default_roots"]
