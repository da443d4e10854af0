"""The kept-trajectory files (`episodic.store.kept_trajectories`): an id that is no safe file name is hashed, never a path;
a damaged file reads as missing; an unchanged session is not rewritten; only the tenant's own are seen;
and Claude Code's `cleanupPeriodDays` is read as Claude Code reads it (default 30)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from episodic.kernel.models import Trajectory
from episodic.sessions.agent_cleanup import DEFAULT_CLEANUP_DAYS, cleanup_days
from episodic.store.kept_trajectories import KeptTrajectoryFiles
from kits.distill_builders import edit, prompt, trajectory


def _session(session_id: str, sha: str = "a" * 64) -> Trajectory:
    made = trajectory(prompt("the cart total is blank"), edit())
    return made.model_copy(
        update={"session_id": session_id, "source_sha256": sha, "ended_at": datetime(2026, 5, 1, tzinfo=UTC)}
    )


def test_an_unsafe_session_id_is_a_hashed_file_name_inside_the_tenants_folder(tmp_path: Path) -> None:
    kept = KeptTrajectoryFiles(tmp_path, 1 << 20)
    odd = "../../etc/passwd"
    assert kept.keep("alice", _session(odd))
    (only,) = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert only.parent == tmp_path / "alice" and only.name.startswith("h-")
    back = kept.get("alice", odd)
    assert back is not None and back.session_id == odd
    assert kept.get("bob", odd) is None and not kept.has("bob", odd)
    assert only.stat().st_mtime == datetime(2026, 5, 1, tzinfo=UTC).timestamp()  # the session's end


def test_unchanged_is_not_rewritten_and_a_damaged_file_reads_as_missing(tmp_path: Path) -> None:
    kept = KeptTrajectoryFiles(tmp_path, 1 << 20)
    assert kept.keep("local", _session("s-1"))
    assert not kept.keep("local", _session("s-1"))  # same source hash
    (path,) = (tmp_path / "local").iterdir()
    path.write_bytes(b"not xz at all")
    assert kept.get("local", "s-1") is None
    assert kept.keep("local", _session("s-1", "b" * 64))  # the session grew: replaced
    assert [p.name for p in (tmp_path / "local").iterdir()] == ["s-1.kept"]
    assert (tmp_path / "local" / "s-1.kept").read_bytes().startswith(b"episodic-kept 1 " + b"b" * 64 + b"\n")
    assert kept.delete("local", "s-1") and not kept.has("local", "s-1")


def test_cleanup_period_days_as_claude_code_reads_it(tmp_path: Path) -> None:
    assert cleanup_days(tmp_path) == DEFAULT_CLEANUP_DAYS  # no settings.json
    for value, expected in ((90, 90), ("90", DEFAULT_CLEANUP_DAYS), (-1, DEFAULT_CLEANUP_DAYS), (0, 0)):
        (tmp_path / "settings.json").write_text(json.dumps({"cleanupPeriodDays": value}))
        assert cleanup_days(tmp_path) == expected
    (tmp_path / "settings.json").write_text("{broken")
    assert cleanup_days(tmp_path) == DEFAULT_CLEANUP_DAYS


def test_an_h_dash_id_kept_under_its_literal_name_before_is_still_read_then_moved(tmp_path: Path) -> None:
    """Before issue 52, an id like `h-…` was its own file stem (the hashed ids' name space): such a file
    still reads, and the session's next keep moves it to its hashed name; another session's file of that
    name is never taken for it, nor deleted with it."""
    from episodic.store.kept_trajectories import encode

    kept = KeptTrajectoryFiles(tmp_path, 1 << 20)
    folder = tmp_path / "local"
    folder.mkdir()
    (folder / "h-old.kept").write_bytes(encode(_session("h-old")))  # as the earlier release wrote it
    (folder / "h-other.kept").write_bytes(encode(_session("someone else")))
    assert kept.has("local", "h-old") and kept.get("local", "h-old") is not None
    assert not kept.has("local", "h-other") and kept.get("local", "h-other") is None
    assert not kept.delete("local", "h-other") and (folder / "h-other.kept").exists()
    assert kept.keep("local", _session("h-old"))
    assert not (folder / "h-old.kept").exists() and kept.path("local", "h-old").name != "h-old.kept"
    back = kept.get("local", "h-old")
    assert back is not None and back.session_id == "h-old"
