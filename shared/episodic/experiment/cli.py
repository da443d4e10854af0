"""`episodic experiment report`: does memory help on this machine's own sessions?"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import click

from episodic.cli.options import json_option

_DATE_FORMATS = ["%Y-%m-%d", "%Y-%m-%dT%H:%M", "%Y-%m-%dT%H:%M:%S"]


@click.group("experiment")
def experiment() -> None:
    """The holdout experiment: with and without memory.

    The built-in holdout experiment: sessions with and without injected memory, compared.
    """


@experiment.command("report")
@click.option(
    "--since",
    type=click.DateTime(_DATE_FORMATS),
    default=None,
    help="Only sessions first logged at or after DATE (UTC).",
)
@click.option(
    "--transcripts",
    "paths",
    multiple=True,
    type=click.Path(path_type=Path),
    help="Where to find unmeasured sessions' transcripts (default: each agent's own folders).",
)
@json_option("Print the report as JSON.")
def report_cmd(since: datetime | None, paths: tuple[Path, ...], as_json: bool) -> None:
    """Both arms side by side, with a verdict.

    Both arms side by side: counts, means, medians, an interval for each difference, a verdict.
    """
    from episodic.assembly import build_injections, build_scoped_source
    from episodic.experiment.present import report_lines
    from episodic.experiment.service import experiment_report
    from episodic.kernel.settings import load_settings

    settings = load_settings()
    report = experiment_report(
        settings,
        lambda: build_scoped_source(settings, record_outcomes=True),
        since,
        [str(p) for p in paths] or None,
        build_injections(settings),
    )
    if as_json:
        click.echo(json.dumps(report, indent=2))
        return
    for line in report_lines(report):
        click.echo(line)


def register(group: click.Group) -> None:
    group.add_command(experiment)
