"""evals.local_model: a model folder fastembed does not list, registered with mean pooling and
normalisation, embeds as the same folder does under the name fastembed knows (all-MiniLM-L6-v2)."""

from __future__ import annotations

import uuid
from pathlib import Path

import numpy as np
import pytest

from evals.local_model import register_local_model
from mcp_memory.embedding.embed import FastembedEmbedder
from mcp_memory.embedding.offline_model import offline_model_dir
from mcp_memory.settings import EmbeddingSettings

TEXTS = ["My sister Ines moved to Porto last month.", "What is a good recipe for lentil soup?"]


def test_a_registered_local_model_gives_the_vectors_of_the_known_model_in_the_same_folder(tmp_path, monkeypatch):
    folder = offline_model_dir(tmp_path / "cache", quantize=False)
    name = f"local/minilm-{uuid.uuid4().hex[:8]}"  # fastembed's registry lives as long as the process
    monkeypatch.setenv("MCP_MEMORY_EMBEDDING__MODEL", name)
    monkeypatch.setenv("MCP_MEMORY_EMBEDDING__MODEL_PATH", str(folder))
    assert register_local_model() == name
    assert register_local_model() == name  # a second call leaves the registered name alone
    local = FastembedEmbedder(EmbeddingSettings(model=name, model_path=folder), tmp_path / "cache")
    known = FastembedEmbedder(EmbeddingSettings(model_path=folder), tmp_path / "cache")
    assert local.dim == known.dim == 384
    for a, b in zip(local._embed_sync(TEXTS), known._embed_sync(TEXTS), strict=True):
        assert float(np.dot(a, b)) == pytest.approx(1.0, abs=1e-6)


def test_a_local_model_without_a_folder_or_hidden_size_is_refused_naming_the_setting(tmp_path, monkeypatch):
    monkeypatch.setenv("MCP_MEMORY_EMBEDDING__MODEL", "local/absent")
    monkeypatch.delenv("MCP_MEMORY_EMBEDDING__MODEL_PATH", raising=False)
    with pytest.raises(ValueError, match="MCP_MEMORY_EMBEDDING__MODEL_PATH"):
        register_local_model()
    monkeypatch.setenv("MCP_MEMORY_EMBEDDING__MODEL_PATH", str(tmp_path))
    (tmp_path / "config.json").write_text("{}", encoding="utf-8")
    with pytest.raises(ValueError, match="hidden_size"):
        register_local_model()
