"""One retry budget for Bedrock: botocore sends each call once, the distiller's backoff is the only loop
(a throttled Converse is 5 HTTP requests, not 5 x botocore's own retries), and every call has timeouts."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import boto3
import pytest
from episodic.aws.bedrock_distiller import BedrockDistiller
from episodic.aws.clients import client_config
from episodic.kernel.errors import RetryableDistillError


class _Throttling(BaseHTTPRequestHandler):
    requests = 0

    def do_POST(self) -> None:
        type(self).requests += 1
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        body = json.dumps({"message": "Too many requests"}).encode()
        self.send_response(429)
        self.send_header("Content-Type", "application/json")
        self.send_header("x-amzn-ErrorType", "ThrottlingException")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_args: Any) -> None:
        pass


@pytest.fixture()
def endpoint() -> Iterator[str]:
    _Throttling.requests = 0
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Throttling)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _client(endpoint: str, config: Any) -> Any:
    return boto3.client(
        "bedrock-runtime",
        region_name="us-east-1",
        endpoint_url=endpoint,
        aws_access_key_id="test",
        aws_secret_access_key="test",
        config=config,
    )


def test_the_bedrock_client_is_bounded_and_does_not_retry_on_its_own() -> None:
    config = client_config("bedrock-runtime")
    assert config.connect_timeout == 5 and config.read_timeout == 120
    assert config.retries == {"mode": "standard", "total_max_attempts": 1}  # the first request, no retry


def test_a_throttled_converse_costs_the_distillers_attempts_and_no_more(
    endpoint: str, episodic_home: Path
) -> None:
    distiller = BedrockDistiller(
        _client(endpoint, client_config("bedrock-runtime")),
        "us.anthropic.claude-sonnet-4-6",
        max_attempts=5,
        sleep=lambda _s: None,
    )
    with pytest.raises(RetryableDistillError, match="throttled"):
        distiller.distill(None, "a survey")  # type: ignore[arg-type]  # the first call never returns
    assert _Throttling.requests == 5
    # botocore's default would have retried each of those five on its own
    _Throttling.requests = 0
    with pytest.raises(Exception, match="Throttling"):
        _client(endpoint, None).converse(modelId="m", messages=[{"role": "user", "content": [{"text": "x"}]}])
    assert _Throttling.requests > 1
