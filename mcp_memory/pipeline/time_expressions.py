"""Time expressions: the period a question names ("yesterday", "last week", "in March", 上周), as a window.

Part of planning without an LLM (``plan.py`` calls ``expression_window`` when the planner gave no
window). The parser is dateparser (Scrapinghub's, maintained; English and Chinese; no network):
``search_dates`` finds the expression, ``DateDataParser`` says its period (day, week, month, year),
and the window is that whole period around the date it names, in ``as_of``'s time zone: "last week"
on Tuesday 2023-05-30 is Monday 05-22 .. Sunday 05-28, "in March" the most recent March not after
``as_of``, "two weeks ago" the week holding as_of - 14 days. "since <date>" runs to ``as_of``.

A cheap pre-check (``names_time`` or a Chinese time word) keeps dateparser away from questions
with no time word: it costs about 1 ms a question (200 ms on its first call, the import and its
language data), the pre-check a few microseconds. Spans dateparser returns that hold no time word
("2", "2nd", "now", "at 5pm") or sit inside an identifier ("2023-ABC"), a bare "May" that opens the question ("May I ..."), a bare weekday ("the Sunday mass"), the
future ("tonight", "next week", or a date after ``as_of``), and dates that
contradict the year or month written in the span (dateparser reads 2022年3月 as year 1, 3月14日 as
14 February) are dropped: no window is better than a wrong one.

Periods dateparser does not read come from ``time_periods.period_window`` first: rolling spans
("in the past month"), "last weekend", "last summer", Chinese dates with a year or a day, and
Chinese numerals in counted spans (两周前). Not handled, no window: an event anchor ("since the move", "before the trip"): the period starts at
a memory, and finding that memory is a retrieval of its own, which a wrong anchor would turn into a
filter of the wrong period; the LLM planner handles these (docs/recall-quality.md).

dateparser reads at most ``READ_CHARS`` of the question, from a little before its first time word: its
search costs time in proportion to the dates it finds. Failure policy: never raises for a question;
anything unparsed, or a period outside years 1..9999 in UTC, is no window.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, time, timedelta
from functools import cache
from typing import Any

from mcp_memory.models import TimeWindow
from mcp_memory.pipeline.time_periods import for_dateparser, period_window

__all__ = ["MAY", "READ_CHARS", "TIME_WORDS", "expression_window", "mentions_time", "warm"]

# Words and numbers that name a time or period in English (in other languages only numeric dates and
# years); the LLM planner's guard (plan.names_time) reads the same list. "May" counts only
# capitalised ("may I ..." names no time).
_MONTHS = "january|february|march|april|june|july|august|september|october|november|december"
_UNITS = "day|days|week|weeks|weekend|month|months|year|years|summer|winter|spring|autumn|fall|night|morning"
TIME_WORDS = re.compile(
    rf"\b(?:{_MONTHS}|jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec"
    r"|monday|tuesday|wednesday|thursday|friday|saturday|sunday"
    r"|yesterday|today|tonight|tomorrow|recently|lately|ago|christmas|easter|new year's"
    rf"|(?:last|this|next|past|previous|coming|same)\s+(?:{_UNITS})"
    r"|(?:last|past)\s+(?:few|couple\s+of|several|\d{1,3}|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)"
    r"\s+(?:days|weeks|months|years)"
    r"|(?:19|20)\d\d(?:s)?)\b"
    r"|\b\d{1,4}[-/]\d{1,2}(?:[-/]\d{1,4})?\b|\b\d{1,2}\.\d{1,2}\.\d{2,4}\b",
    re.IGNORECASE,
)
MAY = re.compile(r"\bMay\b")
# Chinese: yesterday/today/..., last/this/next week/month/year, weekdays, "N月", "N年", "N天/周/月/年前".
_CJK_TIME_WORDS = re.compile(
    r"昨天|前天|今天|明天|上周|本周|这周|下周|上个?星期|这个?星期|上个?月|这个?月|本月|去年|前年|今年"
    r"|周[一二三四五六日末]|星期[一二三四五六日天]|[一二三四五六七八九十\d]{1,3}\s*[月年号日]|[天周月年]前"
)
_YEAR = re.compile(r"(?<!\d)((?:19|20)\d\d)(?!\d)")
_CJK_MONTH = re.compile(r"(?<!\d)(\d{1,2})\s*月")
_WEEKDAY = re.compile(r"(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)s?", re.IGNORECASE)
_AHEAD = re.compile(r"\b(?:tonight|tomorrow|next|coming)\b|明天|下周|下个", re.IGNORECASE)
_GLUED = re.compile(r"[-_/.#A-Za-z0-9]")
_LANGUAGES = ["en", "zh"]


READ_CHARS = 200
"""What dateparser reads: this many characters from a little before the first time word. Its
search costs about 0.25 ms a character on text dense with dates ("jan 1 jan 1 ...": a 4,000-character
query held the server for a second); a question names its period near its first time word (the
longest LongMemEval or LoCoMo question that names one has 166 characters)."""
_LEAD_CHARS = 60  # before the first time word: "two weeks" of "two weeks ago"


def mentions_time(question: str) -> bool:
    """Whether ``question`` holds a time word (English or Chinese); a few microseconds, no parser."""
    return bool(TIME_WORDS.search(question) or MAY.search(question) or _CJK_TIME_WORDS.search(question))


def _first_time_word(question: str) -> int | None:
    """Where the first time word of ``question`` starts, or None."""
    found = [match.start() for pattern in (TIME_WORDS, MAY, _CJK_TIME_WORDS) if (match := pattern.search(question))]
    return min(found) if found else None


@cache
def _parsers() -> tuple[Any, Any]:
    """dateparser's search and period parser, imported on first use (0.2 s)."""
    from dateparser.date import DateDataParser
    from dateparser.search import search_dates

    return search_dates, DateDataParser


def warm() -> None:
    """Import dateparser and load its English and Chinese data (0.2-1 s), so the first question with a
    time word does not pay it (a 600 ms p99 at concurrency 1 without; benchmarks/RESULTS.md)."""
    now = datetime.now(UTC)
    expression_window("what did I do yesterday?", now)
    expression_window("我昨天做了什么？", now)


def _settings(base: datetime) -> dict[str, Any]:
    return {"RELATIVE_BASE": base, "PREFER_DATES_FROM": "past", "RETURN_AS_TIMEZONE_AWARE": False}


def _period_window(day: datetime, period: str) -> tuple[datetime, datetime]:
    """The whole ``period`` (day, week Monday..Sunday, month, year) holding ``day``, naive."""
    start = datetime.combine(day.date(), time(0))
    if period == "week":
        start -= timedelta(days=start.weekday())
        end = start + timedelta(days=7)
    elif period == "month":
        start = start.replace(day=1)
        end = start.replace(year=start.year + start.month // 12, month=start.month % 12 + 1)
    elif period == "year":
        start = start.replace(month=1, day=1)
        end = start.replace(year=start.year + 1)
    else:  # day, time
        end = start + timedelta(days=1)
    return start, end - timedelta(microseconds=1)


def _credible(span: str, found: datetime, question: str, position: int) -> bool:
    """Whether dateparser's reading of ``span`` can stand (see the module docstring)."""
    if not mentions_time(span):
        return False
    if span.strip() == "May" and not question[:position].strip():
        return False
    if _WEEKDAY.fullmatch(span.strip()) or _AHEAD.search(span):  # "the Sunday mass"; "tonight", "next week"
        return False
    if _GLUED.match(question[position - 1 : position] if position else "") or _GLUED.match(
        question[position + len(span) : position + len(span) + 1]
    ):  # part of an identifier ("order 2023-ABC")
        return False
    if (year := _YEAR.search(span)) and int(year.group(1)) != found.year:
        return False
    return not ((month := _CJK_MONTH.search(span)) and int(month.group(1)) != found.month)


def expression_window(question: str, as_of: datetime) -> TimeWindow | None:
    """The period the first time expression of ``question`` names, computed against ``as_of``.

    Args:
        question: the recall query as asked.
        as_of: the moment the question is asked (timezone-aware); the window's calendar is its zone's.

    Returns:
        The window (start and end inclusive, in ``as_of``'s zone), or None when the question names
        no period this can read.
    """
    if not mentions_time(question):
        return None
    base = as_of.replace(tzinfo=None)
    if (period := period_window(question, base)) is not None:  # what dateparser misses (time_periods.py)
        return _zoned(*period, as_of)
    question = for_dateparser(question)
    offset = max(0, (_first_time_word(question) or 0) - _LEAD_CHARS)
    search_dates, DateDataParser = _parsers()
    settings = _settings(base)
    try:
        found = search_dates(question[offset : offset + READ_CHARS], languages=_LANGUAGES, settings=settings) or []
    except Exception:  # noqa: BLE001 - a parser bug costs the window, never the recall
        return None
    position = offset
    for span, date in found:
        position = question.find(span, position)
        if not _credible(span, date, question, max(position, 0)):
            continue
        if span.lower().startswith("in ") and span.lower().endswith("ago"):
            span = span[3:]  # dateparser reads "in a month ago" as a month from now
        try:
            data = DateDataParser(languages=_LANGUAGES, settings=settings).get_date_data(span)
        except Exception:  # noqa: BLE001
            continue
        if data.date_obj is None or data.date_obj > base:
            continue  # nothing read, or a date after as_of: a plan, not a memory
        try:
            start, end = _period_window(data.date_obj, data.period or "day")
        except (ValueError, OverflowError):  # a period that runs past year 9999 ("this year" asked in 9999)
            return None
        if re.search(r"\bsince\s*$", question[: max(position, 0)], re.IGNORECASE) or span.lower().startswith("since"):
            end = base
        return _zoned(start, end, as_of)
    return None


def _zoned(start: datetime, end: datetime, as_of: datetime) -> TimeWindow | None:
    """The window of naive ``start`` .. ``end`` in ``as_of``'s zone; None when an end falls outside
    years 1..9999 once in UTC ("yesterday" asked at 0001-01-02T10:00+14:00), which no stored time can."""
    window = TimeWindow(start=start.replace(tzinfo=as_of.tzinfo), end=end.replace(tzinfo=as_of.tzinfo))
    try:
        window.start.astimezone(UTC), window.end.astimezone(UTC)
    except OverflowError:
        return None
    return window
