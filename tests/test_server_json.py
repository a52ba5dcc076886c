"""server.json, the entry for the MCP Registry (docs/install.md, "MCP Registry").

The registry's published schema (the URL in server.json's ``$schema``; the registry keeps the same
file as internal/validators/schemas/2025-12-11.json in modelcontextprotocol/registry, MIT) is not in
any package on PyPI or npm, and copies of outside repositories' files stay out of this repository.
So the schema check reads it from REGISTRY_SERVER_SCHEMA, or else from shared/vendor beside the
clone (SHARED_SCHEMA below; CI gets a copy of shared/ there), and skips with one line saying where to
put it when neither is there. Its validator (mcp-publisher) is a Go binary from GitHub releases, which
this machine cannot fetch. The rules the official registry enforces beyond the schema (read from its
validators, modelcontextprotocol/registry internal/validators) are checked here without it: the name's
grammar and GitHub namespace, the description's 100 characters, a version that is neither "latest" nor
a range, pypi.org as the only PyPI base URL, a package name without spaces, a stdio transport without a
URL, and the README's ``mcp-name:`` ownership marker, which the registry looks for in the package's PyPI
description. The name's owner is still the placeholder ``io.github.OWNER``: publishing needs the GitHub
login that owns the namespace, and the registry refuses any other.
"""

from __future__ import annotations

import json
import os
import re
import tomllib
from pathlib import Path
from typing import Any

import jsonschema
import pytest

import mcp_memory
from mcp_memory.settings import Settings

ROOT = Path(__file__).resolve().parent.parent
SCHEMA_URL = "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json"
SHARED_SCHEMA = ROOT.parent / "shared" / "vendor" / "mcp-registry-server.schema-2025-12-11.json"
# internal/validators/validators.go: namespacePattern "/" namePartPattern
NAME = re.compile(r"^[a-zA-Z0-9][a-zA-Z0-9.-]*[a-zA-Z0-9]/[a-zA-Z0-9][a-zA-Z0-9._-]*[a-zA-Z0-9]$")
# validators.go, looksLikeVersionRange: comparators, hyphen and || ranges, x/X/* wildcards
VERSION_RANGE = re.compile(r"^\s*(?:\^|~|>=|<=|>|<|=)|\s-\s|\|\||(?:^|\.)(?:x|X|\*)(?:\.|$)")


def server_json() -> dict[str, Any]:
    return json.loads((ROOT / "server.json").read_text(encoding="utf-8"))


def project() -> dict[str, Any]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def declares_mcp_name(text: str, name: str) -> bool:
    """The registry's check (registries/mcpname.go): ``mcp-name: <name>`` not followed by a name character."""
    for found in re.finditer(re.escape(f"mcp-name: {name}"), text):
        following = text[found.end():found.end() + 1]
        if not following or not re.match(r"[a-zA-Z0-9._/-]", following):
            return True
    return False


def test_server_json_validates_against_the_registry_schema_it_names() -> None:
    named = os.environ.get("REGISTRY_SERVER_SCHEMA")
    path = Path(named) if named else SHARED_SCHEMA  # a named file that is missing fails
    if not named and not path.exists():
        pytest.skip(f"no copy of {SCHEMA_URL}: put one at {SHARED_SCHEMA} or name it in REGISTRY_SERVER_SCHEMA")
    schema = json.loads(path.read_text(encoding="utf-8"))
    entry = server_json()
    assert entry["$schema"] == SCHEMA_URL == schema["$id"], "the schema file is not the one server.json names"
    jsonschema.Draft7Validator(schema, format_checker=jsonschema.FormatChecker()).validate(entry)


def test_server_json_meets_the_official_registry_rules() -> None:
    entry = server_json()
    assert entry["$schema"] == SCHEMA_URL
    assert NAME.match(entry["name"]) and entry["name"].count("/") == 1, entry["name"]
    assert entry["name"].startswith("io.github."), "a GitHub login proves the io.github.<owner> namespace"
    assert 1 <= len(entry["description"]) <= 100, len(entry["description"])
    assert 1 <= len(entry["title"]) <= 100
    for version in (entry["version"], *(package["version"] for package in entry["packages"])):
        assert version != "latest" and not VERSION_RANGE.search(version), version
    # one version everywhere: the registry entry, the wheel and what the server reports
    assert entry["version"] == project()["version"] == mcp_memory.__version__

    [package] = entry["packages"]
    assert package["registryType"] == "pypi"
    assert package["registryBaseUrl"] == "https://pypi.org"  # the only PyPI the official registry accepts
    assert package["identifier"] == project()["name"] and " " not in package["identifier"]
    assert package["version"] == entry["version"]
    assert package["transport"] == {"type": "stdio"}
    assert package["runtimeHint"] == "uvx"
    assert [argument.get("value") for argument in package["packageArguments"]] == ["serve"]
    assert project()["scripts"][package["identifier"]] == "mcp_memory.cli:main", "uvx runs the command named like the package"


def test_every_variable_in_server_json_is_a_setting_the_server_reads() -> None:
    """The server refuses an MCP_MEMORY_ variable it does not know, so a stale name here would stop it."""
    names = [variable["name"] for variable in server_json()["packages"][0]["environmentVariables"]]
    assert {"MCP_MEMORY_DATA_DIR", "MCP_MEMORY_CONFIG"} <= set(names)
    for name in names:
        if name == "MCP_MEMORY_CONFIG":
            continue
        group, _, key = name.removeprefix("MCP_MEMORY_").lower().partition("__")
        field = Settings.model_fields[group]
        if key:
            assert key in field.annotation.model_fields, name  # type: ignore[union-attr]
    secrets = {variable["name"] for variable in server_json()["packages"][0]["environmentVariables"]
               if variable.get("isSecret")}
    assert secrets == {"MCP_MEMORY_DATABASE_URL", "MCP_MEMORY_LLM__API_KEY"}


def test_the_ownership_check_accepts_the_exact_name_only() -> None:
    assert declares_mcp_name("<!-- mcp-name: io.github.a/b -->", "io.github.a/b")
    assert declares_mcp_name("mcp-name: io.github.a/b", "io.github.a/b")
    assert not declares_mcp_name("<!-- mcp-name: io.github.a/b-evil -->", "io.github.a/b")
    assert not declares_mcp_name("mcp-name:io.github.a/b", "io.github.a/b")


def test_the_readme_that_becomes_the_pypi_description_carries_the_registry_marker() -> None:
    readme = ROOT / project()["readme"]
    assert declares_mcp_name(readme.read_text(encoding="utf-8"), server_json()["name"])
