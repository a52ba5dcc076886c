"""One rule for every boolean, integer and number setting, from the environment and from config.toml.

Issue 25, part 4: pydantic's lax mode read ``MCP_MEMORY_SUPERSEDE__LLM_ON_STORE=yes`` (and ``off``,
``1``, ``t``) as a boolean and ``candidates = 2.0`` as 2. A boolean setting is now only true or false
(a TOML boolean, or the text true or false in any case in the environment); an integer setting is a
whole number written without a fraction; a number setting is a number. A bad value is refused in one
line naming the setting, and the server does not start.
"""

from __future__ import annotations

import types
from pathlib import Path
from typing import Any, Union, get_args, get_origin

import pytest
from pydantic import BaseModel, ValidationError

from mcp_memory.cli import main
from mcp_memory.settings import Settings

GROUPS = ["limits", "embedding", "llm", "recall", "supersede", "http", "metrics"]


def _scalar(annotation: Any) -> type | None:
    """bool, int or float when a field holds one of them (or None), else None."""
    members = get_args(annotation) if get_origin(annotation) in (Union, types.UnionType) else (annotation,)
    members = tuple(member for member in members if member is not type(None))
    return members[0] if len(members) == 1 and members[0] in (bool, int, float) else None


def _settings_of(kind: type) -> list[tuple[str, str]]:
    """(environment variable, dotted name) of every top-level and group setting of ``kind``."""
    found = [(f"MCP_MEMORY_{name.upper()}", name) for name, field in Settings.model_fields.items()
             if _scalar(field.annotation) is kind]
    for group in GROUPS:
        model: type[BaseModel] = Settings.model_fields[group].annotation  # type: ignore[assignment]
        found += [(f"MCP_MEMORY_{group.upper()}__{name.upper()}", f"{group}.{name}")
                  for name, field in model.model_fields.items() if _scalar(field.annotation) is kind]
    return found


BOOLEANS = _settings_of(bool)
INTEGERS = _settings_of(int)
NUMBERS = _settings_of(float)


def test_every_kind_of_setting_is_covered() -> None:
    assert ("MCP_MEMORY_SUPERSEDE__LLM_ON_STORE", "supersede.llm_on_store") in BOOLEANS
    assert ("MCP_MEMORY_SUPERSEDE__CANDIDATES", "supersede.candidates") in INTEGERS
    assert ("MCP_MEMORY_RECALL__VECTOR_WEIGHT", "recall.vector_weight") in NUMBERS
    assert ("MCP_MEMORY_POOL_MAX_SIZE", "pool_max_size") in INTEGERS
    assert len(BOOLEANS) >= 6 and len(INTEGERS) >= 30 and len(NUMBERS) >= 15


def _refusal(config: Path | None = None) -> str:
    """The one problem Settings.load finds, as ``<dotted name>: <message> (got <input>)``."""
    with pytest.raises(ValidationError) as refused:
        Settings.load(config)
    [error] = refused.value.errors()
    return f"{'.'.join(str(part) for part in error['loc'])}: {error['msg']} (got {error['input']!r})"


def _refused_by_the_command_line(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    """What ``mcp-memory <argv>`` prints when the settings are refused (it exits 2 before starting anything)."""
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "Traceback" not in err, err
    return err


@pytest.fixture(autouse=True)
def nowhere(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Were a value accepted, ``doctor`` would fail at once: no reachable database, a data dir of the test's own."""
    monkeypatch.setenv("MCP_MEMORY_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("MCP_MEMORY_DATABASE_URL", "postgresql://mcp@127.0.0.1:9/none?connect_timeout=1")
    monkeypatch.delenv("MCP_MEMORY_CONFIG", raising=False)


@pytest.mark.parametrize("value", ["yes", "no", "on", "off", "1", "0", "t", "y"])  # "" is the default: tests/test_cli.py, a bundle's empty option
@pytest.mark.parametrize(("variable", "name"), BOOLEANS, ids=[name for _, name in BOOLEANS])
def test_a_boolean_setting_in_the_environment_is_only_true_or_false(
    monkeypatch: pytest.MonkeyPatch, variable: str, name: str, value: str
) -> None:
    monkeypatch.setenv(variable, value)

    assert _refusal() == f"{name}: must be true or false (got {value!r})"


@pytest.mark.parametrize(("value", "expected"), [("true", True), ("FALSE", False), ("True", True), (" false ", False)])
def test_true_and_false_in_any_case_are_booleans(monkeypatch: pytest.MonkeyPatch, value: str, expected: bool) -> None:
    monkeypatch.setenv("MCP_MEMORY_SUPERSEDE__LLM_ON_STORE", value)

    assert Settings.load().supersede.llm_on_store is expected


@pytest.mark.parametrize("value", ["2.0", "2.5", "1e3", "two", "true"])
@pytest.mark.parametrize(("variable", "name"), INTEGERS, ids=[name for _, name in INTEGERS])
def test_an_integer_setting_in_the_environment_is_a_whole_number_without_a_fraction(
    monkeypatch: pytest.MonkeyPatch, variable: str, name: str, value: str
) -> None:
    monkeypatch.setenv(variable, value)

    assert _refusal() == f"{name}: must be a whole number, written without a fraction (got {value!r})"


@pytest.mark.parametrize("value", ["true", "fast", "nan", "inf"])
@pytest.mark.parametrize(("variable", "name"), NUMBERS, ids=[name for _, name in NUMBERS])
def test_a_number_setting_in_the_environment_is_a_number(
    monkeypatch: pytest.MonkeyPatch, variable: str, name: str, value: str
) -> None:
    monkeypatch.setenv(variable, value)

    assert _refusal() == f"{name}: must be a number (got {value!r})"


def test_numbers_in_the_environment_are_read_as_written(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCP_MEMORY_SUPERSEDE__CANDIDATES", "7")
    monkeypatch.setenv("MCP_MEMORY_SUPERSEDE__MIN_SIMILARITY", "0.25")
    monkeypatch.setenv("MCP_MEMORY_RECALL__VECTOR_WEIGHT", "2")
    monkeypatch.setenv("MCP_MEMORY_RECALL__HALF_LIFE_DAYS", "1e1")

    settings = Settings.load()

    assert settings.supersede.candidates == 7
    assert settings.supersede.min_similarity == 0.25
    assert settings.recall.vector_weight == 2.0
    assert settings.recall.half_life_days == 10.0


@pytest.mark.parametrize(
    ("toml", "error"),
    [
        ('[supersede]\nllm_on_store = "yes"\n', "supersede.llm_on_store: must be true or false (got 'yes')"),
        ("[supersede]\ncheck_words = 1\n", "supersede.check_words: must be true or false (got 1)"),
        ("[supersede]\ncandidates = 2.0\n", "supersede.candidates: must be a whole number, written without a "
         "fraction (got 2.0)"),
        ("[supersede]\ncandidates = true\n", "supersede.candidates: must be a whole number, written without a "
         "fraction (got True)"),
        ("[recall]\nvector_weight = true\n", "recall.vector_weight: must be a number (got True)"),
        ("[metrics]\npublic = 0\n", "metrics.public: must be true or false (got 0)"),
        ("pool_max_size = 10.0\n", "pool_max_size: must be a whole number, written without a fraction (got 10.0)"),
        ('[[auth.tokens]]\nname = "a"\ntoken = "a-token-of-thirty-two-characters"\nsessions = ["*"]\n'
         'can_delete = "yes"\n', "auth.tokens.0.can_delete: must be true or false (got 'yes')"),
    ],
    ids=["string-yes", "one", "fraction", "boolean-int", "boolean-number", "metrics-zero", "top-level",
         "token-can-delete"],
)
def test_the_config_file_follows_the_same_rule(tmp_path: Path, toml: str, error: str) -> None:
    config = tmp_path / "config.toml"
    config.write_text(toml)

    assert _refusal(config) == error


@pytest.mark.parametrize(("variable", "value", "line"), [
    ("MCP_MEMORY_SUPERSEDE__LLM_ON_STORE", "yes", "supersede.llm_on_store: must be true or false (got 'yes')"),
    ("MCP_MEMORY_SUPERSEDE__CHECK_WORDS", "off", "supersede.check_words: must be true or false (got 'off')"),
    ("MCP_MEMORY_SUPERSEDE__CANDIDATES", "2.0",
     "supersede.candidates: must be a whole number, written without a fraction (got '2.0')"),
])
def test_the_server_does_not_start_and_says_which_setting_in_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], variable: str, value: str, line: str
) -> None:
    monkeypatch.setenv(variable, value)

    assert _refused_by_the_command_line(capsys, ["doctor"]) == f"mcp-memory: invalid settings: {line}"


def test_the_config_file_takes_booleans_integers_and_numbers_as_toml_writes_them(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text("[supersede]\nllm_on_store = false\ncandidates = 3\nmin_similarity = 1\n")

    settings = Settings.load(config)

    assert settings.supersede.llm_on_store is False
    assert settings.supersede.candidates == 3
    assert settings.supersede.min_similarity == 1.0
