"""The prompt hook's half of scratch memory (stdlib only, like the hook): one `recall_similar` tools/call,
its packed text — the server packs it under the token cap — or '' for anything but a clean answer."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

MAX_BLOCK_CHARS = 1300  # the server's cap is 300 tokens (~1,200 characters); a larger answer is refused
HEADING = "## Prior similar attempts"

Post = Callable[[str, bytes, dict[str, str], float], bytes]


def ask_scratch(
    post: Post, url: str, token: str, query: str, timeout: float, protocol: str, approved_only: bool = False
) -> str:
    arguments: dict[str, Any] = {"query": query, "deadline_seconds": round(max(timeout - 0.05, 0.05), 3)}
    if approved_only:  # `review_required`: only sessions whose card a person approved
        arguments["approved_only"] = True
    body = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        # the server gives up when the hook would: the hook's budget, not an agent's longer deadline
        "params": {"name": "recall_similar", "arguments": arguments},
    }
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": protocol,
        "Authorization": f"Bearer {token}",
    }
    answer: Any = json.loads(post(url, json.dumps(body).encode("utf-8"), headers, timeout))
    result = answer.get("result") if isinstance(answer, dict) else None
    if not isinstance(result, dict) or result.get("isError"):
        return ""
    results = (result.get("structuredContent") or {}).get("results")
    content = result.get("content") or [{}]
    text = content[0].get("text") if isinstance(content[0], dict) else None
    if (
        not results
        or not isinstance(text, str)
        or not text.startswith(HEADING)
        or len(text) > MAX_BLOCK_CHARS
    ):
        return ""
    return text
