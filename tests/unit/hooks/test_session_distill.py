"""SessionEnd with Claude Code as the distiller (a stand-in `claude` with recorded output shapes): the
ended session is distilled in the background and its heuristic card replaced; at most the configured
number of `claude` runs at once under 5 simultaneous session ends; a failure keeps the heuristic card and
records the retry; the daily cap holds; a hook inside a distiller run does nothing."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from episodic.hooks import session_end as session_distill
from episodic.store.sqlite import SQLiteStore
from kits.proc_kit import pids_with_args
from unit.distill.test_claude_code_distiller import SESSIONS, calls, fake_claude  # noqa: F401  (the fixture)

SOURCE = SESSIONS / "-home-dev-my-app-v2-0" / "11111111-1111-4111-8111-111111111111.jsonl"


@pytest.fixture()
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "episodic-home"
    monkeypatch.setenv("EPISODIC_HOME", str(home))
    monkeypatch.setenv("HOME", str(tmp_path / "user-home"))
    monkeypatch.setenv("EPISODIC_EMBEDDER", "hashing")
    monkeypatch.setenv("EPISODIC_DISTILLER", "claude-code")
    monkeypatch.delenv("EPISODIC_DISTILLING", raising=False)
    return home


def session_copies(tmp_path: Path, n: int) -> list[Path]:
    """n distinct sessions (own ids) with the fixture's content."""
    folder = tmp_path / "projects" / "-home-dev-app"
    folder.mkdir(parents=True)
    text = SOURCE.read_text(encoding="utf-8")
    out = []
    for _ in range(n):
        sid = str(uuid.uuid4())
        path = folder / f"{sid}.jsonl"
        path.write_text(text.replace("11111111-1111-4111-8111-111111111111", sid), encoding="utf-8")
        out.append(path)
    return out


def end_sessions(*transcripts: Path) -> list[tuple[int, str, str]]:
    """The SessionEnd hooks for these sessions, started together; (exit code, stdout, stderr) each."""
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "episodic", "hook", "session-distill"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in transcripts
    ]
    results = []
    for proc, transcript in zip(procs, transcripts, strict=True):
        payload = json.dumps({"hook_event_name": "SessionEnd", "transcript_path": str(transcript)})
        out, err = proc.communicate(payload, timeout=30)
        results.append((proc.returncode, out, err))
    return results


def worker_lines(home: Path, n: int, seconds: float = 180.0) -> list[str]:
    log = home / "logs" / session_distill.LOG_FILE
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        lines = [x for x in (log.read_text().splitlines() if log.exists() else []) if " worker: " in x]
        if len(lines) >= n:
            return lines
        time.sleep(0.05)  # a small file read: the line is seen as soon as it is written
    raise AssertionError(f"{n} workers did not finish: {log.read_text() if log.exists() else 'no log'}")


def workers_running(transcript: Path) -> list[int]:
    """Pids of live `episodic distill-session TRANSCRIPT` processes (Linux /proc)."""
    return pids_with_args("distill-session", str(transcript))


def kinds(home: Path) -> dict[str, str]:
    with SQLiteStore(home / "index.sqlite3") as store:
        return {r.session_id: r.distiller.kind for r in store.iter_records("local")}


def test_session_end_distils_in_the_background_and_replaces_the_heuristic_card(
    home: Path,
    tmp_path: Path,
    fake_claude: Path,  # noqa: F811
) -> None:
    (transcript,) = session_copies(tmp_path, 1)
    assert end_sessions(transcript) == [(0, "", "")]  # returns at once; the worker runs detached
    (line,) = worker_lines(home, 1)
    assert "Claude Code card stored" in line and "(replaced 1)" in line  # heuristic first, then replaced
    assert kinds(home) == {transcript.stem: "claude-code"}
    assert len(calls(fake_claude)) == 1


def test_five_simultaneous_session_ends_run_one_claude_at_a_time(
    home: Path,
    tmp_path: Path,
    fake_claude: Path,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    running = tmp_path / "running"
    monkeypatch.setenv("FAKE_CLAUDE_RUNNING_DIR", str(running))
    monkeypatch.setenv("FAKE_CLAUDE_DELAY_SECONDS", "0.7")
    transcripts = session_copies(tmp_path, 5)
    assert end_sessions(*transcripts) == [(0, "", "")] * 5
    lines = worker_lines(home, 5)
    assert all("Claude Code card stored" in x for x in lines), lines
    overlap = [int(x) for x in (tmp_path / "fake-claude-overlap.log").read_text().split()]
    assert len(overlap) == 5 and max(overlap) == 1  # background_distill_processes = 1
    assert set(kinds(home).values()) == {"claude-code"} and len(kinds(home)) == 5


def test_a_failed_distil_keeps_the_heuristic_card_and_records_the_retry(
    home: Path,
    tmp_path: Path,
    fake_claude: Path,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("FAKE_CLAUDE_SCENARIO", "rate-limited")
    (transcript,) = session_copies(tmp_path, 1)
    end_sessions(transcript)
    (line,) = worker_lines(home, 1)
    assert "heuristic card kept, retried by the next index" in line
    assert kinds(home) == {transcript.stem: "heuristic"}
    with SQLiteStore(home / "index.sqlite3") as store:
        (failure,) = store.failures("local")
    assert "retry next run" in failure.reason


@pytest.mark.skipif(not Path("/proc/self/cmdline").exists(), reason="looks for workers through /proc")
def test_the_daily_cap_and_the_recursion_guard(
    home: Path,
    tmp_path: Path,
    fake_claude: Path,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert [session_distill.take_daily_allowance(home, 2, "2026-12-01") for _ in range(3)] == [
        True,
        True,
        False,
    ]
    assert session_distill.take_daily_allowance(home, 2, "2026-12-02")  # a new day
    monkeypatch.setenv("EPISODIC_DISTILL_DAILY_CAP", "0")
    (transcript,) = session_copies(tmp_path, 1)
    end_sessions(transcript)
    (line,) = worker_lines(home, 1)
    assert "daily cap of 0 is reached" in line and kinds(home) == {transcript.stem: "heuristic"}
    ends = time.monotonic() + 60.0  # that worker logged; it exits now: none of this transcript's is left
    while workers_running(transcript) and time.monotonic() < ends:
        time.sleep(0.05)

    monkeypatch.setenv("EPISODIC_DISTILLING", "1")  # as inside a worker: the hook starts nothing
    assert end_sessions(transcript) == [(0, "", "")]
    # a worker the hook started is running now (Popen returns once it is exec'd), or it ended and logged
    assert workers_running(transcript) == []
    assert len(worker_lines(home, 1)) == 1
    assert not fake_claude.exists()  # claude never ran in this test
