"""Session patterns: exact names, prefixes ending in '*', and '*' alone; nothing else is special."""

import pytest

from mcp_memory.access.scope import ALL_SESSIONS, SessionScope


def test_exact_pattern_matches_only_that_session():
    scope = SessionScope.parse(["team:alpha:notes"])
    assert scope.allows("team:alpha:notes")
    assert not scope.allows("team:alpha:notes2")
    assert not scope.allows("Team:alpha:notes")
    assert not scope.allows("team:alpha:notes ")


def test_prefix_pattern_matches_sessions_that_start_with_it():
    scope = SessionScope.parse(["team:alpha:*"])
    assert scope.allows("team:alpha:")
    assert scope.allows("team:alpha:x")
    assert not scope.allows("team:alpha")
    assert not scope.allows("team:beta:x")


@pytest.mark.parametrize("session", ["a%", "a_", "a\\", "a'", "a?", "a\u200d"])
def test_sql_and_glob_characters_are_ordinary(session):
    scope = SessionScope.parse(["a"])
    assert not scope.allows(session)
    assert SessionScope.parse([session]).allows(session)
    assert not SessionScope.parse([session]).allows("a")


def test_star_alone_means_every_session():
    assert SessionScope.parse(["*"]).allows("anything")
    assert ALL_SESSIONS.allows("")
    assert SessionScope.parse(["*"]).patterns() == ["*"]


@pytest.mark.parametrize("bad", ["", "a*b", "**"])
def test_malformed_patterns_are_refused(bad):
    with pytest.raises(ValueError):
        SessionScope.parse([bad])


def test_patterns_round_trip():
    assert SessionScope.parse(["b", "a:*", "a"]).patterns() == ["a", "b", "a:*"]
