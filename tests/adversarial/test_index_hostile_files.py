"""Issue 14 items 1-3, 9, 11 and the index lock: hostile files never take down an `episodic index` run."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import cli, session_lines

VALID = "11111111-1111-4111-8111-111111111111"


def index_json(home: Path, folder: Path, **env: str) -> dict:
    done = cli(home, "index", str(folder), "--json", **env)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_a_first_line_of_100000_brackets_does_not_abort_the_run(tmp_path: Path, hostile_dir: Path) -> None:
    (hostile_dir / "deep.jsonl").write_text("[" * 100_000 + "\n")
    for _ in range(2):  # "on every re-run": the second run must not fail either
        report = index_json(tmp_path / "home", hostile_dir)
    assert report["unchanged"] == 1 and not report["failed"], report


def test_a_lone_surrogate_session_id_is_isolated(tmp_path: Path, hostile_dir: Path) -> None:
    # the exact line of the issue: printf '{"type":"user","sessionId":"\\ud800x",...}\n'
    line = '{"type":"user","sessionId":"\\ud800x","message":{"role":"user","content":"x"}}\n'
    (hostile_dir / "a.jsonl").write_text(line)
    (hostile_dir / "b.jsonl").write_text(
        line.replace(
            '"content":"x"', '"content":"the build fails with a missing header file after the upgrade"'
        )
        + session_lines("\\ud800y", "ignored").replace('"\\\\ud800y"', '"\\ud800y"')
    )
    first = index_json(tmp_path / "home", hostile_dir)
    assert first["indexed"] >= 1 and not first["failed"], first  # the valid file, and no crash
    again = index_json(tmp_path / "home", hostile_dir)
    assert again["indexed"] == 0 and not again["failed"], again


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_named_jsonl_never_hangs_index_or_inspect(tmp_path: Path, hostile_dir: Path) -> None:
    os.mkfifo(hostile_dir / "x.jsonl")
    report = index_json(tmp_path / "home", hostile_dir)  # cli() has a timeout: a hang fails the test
    assert report["indexed"] == 1 and report["skipped"].get("not-a-regular-file") == 1, report
    shown = cli(tmp_path / "home", "inspect", str(hostile_dir), "--json", timeout=60)
    assert shown.returncode == 0, shown.stderr


def test_a_symlink_to_dev_zero_is_never_read(tmp_path: Path, hostile_dir: Path) -> None:
    (hostile_dir / "zero.jsonl").symlink_to("/dev/zero")
    # 200 MB of address space over the baseline would be blown by reading /dev/zero for long
    report = index_json(tmp_path / "home", hostile_dir)
    assert report["indexed"] == 1 and report["skipped"].get("not-a-regular-file") == 1, report


def test_a_file_over_the_size_cap_is_skipped_with_its_reason(tmp_path: Path, hostile_dir: Path) -> None:
    (hostile_dir / "22222222-2222-4222-8222-222222222222.jsonl").write_text(
        session_lines("22222222-2222-4222-8222-222222222222", "x " * 5000)
    )
    report = index_json(tmp_path / "home", hostile_dir, EPISODIC_MAX_TRANSCRIPT_BYTES="8000")
    assert report["indexed"] == 1 and report["skipped"].get("too-large") == 1, report


def test_integers_too_long_for_int_are_a_malformed_line(tmp_path: Path, hostile_dir: Path) -> None:
    path = hostile_dir / f"{VALID}.jsonl"
    path.write_text('{"type":"user","n":' + "9" * 5000 + "}\n" + path.read_text())
    report = index_json(tmp_path / "home", hostile_dir)
    assert report["indexed"] == 1 and report["malformed_lines"] == 1, report


def test_two_files_with_one_session_id_settle(tmp_path: Path, hostile_dir: Path) -> None:
    original = (hostile_dir / f"{VALID}.jsonl").read_text()
    (hostile_dir / "copy.jsonl").write_text(original.split("\n", 1)[0] + "\n")  # a shorter copy
    first = index_json(tmp_path / "home", hostile_dir)
    assert first["indexed"] == 1 and first["skipped"] == {"duplicate-session-id": 1}, first
    for _ in range(2):
        again = index_json(tmp_path / "home", hostile_dir)
        assert (again["indexed"], again["replaced"], again["unchanged"]) == (0, 0, 1), again


def test_the_home_and_index_are_owner_only(tmp_path: Path, hostile_dir: Path) -> None:
    home = tmp_path / "home"
    index_json(home, hostile_dir)
    assert stat.S_IMODE(home.stat().st_mode) == 0o700
    for name in ("index.sqlite3", "index.sqlite3-wal"):
        if (home / name).exists():
            assert stat.S_IMODE((home / name).stat().st_mode) == 0o600, name
    home.chmod(0o755)
    (home / "index.sqlite3").chmod(0o644)
    done = cli(home, "index", str(hostile_dir), "--json")
    assert done.returncode == 0 and "tightened" in done.stderr, done.stderr
    assert stat.S_IMODE(home.stat().st_mode) == 0o700
    assert stat.S_IMODE((home / "index.sqlite3").stat().st_mode) == 0o600


def test_two_simultaneous_index_runs_do_the_work_once(tmp_path: Path, hostile_dir: Path) -> None:
    for n in range(2, 6):
        sid = f"{n}{n}{n}{n}{n}{n}{n}{n}-1111-4111-8111-111111111111"
        (hostile_dir / f"{sid}.jsonl").write_text(
            session_lines(sid, f"the docker build number {n} fails with permission denied on the cache")
        )
    home = tmp_path / "home"
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("EPISODIC_")},
        "EPISODIC_HOME": str(home),
        "HOME": str(tmp_path / "user-home"),
        "EPISODIC_EMBEDDER": "hashing",
    }
    runs = [
        subprocess.Popen(
            [sys.executable, "-m", "episodic", "index", str(hostile_dir), "--json"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    reports = []
    for run in runs:
        out, err = run.communicate(timeout=180)
        assert run.returncode == 0, err
        reports.append(json.loads(out))
    assert sum(r["indexed"] for r in reports) == 5, reports
    assert sorted(r["unchanged"] for r in reports) == [0, 5], reports
