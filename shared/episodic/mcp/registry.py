"""The MCP tool registry: each tool names the scope it needs; core exceptions become tool errors
(`isError`) in one place. The tools themselves live in `tools` (read) and `record_tool` (write); each is
built by `Tool.from_model`, so its input schema and its handler's check come from one arguments model.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import jsonschema
from pydantic import BaseModel

from episodic.kernel.auth import READ, Principal
from episodic.kernel.errors import (
    ConfigError,
    EpisodicError,
    InvalidArgumentError,
    NotFoundError,
    ParityError,
    ScopeError,
    TenantError,
)
from episodic.mcp.schema import input_schema, output_schema, parse_arguments

log = logging.getLogger(__name__)

SERVER_INSTRUCTIONS = (
    "This server is a memory of past coding-agent sessions: each session is one card (the problem, "
    "what was tried, the insight, dead ends, misleading intuitions, the checks that mattered, and "
    "whether the fix was verified). Workflow: at the start of a debugging or setup task, call "
    "search_traces with the symptom in plain words (the error message or behaviour, not file paths). "
    "Read the dead ends and misleading intuitions first: they save the most time. Call get_episode "
    "for the full card of a promising hit. A past episode is a lead, not proof: verify its insight "
    "against the current code before relying on it. An empty result means no similar episode exists."
)
READ_ONLY = {"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True, "openWorldHint": False}
TOOL_NAME_RE = re.compile(r"[A-Za-z0-9_.-]{1,128}")  # the 2025-11-25 rule


_VALID_SCHEMAS: set[str] = set()  # a schema checked once per process: servers and tests build many registries


def check_schema(schema: dict[str, Any]) -> None:
    """Raise jsonschema's SchemaError for a schema that is not valid JSON Schema 2020-12 (the check walks the
    whole meta-schema, ~10 ms a schema; an unchanged schema that passed is not walked again)."""
    key = json.dumps(schema, sort_keys=True, default=repr)
    if key not in _VALID_SCHEMAS:
        jsonschema.Draft202012Validator.check_schema(schema)
        _VALID_SCHEMAS.add(key)


class UnknownToolError(EpisodicError):
    """tools/call named a tool this server does not have (a protocol error, not a tool error)."""


@dataclass
class ToolOutput:
    text: str
    structured: dict[str, Any] | None = None
    is_error: bool = False

    def to_result(self) -> dict[str, Any]:
        result: dict[str, Any] = {"content": [{"type": "text", "text": self.text}], "isError": self.is_error}
        if self.structured is not None and not self.is_error:
            result["structuredContent"] = self.structured
        return result


Handler = Callable[[Principal, dict[str, Any]], ToolOutput]
A = TypeVar("A", bound=BaseModel)


@dataclass(frozen=True)
class Tool:
    name: str
    title: str
    description: str
    input_schema: dict[str, Any]
    handler: Handler
    output_schema: dict[str, Any] | None = None
    annotations: dict[str, Any] = field(default_factory=lambda: dict(READ_ONLY))
    required_scope: str = READ  # e.g. "write" for a tool that records episodes
    arguments: type[BaseModel] | None = None  # the model input_schema was generated from (from_model)
    result: type[BaseModel] | None = None  # the model output_schema was generated from (from_model)

    @classmethod
    def from_model(
        cls,
        arguments: type[A],
        handler: Callable[[Principal, A], ToolOutput],
        *,
        name: str,
        title: str,
        description: str,
        result: type[BaseModel] | None = None,
        annotations: dict[str, Any] | None = None,
        required_scope: str = READ,
    ) -> Tool:
        """A tool whose input schema is generated from `arguments` (and its output schema from `result`)
        and whose handler gets the call's arguments parsed by that same model (`mcp.schema`)."""

        def checked(principal: Principal, args: dict[str, Any]) -> ToolOutput:
            return handler(principal, parse_arguments(arguments, args))

        return cls(
            name=name,
            title=title,
            description=description,
            input_schema=input_schema(arguments),
            handler=checked,
            output_schema=None if result is None else output_schema(result),
            annotations=dict(READ_ONLY if annotations is None else annotations),
            required_scope=required_scope,
            arguments=arguments,
            result=result,
        )

    def describe(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.name,
            "title": self.title,
            "description": self.description,
            "inputSchema": self.input_schema,
            "annotations": {"title": self.title, **self.annotations},
        }
        if self.output_schema is not None:
            out["outputSchema"] = self.output_schema
        return out


def _describe_validation_error(tool: Tool, error: jsonschema.ValidationError) -> str:
    where = ".".join(str(p) for p in error.absolute_path) or "arguments"
    if error.validator == "required":
        problem = error.message
    elif error.validator == "additionalProperties":
        allowed = ", ".join(sorted(tool.input_schema.get("properties", {})))
        problem = f"{error.message}; the accepted arguments are: {allowed}"
    else:
        problem = f"{where}: {error.message}"
    return f"Invalid arguments for {tool.name}: {problem}. Fix the arguments and call {tool.name} again."


def _core_error_text(tool: Tool, exc: EpisodicError) -> str:
    """The one place core exceptions become the text of a tool error."""
    if isinstance(exc, InvalidArgumentError):
        return f"Invalid arguments for {tool.name}: {exc}. Fix the arguments and call {tool.name} again."
    if isinstance(exc, NotFoundError):
        return f"{exc}. Use a session_id returned by search_traces."
    if isinstance(exc, ParityError | ConfigError):
        return f"The memory index cannot answer right now (server configuration: {exc}). Continue without it."
    if isinstance(exc, TenantError):
        return f"Not allowed: {exc}."
    return f"{tool.name} failed: {exc}"


class ToolRegistry:
    """Tools by name; lists and calls them for a principal (scope-checked)."""

    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        for tool in tools:
            self.add(tool)

    def add(self, tool: Tool) -> None:
        if not TOOL_NAME_RE.fullmatch(tool.name):
            raise ValueError(f"tool name {tool.name!r} must be 1-128 characters of [A-Za-z0-9_.-]")
        if tool.name in self._tools:
            raise ValueError(f"tool {tool.name!r} registered twice")
        check_schema(tool.input_schema)
        if tool.output_schema is not None:
            check_schema(tool.output_schema)
        self._tools[tool.name] = tool

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def names(self) -> list[str]:
        return list(self._tools)

    def list_for(self, principal: Principal) -> list[dict[str, Any]]:
        return [t.describe() for t in self._tools.values() if principal.allows(t.required_scope)]

    def call(self, name: str, arguments: dict[str, Any], principal: Principal) -> dict[str, Any]:
        tool = self._tools.get(name)
        if tool is None:
            raise UnknownToolError(f"unknown tool {name!r}; available: {', '.join(self._tools)}")
        if not principal.allows(tool.required_scope):
            raise ScopeError(f"tool {name!r} needs a token with the {tool.required_scope!r} scope")
        errors = sorted(
            jsonschema.Draft202012Validator(tool.input_schema).iter_errors(arguments),
            key=lambda e: list(e.absolute_path),
        )
        if errors:
            return ToolOutput(_describe_validation_error(tool, errors[0]), is_error=True).to_result()
        try:
            output = tool.handler(principal, arguments)
        except ScopeError:
            raise
        except EpisodicError as exc:
            return ToolOutput(_core_error_text(tool, exc), is_error=True).to_result()
        except Exception:  # a backend bug must not kill the server: the agent gets a tool error
            log.exception("tool %s failed", name)
            return ToolOutput(
                f"{name} failed with an internal error; continue without it.", is_error=True
            ).to_result()
        return output.to_result()
