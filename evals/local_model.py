"""Try a local embedding model that fastembed does not list, in the in-process server of an eval.

fastembed loads a model folder (``embedding.model_path``) only under a name it knows, since the name
says how the token vectors are pooled. A sentence-transformers model exported to ONNX (``model.onnx``
giving the last hidden state, ``tokenizer.json``, ``config.json``) is registered here under
``embedding.model`` with mean pooling and L2 normalisation, what sentence-transformers' ``Pooling``
(``pooling_mode_mean_tokens``) and ``Normalize`` modules do. For measurements only: the server itself
loads only the models fastembed lists.

Failure policy: a missing setting or an unreadable ``config.json`` raises ``ValueError`` with one line.
"""

from __future__ import annotations

import json

from fastembed import TextEmbedding
from fastembed.common.model_description import ModelSource, PoolingType

from mcp_memory.settings import Settings

__all__ = ["register_local_model"]


def register_local_model() -> str:
    """Register ``embedding.model`` (from the ``MCP_MEMORY_*`` settings) with fastembed; returns its name.

    The vector length is ``hidden_size`` of ``config.json`` in ``embedding.model_path``. A name fastembed
    already lists is left as it is.

    Raises:
        ValueError: ``embedding.model_path`` is not set, or its ``config.json`` has no ``hidden_size``.
    """
    settings = Settings().embedding
    if settings.model_path is None:
        raise ValueError("--local-model needs embedding.model_path (MCP_MEMORY_EMBEDDING__MODEL_PATH), a model folder")
    known = {description["model"].lower() for description in TextEmbedding.list_supported_models()}
    if settings.model.lower() in known:
        return settings.model
    config = settings.model_path / "config.json"
    try:
        dim = int(json.loads(config.read_text(encoding="utf-8"))["hidden_size"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"--local-model: {config} must be readable JSON with hidden_size ({exc})") from exc
    TextEmbedding.add_custom_model(
        settings.model, pooling=PoolingType.MEAN, normalization=True,
        sources=ModelSource(hf=settings.model), dim=dim, model_file="model.onnx",
    )
    return settings.model
