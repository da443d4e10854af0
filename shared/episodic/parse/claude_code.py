"""Claude Code transcripts (`~/.claude/projects/**/*.jsonl`) as scrubbed trajectories."""

from __future__ import annotations

import gc
import hashlib
from collections.abc import Iterator, Sequence
from pathlib import Path

from episodic.kernel.models import NotEpisode, ParseStats, SessionSource, Trajectory
from episodic.parse.builder import EntryReader, RawEvent, RawSession
from episodic.parse.classify import not_episode_reason
from episodic.parse.discovery import INTERNAL_AGENT_PREFIXES, default_roots, group_sessions, is_agent_file
from episodic.parse.discovery import iter_candidate_files as _candidates
from episodic.parse.file_source import FileTranscriptSource
from episodic.parse.reader import iter_entries, looks_like_codex, looks_like_json_document
from episodic.parse.trajectory import build_trajectory
from episodic.plumbing import bounded


class ClaudeCodeSource(FileTranscriptSource):
    """Finds Claude Code sessions (subagents folded into parents) and loads them as scrubbed trajectories."""

    # ------------------------------------------------------------ discovery

    def default_paths(self) -> list[Path]:
        if self.roots is None:
            from episodic.kernel.settings import load_settings

            roots = default_roots(load_settings())
        else:
            roots = self.roots
        return [root / "projects" for root in roots if (root / "projects").is_dir()]

    def discover(self, paths: Sequence[str] | None = None) -> Iterator[SessionSource]:
        bases = [Path(p).expanduser() for p in paths] if paths else self.default_paths()
        yield from group_sessions(_candidates(bases))

    # ------------------------------------------------------------ loading

    def load(self, source: SessionSource) -> Trajectory | NotEpisode:
        # a transcript decodes into many thousands of acyclic containers: the collections they would
        # trigger find no garbage and cost ~10 % of the parse, so the collector waits until the end
        enabled = gc.isenabled()
        gc.disable()
        try:
            return self._load(source)
        finally:
            if enabled:
                gc.enable()

    def _load(self, source: SessionSource) -> Trajectory | NotEpisode:
        stats = ParseStats()
        try:  # regular files under the cap only: a FIFO or /dev/zero named *.jsonl is skipped, not read
            main_bytes = bounded.read_regular(source.main_path, self.max_file_bytes)
        except bounded.NotReadable as exc:
            return NotEpisode(source=source, reason=exc.reason, stats=stats)
        except OSError as exc:
            stats.skipped_entry_types[f"unreadable: {type(exc).__name__}"] = 1
            return NotEpisode(source=source, reason="unreadable", stats=stats)
        digest = hashlib.sha256(main_bytes)
        agent_files: list[tuple[str, bytes]] = []
        for path in source.subagent_paths:
            try:
                data = bounded.read_regular(path, self.max_file_bytes)
            except OSError:
                stats.skipped_entry_types["unreadable-subagent"] = (
                    stats.skipped_entry_types.get("unreadable-subagent", 0) + 1
                )
                continue
            digest.update(data)
            agent_files.append((path, data))
        sha = digest.hexdigest()

        main_path = Path(source.main_path)
        main_agent = _agent_id_from_name(main_path)
        if main_agent and main_agent.startswith(INTERNAL_AGENT_PREFIXES):
            return NotEpisode(source=source, reason="internal-agent", stats=stats)
        if looks_like_json_document(main_bytes):
            return NotEpisode(source=source, reason="not-claude-code", stats=stats)

        session = RawSession(stats=stats)
        if main_agent:
            session.subagents.append(main_agent)
        reader = EntryReader(session, agent_id=main_agent, is_main=True)
        for index, entry in enumerate(iter_entries(main_bytes, stats)):
            if index == 0 and looks_like_codex(entry):
                return NotEpisode(source=source, reason="not-claude-code", stats=stats)
            reader.feed(entry)
        main_events = session.events
        blocks: list[tuple[str, list[RawEvent]]] = []
        for path, data in agent_files:
            agent_id = _agent_id_from_name(Path(path)) or Path(path).stem
            session.events = []
            sub_reader = EntryReader(session, agent_id=agent_id, is_main=False)
            for entry in iter_entries(data, stats):
                sub_reader.feed(entry)
            if _is_internal_block(session.events):
                stats.skipped_entry_types["internal-agent"] = (
                    stats.skipped_entry_types.get("internal-agent", 0) + 1
                )
                continue
            session.subagents.append(agent_id)
            blocks.append((agent_id, session.events))
        session.events = _fold(main_events, blocks)

        reason = not_episode_reason(session, main_agent)
        session_id = _session_id(session, source)
        if reason:
            return NotEpisode(source=source, session_id=session_id, reason=reason, stats=stats)
        return build_trajectory(
            session,
            source=source,
            session_id=session_id,
            source_sha256=sha,
            main_agent=main_agent,
            scrubber=self.scrubber,
            tool_output_chars=self.tool_output_chars,
        )


def _agent_id_from_name(path: Path) -> str | None:
    return path.stem[len("agent-") :] if is_agent_file(path) else None


def _is_internal_block(events: list[RawEvent]) -> bool:
    from episodic.parse.discovery import INTERNAL_AGENT_TEXTS

    for event in events[:3]:
        if event.kind == "prompt" and (
            event.text.startswith(INTERNAL_AGENT_TEXTS[1]) or INTERNAL_AGENT_TEXTS[0] in event.text[-4000:]
        ):
            return True
    return False


def _fold(main: list[RawEvent], blocks: list[tuple[str, list[RawEvent]]]) -> list[RawEvent]:
    """Put each subagent's events right after the Task call that started it (else by time, else last)."""
    inserts: dict[int, list[RawEvent]] = {}
    for agent_id, events in blocks:
        if not events:
            continue
        at = next(
            (i for i, e in enumerate(main) if e.call is not None and e.call.spawned_agent == agent_id), None
        )
        if at is None and events[0].timestamp:
            first = events[0].timestamp
            earlier = [i for i, e in enumerate(main) if e.timestamp and e.timestamp <= first]
            at = earlier[-1] if earlier else -1
        inserts.setdefault(len(main) - 1 if at is None else at, []).extend(events)
    if not inserts:
        return main
    folded: list[RawEvent] = list(inserts.get(-1, []))
    for i, event in enumerate(main):
        folded.append(event)
        folded.extend(inserts.get(i, []))
    if not main:
        for key in sorted(k for k in inserts if k >= 0):
            folded.extend(inserts[key])
    return folded


def _session_id(session: RawSession, source: SessionSource) -> str:
    if session.session_ids:
        # the id most main-thread entries carry (a resumed file may open with copies of an older session)
        return max(session.session_ids.items(), key=lambda item: item[1])[0]
    return source.session_key.split(":", 1)[0]
