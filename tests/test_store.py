"""store_memory through the in-process client: round-trips, dedup, time zones and every rejected input.

Field cases B01, B04, B06, B07, B11 and B23 (/work/shared/cases/field-bugs.md), plus the input
limits of every tool. A rejected call is an ``is_error`` result whose text names the field (and the
limit); afterwards nothing is stored and the next call still works.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import asyncpg
import pytest
from conftest import make_settings
from fake_openai import FakeOpenAI
from mcp import Client

from mcp_memory.deps import Deps
from mcp_memory.server import build_server
from mcp_memory.settings import Settings

pytestmark = [pytest.mark.anyio, pytest.mark.backends("single", "citus")]


# --- helpers ------------------------------------------------------------------------------


async def _rows(pg_url: str, table: str = "memories") -> int:
    connection = await asyncpg.connect(pg_url)
    try:
        return await connection.fetchval(f"SELECT count(*) FROM {table}")
    finally:
        await connection.close()


async def _store(client: Client, session: str, content: str, **extra: Any) -> dict[str, Any]:
    result = await client.call_tool("store_memory", {"session": session, "content": content, **extra})
    assert not result.is_error, result.content[0].text
    return result.structured_content


async def _recall(client: Client, session: str, query: str, **extra: Any) -> dict[str, Any]:
    result = await client.call_tool("recall_memory", {"session": session, "query": query, **extra})
    assert not result.is_error, result.content[0].text
    return result.structured_content


async def _assert_rejected(client: Client, pg_url: str, tool: str, arguments: dict[str, Any], *expected: str) -> None:
    """The call is an error carrying every ``expected`` substring; nothing was written; the server still serves."""
    memories, audits = await _rows(pg_url), await _rows(pg_url, "audits")
    result = await client.call_tool(tool, arguments)
    assert result.is_error
    assert result.structured_content is None
    text = result.content[0].text
    for part in expected:
        assert part in text
    assert "asyncpg" not in text and "Traceback" not in text
    assert (await _rows(pg_url), await _rows(pg_url, "audits")) == (memories, audits)
    follow_up = await client.call_tool("usage_stats", {})
    assert not follow_up.is_error


@contextmanager
def _host_time_zone(zone: str) -> Iterator[None]:
    """Run with the process time zone set to ``zone``, then restore the previous one."""
    previous = os.environ.get("TZ")
    os.environ["TZ"] = zone
    time.tzset()
    try:
        yield
    finally:
        if previous is None:
            del os.environ["TZ"]
        else:
            os.environ["TZ"] = previous
        time.tzset()


@pytest.fixture(scope="module")
async def one_window_deps(pg_url: str, work_dir: Path, deps: Deps) -> AsyncIterator[Deps]:
    """The default model and database, configured to embed only the first window of a memory.

    Used where a huge memory's size is under test, not its retrieval: embedding all 200
    windows of 32,000 CJK characters takes ~15 s on a small CI machine.
    """
    started = Deps(make_settings(pg_url, work_dir, embedding={"chunk_tokens": 1_000_000}))
    await started.start()
    await started.ready()
    yield started
    await started.close()


@pytest.fixture
async def one_window_client(one_window_deps: Deps, empty_tables: None) -> AsyncIterator[Client]:
    async with Client(build_server(one_window_deps.settings, one_window_deps), mode="legacy") as connected:
        yield connected


# --- B01: non-ASCII text ------------------------------------------------------------------

CJK_MIXED = "下周四下午三点和设计团队开会，地点在三号会议室 ☕️🚀 👩‍💻 שלום cafe\u0301"


async def test_cjk_emoji_rtl_and_decomposed_text_round_trip_byte_for_byte(client):
    stored = await _store(client, "s-zh", CJK_MIXED)
    await _store(client, "s-zh", "The plumber comes on Monday morning to fix the kitchen sink.")
    await _store(client, "s-zh", "明天早上九点去机场接妈妈")

    result = await client.call_tool("recall_memory", {"session": "s-zh", "query": "设计团队开会", "top_k": 5})

    assert not result.is_error
    first = result.structured_content["memories"][0]
    assert first["memory_id"] == stored["memory_id"]
    assert first["content"].encode("utf-8") == CJK_MIXED.encode("utf-8")
    assert "e\u0301" in first["content"] and "\u00e9" not in first["content"]
    assert "设计团队" in result.content[0].text
    assert "\\u8bbe" not in result.content[0].text.lower()
    assert "👩‍💻" in result.content[0].text


async def test_metadata_round_trips_unchanged_with_non_ascii_values(client):
    metadata = {"source": "會議記錄", "tags": ["plan", "☕️"], "nested": {"n": 3, "ok": True, "none": None}}
    await _store(client, "s-meta", "Quarterly planning notes for the Taipei office", metadata=metadata)

    recalled = await _recall(client, "s-meta", "Taipei planning")

    assert recalled["memories"][0]["metadata"] == metadata


# --- B04 and B23: blank and NUL text --------------------------------------------------------


@pytest.mark.parametrize("content", ["", "  \n\t ", "\u3000\u00a0"], ids=["empty", "whitespace", "unicode-space"])
async def test_blank_content_is_rejected_naming_content(client, pg_url, content):
    await _assert_rejected(
        client, pg_url, "store_memory", {"session": "s-e", "content": content},
        "content: must not be empty or whitespace-only",
    )
    assert (await _recall(client, "s-e", "anything"))["memories"] == []


@pytest.mark.parametrize("query", ["", "   ", "\n\t"], ids=["empty", "spaces", "newline-tab"])
async def test_blank_query_is_rejected_naming_query(client, pg_url, query):
    await _store(client, "s-e", "The recycling goes out on Thursday evenings")

    await _assert_rejected(
        client, pg_url, "recall_memory", {"session": "s-e", "query": query},
        "query: must not be empty or whitespace-only",
    )


async def test_rejected_blank_calls_make_no_embedding_request(pg_url, work_dir):
    """B04 with a scripted embeddings endpoint, on a database of its own (one model per database)."""
    name = f"mcpm_b04_{uuid.uuid4().hex[:12]}"
    admin = await asyncpg.connect(pg_url)
    await admin.execute(f'CREATE DATABASE "{name}"')
    parts = urlsplit(pg_url)
    fresh_url = urlunsplit((parts.scheme, parts.netloc, f"/{name}", parts.query, parts.fragment))
    try:
        with FakeOpenAI(embedding_dim=384, embedding_model="fake-embed") as fake:
            settings: Settings = make_settings(
                fresh_url, work_dir,
                embedding={"provider": "openai", "base_url": fake.base_url, "model": "fake-embed", "dim": 384},
            )
            started = Deps(settings)
            await started.start()
            try:
                async with Client(build_server(settings, started), mode="legacy") as client:
                    for arguments in ({"session": "s-e", "content": ""}, {"session": "s-e", "content": "  \n\t "}):
                        rejected = await client.call_tool("store_memory", arguments)
                        assert rejected.is_error
                        assert "content: must not be empty or whitespace-only" in rejected.content[0].text
                    rejected = await client.call_tool("recall_memory", {"session": "s-e", "query": "   "})
                    assert rejected.is_error
                    assert "query: must not be empty or whitespace-only" in rejected.content[0].text
                    assert fake.embedding_requests() == []

                    assert (await _recall(client, "s-e", "anything"))["memories"] == []
                    assert len(fake.embedding_requests()) == 1
                    assert await _rows(fresh_url) == 0
            finally:
                await started.close()
    finally:
        await admin.execute(f'DROP DATABASE "{name}" WITH (FORCE)')
        await admin.close()


@pytest.mark.parametrize(
    "content", ["Festival on D\u0000a de Muertos weekend", "\u0000", "trailing NUL\u0000"],
    ids=["inside", "only", "trailing"],
)
async def test_content_with_nul_is_rejected_naming_nul(client, pg_url, content):
    await _assert_rejected(
        client, pg_url, "store_memory", {"session": "s-nul", "content": content},
        "content: contains a NUL character (U+0000)",
    )
    assert (await _recall(client, "s-nul", "festival"))["memories"] == []
    await _store(client, "s-nul", "Festival on Día de Muertos weekend")


async def test_query_with_nul_is_rejected_naming_query(client, pg_url):
    await _assert_rejected(
        client, pg_url, "recall_memory", {"session": "s-nul", "query": "festival\u0000"},
        "query: contains a NUL character (U+0000)",
    )


# --- B06: length limits count characters -----------------------------------------------------


async def test_content_over_32000_characters_is_rejected_naming_both_lengths(client, pg_url):
    await _assert_rejected(
        client, pg_url, "store_memory", {"session": "s-lim", "content": "a" * 32_001},
        "content: is 32001 characters; the limit is 32000 characters",
    )


async def test_content_of_32000_cjk_characters_is_stored_because_the_limit_counts_characters(
    one_window_client, pg_url
):
    content = "汉" * 32_000
    assert len(content.encode("utf-8")) == 96_000

    stored = await _store(one_window_client, "s-lim", content)

    assert stored["deduplicated"] is False
    connection = await asyncpg.connect(pg_url)
    try:
        kept = await connection.fetchval(
            "SELECT content FROM memories WHERE memory_id = $1", uuid.UUID(stored["memory_id"])
        )
    finally:
        await connection.close()
    assert kept == content


async def test_query_over_4000_characters_is_rejected_naming_the_limit(client, pg_url):
    await _assert_rejected(
        client, pg_url, "recall_memory", {"session": "s-lim", "query": "q" * 4_001},
        "query: is 4001 characters; the limit is 4000 characters",
    )


# --- B07: dedup ---------------------------------------------------------------------------------


async def test_same_content_twice_returns_the_first_memory_and_dedup_is_per_session(client, pg_url):
    content = "The weekly stand-up moved to 09:30."
    first = await _store(client, "s-a", content)
    again = await _store(client, "s-a", content)
    other_session = await _store(client, "s-b", content)
    no_period = await _store(client, "s-a", "The weekly stand-up moved to 09:30")

    assert first["deduplicated"] is False
    assert again == {**first, "deduplicated": True}
    assert other_session["deduplicated"] is False and other_session["memory_id"] != first["memory_id"]
    assert no_period["deduplicated"] is False and no_period["memory_id"] != first["memory_id"]
    assert await _rows(pg_url) == 3

    recalled = await _recall(client, "s-a", "when is the stand-up", top_k=12)
    ids = [memory["memory_id"] for memory in recalled["memories"]]
    assert ids.count(first["memory_id"]) == 1
    assert no_period["memory_id"] in ids
    assert other_session["memory_id"] not in ids


async def test_dedup_does_not_normalise_unicode(client):
    composed = await _store(client, "s-a", "Meet at the caf\u00e9 at noon")
    decomposed = await _store(client, "s-a", "Meet at the cafe\u0301 at noon")

    assert decomposed["deduplicated"] is False
    assert decomposed["memory_id"] != composed["memory_id"]


# --- B11: time zones ------------------------------------------------------------------------------


def _instant(text: str) -> datetime:
    parsed = datetime.fromisoformat(text)
    assert parsed.tzinfo is not None, f"{text} carries no zone"
    return parsed


@pytest.mark.parametrize("host_zone", ["Asia/Tokyo", "America/Los_Angeles", "UTC"])
async def test_occurred_at_keeps_its_instant_and_naive_means_utc_whatever_the_host_zone(client, pg_url, host_zone):
    with _host_time_zone(host_zone):
        dentist = await _store(client, "s-t", "dentist appointment booked", occurred_at="2025-03-14T23:30:00+09:00")
        car = await _store(client, "s-t", "car serviced", occurred_at="2025-03-14T23:30:00")
        library = await _store(client, "s-t", "library books returned", occurred_at="2025-03-14")
        await _assert_rejected(
            client, pg_url, "store_memory", {"session": "s-t", "content": "x", "occurred_at": "next Tuesday-ish"},
            "occurred_at: could not parse 'next Tuesday-ish' as ISO 8601",
        )
        recalled = await _recall(client, "s-t", "what happened", top_k=12)
        audits = (await client.call_tool("list_audits", {"session": "s-t", "kind": "recall"})).structured_content

    assert _instant(dentist["occurred_at"]) == datetime(2025, 3, 14, 14, 30, tzinfo=UTC)
    assert _instant(car["occurred_at"]) == datetime(2025, 3, 14, 23, 30, tzinfo=UTC)
    assert _instant(library["occurred_at"]) == datetime(2025, 3, 14, 0, 0, tzinfo=UTC)
    assert dentist["occurred_at"] == "2025-03-14T14:30:00+00:00"
    by_id = {m["memory_id"]: _instant(m["occurred_at"]) for m in recalled["memories"]}
    assert by_id == {
        dentist["memory_id"]: _instant(dentist["occurred_at"]),
        car["memory_id"]: _instant(car["occurred_at"]),
        library["memory_id"]: _instant(library["occurred_at"]),
    }
    newest_first = [car["memory_id"], dentist["memory_id"], library["memory_id"]]
    assert audits["audits"][0]["detail"]["candidates"]["recent"] == newest_first


async def test_occurred_at_omitted_means_now(client):
    before = datetime.now(UTC)
    stored = await _store(client, "s-t", "kettle descaled")
    after = datetime.now(UTC)

    assert before <= _instant(stored["occurred_at"]) <= after


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("next Tuesday-ish", "could not parse 'next Tuesday-ish' as ISO 8601"),
        ("2025-13-45", "'2025-13-45' is not a real date or time: month must be in 1..12"),
        ("14/03/2025", "could not parse '14/03/2025' as ISO 8601"),
        ("", "could not parse '' as ISO 8601"),
        ("yesterday", "could not parse 'yesterday' as ISO 8601"),
    ],
    ids=["words", "impossible-date", "day-first", "empty", "relative"],
)
async def test_unparseable_occurred_at_is_rejected_naming_occurred_at(client, pg_url, value, expected):
    await _assert_rejected(
        client, pg_url, "store_memory", {"session": "s-t", "content": "boiler checked", "occurred_at": value},
        f"occurred_at: {expected}",
    )


@pytest.mark.parametrize("value", ["0001-01-01T00:00:00+14:00", "9999-12-31T23:59:59-05:00"], ids=["year-0", "year-10000"])
async def test_occurred_at_outside_years_1_to_9999_in_utc_is_rejected_naming_occurred_at(client, pg_url, value):
    """Valid ISO 8601 whose UTC instant leaves Python's date range reached asyncpg and came back as a
    bare "Error executing tool" (found by an engineer attacking the server)."""
    await _assert_rejected(
        client, pg_url, "store_memory", {"session": "s-t", "content": "boiler checked", "occurred_at": value},
        f"occurred_at: {value!r} is outside 0001-01-01T00:00:00Z .. 9999-12-31T23:59:59Z once in UTC",
    )


@pytest.mark.parametrize("value", ["0001-01-01T00:00:00Z", "0001-01-01T01:00:00+01:00", "9999-12-31T23:59:59.999999Z"])
async def test_occurred_at_on_the_drivers_infinity_instants_is_rejected_naming_occurred_at(client, pg_url, value):
    """asyncpg writes datetime.min and datetime.max (in UTC) as -infinity and infinity and reads them
    back without a zone: the store answered occurred_at '0001-01-01T00:00:00', and every later recall
    of the session failed as an internal error (naive and aware times compared in the vector copy)."""
    await _assert_rejected(
        client, pg_url, "store_memory", {"session": "s-t", "content": "boiler checked", "occurred_at": value},
        f"occurred_at: {value!r} is PostgreSQL's -infinity or infinity once in UTC; "
        "use a time after 0001-01-01T00:00:00Z and before 9999-12-31T23:59:59.999999Z",
    )


# --- sessions, metadata, importance ------------------------------------------------------------------


@pytest.mark.parametrize("tool", ["store_memory", "recall_memory", "delete_memory", "list_audits"])
@pytest.mark.parametrize(
    ("session", "expected"),
    [
        ("", "session: must not be empty or whitespace-only"),
        ("   ", "session: must not be empty or whitespace-only"),
        ("s" * 257, "session: is 257 characters; the limit is 256 characters"),
        ("team\nalpha", "session: must not contain control characters"),
        ("team\u0000alpha", "session: must not contain control characters"),
        ("team\u007falpha", "session: must not contain control characters"),
        ("team\u0085alpha", "session: must not contain control characters"),
    ],
    ids=["empty", "blank", "257-chars", "newline", "nul", "del", "c1-control"],
)
async def test_bad_session_is_rejected_by_every_tool_naming_session(client, pg_url, tool, session, expected):
    arguments = {
        "store_memory": {"content": "The garage door code is 1234"},
        "recall_memory": {"query": "garage door"},
        "delete_memory": {"all": True, "confirm": session},
        "list_audits": {},
    }[tool]

    await _assert_rejected(client, pg_url, tool, {"session": session, **arguments}, expected)


async def test_session_of_exactly_256_characters_is_accepted(client):
    session = "ß" * 256

    stored = await _store(client, session, "Swimming lessons are on Saturday at 10")

    assert stored["session"] == session
    assert (await _recall(client, session, "swimming"))["memories"][0]["memory_id"] == stored["memory_id"]


async def test_metadata_over_16_kb_is_rejected_naming_bytes_and_limit(client, pg_url):
    # Compact JSON {"notes":"ééé..."}: 12 bytes of syntax plus 2 bytes per é.
    await _assert_rejected(
        client, pg_url, "store_memory",
        {"session": "s-m", "content": "Trip notes", "metadata": {"notes": "é" * 8_200}},
        "metadata: is 16412 bytes as JSON; the limit is 16384 bytes",
    )


async def test_metadata_just_under_16_kb_is_stored(client):
    metadata = {"notes": "x" * (16_384 - 12)}

    stored = await _store(client, "s-m", "Trip notes", metadata=metadata)

    assert stored["deduplicated"] is False


@pytest.mark.parametrize("metadata", [[1, 2], "a string", 42, True], ids=["array", "string", "number", "bool"])
async def test_metadata_that_is_not_an_object_is_rejected_naming_metadata(client, pg_url, metadata):
    await _assert_rejected(
        client, pg_url, "store_memory", {"session": "s-m", "content": "Trip notes", "metadata": metadata},
        "metadata", "valid dictionary",
    )


async def test_metadata_with_nul_is_rejected_naming_metadata(client, pg_url):
    await _assert_rejected(
        client, pg_url, "store_memory",
        {"session": "s-m", "content": "Trip notes", "metadata": {"k": "a\u0000b"}},
        "metadata: contains a NUL character (U+0000)",
    )


@pytest.mark.parametrize("importance", [-0.5, 1.5], ids=["negative", "over-one"])
async def test_importance_outside_0_to_1_is_rejected_naming_importance(client, pg_url, importance):
    await _assert_rejected(
        client, pg_url, "store_memory", {"session": "s-m", "content": "Trip notes", "importance": importance},
        f"importance: must be in the range 0..1; got {importance}",
    )
