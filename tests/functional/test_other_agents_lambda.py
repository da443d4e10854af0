"""Harvest's body for a Gemini CLI session (an older one-document JSON file) and for a Codex rollout goes
through the distill Lambda like a Claude Code session: parsed by content, carded, indexed with its agent."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from episodic.harvest.body import build_body, read_source_files
from episodic.kernel.models import SessionSource
from episodic.scrub import default_scrubber
from kits.lambda_env import BUCKET, PREFIX, LocalCloud, card, converse_reply, local_cloud

from lambdas.distill import handler as distill

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "agents"
GEMINI_SESSION = "5e551011-aaaa-bbbb-cccc-000000000009"
CODEX_SESSION = "01a231d2-5845-7171-b1d1-c83bdd7304e5"


@pytest.fixture()
def cloud(episodic_home: Path) -> Iterator[LocalCloud]:
    with local_cloud(episodic_home) as c:
        yield c


def gemini_document(tmp_path: Path) -> Path:
    document = {
        "sessionId": GEMINI_SESSION,
        "projectHash": "0" * 64,
        "startTime": "2026-03-02T09:00:00Z",
        "messages": [
            {
                "id": "m1",
                "timestamp": "2026-03-02T09:00:01Z",
                "type": "user",
                "content": "make the build pass",
            },
            {
                "id": "m2",
                "timestamp": "2026-03-02T09:00:02Z",
                "type": "gemini",
                "content": "The build passes now.",
                "toolCalls": [
                    {
                        "id": "s1",
                        "name": "run_shell_command",
                        "args": {"command": "go build ./..."},
                        "status": "success",
                        "result": [
                            {"functionResponse": {"id": "s1", "response": {"output": "Exit Code: 0"}}}
                        ],
                    }
                ],
            },
        ],
    }
    path = tmp_path / f"{GEMINI_SESSION}.json"
    path.write_text(json.dumps(document, indent=2))
    return path


def upload_harvested(cloud: LocalCloud, tenant: str, session: str, path: Path) -> None:
    """The object `harvest` would upload: every record scrubbed, a JSON document as one line."""
    files, sha = read_source_files(SessionSource(session_key=session, main_path=str(path)))
    body = build_body(files, sha, default_scrubber())
    assert body.lines >= 1 and body.dropped_lines == 0
    cloud.s3.put_object(Bucket=BUCKET, Key=f"{PREFIX}{tenant}/{session}.jsonl", Body=body.file.read())
    body.close()


def test_gemini_and_codex_sessions_are_distilled_by_the_lambda(cloud: LocalCloud, tmp_path: Path) -> None:
    assert cloud.poll_once(distill.handler) == {"batchItemFailures": []}  # S3's test event
    upload_harvested(cloud, "acme", GEMINI_SESSION, gemini_document(tmp_path))
    upload_harvested(cloud, "acme", CODEX_SESSION, FIXTURES / "codex-0.171-answered-rollout.jsonl")
    cloud.stub_converse(converse_reply(card()))
    cloud.stub_converse(converse_reply(card()))
    while cloud.poll_once(distill.handler) is not None:
        pass
    store = distill.runtime().memory.store
    gemini = store.get("acme", GEMINI_SESSION)
    codex = store.get("acme", CODEX_SESSION)
    assert gemini is not None and gemini.agent == "gemini"
    assert codex is not None and codex.agent == "codex"
