"""The viewer's world: three indexed sessions (heuristic distiller, hashing embedder, SQLite), the MCP
server over the same memory with a token, and the viewer itself, all on loopback."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from episodic.auth import LocalTokenStore
from episodic.backends import build_memory
from episodic.ingest import index_sessions
from episodic.mcp.http_server import BackgroundServer, build_endpoint
from episodic.service import Memory
from episodic.settings import Settings, load_settings
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


@pytest.fixture()
def world(episodic_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[World]:
    claude = tmp_path / "claude"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(claude))
    projects = claude / "projects"
    for session_id, prompt, closing, day in SESSIONS:
        write_session(projects, session_id, prompt, closing, day)
    settings = load_settings(embedder="hashing")
    memory = build_memory(settings)
    report = index_sessions(memory, None, settings.tenant)
    assert report.indexed == len(SESSIONS), report.as_dict()
    token = LocalTokenStore(settings.tokens_path).add(settings.tenant, scope="write")
    eval_dir = tmp_path / "eval-report"
    with (
        BackgroundServer(build_endpoint(settings, memory)) as mcp,
        BackgroundUi(
            Viewer(LocalSource(memory), settings.tenant, eval_dir=eval_dir, dream_dir=tmp_path / "dream")
        ) as ui,
    ):
        yield World(settings, memory, projects, mcp.url, token, ui)
