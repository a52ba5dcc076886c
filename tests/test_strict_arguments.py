"""Every string argument arrives as the exact string sent, and one type rule holds for every field.

Issue 11 ("Found by an attack"): the SDK parsed string arguments as JSON when the annotation was not
plain ``str`` (a session ``null`` could not be deleted whole, ``kind="null"`` listed every kind,
``memory_id="null"`` read as missing), and pydantic's lax mode read ``top_k=true`` as 1 and
``all="yes"`` as true (which deleted a whole session). The rule is in mcp_memory/arguments.py.
"""

from __future__ import annotations

from typing import Any

import asyncpg
import pytest
from mcp import Client

from mcp_memory.arguments import TYPE_RULE
from tools import call, store

pytestmark = pytest.mark.anyio

JSON_LOOKING = ["null", "[]", "{}", "[1]", "true", "0", '"quoted"', '{"a": 1}']


async def _count(pg_url: str, session: str | None = None) -> int:
    connection = await asyncpg.connect(pg_url)
    try:
        if session is None:
            return await connection.fetchval("SELECT count(*) FROM memories")
        return await connection.fetchval("SELECT count(*) FROM memories WHERE session = $1", session)
    finally:
        await connection.close()


async def _error(client: Client, tool: str, arguments: dict[str, Any]) -> str:
    result = await client.call_tool(tool, arguments)
    assert result.is_error, result.structured_content
    return result.content[0].text


@pytest.mark.parametrize("session", JSON_LOOKING)
async def test_a_session_named_like_json_is_stored_into_and_deleted_whole_with_confirm(client, pg_url, session):
    memory_id = await store(client, session, "The boiler is serviced in October.")
    await store(client, "other", "The boiler is serviced in October.")

    recalled = await call(client, "recall_memory", {"session": session, "query": "boiler"})
    deleted = await call(client, "delete_memory", {"session": session, "all": True, "confirm": session})

    assert [m["memory_id"] for m in recalled["memories"]] == [memory_id]
    assert deleted == {"deleted": True, "count": 1}
    assert await _count(pg_url, session) == 0
    assert await _count(pg_url, "other") == 1


@pytest.mark.parametrize("kind", ["null", "[]", '["recall"]', "RECALL"])
async def test_list_audits_refuses_a_kind_that_only_looks_like_json(client, kind):
    await call(client, "recall_memory", {"session": "s", "query": "boiler"})

    text = await _error(client, "list_audits", {"session": "s", "kind": kind})

    assert text == ("Error executing tool list_audits: kind: must be one of recall, delete, delete_session, "
                    f"supersede, redact; got {kind!r}")


async def test_memory_id_null_is_a_bad_memory_id_not_a_missing_one(client, pg_url):
    await store(client, "s", "The boiler is serviced in October.")

    text = await _error(client, "delete_memory", {"session": "s", "memory_id": "null"})

    assert text == ("Error executing tool delete_memory: memory_id: must be a memory_id as returned by "
                    "store_memory (a UUID); got 'null'")
    assert await _count(pg_url, "s") == 1


@pytest.mark.parametrize("occurred_at", ["null", "[]"])
async def test_occurred_at_that_looks_like_json_is_read_as_text_and_refused(client, pg_url, occurred_at):
    text = await _error(client, "store_memory", {"session": "s", "content": "x", "occurred_at": occurred_at})

    assert text.startswith(f"Error executing tool store_memory: occurred_at: could not parse {occurred_at!r}")
    assert await _count(pg_url) == 0


async def test_confirm_that_looks_like_json_must_equal_the_session_as_text(client, pg_url):
    await store(client, "[1]", "The boiler is serviced in October.")

    text = await _error(client, "delete_memory", {"session": "[1]", "all": True, "confirm": "[ 1 ]"})

    assert text == ("Error executing tool delete_memory: confirm: deleting a whole session needs confirm equal "
                    "to the session name")
    assert await _count(pg_url, "[1]") == 1


# --- one type rule ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tool", "arguments", "expected"),
    [
        ("recall_memory", {"top_k": True}, "top_k: input should be a valid integer; got a boolean"),
        ("recall_memory", {"top_k": 2.5}, "top_k: input should be a valid integer; got a number with a fraction"),
        ("recall_memory", {"top_k": "2.5"}, "top_k: input should be a valid integer; got a string"),
        ("recall_memory", {"top_k": "five"}, "top_k: input should be a valid integer; got a string"),
        ("recall_memory", {"top_k": [5]}, "top_k: input should be a valid integer; got a list"),
        ("recall_memory", {"include_superseded": "true"},
         "include_superseded: input should be a valid boolean; got a string"),
        ("recall_memory", {"include_superseded": 1}, "include_superseded: input should be a valid boolean; got a number"),
        ("recall_memory", {"query": 5}, "query: input should be a valid string; got a number"),
        ("store_memory", {"importance": True}, "importance: input should be a valid number; got a boolean"),
        ("store_memory", {"importance": "high"}, "importance: input should be a valid number; got a string"),
        ("store_memory", {"session": 1}, "session: input should be a valid string; got a number"),
        ("store_memory", {"occurred_at": 20250314}, "occurred_at: input should be a valid string; got a number"),
        ("store_memory", {"metadata": "note"}, "metadata: input should be a valid dictionary; got a string"),
        ("store_memory", {"metadata": "{category: home}"},  # keys unquoted: a string, but not its JSON
         "metadata: input should be a valid dictionary; got a string that is not valid JSON"),
        ("store_memory", {"metadata": "[1]"}, "metadata: input should be a valid dictionary; got a list"),
        ("store_memory", {"supersedes": "[1,"}, "supersedes: input should be a valid list; got a string that is not valid JSON"),
        ("delete_memory", {"all": "yes"}, "all: input should be a valid boolean; got a string"),
        ("delete_memory", {"all": 1}, "all: input should be a valid boolean; got a number"),
        ("delete_memory", {"confirm": True}, "confirm: input should be a valid string; got a boolean"),
        ("list_audits", {"limit": False}, "limit: input should be a valid integer; got a boolean"),
    ],
)
async def test_a_value_outside_the_type_rule_is_one_line_naming_the_field(client, pg_url, tool, arguments, expected):
    await store(client, "s", "The boiler is serviced in October.")
    base = {"store_memory": {"session": "s", "content": "Alice moved."}, "recall_memory": {"session": "s", "query": "x"},
            "delete_memory": {"session": "s"}, "list_audits": {"session": "s"}, "usage_stats": {}}[tool]

    text = await _error(client, tool, {**base, **arguments})

    assert text == f"Error executing tool {tool}: {expected}"
    assert await _count(pg_url) == 1


async def test_all_yes_deletes_nothing(client, pg_url):
    await store(client, "s", "The boiler is serviced in October.")

    await _error(client, "delete_memory", {"session": "s", "all": "yes", "confirm": "s"})

    assert await _count(pg_url, "s") == 1


@pytest.mark.parametrize(("top_k", "returned"), [("2", 2), (2.0, 2), (2, 2), ("02", 2)])
async def test_top_k_as_digits_or_a_whole_number_is_read_as_that_integer(client, top_k, returned):
    for fact in ("The boiler is serviced in October.", "The boiler is in the cellar.", "The boiler is a Vaillant."):
        await store(client, "s", fact)

    recalled = await call(client, "recall_memory", {"session": "s", "query": "boiler", "top_k": top_k})

    assert len(recalled["memories"]) == returned


@pytest.mark.parametrize(("importance", "stored"), [("0.5", 0.5), (1, 1.0), ("1", 1.0), (0.25, 0.25)])
async def test_importance_as_a_number_or_a_string_holding_one_is_stored(client, pg_url, importance, stored):
    await store(client, "s", "The boiler is serviced in October.", importance=importance)

    connection = await asyncpg.connect(pg_url)
    try:
        assert await connection.fetchval("SELECT importance FROM memories WHERE session = 's'") == stored
    finally:
        await connection.close()


async def test_every_input_schema_forbids_unknown_arguments_and_states_the_type_rule(client):
    listed = await client.list_tools()

    for tool in listed.tools:
        assert tool.input_schema["additionalProperties"] is False, tool.name
        assert tool.input_schema["description"] == TYPE_RULE, tool.name


async def test_a_misspelt_occurred_at_is_refused_not_replaced_by_the_current_time(client, pg_url):
    text = await _error(client, "store_memory", {"session": "s", "content": "x", "ocurred_at": "2020-01-01"})

    assert text == ("Error executing tool store_memory: ocurred_at: is not an argument of store_memory; it takes "
                    "content, idempotency_key, importance, metadata, occurred_at, session, supersedes")
    assert await _count(pg_url) == 0


LOOKALIKES = ["a", "A", "a ", " a", "a\u200d", "\u200da", "\u0430", "a\u0301", "\u00e1", "%", "_", "*", "\\", "'", '"',
              "a%", "a_", "a*", "\u202ea", "\ufeffa"]


async def test_session_names_that_look_alike_are_separate_sessions(client, pg_url):
    stored = {session: await store(client, session, f"The boiler code is {index}.") for index, session in
              enumerate(LOOKALIKES)}

    for session, memory_id in stored.items():
        recalled = await call(client, "recall_memory", {"session": session, "query": "boiler code"})
        assert [m["memory_id"] for m in recalled["memories"]] == [memory_id], repr(session)
    assert await _count(pg_url) == len(LOOKALIKES)
    assert len(set(stored.values())) == len(LOOKALIKES)


@pytest.mark.parametrize(("tool", "arguments", "expected"), [
    ("store_memory", {"session": "s-lone", "content": "x \ud83d y"}, "content: lone surrogate at character 2 (U+D83D"),
    ("store_memory", {"session": "s-lone", "content": "x", "metadata": {"note": "\udc00"}},
     "metadata.note: lone surrogate at character 0 (U+DC00"),
    ("recall_memory", {"session": "s-lone", "query": "garden \ud800"}, "query: lone surrogate at character 7 (U+D800"),
    ("recall_memory", {"session": "s-lone", "query": "x", "metadata": {"k": "a\udfff"}},
     "metadata.k: lone surrogate at character 1 (U+DFFF"),
    ("recall_memory", {"session": "s-lone", "query": "x", "since": "\ud800"}, "since: lone surrogate at character 0"),
    ("delete_memory", {"session": "\ud800"}, "session: lone surrogate at character 0 (U+D800"),
])
async def test_a_lone_surrogate_sent_in_process_is_one_line_naming_the_field(client, pg_url, tool, arguments, expected):
    """Over HTTP and stdio jsonrpc.py refuses a lone surrogate by field; a caller in process (an eval,
    the SDK's in-memory client) got "Error executing tool ..." with nothing more, from a
    UnicodeEncodeError deep in the call."""
    message = await _error(client, tool, arguments)

    assert message.startswith(f"Error executing tool {tool}: {expected}")
    assert await _count(pg_url) == 0
