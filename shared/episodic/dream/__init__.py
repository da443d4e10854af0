"""Dreaming over episodes: a dated weekly record of what recurred, what was decided, what is unfinished.

Three phases over one ISO week of indexed sessions (the input is read, never modified):
light sleep (`survey`: a compact outline of the week), REM (`threads`: the 5-8 most significant threads,
deep detail for at most eight), deep sleep (`scoring`: six weighted signals, three gates). `writer`
turns the promoted threads into a `record.DreamRecord` (offline from card fields, or with an LLM);
`cycle` runs the phases with counts per phase and keeps records in a `port.DreamArchive` (the viewer reads
the same one). The week's sessions come through the `source.WeekSource` port. The AWS adapters are in
`episodic.aws` (`dream_archive`, `dream_llm`, `dream_source`), chosen by `episodic.assembly.dream`.

May import: the core and below and `mcp/`; another feature only through its `port` and `models`; its `cli`
module is a face. So is `hook`, the SessionEnd trigger.
"""
