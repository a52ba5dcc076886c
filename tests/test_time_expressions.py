"""A time expression in the question becomes the recall's time window, counted from as_of."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from datetime import UTC, date, datetime, time, timedelta, timezone
from typing import Any

import pytest
from conftest import make_settings
from fake_openai import ChatReply
from mcp import Client

from mcp_memory.pipeline.time_expressions import expression_window
from tools import call, served, store

pytestmark = pytest.mark.anyio

AS_OF = datetime(2023, 5, 30, 23, 40, tzinfo=UTC)  # a Tuesday


@pytest.mark.parametrize(
    ("question", "first", "last"),
    [
        ("What did I do yesterday?", date(2023, 5, 29), date(2023, 5, 29)),
        ("What did I buy last week?", date(2023, 5, 22), date(2023, 5, 28)),  # Monday..Sunday
        ("Where did I go in March?", date(2023, 3, 1), date(2023, 3, 31)),
        ("Where did I go in June?", date(2022, 6, 1), date(2022, 6, 30)),  # the latest June not after as_of
        ("What happened two weeks ago?", date(2023, 5, 15), date(2023, 5, 21)),
        ("上周我去了哪里？", date(2023, 5, 22), date(2023, 5, 28)),
        ("昨天我吃了什么？", date(2023, 5, 29), date(2023, 5, 29)),
        ("三月我在哪里？", date(2023, 3, 1), date(2023, 3, 31)),
        ("Who did I meet last month?", date(2023, 4, 1), date(2023, 4, 30)),
        ("What happened in 2022?", date(2022, 1, 1), date(2022, 12, 31)),
        ("What did I do 3 days ago?", date(2023, 5, 27), date(2023, 5, 27)),
        ("Who called on Friday?", date(2023, 5, 26), date(2023, 5, 26)),
        ("What did I buy on 14 March 2022?", date(2022, 3, 14), date(2022, 3, 14)),
        ("What have I learnt since March?", date(2023, 3, 1), date(2023, 5, 30)),  # since: up to as_of
    ],
)
def test_a_time_expression_names_the_whole_period_before_as_of(question, first, last):
    window = expression_window(question, AS_OF)

    assert window is not None
    assert (window.start.date(), window.end.date()) == (first, last)
    assert window.start.time().isoformat() == "00:00:00"
    assert window.end == (AS_OF if "since" in question else datetime.combine(last, time.max, UTC))


@pytest.mark.parametrize(
    "question",
    [
        "What have I bought since the move?",  # an event anchor: finding "the move" is a retrieval of its own
        "How many days ago did I buy the bike?",
        "May I ask what my sister's name is?",
        "What was my 2nd job?",
        "Where do I live now?",
        "What is order 2023-ABC about?",
        "2022年3月我在哪里？",  # dateparser 1.5 reads year 1: no window rather than a wrong one
        "3月14日发生了什么？",  # ... and 14 February
        "When did Caroline go to the support group?",
    ],
)
def test_no_window_without_a_period_this_can_read(question):
    assert expression_window(question, AS_OF) is None


def test_the_calendar_is_that_of_as_of_zone():
    tokyo = timezone(timedelta(hours=9))
    as_of = datetime(2023, 5, 30, 1, 0, tzinfo=tokyo)  # still 29 May in UTC

    window = expression_window("what did I do yesterday?", as_of)

    assert window is not None
    assert (window.start, window.end.date()) == (datetime(2023, 5, 29, tzinfo=tokyo), date(2023, 5, 29))


@pytest.fixture
async def reading(pg_url, work_dir, empty_tables) -> AsyncIterator[Client]:
    """A server without an LLM that reads time expressions."""
    async with served(make_settings(pg_url, work_dir, recall={"time_expressions": True})) as client:
        yield client


async def _last_audit(client: Client, session: str) -> dict[str, Any]:
    return (await call(client, "list_audits", {"session": session, "limit": 1}))["audits"][0]["detail"]


async def _dinners(client: Client, session: str) -> dict[str, str]:
    dinners = {"2023-05-28": "I cooked a mushroom risotto for dinner", "2023-05-29": "I cooked lentil soup for dinner",
               "2023-05-30": "I cooked a green curry for dinner"}
    return {day: await store(client, session, text, occurred_at=f"{day}T19:00:00Z") for day, text in dinners.items()}


async def test_recall_with_yesterday_ranks_yesterdays_memory_first_counted_from_as_of(reading):
    ids = await _dinners(reading, "s-y")

    result = await call(reading, "recall_memory",
                        {"session": "s-y", "query": "What did I cook for dinner yesterday?", "as_of": "2023-05-30T21:00:00Z"})

    assert result["memories"][0]["memory_id"] == ids["2023-05-29"]
    detail = await _last_audit(reading, "s-y")
    assert detail["as_of"] == "2023-05-30T21:00:00+00:00"
    assert detail["time_window"] == {"start": "2023-05-29T00:00:00Z", "end": "2023-05-29T23:59:59.999999Z"}
    assert detail["time_window_source"] == "expression"
    assert detail["candidates"]["window"] == [ids["2023-05-29"]]

    await call(reading, "recall_memory",
               {"session": "s-y", "query": "What did I cook for dinner yesterday?", "as_of": "2023-05-29"})
    assert (await _last_audit(reading, "s-y"))["candidates"]["window"] == [ids["2023-05-28"]]


async def test_time_expressions_are_off_by_default_and_as_of_is_audited(client):
    await _dinners(client, "s-off")

    await call(client, "recall_memory", {"session": "s-off", "query": "What did I cook yesterday?", "as_of": "2023-05-30"})

    detail = await _last_audit(client, "s-off")
    assert (detail["time_window"], detail["time_window_source"]) == (None, None)
    assert detail["as_of"] == "2023-05-30T00:00:00+00:00"


async def test_the_llm_planners_window_wins_over_the_expression(pg_url, work_dir, fake, empty_tables):
    llm = {"base_url": fake.base_url, "api_key": "k", "plan_model": "fake-plan", "timeout_s": 1.0, "max_retries": 0}
    settings = make_settings(pg_url, work_dir, llm=llm, recall={"time_expressions": True})
    async with served(settings) as client:
        ids = await _dinners(client, "s-llm")
        fake.script_chat(ChatReply(content=json.dumps(
            {"queries": [], "time_window": {"start": "2023-05-28", "end": "2023-05-28"}})))
        await call(client, "recall_memory", {"session": "s-llm", "query": "What did I cook yesterday?",
                                             "as_of": "2023-05-30T21:00:00Z"})
        detail = await _last_audit(client, "s-llm")
        assert detail["time_window_source"] == "llm"
        assert detail["candidates"]["window"] == [ids["2023-05-28"]]
        assert "Today is 2023-05-30" in fake.chat_requests()[-1].body["messages"][0]["content"]  # the planner's today is as_of

        fake.script_chat(ChatReply(content=json.dumps({"queries": [], "time_window": None})))
        await call(client, "recall_memory", {"session": "s-llm", "query": "What did I cook yesterday?",
                                             "as_of": "2023-05-30T21:00:00Z"})
        detail = await _last_audit(client, "s-llm")
        assert detail["time_window_source"] == "expression"  # the planner gave none
        assert detail["candidates"]["window"] == [ids["2023-05-29"]]


@pytest.mark.parametrize(
    ("as_of", "message"),
    [
        ("yesterday", "as_of: could not parse 'yesterday' as ISO 8601; use e.g. 2025-03-14T09:30:00+01:00 or 2025-03-14"),
        ("2023-02-30", "as_of: could not parse '2023-02-30' as ISO 8601; use e.g. 2025-03-14T09:30:00+01:00 or 2025-03-14"),
        (20230530, "as_of: input should be a valid string; got a number"),
    ],
)
async def test_a_bad_as_of_is_one_line_naming_it_and_the_call_is_logged_with_its_request_id(client, caplog, as_of,
                                                                                               message):
    caplog.set_level(logging.INFO, logger="mcp_memory.calls")

    result = await client.call_tool("recall_memory", {"session": "s", "query": "what happened yesterday?", "as_of": as_of})

    assert result.is_error
    assert result.content[0].text == f"Error executing tool recall_memory: {message}"
    [line] = [record.fields for record in caplog.records if record.name == "mcp_memory.calls"]
    assert line["tool"] == "recall_memory" and line["outcome"] == "invalid_input" and len(line["request_id"]) == 16
