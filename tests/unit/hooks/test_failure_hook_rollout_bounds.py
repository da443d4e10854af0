"""Bounded reads (issue 52 item 3): the failure hook, run as Codex runs it (a subprocess, after every shell
command), reads at most a tail of the rollout its payload names, and only of a regular file: a FIFO, a
character device, or a link to either is refused at once (checked after opening), never read to its end nor
waited on for the whole budget. The process runs under an address-space limit, so an unbounded read fails
it (MemoryError) instead of filling the machine."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest
from test_failure_hook_agents import codex_payload, codex_rollout

ADDRESS_SPACE = 1 << 30  # bytes: the hook needs a few tens of MB; reading /dev/zero to its end needs all
BUDGET = (
    "8"  # seconds: which path the hook takes, not how fast (a refusal logs at once, a wait logs a timeout)
)


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))


def run_codex_hook(home: Path, transcript: Path) -> tuple[int, str, str]:
    """(exit code, stdout, the hook's log line) of `python -m episodic.hooks.failure` for a failed command."""
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(home.parent),
        "EPISODIC_HOME": str(home),
        "EPISODIC_HOOK_AUTOSTART": "false",
        "EPISODIC_HOOK_BUDGET_SECONDS": BUDGET,
        "EPISODIC_TOKEN": "epi_x",
        "EPISODIC_URL": "http://127.0.0.1:9/mcp",  # never reached: the exit code is looked up first
        **({"PYTHONPATH": os.environ["PYTHONPATH"]} if "PYTHONPATH" in os.environ else {}),
    }
    done = subprocess.run(
        [sys.executable, "-m", "episodic.hooks.failure"],
        input=json.dumps(codex_payload(transcript)),
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        preexec_fn=_limited,
    )
    log = home / "logs" / "hook.log"
    return done.returncode, done.stdout, log.read_text().splitlines()[-1] if log.exists() else ""


def _fifo(folder: Path) -> Path:
    os.mkfifo(folder / "rollout-fifo.jsonl")
    return folder / "rollout-fifo.jsonl"


def _link_to_fifo(folder: Path) -> Path:
    (folder / "rollout-link.jsonl").symlink_to(_fifo(folder))
    return folder / "rollout-link.jsonl"


def _zero(folder: Path) -> Path:
    (folder / "rollout-zero.jsonl").symlink_to("/dev/zero")
    return folder / "rollout-zero.jsonl"


@pytest.mark.parametrize(
    "transcript", [_fifo, _link_to_fifo, _zero], ids=["fifo", "link-to-fifo", "dev-zero"]
)
def test_a_rollout_that_is_no_regular_file_is_refused_at_once(tmp_path: Path, transcript) -> None:  # type: ignore[no-untyped-def]
    code, out, log = run_codex_hook(tmp_path / "home", transcript(tmp_path))
    assert (code, out) == (0, "")
    assert "post-tool-failure skip: exit code not found in the session's rollout" in log, log


def test_only_the_tail_of_a_huge_rollout_is_read(tmp_path: Path) -> None:
    """A 2 GB sparse rollout whose record is at its end: found, in a process limited to 1 GB."""
    rollout = codex_rollout(tmp_path / "tail.jsonl", "call_1", 0)
    record = rollout.read_bytes()
    with rollout.open("r+b") as handle:
        handle.truncate(2 << 30)  # a hole: costs no disk
        handle.seek(0, os.SEEK_END)
        handle.write(b"\n" + record)
    code, out, log = run_codex_hook(tmp_path / "home", rollout)
    assert (code, out) == (0, "")
    assert "ok: the command succeeded (exit code 0)" in log, log
