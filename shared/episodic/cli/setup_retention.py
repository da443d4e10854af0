"""`setup claude-code --keep-transcripts-days N`: raise Claude Code's `cleanupPeriodDays`, with consent.

Claude Code deletes session files older than `cleanupPeriodDays` (30 by default). The value is merged into
the same `~/.claude/settings.json` setup writes the hook to (a timestamped backup, everything else kept);
it is only ever raised. Without the flag, `--write` asks on a terminal (default no) and never elsewhere.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from episodic.cli.setup_clients import MergeResult, load_json_object, write_with_backup
from episodic.kernel.errors import ConfigError
from episodic.sessions.agent_cleanup import CLEANUP_SETTING, DEFAULT_CLEANUP_DAYS, cleanup_days

OFFERED_DAYS = 365  # what the interactive offer proposes
MAX_DAYS = 36500


def raise_cleanup_days(config_dir: Path, days: int) -> MergeResult:
    """Set `cleanupPeriodDays` to `days` in `<config_dir>/settings.json` unless it already keeps as long."""
    if not 1 <= days <= MAX_DAYS:
        raise ConfigError(f"--keep-transcripts-days must be 1-{MAX_DAYS}, got {days}")
    path = config_dir / "settings.json"
    data = load_json_object(path)  # invalid JSON: a ConfigError, nothing changed
    if cleanup_days(config_dir) >= days:  # never lowered
        return MergeResult(path, changed=False)
    data[CLEANUP_SETTING] = days
    return MergeResult(path, changed=True, backup=write_with_backup(path, data))


def offer_keep_transcripts(
    config_dir: Path, days: int | None, write: bool, interactive: bool | None = None
) -> None:
    """Raise the period when asked (`days`), or offer it on a terminal with --write; else one hint line."""
    if days is not None and not 1 <= days <= MAX_DAYS:
        raise ConfigError(f"--keep-transcripts-days must be 1-{MAX_DAYS}, got {days}")
    current = cleanup_days(config_dir)
    if days is None:
        if current >= OFFERED_DAYS:
            return
        asked = sys.stdin.isatty() and sys.stdout.isatty() if interactive is None else interactive
        if not (write and asked):
            click.echo(
                f"# Claude Code deletes sessions after {current} days (cleanupPeriodDays"
                f"{'' if current != DEFAULT_CLEANUP_DAYS else ', its default'}); to keep them longer: "
                f"--keep-transcripts-days {OFFERED_DAYS} --write",
                err=True,
            )
            return
        question = (
            f"Claude Code deletes session transcripts after {current} days. Raise cleanupPeriodDays to "
            f"{OFFERED_DAYS} in {config_dir / 'settings.json'} (a backup is kept)?"
        )
        if not click.confirm(question, default=False):
            return
        days = OFFERED_DAYS
    if not write:
        click.echo(f"# with --write: cleanupPeriodDays {current} → {days} in {config_dir / 'settings.json'}")
        return
    result = raise_cleanup_days(config_dir, days)
    if not result.changed:
        click.echo(f"unchanged {result.path} (cleanupPeriodDays is already {current}: never lowered)")
        return
    backup = f" (backup: {result.backup})" if result.backup else ""
    click.echo(f"updated {result.path}: cleanupPeriodDays {current} → {days}{backup}")
