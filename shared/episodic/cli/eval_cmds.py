"""`episodic eval` (retrieval evaluation) and `episodic eval gen-queries`: options in, one core call, output."""

from __future__ import annotations

import json
import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from episodic.cli.options import json_option
from episodic.kernel.settings import Settings, load_settings

_GREEDY = "--transcripts"


def _query_writer_options(what: str) -> Any:
    """--transcripts (repeatable) and --out, as every command that writes a queries file takes them."""

    def apply(command: Any) -> Any:
        command = click.option(
            "--out", "out", required=True, type=click.Path(dir_okay=False), help="The JSONL file to write."
        )(command)
        return _transcripts_option(what)(command)

    return apply


def _transcripts_option(what: str) -> Any:
    """--transcripts, repeatable and required (`expand_greedy` lets it take several folders)."""
    return click.option(
        "--transcripts",
        "transcripts",
        multiple=True,
        required=True,
        type=click.Path(exists=True, file_okay=False),
        help=f"Folder(s) of transcripts: {what}",
    )


def _report_options(json_holds: str, cards_use: str) -> Any:
    """--cards, --report and --json, as the replay and the yardsticks take them."""

    def apply(command: Any) -> Any:
        command = json_option(f"Print one JSON object ({json_holds}).")(command)
        command = click.option(
            "--report",
            "report_dir",
            type=click.Path(file_okay=False),
            help="Write report.md + chart.png here.",
        )(command)
        return click.option(
            "--cards",
            "cards_dir",
            type=click.Path(exists=True, file_okay=False),
            help=f"A folder of card files (<session_id>.json): {cards_use}",
        )(command)

    return apply


def expand_greedy(args: Sequence[str]) -> list[str]:
    """`--transcripts A B C` → `--transcripts A --transcripts B --transcripts C` (click takes one value)."""
    out: list[str] = []
    greedy = False
    for arg in args:
        if arg == "--":
            greedy = False
            out.append(arg)
        elif arg == _GREEDY:
            greedy = True
            out.append(arg)
        elif greedy and out and out[-1] != _GREEDY and not arg.startswith("-"):
            out += [_GREEDY, arg]
        else:
            greedy = greedy and not arg.startswith("-")
            out.append(arg)
    return out


class _EvalGroup(click.Group):
    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        ctx.meta["eval_argv"] = list(args)
        if args and args[0] in self.commands:
            return super().parse_args(ctx, args)
        return super().parse_args(ctx, expand_greedy(args))


class _GreedyCommand(click.Command):
    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        return super().parse_args(ctx, expand_greedy(args))


def _systems(values: tuple[str, ...]) -> list[str] | None:
    names = [n.strip() for v in values for n in v.split(",") if n.strip()]
    return names or None


def _print_text(result: Any) -> None:
    from episodic.evaluation.report import render_summary

    click.echo(render_summary(result))


def _bedrock_client(settings: Settings) -> Any:
    from episodic.assembly import aws_client

    return aws_client(settings, "bedrock-runtime")


@click.command("replay", cls=_GreedyCommand)
@_transcripts_option("every session's prompts are replayed in order of its start.")
@_report_options("figures and per-prompt records", "replayed beside the configured distiller's cards.")
@click.option(
    "--limit",
    type=click.IntRange(1),
    default=None,
    help="Replay at most this many sessions, spread over the timeline (the memory still holds every earlier one).",
)
@click.pass_context
def replay_cmd(
    ctx: click.Context,
    transcripts: tuple[str, ...],
    cards_dir: str | None,
    report_dir: str | None,
    as_json: bool,
    limit: int | None,
) -> None:
    """Replay real prompts in time order, as the hook met them.

    Each session's prompts are asked of the memory as it stood before the session started: full cards,
    pointers, the same card twice in a session, the cards given most.

    Example: episodic eval replay --transcripts ~/.claude/projects --report out/
    """
    from episodic.evaluation.progress import RichProgress
    from episodic.evaluation.replay import run_replay
    from episodic.evaluation.replay_report import render_replay, write_replay_report

    settings = load_settings()
    with RichProgress() as progress:
        result = run_replay(settings, list(transcripts), cards_dir=cards_dir, limit=limit, progress=progress)
    result.command = _command_line(ctx, "replay")
    if report_dir:
        report, chart = write_replay_report(result, Path(report_dir))
        click.echo(f"wrote {report} and {chart}", err=True)
    if as_json:
        click.echo(json.dumps(result.to_json(), ensure_ascii=False, default=str))
    else:
        click.echo("\n".join(render_replay(result)))


@click.command("yardsticks", cls=_GreedyCommand)
@_transcripts_option("the corpus every yardstick reads.")
@click.option(
    "--eval-dir",
    "eval_dir",
    required=True,
    type=click.Path(exists=True, file_okay=False),
    help="The folder of query sets: dev-queries.jsonl, dev-negatives.jsonl, fresh-queries.jsonl, "
    "fresh-negatives.jsonl (those present are run).",
)
@_report_options("rows, cells, the replay", "every yardstick also runs on them.")
@click.option(
    "--replay-limit",
    type=click.IntRange(1),
    default=None,
    help="Replay at most this many sessions, spread over the timeline (default: all).",
)
@click.pass_context
def yardsticks_cmd(
    ctx: click.Context,
    transcripts: tuple[str, ...],
    eval_dir: str,
    cards_dir: str | None,
    report_dir: str | None,
    as_json: bool,
    replay_limit: int | None,
) -> None:
    """Every yardstick side by side.

    Dev, fresh, pseudo-queries, leave-one-out, hand negatives and the replay: the first stage beside what
    ships, per card set and fold, with standard errors.

    Example: episodic eval yardsticks --transcripts T --eval-dir E --cards E/cards --report out/
    """
    from episodic.evaluation.progress import RichProgress
    from episodic.evaluation.yardsticks import run_yardsticks
    from episodic.evaluation.yardsticks_report import render_yardsticks, write_yardsticks

    with RichProgress() as progress:
        result = run_yardsticks(
            load_settings(),
            list(transcripts),
            Path(eval_dir),
            cards_dir=cards_dir,
            replay_limit=replay_limit,
            progress=progress,
        )
    result.command = _command_line(ctx, "yardsticks")
    if result.replay is not None:
        result.replay.command = result.command
    if report_dir:
        report, chart = write_yardsticks(result, Path(report_dir))
        click.echo(f"wrote {report} and {chart}", err=True)
    if as_json:
        click.echo(json.dumps(result.to_json(), ensure_ascii=False, default=str))
    else:
        click.echo(render_yardsticks(result))


def _command_line(ctx: click.Context, name: str) -> str:
    """The command as typed (the eval group keeps its arguments), for the report's first line."""
    typed = ctx.parent.meta.get("eval_argv", []) if ctx.parent else []
    return "episodic eval " + shlex.join(typed or [name])


@click.group("eval", cls=_EvalGroup, invoke_without_command=True)
@click.option(
    "--transcripts",
    "transcripts",
    multiple=True,
    type=click.Path(exists=True, file_okay=False),
    help="Folder(s) of Claude Code transcripts: every session found is the corpus (repeatable).",
)
@click.option(
    "--queries",
    type=click.Path(exists=True, dir_okay=False),
    help="JSONL: one object a line with at least `query` and `session_id`.",
)
@click.option(
    "--systems",
    multiple=True,
    help="Systems to compare, comma-separated (default: all; see --list-systems).",
)
@click.option("--k", type=click.IntRange(1, 100), default=3, show_default=True, help="The recall@k cut-off.")
@json_option("Print one JSON object (systems, queries).")
@click.option(
    "--report", "report_dir", type=click.Path(file_okay=False), help="Write report.md + chart.png here."
)
@click.option(
    "--cards",
    "cards_dir",
    type=click.Path(exists=True, file_okay=False),
    help="A folder of card files (<session_id>.json, e.g. from `episodic cards export`): card systems run "
    "on them beside the configured distiller's cards.",
)
@click.option(
    "--cards-only",
    is_flag=True,
    help="With --cards: skip the distilled side (missing sessions still are).",
)
@click.option(
    "--negatives",
    type=click.Path(exists=True, dir_okay=False),
    help="JSONL of prompts no session covers (`query` a line): adds the injection view, what the prompt "
    "hook gives the agent for them and for the queries.",
)
@click.option("--list-systems", is_flag=True, help="List the registered systems and exit.")
@click.pass_context
def eval_group(
    ctx: click.Context,
    transcripts: tuple[str, ...],
    queries: str | None,
    systems: tuple[str, ...],
    k: int,
    as_json: bool,
    report_dir: str | None,
    cards_dir: str | None,
    cards_only: bool,
    negatives: str | None,
    list_systems: bool,
) -> None:
    """Compare retrieval systems on your own corpus.

    Recall@1, recall@k, MRR with standard errors.

    Example: episodic eval --transcripts ~/.claude/projects --queries queries.jsonl --report out/
    """
    if ctx.invoked_subcommand is not None:
        return
    from episodic.evaluation.systems import SYSTEMS

    if list_systems:
        for name, cls in SYSTEMS.items():
            click.echo(f"{name:16} {cls.description}")
        return
    if not transcripts or not queries:
        raise click.UsageError("eval needs --transcripts DIR [DIR…] and --queries FILE.jsonl")
    if cards_only and not cards_dir:
        raise click.UsageError("--cards-only needs --cards DIR")
    from episodic.evaluation.progress import RichProgress
    from episodic.evaluation.runner import run_evaluation

    settings = load_settings()
    with RichProgress() as progress:
        result = run_evaluation(
            settings,
            list(transcripts),
            Path(queries),
            _systems(systems),
            k,
            progress=progress,
            cards_dir=cards_dir,
            cards_only=cards_only,
            negatives=Path(negatives) if negatives else None,
        )
    result.command = "episodic eval " + shlex.join(ctx.meta.get("eval_argv", []))
    if report_dir:
        from episodic.evaluation.report import write_report

        report, chart = write_report(result, Path(report_dir))
        click.echo(f"wrote {report} and {chart}", err=True)
    if as_json:
        click.echo(json.dumps(result.to_json(), ensure_ascii=False))
    else:
        _print_text(result)


@eval_group.command("gen-queries", cls=_GreedyCommand)
@_query_writer_options("one query per session found.")
@click.option("--limit", type=click.IntRange(1), default=None, help="At most this many sessions.")
def gen_queries_cmd(transcripts: tuple[str, ...], out: str, limit: int | None) -> None:
    """Write one held-out query per session (an LLM).

    Write one held-out query per session with the configured LLM (Bedrock), leaky ones rejected.
    """
    from episodic.evaluation.gen_queries import bedrock_writer, run_gen_queries
    from episodic.evaluation.progress import RichProgress

    settings = load_settings()
    writer = None
    if settings.distiller == "bedrock":
        writer = bedrock_writer(_bedrock_client(settings), settings.bedrock_model_id)
    with RichProgress() as progress:
        report = run_gen_queries(settings, list(transcripts), Path(out), writer, limit, progress)
    click.echo(f"wrote {len(report.written)} queries to {out}; rejected {len(report.rejected)} sessions")
    for session_id, why in report.rejected:
        click.echo(f"  rejected {session_id}: {why}")


@eval_group.command("pseudo-queries", cls=_GreedyCommand)
@_query_writer_options("each session's later prompts become queries for it.")
@click.option(
    "--per-session", type=click.IntRange(1, 20), default=2, show_default=True, help="Queries a session."
)
def pseudo_queries_cmd(transcripts: tuple[str, ...], out: str, per_session: int) -> None:
    """Each session's later prompts as its queries.

    Write each session's later prompts as queries for it: a yardstick nothing was tuned on (no LLM).
    """
    from episodic.evaluation.progress import RichProgress
    from episodic.evaluation.pseudo_queries import PseudoRules, run_pseudo_queries, write_queries

    with RichProgress() as progress:
        queries, sessions = run_pseudo_queries(
            load_settings(), list(transcripts), PseudoRules(per_session=per_session), progress
        )
    if not queries:
        raise click.ClickException("no session has a later prompt long enough to be a query")
    written = write_queries(queries, Path(out))
    targets = len({q.session_id for q in queries})
    click.echo(f"wrote {written} queries for {targets} of {sessions} sessions to {out}")


def register(group: click.Group) -> None:
    eval_group.add_command(replay_cmd)
    eval_group.add_command(yardsticks_cmd)
    group.add_command(eval_group)
