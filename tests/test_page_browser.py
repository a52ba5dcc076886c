"""The page at ``/`` in headless Chromium, as a person uses it.

Two real ``mcp-memory serve --transport http`` processes: one on loopback without tokens (with a
scripted planner and answer model, tests/fake_openai.py, so a recall has rewrites and a refusal),
one with ``[[auth.tokens]]``. Memories and audits are made through MCP; the browser (Debian's
``chromium`` driven by Selenium through ``chromedriver``) then picks the session, pages, searches
and opens an audit, and the test reads what is on the screen. Screenshots go to ``test-artifacts/``.

Without chromium or chromedriver the tests skip, unless ``REQUIRE_BROWSER_TESTS=1`` (``.ci/run``
sets it), where they fail.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx2
import pytest
from bearer import configured_server, sha256, token_client
from fake_openai import ChatReply, FakeOpenAI
from mcp import Client

pytestmark = pytest.mark.anyio

CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
ARTIFACTS = Path(__file__).resolve().parent.parent / "test-artifacts"
WAIT_S = 60.0
START_S = 180.0  # two servers start here, each rewriting the model once, on a shared 2-core machine
REFUSAL = "Not enough memories in this session to answer this question."
GARDEN = "home:garden"
START = datetime(2025, 4, 1, 8, 0, tzinfo=UTC)
NOTES = [  # one a day, oldest first
    "Sowed San Marzano tomatoes in the greenhouse, tray 3",
    "Basil seedlings are up on the kitchen windowsill",
    "Tomato seedlings moved to 9 cm pots",
    "Slugs ate half the lettuce; set beer traps by the bed",
    "Planted the tomatoes out in the south bed, 60 cm apart",
    "Watered everything at 6 am; forecast says 28 degrees",
    '<img src=x onerror="document.title=\'pwned\'"><script>document.title="pwned"</script> odd note',
]
ALPHA, BETA = "alpha-" + "a" * 40, "beta-" + "b" * 40
TOKENS = [{"name": "alpha", "token_sha256": sha256(ALPHA), "sessions": ["team:alpha:*"]},
          {"name": "beta", "token_sha256": sha256(BETA), "sessions": ["team:beta:*"]}]


def _missing_browser() -> str | None:
    for path in (CHROMIUM, CHROMEDRIVER):
        if not os.access(path, os.X_OK):
            return f"{path} is missing (apt-get install chromium chromium-driver)"
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install -e '.[test]')"
    return None


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Headless Chromium (a fresh profile, no background networking), 1100x720."""
    missing = _missing_browser()
    if missing:
        if os.environ.get("REQUIRE_BROWSER_TESTS") == "1":
            pytest.fail(f"the browser test must run here (REQUIRE_BROWSER_TESTS=1), but {missing}")
        pytest.skip(missing)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="mcp-memory-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-dev-shm-usage",
                 f"--user-data-dir={profile}", "--window-size=1100,720"):
        options.add_argument(flag)
    driver = webdriver.Chrome(options=options, service=Service(executable_path=CHROMEDRIVER))
    driver.set_page_load_timeout(WAIT_S)
    ARTIFACTS.mkdir(exist_ok=True)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def _fake_llm(body: dict[str, Any]) -> ChatReply:
    if body["model"] == "fake-plan":
        return ChatReply(content=json.dumps({"queries": ["tomato planting", "tomatoes planted out"],
                                             "time_window": None}))
    return ChatReply(content=json.dumps({"answerable": False, "answer": "", "memory_ids": []}))


@pytest.fixture(scope="module")
def llm() -> Iterator[FakeOpenAI]:
    """The scripted planner (two rewrites) and answer model (always refuses) of ``open_server``."""
    with FakeOpenAI() as fake:
        fake.set_chat_handler(_fake_llm)
        yield fake


@pytest.fixture(scope="module")
async def open_server(pg_url: str, tmp_path_factory: pytest.TempPathFactory, llm: FakeOpenAI) -> AsyncIterator[str]:
    """A loopback server without tokens; GARDEN holds NOTES and one recall (rewritten, then refused)."""
    llm_settings = {"base_url": llm.base_url, "api_key": "k", "plan_model": "fake-plan",
                    "answer_model": "fake-answer", "timeout_s": 5.0, "max_retries": 0}
    logs = tmp_path_factory.mktemp("page-open")
    async with configured_server(pg_url, logs, sections={"llm": llm_settings}, timeout_s=START_S) as (port, _):
        async with Client(f"http://127.0.0.1:{port}/mcp", read_timeout_seconds=WAIT_S) as client:
            for day, note in enumerate(NOTES):
                stored = await client.call_tool("store_memory", {
                    "session": GARDEN, "content": note, "occurred_at": (START + timedelta(days=day)).isoformat(),
                    "metadata": {"bed": "south"} if day == 4 else None})
                assert not stored.is_error
            await client.call_tool("store_memory", {"session": "home:kitchen", "content": "Oven runs 10 degrees hot"})
            recalled = await client.call_tool("recall_memory", {"session": GARDEN,
                                                                "query": "When did the tomatoes go out?"})
            assert recalled.structured_content["answer"] == REFUSAL
        yield f"http://127.0.0.1:{port}"


@pytest.fixture(scope="module")
async def token_server(pg_url: str, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[str]:
    """A server with tokens for team:alpha:* and team:beta:*, one memory in a session of each, and
    one recall (no LLM: no answer) in alpha's."""
    logs = tmp_path_factory.mktemp("page-tokens")
    async with configured_server(pg_url, logs, TOKENS, timeout_s=START_S) as (port, _):
        for token, session, content in ((ALPHA, "team:alpha:plans", "Alpha ships the importer on Friday"),
                                        (BETA, "team:beta:secrets", "Beta vault combination is 31-7-44")):
            async with token_client(port, token) as client:
                assert not (await client.call_tool("store_memory", {"session": session, "content": content})).is_error
                if token == ALPHA:  # an audit of a server without an answer model
                    assert not (await client.call_tool("recall_memory", {"session": session,
                                                                         "query": "when does alpha ship"})).is_error
        yield f"http://127.0.0.1:{port}"


def _wait_for(driver: Any, css: str, text: str | None = None) -> Any:
    """The first element matching ``css`` (containing ``text``), waiting at most WAIT_S seconds."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    def found(d: Any) -> Any:
        for element in d.find_elements(By.CSS_SELECTOR, css):
            if text is None or text in element.text:
                return element
        return False

    return WebDriverWait(driver, WAIT_S, poll_frequency=0.1).until(found, f"no {css!r} with {text!r}")


def _texts(driver: Any, css: str) -> list[str]:
    from selenium.webdriver.common.by import By

    return [element.text for element in driver.find_elements(By.CSS_SELECTOR, css)]


def _query(driver: Any) -> dict[str, list[str]]:
    return parse_qs(urlsplit(driver.current_url).query)


async def test_a_person_picks_a_session_pages_searches_and_opens_an_audit(browser: Any, open_server: str,
                                                                         llm: FakeOpenAI) -> None:
    from selenium.webdriver.common.by import By

    browser.get(open_server + "/")
    _wait_for(browser, "#sessions a", GARDEN).click()
    _wait_for(browser, "li.memory")
    assert _query(browser) == {"session": [GARDEN]}
    assert _texts(browser, "#sessions li")[0] == f"{GARDEN}\n{len(NOTES)}"
    contents = _texts(browser, "li.memory .content")
    assert contents == list(reversed(NOTES))  # newest first; the markup note shown as text, never run
    assert browser.title == "mcp-memory" and not browser.find_elements(By.CSS_SELECTOR, "main img, main script")
    assert _texts(browser, "li.memory .metadata") == ['{"bed":"south"}']

    assert not browser.find_elements(By.CSS_SELECTOR, "a[rel=next]")  # seven memories: one page of 50

    asked = len(llm.chat_requests())
    box = _wait_for(browser, "form.search input[name=q]")
    box.send_keys("tomatoes planted out")
    box.submit()
    _wait_for(browser, "table.results td.score")
    assert _query(browser) == {"session": [GARDEN], "q": ["tomatoes planted out"]}
    rows = browser.find_elements(By.CSS_SELECTOR, "table.results tbody tr")
    assert rows[0].find_element(By.CSS_SELECTOR, ".content").text == NOTES[4]
    scores = [float(s) for s in _texts(browser, "table.results td.score")]
    assert scores == sorted(scores, reverse=True) and scores[0] > 0
    chips = _texts(browser, "table.results tbody tr:first-child .chip")
    assert any(c.startswith("vector:0 #") for c in chips) and any(c.startswith("keyword:0 #") for c in chips)
    assert "without writing an audit row" in _wait_for(browser, "p.note", "audit row").text
    assert "total" in _wait_for(browser, "table.times").text
    browser.save_screenshot(str(ARTIFACTS / "page-search.png"))
    assert len(llm.chat_requests()) == asked  # the page's search neither plans nor answers with the LLM

    browser.refresh()  # the search's own address shows it again
    _wait_for(browser, "table.results td.score")
    assert _texts(browser, "table.results tbody tr:first-child .content") == [NOTES[4]]

    browser.get(open_server + "/?session=home%3Agarden")
    _wait_for(browser, "ul.audits li")
    assert len(_texts(browser, "ul.audits li")) == 1  # the page's searches wrote no audit row
    _wait_for(browser, "ul.audits a", "recall").click()
    _wait_for(browser, ".refusal")
    assert set(_query(browser)) == {"session", "audit"}
    assert _wait_for(browser, "p.query").text == "When did the tomatoes go out?"
    assert _texts(browser, "ul.rewrites li") == ["tomato planting", "tomatoes planted out"]
    assert _wait_for(browser, ".refusal").text == f"Refused: {REFUSAL}"
    stages = _wait_for(browser, "table.times").text
    assert all(stage in stages for stage in ("plan", "embed", "search", "fuse", "answer", "total"))
    assert _texts(browser, "table.times th")[:3] == ["plan", "embed", "search"]  # pipeline order, total last
    assert _texts(browser, "table.times th")[-1] == "total"
    summaries = _texts(browser, ".candidates summary")
    assert any(s.startswith("vector:0 (") for s in summaries) and any(s.startswith("keyword:1 (") for s in summaries)
    assert any(s.startswith("recent (") for s in summaries)
    fused = _texts(browser, "section.part ol.ranked li .score")
    assert fused and all(float(score) > 0 for score in fused)
    browser.save_screenshot(str(ARTIFACTS / "page-audit.png"))
    assert browser.title == "mcp-memory"


async def test_a_token_for_one_team_never_shows_the_other_team(browser: Any, token_server: str) -> None:
    from selenium.webdriver.common.by import By

    browser.get(token_server + "/")
    form = _wait_for(browser, "#token-form:not([hidden])")
    assert "needs a bearer token" in form.text and _texts(browser, "#sessions li") == []
    browser.save_screenshot(str(ARTIFACTS / "page-token-form.png"))

    assert not browser.find_elements(By.CSS_SELECTOR, "#forget:not([hidden])")  # no token, nothing to forget
    token = _wait_for(browser, "#token")
    token.send_keys("not-a-token")
    token.submit()
    assert "refused this token" in _wait_for(browser, "#token-form:not([hidden])", "refused").text
    assert not browser.find_elements(By.CSS_SELECTOR, "#forget:not([hidden])")  # it showed for a refused token

    token = _wait_for(browser, "#token")
    token.clear()
    token.send_keys(ALPHA)
    token.submit()
    _wait_for(browser, "#sessions a", "team:alpha:plans").click()
    assert _wait_for(browser, "li.memory .content").text == "Alpha ships the importer on Friday"
    assert [t.split("\n")[0] for t in _texts(browser, "#sessions li")] == ["team:alpha:plans"]
    assert browser.execute_script("return sessionStorage.getItem('mcp-memory-token')") == ALPHA
    _wait_for(browser, "#forget:not([hidden])")  # an accepted token can be forgotten

    _wait_for(browser, "ul.audits a", "recall").click()  # the server has no answer model
    answer = _wait_for(browser, "section.part", "No answer")
    assert answer.text.lower().count("no answer model") == 1, answer.text  # said twice before

    browser.get(token_server + "/?session=team%3Aalpha%3Aplans&q=importer")  # the session's one memory
    assert _wait_for(browser, "p.summary").text.startswith("1 result for “importer”")  # was "1 results"

    browser.get(token_server + "/?session=team%3Abeta%3Asecrets")
    error = _wait_for(browser, "main .error")
    assert error.text == ("403: session: this token may not use this session; nothing was read or changed; "
                          "it may use sessions matching 'team:alpha:*'")
    browser.get(token_server + "/?session=team%3Abeta%3Asecrets&q=vault+combination")
    _wait_for(browser, "main .error", "403")
    assert "31-7-44" not in browser.page_source and "team:beta:secrets" not in _texts(browser, "#sessions")[0]

    _wait_for(browser, "#forget").click()
    _wait_for(browser, "#token-form:not([hidden])")
    assert browser.execute_script("return sessionStorage.getItem('mcp-memory-token')") is None


async def test_the_pager_walks_a_session_newest_first_by_its_cursor(browser: Any, open_server: str) -> None:
    """Past 50 memories a second page exists; its address carries the cursor and survives a reload."""
    async with httpx2.AsyncClient(timeout=WAIT_S) as http:
        async with Client(f"{open_server}/mcp", read_timeout_seconds=WAIT_S) as client:
            for n in range(55):
                await client.call_tool("store_memory", {"session": "home:log", "content": f"Log line {n:02d}",
                                                        "occurred_at": (START + timedelta(minutes=n)).isoformat()})
        assert (await http.get(f"{open_server}/api/memories", params={"session": "home:log"})).status_code == 200
    browser.get(open_server + "/?session=home%3Alog")
    _wait_for(browser, "li.memory")
    first = _texts(browser, "li.memory .content")
    assert first == [f"Log line {n:02d}" for n in range(54, 4, -1)]
    _wait_for(browser, "a[rel=next]").click()
    _wait_for(browser, "li.memory .content", "Log line 04")
    assert "cursor" in _query(browser)
    browser.refresh()
    _wait_for(browser, "li.memory .content", "Log line 04")
    assert _texts(browser, "li.memory .content") == [f"Log line {n:02d}" for n in range(4, -1, -1)]
    assert not _texts(browser, "a[rel=next]") and _texts(browser, ".pager a") == ["← Newest"]


PHONE = (420, 900)  # px, a phone held upright
NARROWEST_TEXT_PX = 40  # a box of text narrower than this wraps word by word, or letter by letter


def _layout_faults(driver: Any) -> list[str]:
    """What is broken at this width: a page wider than the window, or a box of text (its own
    text longer than 3 characters) narrower than NARROWEST_TEXT_PX."""
    return driver.execute_script("""
        const faults = [];
        if (document.documentElement.scrollWidth > window.innerWidth + 1)
          faults.push(`page ${document.documentElement.scrollWidth} px wide in a ${window.innerWidth} px window`);
        for (const node of document.querySelectorAll("body *")) {
          const own = [...node.childNodes].filter((c) => c.nodeType === 3).map((c) => c.data).join("").trim();
          const box = node.getBoundingClientRect();
          if (own.length > 3 && box.width > 0 && box.width < arguments[0])
            faults.push(`${node.tagName.toLowerCase()} "${own.slice(0, 30)}" is ${Math.round(box.width)} px wide`);
        }
        return faults;""", NARROWEST_TEXT_PX)


async def test_at_phone_width_the_sessions_stack_above_a_full_width_column(browser: Any, open_server: str) -> None:
    """At 420 px the sidebar took half the width and the text wrapped letter by letter."""
    from selenium.webdriver.common.by import By

    browser.set_window_size(*PHONE)
    try:
        browser.get(open_server + "/?session=home%3Agarden")
        _wait_for(browser, "li.memory")
        width = browser.execute_script("return window.innerWidth")
        view, nav = browser.find_element(By.ID, "view").rect, browser.find_element(By.ID, "sessions").rect
        browser.save_screenshot(str(ARTIFACTS / "page-phone.png"))
        assert view["width"] > 300 and view["width"] > 0.9 * width, (view, width)
        assert nav["y"] + nav["height"] <= view["y"], (nav, view)  # the sessions above, not beside
        assert _layout_faults(browser) == []

        _wait_for(browser, "ul.audits a", "recall").click()
        _wait_for(browser, ".refusal")
        browser.save_screenshot(str(ARTIFACTS / "page-phone-audit.png"))
        assert _layout_faults(browser) == []
    finally:
        browser.set_window_size(1100, 720)


LOOK_ALIKES = ["team:look:x", "team:look:x ", " team:look:x", "team:look:x\u00a0", "team:look:x\u200b",
               "team:look:a  b", "team:look:a b"]


async def test_sessions_that_differ_only_in_invisible_characters_look_different(browser: Any, open_server: str) -> None:
    """``team:alpha:x`` and ``team:alpha:x `` (a trailing space) were two entries that read the same,
    in the list and in the heading: what cannot be seen is now written as its code point, marked."""
    async with Client(f"{open_server}/mcp", read_timeout_seconds=WAIT_S) as client:
        for session in LOOK_ALIKES:
            assert not (await client.call_tool("store_memory", {"session": session, "content": "look-alike"})).is_error
    browser.get(open_server + "/")
    _wait_for(browser, "#sessions a", "team:look:")
    shown = [text for text in _texts(browser, "#sessions a") if "look:" in text]
    assert sorted(shown) == sorted(["team:look:x", "team:look:x\\u0020", "\\u0020team:look:x", "team:look:x\\u00a0",
                                    "team:look:x\\u200b", "team:look:a\\u0020\\u0020b", "team:look:a b"])
    marks = browser.execute_script(
        "return [...document.querySelectorAll('#sessions a mark')].map((m) => m.title + ' ' + m.textContent)")
    assert "U+0020 \\u0020" in marks and "U+200B \\u200b" in marks

    _wait_for(browser, "#sessions a", "team:look:x\\u0020").click()
    assert _wait_for(browser, "h1.session").text == "team:look:x\\u0020"
    assert _query(browser) == {"session": ["team:look:x "]}  # the address holds the name itself
    assert _wait_for(browser, "li.memory .content").text == "look-alike"
    browser.save_screenshot(str(ARTIFACTS / "page-look-alikes.png"))
