"""What index, search, show, inspect and quickstart print for a person (and the JSON of a hit): the
printing half of `core_cmds`."""

from __future__ import annotations

import json
from typing import Any

import click

from episodic.cards.present import counted


def echo_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, default=str, ensure_ascii=False))


def print_report(report: Any) -> None:
    click.echo(
        f"found {counted(report.found, 'session')}: indexed {report.indexed} (replaced {report.replaced}), "
        f"unchanged {report.unchanged}, kept better card {report.kept_better}, "
        f"skipped {sum(report.skipped.values())}, failed {len(report.failed)}"
    )
    if set(report.agents) - {"claude-code"}:
        click.echo("  by agent: " + ", ".join(f"{a} {n}" for a, n in sorted(report.agents.items())))
    for reason, count in sorted(report.skipped.items()):
        click.echo(f"  skipped {count}: {reason}")
    for reason, sessions in report.failures_by_reason():  # one line a reason, not one a session
        if len(sessions) == 1:
            click.echo(f"  failed {sessions[0]}: {reason}")
        else:
            click.echo(f"  failed {len(sessions)} sessions (e.g. {sessions[0]}): {reason}")
    if report.stats.malformed_lines:
        click.echo(f"  malformed lines skipped: {report.stats.malformed_lines}")
    if report.stats.truncated_files:
        click.echo(
            f"  {counted(report.stats.truncated_files, 'file')} cut mid-line (still being written, or cut "
            "short): read up to the cut, the partial last line skipped"
        )
    redacted = sum(report.stats.secrets_redacted.values())
    if redacted:
        click.echo(f"  secrets redacted: {redacted} ({', '.join(sorted(report.stats.secrets_redacted))})")
    print_scope(getattr(report, "scope", {}))
    if getattr(report, "demo_removed", 0):
        click.echo(f"  removed the {report.demo_removed} demo card(s): your own sessions are indexed now")


def print_scope(summary: dict[str, Any]) -> None:
    from episodic.sessions.scope_source import summary_lines

    if summary:
        for line in summary_lines(summary):
            click.echo(line)


# why an episode that is not verified is only a lead (kernel.models.Outcome)
UNCONFIRMED = {
    "unverified": "its fix was never confirmed",
    "failed": "its last check still failed",
    "informational": "no fix was made: a question, a review or a plan",
}
# every tier `confidence.shown` keeps (strong, weak, faint): a person reads the same verdict an agent gets
CONFIDENCE_LABELS = {
    "strong": "close match",
    "weak": "weak match, maybe related",
    "faint": "faint match, probably unrelated",
}


NO_MATCH = "No confident match."  # only an empty answer: nothing cleared even the faint bar
# what a list without a close match is, and what its order and labels mean
ORDER = (
    "best first (by label, which the judge decides when it ran, else the similarity and how far a card "
    "stands out of your other cards)"
)
LEADS_HEADER = f"Possible matches, none close, {ORDER}:"
ALSO_HEADER = f"Also possible, not close, {ORDER}:"  # after the close matches


def decided_by(hit: Any) -> str:
    """What decided a hit's label when the local judge did (its probability); '' when similarity did."""
    return f"; the judge: {hit.judge:.2f} likely the same problem" if hit.judge is not None else ""


def print_hits(hits: list[Any], leads_unless_verified: bool = True) -> None:
    """Close matches as cards, then weak and faint ones, each marked with what decided its label; nothing
    below the faint bar (episodic.core.confidence). `leads_unless_verified`: an episode whose fix was never
    verified is at most weak, and says that its outcome, not its similarity, kept it from being close."""
    from episodic.cards.present import pack_card
    from episodic.core.confidence import cards_only_if_verified, shown

    close_by_match = {hit.record.session_id for hit in hits if hit.confidence == "strong"}
    if leads_unless_verified:
        hits = cards_only_if_verified(hits)
    hits = shown(hits, include_weak=True)
    if not hits:
        click.echo(NO_MATCH)
    elif not any(hit.confidence == "strong" for hit in hits):
        click.echo(LEADS_HEADER)
    for i, hit in enumerate(hits, 1):
        tier = hit.confidence.value if hit.confidence else "faint"
        if tier != "strong" and i > 1 and hits[i - 2].confidence == "strong":
            click.echo(ALSO_HEADER)
        outcome = hit.record.card.outcome.value
        label = CONFIDENCE_LABELS[tier]
        if outcome in UNCONFIRMED and tier == "weak" and hit.record.session_id in close_by_match:
            label = f"close, but {outcome}: a lead, not a fix"
        label += decided_by(hit)
        unconfirmed = f"[{outcome}: {UNCONFIRMED[outcome]}] " if outcome in UNCONFIRMED else ""
        click.echo(f"[{i}] ({label}) {unconfirmed}" + pack_card(hit.record, hit.similarity))
        click.echo("")


def when(moment: Any) -> str:
    """A timestamp (or its ISO text) as a person reads it: to the second, in UTC, no microseconds."""
    from datetime import UTC, datetime

    if not moment:
        return ""
    if isinstance(moment, str):  # a report's ISO text (as_dict)
        moment = datetime.fromisoformat(moment)
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC)
    return moment.strftime("%Y-%m-%d %H:%M:%S") + (" UTC" if moment.tzinfo is not None else "")


def record_text(record: Any, why: str = "") -> str:
    """A card as a person reads it: the text get_episode gives an agent, then why its outcome is what it
    is (`why`, as the viewer's "Why" panel), then where it came from."""
    from episodic.cards.present import episode_text

    origin = [
        ("Agent", record.agent),
        ("Branch", record.git_branch),
        ("Started", when(record.started_at)),
        ("Ended", when(record.ended_at)),
        ("Transcript", record.source_path),
        ("Review", record.review_state.value),
        ("Indexed", when(record.indexed_at)),
    ]
    parts = [episode_text(record, started=False)]
    parts += [why] if why else []
    return "\n".join([*parts, *(f"{name}: {value}" for name, value in origin if value)])


def outcome_reason(memory: Any, record: Any) -> str:
    """The viewer's "Why" panel as text: the last edit and the evidence after it, from the transcript."""
    from episodic.cards.agent import owned_trajectory
    from episodic.ui.data import evidence_view

    _, trajectory = owned_trajectory(memory, record.tenant_id, record.session_id, record)
    if trajectory is None:
        return outcome_why(record.card.outcome.value, "", [], "the transcript is not on this machine")
    return outcome_why(record.card.outcome.value, *evidence_view(trajectory), "")


def outcome_why(outcome: str, last_edit: str, evidence: list[tuple[str, bool, str]], missing: str) -> str:
    """Why the judge of outcomes (`distill.checks`) said `outcome`: the last edit and what came after it."""
    if missing:
        return f"Why {outcome}: {missing}"
    lines = [f"Why {outcome}: last edit: {last_edit or 'none (no change attempted)'}"]
    if not evidence:
        lines.append("- no check or confirmation after the last edit")
    lines += [f"- after it, {kind} {'passed' if ok else 'failed'}: {detail}" for kind, ok, detail in evidence]
    return "\n".join(lines)


def hit_json(hit: Any) -> dict[str, Any]:
    return {
        "session_id": hit.record.session_id,
        "score": round(hit.score, 4),
        "similarity": round(hit.similarity, 4),
        "confidence": hit.confidence.value if hit.confidence else None,
        "rendering": hit.rendering,
        "card": hit.record.card.model_dump(mode="json"),
        "project": hit.record.project,
        "agent": hit.record.agent,
        "started_at": hit.record.started_at.isoformat() if hit.record.started_at else None,
        "distiller": hit.record.distiller.id,
    }


def print_inspect(data: dict[str, Any]) -> None:
    from episodic.cli.distiller_choice import about_minutes

    est = data["estimate"]
    click.echo(f"sessions: {data['sessions']} ({data['bytes'] / 1e6:.1f} MB), episodes: {data['episodes']}")
    if data["not_episodes"]:
        click.echo(
            "  not episodes: " + ", ".join(f"{k} {v}" for k, v in sorted(data["not_episodes"].items()))
        )
    click.echo(f"  date span: {when(data['first']) or 'none'} .. {when(data['last']) or 'none'}")
    click.echo(
        f"  survey tokens (budget {data['survey_token_budget']}): median {data['survey_tokens_median']}, "
        f"p95 {data['survey_tokens_p95']}, total {data['survey_tokens_total']}"
    )
    click.echo(
        f"  thinking blocks: {data['thinking_with_text']} with text, {data['thinking_stripped']} stored stripped"
    )
    click.echo(
        f"  malformed lines: {data['malformed_lines']}; secrets redacted: {sum(data['secrets_redacted'].values())}"
    )
    if est["distill_usd"] is not None:
        click.echo(
            f"  Bedrock backfill with {data['bedrock_model']} (${est['price_in_per_mtok']}/MTok in, "
            f"${est['price_out_per_mtok']}/MTok out): ~{est['input_tokens'] / 1e6:.2f} MTok in, "
            f"~{est['output_tokens'] / 1e6:.2f} MTok out ≈ ${est['distill_usd']:.2f} "
            f"+ Titan embeddings ≈ ${est['embed_usd']:.4f}"
        )
    else:
        click.echo(f"  no price known for {data['bedrock_model']}")
    cc = data["agent_cli"]
    click.echo(
        f"  Claude Code, Codex CLI or Gemini CLI distiller: {int(cc['sessions_to_distill'])} sessions at "
        f"concurrency {int(cc['concurrency'])}: {about_minutes(cc['estimated_seconds'] / 60)} "
        f"(planning figure {cc['seconds_per_session']:.0f} s a session), ~{cc['input_tokens'] / 1e6:.2f} MTok "
        f"in, ~{cc['output_tokens'] / 1e6:.2f} MTok out on your own plan or API key"
    )
