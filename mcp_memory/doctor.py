"""``mcp-memory doctor``: start the database and the model once, print what was found, check that
the installation is fit to serve, and exit 1 when a check fails.

Each check has a name, a status (``ok``, ``warn``: works but worse than it could, ``fail``: fix
before serving) and a one-line detail that says what to do when it is not ok:

- ``startup``: the database started, migrated and the model loaded (fails with start-up's error;
  the other checks then cannot run).
- ``postgresql``: the server's version; fails below 13 (pgvector 0.8 supports PostgreSQL 13+).
- ``pgvector``: the ``vector`` extension's version; fails below ``MIN_PGVECTOR`` (db/migrate.py).
- ``extensions``: ``vector`` and ``pg_trgm`` are installed in the database (lists every extension).
- ``migrations``: every packaged migration is applied; warns for applied ones this package lacks
  (a newer mcp-memory migrated the database).
- ``indexes``: every index on our tables is valid (``pg_index.indisvalid``); an invalid one is
  left by a failed ``CREATE INDEX CONCURRENTLY`` and is never used by queries.
- ``vector_cache``: the in-process vector copies' budget (``recall.vector_cache_mb``) against what
  the sessions recall would copy need; warns when they do not fit (recall then scans in PostgreSQL).
- ``citus``: on a Citus coordinator, its version, its workers and every table's distribution;
  fails when a session table is not distributed by ``session`` colocated with ``memories``, or a
  table without sessions is not a reference table (db/citus.py). Without citus: one PostgreSQL.
- ``secrets``: stored memories whose content or metadata holds a detectable secret, per session
  (never a value); warns when there are any, unless ``privacy.secrets = "keep"``. ``mcp-memory
  redact`` replaces them.
- ``auth``: a non-loopback ``--host`` (the address serve will bind) without ``[auth]`` fails
  (warns with ``--insecure-no-auth``, as serve then runs); a token kept in plain text warns.
- ``llm``: the LLM settings are coherent (a base_url with at least one model, or neither); not
  contacted.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Literal

from mcp_memory.access.scope import SessionScope
from mcp_memory.db.citus import REFERENCE_TABLES, SESSION_TABLES
from mcp_memory.db.health import CitusLayout
from mcp_memory.db.migrate import MIN_PGVECTOR, packaged_migrations, version_tuple
from mcp_memory.deps import Deps, Ready
from mcp_memory.embedding.vector_cache import copy_nbytes
from mcp_memory.errors import McpMemoryError
from mcp_memory.http.app import is_loopback
from mcp_memory.http.auth import describe_auth
from mcp_memory.privacy.sweep import count_stored
from mcp_memory.settings import Settings

__all__ = ["Check", "doctor", "run_checks"]

Status = Literal["ok", "warn", "fail"]
MIN_POSTGRES = 130000  # server_version_num of PostgreSQL 13, the oldest pgvector 0.8 supports
REQUIRED_EXTENSIONS = ("pg_trgm", "vector")


@dataclass(frozen=True)
class Check:
    """One finding of ``doctor``."""

    name: str
    status: Status
    detail: str


def _mib(nbytes: int) -> str:
    return f"{nbytes / 2**20:,.1f} MiB" if nbytes >= 2**20 else f"{nbytes / 2**10:,.1f} KiB"


async def _database_checks(ready: Ready) -> list[Check]:
    repository, settings = ready.repository, ready.settings
    checks = []
    number, text = await repository.server_version()
    checks.append(Check("postgresql", "ok" if number >= MIN_POSTGRES else "fail",
                        f"PostgreSQL {text}" + ("" if number >= MIN_POSTGRES else "; mcp-memory needs 13 or later")))
    extensions = await repository.extensions()
    vector = extensions.get("vector")
    minimum = ".".join(map(str, MIN_PGVECTOR))
    if vector is None or version_tuple(vector) < MIN_PGVECTOR:
        checks.append(Check("pgvector", "fail", f"pgvector {vector or 'missing'}; mcp-memory needs >= {minimum} "
                            "(upgrade the package, then ALTER EXTENSION vector UPDATE)"))
    else:
        checks.append(Check("pgvector", "ok", f"pgvector {vector} (>= {minimum})"))
    missing = [name for name in REQUIRED_EXTENSIONS if name not in extensions]
    listed = ", ".join(f"{name} {version}" for name, version in extensions.items())
    checks.append(Check("extensions", "fail" if missing else "ok",
                        f"missing {', '.join(missing)}; installed: {listed}" if missing else f"installed: {listed}"))
    checks.append(_migrations(await repository.applied_migrations()))
    indexes = await repository.indexes()
    invalid = [f"{index} on {table}" for table, index, valid in indexes if not valid]
    checks.append(Check("indexes", "fail", f"invalid: {', '.join(invalid)}; queries never use an invalid index: "
                        "REINDEX INDEX CONCURRENTLY <name> (or drop and create it again)") if invalid
                  else Check("indexes", "ok", f"{len(indexes)} indexes on {len({t for t, _, _ in indexes})} tables, "
                             "all valid"))
    checks.append(_citus(await repository.citus_layout()))
    budget = settings.recall.vector_cache_mb * 2**20
    found = await repository.vector_sessions(settings.recall.exact_search_max_memories)
    need, largest = copy_nbytes(found.vectors, ready.embedder.dim), copy_nbytes(found.largest_vectors, ready.embedder.dim)
    detail = (f"budget {_mib(budget)} (recall.vector_cache_mb); the {found.sessions} sessions of at most "
              f"{settings.recall.exact_search_max_memories} memories ({found.memories} memories, {found.vectors} "
              f"vectors) need {_mib(need)}")
    if budget == 0:
        checks.append(Check("vector_cache", "ok", detail + "; copies are off, exact scans run in PostgreSQL"))
    elif need > budget:
        advice = (f"the largest session alone needs {_mib(largest)}" if largest > budget
                  else "sessions past it are scanned in PostgreSQL (slower recall)")
        checks.append(Check("vector_cache", "warn", f"{detail}; {advice}; recall.vector_cache_mb = "
                            f"{-(-need // 2**20)} would hold them all"))
    else:
        checks.append(Check("vector_cache", "ok", detail))
    return checks


async def _secrets(ready: Ready) -> Check:
    scanned, sessions = await count_stored(ready.repository, SessionScope.parse(["*"]))
    policy = ready.settings.privacy.secrets
    if not sessions:
        return Check("secrets", "ok", f"none of the {scanned} stored memories holds a detectable secret "
                     f"(privacy.secrets = {policy!r})")
    shown = sorted(sessions.items(), key=lambda item: (-item[1], item[0]))
    listed = ", ".join(f"{session!r}: {count}" for session, count in shown[:10])
    listed += f" and {len(shown) - 10} more sessions" if len(shown) > 10 else ""
    return Check("secrets", "ok" if policy == "keep" else "warn",
                 f"{sum(sessions.values())} of {scanned} stored memories hold a detectable secret ({listed}); "
                 "mcp-memory redact --all (or --session NAME) replaces each by [redacted: <kind>]")


def _citus(layout: CitusLayout | None) -> Check:
    if layout is None:
        return Check("citus", "ok", "no citus extension: one PostgreSQL")
    home = layout.tables.get("memories", ("", "", -1))[2]
    wrong = [f"{table} ({kind or 'local'}" + (f" by {column}, colocation {group}" if kind == "distributed" else "") + ")"
             for table, (kind, column, group) in ((t, layout.tables.get(t, ("", "", -1))) for t in SESSION_TABLES)
             if (kind, column, group) != ("distributed", "session", home)]
    wrong += [f"{table} ({layout.tables.get(table, ('local',))[0] or 'local'})" for table in REFERENCE_TABLES
              if layout.tables.get(table, ("",))[0] != "reference"]
    where = f"Citus {layout.version}, {len(layout.workers)} worker(s): {', '.join(layout.workers) or 'none'}"
    if wrong:
        return Check("citus", "fail", f"{where}; not as mcp-memory needs: {', '.join(wrong)}; every session table must "
                     "be distributed by session colocated with memories, the others reference tables (set distribute = "
                     "true and restart, or see db/citus.py)")
    return Check("citus", "ok", f"{where}; {', '.join(SESSION_TABLES)} distributed by session, colocated "
                 f"(colocation {home}); {', '.join(REFERENCE_TABLES)} reference tables")


def _migrations(applied: list[int]) -> Check:
    packaged = packaged_migrations()
    known = {version for version, _ in packaged}
    missing = [name for version, name in packaged if version not in set(applied)]
    unknown = [f"{version:03d}" for version in applied if version not in known]
    if missing:
        return Check("migrations", "fail", f"not applied: {', '.join(missing)} (mcp-memory serve applies them at start)")
    if unknown:
        return Check("migrations", "warn", f"applied migrations this mcp-memory does not have: {', '.join(unknown)} "
                     "(a newer mcp-memory migrated this database; upgrade this one)")
    return Check("migrations", "ok", f"all {len(packaged)} applied (latest {packaged[-1][1]})")


def _auth(settings: Settings, host: str, insecure_no_auth: bool = False) -> Check:
    auth = settings.auth
    plain = [entry.name for entry in auth.tokens if entry.token is not None]
    how = ", ".join([*([f"{len(auth.tokens)} token(s)"] if auth.tokens else []),
                     *(["oauth"] if auth.oauth is not None else [])])
    if not auth.enabled:
        if is_loopback(host):
            return Check("auth", "ok", f"none configured; --host {host} is loopback, so only this machine can call")
        return Check("auth", "warn" if insecure_no_auth else "fail", f"none configured, but --host {host} is not loopback: anyone who reaches the port "
                     "could read and delete every memory; add a token (mcp-memory token new) or bind 127.0.0.1")
    if plain:
        return Check("auth", "warn", f"{how} for --host {host}; token(s) {', '.join(map(repr, plain))} kept in plain "
                     "text: replace each with its token_sha256 line")
    return Check("auth", "ok", f"{how} for --host {host}")


def _llm(settings: Settings) -> Check:
    llm = settings.llm
    models = [f"{role} {model}" for role, model in (("plan", llm.plan_model), ("answer", llm.answer_model),
                                                    ("supersede", llm.supersede_model)) if model]
    if llm.base_url is None:
        if models:
            return Check("llm", "warn", f"models set ({', '.join(models)}) but llm.base_url is not: no LLM is used")
        return Check("llm", "ok", "none configured: recall without query planning or answers")
    if not models:
        return Check("llm", "warn", f"llm.base_url {llm.base_url} is set but no plan, answer or supersede model: "
                     "the LLM is never used")
    return Check("llm", "ok", f"{llm.base_url}: {', '.join(models)} (configured; not contacted)")


async def run_checks(deps: Deps, host: str, insecure_no_auth: bool = False) -> list[Check]:
    """Start ``deps`` (if not started) and run every check; never raises for what it checks.

    Args:
        host: the address ``serve --transport http --host`` will bind (judged by the auth check).
        insecure_no_auth: serve will run with ``--insecure-no-auth``: a public host without auth
            is then a warning, not a failure.
    """
    settings = deps.settings
    checks: list[Check] = []
    try:
        await deps.start()
        ready = await deps.ready()
    except McpMemoryError as exc:
        checks.append(Check("startup", "fail", str(exc)))
    else:
        checks.append(Check("startup", "ok", f"database {'external' if settings.database_url else 'embedded'}, "
                            f"model {ready.embedder.model} ({ready.embedder.dim} dims)"))
        try:
            checks.extend(await _database_checks(ready))
            checks.append(await _secrets(ready))
        except McpMemoryError as exc:
            checks.append(Check("database", "fail", str(exc)))
    checks.append(_auth(settings, host, insecure_no_auth))
    checks.append(_llm(settings))
    return checks


async def doctor(settings: Settings, host: str = "127.0.0.1", as_json: bool = False,
                 insecure_no_auth: bool = False) -> int:
    """Print the facts and checks (as JSON with ``as_json``) on stdout; returns the exit status:
    1 when a check failed, else 0."""
    deps = Deps(settings)
    ready: Ready | None = None
    try:
        checks = await run_checks(deps, host, insecure_no_auth)
        try:
            ready = await deps.ready()
        except McpMemoryError:
            pass  # the startup check says why
    finally:
        await deps.close()
    failed = any(check.status == "fail" for check in checks)
    if as_json:
        worst = "fail" if failed else "warn" if any(c.status == "warn" for c in checks) else "ok"
        print(json.dumps({"status": worst, "checks": [asdict(check) for check in checks]}, indent=2))
        return int(failed)
    print(f"data_dir: {settings.data_dir}")
    print(f"database: {'external' if settings.database_url else 'embedded'}")
    if ready is not None:
        print(f"embedding model: {ready.embedder.model} ({ready.embedder.dim} dims; {ready.embedder.variant})")
    print(f"llm: {settings.llm.base_url or 'none'}")
    for line in describe_auth(settings):
        print(line)
    for check in checks:
        print(f"[{check.status}] {check.name}: {check.detail}")
    return int(failed)
