"""index, search, show, inspect, stats, quickstart: parse options, call one core function, shape output."""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from episodic.cli.core_print import (
    echo_json,
    hit_json,
    outcome_reason,
    print_hits,
    print_inspect,
    print_report,
    print_scope,
    record_text,
)
from episodic.cli.named_paths import not_sessions
from episodic.cli.options import json_option, tenant_option
from episodic.kernel.models import AGENTS, SearchFilters, SearchHit, SessionSource
from episodic.kernel.settings import Settings, load_settings

if TYPE_CHECKING:
    from episodic.kernel.memory import Memory

DEMO_QUERY = "npm run check passes locally but the GitHub Actions job fails with lint errors"


@contextmanager
def _progress(total: int, label: str, enabled: bool = True) -> Iterator[Callable[[SessionSource], None]]:
    """A progress bar on stderr when it is a terminal and the bar is asked for; otherwise nothing, and rich
    (~36 ms of CPU to import and run) is not loaded: `index` in a hook, a pipe or a test draws no bar."""
    if not enabled or sys.stderr is None or not sys.stderr.isatty():
        yield lambda _source: None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    console = Console(stderr=True)
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
    with Progress(*columns, console=console, transient=True, disable=not enabled) as bar:
        task = bar.add_task(label, total=total)

        def advance(source: SessionSource) -> None:
            bar.update(task, advance=1, description=f"{label} {Path(source.main_path).name[:28]}")

        yield advance


def _settings(ctx_overrides: dict[str, Any]) -> Settings:
    return load_settings(**ctx_overrides)


def missing_paths_error(paths: Sequence[str]) -> None:
    """A path given on the command line that does not exist is a mistake, not "found 0 sessions"."""
    missing = [p for p in paths if not Path(p).expanduser().exists()]
    if missing:
        raise click.ClickException(
            f"no such file or folder: {', '.join(missing)} (give session files or folders that hold them; "
            "with no path, each agent's own folders are read)"
        )


def run_index(
    settings: Settings, paths: Sequence[str] | None, tenant: str, as_json: bool, memory: Memory | None = None
) -> Any:
    from episodic.assembly import build_memory
    from episodic.core.ingest import index_sessions
    from episodic.plumbing.index_lock import index_lock
    from episodic.sessions.scope_source import scope_after_index

    def waiting() -> None:
        click.echo("another `episodic index` is running on this home; waiting for it to finish", err=True)

    memory = memory or build_memory(settings)
    with index_lock(settings.home, on_wait=waiting):  # discovery after the lock: a waiter redoes nothing
        sources = list(memory.source.discover(paths))
        with _progress(len(sources), "indexing", enabled=not as_json) as advance:
            report = index_sessions(memory, paths, tenant, progress=advance, sources=sources)
        report.scope = scope_after_index(memory, tenant)  # under the lock: it may delete cards
    return report


def _scope_summary(source: Any) -> dict[str, Any]:
    """What the scope rules decided for the sessions a scoped source read (empty for any other source)."""
    from episodic.sessions.scope_source import ScopedSource

    return source.summary() if isinstance(source, ScopedSource) else {}


def run_upgrade(
    settings: Settings, paths: Sequence[str] | None, tenant: str, limit: int | None, as_json: bool
) -> Any:
    """`index --upgrade`: the newest sessions whose card the configured LLM distiller would improve."""
    from episodic.assembly import build_memory
    from episodic.core.ingest import index_sessions
    from episodic.core.upgrade import DEFAULT_UPGRADE_LIMIT, plan_upgrade
    from episodic.plumbing.index_lock import index_lock

    memory = build_memory(settings)
    with index_lock(settings.home):  # one writer per home, as for `index`
        plan = plan_upgrade(memory, tenant, paths, limit or DEFAULT_UPGRADE_LIMIT)
        click.echo(
            f"upgrading {len(plan.sources)} of {plan.eligible} cards with {memory.distiller.info.id}, "
            "newest first",
            err=True,
        )
        with _progress(len(plan.sources), "upgrading", enabled=not as_json) as advance:
            return index_sessions(memory, paths, tenant, progress=advance, sources=plan.sources)


@click.command("index")
@click.argument("paths", nargs=-1, type=click.Path())
@tenant_option("Whose cards to write")
@click.option(
    "--distiller",
    type=click.Choice(["heuristic", "claude-code", "codex", "gemini", "bedrock"]),
    default=None,
    help="Distiller.",
)
@json_option("Print the report as JSON.")
@click.option(
    "--upgrade", is_flag=True, help="Re-distil cards of a lesser distiller with the configured LLM one."
)
@click.option("--limit", type=int, default=None, help="With --upgrade: at most this many sessions (50).")
def index_cmd(
    paths: tuple[str, ...],
    tenant: str | None,
    distiller: str | None,
    as_json: bool,
    upgrade: bool,
    limit: int | None,
) -> None:
    """Index Claude Code, Codex CLI and Gemini CLI sessions.

    Index Claude Code, Codex CLI and Gemini CLI sessions (default: each agent's own folders).
    """
    missing_paths_error(paths)
    if rejected := not_sessions(paths):
        if len(rejected) == len(paths):  # nothing to index: a mistake, not "found 0 sessions"
            raise click.ClickException("\n".join(rejected))
        for line in rejected:
            click.echo(f"skipped: {line}", err=True)
    settings = _settings({"distiller": distiller})
    tenant = tenant or settings.tenant
    if upgrade:
        report = run_upgrade(settings, list(paths) or None, tenant, limit, as_json)
    else:
        report = run_index(settings, list(paths) or None, tenant, as_json)
    if as_json:
        echo_json(report.as_dict())
    else:
        print_report(report)
    if report.every_distil_failed():  # nothing was written: a script must see it
        raise SystemExit(1)


@click.command("search")
@click.argument("query")
@click.option("--k", type=int, default=None, help="How many episodes (1-5, default 3).")
@click.option(
    "--all-outcomes",
    is_flag=True,
    help="Episodes whose fix was never verified may be close matches too (by default they are listed, "
    "labelled, as weak matches at most).",
)
@click.option("--verified-only", is_flag=True, help="Leave out episodes whose fix was never verified.")
@click.option("--project", default=None, help="Only episodes of this project.")
@click.option("--agent", type=click.Choice(list(AGENTS)), default=None, help="Only this agent's episodes.")
@tenant_option()
@json_option()
def search_cmd(
    query: str,
    k: int | None,
    all_outcomes: bool,
    verified_only: bool,
    project: str | None,
    agent: str | None,
    tenant: str | None,
    as_json: bool,
) -> None:
    """Find past episodes similar to a problem.

    Find past episodes similar to a problem described in plain words.
    """
    from episodic.assembly import build_memory
    from episodic.core.confidence import cards_only_if_verified
    from episodic.core.search import search_traces

    if all_outcomes and verified_only:
        raise click.UsageError("--all-outcomes and --verified-only contradict each other: pick one")
    settings = _settings({})
    memory = build_memory(settings)
    filters = SearchFilters(include_unverified=not verified_only, project=project, agent=agent)
    hits = search_traces(memory, tenant or settings.tenant, query, k, filters)
    if as_json:  # as search_traces gives an agent by default
        echo_json(
            {"results": [hit_json(h) for h in (hits if all_outcomes else cards_only_if_verified(hits))]}
        )
    else:
        print_hits(hits, leads_unless_verified=not all_outcomes)


@click.command("show")
@click.argument("session_id")
@tenant_option()
@json_option()
def show_cmd(session_id: str, tenant: str | None, as_json: bool) -> None:
    """Show one episode's full card and metadata."""
    from episodic.assembly import build_memory
    from episodic.core.search import get_episode

    settings = _settings({})
    memory = build_memory(settings)
    record = get_episode(memory, tenant or settings.tenant, session_id)
    if as_json:
        echo_json(record.model_dump(mode="json"))
        return
    click.echo(record_text(record, why=outcome_reason(memory, record)))


@click.command("inspect")
@click.argument("paths", nargs=-1, type=click.Path())
@click.option(
    "--render",
    "render_survey",
    is_flag=True,
    help="Print the survey of one FILE (or session id or prefix).",
)
@tenant_option("Whose indexed and kept sessions")
@json_option()
def inspect_cmd(paths: tuple[str, ...], render_survey: bool, tenant: str | None, as_json: bool) -> None:
    """What a distiller would receive; a backfill's cost.

    How much history there is, what a distiller would receive, and what a backfill would cost.
    """
    from episodic.assembly import build_kept, build_scoped_source
    from episodic.cli.cleanup_risk import kept_summary
    from episodic.sessions.backfill_estimate import inspect_history, render_one

    if not render_survey:  # --render also takes a deleted transcript's path or a session id (kept copies)
        missing_paths_error(paths)
    settings = _settings({})
    tenant = tenant or settings.tenant
    source = build_scoped_source(settings)
    if render_survey:
        if len(paths) != 1:
            raise click.UsageError("--render takes exactly one session FILE")
        from episodic.assembly import build_store
        from episodic.sessions.ids import transcript_named

        named = transcript_named(build_store(settings), tenant, paths[0])  # an id prefix, as `show`
        click.echo(render_one(source, named, settings.survey_token_budget, build_kept(settings), tenant))
        return
    found = list(source.discover(list(paths) or None))
    with _progress(len(found), "inspecting", enabled=not as_json) as advance:
        report = inspect_history(
            source,
            list(paths) or None,
            token_budget=settings.survey_token_budget,
            model_id=settings.bedrock_model_id,
            distill_concurrency=settings.distill_concurrency,
            progress=advance,
        )
    scope = _scope_summary(source)
    cleanup, cleanup_lines = kept_summary(settings, tenant, source, list(paths) or None)
    data = {**report.as_dict(), "scope": scope, **cleanup}
    if as_json:
        echo_json(data)
        return
    print_inspect(data)
    print_scope(scope)
    click.echo("\n".join(cleanup_lines))


@click.command("stats")
@json_option()
def stats_cmd(as_json: bool) -> None:
    """Cards per tenant, outcome and distiller.

    Failures waiting for a retry; the index manifest.
    """
    from episodic.assembly import build_ledger, build_store

    settings = _settings({})
    store = build_store(settings)
    ledger = build_ledger(settings, store)
    by: dict[str, Counter[str]] = {"tenant": Counter(), "outcome": Counter(), "distiller": Counter()}
    for record in store.iter_records(None):
        by["tenant"][record.tenant_id] += 1
        by["outcome"][record.card.outcome.value] += 1
        by["distiller"][record.distiller.id] += 1
    manifest = store.manifest()
    from episodic.core.settled_failures import split_failures

    # a failure of another distiller whose session kept its card is not waiting for a retry
    failures, settled = split_failures(store, ledger.failures() if ledger else [], settings.distiller)
    from episodic.injections.cli import summary_line

    data: dict[str, Any] = {
        "injections": summary_line(settings),
        "cards": sum(by["tenant"].values()),
        **{f"by_{k}": dict(v) for k, v in by.items()},
        "manifest": manifest.model_dump() if manifest else None,
        "failures": [f.__dict__ for f in failures],
        "settled_failures": [{**f.__dict__, "card_by": card_by} for f, card_by in settled],
    }
    if as_json:
        echo_json(data)
        return
    click.echo(
        f"cards: {data['cards']}" + ("" if data["cards"] else " (nothing indexed yet: `episodic index`)")
    )
    for key in ("by_tenant", "by_outcome", "by_distiller"):
        if data[key]:  # an empty index has no tenant, outcome or distiller to name
            click.echo(f"  {key[3:]}: " + ", ".join(f"{k} {v}" for k, v in sorted(data[key].items())))
    if manifest:
        click.echo(
            f"  index: {manifest.embedder_id} ({manifest.dimension}-d), renderings {','.join(manifest.renderings)}"
        )
    click.echo(f"  failures waiting for a retry: {len(failures)}")
    click.echo(f"injections: {data['injections']}")
    for failure in failures:
        click.echo(f"    {failure.path}: {failure.reason} (attempts {failure.attempts})")
    if settled:
        click.echo(
            f"  earlier failures not retried by the {settings.distiller} distiller: {len(settled)} "
            "(each session kept its card; the next `episodic index` forgets them)"
        )
        for failure, card_by in settled:
            click.echo(f"    {failure.path}: {failure.reason} (card by {card_by})")


@click.group("demo")
def demo_group() -> None:
    """The bundled demo corpus that `quickstart` indexes.

    The bundled demo corpus that `quickstart` indexes when you have no history yet.
    """


@demo_group.command("remove")
@tenant_option("Also remove demo cards from this tenant")
def demo_remove_cmd(tenant: str | None) -> None:
    """Delete every demo card.

    Delete every demo card (tenant 'demo', and demo sessions an earlier version put in yours).
    """
    from episodic.assembly import build_memory
    from episodic.sessions.demo import remove_demo

    settings = _settings({})
    removed = remove_demo(build_memory(settings), tenant or settings.tenant)
    click.echo(f"removed {removed} demo card(s)")


@click.command("quickstart")
@click.option("--query", default=None, help="The search to run after indexing.")
def quickstart_cmd(query: str | None) -> None:
    """Index your sessions (or the demo) and search them.

    Index your Claude Code, Codex CLI and Gemini CLI sessions (or the bundled demo corpus) and search.
    """
    from episodic.assembly import build_memory, build_source
    from episodic.cli.quickstart_question import answered_question, drawn_from, own_questions
    from episodic.core.search import search_traces
    from episodic.parse.agents import agent_roots
    from episodic.sessions.demo import DEMO_DIR, DEMO_TENANT, remove_demo

    settings = _settings({})
    roots = agent_roots(settings)  # Claude Code's, Codex CLI's and Gemini CLI's own folders
    paths: list[str] | None = None
    tenant = settings.tenant
    memory = build_memory(settings)  # once: the embedder's weights load once
    if roots and any(build_source(settings).discover(None)):
        click.echo("Indexing your sessions: " + ", ".join(f"{agent} {root}" for agent, root in roots))
        if removed := remove_demo(memory, settings.tenant):  # real sessions arrived: the demo leaves
            click.echo(f"Removed the {removed} demo card(s) of an earlier quickstart.")
    else:
        tenant = DEMO_TENANT  # apart from your memory: no hook token reads it
        click.echo(
            "No Claude Code, Codex CLI or Gemini CLI sessions (~/.claude/projects, ~/.codex/sessions, "
            f"~/.gemini/tmp): indexing the bundled demo corpus ({DEMO_DIR}) "
            f"into tenant '{DEMO_TENANT}', apart from your memory (`episodic demo remove` deletes it)."
        )
        paths = [str(DEMO_DIR)]
    report = run_index(settings, paths, tenant, as_json=False, memory=memory)
    print_report(report)
    question, origin = query or DEMO_QUERY, "as `episodic search` and an agent asking get it"

    def search(text: str) -> list[SearchHit]:
        return search_traces(memory, tenant, text, None, SearchFilters(include_unverified=True))

    own = own_questions(memory.store.iter_records(tenant)) if paths is None and not query else []
    if own:  # your own sessions: a question drawn from one of them, not the demo's
        question, record, hits = answered_question(own, search)
        origin = f"drawn from {drawn_from(record)}; `--query TEXT` asks your own"
    else:
        hits = search(question)
    click.echo(f'\nsearch: "{question}" ({origin})\n')
    print_hits(hits)
    from episodic.cli.setup_steps import offer_claude_code_distiller, quickstart_next_step

    offer_claude_code_distiller(settings)  # Claude Code on PATH: what LLM cards would take, opt-in once
    quickstart_next_step(settings, [label for label, _ in roots])


def register(group: click.Group) -> None:
    group.add_command(index_cmd)
    group.add_command(search_cmd)
    group.add_command(show_cmd)
    group.add_command(inspect_cmd)
    group.add_command(stats_cmd)
    group.add_command(demo_group)
    group.add_command(quickstart_cmd)
