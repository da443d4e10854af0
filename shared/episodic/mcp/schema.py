"""MCP tool arguments and results as pydantic models: the one place a model becomes a tool's `inputSchema`
(and a call's arguments become that model) or its `outputSchema`, so what an agent reads cannot drift.

A field the model types `X | None = None` is one that may be absent: the schema shows it as `X` (no null, no
default); a required `X | None` is one that may be null.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from functools import cache
from typing import Annotated, Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from episodic.kernel.errors import InvalidArgumentError

A = TypeVar("A", bound=BaseModel)
NULL = {"type": "null"}
Query = Annotated[str, Field(min_length=1, max_length=2000)]  # what an agent asks, in plain words
VALUES = frozenset({"default", "enum", "const", "examples"})  # data, not schema: kept as they are


class ToolArguments(BaseModel):
    """The base of every tool's arguments: an argument the tool does not name is refused."""

    model_config = ConfigDict(extra="forbid")


class ToolResult(BaseModel):
    """The base of every tool's structured result: its schema is the tool's `outputSchema`."""

    model_config = ConfigDict(extra="forbid")


def input_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The model's JSON Schema as MCP clients want it: no titles, `$defs` inlined, omissible arguments
    without null, no extra properties."""
    return copy.deepcopy(_input_schema(model))


@cache
def _input_schema(model: type[BaseModel]) -> dict[str, Any]:
    """Generated once per model (each Memory's tools are built from the same few models)."""
    cleaned = _clean_schema(model.model_json_schema(), omissible_only=False)
    cleaned["additionalProperties"] = False
    return cleaned


def output_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The result model's JSON Schema as a tool's `outputSchema`: as `input_schema`, except that a required
    field typed `X | None` keeps its null (the tool returns it), and the model's `extra` decides extra fields."""
    return copy.deepcopy(_output_schema(model))


@cache
def _output_schema(model: type[BaseModel]) -> dict[str, Any]:
    return _clean_schema(model.model_json_schema(), omissible_only=True)


def _clean_schema(schema: dict[str, Any], omissible_only: bool) -> dict[str, Any]:
    """No titles, `$defs` inlined, `X | None` shown as `X` (for every field, or only where it may be absent)."""
    defs = schema.pop("$defs", {})

    def clean(node: Any, nullable: bool = False) -> Any:
        if isinstance(node, list):
            return [clean(n) for n in node]
        if not isinstance(node, dict):
            return node
        node = dict(node)
        options = node.get("anyOf")
        if isinstance(options, list) and len(options) == 2 and NULL in options:
            node.pop("anyOf")
            kept = next(o for o in options if o != NULL)
            if nullable and set(kept) == {"type"} and isinstance(kept["type"], str):
                kept = {"type": [kept["type"], "null"]}
            elif nullable:
                kept = {"anyOf": [kept, NULL]}
            node = {**kept, **node}
        while "$ref" in node:  # a nested model: its own schema, the field's keywords (description) on top
            node = {**defs[node.pop("$ref").rsplit("/", 1)[-1]], **node}
        if "default" in node and node["default"] is None:
            del node["default"]
        required = set(node.get("required", ())) if omissible_only else set()
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key == "title":
                continue
            if key == "properties":  # a property may be named "title"
                out[key] = {name: clean(v, nullable=name in required) for name, v in value.items()}
            else:
                out[key] = value if key in VALUES else clean(value)
        return out

    cleaned: dict[str, Any] = clean(schema)
    return cleaned


def parse_arguments(model: type[A], arguments: Mapping[str, Any]) -> A:
    """The call's arguments as the tool's model; a bad one is an InvalidArgumentError naming the argument
    (never echoing its value, which may hold a secret)."""
    try:
        return model.model_validate(arguments)
    except ValidationError as exc:
        raise InvalidArgumentError(_first_problem(model, exc)) from None


def _first_problem(model: type[BaseModel], exc: ValidationError) -> str:
    error = exc.errors(include_url=False, include_input=False)[0]
    where = ".".join(str(part) for part in error["loc"]) or "arguments"
    if error["type"] == "extra_forbidden":
        return f"unexpected argument {where!r}; the accepted arguments are: {', '.join(sorted(model.model_fields))}"
    if error["type"] == "missing":
        return f"{where!r} is a required argument"
    return f"{where}: {error['msg']}"
