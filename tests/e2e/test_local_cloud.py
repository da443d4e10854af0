"""Local cloud, end to end: a real Claude Code transcript is put into the (moto) bucket, S3 notifies SQS,
the distill Lambda turns it into a card, and `search_traces` through the authorizer + MCP Lambda finds
it with the owner's token (a hybrid query: text and vector reach the S3 Vectors adapter), and not with
another tenant's token; the owner's agent-written card is judged against the uploaded transcript."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "functional"))  # the shared local-cloud kit

from lambda_env import BUCKET, PREFIX, authorize, call_tool, card, converse_reply, local_cloud

from lambdas.distill import handler as distill

TRANSCRIPT = Path("marot__spotter") / "short.jsonl"  # "mix phx.server doesnt seem to start"
PROBLEM = "Phoenix dev server (mix phx.server) does not start"


@pytest.mark.transcripts
def test_transcript_in_bucket_is_searchable_by_its_tenant_only(
    transcripts_dir: Path, episodic_home: Path
) -> None:
    source = transcripts_dir / TRANSCRIPT
    if not source.is_file():
        pytest.skip(f"{source} not found")
    with local_cloud(episodic_home) as cloud:
        assert cloud.poll_once(distill.handler) == {"batchItemFailures": []}  # the s3:TestEvent
        # named by its session id, as `harvest` names uploads (record_episode finds it by that id)
        session_id = next(
            json.loads(line)["sessionId"] for line in source.read_text().splitlines() if '"sessionId"' in line
        )
        key = f"{PREFIX}acme/{session_id}.jsonl"
        cloud.s3.put_object(Bucket=BUCKET, Key=key, Body=source.read_bytes())
        cloud.stub_converse(converse_reply(card(problem=PROBLEM, tags=["elixir", "phoenix", "mix"])))

        assert cloud.poll_once(distill.handler) == {"batchItemFailures": []}
        cloud.bedrock_stub.assert_no_pending_responses()

        acme, globex = cloud.add_token("acme"), cloud.add_token("globex")
        query = {"query": "phx.server will not start", "include_unverified": True}
        owner = authorize(acme)
        stranger = authorize(globex)
        assert owner["isAuthorized"] and stranger["isAuthorized"]

        found = json.loads(call_tool("search_traces", query, owner["context"])["body"])["result"]
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
