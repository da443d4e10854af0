"""`episodic scratch extract|recall|sweep|forget`: the scratch memory of tool outcomes, thin faces."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import click

from episodic.cli.options import json_option, tenant_option
from episodic.kernel.errors import ConfigError
from episodic.kernel.settings import load_settings

if TYPE_CHECKING:
    from episodic.kernel.memory import Memory
    from episodic.scratch.service import ScratchMemory


def _echo_json(data: object) -> None:
    click.echo(json.dumps(data, indent=2, default=str, ensure_ascii=False))


def _scratch() -> tuple[Memory, ScratchMemory]:
    from episodic.assembly import build_memory
    from episodic.scratch.service import scratch_of

    memory = build_memory(load_settings())
    scratch = scratch_of(memory)
    if scratch is None:
        raise ConfigError("scratch memory is off (EPISODIC_SCRATCH_MEMORY=false)")
    return memory, scratch


@click.group("scratch")
def scratch_group() -> None:
    """Scratch memory: notable tool outcomes of recent days.

    Scratch memory: one-line summaries of notable tool outcomes of recent sessions (3-14 days).
    """


@scratch_group.command("extract")
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True))
@click.option("--samples", type=int, default=20, help="How many sample summaries to print.")
@json_option()
def extract_cmd(paths: tuple[str, ...], samples: int, as_json: bool) -> None:
    """Extract outcome records from PATHS (a report).

    Extract outcome records from the transcripts under PATHS without storing them (a report).
    """
    from episodic.assembly import build_scrubber, build_source
    from episodic.scratch.report import extraction_report

    settings = load_settings()
    report = extraction_report(
        build_source(settings),
        list(paths),
        build_scrubber(settings),
        settings.tenant,
        settings.scratch_max_per_session,
    ).as_dict(samples)
    if as_json:
        _echo_json(report)
        return
    click.echo(
        f"{report['sessions']} sessions, {report['records']} outcome records "
        f"({report['sessions_with_records']} sessions with any), fail share {report['fail_share']:.0%}, "
        f"dropped by the no-diff/no-trace check {report['dropped_by_check']}"
    )
    if report["skipped"]:
        click.echo("  skipped: " + ", ".join(f"{n} {reason}" for reason, n in report["skipped"].items()))
    for line in report["samples"]:
        click.echo(f"  {line}")


@scratch_group.command("recall")
@click.argument("query")
@click.option("--k", type=int, default=None, help="How many outcomes (3-5, default 3).")
@tenant_option()
@json_option()
def recall_cmd(query: str, k: int | None, tenant: str | None, as_json: bool) -> None:
    """Prior similar tool outcomes for QUERY.

    Packed as the prompt hook injects them.
    """
    from episodic.scratch.pack import pack_recalls
    from episodic.scratch.recall import recall_similar
    from episodic.scratch.tools import DEGRADED_TEXT, degraded_reason

    memory, scratch = _scratch()
    wait = memory.settings.scratch_agent_deadline_seconds
    found = recall_similar(scratch, tenant or memory.settings.tenant, query, k, deadline_seconds=wait)
    if found.degraded and not as_json:
        raise click.ClickException(DEGRADED_TEXT.format(reason=degraded_reason(found.degraded, wait)))
    if as_json:
        _echo_json(
            {
                "task": found.task,
                "degraded": found.degraded,
                "results": [h.model_dump(mode="json") for h in found.hits],
            }
        )
        if found.degraded:
            raise SystemExit(1)
        return
    click.echo(pack_recalls(found.hits, memory.settings.scratch_ttl_days) or "No similar tool outcome.")


@scratch_group.command("sweep")
def sweep_cmd() -> None:
    """Delete expired outcome records.

    Delete expired outcome records (older than EPISODIC_SCRATCH_TTL_DAYS; `index` runs this too).
    """
    from episodic.scratch.service import sweep

    memory, scratch = _scratch()
    removed = sweep(scratch)
    click.echo(
        f"swept {removed} expired outcome record(s) (older than {memory.settings.scratch_ttl_days} days); "
        f"{scratch.store.count()} kept"
    )


@scratch_group.command("forget")
@click.argument("session_id")
@tenant_option()
def forget_cmd(session_id: str, tenant: str | None) -> None:
    """Delete one session: its card and its outcome records."""
    from episodic.scratch.service import forget_session

    memory, scratch = _scratch()
    tenant = tenant or memory.settings.tenant
    from episodic.sessions.ids import card_session_id

    session_id = card_session_id(memory, tenant, session_id)
    card = memory.store.delete(tenant, session_id)
    records = forget_session(scratch, tenant, session_id)
    click.echo(f"deleted {'the card and ' if card else ''}{records} outcome record(s) of {session_id}")


def register(group: click.Group) -> None:
    group.add_command(scratch_group)
