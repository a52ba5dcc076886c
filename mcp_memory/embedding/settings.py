"""The ``[embedding]`` settings group (``MCP_MEMORY_EMBEDDING__*``): which model turns
text into vectors, and how it runs (``mcp_memory.settings`` nests it)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field

from mcp_memory.setting_values import SettingsGroup

__all__ = ["DEFAULT_MODEL", "EmbeddingSettings"]

DEFAULT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"


class EmbeddingSettings(SettingsGroup):
    """Which embedding model turns text into vectors."""

    provider: Literal["fastembed", "openai"] = "fastembed"
    model: str = Field(DEFAULT_MODEL, description="Model name; recorded with every stored vector.")
    model_path: Path | None = Field(None, description="Local fastembed model folder (model.onnx + tokenizer files).")
    dim: int | None = Field(None, ge=1, description="Vector length; required for the openai provider.")
    base_url: str | None = Field(None, description="OpenAI-compatible endpoint for the openai provider.")
    api_key: str | None = None
    timeout_s: float = Field(30.0, gt=0)
    max_retries: int = Field(2, ge=0)
    batch_size: int | None = Field(
        None,
        ge=1,
        description=(
            "Texts per embedding call; unset = 64 for openai, 8 for fastembed (faster on CPU), 1 for the default model"
            " with dynamic_quantization, whose vectors would otherwise depend on the other texts in the batch."
        ),
    )
    threads: int | None = Field(
        1,
        ge=1,
        description=(
            "ONNX Runtime threads of a local model call running alone; None = all cores. More threads embed one"
            " query faster (3.7 vs 5.9 ms on 2 cores) but spin between calls: the server burned twice the CPU"
            " per recall and served 18% fewer recalls/s at concurrency 10 (benchmarks/RESULTS.md)."
        ),
    )
    workers: int = Field(
        2, ge=1, description="Local model calls run at once; a call overlapping another runs single-threaded."
    )
    dynamic_quantization: bool = Field(
        True,
        description=(
            "Run the default offline model's matrix products in int8 (ONNX Runtime dynamic quantization, built once"
            " in the model cache): 2.0x texts/s and a query in 3.4 vs 6.8 ms on 2 cores, LoCoMo vector recall@10"
            " 41.7 vs 42.2 over HTTP. False computes in float32. Vectors of either stay usable with the other."
        ),
    )
    chunk_tokens: int = Field(200, ge=16, description="Word pieces per chunk of a long memory (model reads 256).")
    chunk_overlap_tokens: int = Field(40, ge=0, description="Word pieces shared by neighbouring chunks.")
