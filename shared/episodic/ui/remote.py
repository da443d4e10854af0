"""The viewer over a deployed endpoint: MCP `tools/call` with a bearer token (search_traces and
get_episode to browse, review_episode to review). A remote index is browsed by search only (MCP has no
listing), and vetoed cards are not served, so they are restored where they were vetoed."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Callable
from datetime import datetime
from typing import Any

from episodic.kernel.errors import AuthError, EpisodicError, InvalidArgumentError, NotFoundError
from episodic.kernel.models import Card, CardRecord, Confidence, DistillerInfo, Review, ReviewState, SearchHit
from episodic.ui.data import Browse, SurveyView, ViewerSource

PROTOCOL_VERSION = "2025-11-25"
TIMEOUT_SECONDS = 20.0
MAX_RESPONSE_BYTES = 4_000_000
Post = Callable[[str, bytes, dict[str, str]], bytes]


def _urllib_post(url: str, body: bytes, headers: dict[str, str]) -> bytes:
    request = urllib.request.Request(url, data=body, method="POST", headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_SECONDS) as response:
            return bytes(response.read(MAX_RESPONSE_BYTES))
    except urllib.error.HTTPError as exc:
        if exc.code in (401, 403):
            raise AuthError(f"the endpoint refused the token (HTTP {exc.code})") from exc
        raise EpisodicError(f"the endpoint answered HTTP {exc.code}") from exc
    except OSError as exc:
        raise EpisodicError(f"cannot reach the endpoint {url}: {exc}") from exc


def _record(data: dict[str, Any]) -> CardRecord:
    started = data.get("started_at") or (f"{data['date']}T00:00:00+00:00" if data.get("date") else None)
    state = ReviewState(data.get("review") or "unreviewed")
    distiller = str(data.get("distiller") or "remote")
    kind, _, model = distiller.partition(":")
    return CardRecord(
        card=Card.model_validate(data["card"]),
        session_id=str(data["session_id"]),
        project=str(data.get("project") or ""),
        git_branch=str(data.get("git_branch") or ""),
        started_at=datetime.fromisoformat(started) if started else None,
        ended_at=datetime.fromisoformat(data["ended_at"]) if data.get("ended_at") else None,
        source_sha256="",
        distiller=DistillerInfo(kind=kind, model=model or None),
        review=None if state is ReviewState.UNREVIEWED else Review(state=state),
    )


class RemoteSource(ViewerSource):
    can_list = False

    def __init__(self, url: str, token: str, post: Post | None = None) -> None:
        if not token:
            raise InvalidArgumentError(
                "a deployed endpoint needs --token (read scope to browse, write to review)"
            )
        self.url = url
        self.token = token
        self.post = post or _urllib_post
        self.label = f"endpoint {url}"

    def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        body = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": tool, "arguments": arguments},
        }
        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": PROTOCOL_VERSION,
            "Authorization": f"Bearer {self.token}",
        }
        answer = json.loads(self.post(self.url, json.dumps(body).encode("utf-8"), headers))
        if "error" in answer:
            raise EpisodicError(str(answer["error"].get("message", "MCP error")))
        result = answer["result"]
        if result.get("isError"):
            text = str((result.get("content") or [{}])[0].get("text", ""))
            raise (NotFoundError if "no episode" in text or "vetoed" in text else InvalidArgumentError)(text)
        structured: dict[str, Any] = result.get("structuredContent") or {}
        return structured

    def search(self, tenant_id: str, query: str, browse: Browse) -> list[SearchHit]:
        arguments: dict[str, Any] = {
            "query": query,
            "k": 5,
            "include_unverified": browse.outcome != "verified",
            "include_weak": True,  # weak hits are listed, labelled weak, as the agent would meet them
        }
        if browse.project:
            arguments["project"] = browse.project
        if browse.agent:
            arguments["agent"] = browse.agent
        if browse.tag:
            arguments["tags"] = [browse.tag]
        found = self.call("search_traces", arguments).get("results", [])
        hits = [
            SearchHit(
                record=_record(r),
                score=r["score"],
                similarity=r["similarity"],
                confidence=Confidence(r["confidence"]) if r.get("confidence") in set(Confidence) else None,
            )
            for r in found
        ]
        return [h for h in hits if browse.admits(h.record)]

    def records(self, tenant_id: str) -> list[CardRecord]:
        return []

    def get(self, tenant_id: str, session_id: str) -> CardRecord | None:
        try:
            return _record(self.call("get_episode", {"session_id": session_id}))
        except NotFoundError:
            return None

    def survey(self, record: CardRecord) -> SurveyView:
        return SurveyView(
            missing="a deployed endpoint does not serve transcripts; run the viewer where they are"
        )

    def review(
        self, tenant_id: str, session_id: str, action: str, *, reason: str, card: dict[str, Any] | None
    ) -> tuple[CardRecord, list[str]]:
        arguments: dict[str, Any] = {"session_id": session_id, "action": action, "reviewer": "ui"}
        if reason:
            arguments["reason"] = reason
        if card is not None:
            arguments["card"] = card
        done = self.call("review_episode", arguments)
        record = self.get(tenant_id, session_id)
        if record is None:  # vetoed: no longer served; show what the endpoint said
            raise NotFoundError(
                f"session {session_id} is now {done.get('review')}: the endpoint no longer serves it"
            )
        return record, list(done.get("notes") or [])
