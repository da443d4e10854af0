"""Issue 31: planted secrets of every catalogue format, the issue's split and unlabelled cases, and secrets
written through tools never reach what is stored or shown: the distiller's survey (`inspect --render`),
the card index and history database bytes, the kept trajectory, a cards export, MCP results, and review/link fields."""

from __future__ import annotations

import json
import lzma
from pathlib import Path

import pytest
from episodic.assembly import build_memory
from episodic.cards.transfer import export_cards
from episodic.core.ingest import index_sessions
from episodic.history.service import kept_history
from episodic.kernel.auth import SCOPES, WRITE, Principal
from episodic.kernel.memory import Memory
from episodic.kernel.settings import load_settings
from episodic.mcp.tools import default_registry
from kits.secret_kit import AWS_KEY_ID, AWS_SECRET_LOW, ISSUE_CASES, TOKENS, body

from .conftest import cli

SESSION = "31313131-3131-4313-8313-313131313131"
KEY_HEAD, KEY_TAIL = AWS_KEY_ID[:12], AWS_KEY_ID[12:]
REASON_SECRET = "dckr_pat_" + body("abcdefghijkLMNOPQ0123456789_-", 27)
CWD_SECRET = "glpat-" + body("abcdefghijkLMNOPQ0123456789", 20)
TERMINAL_SECRET = "lin_api_" + body("abcdefghijkLMNOPQ0123456789", 40)


def _messages() -> list[tuple[str, str]]:
    tokens = [token for _, token in TOKENS]
    half = len(tokens) // 2
    return [
        ("user", "deploy fails with these: " + " , ".join(tokens[:half])),
        ("assistant", "and the others: " + " ; ".join(tokens[half:])),
        *[("user", f"{what}: {text}") for what, text, _ in ISSUE_CASES],
        ("user", f"the key id is {KEY_HEAD}"),  # an access key id split across two messages
        ("user", f"{KEY_TAIL} and that was all of it"),
        ("assistant", f"The secret you pasted next, {AWS_SECRET_LOW}, must be rotated."),  # paired in session
        ("assistant", "Done: the deploy passes now."),
    ]


def _cores() -> list[str]:
    cores = [token[-16:] for _, token in TOKENS] + [core for _, _, found in ISSUE_CASES for core in found]
    return [*cores, KEY_TAIL, AWS_SECRET_LOW]


def _write(folder: Path) -> Path:
    lines = []
    for n, (role, text) in enumerate(_messages()):
        content = text if role == "user" else [{"type": "text", "text": text}]
        entry = {
            "type": role,
            "uuid": f"u-{n}",
            "parentUuid": f"u-{n - 1}" if n else None,
            "sessionId": SESSION,
            "timestamp": f"2026-02-01T10:{n:02d}:00Z",
            "cwd": "/home/dev/app",
            "message": {"role": role, "content": content},
        }
        lines.append(json.dumps(entry))
    folder.mkdir(parents=True)
    path = folder / f"{SESSION}.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def _leaks(blob: bytes | str) -> list[str]:
    data = blob.encode() if isinstance(blob, str) else blob
    return [core for core in _cores() if core.encode() in data]


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Memory, Path, Path]:
    root = tmp_path_factory.mktemp("flows")
    path = _write(root / "projects" / "-home-dev-app")
    memory = build_memory(load_settings(home=root / "home", embedder="hashing", distiller="heuristic"))
    index_sessions(memory, [str(path.parent)], "local")
    return memory, root / "home", path


def test_the_distiller_survey_holds_no_planted_secret(
    indexed: tuple[Memory, Path, Path], tmp_path: Path
) -> None:
    _, _, path = indexed
    rendered = cli(tmp_path / "home", "inspect", "--render", str(path))
    assert rendered.returncode == 0, rendered.stderr
    assert "deploy fails with these" in rendered.stdout
    assert _leaks(rendered.stdout) == []


def test_index_history_and_export_bytes_hold_no_planted_secret(indexed: tuple[Memory, Path, Path]) -> None:
    memory, home, _ = indexed
    assert kept_history(memory) is not None and kept_history(memory).get("local", SESSION) is not None
    stored = b"".join(p.read_bytes() for p in home.rglob("*") if p.is_file())
    assert b"[REDACTED:" in stored
    assert _leaks(stored) == []
    # the trajectory kept past the agent's cleanup, read as documented: a header line, then xz'd JSON
    (kept,) = (home / "trajectories" / "local").glob("*.kept")
    trajectory = lzma.decompress(kept.read_bytes().split(b"\n", 1)[1])
    assert b"[REDACTED:" in trajectory and _leaks(trajectory) == []
    folder = home.parent / "export"
    assert export_cards(memory, "local", str(folder)) == 1
    assert _leaks(b"".join(p.read_bytes() for p in folder.rglob("*") if p.is_file())) == []


def test_mcp_results_hold_no_planted_secret(indexed: tuple[Memory, Path, Path]) -> None:
    memory, _, _ = indexed
    registry = default_registry(memory)
    principal = Principal("local", SCOPES[WRITE])
    for name, args in (
        ("get_episode", {"session_id": SESSION}),
        ("search_traces", {"query": "deploy fails"}),
        ("history_search", {"topic": "deploy"}),
        ("history_query", {"topic": "deploy"}),
    ):
        result = registry.call(name, args, principal)
        assert not result.get("isError"), (name, result)
        assert _leaks(json.dumps(result)) == [], name


def test_text_written_through_tools_is_scrubbed(indexed: tuple[Memory, Path, Path]) -> None:
    memory, home, _ = indexed
    registry = default_registry(memory)
    principal = Principal("local", SCOPES[WRITE])
    vetoed = registry.call(
        "review_episode",
        {"session_id": SESSION, "action": "veto", "reason": f"leaks {REASON_SECRET}", "reviewer": CWD_SECRET},
        principal,
    )
    assert not vetoed.get("isError"), vetoed
    linked = registry.call(
        "link_work_item",
        {
            "session_id": SESSION,
            "item": "ENT-31",
            "cwd": f"projects/{CWD_SECRET}",
            "terminal": TERMINAL_SECRET,
        },
        principal,
    )
    assert not linked.get("isError"), linked
    shown = json.dumps([vetoed, linked, registry.call("work_item_sessions", {"target": "ENT-31"}, principal)])
    stored = b"".join(p.read_bytes() for p in home.rglob("*") if p.is_file())
    for secret in (REASON_SECRET, CWD_SECRET, TERMINAL_SECRET):
        assert secret not in shown and secret.encode() not in stored, secret
    record = memory.store.get("local", SESSION)
    assert record is not None and record.review is not None
    assert record.review.reason == "leaks [REDACTED:docker-token]"
    links = kept_history(memory).links("local", session_id=SESSION) if kept_history(memory) else []
    assert [(link.cwd, link.terminal) for link in links if link.item == "ENT-31"] == [
        ("projects/[REDACTED:gitlab-token]", "[REDACTED:linear-key]")
    ]
