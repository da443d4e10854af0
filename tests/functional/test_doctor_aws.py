"""`episodic doctor --aws` against an in-process HTTP server on loopback that answers like the MCP Lambda
behind API Gateway: the `x-episodic-search-mode` header (and its reason) decides the check."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from episodic.cli import build_cli

TOKEN = "epi_test_doctor_aws"


class FakeDeployment:
    """What the deployed endpoint answers: a search mode and reason, or no header (an old deployment)."""

    def __init__(self) -> None:
        self.mode: str | None = "hybrid"
        self.reason = "index ENHANCED with text search on `text`; botocore 1.44.8"
        self.requests: list[dict[str, Any]] = []


@pytest.fixture()
def deployment(episodic_home: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeDeployment]:
    fake = FakeDeployment()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            fake.requests.append({"body": body, "authorization": self.headers.get("Authorization")})
            if self.headers.get("Authorization") != f"Bearer {TOKEN}":
                self.send_response(401)  # API Gateway's answer when the authorizer denies
                self.end_headers()
                return
            answer = json.dumps({"jsonrpc": "2.0", "id": body["id"], "result": {"isError": False}}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            if fake.mode:
                self.send_header("x-episodic-search-mode", fake.mode)
                self.send_header("x-episodic-search-reason", fake.reason)
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, format: str, *args: Any) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.server_address[1]}/mcp"
    outputs = {"TranscriptsBucketName": "b-123", "EndpointUrl": url}
    cdk_outputs = episodic_home.parent / "cdk-outputs.json"
    cdk_outputs.write_text(json.dumps({"EpisodicStack": outputs}))
    recorded = CliRunner().invoke(build_cli(), ["setup", "aws", "--outputs", str(cdk_outputs)])
    assert recorded.exit_code == 0, recorded.output
    monkeypatch.setenv("EPISODIC_TOKEN", TOKEN)
    try:
        yield fake
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=30)


def _doctor(*extra: str) -> Any:
    return CliRunner().invoke(build_cli(), ["doctor", "--aws", *extra], catch_exceptions=False)


def _search_check(output: str) -> dict[str, Any]:
    return next(c for c in json.loads(output) if c["name"] == "search mode")


def test_hybrid_deployment_passes_and_names_its_reason(deployment: FakeDeployment) -> None:
    result = _doctor()
    assert "[ok  ] search mode:" in result.output and "runs hybrid search" in result.output
    assert "ENHANCED" in result.output  # the reason the function gave
    (request,) = deployment.requests
    assert request["body"]["method"] == "tools/call" and request["body"]["params"]["name"] == "search_traces"
    assert request["authorization"] == f"Bearer {TOKEN}"


def test_vector_only_deployment_fails_with_the_fix(deployment: FakeDeployment) -> None:
    deployment.mode = "vector-only"
    deployment.reason = (
        "botocore 1.40.0 lacks QueryVectors queryTexts, returnScores: bundle botocore >= 1.44.8"
    )
    result = _doctor("--json")
    assert result.exit_code == 1
    check = _search_check(result.stdout)
    assert (
        check["status"] == "fail"
        and "vector-only" in check["detail"]
        and "botocore 1.40.0" in check["detail"]
    )
    assert "cdk deploy" in check["fix"]


def test_deployment_without_the_header_fails_as_out_of_date(deployment: FakeDeployment) -> None:
    deployment.mode = None
    check = _search_check(_doctor("--json").stdout)
    assert check["status"] == "fail" and "without a x-episodic-search-mode header" in check["detail"]


def test_refused_token_is_named(deployment: FakeDeployment, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EPISODIC_TOKEN", "epi_wrong")
    check = _search_check(_doctor("--json").stdout)
    assert check["status"] == "fail" and "refused the token (HTTP 401)" in check["detail"]
    assert "token add --aws" in check["fix"]


def test_without_recorded_outputs_it_says_to_run_setup_aws(episodic_home: Path) -> None:
    result = _doctor()
    assert result.exit_code == 1
    assert (
        "no deployed endpoint recorded" in result.output and "episodic setup aws --outputs" in result.output
    )


def test_a_timeout_is_reported_as_a_timeout(episodic_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from episodic.cli.doctor_aws import check_search_mode
    from episodic.kernel.settings import load_settings

    (episodic_home / "aws-outputs.json").write_text(json.dumps({"McpEndpoint": "https://api.example/mcp"}))
    monkeypatch.setenv("EPISODIC_TOKEN", TOKEN)

    def stalls(url: str, body: bytes, headers: dict[str, str], timeout: float) -> tuple[int, dict[str, str]]:
        raise TimeoutError("timed out")

    check = check_search_mode(load_settings(), post=stalls, timeout=15)
    assert check.status == "fail" and "did not answer within 15 s (a timeout)" in check.detail
