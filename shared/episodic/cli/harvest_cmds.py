"""CLI faces of harvesting: `harvest`, `backfill`, `cron install|remove|status`, `hook session-end`."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

import click

from episodic.cli.options import json_option, tenant_option
from episodic.kernel.errors import EpisodicError

_DATE_FORMATS = ["%Y-%m-%d", "%Y-%m-%dT%H:%M", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M"]


def _echo_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, default=str, ensure_ascii=False))


@contextmanager
def _progress(total: int, label: str, enabled: bool) -> Iterator[Callable[[Any], None]]:
    """A rich progress bar on stderr (hidden with --json)."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
    with Progress(*columns, console=Console(stderr=True), transient=True, disable=not enabled) as bar:
        task = bar.add_task(label, total=total)
        yield lambda source: bar.update(
            task, advance=1, description=f"{label} {Path(source.main_path).stem[:20]}"
        )


def _print_summary(report: Any) -> None:
    data = report.as_dict()
    where = f"s3://{data['bucket']}/…/{data['tenant']}/"
    verb = "would upload" if data["dry_run"] else "uploaded"
    click.echo(
        f"harvest {data['finished_at'] or ''} → {where}{' (dry run: nothing uploaded)' if data['dry_run'] else ''}"
    )
    click.echo(
        f"found {data['found']} sessions, selected {data['selected']}: {verb} {data['uploaded']} "
        f"({data['bytes_uploaded'] / 1e6:.2f} MB), unchanged {data['unchanged']}, "
        f"skipped {sum(data['skipped'].values())}, failed {len(data['failed'])}"
    )
    for reason, count in sorted(data["skipped"].items()):
        click.echo(f"  skipped {count}: {reason}")
    for failure in data["failed"]:
        click.echo(f"  failed {failure['session']}: {failure['reason']}")
    if data["lines_dropped"]:
        click.echo(f"  unparseable lines dropped (never uploaded): {data['lines_dropped']}")
    if data["secrets_redacted"]:
        kinds = ", ".join(f"{k} {v}" for k, v in sorted(data["secrets_redacted"].items()))
        click.echo(f"  secrets redacted before upload: {kinds}")
    if data["aborted"]:
        click.echo(f"  stopped early: {data['aborted']}")


def _settings() -> Any:
    from episodic.kernel.settings import load_settings

    return load_settings()


def _client(settings: Any, profile: str | None) -> Any:
    from episodic.harvest.runner import build_s3_client

    return build_s3_client(settings, profile)


# the options harvest, backfill and cron install share
bucket_option = click.option(
    "--bucket", default=None, help="Transcripts bucket (default: settings, else <home>/aws-outputs.json)."
)
profile_option = click.option(
    "--profile", default=None, help="AWS profile (default: the standard credential chain)."
)


@click.command("harvest")
@click.argument("paths", nargs=-1, type=click.Path())
@bucket_option
@tenant_option("Tenant prefix for the objects")
@click.option(
    "--since", type=click.DateTime(_DATE_FORMATS), default=None, help="Only sessions active since DATE."
)
@click.option("--limit", type=click.IntRange(min=1), default=None, help="Only the N most recent sessions.")
@click.option("--dry-run", is_flag=True, help="Scrub and report what would be uploaded; no AWS call at all.")
@profile_option
@click.option("--from-spool", is_flag=True, help="Upload exactly the sessions queued by the SessionEnd hook.")
@json_option("Print the summary as JSON.")
def harvest_cmd(
    paths: tuple[str, ...],
    bucket: str | None,
    tenant: str | None,
    since: datetime | None,
    limit: int | None,
    dry_run: bool,
    profile: str | None,
    from_spool: bool,
    as_json: bool,
) -> None:
    """Upload new sessions, scrubbed, to the bucket.

    Upload new and grown Claude Code sessions, scrubbed, to the transcripts bucket.
    """
    from episodic.harvest.runner import drain_spool, make_harvester, prepare_harvest, record_last_run
    from episodic.harvest.state import record_aborted_run

    settings = _settings()
    try:
        s3 = None if dry_run else _client(settings, profile)
        harvester = make_harvester(settings, s3_client=s3, bucket=bucket, tenant=tenant, dry_run=dry_run)
    except EpisodicError as exc:  # no profile, no bucket: leave the mark `cron status` and doctor show
        if not dry_run:
            record_aborted_run(settings.log_dir, "harvest", str(exc))
        raise
    if from_spool:
        report = drain_spool(settings, harvester)
        mode = "spool"
    else:
        job = prepare_harvest(settings, harvester, paths=paths or None, since=since, limit=limit)
        with _progress(len(job.sessions), "harvesting", enabled=not as_json) as advance:
            report = job.run(advance)
        mode = "harvest"
    if not dry_run:
        record_last_run(settings, report, mode)
    if as_json:
        _echo_json(report.as_dict())
    else:
        _print_summary(report)
    if report.failed or report.aborted:
        raise SystemExit(1)


@click.command("backfill")
@click.option(
    "--limit", type=click.IntRange(min=1), required=True, help="How many of the most recent sessions."
)
@click.option("--yes", is_flag=True, help="Do not ask for confirmation of the estimated cost.")
@bucket_option
@tenant_option()
@profile_option
@click.option(
    "--timeout",
    "timeout_seconds",
    type=float,
    default=900.0,
    show_default=True,
    help="Seconds to wait for cards.",
)
@click.option("--poll-interval", type=float, default=15.0, show_default=True, help="Seconds between checks.")
@json_option()
def backfill_cmd(
    limit: int,
    yes: bool,
    bucket: str | None,
    tenant: str | None,
    profile: str | None,
    timeout_seconds: float,
    poll_interval: float,
    as_json: bool,
) -> None:
    """Harvest the N most recent sessions, then index them.

    Estimate, confirm, harvest the N most recent sessions, then wait until their cards are indexed.
    """
    from episodic.harvest.backfill import estimate_backfill, expected_cards, wait_for_cards
    from episodic.harvest.runner import make_harvester, prepare_harvest, record_last_run

    settings = _settings()
    s3 = _client(settings, profile)
    harvester = make_harvester(settings, s3_client=s3, bucket=bucket, tenant=tenant)
    job = prepare_harvest(settings, harvester, limit=limit)
    with _progress(len(job.sessions), "inspecting", enabled=not as_json) as advance:
        estimate = estimate_backfill(
            harvester.source,
            job.sessions,
            token_budget=settings.survey_token_budget,
            model_id=settings.bedrock_model_id,
            progress=advance,
        )
    data = estimate.as_dict()
    cost: dict[str, Any] = estimate.estimate()
    usd = cost["distill_usd"]
    price = (
        f"≈ ${usd + cost['embed_usd']:.2f}"
        if usd is not None
        else f"(no price known for {settings.bedrock_model_id})"
    )
    if not as_json:
        click.echo(
            f"backfill: {len(job.sessions)} most recent sessions, {data['episodes']} episodes, "
            f"~{cost['input_tokens'] / 1e6:.2f} MTok in / {cost['output_tokens'] / 1e6:.2f} MTok out "
            f"with {settings.bedrock_model_id} {price}"
        )
    if not yes:
        if not sys.stdin.isatty():
            raise click.ClickException("not a terminal: re-run with --yes to accept the estimated cost")
        click.confirm("Upload them and distill on Bedrock?", abort=True)
    with _progress(len(job.sessions), "harvesting", enabled=not as_json) as advance:
        report = job.run(advance)
    record_last_run(settings, report, "backfill")
    wait = wait_for_cards(
        s3,
        harvester.bucket,
        harvester.tenant,
        expected_cards(report),
        cards_prefix=settings.cards_prefix,
        failures_prefix=settings.failures_prefix,
        timeout_seconds=timeout_seconds,
        poll_seconds=poll_interval,
    )
    if as_json:
        _echo_json({"estimate": data, "harvest": report.as_dict(), "cards": wait.as_dict()})
    else:
        _print_summary(report)
        click.echo(f"cards indexed: {len(wait.indexed)} (waited {wait.waited_seconds:.0f} s)")
        for session, reason in wait.failed:
            click.echo(f"  failed {session}: {reason}")
        for session in wait.pending:
            click.echo(f"  {session}: not indexed within the timeout ({timeout_seconds:.0f} s)")
    if report.failed or report.aborted or wait.failed or wait.pending:
        raise SystemExit(1)


@click.group("cron")
def cron_group() -> None:
    """A nightly `episodic harvest` (cron, launchd, systemd).

    A nightly `episodic harvest` (crontab on Linux, launchd on macOS, systemd user timer on request).
    """


NO_SCHEDULER = (
    "no scheduler on this machine (no systemd user manager, launchd or crontab): nothing installed; "
    "run `episodic harvest` from your own scheduler at least weekly"
)


def _scheduler(systemd: bool, settings: Any) -> Any:
    """The scheduler for this machine, or None when it has none (reported, not an error)."""
    from episodic.harvest import cron

    home = Path(settings.user_home) if settings.user_home else Path.home()
    kind = cron.scheduler_kind(sys.platform, systemd)
    if kind is None:
        return None
    uid = os.getuid() if hasattr(os, "getuid") else 0
    return cron.Scheduler(kind, user_home=home, runner=cron.subprocess_runner, uid=uid)


@cron_group.command("install")
@click.option("--at", "at_time", default="03:00", show_default=True, help="Local time HH:MM.")
@click.option("--systemd", is_flag=True, help="Use a systemd user timer instead of crontab.")
@bucket_option
@tenant_option()
@profile_option
def cron_install(
    at_time: str, systemd: bool, bucket: str | None, tenant: str | None, profile: str | None
) -> None:
    """Install (or replace) the nightly harvest."""
    from episodic.harvest import cron
    from episodic.harvest.state import resolve_bucket

    settings = _settings()
    schedule = cron.Schedule.parse(at_time)
    env = {"CLAUDE_CONFIG_DIR": settings.claude_config_dir} if settings.claude_config_dir else {}
    if settings.aws_region:
        env["EPISODIC_AWS_REGION"] = settings.aws_region
    job = cron.harvest_job(
        settings.home,
        bucket=resolve_bucket(bucket, settings.transcripts_bucket, settings.home),
        tenant=tenant or (settings.tenant if settings.tenant != "local" else None),
        profile=profile or settings.aws_profile,
        extra_env=env,
    )
    scheduler = _scheduler(systemd, settings)
    if scheduler is None:
        click.echo(f"warning: {NO_SCHEDULER}", err=True)
        return
    for line in scheduler.install(schedule, job):
        click.echo(line)
    click.echo(f"log: {job.log_path}")


@cron_group.command("remove")
@click.option("--systemd", is_flag=True, help="The systemd user timer instead of crontab.")
def cron_remove(systemd: bool) -> None:
    """Remove the nightly harvest (other crontab lines are left alone)."""
    scheduler = _scheduler(systemd, _settings())
    for line in (
        scheduler.remove() if scheduler is not None else ["no scheduler on this machine: nothing to remove"]
    ):
        click.echo(line)


@cron_group.command("status")
@click.option("--systemd", is_flag=True, help="The systemd user timer instead of crontab.")
@json_option()
def cron_status(systemd: bool, as_json: bool) -> None:
    """The installed schedule and the last run's summary."""
    from episodic.harvest.state import read_last_run
    from episodic.kernel.errors import ConfigError

    settings = _settings()
    scheduler = _scheduler(systemd, settings)
    try:
        installed = scheduler.installed() if scheduler is not None else None
    except ConfigError as exc:  # e.g. crontab itself is missing: report it, status is not a failure
        installed, scheduler = None, None
        click.echo(f"warning: {exc}", err=True)
    last = read_last_run(settings.log_dir)
    if as_json:
        _echo_json({"installed": installed, "last_run": last})
        return
    click.echo(f"schedule: {installed or 'not installed'}")
    if last is None:
        click.echo("last run: none recorded")
        return
    click.echo(
        f"last run ({last.get('mode')}, {last.get('finished_at')}): found {last.get('found')}, "
        f"uploaded {last.get('uploaded')}, unchanged {last.get('unchanged')}, "
        f"skipped {sum((last.get('skipped') or {}).values())}, failed {len(last.get('failed') or [])}"
    )
    if last.get("aborted"):
        click.echo(f"  FAILED, stopped early: {last['aborted']}")
    for failure in last.get("failed") or []:
        click.echo(f"  failed {failure.get('session')}: {failure.get('reason')}")


@click.command("session-end")
def hook_session_end() -> None:
    """The SessionEnd hook that queues a harvest.

    Queue the ended session's transcript and start a detached uploader (always exits 0).
    """
    from episodic.harvest.spool import session_end

    session_end()


@click.command("aws")
@click.option(
    "--outputs",
    "outputs_file",
    required=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="The file written by `npx cdk deploy --outputs-file F`.",
)
def setup_aws(outputs_file: Path) -> None:
    """Record the deployed stack's outputs.

    Record the deployed stack's outputs so harvest, backfill and cron find the bucket and endpoint.
    """
    from episodic.harvest.state import OUTPUTS_FILE, harvester_policy, record_stack_outputs

    settings = _settings()
    outputs = record_stack_outputs(settings.home, outputs_file)
    policy = harvester_policy(outputs, settings.tenant)
    click.echo(f"recorded {settings.home / OUTPUTS_FILE}: bucket {outputs['TranscriptsBucket']}")
    if policy is None:
        click.echo(
            f"warning: the stack has no harvester policy for tenant {settings.tenant!r}: deploy with "
            f"-c harvesterTenants={settings.tenant} so this machine can upload its transcripts and nothing else",
            err=True,
        )
    else:
        click.echo(
            f"harvest uploads as tenant {settings.tenant!r}: attach {policy} to the identity that harvests, "
            f"e.g. aws iam attach-user-policy --user-name NAME --policy-arn {policy}"
        )
    if "McpEndpoint" in outputs:
        click.echo(f"next: episodic setup claude-code --url {outputs['McpEndpoint']} --token <token>")


def register(group: click.Group) -> None:
    for command in (harvest_cmd, backfill_cmd, cron_group):
        group.add_command(command)
    hook = group.commands.get("hook")
    if not isinstance(hook, click.Group):
        hook = click.Group(
            "hook", help="Claude Code hooks (fail open: exit 0, print nothing on any failure)."
        )
        group.add_command(hook)
    hook.add_command(hook_session_end)
    setup = group.commands.get("setup")
    if isinstance(setup, click.Group):
        setup.add_command(setup_aws)
