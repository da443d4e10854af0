"""TitanEmbedder against a real bedrock-runtime client with botocore Stubber (no network)."""

from __future__ import annotations

import io
import json
from typing import Any

import boto3
import numpy as np
import pytest
from botocore.response import StreamingBody
from botocore.stub import Stubber
from episodic.aws.titan_embedder import MAX_INPUT_CHARS, MODEL_CHAR_LIMIT, TitanEmbedder
from episodic.kernel.errors import ConfigError, InvalidArgumentError, ParityError, RetryableDistillError

MODEL = "amazon.titan-embed-text-v2:0"


def _body(payload: dict[str, Any]) -> StreamingBody:
    raw = json.dumps(payload).encode()
    return StreamingBody(io.BytesIO(raw), len(raw))


def _reply(vector: list[float], by_type: bool = True) -> dict[str, Any]:
    payload: dict[str, Any] = {"embedding": vector, "inputTextTokenCount": 7}
    if by_type:
        payload["embeddingsByType"] = {"float": vector}
    return {"body": _body(payload), "contentType": "application/json"}


def _expected(text: str, dimension: int = 1024) -> dict[str, Any]:
    body = json.dumps(
        {"inputText": text, "dimensions": dimension, "normalize": True, "embeddingTypes": ["float"]}
    )
    return {"modelId": MODEL, "body": body, "contentType": "application/json", "accept": "application/json"}


@pytest.fixture()
def client() -> Any:
    return boto3.client(
        "bedrock-runtime", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
    )


def _unit(dimension: int, seed: int) -> list[float]:
    vector = np.random.default_rng(seed).normal(size=dimension)
    return [float(x) for x in vector / np.linalg.norm(vector)]


def test_embeds_each_text_with_the_documented_body(client: Any) -> None:
    embedder = TitanEmbedder(client)
    assert embedder.id == "titan-embed-text-v2-1024" and embedder.dimension == 1024
    with Stubber(client) as stub:
        stub.add_response("invoke_model", _reply(_unit(1024, 1)), expected_params=_expected("pytest hangs"))
        stub.add_response(
            "invoke_model", _reply(_unit(1024, 2), by_type=False), expected_params=_expected("b")
        )
        vectors = embedder.embed(["pytest hangs", "b"])
        stub.assert_no_pending_responses()
    assert vectors.shape == (2, 1024) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert np.allclose(vectors[0], _unit(1024, 1), atol=1e-6)


@pytest.mark.parametrize("dimension", [512, 256])
def test_smaller_dimensions(client: Any, dimension: int) -> None:
    embedder = TitanEmbedder(client, MODEL, dimension)
    assert embedder.id == f"titan-embed-text-v2-{dimension}"
    with Stubber(client) as stub:
        stub.add_response(
            "invoke_model", _reply(_unit(dimension, 3)), expected_params=_expected("q", dimension)
        )
        assert embedder.embed(["q"]).shape == (1, dimension)


@pytest.mark.parametrize("dimension", [384, 768, 0, 2048])
def test_unsupported_dimension_is_a_config_error(client: Any, dimension: int) -> None:
    with pytest.raises(ConfigError, match="1024"):
        TitanEmbedder(client, MODEL, dimension)


def test_wrong_returned_length_is_a_parity_error(client: Any) -> None:
    with Stubber(client) as stub:
        stub.add_response("invoke_model", _reply(_unit(512, 4)))
        with pytest.raises(ParityError, match="512"):
            TitanEmbedder(client).embed(["q"])


def test_unnormalised_reply_is_renormalised(client: Any) -> None:
    with Stubber(client) as stub:
        stub.add_response("invoke_model", _reply([3.0 * x for x in _unit(256, 5)]))
        vector = TitanEmbedder(client, MODEL, 256).embed(["q"])[0]
    assert float(np.linalg.norm(vector)) == pytest.approx(1.0, abs=1e-5)


def test_zero_reply_is_rejected(client: Any) -> None:
    with Stubber(client) as stub:
        stub.add_response("invoke_model", _reply([0.0] * 256))
        with pytest.raises(ParityError, match="zero"):
            TitanEmbedder(client, MODEL, 256).embed(["q"])


def test_long_input_is_capped_below_the_model_limit(client: Any) -> None:
    assert MAX_INPUT_CHARS < MODEL_CHAR_LIMIT
    text = "word " * 20_000  # 100,000 characters
    with Stubber(client) as stub:
        stub.add_response(
            "invoke_model", _reply(_unit(1024, 6)), expected_params=_expected(text.strip()[:MAX_INPUT_CHARS])
        )
        TitanEmbedder(client).embed([text])
        stub.assert_no_pending_responses()


def test_too_many_tokens_halves_the_text_and_retries(client: Any) -> None:
    text = "x" * MAX_INPUT_CHARS
    with Stubber(client) as stub:
        stub.add_client_error(
            "invoke_model",
            "ValidationException",
            "400 Bad Request: Too many input tokens. Max input tokens: 8192",
            400,
        )
        stub.add_response(
            "invoke_model", _reply(_unit(1024, 7)), expected_params=_expected(text[: MAX_INPUT_CHARS // 2])
        )
        assert TitanEmbedder(client).embed([text]).shape == (1, 1024)


def test_throttling_retried_then_retryable(client: Any) -> None:
    sleeps: list[float] = []
    embedder = TitanEmbedder(client, max_attempts=3, sleep=sleeps.append)
    with Stubber(client) as stub:
        stub.add_client_error("invoke_model", "ThrottlingException", "slow down", 429)
        stub.add_response("invoke_model", _reply(_unit(1024, 8)))
        embedder.embed(["q"])
        for _ in range(3):
            stub.add_client_error("invoke_model", "ThrottlingException", "slow down", 429)
        with pytest.raises(RetryableDistillError, match="throttled"):
            embedder.embed(["q"])
    assert len(sleeps) == 1 + 2


def test_empty_text_is_refused_before_any_call(client: Any) -> None:
    with Stubber(client) as stub, pytest.raises(InvalidArgumentError):
        TitanEmbedder(client).embed(["   "])
        stub.assert_no_pending_responses()
    assert TitanEmbedder(client).embed([]).shape == (0, 1024)


def test_access_denied_is_a_config_error(client: Any) -> None:
    with Stubber(client) as stub:
        stub.add_client_error("invoke_model", "AccessDeniedException", "no access to this model", 403)
        with pytest.raises(ConfigError, match=r"amazon\.titan"):
            TitanEmbedder(client).embed(["q"])
