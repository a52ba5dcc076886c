"""The five tools answer through the SDK client in process."""

import pytest

pytestmark = pytest.mark.anyio


async def test_store_then_recall_returns_the_memory_first(client):
    stored = await client.call_tool("store_memory", {"session": "s1", "content": "The boiler is serviced in October"})
    assert not stored.is_error
    memory_id = stored.structured_content["memory_id"]
    await client.call_tool("store_memory", {"session": "s1", "content": "My sister lives in Lisbon"})
    recalled = await client.call_tool("recall_memory", {"session": "s1", "query": "when is the boiler service?"})
    assert recalled.structured_content["memories"][0]["memory_id"] == memory_id
    assert recalled.structured_content["answer"] is None
