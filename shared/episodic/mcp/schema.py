"""MCP tool arguments as pydantic models: the one place a model becomes a tool's `inputSchema` and a call's
arguments become that model, so the schema an agent reads and the check a handler runs cannot drift.

An argument the model types `X | None = None` is one the agent may omit: the schema shows it as `X` (no
null, no default), and the model reads an omitted argument as None.
"""

from __future__ import annotations

from collections.abc import Mapping
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


def input_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The model's JSON Schema as MCP clients want it: no titles, `$defs` inlined, omissible arguments
    without null, no extra properties."""
    schema = model.model_json_schema()
    defs = schema.pop("$defs", {})

    def clean(node: Any) -> Any:
        if isinstance(node, list):
            return [clean(n) for n in node]
        if not isinstance(node, dict):
            return node
        node = dict(node)
        options = node.get("anyOf")
        if isinstance(options, list) and len(options) == 2 and NULL in options:
            node.pop("anyOf")
            node = {**next(o for o in options if o != NULL), **node}
        while "$ref" in node:  # a nested model: its own schema, the field's keywords (description) on top
            node = {**defs[node.pop("$ref").rsplit("/", 1)[-1]], **node}
        if "default" in node and node["default"] is None:
            del node["default"]
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key == "title":
                continue
            if key == "properties":
                out[key] = {name: clean(v) for name, v in value.items()}  # a property may be named "title"
            else:
                out[key] = value if key in VALUES else clean(value)
        return out

    cleaned: dict[str, Any] = clean(schema)
    cleaned["additionalProperties"] = False
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
