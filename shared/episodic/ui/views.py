"""The viewer's pages: browse (search, timeline, filters), one episode, the review queue, eval and dream.

Server-rendered Jinja2 templates (autoescaped) with one small local script; every asset is served from
this package, so the page works offline."""

from __future__ import annotations

import json
import mimetypes
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

from jinja2 import Environment, PackageLoader, select_autoescape

from episodic.cards.present import entry_label, pack_card, pointer_line
from episodic.cards.review import needs_review, queue_order
from episodic.core.confidence import by_tier, cards_only_if_verified
from episodic.kernel.errors import EpisodicError, InvalidArgumentError, InvalidCardError
from episodic.kernel.models import AGENTS, Card, CardRecord, Outcome, ReviewState, SearchHit
from episodic.mcp.tools import PACKED_CARD_CHARS
from episodic.ui import pages
from episodic.ui.data import MAX_LISTED, Browse, ViewerSource, sort_newest
from episodic.ui.render import (
    card_heading,
    confidence_label,
    home_relative,
    listing_order,
    record_html,
    record_title,
)

STATIC = Path(__file__).parent / "static"
FAVICON = "favicon.svg"
FAVICON_PATH = "/favicon.ico"  # where a browser looks when a page names no icon (a refusal, a raw file)
LIST_FIELDS = ("steps", "key_decisions", "dead_ends", "misleading_intuitions", "critical_checks", "tags")


@dataclass
class Response:
    status: int
    body: bytes
    content_type: str = "text/html; charset=utf-8"
    headers: dict[str, str] = field(default_factory=dict)

    @classmethod
    def redirect(cls, location: str, headers: dict[str, str] | None = None) -> Response:
        return cls(303, b"", "text/plain", {"Location": location, **(headers or {})})


def bucket(record: CardRecord, group: str) -> str:
    """The timeline bucket of an episode: its day, or the Monday of its ISO week."""
    if record.started_at is None:
        return "undated"
    day = record.started_at.date()
    if group == "week":
        monday = day - timedelta(days=day.weekday())
        return f"week of {monday.isoformat()}"
    return day.isoformat()


def card_form_payload(form: dict[str, str]) -> dict[str, Any]:
    """The edit form back to a card payload: list fields are one item a line."""
    payload: dict[str, Any] = {
        "problem": form.get("problem", "").strip(),
        "insight": form.get("insight", "").strip(),
        "outcome": form.get("outcome", "").strip(),
    }
    for name in LIST_FIELDS:
        payload[name] = [line.strip() for line in form.get(name, "").splitlines() if line.strip()]
    return payload


def agent_view(hit: SearchHit) -> dict[str, Any]:
    """A hit's confidence label and what the agent is given for it: the packed card (strong), a one-line
    entry (weak, faint), nothing (below the faint bar)."""
    label = confidence_label(hit.confidence)
    record = hit.record
    given = ""
    if label.tier == "strong":
        given = pack_card(record, similarity=hit.similarity, max_chars=PACKED_CARD_CHARS)
    elif label.tier in ("weak", "faint"):
        day = record.started_at.date().isoformat() if record.started_at else None
        tier = entry_label(label.tier, record.card.outcome.value)
        given = pointer_line(record.session_id, day, record.card.problem, tier)
    return {"confidence": label, "given": given}


class Viewer:
    """Routes a checked request to a page; `tenant_id` is the one whose cards are shown."""

    def __init__(
        self,
        source: ViewerSource,
        tenant_id: str,
        *,
        eval_dir: Path | None = None,
        dream_dir: Path | None = None,
    ) -> None:
        self.source = source
        self.tenant_id = tenant_id
        self.eval_dir = eval_dir
        self.dream_dir = dream_dir
        self.csrf_token = ""  # set by the server once its guard exists
        self.env = Environment(
            loader=PackageLoader("episodic.ui", "templates"),
            autoescape=select_autoescape(["html"]),
            trim_blocks=True,
            lstrip_blocks=True,
        )
        self.env.filters["q"] = lambda value: quote(str(value), safe="")
        self.env.filters["heading"] = card_heading

    # ------------------------------------------------------------ plumbing

    def page(self, template: str, http_status: int = 200, **context: Any) -> Response:
        body = self.env.get_template(template).render(
            csrf=self.csrf_token, source=self.source.label, tenant=self.tenant_id, **context
        )
        return Response(http_status, body.encode("utf-8"))

    def refused(self, status: int, reason: str) -> Response:
        return self.page("error.html", status, status=status, reason=reason)

    def route(self, method: str, path: str, query: dict[str, str], form: dict[str, str]) -> Response:
        if path.startswith("/static/") and method in ("GET", "HEAD"):
            return self.static(path.removeprefix("/static/"))
        if path == FAVICON_PATH and method in ("GET", "HEAD"):  # asked for by browsers on every page
            return self.static(FAVICON)
        if path == "/" and method in ("GET", "HEAD"):
            return self.browse(query)
        if path == "/queue":
            return self.queue()
        if path == "/eval":
            return self.page("eval.html", report=pages.eval_report(self.eval_dir, self.source.home))
        if path == "/eval/chart.png" and self.eval_dir is not None:
            chart = pages.eval_chart(self.eval_dir)
            return Response(200, chart, "image/png") if chart else self.refused(404, "no chart")
        if path == "/injections":
            from episodic.ui.injections_page import injections_context

            try:
                return self.page("injections.html", **injections_context(self.source, self.tenant_id, query))
            except InvalidArgumentError as exc:
                return self.refused(400, str(exc))
        if path == "/dream":
            dream = pages.dream_records(self.dream_dir, self.tenant_id, self.source.home)
            return self.page(
                "dream.html", dream=dream, records=listing_order(dream.records), title=record_title
            )
        if path.startswith("/dream/"):
            return self.dream_record(unquote(path.removeprefix("/dream/").strip("/")))
        if path.startswith("/episode/"):
            session_id = unquote(path.removeprefix("/episode/").strip("/"))  # links quote the id
            if method == "POST":
                return self.review(session_id, form)
            return self.episode(session_id, query.get("done", ""))
        return self.refused(404, f"no page at {path}")

    def static(self, name: str) -> Response:
        target = (STATIC / name).resolve()
        if target.parent != STATIC.resolve() or not target.is_file():
            return self.refused(404, "no such file")
        kind = mimetypes.guess_type(target.name)[0] or "application/octet-stream"
        return Response(200, target.read_bytes(), kind, {"Cache-Control": "max-age=3600"})

    # ------------------------------------------------------------ pages

    def browse(self, query: dict[str, str]) -> Response:
        browse = Browse(**{k: v.strip() for k, v in query.items() if k in Browse.__dataclass_fields__})
        error = ""
        hits: list[dict[str, Any]] = []
        timeline: list[tuple[str, list[CardRecord]]] = []
        facets: dict[str, list[str]] = {"project": [], "distiller": [], "tag": []}
        if browse.query:
            try:
                found = self.source.search(self.tenant_id, browse.query, browse)
            except EpisodicError as exc:
                found, error = [], str(exc)
            # best first as the agent meets them (search_traces' defaults: an episode that is not verified is an
            # entry, never a card): by tier (strong, weak, faint, below), ranked within one
            met = by_tier(cards_only_if_verified(found))
            hits = [{"record": h.record, "similarity": h.similarity, **agent_view(h)} for h in met]
        if self.source.can_list:
            records = self.source.records(self.tenant_id)
            facets = {
                "project": sorted({r.project for r in records if r.project}),
                "distiller": sorted({r.distiller.kind for r in records}),
                "tag": sorted({t.lower() for r in records for t in r.card.tags})[:200],
            }
            if not browse.query:
                shown = sort_newest([r for r in records if browse.admits(r)])[:MAX_LISTED]
                for record in shown:
                    name = bucket(record, browse.group)
                    if not timeline or timeline[-1][0] != name:
                        timeline.append((name, []))
                    timeline[-1][1].append(record)
        return self.page(
            "browse.html",
            browse=browse,
            hits=hits,
            timeline=timeline,
            facets=facets,
            error=error,
            outcomes=[o.value for o in Outcome],
            agents=AGENTS,
            states=[s.value for s in ReviewState],
            can_list=self.source.can_list,
        )

    def dream_record(self, name: str) -> Response:
        found = pages.dream_records(self.dream_dir, self.tenant_id, self.source.home)
        record = next((r for r in found.records if r.name == name), None)
        if record is None:
            return self.refused(404, f"no dream record named {name!r}")
        return self.page(
            "dream_record.html",
            record=record,
            heading=record_title(record),
            front=record.front,
            body=record_html(record),
        )

    def queue(self) -> Response:
        records = queue_order(r for r in self.source.records(self.tenant_id) if needs_review(r))
        return self.page(
            "queue.html", records=records[:MAX_LISTED], total=len(records), can_list=self.source.can_list
        )

    def episode(self, session_id: str, done: str = "", error: str = "", form: Any = None) -> Response:
        record = self.source.get(self.tenant_id, session_id)
        if record is None:
            try:  # /episode/<prefix>: a unique prefix goes to its episode, as `episodic show` takes it
                full = self.source.resolve(self.tenant_id, session_id)
            except EpisodicError as exc:
                return self.refused(404, str(exc))
            if full != session_id and not error:
                return Response.redirect(f"/episode/{quote(full, safe='')}")
            return self.refused(404, f"no episode with session id {session_id!r}")
        survey = self.source.survey(record)
        session_links = self.source.session_links(record)
        card = form or record.card.model_dump(mode="json")
        return self.page(
            "episode.html",
            400 if error else 200,
            record=record,
            review=record.review,
            card=card,
            list_fields=LIST_FIELDS,
            outcomes=[o.value for o in Outcome],
            survey=survey,
            session_links=session_links,
            done=done,
            error=error,
            metadata=json.dumps(self.metadata(record), indent=1, ensure_ascii=False),
            original=record.review.original if record.review else None,
            card_fields=list(Card.model_fields),
        )

    def metadata(self, record: CardRecord) -> dict[str, Any]:
        """The record beside its card, with its transcript's path under the user's home as `~/…`."""
        shown = record.model_dump(mode="json", exclude={"card", "review", "opening"})
        if shown.get("source_path"):
            shown["source_path"] = home_relative(shown["source_path"], self.source.home)
        return shown

    def review(self, session_id: str, form: dict[str, str]) -> Response:
        action = form.get("action", "")
        payload = card_form_payload(form) if action == "edit" else None
        try:
            record, notes = self.source.review(
                self.tenant_id, session_id, action, reason=form.get("reason", ""), card=payload
            )
        except InvalidCardError as exc:
            return self.episode(
                session_id, error=f"The edit was refused, nothing was changed: {exc}", form=payload
            )
        except EpisodicError as exc:
            return self.episode(session_id, error=f"{action} refused: {exc}")
        done = f"{action} done" + (f" ({'; '.join(notes)})" if notes else "")
        return Response.redirect(f"/episode/{quote(record.session_id, safe='')}?done={quote(done, safe='')}")
