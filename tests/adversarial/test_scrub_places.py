"""Issue 31, the rest of the places a planted secret could leave by: scratch memory (its database and
`scratch recall`), the prompt hook's injected context, the viewer's pages, dream records and the harvested
copies uploaded to S3. One corpus, built once: `test_scrub_flows`' session holding every planted secret,
plus recent sessions whose failing test runs print one planted token each (so scratch memory records them).

Each test also checks that the planted text reached the place (a `[REDACTED:` marker, or the session shown),
so it fails if that path stopped scrubbing rather than passing because nothing arrived."""

from __future__ import annotations

import json
import os
import sqlite3
import time
import urllib.request
from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import boto3
import pytest
from click.testing import CliRunner
from episodic.assembly import build_memory
from episodic.cli import build_cli
from episodic.core.ingest import index_sessions
from episodic.kernel.auth import LocalTokenStore
from episodic.kernel.memory import Memory
from episodic.kernel.settings import Settings, load_settings
from episodic.mcp.http_server import BackgroundServer, build_endpoint
from episodic.scratch.service import scratch_of
from episodic.ui.data import LocalSource
from episodic.ui.server import BackgroundUi
from episodic.ui.views import Viewer
from kits.hook_kit import injected_context
from kits.secret_kit import AWS_KEY_ID, OPENAI_PROJECT, TOKENS, VAULT
from moto import mock_aws

from .conftest import cli
from .test_scrub_flows import SESSION, _leaks, _write

PER_SESSION = 9  # failing runs per session: with the passing run, within scratch_max_per_session (10)
FAILURE = "PermissionError: token {token} rejected by deploy step {n}"
PROMPT = "pytest tests/test_deploy.py fails with PermissionError: token rejected by deploy step"
REDACTED = b"[REDACTED:"


def _planted() -> list[str]:
    """Every catalogue token and the issue's one-line cases, one per failing test run."""
    return [token for _, token in TOKENS] + [OPENAI_PROJECT, VAULT, AWS_KEY_ID]


def _scratch_session(folder: Path, session_id: str, tokens: list[str], start: datetime) -> None:
    entries: list[dict[str, Any]] = []

    def add(role: str, content: Any) -> None:
        n = len(entries)
        entries.append(
            {
                "type": role,
                "uuid": f"{session_id[:8]}-{n}",
                "parentUuid": f"{session_id[:8]}-{n - 1}" if n else None,
                "sessionId": session_id,
                "timestamp": (start + timedelta(seconds=n)).strftime("%Y-%m-%dT%H:%M:%SZ"),
                "cwd": "/home/dev/app",
                "message": {"role": role, "content": content},
            }
        )

    def run(output: str, failed: bool) -> None:
        tool_id = f"t{len(entries)}"
        command = {"command": "pytest tests/test_deploy.py"}
        add("assistant", [{"type": "tool_use", "id": tool_id, "name": "Bash", "input": command}])
        result = {"type": "tool_result", "tool_use_id": tool_id, "content": output, "is_error": failed}
        add("user", [result])

    add("user", f"{PROMPT}, please fix the deploy token check; the rejected tokens: {' , '.join(tokens)}")
    for n, token in enumerate(tokens):
        run(f"E   {FAILURE.format(token=token, n=n)}\n1 failed in 0.2s", True)
    edit = {
        "file_path": "/home/dev/app/deploy.py",
        "old_string": "check(t)",
        "new_string": "check(t.strip())",
    }
    add("assistant", [{"type": "tool_use", "id": "edit", "name": "Edit", "input": edit}])
    add("user", [{"type": "tool_result", "tool_use_id": "edit", "content": "The file has been updated."}])
    run("12 passed in 0.5s", False)  # an edit then a passing check: a verified card the hook may inject
    add("assistant", [{"type": "text", "text": "Fixed: the deploy token check passes now, 12 passed."}])
    (folder / f"{session_id}.jsonl").write_text("".join(json.dumps(e) + "\n" for e in entries))


@dataclass
class Corpus:
    claude: Path  # CLAUDE_CONFIG_DIR: projects/-home-dev-app/*.jsonl
    folder: Path
    home: Path
    settings: Settings
    memory: Memory
    scratch_sessions: list[str]
    planted_runs: int


def index_planted(
    root: Path, folder: Path, planted: list[str], id_format: str, per_session: int = PER_SESSION
) -> tuple[Settings, Memory, list[str], Any]:
    """Sessions of PER_SESSION planted secrets each (recent: scratch memory keeps 7 days; files old enough for
    harvest's quiet period), indexed offline: (settings, memory, session ids, the index report)."""
    start = datetime.now(UTC) - timedelta(hours=3)
    sessions = []
    for i in range(0, len(planted), per_session):
        session_id = id_format.format(i=i)
        _scratch_session(folder, session_id, planted[i : i + per_session], start + timedelta(minutes=i))
        sessions.append(session_id)
    old = time.time() - 7200
    for path in folder.iterdir():
        os.utime(path, (old, old))
    # the planted cards are alike, so no word they share with a prompt is specific: the full card's words floor
    # is off so that the hook's full card, the text most likely to leak, is read too
    settings = load_settings(
        home=root / "home",
        embedder="hashing",
        distiller="heuristic",
        scratch_max_per_session=10,
        strong_min_keyword=0.0,
    )
    memory = build_memory(settings)
    return settings, memory, sessions, index_sessions(memory, [str(folder)], "local")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Corpus:
    root = tmp_path_factory.mktemp("places")
    claude = root / "claude"
    folder = _write(claude / "projects" / "-home-dev-app").parent
    planted = _planted()
    settings, memory, sessions, report = index_planted(
        root, folder, planted, "5c5c5c5c-{i:04d}-4000-8000-{i:012d}"
    )
    assert report.indexed == len(sessions) + 1, report.as_dict()
    return Corpus(claude, folder, root / "home", settings, memory, sessions, len(planted))


CLI_ENV = {"EPISODIC_DISTILLER": "heuristic", "EPISODIC_SCRATCH_MAX_PER_SESSION": "10"}


def test_scratch_database_and_recall_hold_no_planted_secret(corpus: Corpus) -> None:
    scratch = scratch_of(corpus.memory)
    assert scratch is not None
    path = Path(getattr(scratch.store, "path", ""))
    with closing(sqlite3.connect(path)) as conn:
        summaries = [row[0] for row in conn.execute("SELECT summary FROM scratch_records")]
    # every failing run's token reached scratch memory, redacted
    failures = [s for s in summaries if s.startswith("tests failed")]
    assert len(failures) == corpus.planted_runs and all("[REDACTED:" in s for s in failures), failures
    assert _leaks("\n".join(summaries)) == []
    stored = b"".join(p.read_bytes() for p in path.parent.glob(path.name + "*"))  # with -wal
    assert REDACTED in stored and _leaks(stored) == []
    recalled = cli(corpus.home, "scratch", "recall", PROMPT, **CLI_ENV)
    assert recalled.returncode == 0, recalled.stderr
    assert "[REDACTED:" in recalled.stdout and _leaks(recalled.stdout) == []
    extracted = cli(corpus.home, "scratch", "extract", "--json", "--samples", "100", str(corpus.folder))
    assert extracted.returncode == 0, extracted.stderr
    assert "[REDACTED:" in extracted.stdout and _leaks(extracted.stdout) == []


@pytest.fixture(scope="module")
def served(corpus: Corpus) -> Iterator[tuple[str, str]]:
    token = LocalTokenStore(corpus.settings.tokens_path).add("local")
    with BackgroundServer(build_endpoint(corpus.settings, corpus.memory)) as server:
        yield server.url, token


def _hook(corpus: Corpus, url: str, token: str, prompt: str) -> str:
    return injected_context(prompt, url, token, corpus.home, EPISODIC_HOOK_BUDGET_SECONDS="30")


def test_the_hooks_injected_context_holds_no_planted_secret(corpus: Corpus, served: tuple[str, str]) -> None:
    url, token = served
    planted = _planted()
    injected = []
    for n, secret in enumerate(planted[::10]):  # prompts carrying planted secrets too
        injected.append(_hook(corpus, url, token, f"{PROMPT} {n}: token {secret}"))
    injected.append(_hook(corpus, url, token, f"{PROMPT}, please fix the deploy token check"))
    injected.append(_hook(corpus, url, token, "deploy fails with these tokens, which one is rejected?"))
    context = "\n".join(injected)
    assert "Episodic memory: past sessions" in injected[-2], injected[-2]  # verified planted cards
    assert "[REDACTED:" in context, context[:2000]  # and the planted scratch records
    assert _leaks(context) == []


def test_viewer_pages_hold_no_planted_secret(corpus: Corpus) -> None:
    with BackgroundUi(Viewer(LocalSource(corpus.memory), "local")) as ui:
        cookie = {"Cookie": f"episodic_ui={ui.guard.secret}"}
        pages = []
        for path in ("/", "/queue", *(f"/episode/{s}" for s in (SESSION, *corpus.scratch_sessions))):
            request = urllib.request.Request(ui.base + path, headers=cookie)
            with urllib.request.urlopen(request, timeout=60) as response:
                assert response.status == 200, path
                pages.append(response.read())
    episode = pages[2].decode()
    assert "deploy fails with these" in episode and "[REDACTED:" in episode  # the survey pane shown
    assert _leaks(b"".join(pages)) == []


def test_dream_records_hold_no_planted_secret(corpus: Corpus) -> None:
    week = datetime(2026, 2, 1).strftime("%G-W%V")  # the planted session's week
    done = cli(
        corpus.home,
        "dream",
        "--week",
        week,
        "--offline",
        "--keep-survey",
        "--transcripts",
        str(corpus.folder),
        **CLI_ENV,
    )
    assert done.returncode == 0, done.stderr
    written = [p for p in (corpus.home / "dreams").rglob("*") if p.is_file()]
    assert written, done.stdout
    blob = b"".join(p.read_bytes() for p in written)
    assert SESSION[:8].encode() in blob, done.stdout  # the planted session was dreamt over
    assert _leaks(blob) == []


def harvested_bodies(claude: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    """What `episodic harvest` uploads from the sessions under `claude` (CLAUDE_CONFIG_DIR), to a mocked S3."""
    for name in [k for k in os.environ if k.startswith("EPISODIC_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("EPISODIC_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("HOME", str(tmp_path / "user-home"))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(claude))
    (tmp_path / "home").mkdir()
    with mock_aws():
        s3 = boto3.client("s3", region_name="us-east-1")
        s3.create_bucket(Bucket="planted")
        result = CliRunner().invoke(
            build_cli(), ["harvest", "--bucket", "planted", "--json"], catch_exceptions=False
        )
        assert result.exit_code == 0, result.output
        keys = [o["Key"] for o in s3.list_objects_v2(Bucket="planted").get("Contents", [])]
        return [s3.get_object(Bucket="planted", Key=key)["Body"].read() for key in keys]


def test_harvested_uploads_hold_no_planted_secret(
    corpus: Corpus, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bodies = harvested_bodies(corpus.claude, tmp_path, monkeypatch)
    assert len(bodies) == len(corpus.scratch_sessions) + 1
    assert all(REDACTED in body for body in bodies)
    assert _leaks(b"".join(bodies)) == []
