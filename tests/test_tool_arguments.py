"""Arguments the tool signatures refuse (wrong JSON kinds, unknown names) come back as one line
naming the argument, like every other bad input, and nothing is stored."""

from __future__ import annotations

import json
from typing import Any

import asyncpg
import pytest
from mcp import Client

from tools import store

pytestmark = pytest.mark.anyio


async def _refused(client: Client, pg_url: str, tool: str, arguments: dict[str, Any]) -> str:
    connection = await asyncpg.connect(pg_url)
    try:
        before = await connection.fetchval("SELECT count(*) FROM memories")
        result = await client.call_tool(tool, arguments)
        after = await connection.fetchval("SELECT count(*) FROM memories")
    finally:
        await connection.close()
    assert result.is_error
    assert after == before
    return result.content[0].text


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("0b6f1c2e-3d4a-4f5b-8c6d-7e8f9a0b1c2d", "supersedes: input should be a valid list; got a string"),
        (5, "supersedes: input should be a valid list; got a number"),
        (True, "supersedes: input should be a valid list; got a boolean"),
        ({"id": "0b6f1c2e-3d4a-4f5b-8c6d-7e8f9a0b1c2d"}, "supersedes: input should be a valid list; got an object"),
        ([["0b6f1c2e-3d4a-4f5b-8c6d-7e8f9a0b1c2d"]], "supersedes.0: input should be a valid string; got a list"),
    ],
)
async def test_supersedes_of_the_wrong_json_kind_is_one_line_naming_it(client, pg_url, value, expected):
    text = await _refused(client, pg_url, "store_memory", {"session": "s", "content": "Alice moved.", "supersedes": value})

    assert text == f"Error executing tool store_memory: {expected}"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, "include_superseded: input should be a valid boolean; got null"),
        (2, "include_superseded: input should be a valid boolean; got a number"),
        ([], "include_superseded: input should be a valid boolean; got a list"),
    ],
)
async def test_include_superseded_that_is_not_a_boolean_is_one_line_naming_it(client, value, expected):
    result = await client.call_tool("recall_memory", {"session": "s", "query": "Alice", "include_superseded": value})

    assert result.is_error
    assert result.content[0].text == f"Error executing tool recall_memory: {expected}"


async def test_a_missing_argument_is_one_line_naming_it(client, pg_url):
    text = await _refused(client, pg_url, "store_memory", {"session": "s"})

    assert text == "Error executing tool store_memory: content: is required"


async def test_supersedes_as_a_json_string_of_a_list_is_read_as_the_list(client):
    berlin = await store(client, "s", "Alice lives in Berlin.")

    result = await client.call_tool(
        "store_memory", {"session": "s", "content": "Alice lives in Lisbon.", "supersedes": json.dumps([berlin])}
    )

    assert result.structured_content["superseded"] == [berlin]


async def test_a_misspelt_argument_is_refused_and_nothing_is_stored(client, pg_url):
    berlin = await store(client, "s", "Alice lives in Berlin.")

    text = await _refused(
        client, pg_url, "store_memory", {"session": "s", "content": "Alice lives in Lisbon.", "supersede": [berlin]}
    )

    assert text == ("Error executing tool store_memory: supersede: is not an argument of store_memory; it takes "
                    "content, idempotency_key, importance, metadata, occurred_at, session, supersedes")


async def test_an_unknown_argument_next_to_include_superseded_is_refused_on_one_line(client):
    result = await client.call_tool(
        "recall_memory", {"session": "s", "query": "Alice", "include_superseded": True, "history\nplease": 1}
    )

    assert result.is_error
    assert result.content[0].text == ("Error executing tool recall_memory: history\\nplease: is not an argument of "
                                      "recall_memory; it takes as_of, include_superseded, metadata, query, session, "
                                      "since, top_k, until")
