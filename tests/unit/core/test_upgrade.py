"""`episodic index --upgrade`: re-distils heuristic cards with the configured LLM distiller (a stand-in
`claude` with recorded output shapes), newest first, within the cap; a failure keeps the old card."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from episodic.distill.heuristic import HeuristicDistiller
from episodic.store.sqlite import SQLiteStore
from kits import warm_cli
from unit.distill.test_claude_code_distiller import SESSIONS, calls, fake_claude  # noqa: F401  (the fixture)

HEURISTIC_ID = HeuristicDistiller().info.id


def _episodic(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    full = {
        **os.environ,
        "EPISODIC_HOME": str(tmp_path / "home"),
        "EPISODIC_EMBEDDER": "hashing",
        "HOME": str(tmp_path / "user-home"),
        **env,
    }
    return warm_cli.run(
        [sys.executable, "-m", "episodic", *args], env=full, capture_output=True, text=True, timeout=300
    )


def _by_distiller(tmp_path: Path) -> dict[str, int]:
    done = _episodic(tmp_path, "stats", "--json")
    return dict(json.loads(done.stdout)["by_distiller"])


def test_upgrade_respects_its_cap_newest_first_and_keeps_cards_on_failure(
    tmp_path: Path,
    fake_claude: Path,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    first = _episodic(tmp_path, "index", "--json", str(SESSIONS))
    indexed = json.loads(first.stdout)["indexed"]
    assert indexed >= 2, first.stderr

    refused = _episodic(tmp_path, "index", "--upgrade", str(SESSIONS))
    assert refused.returncode == 1 and "--distiller claude-code" in refused.stderr

    monkeypatch.setenv("FAKE_CLAUDE_SCENARIO", "rate-limited")
    failed = _episodic(tmp_path, "index", "--upgrade", "--distiller", "claude-code", "--json", str(SESSIONS))
    assert failed.returncode == 1, failed.stderr  # every distil failed: a script must see it
    assert len(json.loads(failed.stdout)["failed"]) == indexed  # default cap 50 covers them all
    assert set(_by_distiller(tmp_path)) == {HEURISTIC_ID}  # the heuristic cards stay in place

    monkeypatch.setenv("FAKE_CLAUDE_SCENARIO", "valid")
    before = len(calls(fake_claude))
    one = _episodic(
        tmp_path, "index", "--upgrade", "--limit", "1", "--distiller", "claude-code", "--json", str(SESSIONS)
    )
    assert one.returncode == 0, one.stderr
    assert json.loads(one.stdout)["replaced"] == 1 and len(calls(fake_claude)) == before + 1
    assert f"upgrading 1 of {indexed} cards" in one.stderr
    counts = _by_distiller(tmp_path)
    assert counts.pop(HEURISTIC_ID) == indexed - 1 and sum(counts.values()) == 1

    with SQLiteStore(tmp_path / "home" / "index.sqlite3") as store:
        records = list(store.iter_records("local"))
    newest = max(records, key=lambda r: r.ended_at or r.started_at)  # type: ignore[arg-type, return-value]
    assert newest.distiller.kind == "claude-code" and len(records) == indexed
