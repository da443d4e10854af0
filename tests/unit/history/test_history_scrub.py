"""History records keep prompts in full, so secrets are scrubbed before a record is stored: by the parser,
and again when the record is made (a rule the parse step skipped cannot leak into the history)."""

from __future__ import annotations

import json
from pathlib import Path

from episodic.assembly import build_memory
from episodic.core.ingest import index_sessions
from episodic.history.extract import history_record
from episodic.history.service import kept_history
from episodic.kernel.models import Event, SessionSource, Trajectory
from episodic.kernel.settings import load_settings
from episodic.scrub import Scrubber

AWS_KEY = "AKIAIOSFODNN7EXAMPLE"
GITHUB_TOKEN = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"


def _line(kind: str, text: str, n: int) -> str:
    message = {"role": kind, "content": text if kind == "user" else [{"type": "text", "text": text}]}
    return json.dumps(
        {
            "type": kind,
            "uuid": f"u-{n}",
            "parentUuid": f"u-{n - 1}" if n else None,
            "sessionId": "33333333-3333-4333-8333-333333333333",
            "timestamp": f"2026-02-0{n + 1}T10:00:00Z",
            "cwd": "/home/dev/app",
            "gitBranch": "alex/ent-5-keys",
            "isSidechain": False,
            "userType": "external",
            "message": message,
        }
    )


def test_planted_secrets_never_reach_the_history_store(tmp_path: Path) -> None:
    folder = tmp_path / "projects" / "-home-dev-app"
    folder.mkdir(parents=True)
    lines = [
        _line("user", f"deploy fails; my key is {AWS_KEY} and token {GITHUB_TOKEN}", 0),
        _line("assistant", f"Do not paste {AWS_KEY}; rotate it. Fixed the deploy config.", 1),
        _line("user", "thanks, the deploy works now", 2),
        _line("assistant", "Done: the deploy passes.", 3),
    ]
    (folder / "33333333-3333-4333-8333-333333333333.jsonl").write_text("\n".join(lines) + "\n")
    memory = build_memory(load_settings(home=tmp_path / "home", embedder="hashing", distiller="heuristic"))
    index_sessions(memory, [str(folder)], "local")
    assert kept_history(memory) is not None
    record = kept_history(memory).get("local", "33333333-3333-4333-8333-333333333333")
    assert record is not None and record.turns and "deploy fails" in record.turns[0].prompt
    stored = b"".join(p.read_bytes() for p in (tmp_path / "home").glob("history.sqlite3*"))
    assert AWS_KEY.encode() not in stored and GITHUB_TOKEN.encode() not in stored
    assert b"[REDACTED:" in stored


def test_the_record_is_scrubbed_again_when_made() -> None:
    source = SessionSource(session_key="s", main_path="/x/s.jsonl")
    trajectory = Trajectory(
        session_id="s",
        source=source,
        source_sha256="0" * 64,
        prompts=[f"key {AWS_KEY}"],
        events=[
            Event(kind="prompt", text=f"key {AWS_KEY}"),
            Event(kind="assistant", text=f"saw {GITHUB_TOKEN}"),
        ],
        closing_summary=f"done with {AWS_KEY}",
        compact_summaries=[f"summary {GITHUB_TOKEN}"],
    )
    record = history_record(trajectory, "local", Scrubber())
    dumped = record.model_dump_json()
    assert AWS_KEY not in dumped and GITHUB_TOKEN not in dumped
    assert "[REDACTED:aws-access-key]" in record.turns[0].prompt


def test_the_history_file_is_private(tmp_path: Path) -> None:
    memory = build_memory(load_settings(home=tmp_path / "home", embedder="hashing"))
    assert kept_history(memory) is not None
    mode = (tmp_path / "home" / "history.sqlite3").stat().st_mode & 0o777
    assert mode == 0o600
