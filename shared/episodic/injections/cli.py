"""`episodic injections`: what memory gave your sessions and what they did with it."""

from __future__ import annotations

import json

import click

from episodic.cli.options import json_option, tenant_option
from episodic.kernel.settings import Settings


@click.command("injections")
@click.option(
    "--days", type=click.IntRange(1, 3650), default=30, show_default=True, help="The period, in days."
)
@tenant_option("Whose records")
@json_option("Print the summary as JSON.")
def injections_cmd(days: int, tenant: str | None, as_json: bool) -> None:
    """Cards and pointers given to sessions, and whether each was used."""
    from episodic.assembly import build_injections
    from episodic.injections.summary import CHARS_PER_TOKEN, tenant_summary
    from episodic.kernel.settings import load_settings

    settings = load_settings()
    store = build_injections(settings)
    if store is None:
        raise click.ClickException(
            "injection records are off (injections_enabled = false, or no table on AWS)"
        )
    summary = tenant_summary(store, tenant or settings.tenant, days)
    if as_json:
        click.echo(json.dumps(summary.model_dump(mode="json"), indent=2))
        return
    click.echo(f"injections: {summary.line}")
    if not summary.records:
        return
    click.echo("  by tier: " + ", ".join(f"{k} {v}" for k, v in sorted(summary.by_tier.items())))
    click.echo("  by use: " + ", ".join(f"{k} {v}" for k, v in summary.by_use.items()))
    rules = ", ".join(f"{k} {v:.0%}" for k, v in summary.share_by_rule.items() if v is not None)
    click.echo(f"  each rule, of those read: {rules or 'none read yet'}")
    click.echo("  given most (card, given, used of read):")
    for row in summary.top_cards:
        rate = "-" if row.use_rate is None else f"{row.use_rate:.0%}"
        click.echo(f"    {row.card_id[:12]}  {row.given}  {row.used}/{row.read} ({rate})")
    click.echo("  chars a day (≈ tokens):")
    for day, chars in summary.chars_per_day.items():
        click.echo(f"    {day}  {chars:,} (≈ {chars // CHARS_PER_TOKEN:,})")


def summary_line(settings: Settings) -> str:
    """The configured tenant's line for `stats` and `doctor` ("off" when nothing is recorded)."""
    from episodic.assembly import build_injections
    from episodic.injections.summary import tenant_summary

    store = build_injections(settings)
    if store is None:
        return "off (injections_enabled = false, or no table on AWS)"
    return tenant_summary(store, settings.tenant).line


def register(group: click.Group) -> None:
    group.add_command(injections_cmd)
