"""What every agent's transcript source holds: the scrubber, where to look, and how much of a file to read."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from episodic.kernel.ports import TranscriptSource
from episodic.parse.text import TextScrubber
from episodic.plumbing import bounded


class FileTranscriptSource(TranscriptSource):
    """A source of sessions stored as files under some roots (None: the agent's own folders, from settings)."""

    def __init__(
        self,
        scrubber: TextScrubber,
        roots: Sequence[str | Path] | None = None,
        tool_output_chars: int = 4000,
        max_file_bytes: int = bounded.DEFAULT_MAX_FILE_BYTES,
    ) -> None:
        self.scrubber = scrubber
        self.roots = [Path(r).expanduser() for r in roots] if roots is not None else None
        self.tool_output_chars = tool_output_chars
        self.max_file_bytes = max_file_bytes  # only regular files are read, at most this many bytes
