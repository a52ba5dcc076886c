"""``.ci/run`` on a machine without the Citus source tarball: it stops at once with one line, before it
installs anything (it used to create a venv, install everything, then end in a traceback from
``tests/citus_build.py``), and ``tests/citus_build.py`` names a missing tarball in one line."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TIMEOUT_S = 60.0


def _stub(folder: Path, name: str, calls: Path) -> None:
    """A command that records that it ran and fails, so a step the script should not reach costs nothing."""
    script = folder / name
    script.write_text(f"#!/bin/sh\necho {name} >> {calls}\nexit 3\n")
    script.chmod(0o755)


def test_ci_run_stops_before_installing_when_the_citus_tarball_is_missing(tmp_path: Path) -> None:
    clone = tmp_path / "clone"
    (clone / ".ci").mkdir(parents=True)
    shutil.copy2(ROOT / ".ci" / "run", clone / ".ci" / "run")
    stubs, calls = tmp_path / "bin", tmp_path / "calls"
    stubs.mkdir()
    for name in ("python3", "python", "apt-get", "sudo", "pip"):
        _stub(stubs, name, calls)
    missing = tmp_path / "vendor" / "citus-14.0.1.tar.gz"
    env = {**os.environ, "PATH": f"{stubs}{os.pathsep}{os.environ['PATH']}", "CITUS_SOURCE_TARBALL": str(missing)}
    done = subprocess.run(["bash", str(clone / ".ci" / "run")], capture_output=True, text=True, env=env,
                          timeout=TIMEOUT_S)
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert done.stderr.splitlines() == [
        f".ci/run: no Citus source tarball at {missing}: set CITUS_SOURCE_TARBALL to citus-14.0.1.tar.gz, "
        "or run the README's test command (the Citus tests then skip)"]
    assert not calls.exists(), calls.read_text()
    assert not (clone / ".ci-venv").exists()


def test_citus_build_names_a_missing_tarball_in_one_line(tmp_path: Path) -> None:
    missing = tmp_path / "citus-14.0.1.tar.gz"
    done = subprocess.run([sys.executable, str(ROOT / "tests" / "citus_build.py")], capture_output=True, text=True,
                          env={**os.environ, "CITUS_SOURCE_TARBALL": str(missing)}, timeout=TIMEOUT_S)
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        f"CITUS_SOURCE_TARBALL names no file: {missing} (the Citus source tarball, citus-14.0.1.tar.gz)"]
