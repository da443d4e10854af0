"""`episodic doctor --aws`: ask the deployed MCP endpoint which S3 Vectors search it runs.

The MCP Lambda answers every request with `x-episodic-search-mode` (hybrid | vector-only) and
`x-episodic-search-reason`; one authenticated search_traces call reads them. The endpoint comes from the
stack outputs `setup aws` recorded, the token from `EPISODIC_TOKEN` / the config (`settings.token`).
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Callable
from urllib.parse import urlsplit

from episodic.aws.search_mode import HYBRID, SEARCH_MODE_HEADER, SEARCH_REASON_HEADER, VECTOR_ONLY
from episodic.cli.doctor import FAIL, OK, PROBE_QUERY, Check
from episodic.hooks.server_client import PROTOCOL_VERSION
from episodic.kernel.errors import EpisodicError
from episodic.kernel.settings import Settings
from episodic.mcp.protocol import LOCAL_HOSTS

VECTOR_ONLY_FIX = (
    "redeploy with the current stack (`npx cdk deploy`: it bundles botocore >= 1.44.8) into an index created "
    "ENHANCED with full-text search on `text`; the reason above names which of the two is missing"
)
# (url, body, headers, timeout) -> (status, lower-cased response headers)
Post = Callable[[str, bytes, dict[str, str], float], tuple[int, dict[str, str]]]


def post_json(url: str, body: bytes, headers: dict[str, str], timeout: float) -> tuple[int, dict[str, str]]:
    request = urllib.request.Request(url, data=body, method="POST", headers=headers)
    local = (urlsplit(url).hostname or "") in LOCAL_HOSTS  # a loopback endpoint is never proxied
    opener = (
        urllib.request.build_opener(urllib.request.ProxyHandler({}))
        if local
        else urllib.request.build_opener()
    )
    try:
        with opener.open(request, timeout=timeout) as response:
            return response.status, {k.lower(): v for k, v in response.headers.items()}
    except urllib.error.HTTPError as exc:
        return exc.code, {k.lower(): v for k, v in exc.headers.items()}
    except urllib.error.URLError as exc:  # a connect timeout arrives wrapped: report it as a timeout
        if isinstance(exc.reason, TimeoutError):
            raise TimeoutError(str(exc.reason)) from exc
        raise


def deployed_endpoint(settings: Settings) -> str | None:
    from episodic.harvest.state import read_stack_outputs

    url = read_stack_outputs(settings.home).get("McpEndpoint")
    return str(url) if url else None


def check_search_mode(settings: Settings, post: Post = post_json, timeout: float = 15.0) -> Check:
    """Hybrid: ok. Vector-only: fail, with the reason the function gave and the fix."""
    name = "search mode"
    try:
        url = deployed_endpoint(settings)
    except EpisodicError as exc:
        return Check(name, FAIL, str(exc), "`episodic setup aws --outputs cdk-outputs.json`")
    if not url:
        detail = "no deployed endpoint recorded (no McpEndpoint in the stack outputs)"
        return Check(name, FAIL, detail, "`episodic setup aws --outputs cdk-outputs.json` after `cdk deploy`")
    if not settings.token:
        return Check(name, FAIL, f"no token to call {url}", "set EPISODIC_TOKEN (`episodic token add --aws`)")
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "search_traces", "arguments": {"query": PROBE_QUERY, "k": 1}},
    }
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": PROTOCOL_VERSION,
        "Authorization": f"Bearer {settings.token}",
    }
    try:
        status, answer = post(url, json.dumps(body).encode("utf-8"), headers, timeout)
    except TimeoutError:
        return Check(
            name, FAIL, f"{url} did not answer within {timeout:g} s (a timeout)", "retry; check the API"
        )
    except OSError as exc:
        return Check(name, FAIL, f"cannot reach {url}: {exc}", f"check that {url} is up and reachable")
    if status in (401, 403):
        return Check(
            name,
            FAIL,
            f"{url} refused the token (HTTP {status})",
            "a valid token: `episodic token add --aws`",
        )
    mode, reason = answer.get(SEARCH_MODE_HEADER), answer.get(SEARCH_REASON_HEADER, "")
    why = f" ({reason})" if reason else ""
    if mode == HYBRID:
        return Check(name, OK, f"{url} runs hybrid search (text + vector){why}")
    if mode == VECTOR_ONLY:
        return Check(name, FAIL, f"{url} runs vector-only search{why}", VECTOR_ONLY_FIX)
    detail = (
        f"{url} answered HTTP {status} without a {SEARCH_MODE_HEADER} header (a deployment older than it)"
    )
    return Check(name, FAIL, detail, "redeploy with the current stack (`npx cdk deploy`)")


def run_aws_checks(settings: Settings, post: Post = post_json) -> list[Check]:
    """The deployment this machine was set up for: the last harvest's mark, then the search mode."""
    from episodic.cli.doctor import check_harvest

    harvest = check_harvest(settings)
    return [*([harvest] if harvest else []), check_search_mode(settings, post)]
