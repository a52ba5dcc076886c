"""Structured-output modes, refusals and JSON out of replies (mcp_memory.llm.formats), with the
bodies and replies the servers people run send (see fake_profiles.py for where they come from)."""

from __future__ import annotations

import pytest

from mcp_memory.llm.formats import error_text, next_mode, parse_json_object, refuses_format, start_mode, strip_think

REQUIRED = ("answerable", "answer", "memory_ids")
ANSWER = '{"answerable": true, "answer": "4417", "memory_ids": ["a"]}'


@pytest.mark.parametrize(
    "reply",
    [
        ANSWER,
        f"```json\n{ANSWER}\n```",
        f"Sure! Here is the JSON: {ANSWER} Hope that helps {{:}}",
        f"<think>The schema is {{\"answer\": ...}}; cite {{a}}.</think>\n{ANSWER}",
        f"<THINK>\nfirst {{}}\n</THINK><think>second</think>{ANSWER}",
        f"Reasoning without an opening tag {{\"x\": 1}}\n</think>\n\n{ANSWER}",
        f'{{"note": "an object without the keys"}} and then {ANSWER}',
    ],
)
def test_the_answer_object_is_found_in_what_servers_send(reply):
    assert parse_json_object(reply, REQUIRED) == {"answerable": True, "answer": "4417", "memory_ids": ["a"]}


def test_without_an_object_that_has_the_keys_the_first_object_is_returned():
    assert parse_json_object('{"queries": []} {"other": 1}', ("answer",)) == {"queries": []}


@pytest.mark.parametrize("reply", ["The code is 4417.", "[1, 2]", "<think>{\"answer\": 1}</think>", "{broken",
                                   "<think>unclosed {\"answer\": 1}"])
def test_a_reply_without_a_json_object_outside_reasoning_is_refused(reply):
    with pytest.raises(ValueError, match="no JSON object"):
        parse_json_object(reply, REQUIRED)


def test_strip_think_keeps_the_text_after_reasoning():
    assert strip_think("<think>a</think> b <think>c</think> d") == "b  d"
    assert strip_think("a </think> b") == "b"
    assert strip_think("b <think> cut off") == "b"


@pytest.mark.parametrize(
    ("status", "body", "text"),
    [
        (500, {"error": {"message": "response_format type must be one of \"text\" or \"json_object\", but got: "
                                    "json_schema", "type": "server_error", "code": 500}},
         'response_format type must be one of "text" or "json_object", but got: json_schema'),
        (400, {"error": "'response_format.type' must be 'json_schema' or 'text'"},
         "'response_format.type' must be 'json_schema' or 'text'"),
        (400, {"object": "error", "message": "Input should be 'text' or 'json_object'", "type": "BadRequestError",
               "param": None, "code": 400}, "Input should be 'text' or 'json_object'"),
        (422, {"detail": [{"loc": ["body", "response_format"], "msg": "Extra inputs are not permitted",
                           "input": {"type": "json_schema", "secret": "memory text"}}]},
         "body.response_format: Extra inputs are not permitted"),
        (400, "Bad Request: unsupported response_format\n", "Bad Request: unsupported response_format"),
    ],
)
def test_each_servers_refusal_is_recognised_and_said_in_one_line(status, body, text):
    assert error_text(body) == text
    assert refuses_format(status, body)


@pytest.mark.parametrize(
    ("status", "body"),
    [
        (500, {"error": {"message": "CUDA out of memory", "type": "server_error"}}),
        (503, {"error": {"message": "response_format json_schema is loading", "type": "server_error"}}),
        (400, {"error": {"message": "This model's maximum context length is 4096 tokens", "param": "messages"}}),
        (422, {"detail": [{"loc": ["body", "temperature"], "msg": "too big", "input": {"response_format": 1}}]}),
        (500, {"error": {"message": "", "type": "InternalServerError", "code": 500}}),
        (502, "<html>Bad Gateway</html>"),
    ],
)
def test_other_errors_are_failures_not_refusals(status, body):
    assert not refuses_format(status, body)


def test_error_text_is_one_bounded_line():
    assert error_text({"error": {"message": "a\nb  c" + "x" * 1000}}) == ("a b c" + "x" * 1000)[:300]
    assert error_text(None) == "" and error_text({"detail": "Not Found"}) == "Not Found"


def test_the_ladder_and_the_first_mode_the_settings_choose():
    assert [start_mode("auto", True), start_mode("auto", False), start_mode("json_schema", False),
            start_mode("json_object", True), start_mode("text", True)] == [
        "json_schema", "json_object+schema", "json_schema", "json_object+schema", "text"]
    assert [next_mode("json_schema"), next_mode("json_object+schema"), next_mode("json_object"),
            next_mode("text")] == ["json_object+schema", "json_object", "text", None]


@pytest.mark.parametrize("reply", ['{"a":' * 5000, '{"x": ' + "[" * 100_000, f"{'[' * 5000}{{broken"])
def test_a_reply_nested_past_pythons_recursion_limit_is_a_reply_without_json_not_a_crash(reply):
    """A reply nested deeper than the decoder's recursion allows (a looping model, a hostile proxy)
    raised RecursionError, which nothing above caught: the tool call ended as an internal error."""
    with pytest.raises(ValueError, match="no JSON object"):
        parse_json_object(reply, REQUIRED)


def test_a_nested_reply_still_yields_the_answer_that_follows_it():
    assert parse_json_object('{"a":' * 5000 + f" {ANSWER}", REQUIRED)["answer"] == "4417"


def test_stripping_many_unclosed_think_tags_takes_linear_time():
    """``<think>.*?</think>`` scanned to the end from every unclosed tag: 8,000 tags (56 KB) took
    3.7 s of the event loop, 200,000 (1.4 MB) about 40 minutes. Now one pass: 200,000 tags well
    under a second on this machine (asserted at 2 s; the quadratic scan needs about 40 minutes)."""
    import time

    started = time.perf_counter()
    assert strip_think("before " + "<think>" * 200_000) == "before"
    assert strip_think(f"{'<think>' * 200_000}</think> {ANSWER}") == ANSWER
    assert time.perf_counter() - started < 2.0
