"""History tools: per-session history records beside the cards (prompts in full, closing summaries, files
touched, tools, subagents), full-text indexed, with work-item links, a timeline and resume commands.

Written by the same ingestion as the cards (`record_history`), read through `episodic.history.service`.

May import: the core and below and `mcp/`; another feature only through its `port` and `models`; its `cli`
module is a face.
"""

HISTORY = "history"  # the feature's name: its part in `Memory.parts`
