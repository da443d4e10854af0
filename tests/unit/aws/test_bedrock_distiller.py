"""BedrockDistiller against a real bedrock-runtime client with botocore Stubber (no network)."""

from __future__ import annotations

from typing import Any

import boto3
import pytest
from botocore.stub import ANY, Stubber
from episodic.aws.bedrock_distiller import TOOL_NAME, BedrockDistiller, strict_tool_schema, tool_config
from episodic.distill.prompt import DISTILL_SYSTEM_PROMPT, survey_message
from episodic.kernel.errors import ConfigError, DistillError, RetryableDistillError
from episodic.kernel.models import Card, Event, Outcome, SessionSource, ToolCall, Trajectory
from episodic.plumbing.marker import DISTILLER_MARKER

MODEL = "us.anthropic.claude-sonnet-4-6"
SURVEY = "User: the nightly import job hangs after the database upgrade.\nAssistant: ran the tests..."


def _card(**overrides: Any) -> dict[str, Any]:
    card = {
        "problem": "Nightly import job hangs forever after the database upgrade",
        "steps": ["Reproduced the hang with a small import", "Found the connection pool waiting on a lock"],
        "key_decisions": ["Raised the pool timeout instead of the pool size, because the lock was the cause"],
        "insight": "The upgrade changed the default lock timeout to infinite.",
        "dead_ends": ["Bumping the pool size changed nothing"],
        "misleading_intuitions": ["The network looked guilty but the latency was normal"],
        "critical_checks": ["Watching the lock table during the import showed the waiting session"],
        "outcome": "verified",
        "tags": ["postgres", "python", "hang"],
    }
    card.update(overrides)
    return card


def _trajectory(passing_check: bool) -> Trajectory:
    edit = ToolCall(id="t1", name="Edit", input={"file_path": "src/importer.py"}, file_path="src/importer.py")
    events = [Event(kind="prompt", text="the import hangs"), Event(kind="tool", tool=edit)]
    if passing_check:
        test = ToolCall(id="t2", name="Bash", command="pytest -q", output="12 passed in 1.2s", exit_code=0)
        events.append(Event(kind="tool", tool=test))
    events.append(Event(kind="assistant", text="Fixed."))
    return Trajectory(
        session_id="s-1",
        source=SessionSource(session_key="s-1", main_path="x.jsonl"),
        source_sha256="0" * 64,
        events=events,
        tool_calls=[e.tool for e in events if e.tool],
    )


def _reply(card: dict[str, Any] | None, *, tool_id: str = "tu-1", stop: str = "tool_use") -> dict[str, Any]:
    content: list[dict[str, Any]] = (
        [{"toolUse": {"toolUseId": tool_id, "name": TOOL_NAME, "input": card}}]
        if card is not None
        else [{"text": "no"}]
    )
    return {
        "output": {"message": {"role": "assistant", "content": content}},
        "stopReason": stop,
        "usage": {"inputTokens": 4000, "outputTokens": 500, "totalTokens": 4500},
        "metrics": {"latencyMs": 900},
    }


def _expected(messages: Any = ANY) -> dict[str, Any]:
    return {
        "modelId": MODEL,
        "system": [{"text": DISTILL_SYSTEM_PROMPT}],
        "messages": messages,
        "inferenceConfig": {"maxTokens": 2000, "temperature": 0.0},
        "toolConfig": tool_config(),
    }


def _first_turn() -> list[dict[str, Any]]:
    return [{"role": "user", "content": [{"text": survey_message(SURVEY)}]}]


@pytest.fixture()
def client() -> Any:
    return boto3.client(
        "bedrock-runtime", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
    )


def _distiller(client: Any, sleeps: list[float] | None = None) -> BedrockDistiller:
    return BedrockDistiller(client, MODEL, sleep=(sleeps.append if sleeps is not None else lambda _s: None))


def test_request_shape_and_valid_card(client: Any) -> None:
    with Stubber(client) as stub:
        stub.add_response("converse", _reply(_card()), expected_params=_expected(_first_turn()))
        result = _distiller(client).distill(_trajectory(passing_check=True), SURVEY)
        stub.assert_no_pending_responses()
    assert result.card.outcome is Outcome.VERIFIED
    assert result.card.problem.startswith("Nightly import job hangs")
    assert result.usage.input_tokens == 4000 and result.usage.output_tokens == 500
    assert result.usage.cost_usd == pytest.approx(4000 * 3 / 1e6 + 500 * 15 / 1e6)
    assert result.notes == []


def test_tool_config_forces_the_strict_card_tool() -> None:
    config = tool_config()
    spec = config["tools"][0]["toolSpec"]
    assert spec["name"] == TOOL_NAME and spec["strict"] is True
    assert config["toolChoice"] == {"tool": {"name": TOOL_NAME}}
    schema = spec["inputSchema"]["json"]
    full = Card.json_schema()
    assert schema["required"] == full["required"] and schema["additionalProperties"] is False
    assert set(schema["properties"]) == set(full["properties"])
    assert schema["properties"]["outcome"]["enum"] == [o.value for o in Outcome]
    # limits strict tools reject are moved into the descriptions, and checked client-side
    assert "maxLength" not in str(schema) and "maxItems" not in str(schema)
    assert "at most 600 characters" in schema["properties"]["problem"]["description"]
    assert strict_tool_schema(full) == schema
    assert DISTILL_SYSTEM_PROMPT.startswith(DISTILLER_MARKER)
    for rule in ("No code, no file paths, no stack traces", "Hedged endings", "after the last edit"):
        assert rule in DISTILL_SYSTEM_PROMPT


def test_invalid_then_repaired_sends_the_error_back(client: Any) -> None:
    bad = _card(outcome="probably-fine")
    repair_turn = [
        *_first_turn(),
        {
            "role": "assistant",
            "content": [{"toolUse": {"toolUseId": "tu-1", "name": TOOL_NAME, "input": bad}}],
        },
        {
            "role": "user",
            "content": [{"toolResult": {"toolUseId": "tu-1", "content": [{"text": ANY}], "status": "error"}}],
        },
    ]
    with Stubber(client) as stub:
        stub.add_response("converse", _reply(bad), expected_params=_expected(_first_turn()))
        stub.add_response("converse", _reply(_card(), tool_id="tu-2"), expected_params=_expected(repair_turn))
        result = _distiller(client).distill(_trajectory(passing_check=True), SURVEY)
        stub.assert_no_pending_responses()
    assert result.card.outcome is Outcome.VERIFIED
    assert result.notes and "repaired after" in result.notes[0] and "outcome" in result.notes[0]
    assert result.usage.input_tokens == 8000  # both calls are counted


def test_invalid_twice_raises_distill_error_with_reason(client: Any) -> None:
    with Stubber(client) as stub:
        stub.add_response("converse", _reply(_card(problem="")))
        stub.add_response("converse", _reply(_card(problem=""), tool_id="tu-2"))
        with pytest.raises(DistillError, match="problem"):
            _distiller(client).distill(_trajectory(passing_check=True), SURVEY)
        stub.assert_no_pending_responses()


def test_no_tool_call_is_repaired_with_a_text_turn(client: Any) -> None:
    repair_turn = [
        *_first_turn(),
        {"role": "assistant", "content": [{"text": "no"}]},
        {"role": "user", "content": [{"text": ANY}]},
    ]
    with Stubber(client) as stub:
        stub.add_response("converse", _reply(None, stop="end_turn"))
        stub.add_response("converse", _reply(_card()), expected_params=_expected(repair_turn))
        result = _distiller(client).distill(_trajectory(passing_check=True), SURVEY)
    assert result.card.tags == ["postgres", "python", "hang"]


def test_card_with_a_file_path_is_repaired_or_rejected(client: Any) -> None:
    with_path = _card(steps=["Edited src/app/importer.py to raise the timeout"])
    with Stubber(client) as stub:
        stub.add_response("converse", _reply(with_path))
        stub.add_response("converse", _reply(_card(), tool_id="tu-2"))
        result = _distiller(client).distill(_trajectory(passing_check=True), SURVEY)
    assert "file path" in result.notes[0]
    assert all("/" not in step for step in result.card.steps)
    with Stubber(client) as stub:
        stub.add_response("converse", _reply(with_path))
        stub.add_response("converse", _reply(with_path, tool_id="tu-2"))
        with pytest.raises(DistillError, match="file path"):
            _distiller(client).distill(_trajectory(passing_check=True), SURVEY)


def test_verified_is_downgraded_without_evidence(client: Any) -> None:
    with Stubber(client) as stub:
        stub.add_response("converse", _reply(_card(outcome="verified")))
        result = _distiller(client).distill(_trajectory(passing_check=False), SURVEY)
    assert result.card.outcome is Outcome.UNVERIFIED
    assert any("downgraded" in note for note in result.notes)


def test_unverified_is_never_upgraded(client: Any) -> None:
    with Stubber(client) as stub:
        stub.add_response("converse", _reply(_card(outcome="unverified")))
        result = _distiller(client).distill(_trajectory(passing_check=True), SURVEY)
    assert result.card.outcome is Outcome.UNVERIFIED


def test_throttling_is_retried_with_backoff(client: Any) -> None:
    sleeps: list[float] = []
    with Stubber(client) as stub:
        stub.add_client_error("converse", "ThrottlingException", "Too many requests", 429)
        stub.add_client_error("converse", "ServiceUnavailableException", "busy", 503)
        stub.add_response("converse", _reply(_card()))
        result = _distiller(client, sleeps).distill(_trajectory(passing_check=True), SURVEY)
    assert result.card.outcome is Outcome.VERIFIED
    assert len(sleeps) == 2 and sleeps[1] > 0


def test_throttling_exhausted_is_retryable(client: Any) -> None:
    distiller = BedrockDistiller(client, MODEL, max_attempts=3, sleep=lambda _s: None)
    with Stubber(client) as stub:
        for _ in range(3):
            stub.add_client_error("converse", "ModelNotReadyException", "warming up", 429)
        with pytest.raises(RetryableDistillError, match="ModelNotReadyException"):
            distiller.distill(_trajectory(passing_check=True), SURVEY)


def test_bare_model_id_rejected_by_bedrock_gets_a_clear_error(client: Any) -> None:
    distiller = BedrockDistiller(client, "anthropic.claude-sonnet-4-6", sleep=lambda _s: None)
    message = (
        "Invocation of model ID anthropic.claude-sonnet-4-6 with on-demand throughput isn't supported. "
        "Retry your request with the ID or ARN of an inference profile that contains this model."
    )
    with Stubber(client) as stub:
        stub.add_client_error("converse", "ValidationException", message, 400)
        with pytest.raises(ConfigError, match=r"us\.anthropic\.claude-sonnet-4-6"):
            distiller.distill(_trajectory(passing_check=True), SURVEY)


@pytest.mark.parametrize("model_id", ["claude-sonnet-4-6", "sonnet", ""])
def test_model_id_without_prefix_is_a_config_error(client: Any, model_id: str) -> None:
    with pytest.raises(ConfigError, match="anthropic"):
        BedrockDistiller(client, model_id)


@pytest.mark.parametrize(
    "model_id",
    [
        "us.anthropic.claude-sonnet-4-6",
        "global.anthropic.claude-sonnet-4-6",
        "anthropic.claude-haiku-4-5-20251001-v1:0",
        "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-sonnet-4-6",
    ],
)
def test_accepted_model_ids(client: Any, model_id: str) -> None:
    distiller = BedrockDistiller(client, model_id)
    assert distiller.info.kind == "bedrock" and distiller.info.model == model_id


def test_haiku_price(client: Any) -> None:
    distiller = BedrockDistiller(client, "us.anthropic.claude-haiku-4-5-20251001-v1:0", sleep=lambda _s: None)
    with Stubber(client) as stub:
        stub.add_response("converse", _reply(_card(outcome="unverified")))
        result = distiller.distill(_trajectory(passing_check=True), SURVEY)
    assert result.usage.cost_usd == pytest.approx(4000 * 1 / 1e6 + 500 * 5 / 1e6)


def test_access_denied_is_a_config_error(client: Any) -> None:
    with Stubber(client) as stub:
        stub.add_client_error("converse", "AccessDeniedException", "You don't have access to the model", 403)
        with pytest.raises(ConfigError, match="model access"):
            _distiller(client).distill(_trajectory(passing_check=True), SURVEY)
