"""Issue 31, scratch memory: a transcript dated in the future (2099) must expire like the rest. Its tool
outcomes are clamped to when the file was last written (at the latest, when it is read); records dated in
the future by an older version are swept."""

from __future__ import annotations

import json
import os
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from episodic.embed.hashing import HashingEmbedder
from episodic.scratch.models import ScratchRecord, ToolOutcome
from episodic.scratch.port import ScratchManifest
from episodic.scratch.sqlite_store import SQLiteScratchStore

from .conftest import cli

SESSION = "sess-future-1"
QUERY = "fix the typecheck error: cannot find name UserContext"


def dated_session(folder: Path, stamp: str) -> Path:
    """A Claude Code session, every line stamped `stamp`: a typecheck fails, an edit, then it passes."""
    base = {"sessionId": SESSION, "cwd": "/home/dev/shop", "timestamp": stamp, "version": "2.1.0"}

    def call(uuid: str, tool_id: str, name: str, tool_input: dict) -> dict:
        content = [{"type": "tool_use", "id": tool_id, "name": name, "input": tool_input}]
        return {
            **base,
            "type": "assistant",
            "uuid": uuid,
            "message": {"role": "assistant", "content": content},
        }

    def result(uuid: str, tool_id: str, output: str, error: bool = False) -> dict:
        content = [{"type": "tool_result", "tool_use_id": tool_id, "content": output, "is_error": error}]
        return {**base, "type": "user", "uuid": uuid, "message": {"role": "user", "content": content}}

    prompt = "rename UserContext and fix the type errors in the auth middleware"
    lines = [
        {**base, "type": "user", "uuid": "u1", "message": {"role": "user", "content": prompt}},
        call("a1", "t1", "Bash", {"command": "npx tsc --noEmit"}),
        result(
            "u2",
            "t1",
            "Exit code 2\nsrc/auth/middleware.ts(12,5): error TS2304: Cannot find name 'UserContext'.",
            error=True,
        ),
        call(
            "a2",
            "t2",
            "Edit",
            {
                "file_path": "/home/dev/shop/src/auth/middleware.ts",
                "old_string": "UserContext",
                "new_string": "RequestUser",
            },
        ),
        result("u3", "t2", "The file has been updated."),
        call("a3", "t3", "Bash", {"command": "npx tsc --noEmit"}),
        result("u4", "t3", ""),
        {
            **base,
            "type": "assistant",
            "uuid": "a4",
            "message": {
                "role": "assistant",
                "content": [{"type": "text", "text": "The typecheck passes now."}],
            },
        },
    ]
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{SESSION}.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def recalled(home: Path) -> list[dict]:
    done = cli(home, "scratch", "recall", QUERY, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["results"]


def test_a_transcript_dated_2099_is_stored_as_of_when_it_was_read(tmp_path: Path) -> None:
    folder = tmp_path / "projects" / "-home-dev-shop"
    dated_session(folder, "2099-01-01T00:00:00Z")
    home = tmp_path / "home"
    before = datetime.now(UTC)
    assert cli(home, "index", str(folder), "--json").returncode == 0
    hits = recalled(home)
    assert hits, "the session's outcomes are stored and recalled"
    stamps = {datetime.fromisoformat(h["record"]["created_at"]) for h in hits}
    # clamped to the file's write time (just before the run), never 2099: it expires within the TTL
    assert all(stamp <= datetime.now(UTC) and stamp >= before - timedelta(minutes=5) for stamp in stamps)


def test_a_transcript_dated_2099_but_written_ten_days_ago_has_expired(tmp_path: Path) -> None:
    folder = tmp_path / "projects" / "-home-dev-shop"
    path = dated_session(folder, "2099-01-01T00:00:00Z")
    ten_days_ago = time.time() - 10 * 86400
    os.utime(path, (ten_days_ago, ten_days_ago))
    home = tmp_path / "home"
    assert cli(home, "index", str(folder), "--json").returncode == 0
    assert recalled(home) == []  # stored, recalled and injected until 2099 before the clamp


def test_scratch_sweep_deletes_records_an_older_version_stored_with_a_future_date(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    embedder = HashingEmbedder(384)
    stored = ScratchRecord(
        tenant_id="local",
        session_id=SESSION,
        tool_name="typecheck",
        outcome=ToolOutcome.FAIL,
        summary="typecheck failed — error TS2304: Cannot find name 'UserContext'.",
        created_at=datetime(2099, 1, 1, tzinfo=UTC),
    )
    store = SQLiteScratchStore(home / "scratch.sqlite3")
    store.add(
        [stored], embedder.embed([stored.summary]), ScratchManifest(embedder_id=embedder.id, dimension=384)
    )
    assert recalled(home) == []  # an older version's record: recalled until 2099, now never handed out
    assert SQLiteScratchStore(home / "scratch.sqlite3").count() == 1
    swept = cli(home, "scratch", "sweep")
    assert swept.returncode == 0 and "swept 1 expired" in swept.stdout and "0 kept" in swept.stdout, (
        swept.stdout
    )
    assert recalled(home) == []
