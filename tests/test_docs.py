"""The README and docs/ name only what exists: every relative link (and anchor), every
``mcp-memory <command> --flag``, every setting (``section.key`` and ``MCP_MEMORY_*``), and the
figures a sample shows that the package decides (the doctor sample's migration count).

No server starts here: the flags come from the CLI's own argparse parser, the settings from
the Settings model. Anchors follow GitHub's heading slugs (lower case, punctuation dropped,
spaces to hyphens, ``-1``, ``-2`` for repeats).
"""

from __future__ import annotations

import argparse
import os
import re
from collections.abc import Iterator
from functools import cache
from importlib.resources import files
from pathlib import Path

import pytest
from mcp.client.stdio import get_default_environment
from pydantic import BaseModel

from mcp_memory.cli import _parser
from mcp_memory.settings import Settings

ROOT = Path(__file__).resolve().parent.parent
PAGES = sorted({ROOT / "README.md", *(ROOT / "docs").glob("*.md"), ROOT / "benchmarks" / "README.md",
                ROOT / "benchmarks" / "RESULTS.md", ROOT / "evals" / "README.md",
                *(ROOT / "benchmarks" / "history").glob("*.md"), *(ROOT / "evals" / "history").glob("*.md")})
FENCE = re.compile(r"^(```|~~~).*?^\1[ \t]*$", re.M | re.S)
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
INLINE_CODE = re.compile(r"`([^`]+)`")
COMMAND = re.compile(r"\bmcp-memory(?:-pg)?\s+(serve|token|doctor|model|usage|export|import)\b(.*)", re.S)
FLAG = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]*)")
SECTIONS = tuple(name for name, field in Settings.model_fields.items()
                 if isinstance(field.annotation, type) and issubclass(field.annotation, BaseModel))
SETTING = re.compile(rf"(?<![\w/.-])((?:{'|'.join(SECTIONS)})(?:\.[a-z_]+)+)(?![\w/(-])")
FILE_SUFFIXES = {"py", "md", "sql", "json", "jsonl", "toml", "txt", "yml", "html", "js", "css", "png"}
ENV = re.compile(r"\bMCP_MEMORY_([A-Z0-9_]+)\b")
NOT_SETTINGS = {"CONFIG", "LOCOMO_PATH", "TEST_DATABASE_URL"}  # read by the CLI, evals and tests


def _id(path: Path) -> str:
    return str(path.relative_to(ROOT))


def _prose(path: Path) -> str:
    """The page without its fenced code blocks (links in code are not links)."""
    return FENCE.sub("", path.read_text(encoding="utf-8"))


def _slug(heading: str) -> str:
    text = re.sub(r"`|\*\*|__", "", heading.strip()).lower()
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


@cache
def _anchors(path: Path) -> frozenset[str]:
    seen: dict[str, int] = {}
    anchors = set()
    for line in _prose(path).splitlines():
        match = re.match(r"#{1,6}\s+(.*)", line)
        if not match:
            continue
        slug = _slug(match.group(1))
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        anchors.add(slug if count == 0 else f"{slug}-{count}")
    return frozenset(anchors)


@pytest.mark.parametrize("page", PAGES, ids=_id)
def test_every_relative_link_and_anchor_exists(page: Path) -> None:
    broken = []
    for target in LINK.findall(_prose(page)):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto:
            continue
        file_part, _, anchor = target.partition("#")
        linked = (page.parent / file_part).resolve() if file_part else page
        if not linked.exists():
            broken.append(f"{target}: no such file")
        elif anchor and linked.suffix == ".md" and anchor not in _anchors(linked):
            broken.append(f"{target}: no heading with that anchor in {_id(linked)}")
    assert not broken, broken


def _snippets(path: Path) -> Iterator[str]:
    """Inline code spans and the lines of code blocks (``\\`` continuations joined)."""
    text = path.read_text(encoding="utf-8")
    for block in FENCE.finditer(text):
        yield from block.group(0).replace("\\\n", " ").splitlines()
    yield from INLINE_CODE.findall(FENCE.sub("", text))


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    return next((dict(action.choices) for action in parser._actions
                 if isinstance(action, argparse._SubParsersAction)), {})


def _flags(parser: argparse.ArgumentParser) -> set[str]:
    return {option for action in parser._actions for option in action.option_strings}


def _unknown_flags(snippet: str) -> list[str]:
    """The ``--flags`` given to an ``mcp-memory`` command in ``snippet`` that it does not take."""
    unknown = []
    for match in COMMAND.finditer(snippet):
        top = _parser()
        command = _subcommands(top)[match.group(1)]
        rest = re.split(r"\s#|\||;|&&|[<>]", match.group(2))[0]
        words = rest.split()
        nested = _subcommands(command)
        if words and words[0] in nested:
            command = nested[words[0]]
        known = _flags(top) | _flags(command)
        unknown += [f"mcp-memory {match.group(1)} {flag}" for flag in FLAG.findall(rest) if flag not in known]
    return unknown


@pytest.mark.parametrize("page", PAGES, ids=_id)
def test_every_command_flag_named_exists(page: Path) -> None:
    unknown = [flag for snippet in _snippets(page) for flag in _unknown_flags(snippet)]
    assert not unknown, unknown


def _settings_named(snippet: str) -> list[str]:
    """The ``section.key`` names in ``snippet`` (file names such as ``supersede.py`` are not)."""
    return [key for key in SETTING.findall(snippet) if key.rsplit(".", 1)[1] not in FILE_SUFFIXES]


def _has_setting(path: list[str]) -> bool:
    model: type[BaseModel] = Settings
    for part in path:
        field = model.model_fields.get(part)
        if field is None:
            return False
        annotation = field.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            model = annotation
        else:
            return True  # a leaf (or a list of entries, such as auth.tokens)
    return True


@pytest.mark.parametrize("page", PAGES, ids=_id)
def test_every_setting_named_exists(page: Path) -> None:
    unknown = []
    for snippet in _snippets(page):
        for key in _settings_named(snippet):
            if not _has_setting(key.split(".")):
                unknown.append(key)
        for name in ENV.findall(snippet):
            if name not in NOT_SETTINGS and not _has_setting(name.lower().split("__")):
                unknown.append(f"MCP_MEMORY_{name}")
    assert not unknown, unknown


def test_the_checks_catch_a_wrong_flag_setting_and_anchor(tmp_path: Path) -> None:
    """The checks above would fail on a page that names what does not exist."""
    assert _unknown_flags("mcp-memory export --all --everything -o x.jsonl") == ["mcp-memory export --everything"]
    assert _unknown_flags("docker compose run --rm mcp-memory token new --name ci --env") == []
    assert not _has_setting(["recall", "rrf"]) and _has_setting(["recall", "rrf_k"])
    assert _settings_named("pipeline/supersede.py, supersede.py, `recall.rrf_k`") == ["recall.rrf_k"]
    page = tmp_path / "page.md"
    page.write_text("# Health checks: mcp-memory doctor\n\n## Why `this` one?\n\n## Why this one\n")
    assert _anchors(page) == {"health-checks-mcp-memory-doctor", "why-this-one", "why-this-one-1"}


def test_the_doctor_sample_names_every_packaged_migration() -> None:
    migrations = sorted(p.name for p in files("mcp_memory.db").joinpath("migrations").iterdir()
                        if p.name.endswith(".sql"))
    sample = (ROOT / "docs" / "operations.md").read_text(encoding="utf-8")
    assert f"[ok] migrations: all {len(migrations)} applied (latest {migrations[-1]})" in sample


def test_a_stdio_client_does_not_pass_the_shells_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/configuration.md: MCP_MEMORY_* in a shell does not reach a server the Python SDK starts;
    only the ``env`` given in StdioServerParameters does."""
    monkeypatch.setenv("MCP_MEMORY_DATA_DIR", "/somewhere/else")
    assert os.environ["MCP_MEMORY_DATA_DIR"] == "/somewhere/else"
    assert "MCP_MEMORY_DATA_DIR" not in get_default_environment()


def test_the_readme_reads_in_five_minutes() -> None:
    """Issue 27: at most 250 lines; the reference lives in docs/."""
    assert len((ROOT / "README.md").read_text(encoding="utf-8").splitlines()) <= 250


def test_the_readme_lists_every_command() -> None:
    """README: "`mcp-memory --help` lists every command (...)": the list is the CLI's own."""
    text = " ".join((ROOT / "README.md").read_text().split())
    listed = re.search(r"--help` lists every command \(([^)]*)\)", text)
    assert listed, "the README's command list is gone"
    assert set(re.findall(r"`([a-z-]+)`", listed.group(1))) == set(_subcommands(_parser()))
