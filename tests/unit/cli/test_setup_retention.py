"""`setup claude-code`'s offer to raise Claude Code's `cleanupPeriodDays`: asked on a terminal, no by default,
raised only with a yes (kept with a backup), never lowered, never asked when not a terminal."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from episodic.cli.setup_retention import OFFERED_DAYS, offer_keep_transcripts, raise_cleanup_days
from episodic.kernel.errors import ConfigError


def _offer(config_dir: Path, answer: str, interactive: bool) -> str:
    @click.command()
    def offer() -> None:
        offer_keep_transcripts(config_dir, None, True, interactive=interactive)

    done = CliRunner().invoke(offer, input=answer)
    assert done.exit_code == 0, done.output
    return done.output


def _days(config_dir: Path) -> object:
    return json.loads((config_dir / "settings.json").read_text()).get("cleanupPeriodDays")


@pytest.fixture()
def claude_dir(tmp_path: Path) -> Path:
    folder = tmp_path / ".claude"
    folder.mkdir()
    (folder / "settings.json").write_text(json.dumps({"model": "opus"}))
    return folder


def test_the_offer_defaults_to_no(claude_dir: Path) -> None:
    out = _offer(claude_dir, "\n", interactive=True)
    assert "Raise cleanupPeriodDays" in out and "[y/N]" in out
    assert _days(claude_dir) is None and not list(claude_dir.glob("settings.json.bak-*"))


def test_a_yes_raises_it_with_a_backup_keeping_the_other_settings(claude_dir: Path) -> None:
    _offer(claude_dir, "y\n", interactive=True)
    assert _days(claude_dir) == OFFERED_DAYS
    assert json.loads((claude_dir / "settings.json").read_text())["model"] == "opus"
    (backup,) = claude_dir.glob("settings.json.bak-*")
    assert "cleanupPeriodDays" not in json.loads(backup.read_text())


def test_not_a_terminal_is_never_asked(claude_dir: Path) -> None:
    out = _offer(claude_dir, "y\n", interactive=False)
    assert "--keep-transcripts-days" in out and "[y/N]" not in out
    assert _days(claude_dir) is None


def test_it_is_never_lowered_and_bad_json_changes_nothing(claude_dir: Path) -> None:
    (claude_dir / "settings.json").write_text(json.dumps({"cleanupPeriodDays": 400}))
    assert not raise_cleanup_days(claude_dir, 90).changed and _days(claude_dir) == 400
    (claude_dir / "settings.json").write_text("{not json")
    with pytest.raises(ConfigError, match="not valid JSON"):
        raise_cleanup_days(claude_dir, 500)
    assert (claude_dir / "settings.json").read_text() == "{not json"
