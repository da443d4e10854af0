"""Local cloud, end to end: `episodic harvest` scrubs a real Claude Code session and uploads it to the (moto)
bucket, S3 notifies SQS, the distill Lambda turns it into a card, and `search_traces` through the authorizer + MCP Lambda finds
it with the owner's token (a hybrid query: text and vector reach the S3 Vectors adapter), and not with
another tenant's token; the owner's agent-written card is judged against the uploaded transcript."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from episodic.cli import build_cli
from kits.lambda_env import BUCKET, PREFIX, authorize, call_tool, card, converse_reply, local_cloud

from lambdas.distill import handler as distill

TRANSCRIPT = Path("marot__spotter") / "short.jsonl"  # "mix phx.server doesnt seem to start"
PROBLEM = "Phoenix dev server (mix phx.server) does not start"


@pytest.mark.transcripts
def claude_projects_with(source: Path, root: Path) -> str:
    """A Claude Code config folder holding `source` as a finished session (outside the quiet period);
    returns its session id, the name Claude Code gives the file."""
    session_id = next(
        json.loads(line)["sessionId"] for line in source.read_text().splitlines() if '"sessionId"' in line
    )
    target = root / "projects" / "-home-marco-projects-spotter" / f"{session_id}.jsonl"
    target.parent.mkdir(parents=True)
    shutil.copyfile(source, target)
    an_hour_ago = time.time() - 3600
    os.utime(target, (an_hour_ago, an_hour_ago))
    return session_id


def test_harvested_session_is_searchable_by_its_tenant_only(
    transcripts_dir: Path, episodic_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = transcripts_dir / TRANSCRIPT
    if not source.is_file():
        pytest.skip(f"{source} not found")
    session_id = claude_projects_with(source, tmp_path / "claude")
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude"))
    with local_cloud(episodic_home) as cloud:
        assert cloud.poll_once(distill.handler) == {"batchItemFailures": []}  # the s3:TestEvent
        harvest = ["harvest", "--bucket", BUCKET, "--tenant", "acme", "--json"]
        harvested = CliRunner().invoke(build_cli(), harvest, catch_exceptions=False)
        assert harvested.exit_code == 0, harvested.output
        assert json.loads(harvested.stdout)["uploaded_sessions"] == [session_id]
        key = f"{PREFIX}acme/{session_id}.jsonl"
        uploaded = cloud.s3.head_object(Bucket=BUCKET, Key=key)["Metadata"]
        assert uploaded["session-id"] == session_id and uploaded["tenant"] == "acme"
        cloud.stub_converse(converse_reply(card(problem=PROBLEM, tags=["elixir", "phoenix", "mix"])))

        assert cloud.poll_once(distill.handler) == {"batchItemFailures": []}
        cloud.bedrock_stub.assert_no_pending_responses()

        acme, globex = cloud.add_token("acme"), cloud.add_token("globex")
        query = {"query": "phx.server will not start", "include_unverified": True}
        owner = authorize(acme)
        stranger = authorize(globex)
        assert owner["isAuthorized"] and stranger["isAuthorized"]

        answer = call_tool("search_traces", query, owner["context"])
        assert answer["headers"]["x-episodic-search-mode"] == "hybrid", answer["headers"]
        assert "x-episodic-search-reason" in answer["headers"]  # what `episodic doctor --aws` shows
        found = json.loads(answer["body"])["result"]
        other = json.loads(call_tool("search_traces", query, stranger["context"])["body"])["result"]

        hybrid = [p for op, p in cloud.vectors.calls if op == "QueryVectors"][-2]  # the owner's query
        assert hybrid["queryTexts"] == [{"text": query["query"], "metadataKey": "text"}]
        assert hybrid["queryVector"]["float32"] and hybrid["returnScores"] is True
        results = found["structuredContent"]["results"]
        assert found["isError"] is False and len(results) == 1
        assert PROBLEM in json.dumps(results[0]) and results[0]["session_id"]
        assert other["isError"] is False and other["structuredContent"]["results"] == []
        assert PROBLEM not in json.dumps(other)
        denied = authorize("epi_wrong")
        assert denied == {"isAuthorized": False}

        writer = {**owner["context"], "scopes": "read write"}
        assert results[0]["session_id"] == session_id
        arguments = {"session_id": session_id, **card(problem=PROBLEM, outcome="verified")}
        recorded = json.loads(call_tool("record_episode", arguments, writer)["body"])["result"]
        assert recorded["isError"] is False and recorded["structuredContent"]["transcript_found"] is True
        archived = cloud.s3.get_object(Bucket=BUCKET, Key=f"cards/acme/{session_id}.json")["Body"].read()
        assert json.loads(archived)["distiller"]["kind"] == "self"
