"""Periods dateparser does not read: rolling spans, the last weekend, seasons and Chinese dates.

``time_expressions.expression_window`` asks ``period_window`` first; dateparser 1.5 returns
nothing, or a wrong date, for each of these (tests/test_time_expressions.py):

- a rolling span, "in the past month", "over the last two weeks", "the past few days": from the
  start of the day the span before as_of, to as_of ("few" counts 3, "a couple of" 2). Only with "the": a bare "last month"
  stays dateparser's calendar month.
- "last weekend", "the past weekend", "this past weekend": Saturday and Sunday of the week (Monday
  to Sunday) before as_of's week.
- "last summer" (winter, spring, autumn, fall): the latest such season that ended before as_of's
  day, as meteorological seasons of the northern hemisphere (summer June to August, winter December
  to February).
- Chinese: 2022年3月 (that month), 2022年3月14日 and 3月14日 (that day; without a year the latest one
  not after as_of); numerals in counted spans (两周前, 三个月前, 上个星期) are rewritten for dateparser
  (``for_dateparser``).

Each window is in as_of's zone, naive here (the caller attaches the zone). Failure policy: never
raises for a question; anything unread is None.
"""

from __future__ import annotations

import calendar
import re
from datetime import datetime, time, timedelta

__all__ = ["for_dateparser", "period_window"]

_NUMBERS = {"a": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
            "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "few": 3, "couple of": 2, "a couple of": 2}
_ROLLING = re.compile(
    r"\bthe\s+(?:past|last)\s+(?:(\d{1,3}|a couple of|couple of|few|a|one|two|three|four|five|six|seven|eight|nine"
    r"|ten|eleven|twelve)\s+)?(day|week|month|year)s?\b",
    re.IGNORECASE,
)
_WEEKEND = re.compile(r"\b(?:last|the\s+past|this\s+past)\s+weekend\b", re.IGNORECASE)
_SEASON = re.compile(r"\blast\s+(summer|winter|spring|autumn|fall)\b", re.IGNORECASE)
_SEASON_START = {"spring": 3, "summer": 6, "autumn": 9, "fall": 9, "winter": 12}  # each lasts three months
_CJK_DATE = re.compile(r"(?<!\d)(?:(\d{4})\s*年\s*)?(\d{1,2})\s*月(?:\s*(\d{1,2})\s*[日号])?")
_CJK_DIGITS = {"一": "1", "二": "2", "两": "2", "三": "3", "四": "4", "五": "5", "六": "6", "七": "7", "八": "8",
               "九": "9", "十": "10"}
_CJK_COUNTED = re.compile(r"([一二两三四五六七八九十])(?=\s*(?:个\s*)?(?:天|周|星期|月|年)前)")


def for_dateparser(question: str) -> str:
    """``question`` with what dateparser misreads in Chinese rewritten: a numeral before a counted
    span (两周前 -> 2周前, 三个月前 -> 3个月前) and 上个星期 / 上星期 as 上周."""
    text = _CJK_COUNTED.sub(lambda m: _CJK_DIGITS[m.group(1)], question)
    return re.sub(r"上个?星期", "上周", text)


def _day(moment: datetime) -> datetime:
    return datetime.combine(moment.date(), time(0))


def _months_back(moment: datetime, months: int) -> datetime:
    month_index = moment.year * 12 + moment.month - 1 - months
    year, month = divmod(month_index, 12)
    if year < 1:
        raise ValueError("before year 1")
    day = min(moment.day, calendar.monthrange(year, month + 1)[1])
    return moment.replace(year=year, month=month + 1, day=day)


def _rolling(count: str | None, unit: str, base: datetime) -> tuple[datetime, datetime]:
    n = _NUMBERS[count.lower()] if count and not count.isdigit() else int(count or 1)
    unit = unit.lower()
    if unit == "day":
        start = base - timedelta(days=n)
    elif unit == "week":
        start = base - timedelta(weeks=n)
    else:
        start = _months_back(base, n * (12 if unit == "year" else 1))
    return _day(start), base


def _weekend(base: datetime) -> tuple[datetime, datetime]:
    monday = _day(base) - timedelta(days=base.weekday())
    saturday = monday - timedelta(days=2)
    return saturday, monday - timedelta(microseconds=1)


def _season(name: str, base: datetime) -> tuple[datetime, datetime]:
    first_month = _SEASON_START[name.lower()]
    today = _day(base)
    for year in range(base.year, base.year - 3, -1):  # the latest instance that ended before today
        start = datetime(year - 1 if first_month == 12 else year, first_month, 1)
        end = _months_back(start, -3)
        if end <= today:
            return start, end - timedelta(microseconds=1)
    raise ValueError("no season found")


def _cjk_date(year: str | None, month: str, day: str | None, base: datetime) -> tuple[datetime, datetime] | None:
    m = int(month)
    if not 1 <= m <= 12:
        return None
    if year is None and day is None:
        return None  # 三月 / 3月 alone: dateparser reads these right
    y = int(year) if year else base.year
    if day is None:
        start = datetime(y, m, 1)
        return start, _months_back(start, -1) - timedelta(microseconds=1)
    start = datetime(y, m, int(day))
    if year is None and start > base:
        start = start.replace(year=y - 1)
    return start, start + timedelta(days=1) - timedelta(microseconds=1)


def period_window(question: str, base: datetime) -> tuple[datetime, datetime] | None:
    """The window of the first period of the kinds above in ``question``, counted from ``base``
    (as_of, naive in its zone); None when it names none of them or a period after ``base``."""
    found: list[tuple[int, tuple[datetime, datetime] | None]] = []
    try:
        if match := _ROLLING.search(question):
            found.append((match.start(), _rolling(match.group(1), match.group(2), base)))
        if match := _WEEKEND.search(question):
            found.append((match.start(), _weekend(base)))
        if match := _SEASON.search(question):
            found.append((match.start(), _season(match.group(1), base)))
        if match := _CJK_DATE.search(question):
            found.append((match.start(), _cjk_date(match.group(1), match.group(2), match.group(3), base)))
    except (ValueError, OverflowError):  # a date before year 1, 2月30日: no window
        return None
    windows = [window for _, window in sorted(found, key=lambda item: item[0]) if window is not None]
    if not windows or windows[0][0] > base:
        return None
    return windows[0]
