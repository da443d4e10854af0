"""Every MCP tool's input schema is generated from its arguments model, and its handler checks the call
through that same model: the schema an agent reads and the check that runs cannot drift."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest
from episodic.assembly.features import scratch_part
from episodic.aws.clients import AwsClients
from episodic.kernel.auth import Principal
from episodic.kernel.errors import InvalidArgumentError
from episodic.mcp.registry import Tool, ToolOutput, ToolRegistry
from episodic.mcp.schema import ToolArguments, ToolResult, input_schema, output_schema, parse_arguments
from episodic.mcp.tools import default_registry
from kits.mcp_testkit import ALPHA, build_memory, settings_for
from pydantic import BaseModel, Field

WRITER = Principal(ALPHA, frozenset({"read", "write"}))
# the smallest valid arguments of each tool; a tool added without an entry fails the first test
MINIMAL: dict[str, dict[str, Any]] = {
    "search_traces": {"query": "pytest fixture not found"},
    "get_episode": {"session_id": "s1"},
    "record_episode": {"session_id": "s1", "problem": "a symptom", "outcome": "informational"},
    "review_episode": {"session_id": "s1", "action": "approve"},
    "get_dream_record": {},
    "recall_similar": {"query": "rename a class"},
    "history_search": {"topic": "worktree"},
    "history_thread": {"topic": "worktree"},
    "history_query": {"topic": "worktree"},
    "history_decisions": {"topic": "worktree"},
    "history_timeline": {},
    "link_work_item": {"session_id": "s1", "item": "#12"},
    "work_item_sessions": {"target": "#12"},
}


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory) -> ToolRegistry:
    settings = settings_for(tmp_path_factory.mktemp("schemas-home"))
    memory = build_memory(settings)
    memory.parts["scratch"] = scratch_part(settings, memory, AwsClients(settings))  # recall_similar too
    return default_registry(memory)


def test_every_tools_input_schema_is_its_models(registry: ToolRegistry) -> None:
    assert set(registry.names()) == set(MINIMAL)
    for name in registry.names():
        tool = registry.get(name)
        assert tool is not None and tool.arguments is not None, f"{name} has no arguments model"
        listed = tool.describe()["inputSchema"]
        assert listed == input_schema(tool.arguments), name
        assert listed["additionalProperties"] is False and "title" not in listed and "$defs" not in listed
        parse_arguments(tool.arguments, MINIMAL[name])  # the minimal arguments are valid


def test_every_tools_output_schema_is_its_result_model(registry: ToolRegistry) -> None:
    for name in registry.names():
        tool = registry.get(name)
        assert tool is not None and tool.result is not None, f"{name} has no result model"
        assert issubclass(tool.result, ToolResult), name
        listed = tool.describe()["outputSchema"]
        assert listed == output_schema(tool.result), name
        assert "title" not in listed and "$defs" not in listed and "$ref" not in str(listed), name


def test_the_output_schema_keeps_null_where_a_field_is_required() -> None:
    class _Planted(ToolResult):
        when: str | None
        note: str | None = None

    assert output_schema(_Planted) == {
        "type": "object",
        "properties": {"when": {"type": ["string", "null"]}, "note": {"type": "string"}},
        "required": ["when"],
        "additionalProperties": False,
    }


@pytest.mark.parametrize("name", sorted(MINIMAL))
def test_a_planted_extra_argument_is_refused_by_the_schema_and_by_the_handler(
    registry: ToolRegistry, name: str
) -> None:
    planted = {**MINIMAL[name], "planted": "x"}
    answer = registry.call(name, planted, WRITER)
    assert answer["isError"] is True and "'planted'" in answer["content"][0]["text"]
    tool = registry.get(name)
    assert tool is not None
    with pytest.raises(InvalidArgumentError, match="unexpected argument 'planted'"):
        tool.handler(WRITER, planted)  # past the registry's check: the model refuses it too


def test_a_bad_argument_names_the_field_and_never_echoes_its_value(registry: ToolRegistry) -> None:
    tool = registry.get("search_traces")
    assert tool is not None
    secret = "AKIA" + "Q" * 16
    with pytest.raises(InvalidArgumentError) as caught:
        tool.handler(WRITER, {"query": secret, "k": 9})
    assert str(caught.value).startswith("k:") and secret not in str(caught.value)
    with pytest.raises(InvalidArgumentError, match="'query' is a required argument"):
        tool.handler(WRITER, {})
    answer = registry.call("search_traces", {"query": "x", "k": 9}, WRITER)
    assert answer["isError"] is True and "k" in answer["content"][0]["text"]


class _Inner(BaseModel):
    title: str = Field(description="a property named title stays")


class _Planted(ToolArguments):
    """What the planted tool does."""

    inner: _Inner | None = Field(None, description="Nested.")
    count: int = Field(2, ge=1)


def test_the_schema_helper_inlines_defs_drops_titles_and_null() -> None:
    schema = input_schema(_Planted)
    assert schema == {
        "type": "object",
        "description": "What the planted tool does.",
        "properties": {
            "inner": {
                "type": "object",
                "description": "Nested.",
                "properties": {"title": {"type": "string", "description": "a property named title stays"}},
                "required": ["title"],
            },
            "count": {"type": "integer", "minimum": 1, "default": 2},
        },
        "additionalProperties": False,
    }
    assert parse_arguments(_Planted, {}).inner is None
    with pytest.raises(InvalidArgumentError, match=r"inner\.title"):
        parse_arguments(_Planted, {"inner": {}})


def test_a_tool_with_an_invalid_schema_is_refused_each_time_it_is_registered() -> None:
    def answer(_principal: Principal, _arguments: dict[str, Any]) -> ToolOutput:
        return ToolOutput("ok")

    valid = {"type": "object", "properties": {"n": {"type": "integer", "minimum": 1}}}
    invalid = {"type": "object", "properties": {"n": {"type": "integer", "minimum": "one"}}}
    for _ in range(2):  # the second time too: only a schema that passed is remembered as checked
        ToolRegistry([Tool("fine", "Fine", "passes", dict(valid), answer)])
        with pytest.raises(jsonschema.SchemaError, match="'one' is not of type 'number'"):
            ToolRegistry([Tool("broken", "Broken", "a bad minimum", dict(invalid), answer)])
        with pytest.raises(jsonschema.SchemaError):
            ToolRegistry([Tool("broken", "Broken", "bad output", dict(valid), answer, output_schema=invalid)])
