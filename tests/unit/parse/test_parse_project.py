"""The project of a working directory (parse/project.py): a worktree or an agent workspace is its repository."""

from __future__ import annotations

from pathlib import Path

import pytest
from episodic.parse.project import project_of


@pytest.mark.parametrize(
    ("cwd", "project"),
    [
        ("/home/dev/src/cli", "cli"),
        ("/home/dev/src/cli/.worktrees/2", "cli"),
        ("/home/dev/src/cli/.worktrees/2/cmd/entire", "cli"),
        ("/home/dev/src/cli/.claude/worktrees/fix-lint", "cli"),
        ("/home/dev/src/cli/.conductor/lisbon", "cli"),
        ("/Users/dev/conductor/workspaces/cli/lisbon", "cli"),
        ("C:\\Users\\dev\\src\\cli\\.worktrees\\1", "cli"),
        ("/home/dev/.claude", ".claude"),  # the folder itself, not a worktree under it
        ("/home/dev/src/worktrees-demo", "worktrees-demo"),
        ("", ""),
    ],
)
def test_shapes_of_folders_that_are_gone(cwd: str, project: str) -> None:
    assert project_of(cwd) == project


def test_a_git_file_names_the_main_repository(tmp_path: Path) -> None:
    worktree = tmp_path / "elsewhere" / "feature-x"
    (worktree / "src").mkdir(parents=True)
    (worktree / ".git").write_text(f"gitdir: {tmp_path}/shop/.git/worktrees/feature-x\n")
    assert project_of(str(worktree / "src")) == "shop"
    assert project_of("~/elsewhere/feature-x", folder=str(worktree)) == "shop"  # a scrubbed cwd


def test_a_submodule_is_its_own_project(tmp_path: Path) -> None:
    sub = tmp_path / "shop" / "vendor" / "lib"
    sub.mkdir(parents=True)
    (sub / ".git").write_text(f"gitdir: {tmp_path}/shop/.git/modules/lib\n")
    assert project_of(str(sub)) == "lib"


def test_a_relative_or_foreign_path_is_never_looked_up_on_disk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / ".git").write_text("gitdir: /elsewhere/other/.git/worktrees/here\n")
    monkeypatch.chdir(tmp_path)  # a path read relative to here would find that file
    assert project_of("C:\\Users\\dev\\src\\cli") == "cli"
    assert project_of("src/cli") == "cli"
