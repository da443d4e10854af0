"""`episodic history search|thread|query|decisions|timeline|show`, `episodic link`, `episodic resume`:
parse options, call one core function (episodic.history.service / views), shape output."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from episodic.cli.options import json_option, tenant_option
from episodic.history.params import filters_from

if TYPE_CHECKING:
    from episodic.history.models import HistoryRecord
    from episodic.kernel.memory import Memory
    from episodic.kernel.settings import Settings


def _memory() -> tuple[Settings, Memory]:
    from episodic.assembly import build_memory
    from episodic.kernel.settings import load_settings

    settings = load_settings()
    return settings, build_memory(settings)


def _echo_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, default=str, ensure_ascii=False))


def _range_options(func: Any) -> Any:
    for option in reversed(
        [
            click.option(
                "--since", default=None, help="Sessions started on or after this date (YYYY-MM-DD)."
            ),
            click.option("--until", default=None, help="Sessions started on or before this date."),
            click.option("--project", default=None, help="Only sessions of this project."),
            tenant_option(),
            json_option("Print JSON."),
        ]
    ):
        func = option(func)
    return func


@click.group("history")
def history() -> None:
    """Search what past sessions said.

    Topics, threads, decisions, a timeline.
    """


@history.command("search")
@click.argument("topic")
@_range_options
@click.option("--limit", type=int, default=20, help="At most this many sessions (1-200).")
def search_cmd(
    topic: str,
    since: str | None,
    until: str | None,
    project: str | None,
    tenant: str | None,
    as_json: bool,
    limit: int,
) -> None:
    """Which sessions mentioned TOPIC, when and how often (best first)."""
    from episodic.history.service import search_history
    from episodic.history.terms import some_words_heading

    settings, memory = _memory()
    hits = search_history(
        memory,
        tenant or settings.tenant,
        topic,
        filters_from(since, until, project),
        limit,
        some_words=True,
    )
    if as_json:
        _echo_json({"results": [h.as_json() for h in hits]})
        return
    if not hits:
        click.echo(f"No session mentions {topic!r}.")
    for n, hit in enumerate(hits):
        s = hit.summary
        if hit.match.missing and (n == 0 or not hits[n - 1].match.missing):
            click.echo(some_words_heading(topic, every=n > 0))
        lacks = f" (not: {', '.join(hit.match.missing)})" if hit.match.missing else ""
        click.echo(
            f"{s.date} {s.record.session_id} [{s.outcome}] {s.record.project}: {hit.match.count} mention(s) "
            f"in {len(hit.match.turns)} prompt(s){lacks}\n  {hit.match.snippet}\n  resume: {s.resume()}"
        )


@history.command("thread")
@click.argument("topic")
@_range_options
@click.option("--max-chars", type=int, default=12_000, help="Size of the document (500-60000).")
@click.option("--limit", type=int, default=20, help="At most this many sessions (1-200); more are counted.")
def thread_cmd(
    topic: str,
    since: str | None,
    until: str | None,
    project: str | None,
    tenant: str | None,
    as_json: bool,
    max_chars: int,
    limit: int,
) -> None:
    """The thread on TOPIC as one document.

    Matching sessions in time order, with their tool uses and
    web searches; says how many more sessions matched when cut.
    """
    from episodic.history.views import topic_thread

    settings, memory = _memory()
    doc = topic_thread(
        memory, tenant or settings.tenant, topic, filters_from(since, until, project), max_chars, limit
    )
    if as_json:
        _echo_json(
            {
                "text": doc.text,
                "sessions": doc.sessions,
                "truncated": doc.truncated,
                "more_sessions": doc.more,
            }
        )
    else:
        click.echo(doc.text)


@history.command("query")
@click.argument("topic")
@_range_options
@click.option("--session", "session_id", default=None, help="Only this session.")
@click.option("--context", type=int, default=1, help="Turns around each match (0-10).")
@click.option("--limit", type=int, default=20, help="At most this many sessions (1-200).")
def query_cmd(
    topic: str,
    since: str | None,
    until: str | None,
    project: str | None,
    tenant: str | None,
    as_json: bool,
    session_id: str | None,
    context: int,
    limit: int,
) -> None:
    """Matches with their surrounding turns (dates, one session, JSON)."""
    from episodic.history.views import query_history

    settings, memory = _memory()
    filters = filters_from(since, until, project, session_id)
    results = query_history(memory, tenant or settings.tenant, topic, filters, context, limit)
    if as_json:
        _echo_json({"results": results})
        return
    for result in results:
        click.echo(f"== {result['started_at']} {result['session_id']} ({result['project']})")
        for turn in result["context"]:  # type: ignore[attr-defined]
            mark = "*" if turn["matched"] else " "
            click.echo(f"{mark} [{turn['turn'] + 1}] {' '.join(turn['prompt'].split())[:600]}")
            if turn["reply"]:
                click.echo(f"    reply: {' '.join(turn['reply'].split())[:400]}")
        click.echo(f"  resume: {result['resume']}")


@history.command("decisions")
@click.argument("topic")
@_range_options
def decisions_cmd(
    topic: str,
    since: str | None,
    until: str | None,
    project: str | None,
    tenant: str | None,
    as_json: bool,
) -> None:
    """What was decided about TOPIC.

    Candidate decisions with date, session and context.
    """
    from episodic.history.views import find_decisions

    settings, memory = _memory()
    found, message = find_decisions(
        memory, tenant or settings.tenant, topic, filters_from(since, until, project)
    )
    if as_json:
        _echo_json({"decisions": [d.as_json() for d in found], "message": message})
        return
    for i, d in enumerate(found, 1):
        click.echo(f"[{i}] {d.session.date} {d.session.record.session_id} ({d.source}): {d.text}")
        if d.context:
            click.echo(f"    context: {d.context}")
    click.echo(message)


@history.command("timeline")
@_range_options
@click.option("--week", default=None, help="An ISO week, e.g. 2026-W30.")
@click.option("--max-chars", type=int, default=60_000, help="Size of the timeline (500-60000).")
def timeline_cmd(
    since: str | None,
    until: str | None,
    project: str | None,
    tenant: str | None,
    as_json: bool,
    week: str | None,
    max_chars: int,
) -> None:
    """Sessions per day with their problem line and outcome."""
    from episodic.history.views import check_max_chars, timeline, timeline_text

    settings, memory = _memory()
    days = timeline(memory, tenant or settings.tenant, filters_from(since, until, project, week=week))
    if as_json:
        _echo_json({"days": [{"date": d, "sessions": [s.as_json() for s in ss]} for d, ss in days]})
    else:
        click.echo(timeline_text(days, check_max_chars(max_chars)).text)


@history.command("show")
@click.argument("session_id")
@tenant_option()
def show_cmd(session_id: str, tenant: str | None) -> None:
    """One session's history record as JSON.

    One session's history record as JSON (SESSION_ID: an id, a unique prefix, or the session's name).
    """
    from episodic.history.service import get_history

    settings, memory = _memory()
    _echo_json(get_history(memory, tenant or settings.tenant, session_id).model_dump(mode="json"))


@click.command("link")
@click.argument("session_id")
@click.argument("item")
@tenant_option()
@json_option("With `show`: print JSON.")
def link(session_id: str, item: str, tenant: str | None, as_json: bool) -> None:
    """Link a session to a work item (an issue, a ticket).

    Link SESSION_ID to a work item ITEM (#123, a GitHub URL, ENT-297, a Beads id).

    `episodic link show X`: a session's work items, or an item's sessions (newest first, with cards).
    """
    settings, memory = _memory()
    tenant = tenant or settings.tenant
    if session_id == "show":  # no session id is the word `show`
        _link_show(memory, tenant, item, as_json)
        return
    from episodic.history.service import link_session
    from episodic.history.tracker import BeadsTracker

    made = link_session(
        memory,
        tenant,
        session_id,
        item,
        cwd=os.getcwd(),
        terminal=_terminal(),
        tracker=BeadsTracker(),
        ask_tracker_in_cwd=True,  # the user's own shell folder
    )
    name = f" ({made.session_name})" if made.session_name else ""
    click.echo(
        f"linked {made.session_id}{name} to {made.item} at {made.linked_at.isoformat(timespec='seconds')}"
    )


@click.command("resume")
@click.argument("session_id", metavar="SESSION")
@tenant_option()
@click.option("--print", "print_only", is_flag=True, help="Print the command instead of running it.")
def resume_cmd(session_id: str, tenant: str | None, print_only: bool) -> None:
    """Reopen a session in its agent, in its folder.

    Reopen SESSION in its agent, in its folder (`cd <cwd> && claude --resume <id>`).

    SESSION is a session id, a unique prefix of one, or the session's name (its title: exact, or a
    unique prefix, any case); several matches are listed.
    """
    from episodic.history.service import get_history, resume_argv, resume_command

    settings, memory = _memory()
    record = get_history(memory, tenant or settings.tenant, session_id)
    if print_only:
        click.echo(resume_command(record))
        return
    argv = resume_argv(record)
    cwd = record.cwd if record.cwd and os.path.isdir(record.cwd) else None
    if record.cwd and cwd is None:
        click.echo(_resumable_here(settings, memory, record), err=True)
    try:
        raise SystemExit(subprocess.call(argv, cwd=cwd))
    except FileNotFoundError as exc:
        raise click.ClickException(f"{argv[0]} is not on PATH: {resume_command(record)}") from exc


def register(group: click.Group) -> None:
    group.add_command(history)
    group.add_command(link)
    group.add_command(resume_cmd)


def _resumable_here(settings: Settings, memory: Memory, record: HistoryRecord) -> str:
    """The session's folder is gone: Claude Code looks the id up under the current folder's project, so
    the transcript goes there (or a clear error says what to do)."""
    from episodic.history.resume_here import find_transcript, place_for_resume
    from episodic.parse.discovery import default_roots

    here = os.getcwd()
    if record.agent != "claude-code":  # Codex finds a rollout by its id from any folder
        return f"the folder {record.cwd} is gone; resuming from here ({here})"
    card = memory.store.get(record.tenant_id, record.session_id)
    roots = default_roots(settings)
    transcript = find_transcript(record.session_id, card.source_path if card else "", roots)
    if transcript is not None and transcript.parent.parent.name == "projects":
        config_dir = transcript.parent.parent.parent  # the Claude Code config folder it came from
    else:
        config_dir = roots[0] if roots else Path(settings.user_home or Path.home()) / ".claude"
    try:
        return place_for_resume(record.session_id, transcript, config_dir, here, record.cwd)
    except (ValueError, OSError) as exc:
        raise click.ClickException(str(exc)) from exc


def _link_show(memory: Memory, tenant: str, target: str, as_json: bool) -> None:
    from episodic.history.service import show_links

    kind, found = show_links(memory, tenant, target)
    if as_json:
        _echo_json({"kind": kind, "links": [_linked_json(x) for x in found]})
        return
    if not found:
        click.echo(f"No links for {target!r}.")
    for linked in found:
        ln = linked.link
        where = (
            ln.item
            if kind == "session"
            else ln.session_id + (f" ({ln.session_name})" if ln.session_name else "")
        )
        click.echo(f"{ln.linked_at.date()} {where} ({ln.origin}{', ' + ln.evidence if ln.evidence else ''})")
        if linked.summary is not None:
            click.echo(
                f"  [{linked.summary.outcome}] {linked.summary.problem}\n  resume: {linked.summary.resume()}"
            )


def _terminal() -> str:
    from episodic.plumbing import envsource

    env = envsource.environ()
    return (
        env.get("TERM_SESSION_ID")
        or env.get("TMUX_PANE")
        or env.get("WT_SESSION")
        or env.get("TERM_PROGRAM", "")
    )


def _linked_json(linked: Any) -> dict[str, Any]:
    return {
        **linked.link.model_dump(mode="json"),
        "session": linked.summary.as_json() if linked.summary else None,
    }
