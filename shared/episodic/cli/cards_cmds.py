"""`episodic cards export|import`: options in, one core call, a report out."""

from __future__ import annotations

import json

import click

from episodic.cli.options import json_option, tenant_option
from episodic.kernel.settings import load_settings


@click.group("cards")
def cards_group() -> None:
    """Cards as files: export, import, check.

    Cards as files (<session_id>.json): keep a backfill's cards, evaluate on them, load them again.
    """


@cards_group.command("export")
@click.argument("folder", type=click.Path(file_okay=False))
@tenant_option("Whose cards")
def export_cmd(folder: str, tenant: str | None) -> None:
    """Write the index's cards to FOLDER, one file each.

    Write the index's cards to FOLDER, one <session_id>.json each (the eval --cards format).
    """
    from episodic.assembly import build_memory
    from episodic.cards.transfer import export_cards

    settings = load_settings()
    count = export_cards(build_memory(settings), tenant or settings.tenant, folder)
    click.echo(f"exported {count} cards to {folder}")


@cards_group.command("import")
@click.argument("folder", type=click.Path(exists=True, file_okay=False))
@click.argument("paths", nargs=-1, type=click.Path())
@tenant_option("Whose cards")
@json_option("Print the report as JSON.")
def import_cmd(folder: str, paths: tuple[str, ...], tenant: str | None, as_json: bool) -> None:
    """Validate and index the cards in FOLDER.

    Outcomes are checked against the transcripts under PATHS
    (default: every agent's roots) and where the export recorded each session. An unchanged card with
    no transcript keeps its project, dates and, when the index holds its source hash, its outcome.
    """
    from episodic.assembly import build_memory
    from episodic.cards.transfer import import_cards

    settings = load_settings()
    report = import_cards(build_memory(settings), tenant or settings.tenant, folder, list(paths) or None)
    if as_json:
        click.echo(json.dumps(report.as_dict(), indent=2))
        return
    click.echo(
        f"{report.files} card files: imported {report.imported} (replaced {report.replaced}), "
        f"kept better card {report.kept_better}, invalid {len(report.invalid)}; "
        f"outcome downgraded {report.downgraded}, no transcript found {report.without_transcript} "
        f"(outcome kept for {report.outcome_kept} unchanged)"
    )
    for file, reason in report.invalid:
        click.echo(f"  invalid {file}: {reason}")


@cards_group.command("check")
@click.argument("paths", nargs=-1, type=click.Path())
@click.option(
    "--cards",
    "folder",
    type=click.Path(exists=True, file_okay=False),
    default=None,
    help="Check the cards in this folder (default: the index's cards).",
)
@click.option(
    "--distil", is_flag=True, help="Check the offline (heuristic) cards of the sessions under PATHS."
)
@tenant_option("Whose cards")
@json_option("Print the report as JSON.")
def check_cmd(
    paths: tuple[str, ...], folder: str | None, distil: bool, tenant: str | None, as_json: bool
) -> None:
    """How the cards read: statements, holes, cuts, echoes.

    How the cards read: the share of fields that are complete statements, that carry a hole or a cut,
    and of problems that echo the session's first prompt (found under PATHS, default every agent's roots)
    or come from an injected instruction block.
    """
    from episodic.assembly import build_memory
    from episodic.cards.check import check_card_set
    from episodic.distill.readability import summary_line

    if folder and distil:
        raise click.UsageError("give --cards or --distil, not both")
    settings = load_settings()
    report = check_card_set(
        build_memory(settings),
        tenant or settings.tenant,
        folder=folder,
        distil=distil,
        paths=list(paths) or None,
    )
    if as_json:
        click.echo(json.dumps(report, indent=2, ensure_ascii=False))
        return
    click.echo(summary_line(report["source"], report))
    if report["hole_kinds"]:
        shapes = ", ".join(f"{kind} {n}" for kind, n in report["hole_kinds"].items())
        click.echo(f"  holes by shape: {shapes}")
    elif report["fields"]:
        click.echo(f"  no hole of the {report['hole_shapes_checked']} shapes checked (docs/card.md)")
    for bad in report["invalid"]:
        click.echo(f"  not read {bad['file']}: {bad['reason']}")
    for kind, found in report["examples"].items():
        click.echo(f"  {kind}:")
        for item in found:
            click.echo(f"    {item['session_id'][:8]} {item['field']}: {item['text'][:120]}")


def register(group: click.Group) -> None:
    group.add_command(cards_group)
