"""The stand-in `claude` (tests/fixtures/fake_claude) as a launcher on a PATH folder, for any test."""

from __future__ import annotations

import contextlib
import shutil
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

FAKE = Path(__file__).resolve().parents[1] / "fixtures" / "fake_claude" / "fake_claude.py"


def install_fake(bin_dir: Path) -> Path:
    """A `claude` launcher that runs the fake with this test's Python."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    launcher = bin_dir / "claude"
    launcher.write_text(
        f"#!{sys.executable}\nimport runpy, sys\nsys.argv[0] = 'claude'\n"
        f"runpy.run_path({str(FAKE)!r}, run_name='__main__')\n",
        encoding="utf-8",
    )
    launcher.chmod(0o755)
    return launcher


AGENT_FAKE = Path(__file__).resolve().parents[1] / "fixtures" / "agent_cli" / "fake_agent.py"


def install_fake_agent(bin_dir: Path, cli: str) -> Path:
    """A `codex` or `gemini` launcher that runs the fake (tests/fixtures/agent_cli) with this test's Python."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    launcher = bin_dir / cli
    launcher.write_text(
        f"#!{sys.executable}\nimport runpy\n"  # run_path sets argv[0] to the file: the name goes as a global
        f"runpy.run_path({str(AGENT_FAKE)!r}, init_globals={{'CLI_NAME': {cli!r}}}, run_name='__main__')\n",
        encoding="utf-8",
    )
    launcher.chmod(0o755)
    return launcher


@contextlib.contextmanager
def private_folder(prefix: str) -> Iterator[Path]:
    """A folder under build/ no one else may write, removed after the test."""
    path = Path(__file__).resolve().parents[2] / "build" / f"{prefix}-{uuid.uuid4().hex[:8]}"
    path.mkdir(parents=True, mode=0o700)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
