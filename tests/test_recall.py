"""recall_memory through the in-process client: quality, isolation, top_k, bounded results.

Field cases B17, B19, B27 (top_k as a string), B28, B29 and B30 (/work/shared/cases/field-bugs.md),
a recall-quality smoke test over everyday facts, and a long memory recalled by its last paragraph.
"""

from __future__ import annotations

import json
import random
import re
from typing import Any

import anyio
import pytest
from conftest import make_settings
from fake_openai import ChatReply, FakeOpenAI
from mcp import Client

from mcp_memory.deps import Deps
from mcp_memory.server import build_server
from mcp_memory.pipeline.validate import new_memory

from tools import served
from tools import store as _store

pytestmark = [pytest.mark.anyio, pytest.mark.backends("single", "citus")]

# --- helpers ------------------------------------------------------------------------------


async def _recall(client: Client, session: str, query: str, **extra: Any) -> dict[str, Any]:
    result = await client.call_tool("recall_memory", {"session": session, "query": query, **extra})
    assert not result.is_error, result.content[0].text
    return result.structured_content


def _ids(recalled: dict[str, Any]) -> list[str]:
    return [memory["memory_id"] for memory in recalled["memories"]]


async def _last_recall_audit(client: Client, session: str) -> dict[str, Any]:
    listed = await client.call_tool("list_audits", {"session": session, "kind": "recall", "limit": 1})
    assert not listed.is_error, listed.content[0].text
    return listed.structured_content["audits"][0]["detail"]


_SUBJECTS = [
    "The harbour master", "A retired schoolteacher from Galway", "The night-shift baker", "Our county librarian",
    "A young cellist", "The village council", "An amateur astronomer", "The ferry's chief engineer",
    "A beekeeper near the old mill", "The museum's textile curator", "Two cyclists from Utrecht",
    "The allotment society", "A stonemason", "The regional weather office", "A travelling bookbinder",
    "The lighthouse keeper's grandson", "A potter who sells at the Sunday market", "The choir director",
]
_ACTIONS = [
    "spent most of the spring repairing", "wrote a short pamphlet about", "argued for an hour over",
    "kept careful notes on", "photographed", "quietly restored", "gave an evening talk on", "measured and sketched",
    "collected old letters describing", "drew up a new timetable for", "organised volunteers to clear",
    "compared three centuries of records on", "found a forgotten map of", "planted hedges alongside",
]
_OBJECTS = [
    "the cast-iron footbridge over the canal", "the drainage ditches behind the church",
    "the tide tables used by local fishermen", "a collection of Victorian seed catalogues",
    "the flagstones of the market square", "the migration of swifts above the quarry",
    "the stained-glass windows of the chapel", "a derelict signal box on the branch line",
    "the rules of a nineteenth-century rowing club", "the orchards on the south-facing slope",
    "a shipwreck visible only at the lowest spring tides", "the acoustics of the old corn exchange",
    "the wool trade between the valley farms", "a sundial that runs eleven minutes slow",
]
_CLAUSES = [
    "while the rain drummed on the slate roofs", "before the first frost settled on the fields",
    "after the autumn fair had packed up", "during a week of unusually calm seas",
    "with help from a patient archivist", "although nobody had asked them to",
    "in the long evenings of midsummer", "once the school holidays began",
    "using only a notebook and a borrowed camera", "to the mild amusement of their neighbours",
]
_AFTERTHOUGHTS = [
    "Most people in town still disagree about what it means.",
    "The results were pinned to the noticeboard outside the post office.",
    "A copy now sits in the reading room, rarely opened.",
    "Several visitors came back the following year to see it again.",
    "The local paper ran a short piece about it on page seven.",
    "It took far longer than anyone had expected.",
    "Nobody could agree on who had started the project.",
    "The work is unfinished, and probably always will be.",
]


def _prose(rng: random.Random, chars: int) -> str:
    """Varied filler paragraphs of real-looking sentences, about ``chars`` characters long."""
    paragraphs: list[str] = []
    total = 0
    while total < chars:
        sentences = [
            f"{rng.choice(_SUBJECTS)} {rng.choice(_ACTIONS)} {rng.choice(_OBJECTS)} {rng.choice(_CLAUSES)}."
            for _ in range(rng.randint(3, 5))
        ]
        sentences.append(rng.choice(_AFTERTHOUGHTS))
        paragraph = " ".join(sentences)
        paragraphs.append(paragraph)
        total += len(paragraph) + 2
    return "\n\n".join(paragraphs)


# --- recall quality --------------------------------------------------------------------------

EVERYDAY_FACTS = [
    "My dentist is Dr. Okafor on Elm Street; the next check-up is on 3 June.",
    "The wifi password at the cabin is pinecone-42.",
    "Sara is allergic to peanuts and always carries an EpiPen.",
    "The car's annual inspection is due in September.",
    "I parked on level 4 of the airport garage, bay C17.",
    "Tom's birthday is on 14 February and he loves single-malt whisky.",
    "The recycling bins are collected every other Tuesday.",
    "Our landlord's phone number is 555-0142.",
    "I prefer aisle seats on long flights.",
    "The spare house key is hidden under the blue flowerpot by the back door.",
    "The kids' swimming lessons are on Saturday mornings at 10.",
    "Grandpa's favourite film is Casablanca.",
    "I switched electricity supplier to GreenVolt in March.",
    "The boiler pressure should stay between 1 and 1.5 bar.",
    "My running goal this year is a half marathon in under two hours.",
    "We adopted a grey cat named Pixel from the animal shelter.",
    "The office moved to the fourth floor of the Harbour building.",
    "Maria recommended the Thai restaurant on Baker Road.",
    "I'm reading 'The Overstory' for the book club.",
    "The gym membership renews automatically on the first of the month.",
    "My blood type is O negative.",
    "The printer cartridge model is HP 305XL.",
    "Laura is vegetarian but eats fish.",
    "The garden tap freezes if it is not drained in November.",
    "My passport expires in August 2027.",
    "Dad takes his blood pressure tablets every morning with breakfast.",
    "The team retrospective is every second Friday afternoon.",
    "I lent my ladder to the neighbour at number 12.",
    "The bike lock combination is 4-7-1-9.",
    "We are planning a trip to Lisbon in October.",
    "The kitchen tap drips; a plumber is booked for Thursday.",
    "My manager at work is Priya Natarajan.",
    "The library books are due back on the 21st.",
    "I take my coffee black with no sugar.",
    "The council tax is paid by direct debit on the 5th.",
    "Ben is learning to play the cello.",
    "The smoke alarm battery was replaced in January.",
    "Our wedding anniversary is on 9 July.",
    "The dog needs its rabies booster next spring.",
    "My sister's new flat is in Leeds, near the train station.",
]

PARAPHRASED_QUESTIONS = [
    ("Where did I leave the car at the airport?", 4),
    ("Which food must Sara stay away from?", 2),
    ("What is the internet code up at the cabin?", 1),
    ("How can I get into the house if I lose my keys?", 9),
    ("What pet did we bring home from the rescue centre?", 15),
    ("Who is my boss?", 31),
    ("How do I like my coffee?", 33),
    ("When do I have to renew my passport?", 24),
    ("What gift would Tom enjoy?", 5),
    ("Which instrument is Ben studying?", 35),
]


async def test_each_paraphrased_question_finds_its_fact_in_the_top_3(client):
    ids = [await _store(client, "s-life", fact) for fact in EVERYDAY_FACTS]

    misses = []
    for question, index in PARAPHRASED_QUESTIONS:
        top = _ids(await _recall(client, "s-life", question, top_k=3))
        if ids[index] not in top:
            misses.append(question)

    assert misses == []


async def test_a_long_memory_is_recalled_by_a_fact_in_its_last_paragraph_and_listed_once(client):
    rng = random.Random(20_000)
    fact = (
        "Finally, the important part: Aunt Miriam's spare-room safe opens with the combination 31-08-77, "
        "and the deeds to the Cornwall cottage are kept inside it."
    )
    long_text = _prose(rng, 20_000 - len(fact) - 2)
    long_text = f"{long_text[: 20_000 - len(fact) - 2]}\n\n{fact}"
    assert len(long_text) == 20_000
    assert "Miriam" not in long_text[: -len(fact)] and "safe" not in long_text[: -len(fact)]
    long_id = await _store(client, "s-long", long_text)
    for other in [
        "The hotel room safe in Madrid used the code 4512.",
        "Uncle Peter keeps the boat keys in the kitchen drawer.",
        "Miriam's birthday dinner is at the Italian place on Friday.",
        "The cottage in Wales is booked for the last week of August.",
        "Insurance documents are in the grey filing cabinet.",
        "The gas meter is read every three months.",
        "Aunt Joan sends a Christmas card every December.",
        "The old deeds for the allotment were lost in the flood.",
    ]:
        await _store(client, "s-long", other)

    recalled = await _recall(client, "s-long", "What is the combination of Aunt Miriam's safe?", top_k=12)

    ids = _ids(recalled)
    assert long_id in ids[:3]
    assert ids.count(long_id) == 1
    assert len(ids) == len(set(ids))
    assert recalled["memories"][ids.index(long_id)]["content"] == long_text


# --- B17 and session isolation -----------------------------------------------------------------


async def test_a_session_never_sees_another_sessions_memories_even_when_it_has_none(client):
    alpha_id = await _store(client, "s-alpha", "The project codename is BLUEBIRD")

    empty = await _recall(client, "s-beta", "project codename")
    other_case = await _recall(client, "S-ALPHA", "project codename")
    own = await _recall(client, "s-alpha", "project codename")

    assert empty["memories"] == [] and other_case["memories"] == []
    assert empty["answer"] is None
    assert _ids(own)[0] == alpha_id
    beta_audits = (await client.call_tool("list_audits", {"session": "s-beta"})).structured_content["audits"]
    assert [row["kind"] for row in beta_audits] == ["recall"]
    assert all(row["session"] == "s-beta" for row in beta_audits)
    assert alpha_id not in json.dumps(beta_audits)


async def test_with_an_answer_model_an_empty_or_other_session_gets_the_refusal_and_the_model_sees_no_memory(
    pg_url, work_dir, deps, empty_tables
):
    """B17 with a scripted answer model: it cites whatever memories it is shown, so it reveals them."""
    with FakeOpenAI() as fake:

        def cite_everything(body: dict[str, Any]) -> ChatReply:
            shown = re.findall(r'<memory id="([^"]+)"', body["messages"][-1]["content"])  # short ids
            return ChatReply(content=json.dumps({"answerable": True, "answer": "BLUEBIRD", "memory_ids": shown}))

        fake.set_chat_handler(cite_everything)
        settings = make_settings(
            pg_url, work_dir, llm={"base_url": fake.base_url, "answer_model": "fake-chat", "max_retries": 0}
        )
        started = Deps(settings)
        await started.start()
        try:
            async with Client(build_server(settings, started), mode="legacy") as client:
                alpha_id = await _store(client, "s-alpha", "The project codename is BLUEBIRD")
                await _store(client, "s-gamma", "The project codename is REDWING")

                empty = await _recall(client, "s-beta", "project codename")
                other_case = await _recall(client, "S-ALPHA", "project codename")
                assert fake.chat_requests() == []
                own = await _recall(client, "s-alpha", "project codename")
        finally:
            await started.close()

    refusal = settings.recall.refusal
    for result in (empty, other_case):
        assert result == {
            "answer": refusal, "memories": [], "answerable": False, "truncated": False, "omitted_memory_ids": [],
            "filters": None,
        }
    assert own["answer"] == "BLUEBIRD" and _ids(own) == [alpha_id]
    prompt = fake.chat_requests()[0].body["messages"][-1]["content"]
    assert "BLUEBIRD" in prompt and "REDWING" not in prompt


async def test_recall_in_one_session_never_ranks_memories_of_a_crowded_neighbour(client):
    own = [
        await _store(client, "s-mine", text)
        for text in ["The gate code for the depot is 7781.", "Depot opening hours are 7 to 15 on weekdays."]
    ]
    for i in range(20):
        await _store(client, "s-theirs", f"The gate code for depot {i} is {7000 + i}.")

    recalled = await _recall(client, "s-mine", "depot gate code", top_k=20)

    assert set(_ids(recalled)) == set(own)
    detail = await _last_recall_audit(client, "s-mine")
    listed = {memory_id for ids in detail["candidates"].values() for memory_id in ids}
    assert listed <= set(own)


# --- B19: injection -------------------------------------------------------------------------------

HOSTILE_SESSIONS = ["s-alpha' OR '1'='1", 's-alpha") or true or ("', "%", "s_alpha", "s-%", "*", "s-alpha;--", "\\"]


async def test_hostile_session_names_match_only_themselves(client):
    alpha_id = await _store(client, "s-alpha", "Backup drive is in the top drawer")

    for session in HOSTILE_SESSIONS:
        assert (await _recall(client, session, "backup drive"))["memories"] == [], session

    own = {
        session: await _store(client, session, f"Backup drive for {session!r} is in the safe")
        for session in HOSTILE_SESSIONS
    }
    for session, memory_id in own.items():
        assert _ids(await _recall(client, session, "backup drive")) == [memory_id], session
    assert _ids(await _recall(client, "s-alpha", "backup drive")) == [alpha_id]


@pytest.mark.parametrize(
    "query",
    ["'; DROP TABLE memories; --", "backup & | ! :* (drive", "100%_done\\", "drive')) OR 1=1 --", "<-> !! & |", "%%__"],
)
async def test_queries_with_sql_or_tsquery_syntax_are_plain_text(client, query):
    alpha_id = await _store(client, "s-alpha", "Backup drive is in the top drawer")

    result = await client.call_tool("recall_memory", {"session": "s-alpha", "query": query})

    assert not result.is_error, result.content[0].text
    assert _ids(await _recall(client, "s-alpha", "backup drive")) == [alpha_id]


# --- B27 / B30: top_k -------------------------------------------------------------------------------

FIFTEEN_FACTS = [
    "The blue bin is for paper and cardboard.", "Swimming club meets on Wednesdays at 6.",
    "The car insurance renews in May.", "My niece turns seven in April.", "The router is in the hallway cupboard.",
    "Bread flour is on the top shelf.", "The bike needs new brake pads.", "Piano tuning is booked for the 12th.",
    "The neighbours' cat is called Biscuit.", "Water the ferns every Sunday.", "The fuse box is under the stairs.",
    "Our train to Glasgow leaves at 08:05.", "The tax return is due in January.",
    "The plumber's name is Ahmed.", "Spare light bulbs are in the garage.",
]


@pytest.fixture
async def fifteen(client) -> list[str]:
    return [await _store(client, "s-k", fact) for fact in FIFTEEN_FACTS]


async def test_top_k_3_returns_exactly_3_in_descending_score(client, fifteen):
    recalled = await _recall(client, "s-k", "household chores", top_k=3)

    scores = [memory["score"] for memory in recalled["memories"]]
    assert len(scores) == 3
    assert scores == sorted(scores, reverse=True)


async def test_omitted_top_k_returns_exactly_the_default_12(client, fifteen):
    assert len((await _recall(client, "s-k", "household chores"))["memories"]) == 12


async def test_top_k_100_returns_every_memory_of_a_small_session_once(client, fifteen):
    recalled = await _recall(client, "s-k", "household chores", top_k=100)

    assert sorted(_ids(recalled)) == sorted(fifteen)


async def test_top_k_deeper_than_the_candidate_lists_still_returns_top_k_memories(client):
    """recall.vector_candidates is 50 and no word of the question is in the memories: a top_k of 80
    must still fill up from a session of 90."""
    contents = [f"Locker {n} in the east corridor holds spare uniforms, size {n % 7 + 1}." for n in range(90)]
    limiter = anyio.Semaphore(8)

    async def one(content: str) -> None:
        async with limiter:
            await _store(client, "s-deep", content)

    async with anyio.create_task_group() as group:
        for content in contents:
            group.start_soon(one, content)

    recalled = await _recall(client, "s-deep", "where are extra work clothes kept?", top_k=80)

    assert len(recalled["memories"]) == 80
    assert len(set(_ids(recalled))) == 80


@pytest.mark.parametrize("top_k", [0, -1, 101, 10_000])
async def test_top_k_outside_1_to_100_is_rejected_naming_top_k_and_the_range(client, fifteen, top_k):
    result = await client.call_tool("recall_memory", {"session": "s-k", "query": "chores", "top_k": top_k})

    assert result.is_error
    assert f"top_k: must be in the range 1..100; got {top_k}" in result.content[0].text
    listed = await client.call_tool("list_audits", {"session": "s-k"})
    assert listed.structured_content["audits"] == []
    assert len((await _recall(client, "s-k", "chores", top_k=2))["memories"]) == 2


async def test_top_k_sent_as_a_numeric_string_is_treated_as_a_number(client, fifteen):
    recalled = await _recall(client, "s-k", "household chores", top_k="5")

    assert len(recalled["memories"]) == 5


@pytest.mark.parametrize("top_k", ["five", "5.5", "", None, [5]])
async def test_top_k_that_is_not_an_integer_is_rejected_naming_top_k(client, fifteen, top_k):
    result = await client.call_tool("recall_memory", {"session": "s-k", "query": "chores", "top_k": top_k})

    assert result.is_error
    assert "top_k" in result.content[0].text
    assert (await client.call_tool("list_audits", {"session": "s-k"})).structured_content["audits"] == []
    assert not (await client.call_tool("recall_memory", {"session": "s-k", "query": "chores"})).is_error


# --- B28: bounded results ------------------------------------------------------------------------------

MAX_RESPONSE_CHARS = 80_000


async def _store_concurrently(client: Client, session: str, contents: list[str], **extra: Any) -> list[str]:
    ids: list[str] = [""] * len(contents)
    limiter = anyio.Semaphore(8)

    async def one(index: int) -> None:
        async with limiter:
            ids[index] = await _store(client, session, contents[index], **extra)

    async with anyio.create_task_group() as group:
        for index in range(len(contents)):
            group.start_soon(one, index)
    return ids


async def _insert_directly(deps: Deps, session: str, contents: list[str], vectors: list[Any]) -> list[str]:
    """Insert through the real validation and repository, with vectors computed by the caller."""
    ready = await deps.ready()
    ids: list[str] = [""] * len(contents)
    limiter = anyio.Semaphore(8)

    async def one(index: int) -> None:
        async with limiter:
            memory = new_memory(session, contents[index], None, None, None, ready.settings.limits)
            ids[index] = (await ready.repository.insert_memory(memory, [vectors[index]])).memory_id

    async with anyio.create_task_group() as group:
        for index in range(len(contents)):
            group.start_soon(one, index)
    assert len(set(ids)) == len(contents)
    return ids


def _assert_bounded(result: Any, stored: dict[str, str]) -> dict[str, Any]:
    """The result fits in both forms; every memory is whole; returned and omitted ids are disjoint."""
    body = result.structured_content
    assert len(result.content[0].text) <= MAX_RESPONSE_CHARS
    assert len(json.dumps(body, ensure_ascii=False)) <= MAX_RESPONSE_CHARS
    assert body["truncated"] is True
    for memory in body["memories"]:
        assert memory["content"] == stored[memory["memory_id"]]
    returned = _ids(body)
    assert set(returned).isdisjoint(body["omitted_memory_ids"])
    assert set(body["omitted_memory_ids"]) <= set(stored)
    return body


async def test_a_recall_of_100_huge_memories_is_bounded_and_drops_whole_memories_from_the_low_end(client, deps):
    """B28. The 100 x 30,000-character memories go in through validation and the repository, each
    with the real model's vector of its heading: embedding every window would take minutes, and
    this test is about the size of the result, not its ranking."""
    rng = random.Random(28)
    headings = [f"Harbour logbook volume {i}" for i in range(100)]
    contents = [f"{heading}.\n\n{_prose(rng, 30_000)}"[:30_000] for heading in headings]
    vectors = await (await deps.ready()).embedder.embed_batch(headings)
    ids = await _insert_directly(deps, "s-big", contents, vectors)

    result = await client.call_tool("recall_memory", {"session": "s-big", "query": "harbour logbook", "top_k": 100})

    assert not result.is_error
    body = _assert_bounded(result, dict(zip(ids, contents, strict=True)))
    assert 1 <= len(body["memories"]) <= 2
    assert len(body["omitted_memory_ids"]) >= 10
    detail = await _last_recall_audit(client, "s-big")
    assert detail["selected"] == _ids(body) + body["omitted_memory_ids"]
    assert len(detail["selected"]) == 100
    assert detail["truncated"] is True
    assert detail["omitted_memory_ids"] == body["omitted_memory_ids"]


async def test_a_recall_of_many_metadata_heavy_memories_stays_within_the_bound_as_text(client):
    """The bound holds for the text an agent reads (pretty-printed JSON), not only for compact JSON."""
    metadata = {f"field_{n:02d}": f"value number {n}" for n in range(40)}
    rng = random.Random(280)
    contents = [f"Inventory item {i}: {_prose(rng, 150)}"[:200] for i in range(60)]
    ids = await _store_concurrently(client, "s-meta-heavy", contents, metadata=metadata)

    result = await client.call_tool(
        "recall_memory", {"session": "s-meta-heavy", "query": "inventory item", "top_k": 60}
    )

    assert not result.is_error
    body = _assert_bounded(result, dict(zip(ids, contents, strict=True)))
    assert len(body["memories"]) >= 20
    assert all(memory["metadata"] == metadata for memory in body["memories"])


# --- recency decay counts from as_of --------------------------------------------------------------


async def test_recency_decay_counts_age_from_as_of_so_an_early_as_of_ranks_as_it_did_then(pg_url, work_dir, empty_tables):
    """With a half-life, a recall "as of" a past date decays each memory by its age at that date (an eval
    asks at a question's date), not by its age today: as of the older memory's day neither has aged, so
    the better match comes first; today the newer one, half a year younger, outranks it."""
    settings = make_settings(pg_url, work_dir, recall={"half_life_days": 30})
    async with served(settings) as client:
        match = await _store(client, "s-decay", "The billing service keeps its invoices in PostgreSQL.",
                             occurred_at="2020-01-01")
        later = await _store(client, "s-decay", "We ordered pizza for the team lunch on Friday.",
                             occurred_at="2020-07-01")
        question = "Which database keeps the billing service's invoices?"

        then = await _recall(client, "s-decay", question, top_k=2, as_of="2020-01-01")
        today = await _recall(client, "s-decay", question, top_k=2)

    assert _ids(then) == [match, later]
    assert _ids(today) == [later, match]


async def test_with_a_half_life_a_recall_centuries_after_its_memories_still_ranks_them_by_the_question(
    pg_url, work_dir, empty_tables
):
    """0.5 ** (age / half-life) fell below the smallest float for memories about 90 years (3,000
    half-lives of 30 days) older than as_of: every score became 0 and the ranking memory_id order."""
    settings = make_settings(pg_url, work_dir, recall={"half_life_days": 30})
    async with served(settings) as client:
        other = await _store(client, "s-aeon", "We ordered pizza for the team lunch on Friday.", occurred_at="2020-01-01")
        match = await _store(client, "s-aeon", "The billing service keeps its invoices in PostgreSQL.",
                             occurred_at="2020-01-01")
        question = "Which database keeps the billing service's invoices?"

        assert _ids(await _recall(client, "s-aeon", question, top_k=2, as_of="2020-01-02")) == [match, other]
        far = await _recall(client, "s-aeon", question, top_k=2, as_of="2400-01-01")

    assert _ids(far) == [match, other]
    assert far["memories"][0]["score"] > far["memories"][1]["score"]


# --- B29: crowded index -----------------------------------------------------------------------------------

SMALL_SESSION_FACTS = [
    "Give the tomatoes on the balcony a good soak every evening in July.",
    "The basil on the kitchen windowsill wants water twice a week.",
    "Water the greenhouse cucumbers first thing in the morning.",
    "The lawn sprinkler runs for twenty minutes on Sundays.",
    "Do not water the cactus more than once a month.",
    "The rain barrel by the shed is used for the vegetable beds.",
    "Tomato plants need more water once the fruit starts to swell.",
    "Mulch around the courgettes keeps the soil moist for longer.",
    "The orchid gets an ice cube of water every Saturday.",
    "Hanging baskets dry out fast and need watering daily in summer.",
    "Seedlings on the patio should be misted, not drenched.",
    "The drip hose in the raised beds is on a timer at 6 am.",
]


async def test_a_small_session_gets_a_full_vector_list_when_3000_near_identical_memories_crowd_the_index(
    client, deps
):
    """B29. The 3,000 bulk memories go in through validation and the repository. Their vectors are
    the real model's for 300 of the texts, each shared by 10 texts that differ only in the reminder
    number (embedding all 3,000 takes 10-25 s on a small CI machine); duplicates crowd HNSW harder."""
    bulk = [f"Reminder {i}: water the tomato plants on the balcony" for i in range(3_000)]
    distinct = await (await deps.ready()).embedder.embed_batch(bulk[:300])
    bulk_ids = set(await _insert_directly(deps, "s-bulk", bulk, [distinct[i % 300] for i in range(3_000)]))
    small_ids = set(await _store_concurrently(client, "s-small", SMALL_SESSION_FACTS))

    recalled = await _recall(client, "s-small", "when should I water the tomato plants", top_k=10)

    assert len(recalled["memories"]) == 10
    assert set(_ids(recalled)) <= small_ids
    vector_list = (await _last_recall_audit(client, "s-small"))["candidates"]["vector:0"]
    assert set(vector_list) == small_ids
    assert bulk_ids.isdisjoint(vector_list)
