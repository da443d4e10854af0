"""Adding a feature is one folder and one registration line: the skeleton in tests/fixtures/feature_skeleton
observes every indexed session, answers its MCP tool over the real registry and adds its command."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from episodic.assembly import FEATURES, build_memory
from episodic.cli import build_cli
from episodic.core.ingest import index_sessions
from episodic.embed.hashing import HashingEmbedder
from episodic.kernel.auth import Principal
from episodic.kernel.settings import load_settings
from episodic.mcp.tools import default_registry

SKELETON = Path(__file__).resolve().parents[1] / "fixtures" / "feature_skeleton"
DEMO = Path(__file__).resolve().parents[2] / "shared" / "episodic" / "demo"


@pytest.mark.usefixtures("episodic_home")
def test_a_new_feature_plugs_in_by_one_folder_and_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(SKELETON))
    from sessions_seen.feature import FEATURE

    features = (*FEATURES, FEATURE)  # the one registration line
    memory = build_memory(load_settings(), embedder=HashingEmbedder(384), features=features)
    report = index_sessions(memory, [str(DEMO)], "local")
    assert report.indexed == 6
    assert memory.part("sessions_seen") == {"local": 6}  # its observer saw every session once
    registry = default_registry(memory)
    answer = registry.call("sessions_seen", {}, Principal(tenant_id="local"))
    assert answer["structuredContent"] == {"seen": 6} and not answer["isError"]
    # a feature not registered is not there: the core has no other way in
    assert "sessions_seen" not in default_registry(build_memory(load_settings())).names()
    result = CliRunner().invoke(build_cli(features), ["sessions-seen"])
    assert result.exit_code == 0 and "sessions_seen is registered" in result.output
    assert "sessions-seen" not in CliRunner().invoke(build_cli(), ["--help"]).output
