"""Every coding agent's sessions through one source: explicit paths are sorted by content, and with no
paths each agent's own default roots are searched (Claude Code, Codex CLI, Gemini CLI)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

from episodic.kernel.models import NotEpisode, SessionSource, Trajectory
from episodic.kernel.ports import TranscriptSource
from episodic.kernel.settings import Settings
from episodic.parse.claude_code import ClaudeCodeSource
from episodic.parse.codex import CodexSource
from episodic.parse.discovery import group_sessions, iter_candidate_files
from episodic.parse.formats import CLAUDE_CODE, CODEX, GEMINI, by_format, candidate_files
from episodic.parse.gemini import GeminiSource
from episodic.parse.single_file import SingleFileSource
from episodic.parse.text import TextScrubber


def agent_roots(settings: Settings) -> list[tuple[str, Path]]:
    """(agent label, folder) of every agent's default roots that exist: what `quickstart` says it indexes."""
    from episodic.parse.discovery import default_roots
    from episodic.parse.formats import codex_roots, gemini_roots

    return [
        *(("Claude Code", root / "projects") for root in default_roots(settings)),
        *(("Codex CLI", root) for root in codex_roots(settings)),
        *(("Gemini CLI", root) for root in gemini_roots(settings)),
    ]


class AllAgentsSource(TranscriptSource):
    """Routes each session to its agent's parser; the trajectory records which agent it came from."""

    def __init__(self, claude: ClaudeCodeSource, others: Sequence[SingleFileSource]) -> None:
        self.claude = claude
        self.others = {source.agent: source for source in others}

    @classmethod
    def from_settings(
        cls, settings: Settings, scrubber: TextScrubber, *, scan_home: bool = True
    ) -> AllAgentsSource:
        """Each agent's default roots under the user's home; without `scan_home` (a Lambda, which parses the
        files it is handed) no roots at all (the assembly decides)."""
        from episodic.parse.discovery import default_roots
        from episodic.parse.formats import codex_roots, gemini_roots

        chars, cap = settings.tool_output_chars, settings.max_transcript_bytes
        return cls(
            ClaudeCodeSource(
                scrubber,
                roots=default_roots(settings) if scan_home else [],
                tool_output_chars=chars,
                max_file_bytes=cap,
            ),
            [
                CodexSource(scrubber, codex_roots(settings) if scan_home else [], chars, max_file_bytes=cap),
                GeminiSource(
                    scrubber, gemini_roots(settings) if scan_home else [], chars, max_file_bytes=cap
                ),
            ],
        )

    def discover(self, paths: Sequence[str] | None = None) -> Iterator[SessionSource]:
        if not paths:
            yield from self.claude.discover(None)
            for source in self.others.values():
                yield from source.discover(None)
            return
        files = by_format(candidate_files([Path(p).expanduser() for p in paths]))
        yield from group_sessions(iter_candidate_files(files[CLAUDE_CODE]))
        for agent in (CODEX, GEMINI):
            if agent in self.others:
                yield from self.others[agent].sources(files[agent])

    def load(self, source: SessionSource) -> Trajectory | NotEpisode:
        other = self.others.get(source.agent)
        return other.load(source) if other is not None else self.claude.load(source)
