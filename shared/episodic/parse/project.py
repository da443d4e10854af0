"""The project a session belongs to, from its working directory: a git worktree or an agent's workspace is
its repository's project ("cli" for `cli/.worktrees/2`, not "2"), so search, history, the viewer's filter and
the index report count one repository once.

Where the folder still exists, a `.git` *file* says it (git writes `gitdir: <repo>/.git/worktrees/<name>`
into a worktree); where it is gone, the usual places agents and tools put worktrees tell it (rules as data).
"""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath

from episodic.parse.text import last_path_component

# (the folders a worktree sits under, where its repository's name is: the folder just before them or after)
#   cli/.worktrees/2, cli/.claude/worktrees/fix-lint, cli/.conductor/lisbon: the folder before them
#   ~/conductor/workspaces/cli/lisbon (the Conductor app): the folder after them
WORKTREE_SHAPES: tuple[tuple[tuple[str, ...], str], ...] = (
    ((".claude", "worktrees"), "before"),
    ((".worktrees",), "before"),
    ((".conductor",), "before"),
    (("conductor", "workspaces"), "after"),
)
_GITDIR_RE = re.compile(r"^gitdir:\s*(.+?)\s*$", re.M)
_PARENTS_SEARCHED = 12  # a session starts in a subfolder of its repository at most this deep
_GIT_FILE_BYTES = 4096


def project_of(cwd: str, folder: str | None = None) -> str:
    """The project's name: the main repository of a worktree, else the working directory's last folder.
    `folder` is where to look for a `.git` file when `cwd` is a scrubbed copy of the path (default `cwd`)."""
    if not cwd:
        return ""
    return _from_git_file(folder or cwd) or _from_shape(cwd) or last_path_component(cwd)


def _from_git_file(cwd: str) -> str:
    """The main repository's folder name, read from a worktree's `.git` file (nothing for a plain clone,
    a folder that is gone or one this process may not read)."""
    try:
        folder = Path(cwd)
        if (
            not folder.is_absolute()
        ):  # a Windows path read on POSIX, or a relative one: never this process's cwd
            return ""
        for candidate in [folder, *folder.parents][:_PARENTS_SEARCHED]:
            marker = candidate / ".git"
            if marker.is_dir():
                return ""  # a repository's own checkout: its folder is the project
            if marker.is_file():
                found = _GITDIR_RE.search(
                    marker.read_text(encoding="utf-8", errors="replace")[:_GIT_FILE_BYTES]
                )
                return _repository_of_gitdir(found.group(1)) if found else ""
    except (OSError, ValueError):  # unreadable, or a path this system cannot hold
        return ""
    return ""


def _repository_of_gitdir(gitdir: str) -> str:
    """`/src/cli/.git/worktrees/2` -> "cli"; a submodule's `.git/modules/x` is its own project."""
    parts = PurePosixPath(gitdir.replace("\\", "/")).parts
    if ".git" in parts and "worktrees" in parts[parts.index(".git") :]:
        at = parts.index(".git")
        return parts[at - 1] if at > 0 else ""
    return ""


def _from_shape(cwd: str) -> str:
    parts = [p for p in PurePosixPath(cwd.replace("\\", "/")).parts if p not in ("/", "")]
    for shape, where in WORKTREE_SHAPES:
        for at in range(len(parts) - len(shape)):  # a worktree's own folder follows the shape
            if tuple(parts[at : at + len(shape)]) == shape:
                index = at - 1 if where == "before" else at + len(shape)
                if index >= 0:
                    return parts[index]
    return ""
