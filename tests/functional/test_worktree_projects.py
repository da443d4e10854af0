"""Git worktrees and agent workspaces are their repository's project, through the CLI as a user runs it:
`index` counts one repository once and says other than what, `search --project` and `history` name the
repository, not "1" and "2" (a real `git worktree` on disk, and the usual shapes of folders that are gone)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from kits.session_builder import SessionWriter
from test_dream_record_quality import run

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def _git(*args: str, cwd: Path) -> None:
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True)


def _repository_with_a_worktree(root: Path) -> tuple[Path, Path]:
    """`shop` with a real worktree at `shop/.worktrees/1` (its `.git` is a file naming shop's gitdir)."""
    repo = root / "shop"
    repo.mkdir(parents=True)
    _git("init", "-q", cwd=repo)
    _git(
        "-c",
        "user.name=t",
        "-c",
        "user.email=t@example.com",
        "commit",
        "-q",
        "--allow-empty",
        "-m",
        "x",
        cwd=repo,
    )
    _git("worktree", "add", "-q", str(repo / ".worktrees" / "1"), cwd=repo)
    return repo, repo / ".worktrees" / "1"


def _sessions(folder: Path, root: Path) -> None:
    repo, worktree = _repository_with_a_worktree(root)
    places = [
        str(repo),
        str(worktree),  # a worktree on disk, named "1"
        str(repo / ".worktrees" / "2"),  # a worktree removed since
        str(repo / ".claude" / "worktrees" / "fix-lint"),  # Claude Code's own worktrees, gone
        str(root / "conductor" / "workspaces" / "shop" / "lisbon"),  # a Conductor workspace, gone
    ]
    for n, cwd in enumerate(places):
        (
            SessionWriter(f"6d6d6d6d-3333-4333-8333-00000000005{n}", "2026-03-05", cwd=cwd)
            .prompt(f"the checkout page times out when the basket holds more than {n + 20} items, fix it")
            .reply("The basket query loads every item's reviews one by one, so a large basket times out.")
            .tool("Bash", {"command": "npm test"}, "Tests:       4 passed, 4 total\n")
            .write(folder)
        )


def test_worktrees_and_agent_workspaces_are_their_repository_s_project(tmp_path: Path) -> None:
    home = tmp_path / "home"
    _sessions(tmp_path / "sessions", tmp_path / "src")
    indexed = run(["index", str(tmp_path / "sessions"), "--distiller", "heuristic"], home)
    assert indexed.returncode == 0, indexed.stderr
    assert "1 project (5 working folders), no rule applies: indexed and injected" in indexed.stdout, (
        indexed.stdout
    )
    assert "other project" not in indexed.stdout

    found = run(
        ["search", "checkout page times out with a large basket", "--project", "shop", "--json"], home
    )
    assert found.returncode == 0, found.stderr
    assert found.stdout.count('"project": "shop"') == 3, found.stdout  # the top 3 of five, all shop's
    for name in ("1", "2", "fix-lint", "lisbon"):
        alone = run(["search", "checkout page times out", "--project", name, "--json"], home)
        assert '"project"' not in alone.stdout, alone.stdout

    timeline = run(["history", "timeline", "--project", "shop", "--json"], home)
    assert timeline.returncode == 0, timeline.stderr
    assert timeline.stdout.count('"session_id": "6d6d6d6d-3333') == 5, timeline.stdout
    assert '"project": "1"' not in timeline.stdout and '"project": "lisbon"' not in timeline.stdout
