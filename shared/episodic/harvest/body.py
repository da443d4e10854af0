"""The object harvest uploads for one session: every JSON line scrubbed, main file first, then subagents.

Each line is parsed, scrubbed value by value (`Scrubber.scrub_obj_counted`) and written back as compact
JSON; a line that does not parse is dropped and counted, never uploaded raw. Subagent lines keep (or get)
`isSidechain: true` and their `agentId`, so the parser folds them like the inline layout. Then the
session-wide pass the parser makes (`ScrubCounter.follow`) runs over the scrubbed prose in order: a key split
across two messages, or an AWS secret after its key id in an earlier line, goes too.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Protocol

from episodic.kernel.models import SessionSource
from episodic.parse.reader import looks_like_json_document
from episodic.parse.text import ScrubCounter
from episodic.plumbing import bounded
from episodic.scrub.companions import NEAR_KEY_ID_ENTROPY, redact_aws_secrets

_SPOOL_MAX_MEMORY = 16 * 1024 * 1024  # bodies larger than this are built on disk


class ObjScrubber(Protocol):
    """The part of `episodic.scrub.Scrubber` the harvester uses."""

    def scrub_obj_counted(self, obj: Any) -> tuple[Any, dict[str, int]]: ...


@dataclass
class ScrubbedBody:
    """A scrubbed body ready to upload (a file object positioned at 0) and what building it saw."""

    file: IO[bytes]
    size: int
    source_sha256: str  # of the raw source bytes, computed like `Trajectory.source_sha256`
    body_sha256: str  # of the scrubbed bytes that are uploaded
    lines: int = 0
    dropped_lines: int = 0
    secrets_redacted: Counter[str] = field(default_factory=Counter)

    def close(self) -> None:
        self.file.close()


def _agent_id(path: Path) -> str:
    stem = path.stem
    return stem[len("agent-") :] if stem.startswith("agent-") else stem


def read_source_files(source: SessionSource) -> tuple[list[tuple[Path, bytes, bool]], str]:
    """The session's files (path, bytes, is_subagent) and the raw-bytes hash, in the parser's order.

    The main file must be readable (OSError propagates); an unreadable subagent file is left out of both,
    exactly as `ClaudeCodeSource.load` leaves it out of `source_sha256`.
    """
    main = Path(source.main_path)
    main_bytes = bounded.read_regular(main)  # regular files only (NotReadable is an OSError)
    digest = hashlib.sha256(main_bytes)
    files = [(main, main_bytes, False)]
    for raw in source.subagent_paths:
        path = Path(raw)
        try:
            data = bounded.read_regular(path)
        except OSError:
            continue
        digest.update(data)
        files.append((path, data, True))
    return files, digest.hexdigest()


class _Scrubbed:
    """Texts `scrub_obj_counted` has scrubbed already: only the session-wide pass is left."""

    def scrub_counted(self, text: str, *, key: str | None = None) -> tuple[str, dict[str, int]]:
        return text, {}


def _follow_session(value: Any, session: ScrubCounter) -> Any:
    """Prose (a string with a space or line break) through the session pass, in order; other strings only
    lose an AWS secret once the session has shown a key id (ids and names must not take a split's carry)."""
    if isinstance(value, dict):
        return {k: _follow_session(v, session) for k, v in value.items()}
    if isinstance(value, list):
        return [_follow_session(v, session) for v in value]
    if not isinstance(value, str) or not value:
        return value
    if " " in value or "\n" in value:
        return session.follow(value)
    if "aws-access-key" in session.counts:
        clean, paired = redact_aws_secrets(value, NEAR_KEY_ID_ENTROPY)
        if paired:
            session.counts["aws-secret-key"] = session.counts.get("aws-secret-key", 0) + paired
        return clean
    return value


def _encode_line(entry: dict[str, Any]) -> bytes:
    text = json.dumps(entry, ensure_ascii=False, separators=(",", ":")) + "\n"
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates: escape them, so the object stays valid UTF-8 JSON
        return (json.dumps(entry, separators=(",", ":")) + "\n").encode("ascii")


def build_body(
    files: list[tuple[Path, bytes, bool]], source_sha256: str, scrubber: ObjScrubber
) -> ScrubbedBody:
    out: IO[bytes] = tempfile.SpooledTemporaryFile(max_size=_SPOOL_MAX_MEMORY)  # noqa: SIM115 - returned open
    digest = hashlib.sha256()
    size = lines = dropped = 0
    session = ScrubCounter(_Scrubbed())
    try:
        for path, data, is_subagent in files:
            agent_id = _agent_id(path) if is_subagent else None
            # an older Gemini CLI session is one pretty-printed document: uploaded as one compact line
            document = not is_subagent and looks_like_json_document(data)
            for raw_line in [data] if document else data.splitlines():
                if not raw_line.strip():
                    continue
                try:
                    entry = json.loads(raw_line)
                except (ValueError, UnicodeDecodeError, RecursionError):  # incl. too deep, too long an int
                    dropped += 1  # a truncated last line, or garbage: never uploaded raw
                    continue
                if not isinstance(entry, dict):
                    dropped += 1
                    continue
                clean, found = scrubber.scrub_obj_counted(entry)
                for kind, n in found.items():
                    session.counts[kind] = session.counts.get(kind, 0) + n
                clean = _follow_session(clean, session)
                if agent_id is not None:
                    clean.setdefault("isSidechain", True)
                    clean.setdefault("agentId", agent_id)
                encoded = _encode_line(clean)
                out.write(encoded)
                digest.update(encoded)
                size += len(encoded)
                lines += 1
        out.seek(0)
    except BaseException:
        out.close()
        raise
    return ScrubbedBody(
        file=out,
        size=size,
        source_sha256=source_sha256,
        body_sha256=digest.hexdigest(),
        lines=lines,
        dropped_lines=dropped,
        secrets_redacted=Counter(session.counts),
    )
