"""Issue 40: `link_work_item` runs nothing in a folder the caller names. A fake `bd` on the server's PATH
logs every folder it is run in and calls every item an epic. Over the real MCP HTTP path on 127.0.0.1:
another tenant's token naming `/etc`, `../..` or another user's repository runs nothing anywhere, and
gets the same answer for each; the server's own tenant has its tracker asked only in the session's
recorded folder, whatever folder it names."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from episodic.assembly import build_memory
from episodic.history.service import kept_history
from episodic.history.sqlite_store import SQLiteHistoryStore
from episodic.kernel.auth import WRITE, LocalTokenStore
from episodic.kernel.models import LOCAL_TENANT
from episodic.kernel.settings import load_settings
from episodic.mcp.http_server import BackgroundServer, build_endpoint
from kits.history_kit import record
from kits.mcp_testkit import post, rpc

OWN, OTHER = LOCAL_TENANT, "tenant-b"


class World:
    def __init__(self, url: str, tokens: dict[str, str], ran: Path, recorded: Path, elsewhere: Path) -> None:
        self.url, self.tokens, self.ran = url, tokens, ran
        self.recorded, self.elsewhere = recorded, elsewhere

    def link(self, tenant: str, session_id: str, cwd: str) -> dict[str, Any]:
        args = {"session_id": session_id, "item": "bd-42", "cwd": cwd}
        status, _, body = post(
            self.url,
            rpc("tools/call", {"name": "link_work_item", "arguments": args}),
            {"Authorization": f"Bearer {self.tokens[tenant]}"},
        )
        assert status == 200, body
        return json.loads(body)["result"]  # type: ignore[no-any-return]

    def folders_run_in(self) -> list[str]:
        return self.ran.read_text().splitlines() if self.ran.exists() else []


@pytest.fixture()
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[World]:
    bin_dir, ran = tmp_path / "bin", tmp_path / "bd-ran-in.txt"
    bin_dir.mkdir()
    fake_bd = bin_dir / "bd"  # answers like `bd show ID --json` for an epic, and logs where it ran
    fake_bd.write_text(f'#!/bin/sh\npwd >> "{ran}"\necho \'[{{"id": "bd-42", "issue_type": "epic"}}]\'\n')
    fake_bd.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    recorded, elsewhere = tmp_path / "own-repo", tmp_path / "another-users-repo"
    recorded.mkdir()
    elsewhere.mkdir()
    home = tmp_path / "home"
    settings = load_settings(home=home, embedder="hashing", user_home=str(tmp_path / "user"))
    memory = build_memory(settings, parts={"history": SQLiteHistoryStore(home / "history.sqlite3")})
    history = kept_history(memory)
    assert history is not None
    for tenant in (OWN, OTHER):  # each tenant's own session, recorded in its own repository
        history.put(record(tenant, f"{tenant}-session", "2026-01-10", ["fix the build"], cwd=str(recorded)))
    tokens = LocalTokenStore(settings.tokens_path)
    keys = {tenant: tokens.add(tenant, WRITE) for tenant in (OWN, OTHER)}
    with BackgroundServer(build_endpoint(settings, memory)) as server:
        yield World(server.url, keys, ran, recorded, elsewhere)


def _answer(result: dict[str, Any]) -> str:
    """The answer without its timestamp (each link is made at its own time)."""
    return re.sub(r"\d{4}-\d\d-\d\dT[\d:.+]+", "<time>", result["content"][0]["text"])


def test_another_tenant_names_folders_and_nothing_runs(world: World) -> None:
    folders = ["/etc", "../..", str(world.elsewhere), "/nonexistent/folder", ""]
    answers = [world.link(OTHER, f"{OTHER}-session", cwd) for cwd in folders]
    assert world.folders_run_in() == [], "the tracker ran in a folder another tenant named"
    assert len({_answer(a) for a in answers}) == 1, answers  # the same answer whatever the folder: no oracle
    assert not answers[0].get("isError"), answers[0]


def test_the_servers_own_tenant_is_asked_only_in_its_recorded_folder(world: World) -> None:
    answers = [world.link(OWN, f"{OWN}-session", cwd) for cwd in ("/etc", "../..", str(world.elsewhere))]
    assert set(world.folders_run_in()) == {str(world.recorded)}  # never /etc, never the other repository
    assert all(a.get("isError") and "epic" in a["content"][0]["text"] for a in answers), answers
    unrecorded = world.link(OWN, "not-indexed-yet-session", "/etc")  # no recorded folder: nobody is asked
    assert not unrecorded.get("isError") and world.folders_run_in().count("/etc") == 0, unrecorded
