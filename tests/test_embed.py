"""Embedding: windows of long text, unit vectors, and concurrent calls merged into one batch."""

from __future__ import annotations

import sys
import threading
from pathlib import Path

import anyio
import numpy as np
import pytest

from mcp_memory.embedding.coalesce import Coalescer
from mcp_memory.embedding.embed import FastembedEmbedder
from mcp_memory.embedding.offline_model import _TOKENIZER_FILES, _quantize_in_child, offline_model_dir
from mcp_memory.errors import EmbeddingError
from mcp_memory.settings import EmbeddingSettings

pytestmark = pytest.mark.anyio


async def test_concurrent_calls_share_one_batch_and_get_their_own_vectors_in_order():
    batches: list[list[str]] = []

    async def embed(texts: list[str]) -> list[np.ndarray]:
        batches.append(texts)
        await anyio.sleep(0)  # let the other callers queue behind the running batch
        return [np.array([float(len(text))]) for text in texts]

    coalescer = Coalescer(embed, max_texts=100)
    results: dict[int, list[float]] = {}

    async def call(i: int) -> None:
        vectors = await coalescer.embed(["x" * i, "y" * (i + 100)])
        results[i] = [float(v[0]) for v in vectors]

    async with anyio.create_task_group() as group:
        for i in range(20):
            group.start_soon(call, i)
    assert results == {i: [float(i), float(i + 100)] for i in range(20)}
    assert len(batches) < 20
    assert sum(len(batch) for batch in batches) == 40


async def test_a_failed_batch_raises_in_every_caller_and_the_next_call_works():
    calls = 0

    async def embed(texts: list[str]) -> list[np.ndarray]:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise RuntimeError("model crashed")
        return [np.zeros(1) for _ in texts]

    coalescer = Coalescer(embed, max_texts=10)
    with pytest.raises(RuntimeError, match="model crashed"):
        await coalescer.embed(["a"])
    assert len(await coalescer.embed(["b", "c"])) == 2


async def test_the_model_gives_unit_vectors_of_its_dimension(deps):
    ready = await deps.ready()
    vectors = await ready.embedder.embed_batch(["The boiler is serviced in October", "设计团队开会"])
    assert ready.embedder.dim == 384
    assert [v.shape for v in vectors] == [(384,), (384,)]
    assert [round(float(np.linalg.norm(v)), 4) for v in vectors] == [1.0, 1.0]


async def test_long_text_is_cut_into_overlapping_windows_that_cover_its_end(deps):
    ready = await deps.ready()
    sentences = [f"Sentence number {i} talks about topic {i * 7 % 13} in some detail." for i in range(300)]
    text = " ".join(sentences)
    windows = ready.embedder.windows(text)
    assert len(windows) > 5
    assert windows[0].startswith("Sentence number 0 ")
    assert windows[-1].endswith(sentences[-1])
    assert all(window in text for window in windows)
    assert ready.embedder.windows("short text") == ["short text"]


async def test_a_batch_of_mixed_lengths_returns_each_text_its_own_vector_in_order(deps):
    ready = await deps.ready()
    texts = ["a much longer sentence about the boiler service that is due in October", "hi", "设计团队开会", "ok then"]
    batched = await ready.embedder.embed_batch(texts)
    alone = [(await ready.embedder.embed_batch([text]))[0] for text in texts]
    for one, other in zip(batched, alone, strict=True):
        assert float(one @ other) == pytest.approx(1.0, abs=1e-3)


async def test_two_leaders_run_two_batches_at_once_and_no_more():
    running = 0
    most = 0
    gate = anyio.Event()

    async def embed(texts: list[str]) -> list[np.ndarray]:
        nonlocal running, most
        running += 1
        most = max(most, running)
        await gate.wait()
        running -= 1
        return [np.array([float(len(text))]) for text in texts]

    coalescer = Coalescer(embed, max_texts=2, leaders=2)
    results: dict[int, float] = {}

    async def call(i: int) -> None:
        results[i] = float((await coalescer.embed(["x" * i]))[0][0])

    async with anyio.create_task_group() as group:
        for i in range(9):
            group.start_soon(call, i)
        await anyio.wait_all_tasks_blocked()
        assert running == 2  # two batches in flight, the other callers queued behind them
        gate.set()
    assert most == 2
    assert results == {i: float(i) for i in range(9)}


async def test_concurrent_calls_get_the_same_vectors_as_a_call_alone(deps):
    """Overlapping calls run on the single-threaded copy of the model; the vectors must not change."""
    ready = await deps.ready()
    texts = [f"Memory {i}: the boiler service is booked for week {i} of the year" for i in range(12)]
    alone = [(await ready.embedder.embed_batch([text]))[0] for text in texts]
    together: dict[int, np.ndarray] = {}

    async def call(i: int) -> None:
        together[i] = (await ready.embedder.embed_batch([texts[i]]))[0]

    async with anyio.create_task_group() as group:
        for i in range(len(texts)):
            group.start_soon(call, i)
    for i, vector in enumerate(alone):
        assert float(vector @ together[i]) == pytest.approx(1.0, abs=1e-5)


def test_servers_starting_together_on_a_fresh_data_dir_all_get_the_assembled_model(tmp_path):
    """Two HTTP servers started at once on a new data dir raced on one assembly folder: one renamed
    it into place and the other failed to start with FileNotFoundError. Each now builds its own."""
    barrier = threading.Barrier(6)
    found: list[Path | None] = []
    errors: list[BaseException] = []

    def start() -> None:
        barrier.wait()
        try:
            found.append(offline_model_dir(tmp_path, quantize=False))
        except BaseException as exc:  # noqa: BLE001 - collected for the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=start) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    target = tmp_path / "all-MiniLM-L6-v2-onnx-int8-weights"
    assert found == [target] * 6
    assert sorted(p.name for p in target.iterdir()) == sorted(["model.onnx", "source.txt", *_TOKENIZER_FILES])
    assert [p.name for p in tmp_path.iterdir()] == [target.name]  # no partial or stale folders left


_MEMORIES = [
    "Caroline: I went to the LGBTQ support group yesterday and it was so powerful.",
    "Melanie: We took the kids camping at the lake last weekend, they loved the fire.",
    "Caroline: I'm looking into counseling programs so I can help trans youth.",
    "Melanie: I finished a painting of a sunset over the ocean, my favourite so far.",
    "Jon: My dance studio lost its lease, so I'm hunting for a new place downtown.",
    "Gina: I launched the online clothing store, the first orders ship on Monday.",
    "Jon: The boiler service is booked for October 14th at 9am.",
    "Gina: 设计团队每周二下午开会讨论新的产品目录。",
]
_QUERIES = [
    ("When did Caroline go to the support group?", 0),
    ("Where did Melanie go camping with her kids?", 1),
    ("What does Caroline want to study to help trans youth?", 2),
    ("What did Melanie paint?", 3),
    ("Why is Jon looking for a new studio?", 4),
    ("What business did Gina start?", 5),
    ("When is the boiler serviced?", 6),
]


def test_the_default_model_computes_in_int8_and_ranks_like_the_float_model(deps, base_settings, tmp_path):
    """The packaged weights are int8 but were multiplied out in float32 (2x slower); the default
    model is rewritten so ONNX Runtime multiplies in int8. Its vectors must stay close enough to the
    float path that memories stored by either are found by queries of the other."""
    import onnx

    quantized = offline_model_dir(base_settings.data_dir / "models")
    weights = offline_model_dir(tmp_path, quantize=False)
    ops = {node.op_type for node in onnx.load(str(quantized / "model.onnx")).graph.node}
    assert {"MatMulInteger", "DynamicQuantizeLinear"} <= ops
    assert "MatMulInteger" not in {node.op_type for node in onnx.load(str(weights / "model.onnx")).graph.node}

    int8 = FastembedEmbedder(EmbeddingSettings(), base_settings.data_dir / "models")
    float32 = FastembedEmbedder(EmbeddingSettings(dynamic_quantization=False), tmp_path)
    texts = _MEMORIES + [question for question, _ in _QUERIES]
    a = np.stack(int8._embed_sync(texts))
    b = np.stack(float32._embed_sync(texts))
    assert float(np.min(np.sum(a * b, axis=1))) >= 0.98
    for memories, queries in ((a, a), (b, b), (b, a), (a, b)):  # stored by one path, asked by either
        scores = queries[len(_MEMORIES) :] @ memories[: len(_MEMORIES)].T
        assert [int(i) for i in np.argmax(scores, axis=1)] == [expected for _, expected in _QUERIES]


def test_a_model_that_cannot_be_quantized_is_reported_with_the_childs_last_line(tmp_path):
    (tmp_path / "broken.onnx").write_bytes(b"not a model")
    with pytest.raises(EmbeddingError, match=r"quantizing the embedding model failed \(exit status 1: .+\)"):
        _quantize_in_child(tmp_path / "broken.onnx", tmp_path / "model.onnx")
    assert not (tmp_path / "model.onnx").exists()


def test_when_quantizing_fails_the_server_still_starts_on_the_float32_model(tmp_path, monkeypatch, caplog):
    monkeypatch.setattr(sys, "executable", "/bin/false")  # the child Python cannot run
    found = offline_model_dir(tmp_path)
    assert found == tmp_path / "all-MiniLM-L6-v2-onnx-int8-weights"
    assert "quantizing the embedding model failed (exit status 1: no output); the embedding model runs in float32" in caplog.text
    assert sorted(p.name for p in tmp_path.iterdir()) == [found.name]  # no partial folder left


def test_a_model_path_that_cannot_be_loaded_is_named_in_the_error_not_the_offline_extra(tmp_path):
    """With embedding.model_path set, the error told the user to set embedding.model_path."""
    with pytest.raises(EmbeddingError) as failed:
        FastembedEmbedder(EmbeddingSettings(model_path=tmp_path / "nowhere"), tmp_path / "cache")
    message = str(failed.value)
    assert f"embedding.model_path is {tmp_path / 'nowhere'}" in message
    assert "offline extra" not in message
