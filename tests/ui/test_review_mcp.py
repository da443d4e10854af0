"""`review_episode` over MCP (write scope), the hook's `review_required` policy, and the viewer pointed at
a deployed endpoint with a token (here: the local MCP server, the same protocol)."""

from __future__ import annotations

import asyncio
import http.client
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from urllib.parse import urlsplit

import httpx2
import pytest
from episodic.kernel.auth import LocalTokenStore
from episodic.ui.remote import RemoteSource
from episodic.ui.server import BackgroundUi
from episodic.ui.views import Viewer
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client

from ui.conftest import World
from ui.test_ui_browser import CHECKOUT_ID, QUERY, hook_injects, mcp_search


def post(
    url: str,
    _payload: None,
    headers: dict[str, str] | None = None,
    raw: bytes | None = None,
    method: str = "POST",
) -> tuple[int, dict[str, str], bytes]:
    """One raw request, query string kept (the opening URL carries the secret there)."""
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=10)
    try:
        conn.request(
            method, parts.path + (f"?{parts.query}" if parts.query else ""), body=raw, headers=headers or {}
        )
        response = conn.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        conn.close()


async def _call(url: str, token: str, tool: str, arguments: dict[str, Any]) -> Any:
    http = httpx2.AsyncClient(
        headers={"Authorization": f"Bearer {token}"}, timeout=httpx2.Timeout(10, read=30)
    )
    async with http, Client(streamable_http_client(url, http_client=http)) as client:  # type: ignore[arg-type]
        return await client.call_tool(tool, arguments)


def call(world: World, tool: str, arguments: dict[str, Any], token: str | None = None) -> Any:
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, _call(world.mcp_url, token or world.token, tool, arguments)).result()


def test_review_episode_needs_the_write_scope(world: World) -> None:
    reader = LocalTokenStore(world.settings.tokens_path).add(world.settings.tenant)
    refused = call(
        world, "review_episode", {"session_id": CHECKOUT_ID, "action": "veto", "reason": "x"}, reader
    )
    assert refused.is_error and "write scope" in refused.content[0].text
    assert mcp_search(world)[0] == CHECKOUT_ID


def test_review_episode_vetoes_edits_and_restores_remotely(world: World) -> None:
    vetoed = call(
        world, "review_episode", {"session_id": CHECKOUT_ID, "action": "veto", "reason": "wrong cause"}
    )
    assert not vetoed.is_error and vetoed.structured_content["review"] == "vetoed"
    assert CHECKOUT_ID not in mcp_search(world)
    hidden = call(world, "get_episode", {"session_id": CHECKOUT_ID})
    assert hidden.is_error and "vetoed" in hidden.content[0].text
    call(world, "review_episode", {"session_id": CHECKOUT_ID, "action": "restore"})
    card = call(world, "get_episode", {"session_id": CHECKOUT_ID}).structured_content["card"]
    bad = call(
        world,
        "review_episode",
        {"session_id": CHECKOUT_ID, "action": "edit", "card": {**card, "insight": "edit C:\\app\\x.py"}},
    )
    assert bad.is_error and "file path" in bad.content[0].text
    good = call(
        world,
        "review_episode",
        {"session_id": CHECKOUT_ID, "action": "edit", "card": {**card, "insight": "Round after discounts."}},
    )
    assert not good.is_error and good.structured_content["edited"] is True


def test_review_required_injects_approved_cards_only(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EPISODIC_REVIEW_REQUIRED", "true")
    assert hook_injects(world, monkeypatch) == ""  # nothing approved yet
    found = call(world, "search_traces", {"query": QUERY})
    assert found.structured_content["results"][0]["review"] == "unreviewed"  # search still shows it, marked
    call(world, "review_episode", {"session_id": CHECKOUT_ID, "action": "approve"})
    assert CHECKOUT_ID in hook_injects(world, monkeypatch)


def test_the_viewer_over_a_deployed_endpoint(chromium: Any, world: World) -> None:
    with BackgroundUi(Viewer(RemoteSource(world.mcp_url, world.token), world.settings.tenant)) as ui:
        page = chromium.new_context().new_page()
        page.goto(ui.url)
        assert "browsed by search" in page.content()
        page.fill("#query", QUERY)
        page.click("#search")
        page.locator("#results .result").first.locator("a.open").click()
        assert "does not serve transcripts" in page.content()
        page.click("#approve")
        assert "approved" in page.locator("#review-state").inner_text()
    stored = world.memory.store.get(world.settings.tenant, CHECKOUT_ID)
    assert stored is not None and stored.review_state.value == "approved"


def test_a_remote_viewer_needs_a_token(world: World) -> None:
    with pytest.raises(Exception, match="token"):
        RemoteSource(world.mcp_url, "")


def opening_key(world: World) -> str:
    """`key=…` of a fresh one-time opening URL."""
    return urlsplit(world.ui.url).query


def test_requests_without_the_secret_or_from_elsewhere_are_refused(world: World) -> None:
    base = world.ui.base
    status, _, body = post(f"{base}/", None, method="GET")
    assert status == 403 and b"per-run secret" in body
    secret = world.ui.guard.secret
    cookie = {"Cookie": f"episodic_ui={secret}"}
    status, headers, _ = post(f"{base}//evil.example/?{opening_key(world)}", None, method="GET")
    assert status == 303 and headers["location"] == "/evil.example/"  # stays on this server
    assert post(f"{base}/?key={secret}", None, method="GET")[0] == 403  # the cookie's secret is no key
    status, headers, _ = post(f"{base}/?{opening_key(world)}", None, method="GET")
    assert (
        status == 303 and "HttpOnly" in headers["set-cookie"] and "SameSite=Strict" in headers["set-cookie"]
    )
    status, headers, _ = post(f"{base}/", None, cookie, method="GET")
    assert status == 200 and "default-src 'none'" in headers["content-security-policy"]
    assert post(f"{base}/", None, {**cookie, "Host": "evil.example:80"}, method="GET")[0] == 421  # rebinding
    form = f"action=veto&reason=x&csrf={world.ui.guard.csrf_token}".encode()
    target = f"{base}/episode/{CHECKOUT_ID}"
    form_type = {"Content-Type": "application/x-www-form-urlencoded"}
    assert post(target, None, {**cookie, **form_type, "Origin": "https://evil.example"}, raw=form)[0] == 403
    no_csrf = b"action=veto&reason=x"
    assert post(target, None, {**cookie, **form_type, "Origin": base}, raw=no_csrf)[0] == 403
    assert post(target, None, {**form_type, "Origin": base}, raw=form)[0] == 403  # no cookie
    assert mcp_search(world)[0] == CHECKOUT_ID  # none of them vetoed anything
    assert post(target, None, {**cookie, **form_type, "Origin": base}, raw=form)[0] == 303
    assert CHECKOUT_ID not in mcp_search(world)
