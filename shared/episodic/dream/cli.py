"""`episodic dream`: parse options, call `dream.service`, print each week's phase counts (or the page)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from episodic.cli.options import json_option, tenant_option
from episodic.kernel.settings import load_settings


@click.command("dream")
@click.option("--week", default=None, help="One ISO week, e.g. 2026-W30.")
@click.option("--since", default=None, help="First day (YYYY-MM-DD) of a range of weeks (with --until).")
@click.option("--until", default=None, help="Last day (YYYY-MM-DD) of the range.")
@click.option("--force", is_flag=True, help="Replace the record of a week that already has one.")
@click.option("--explain", is_flag=True, help="Show every candidate thread's signals, inputs and gates.")
@click.option("--html", "as_html", is_flag=True, help="Render the range's records as one static page.")
@click.option("--out", type=click.Path(dir_okay=False), default=None, help="Where --html writes the page.")
@click.option("--keep-survey", is_flag=True, help="Keep each week's survey beside its record.")
@click.option("--offline", is_flag=True, help="Write offline even when an LLM distiller is configured.")
@click.option("--transcripts", multiple=True, type=click.Path(exists=True), help="Where the transcripts are.")
@tenant_option("Whose sessions")
@json_option("Machine-readable phase counts.")
def dream_cmd(
    week: str | None,
    since: str | None,
    until: str | None,
    force: bool,
    explain: bool,
    as_html: bool,
    out: str | None,
    keep_survey: bool,
    offline: bool,
    transcripts: tuple[str, ...],
    tenant: str | None,
    as_json: bool,
) -> None:
    """A dated record of each week's sessions.

    Dream: one dated record per ISO week of what recurred, was decided and is unfinished.

    By default the weeks after the last record up to the last complete week. The index and the
    transcripts are only read; records go to EPISODIC_HOME/dreams/<tenant>/ (the bucket on AWS).
    """
    from episodic.assembly.dream import dream_adapters
    from episodic.dream.service import DreamRequest, dream, write_dashboard

    settings = load_settings(tenant=tenant)
    request = DreamRequest(
        week=week,
        since=since,
        until=until,
        force=force,
        keep_survey=keep_survey,
        offline=offline,
        transcripts=list(transcripts) or None,
    )
    adapters = dream_adapters(settings, transcripts=request.transcripts)
    if as_html:
        path, count = write_dashboard(settings, request, Path(out) if out else None, adapters.archive)
        click.echo(f"dashboard of {count} record(s): {path}")
        return
    run = dream(settings, request, adapters)
    if as_json:
        click.echo(json.dumps([w.__dict__ for w in run.weeks], indent=2))
        return
    if not run.weeks:
        click.echo("nothing to dream: no complete week since the last record")
        if keep_survey:
            click.echo(
                "no survey kept: --keep-survey keeps the survey of the weeks it reads; name one with --week"
            )
    for result in run.weeks:
        if result.status == "kept":
            click.echo(f"{result.week}: kept its record (use --force to replace it)")
        elif result.status != "empty":
            click.echo(f"{result.week}: {result.status} ({result.record_bytes:,} bytes)")
            for phase, counts in result.phases.items():
                click.echo(f"  {phase}: " + ", ".join(f"{k} {v:,}" for k, v in counts.items()))
        for where in result.written:
            click.echo(f"  -> {where}")
        if explain and result.explain:
            click.echo(result.explain)
    for first, last, count in empty_runs([w.week for w in run.weeks if w.status == "empty"]):
        span = first if count == 1 else f"{first} to {last} ({count} weeks)"
        click.echo(f"{span}: no sessions, no record")


def register(group: click.Group) -> None:
    group.add_command(dream_cmd)


def empty_runs(weeks: list[str]) -> list[tuple[str, str, int]]:
    """Consecutive empty weeks as (first, last, count): a quiet stretch is one line, not one per week."""
    from episodic.dream.weeks import IsoWeek

    runs: list[tuple[str, str, int]] = []
    for name in weeks:
        if runs and IsoWeek.parse(runs[-1][1]).next() == IsoWeek.parse(name):
            runs[-1] = (runs[-1][0], name, runs[-1][2] + 1)
        else:
            runs.append((name, name, 1))
    return runs
