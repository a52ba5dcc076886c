"""tools/list schemas that strict clients accept, and calls with odd ``arguments``.

Field cases B26 and B27 (/work/shared/cases/field-bugs.md).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from mcp import Client
from mcp_types import CallToolResult

pytestmark = pytest.mark.anyio

TOOLS = {"store_memory", "recall_memory", "delete_memory", "list_audits", "usage_stats"}
TOOL_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]{0,63}$")
FORBIDDEN_KEYS = {"$ref", "$defs", "definitions", "$schema"}


def _nodes(node: Any) -> Iterator[dict[str, Any]]:
    """Every JSON object inside ``node``, itself included."""
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from _nodes(value)
    elif isinstance(node, list):
        for item in node:
            yield from _nodes(item)


def _typed(schema: dict[str, Any]) -> bool:
    if "type" in schema:
        return True
    return "anyOf" in schema and all(_typed(member) for member in schema["anyOf"])


async def _schemas(client: Client) -> dict[str, tuple[dict[str, Any], dict[str, Any]]]:
    listed = await client.list_tools()
    return {tool.name: (tool.input_schema, tool.output_schema) for tool in listed.tools}


async def test_tools_list_offers_exactly_the_five_tools_with_valid_names(client):
    names = set(await _schemas(client))

    assert names == TOOLS
    assert all(TOOL_NAME.match(name) for name in names)


async def test_every_schema_is_an_object_with_no_references_anywhere(client):
    for name, (input_schema, output_schema) in (await _schemas(client)).items():
        for schema in (input_schema, output_schema):
            assert schema is not None, name
            assert schema["type"] == "object", name
            for node in _nodes(schema):
                assert FORBIDDEN_KEYS.isdisjoint(node), (name, sorted(FORBIDDEN_KEYS & set(node)))


async def test_every_property_is_typed_and_every_required_name_exists(client):
    for name, (input_schema, output_schema) in (await _schemas(client)).items():
        for schema in (input_schema, output_schema):
            for node in _nodes(schema):
                properties = node.get("properties")
                if not isinstance(properties, dict):
                    continue
                for prop, prop_schema in properties.items():
                    assert _typed(prop_schema), (name, prop)
                assert set(node.get("required", [])) <= set(properties), name


async def test_limits_are_visible_in_the_input_schemas(client):
    schemas = {name: pair[0]["properties"] for name, pair in (await _schemas(client)).items()}

    assert schemas["store_memory"]["content"]["maxLength"] == 32_000
    assert schemas["store_memory"]["content"]["minLength"] == 1
    for tool in ("store_memory", "recall_memory", "delete_memory", "list_audits"):
        assert schemas[tool]["session"]["maxLength"] == 256, tool
        assert schemas[tool]["session"]["minLength"] == 1, tool
    assert schemas["recall_memory"]["top_k"]["minimum"] == 1
    assert schemas["recall_memory"]["top_k"]["maximum"] == 100
    assert schemas["recall_memory"]["top_k"]["default"] == 12
    assert schemas["recall_memory"]["query"]["maxLength"] == 4_000
    assert schemas["list_audits"]["limit"]["minimum"] == 1
    assert schemas["list_audits"]["limit"]["maximum"] == 100
    assert schemas["store_memory"]["metadata"]["description"].endswith("(at most 16384 bytes).")


async def test_required_arguments_are_exactly_the_ones_without_defaults(client):
    required = {name: set(pair[0].get("required", [])) for name, pair in (await _schemas(client)).items()}

    assert required == {
        "store_memory": {"session", "content"},
        "recall_memory": {"session", "query"},
        "delete_memory": {"session"},
        "list_audits": {"session"},
        "usage_stats": set(),
    }


# --- B27: calls without arguments ------------------------------------------------------------------


async def _raw_call(client: Client, params: dict[str, Any]) -> CallToolResult:
    """A tools/call sent as given: ``call_tool`` drops a None ``arguments`` instead of sending null."""
    raw = await client.session._dispatcher.send_raw_request("tools/call", params, {"timeout": 30})
    return CallToolResult.model_validate(raw)


async def test_usage_stats_answers_a_call_with_no_arguments_key(client):
    result = await _raw_call(client, {"name": "usage_stats"})

    assert not result.is_error, result.content[0].text
    assert result.structured_content == {"operations": []}


async def test_usage_stats_answers_a_call_with_null_arguments(client):
    result = await _raw_call(client, {"name": "usage_stats", "arguments": None})

    assert not result.is_error, result.content[0].text
    assert result.structured_content == {"operations": []}


async def test_list_audits_without_arguments_is_an_error_naming_the_missing_session(client):
    result = await _raw_call(client, {"name": "list_audits"})

    assert result.is_error
    assert result.content[0].text == "Error executing tool list_audits: session: is required"
    assert not (await client.call_tool("list_audits", {"session": "s-q"})).is_error


@pytest.mark.parametrize("tool", ["store_memory", "recall_memory", "delete_memory"])
async def test_a_tool_with_required_arguments_called_with_null_arguments_names_them(client, tool):
    result = await _raw_call(client, {"name": tool, "arguments": None})

    assert result.is_error
    required = {"store_memory": "session, content: are required", "recall_memory": "session, query: are required",
                "delete_memory": "session: is required"}[tool]
    assert result.content[0].text == f"Error executing tool {tool}: {required}"


async def test_an_unknown_tool_is_an_error_naming_it(client):
    result = await client.call_tool("forget_everything", {"session": "s-q"})

    assert result.is_error
    assert "forget_everything" in result.content[0].text


async def test_supersession_arguments_are_typed_and_bounded_in_the_schemas(client):
    schemas = {name: pair for name, pair in (await _schemas(client)).items()}
    store_input, store_output = schemas["store_memory"]
    recall_input, recall_output = schemas["recall_memory"]

    supersedes = store_input["properties"]["supersedes"]
    assert supersedes["maxItems"] == 32
    assert {"type": "array", "items": {"type": "string"}} in supersedes["anyOf"]
    assert {"type": "null"} in supersedes["anyOf"]
    assert supersedes["default"] is None
    assert store_output["properties"]["superseded"]["items"] == {"type": "string"}
    include = recall_input["properties"]["include_superseded"]
    assert include["type"] == "boolean" and include["default"] is False
    recalled = recall_output["properties"]["memories"]["items"]["properties"]["superseded_by"]
    assert {member["type"] for member in recalled["anyOf"]} == {"string", "null"}
