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

from mcp_memory.pipeline.time_expressions import READ_CHARS, expression_window
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
    ("question", "first", "last"),
    [
        # Rolling spans run from as_of back over the span, up to as_of; only "the past/last N units".
        ("How many dinner parties have I attended in the past month?", date(2023, 4, 30), None),
        ("How many videos did I watch over the past few weeks?", date(2023, 5, 9), None),
        ("What did I read in the last two weeks?", date(2023, 5, 16), None),
        ("What did I cook in the past 3 days?", date(2023, 5, 27), None),
        ("How much did I spend in the past year?", date(2022, 5, 30), None),
        # The weekend of the week before as_of's week.
        ("What game did I finally beat last weekend?", date(2023, 5, 27), date(2023, 5, 28)),
        ("Which bike did I fix this past weekend?", date(2023, 5, 27), date(2023, 5, 28)),
        # The latest season that ended before as_of's day (northern meteorological seasons).
        ("Where did we go last summer?", date(2022, 6, 1), date(2022, 8, 31)),
        ("What did I ski on last winter?", date(2022, 12, 1), date(2023, 2, 28)),
        # Chinese: a month of a year, a day, numerals in counted spans.
        ("2022年3月我在哪里？", date(2022, 3, 1), date(2022, 3, 31)),
        ("3月14日我见了谁？", date(2023, 3, 14), date(2023, 3, 14)),
        ("我两周前做了什么？", date(2023, 5, 15), date(2023, 5, 21)),
        ("三个月前我买了什么？", date(2023, 2, 1), date(2023, 2, 28)),
        ("上个星期我去了哪里？", date(2023, 5, 22), date(2023, 5, 28)),
    ],
)
def test_periods_dateparser_misses_get_their_window(question, first, last):
    """dateparser 1.5 gives no window, or a wrong one (2022年3月 as year 1, 3月14日 as 14 February),
    for each of these; time_periods.py reads them."""
    window = expression_window(question, AS_OF)

    assert window is not None
    assert window.start == datetime.combine(first, time(0), UTC)
    assert window.end == (AS_OF if last is None else datetime.combine(last, time.max, UTC))


@pytest.mark.parametrize(
    "question",
    [
        "What did I buy in 2024年6月?",  # after as_of: a plan, not a memory
        "What will I do this weekend?",
        "What have I bought since the move?",  # an event anchor: finding "the move" is a retrieval of its own
        "How many days ago did I buy the bike?",
        "May I ask what my sister's name is?",
        "What was my 2nd job?",
        "Where do I live now?",
        "What is order 2023-ABC about?",
        "2月30日发生了什么？",  # no such day
        "When did Caroline go to the support group?",
    ],
)
def test_no_window_without_a_period_this_can_read(question):
    assert expression_window(question, AS_OF) is None


_FILLER = "Here is what I noted about the garden shed and the bike. " * 60  # 3,480 characters, no time word


def test_a_time_expression_after_a_long_preamble_is_read():
    window = expression_window(_FILLER + "What did I do two weeks ago?", AS_OF)

    assert window is not None and (window.start.date(), window.end.date()) == (date(2023, 5, 15), date(2023, 5, 21))


def test_the_parser_reads_a_bounded_stretch_from_the_first_time_word():
    """A hostile query dense with dates ("jan 1 jan 1 ...", 4,000 characters) held the event loop
    for a second in dateparser; it now reads at most READ_CHARS from the first time word, so an
    expression further on is not read (a question names its period near its first time word)."""
    near = "What is planned for tomorrow, and what did I buy on 14 March 2022?"  # tomorrow: no window (ahead)
    far = near.replace(", and", ", " + "and then some more words " * (READ_CHARS // 25) + "and")

    assert len(far) > READ_CHARS
    assert expression_window(near, AS_OF) is not None
    assert expression_window(far, AS_OF) is None


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


async def test_as_of_and_the_window_hide_nothing_until_does(client):
    """docs/tools.md: the window joins the ranking and is not a filter, and as_of hides nothing; until
    is what limits a recall to what was known by a moment."""
    ids = await _dinners(client, "s-hide")
    ask = {"session": "s-hide", "query": "What did I cook for dinner yesterday?", "as_of": "2023-05-29T21:00:00Z"}

    returned = {m["memory_id"] for m in (await call(client, "recall_memory", ask))["memories"]}
    assert returned == set(ids.values())  # the 30th, after as_of, and the 29th, outside "yesterday", too

    until = await call(client, "recall_memory", {**ask, "until": "2023-05-29T21:00:00Z"})
    assert {m["memory_id"] for m in until["memories"]} == {ids["2023-05-28"], ids["2023-05-29"]}


async def test_time_expressions_are_on_by_default_and_as_of_is_audited(client):
    """On since the window list ranks the window's memories by the question (LoCoMo temporal R@10
    75.6 -> 76.7, LongMemEval_S temporal recall_all@5 81.8 -> 90.9; evals/README.md)."""
    ids = await _dinners(client, "s-on")

    await call(client, "recall_memory", {"session": "s-on", "query": "What did I cook yesterday?", "as_of": "2023-05-30"})

    detail = await _last_audit(client, "s-on")
    assert detail["time_window_source"] == "expression"
    assert detail["candidates"]["window"] == [ids["2023-05-29"]]
    assert detail["as_of"] == "2023-05-30T00:00:00+00:00"


async def test_time_expressions_off_give_no_window(pg_url, work_dir, empty_tables):
    async with served(make_settings(pg_url, work_dir, recall={"time_expressions": False})) as client:
        await _dinners(client, "s-off")

        await call(client, "recall_memory", {"session": "s-off", "query": "What did I cook yesterday?", "as_of": "2023-05-30"})

        detail = await _last_audit(client, "s-off")
        assert (detail["time_window"], detail["time_window_source"]) == (None, None)
        assert "window" not in detail["candidates"]


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
        ("2023-02-30", "as_of: '2023-02-30' is not a real date or time: day is out of range for month"),
        ("2023-05-30T25:00:00", "as_of: '2023-05-30T25:00:00' is not a real date or time: hour must be in 0..23"),
        ("2023-05-30T10:00:00+25:00",
         "as_of: '2023-05-30T10:00:00+25:00' is not a real date or time: the UTC offset must be less than 24 hours"),
        (20230530, "as_of: input should be a valid string; got a number"),
        ("٢٠٢٣-٠٥-٣٠", "as_of: could not parse '٢٠٢٣-٠٥-٣٠' as ISO 8601; use e.g. 2025-03-14T09:30:00+01:00 or 2025-03-14"),
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


async def _busy_saturday(client: Client, session: str) -> tuple[str, list[str]]:
    """A Saturday of 25 memories whose one about jewelry comes last (LongMemEval_S's "jewelry last
    Saturday": 72 memories that day, the evidence was not among the first 20 by time)."""
    chores = ["I mowed the lawn", "I vacuumed the living room", "I paid the electricity bill", "I fixed the bike tyre",
              "I watered the tomatoes", "I cleaned the fridge", "I called the plumber about the sink",
              "I sorted the recycling", "I changed the bed sheets", "I washed the car", "I ironed five shirts",
              "I replaced a light bulb in the hall", "I took out the trash", "I dusted the bookshelves",
              "I defrosted the freezer", "I oiled the squeaky door", "I mopped the kitchen floor",
              "I unclogged the shower drain", "I swept the garage", "I folded the laundry", "I scrubbed the oven",
              "I repotted the basil", "I cleaned the windows", "I tidied the attic"]
    ids = [await store(client, session, chore, occurred_at=f"2023-05-27T{8 + i // 4:02d}:{(i % 4) * 15:02d}:00Z")
           for i, chore in enumerate(chores)]
    necklace = await store(client, session, "My aunt gave me a silver necklace with a pearl pendant",
                           occurred_at="2023-05-27T21:00:00Z")
    return necklace, ids


async def test_the_window_list_ranks_a_busy_days_memories_by_the_question_not_by_time(reading):
    necklace, chores = await _busy_saturday(reading, "s-busy")
    await store(reading, "s-busy", "My aunt gave me a silver bracelet", occurred_at="2023-05-20T12:00:00Z")

    result = await call(reading, "recall_memory", {"session": "s-busy", "query": "I received a piece of jewelry last"
                                                   " Saturday from whom?", "as_of": "2023-05-30T21:00:00Z"})

    window = (await _last_audit(reading, "s-busy"))["candidates"]["window"]
    assert window[0] == necklace, "the day's memory nearest the question heads the window list"
    assert len(window) == 20 and set(window) <= {necklace, *chores}, "20 (window_candidates) of that Saturday only"
    assert result["memories"][0]["memory_id"] == necklace


async def test_without_query_vectors_the_window_list_is_the_windows_first_memories_by_time(reading, deps):
    from mcp_memory.errors import EmbeddingError
    from mcp_memory.models import Plan, RecallFilter, TimeWindow
    from mcp_memory.pipeline.search import search

    necklace, chores = await _busy_saturday(reading, "s-down")
    ready = await deps.ready()
    window = TimeWindow(start=datetime(2023, 5, 27, tzinfo=UTC), end=datetime(2023, 5, 27, 23, 59, tzinfo=UTC))

    async def embed(texts: list[str]) -> list[Any]:
        raise EmbeddingError("embedding provider failed")

    plan = Plan(queries=["jewelry on Saturday"], time_window=window)
    searched = await search(ready.repository, ready.vectors, "s-down", plan, embed, ready.settings.recall)
    assert searched.lists["window"] == chores[:20]

    until_noon = RecallFilter(until=datetime(2023, 5, 27, 12, tzinfo=UTC))  # the caller's filter narrows the window
    searched = await search(ready.repository, ready.vectors, "s-down", plan, embed, ready.settings.recall, until_noon)
    assert searched.lists["window"] == chores[:17]


async def test_the_window_list_keeps_inside_the_callers_filter(reading, deps):
    from mcp_memory.models import Plan, RecallFilter, TimeWindow
    from mcp_memory.pipeline.search import search

    necklace, chores = await _busy_saturday(reading, "s-narrow")
    ready = await deps.ready()
    plan = Plan(queries=["jewelry"], time_window=TimeWindow(start=datetime(2023, 5, 27, tzinfo=UTC),
                                                            end=datetime(2023, 5, 27, 23, 59, tzinfo=UTC)))
    embed = ready.embedder.embed_batch
    morning = RecallFilter(until=datetime(2023, 5, 27, 9, 59, tzinfo=UTC))
    searched = await search(ready.repository, ready.vectors, "s-narrow", plan, embed, ready.settings.recall, morning)
    assert set(searched.lists["window"]) == set(chores[:8])
    elsewhere = RecallFilter(since=datetime(2023, 6, 1, tzinfo=UTC))  # misses the window: nothing passes both
    searched = await search(ready.repository, ready.vectors, "s-narrow", plan, embed, ready.settings.recall, elsewhere)
    assert "window" not in searched.lists


_EDGES = [
    datetime(9999, 12, 31, 12, tzinfo=UTC),
    datetime(9999, 12, 31, 9, tzinfo=timezone(timedelta(hours=-14))),  # 23:00 UTC: its day ends after year 9999 in UTC
    datetime(9999, 12, 31, 23, 59, tzinfo=timezone(timedelta(hours=14))),
    datetime(1, 1, 2, 10, tzinfo=timezone(timedelta(hours=14))),  # its yesterday starts before year 1 in UTC
    datetime(1, 1, 1, 0, 0, 1, tzinfo=UTC),
]


@pytest.mark.parametrize("as_of", _EDGES, ids=lambda as_of: as_of.isoformat())
@pytest.mark.parametrize("question", [
    "What happened this year?", "What did I do in December?", "What did I do on 12/31/9999?", "What happened today?",
    "What did I do yesterday?", "What happened last week?", "What happened in the past 3 days?", "什么事发生在12月31日？",
    "What happened in 9999?", "What did I do last winter?", "What happened in January?",
])
def test_at_the_ends_of_time_a_question_gets_a_window_inside_them_or_none(question, as_of):
    window = expression_window(question, as_of)

    if window is not None:  # both ends are instants PostgreSQL and Python can hold
        assert datetime(1, 1, 1, tzinfo=UTC) <= window.start.astimezone(UTC) <= window.end.astimezone(UTC)
        assert window.end.astimezone(UTC) <= datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)


@pytest.mark.parametrize(("as_of", "question"), [
    ("9999-12-31", "What happened this year?"),
    ("9999-12-31T23:00:00Z", "What did I do in December?"),
    ("9999-12-31T09:00:00-14:00", "What happened today?"),
    ("0001-01-02T10:00:00+14:00", "What did I do yesterday?"),
])
async def test_a_recall_asked_at_the_ends_of_time_answers_with_the_memories(client, as_of, question):
    memory_id = await store(client, "s-edge", "I planted tomatoes along the fence", occurred_at="9999-12-30T12:00:00Z")

    result = await call(client, "recall_memory", {"session": "s-edge", "query": question, "as_of": as_of})

    assert [memory["memory_id"] for memory in result["memories"]] == [memory_id]
