"""The dream's `DreamModel` on Bedrock: Claude through Converse, the answer's schema forced through one
strict tool (the client is given, never created)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from episodic.aws._calls import with_backoff
from episodic.aws.bedrock_distiller import strict_tool_schema
from episodic.dream.port import DreamModel


class BedrockDreamModel(DreamModel):
    """Claude on Bedrock: Converse with the schema forced through one strict tool."""

    TOOL = "emit"

    def __init__(
        self,
        client: Any,
        model_id: str,
        max_tokens: int = 3000,
        *,
        attempts: int = 4,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.client = client
        self.model_id = model_id
        self.max_tokens = max_tokens
        self.attempts = attempts
        self.sleep = sleep
        self.id = f"bedrock:{model_id}"

    def complete(self, system: str, prompt: str, schema: dict[str, Any]) -> Any:
        response = with_backoff(
            lambda: self._converse(system, prompt, schema), attempts=self.attempts, sleep=self.sleep
        )
        if response.get("stopReason") == "max_tokens":
            raise ValueError("the answer was cut at the token limit")
        for block in response.get("output", {}).get("message", {}).get("content", []) or []:
            if block.get("toolUse", {}).get("name") == self.TOOL:
                return block["toolUse"].get("input")
        raise ValueError(f"no {self.TOOL} tool call in the reply (stopReason={response.get('stopReason')})")

    def _converse(self, system: str, prompt: str, schema: dict[str, Any]) -> dict[str, Any]:
        response: dict[str, Any] = self.client.converse(
            modelId=self.model_id,
            system=[{"text": system}],
            messages=[{"role": "user", "content": [{"text": prompt}]}],
            inferenceConfig={"maxTokens": self.max_tokens, "temperature": 0.0},
            toolConfig={
                "tools": [
                    {
                        "toolSpec": {
                            "name": self.TOOL,
                            "description": "Return the answer.",
                            "strict": True,
                            "inputSchema": {"json": strict_tool_schema(schema)},
                        }
                    }
                ],
                "toolChoice": {"tool": {"name": self.TOOL}},
            },
        )
        return response
