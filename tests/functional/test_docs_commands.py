"""The docs' script commands work as typed in a fresh clone: `python scripts/x.py` ran whatever python was
first on PATH, outside the venv the README's own command builds (`ModuleNotFoundError: episodic`). Every
command is spelled `.venv/bin/python scripts/x.py`, each of the README's starts as typed with no venv on
PATH, and a benchmark handed a folder that is not there says so instead of reporting a perfect score."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
VENV_PYTHON = ".venv/bin/python"
# a script run by a bare interpreter (`python scripts/x.py`, `python3 …`) or on its own with arguments
BARE_COMMAND = re.compile(r"(?<![\w/.])(?:python3?\s+scripts/[\w-]+\.py|`scripts/[\w-]+\.py\s)")
README_COMMAND = re.compile(r"\.venv/bin/python (scripts/[\w-]+\.py)")


def without_venv_env() -> dict[str, str]:
    """A shell as in a fresh terminal: the venv's bin folder not on PATH, no VIRTUAL_ENV."""
    venv_bin = str(Path(sys.executable).parent)
    path = os.pathsep.join(p for p in os.environ.get("PATH", "").split(os.pathsep) if p and p != venv_bin)
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    return {**env, "PATH": path}


def test_every_script_command_in_the_docs_runs_the_venvs_python() -> None:
    bare = [
        f"{doc.relative_to(REPO)}:{n}: {match.group(0).strip()}"
        for doc in DOCS
        for n, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), 1)
        for match in BARE_COMMAND.finditer(line)
    ]
    assert bare == [], bare
    named = {s for doc in DOCS for s in README_COMMAND.findall(doc.read_text(encoding="utf-8"))}
    assert named and all((REPO / script).is_file() for script in named), sorted(named)


def test_each_readme_script_command_starts_as_typed_outside_the_venv() -> None:
    if not (REPO / VENV_PYTHON).is_file():
        pytest.skip(f"no {VENV_PYTHON} in this checkout (the README's ./scripts/install makes it)")
    scripts = sorted(set(README_COMMAND.findall((REPO / "README.md").read_text(encoding="utf-8"))))
    assert "scripts/bench_hook_agents.py" in scripts and "scripts/bench_failures.py" in scripts, scripts
    for script in scripts:
        done = subprocess.run(
            f"{VENV_PYTHON} {script} --help",  # the README's words, its arguments swapped for --help
            shell=True,
            cwd=REPO,
            env=without_venv_env(),
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0 and "usage:" in done.stdout, (script, done.stdout, done.stderr[-2000:])


def test_bench_failures_on_a_missing_folder_is_an_error(tmp_path: Path) -> None:
    for folder, said in ((tmp_path / "not-there", "no such folder"), (tmp_path, "no sessions found")):
        done = subprocess.run(
            [sys.executable, "scripts/bench_failures.py", str(folder)],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode != 0, done.stdout
        assert said in done.stderr and "precision" not in done.stdout, (done.stdout, done.stderr)
