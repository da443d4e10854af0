"""What the Codex and Gemini CLI adapters share: one file per session, read whole, built the same way.

Each adapter turns its records into the Claude Code parser's raw pieces (`RawSession`), so the cut,
the scrubbing and the `Trajectory` are the very ones Claude Code sessions get (`build_trajectory`).
"""

from __future__ import annotations

import hashlib
import re
from abc import abstractmethod
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from episodic.kernel.models import NotEpisode, ParseStats, SessionSource, Trajectory
from episodic.parse.builder import RawSession
from episodic.parse.classify import not_episode_reason
from episodic.parse.file_source import FileTranscriptSource
from episodic.parse.formats import by_format, candidate_files
from episodic.parse.trajectory import build_trajectory
from episodic.plumbing import bounded

_EXIT_CODE_RES = (
    re.compile(r"Process exited with code (-?\d+)"),  # Codex exec_command
    re.compile(r"^Exit Code: (-?\d+)", re.M),  # Gemini run_shell_command
    re.compile(r'"exit_code":\s*(-?\d+)'),  # Codex shell / apply_patch metadata
)


def exit_code_in(output: str) -> int | None:
    for pattern in _EXIT_CODE_RES:
        found = pattern.search(output[:4000])
        if found:
            return int(found.group(1))
    return None


def note_time(session: RawSession, ts: str) -> None:
    if session.first_ts is None or ts < session.first_ts:
        session.first_ts = ts
    if session.last_ts is None or ts > session.last_ts:
        session.last_ts = ts


@dataclass
class AgentSession(RawSession):
    """The raw pieces plus what only other agents' files say."""

    agent_version: str = ""


class SingleFileSource(FileTranscriptSource):
    """A session is one file in the agent's format; `agent` names it, `parse` reads its bytes."""

    agent: str

    @abstractmethod
    def default_roots(self) -> list[Path]:
        """The agent's own session folders (from the settings when not given)."""

    @abstractmethod
    def parse(self, data: bytes, source: SessionSource, session: AgentSession) -> str | None:
        """Feed the file's records into `session`; return a not-episode reason to stop early."""

    def discover(self, paths: Sequence[str] | None = None) -> Iterator[SessionSource]:
        bases = [Path(p).expanduser() for p in paths] if paths else self.default_roots()
        yield from self.sources(by_format(candidate_files(bases), unreadable_to=self.agent)[self.agent])

    def sources(self, files: Sequence[Path]) -> list[SessionSource]:
        out = []
        for path in files:
            try:
                stat = path.stat()
            except OSError:
                try:  # a symlink loop: kept, so that `load` reports it skipped rather than lost
                    stat = path.lstat()
                except OSError:
                    continue
            out.append(
                SessionSource(
                    session_key=self.session_key(path),
                    main_path=str(path),
                    total_bytes=stat.st_size,
                    mtime=stat.st_mtime,
                    agent=self.agent,
                )
            )
        return out

    def session_key(self, path: Path) -> str:
        return path.stem

    def load(self, source: SessionSource) -> Trajectory | NotEpisode:
        stats = ParseStats()
        try:
            data = bounded.read_regular(source.main_path, self.max_file_bytes)
        except bounded.NotReadable as exc:
            stats.skipped_entry_types[exc.reason] = 1
            return NotEpisode(source=source, reason=exc.reason, stats=stats)
        except OSError as exc:
            stats.skipped_entry_types[f"unreadable: {type(exc).__name__}"] = 1
            return NotEpisode(source=source, reason="unreadable", stats=stats)
        session = AgentSession(stats=stats)
        reason = self.parse(data, source, session)
        session_id = next(iter(session.session_ids), source.session_key)
        reason = reason or not_episode_reason(session, None)
        if reason:
            return NotEpisode(source=source, session_id=session_id, reason=reason, stats=stats)
        trajectory = build_trajectory(
            session,
            source=source,
            session_id=session_id,
            source_sha256=hashlib.sha256(data).hexdigest(),
            main_agent=None,
            scrubber=self.scrubber,
            tool_output_chars=self.tool_output_chars,
        )
        trajectory.agent = self.agent
        trajectory.agent_version = session.agent_version
        return trajectory
