"""Time expressions read as windows: dateparser (what recall uses) against parsedatetime, on 44 questions.

Each question has the window it should give against a fixed as_of (Tuesday 2023-05-30 23:40 UTC),
or none. Reports the share read right and the microseconds per question (median of ``--repeat``
runs after one warm-up) for: the pre-check alone on questions with no time word, dateparser through
``expression_window``, and parsedatetime (``Calendar.nlp``, its accuracy flag taken as the period, the
same period-to-window rule). parsedatetime is not a dependency: ``pip install parsedatetime`` first,
or its column is left out.

    python -m benchmarks.time_expressions [--repeat 20]
"""

from __future__ import annotations

import argparse
import statistics
import time
from datetime import UTC, date, datetime

from mcp_memory.pipeline.time_expressions import _period_window, expression_window, mentions_time

AS_OF = datetime(2023, 5, 30, 23, 40, tzinfo=UTC)
D, W, M, Y = "day", "week", "month", "year"

# question -> (first day, last day) of the window, or None for no window.
CASES: dict[str, tuple[date, date] | None] = {
    "What did I do yesterday?": (date(2023, 5, 29), date(2023, 5, 29)),
    "What did I buy last week?": (date(2023, 5, 22), date(2023, 5, 28)),
    "Where did I go in March?": (date(2023, 3, 1), date(2023, 3, 31)),
    "What happened two weeks ago?": (date(2023, 5, 15), date(2023, 5, 21)),
    "What have I bought since the move?": None,  # an event anchor: no window without an LLM
    "上周我去了哪里？": (date(2023, 5, 22), date(2023, 5, 28)),
    "昨天我吃了什么？": (date(2023, 5, 29), date(2023, 5, 29)),
    "三月我在哪里？": (date(2023, 3, 1), date(2023, 3, 31)),
    "What did I do today?": (date(2023, 5, 30), date(2023, 5, 30)),
    "What did I plan this week?": (date(2023, 5, 29), date(2023, 6, 4)),
    "Who did I meet last month?": (date(2023, 4, 1), date(2023, 4, 30)),
    "Where did I travel last year?": (date(2022, 1, 1), date(2022, 12, 31)),
    "What did I cook in June?": (date(2022, 6, 1), date(2022, 6, 30)),
    "What did I read in May?": (date(2023, 5, 1), date(2023, 5, 31)),
    "What did I do 3 days ago?": (date(2023, 5, 27), date(2023, 5, 27)),
    "What did I watch a month ago?": (date(2023, 4, 1), date(2023, 4, 30)),
    "What did I eat last Monday?": (date(2023, 5, 29), date(2023, 5, 29)),
    "Who called on Friday?": (date(2023, 5, 26), date(2023, 5, 26)),
    "What happened in 2022?": (date(2022, 1, 1), date(2022, 12, 31)),
    "What did I do on March 14?": (date(2023, 3, 14), date(2023, 3, 14)),
    "What did I buy on 14 March 2022?": (date(2022, 3, 14), date(2022, 3, 14)),
    "What did I note on 2023-04-02?": (date(2023, 4, 2), date(2023, 4, 2)),
    "Where was I in April 2022?": (date(2022, 4, 1), date(2022, 4, 30)),
    "How did I sleep last night?": (date(2023, 5, 29), date(2023, 5, 29)),
    "What did I say the day before yesterday?": (date(2023, 5, 28), date(2023, 5, 28)),
    "What did I do last weekend?": (date(2023, 5, 27), date(2023, 5, 28)),
    "Where did I go last summer?": (date(2022, 6, 1), date(2022, 8, 31)),
    "How often did I run in the past week?": (date(2023, 5, 23), date(2023, 5, 30)),
    "What have I learnt since March?": (date(2023, 3, 1), date(2023, 5, 30)),
    "前天我做了什么？": (date(2023, 5, 28), date(2023, 5, 28)),
    "上个月我读了哪本书？": (date(2023, 4, 1), date(2023, 4, 30)),
    "去年我去了哪里？": (date(2022, 1, 1), date(2022, 12, 31)),
    "两周前我买了什么？": (date(2023, 5, 15), date(2023, 5, 21)),
    "2022年3月我在哪里？": (date(2022, 3, 1), date(2022, 3, 31)),
    "3月14日发生了什么？": (date(2023, 3, 14), date(2023, 3, 14)),
    # no window
    "How many days ago did I buy the bike?": None,
    "May I ask what my sister's name is?": None,
    "Which happened first, the trip or the concert?": None,
    "What is my second cousin's name?": None,
    "What was my 2nd job?": None,
    "Where do I live now?": None,
    "What is order 2023-ABC about?": None,
    "When did Caroline go to the support group?": None,
    "How many weeks did the course take?": None,
}


def _days(start: datetime, end: datetime) -> tuple[date, date]:
    return start.date(), end.date()


def read_dateparser(question: str) -> tuple[date, date] | None:
    window = expression_window(question, AS_OF)
    return None if window is None else _days(window.start, window.end)


def _parsedatetime() -> object | None:
    try:
        import parsedatetime
    except ImportError:
        return None
    return parsedatetime.Calendar(version=parsedatetime.VERSION_CONTEXT_STYLE)


def read_parsedatetime(calendar: object, question: str) -> tuple[date, date] | None:
    found = calendar.nlp(question, sourceTime=AS_OF.replace(tzinfo=None))  # type: ignore[attr-defined]
    if not found:
        return None
    moment, context = found[0][0], found[0][1]
    period = (Y if context.hasDateOrTime and context.accuracy & context.ACU_YEAR else
              M if context.accuracy & context.ACU_MONTH else W if context.accuracy & context.ACU_WEEK else D)
    return _days(*_period_window(moment, period))


def _median_us(read, questions: list[str], repeat: int) -> float:
    for question in questions:
        read(question)  # warm-up: imports and language data
    runs = []
    for _ in range(repeat):
        started = time.perf_counter()
        for question in questions:
            read(question)
        runs.append((time.perf_counter() - started) / len(questions) * 1e6)
    return statistics.median(runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    questions = list(CASES)
    timed = [q for q in questions if mentions_time(q)]
    plain = [q for q in questions if not mentions_time(q)]
    print(f"as_of {AS_OF.isoformat()}; {len(questions)} questions, {len(timed)} pass the pre-check")
    calendar = _parsedatetime()
    readers = {"dateparser": read_dateparser}
    if calendar is not None:
        readers["parsedatetime"] = lambda q: read_parsedatetime(calendar, q)
    for name, read in readers.items():
        wrong = [q for q in questions if read(q) != CASES[q]]
        print(f"{name}: {len(questions) - len(wrong)}/{len(questions)} right;"
              f" {_median_us(read, timed, args.repeat):.0f} us per question with a time word")
        for question in wrong:
            print(f"  wrong: {question!r} -> {read(question)} (want {CASES[question]})")
    print(f"pre-check alone: {_median_us(mentions_time, plain, args.repeat * 50):.1f} us per question without one")


if __name__ == "__main__":
    main()
