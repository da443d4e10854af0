"""The scheduled dream in the AWS deployment: the Dream Lambda reads the deployed index (S3 Vectors fake)
and the bucket's transcripts, writes with Bedrock (Stubber) under dreams/<tenant>/, and the MCP Lambda
serves the record to that tenant only. A failed Bedrock call fails the invocation with its reason."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from episodic.aws.clients import AwsClients
from episodic.cards.write import store_card
from episodic.dream import service as dream_service
from episodic.dream.service import DreamRunError
from episodic.kernel.models import Card, DistillerInfo, Outcome, SessionSource, Trajectory
from kits.dream_kit import bedrock_tool_reply
from kits.lambda_env import BUCKET, FIXTURE_SESSION, LambdaContext, LocalCloud, call_tool, local_cloud

from lambdas.dream import handler as dream_handler
from lambdas.mcp import handler as mcp

DAYS = ("2026-07-21T09:00:00+00:00", "2026-07-23T09:00:00+00:00", "2026-07-26T09:00:00+00:00")


def _trajectory(session_id: str, when: str) -> Trajectory:
    source = SessionSource(session_key=session_id, main_path=f"s3://{BUCKET}/{session_id}.jsonl")
    started = datetime.fromisoformat(when)
    return Trajectory(
        session_id=session_id, source=source, source_sha256="1" * 64, project="app", started_at=started
    )


@pytest.fixture()
def cloud(episodic_home: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[LocalCloud]:
    with local_cloud(episodic_home) as c:
        memory = mcp.runtime().memory
        memory.store.ensure_manifest(memory.manifest)
        c.upload_session("acme")  # one real transcript in the bucket; the other two sessions are cards only
        for n, (sid, when) in enumerate(zip([FIXTURE_SESSION, "acme-2", "acme-3"], DAYS, strict=True)):
            store_card(
                memory,
                "acme",
                Card(
                    problem="Phoenix dev server does not start after a dependency upgrade",
                    key_decisions=["pin the dependency"],
                    outcome=Outcome.UNVERIFIED if n == 2 else Outcome.VERIFIED,
                    tags=["elixir", "phoenix"],
                ),
                session_id=sid,
                distiller=DistillerInfo(kind="bedrock", model="m"),
                trajectory=_trajectory(sid, when),
            )
        runtime = mcp.runtime()
        clients = AwsClients(s3=c.s3, s3vectors=c.vectors, bedrock_runtime=c.bedrock)
        dream_handler.set_runtime(dream_handler.DreamRuntime(runtime.settings, clients, runtime.memory))
        real = dream_service.dream_tenants
        monkeypatch.setattr(
            dream_handler,
            "dream_tenants",
            lambda *a, **kw: real(*a, **kw, now=datetime(2026, 7, 29, tzinfo=UTC)),
        )
        try:
            yield c
        finally:
            dream_handler.set_runtime(None)


def test_the_scheduled_run_writes_the_weeks_record_in_the_bucket_and_mcp_serves_it(cloud: LocalCloud) -> None:
    cloud.stub_converse(
        bedrock_tool_reply(
            {
                "label": "Phoenix startup after upgrades",
                "summary": "dependency pinning",
                "decisions": [
                    {"text": "pin the dependency rather than patch it", "sessions": [FIXTURE_SESSION]}
                ],
                "unfinished": [
                    {
                        "text": "the upgrade path is untested",
                        "sessions": ["acme-3"],
                        "carry_over_cost": "the next upgrade repeats the hunt",
                    }
                ],
                "insights": [
                    {
                        "text": "a changed default broke startup",
                        "sessions": [FIXTURE_SESSION],
                        "verified": True,
                    }
                ],
                "risks": [],
            }
        ),
        bedrock_tool_reply(
            {
                "sentences": [
                    {"text": "The week went to keeping the Phoenix server starting.", "sessions": ["acme-2"]}
                ]
            }
        ),
    )
    result = dream_handler.handler({"tenants": ["acme"]}, LambdaContext())
    cloud.bedrock_stub.assert_no_pending_responses()
    weeks = result["tenants"]["acme"]
    assert [w["week"] for w in weeks] == ["2026-W30"] and weeks[0]["status"] == "written"
    assert weeks[0]["phases"]["survey"] == {
        "sessions": 3,
        "transcripts_found": 1,
        "survey_bytes": weeks[0]["phases"]["survey"]["survey_bytes"],
        "raw_bytes": weeks[0]["phases"]["survey"]["raw_bytes"],
    }
    body = cloud.s3.get_object(Bucket=BUCKET, Key="dreams/acme/2026-W30.md")["Body"].read().decode()
    assert "mode: llm:bedrock:" in body and "pin the dependency rather than patch it" in body
    assert cloud.s3.get_object(Bucket=BUCKET, Key="dreams/acme/2026-W30.synthesis.md")

    served = call_tool("get_dream_record", {}, {"tenant": "acme", "scopes": "read"})
    payload = json.loads(served["body"])["result"]
    assert not payload["isError"] and payload["structuredContent"]["week"] == "2026-W30"
    other = call_tool("get_dream_record", {}, {"tenant": "globex", "scopes": "read"})
    assert json.loads(other["body"])["result"]["isError"]


def test_a_failed_bedrock_call_fails_the_invocation_with_its_reason(cloud: LocalCloud) -> None:
    cloud.bedrock_stub.add_client_error(
        "converse", service_error_code="ValidationException", service_message="bad input"
    )
    with pytest.raises(
        DreamRunError, match=r"acme: dream 2026-W30: the extract phase failed: .*ValidationException"
    ):
        dream_handler.handler({"tenants": ["acme"]}, LambdaContext())
    listed = cloud.s3.list_objects_v2(Bucket=BUCKET, Prefix="dreams/")
    assert listed.get("KeyCount", 0) == 0


def test_by_hand_against_the_deployed_store_the_bucket_adapters_are_chosen(cloud: LocalCloud) -> None:
    from episodic.assembly.dream import dream_adapters
    from episodic.aws.dream_archive import S3Archive
    from episodic.aws.dream_source import BucketWeekSource

    runtime = mcp.runtime()
    clients = AwsClients(s3=cloud.s3, s3vectors=cloud.vectors, bedrock_runtime=cloud.bedrock)
    adapters = dream_adapters(runtime.settings, None, clients)
    source = adapters.source
    assert isinstance(source, BucketWeekSource) and isinstance(adapters.archive, S3Archive)
    week = source.sessions("acme", datetime(2026, 7, 20, tzinfo=UTC), datetime(2026, 7, 27, tzinfo=UTC))
    assert [d.transcript_found for d in week] == [True, False, False]  # the one uploaded transcript is read
    assert week[0].prompts and source.earliest("acme") == datetime.fromisoformat(DAYS[0])
