"""The viewer's world: three indexed sessions (heuristic distiller, hashing embedder, SQLite), the MCP
server over the same memory with a token, and the viewer itself, all on loopback."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import pytest
from episodic.assembly import build_memory
from episodic.core.ingest import index_sessions
from episodic.kernel.auth import LocalTokenStore
from episodic.kernel.memory import Memory
from episodic.kernel.settings import Settings, load_settings
from episodic.mcp.http_server import BackgroundServer, build_endpoint
from episodic.ui.data import LocalSource
from episodic.ui.server import BackgroundUi
from episodic.ui.views import Viewer

from ui.browser import chromium  # noqa: F401  (the fixture)
from ui.sessions import SESSIONS, write_session


@dataclass
class World:
    settings: Settings
    memory: Memory
    projects: Path
    mcp_url: str
    token: str
    ui: BackgroundUi
    eval_dir: Path  # the folders the viewer reads its eval report and dream records from
    dream_dir: Path


@pytest.fixture()
def world(episodic_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[World]:
    # laid out as on a user's machine (~/.episodic, ~/.claude), as the docs' screenshots show it
    user_home = Path(os.environ["HOME"])
    monkeypatch.setenv("EPISODIC_HOME", str(user_home / ".episodic"))
    claude = user_home / ".claude"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(claude))
    projects = claude / "projects"
    for session_id, prompt, closing, day in SESSIONS:
        write_session(projects, session_id, prompt, closing, day)
    settings = load_settings(embedder="hashing")
    memory = build_memory(settings)
    report = index_sessions(memory, None, settings.tenant)
    assert report.indexed == len(SESSIONS), report.as_dict()
    token = LocalTokenStore(settings.tokens_path).add(settings.tenant, scope="write")
    eval_dir = settings.home / "eval-report"  # where `episodic ui` looks by default
    dream_dir = settings.home / "dreams" / settings.tenant
    with (
        BackgroundServer(build_endpoint(settings, memory)) as mcp,
        BackgroundUi(
            Viewer(LocalSource(memory), settings.tenant, eval_dir=eval_dir, dream_dir=dream_dir)
        ) as ui,
    ):
        yield World(settings, memory, projects, mcp.url, token, ui, eval_dir, dream_dir)


RUN_WITH_CTRL_C = (
    "import signal; signal.signal(signal.SIGINT, signal.default_int_handler); "
    "from episodic.cli import main; main()"
)


@contextmanager
def episodic_ui(
    *args: str, env: dict[str, str] | None = None, stdin: IO[str] | None = None
) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """`episodic ui ARGS` in a subprocess, as a user runs it; yields it and the line it printed first."""
    # Ctrl-C stops it, as in a terminal, even when these tests run as a background job (whose children
    # inherit SIGINT ignored: the SIGINT below would go unheard and each test wait for the kill)
    command = [sys.executable, "-c", RUN_WITH_CTRL_C, "ui", *args]
    full_env = {**os.environ, "EPISODIC_EMBEDDER": "hashing", **(env or {})}
    process = subprocess.Popen(
        command, env=full_env, stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert re.search(r"http://[0-9a-f]{32}\.localhost:\d+/", line), line + (
            process.stderr.read() if process.stderr else ""
        )
        yield process, line
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
