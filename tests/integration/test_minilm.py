"""The real all-MiniLM-L6-v2 embedder, loaded offline from its PyPI packages."""

from __future__ import annotations

import math
import random
import threading
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import onnx
import pytest

from jennah.adapters.embedding import minilm
from jennah.adapters.embedding.minilm import MiniLMEmbedder

pytestmark = pytest.mark.slow


def _cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


@pytest.fixture(scope="module")
def embedder() -> MiniLMEmbedder:
    return MiniLMEmbedder()


def test_vectors_have_384_dimensions_and_unit_length(embedder: MiniLMEmbedder) -> None:
    vector = embedder.embed("A man is eating food.")
    assert len(vector) == embedder.dimensions == 384
    assert math.sqrt(sum(x * x for x in vector)) == pytest.approx(1.0, abs=1e-5)


def test_meaning_decides_similarity(embedder: MiniLMEmbedder) -> None:
    eating, bread, horse = embedder.embed_batch(
        ["A man is eating food.", "A man is eating a piece of bread.", "A man is riding a horse."]
    )
    # sentence-transformers' float model gives about 0.755 and 0.253 here
    assert _cosine(eating, bread) == pytest.approx(0.755, abs=0.03)
    assert _cosine(eating, bread) > _cosine(eating, horse) + 0.3


def test_is_deterministic_across_calls_and_instances(embedder: MiniLMEmbedder) -> None:
    text = "Caroline went to the LGBTQ support group yesterday."
    first = embedder.embed(text)
    assert embedder.embed(text) == first
    assert MiniLMEmbedder(threads=1).embed(text) == pytest.approx(first, abs=1e-5)


def test_embed_soon_answers_the_bytes_embed_does(embedder: MiniLMEmbedder) -> None:
    texts = ["hi", "Melanie painted a sunrise over the lake last summer.", "x " * 300]
    started = [embedder.embed_soon(text) for text in texts]  # all running at once
    for text, vector in zip(texts, started, strict=True):
        assert vector() == embedder.embed(text) == embedder.embed_batch([text, "other"])[0]


def test_batch_equals_single_results(embedder: MiniLMEmbedder) -> None:
    texts = [
        "hi",
        "A much longer sentence, so that the batch must pad the shorter ones to its length.",
        "Melanie painted a sunrise over the lake last summer.",
    ]
    batch = embedder.embed_batch(texts)
    for text, vector in zip(texts, batch, strict=True):
        assert vector == pytest.approx(embedder.embed(text), abs=1e-5)


def test_a_vector_is_bit_identical_alone_and_in_any_batch(tmp_path: Path) -> None:
    """Texts of equal token length run together; nothing else may change their vectors."""
    quantized = MiniLMEmbedder(cache_dir=tmp_path)
    days = ("Monday", "Friday", "the weekend")
    texts = [
        f"Caroline: I went to the {w} group on {d} and it was great." for w in _WORDS for d in days
    ]
    texts += [
        "hi",
        "ok then",
        "Melanie painted a sunrise over the lake last summer.",
        "word " * 400,
    ]
    alone = [np.asarray(quantized.embed(t), dtype=np.float32).tobytes() for t in texts]
    rng = random.Random(7)
    for batch_size, max_tokens in ((64, 512), (3, 512), (64, 40), (1000, 100_000)):
        batched = MiniLMEmbedder(
            batch_size=batch_size, max_batch_tokens=max_tokens, cache_dir=tmp_path
        )
        order = list(range(len(texts)))
        rng.shuffle(order)
        vectors = batched.embed_batch([texts[i] for i in order])
        for i, vector in zip(order, vectors, strict=True):
            assert np.asarray(vector, dtype=np.float32).tobytes() == alone[i], texts[i]
    token_counts = [len(quantized._ensure_loaded().tokenizer.encode(t).ids) for t in texts]
    assert max(token_counts.count(n) for n in set(token_counts)) >= 8  # real batches ran


_WORDS = ["support", "painting", "running", "pottery", "camping", "music", "book", "dance"]


def test_concurrent_callers_share_runs_and_every_vector_keeps_its_bytes(
    embedder: MiniLMEmbedder,
) -> None:
    """Texts queued by several callers while the pool is busy run together (by length);
    each vector must stay bit-identical to the one its text gets alone."""
    texts = [f"Melanie: my {w} class on {d} was fun." for w in _WORDS for d in ("Monday", "May")]
    texts += ["hi", "ok then", "Caroline went to the LGBTQ support group yesterday.", "x " * 300]
    alone = [np.asarray(embedder.embed(t), dtype=np.float32).tobytes() for t in texts]

    shared = MiniLMEmbedder(threads=1)
    shared.load()
    coalescer = shared._coalescer
    assert coalescer is not None
    runs: list[int] = []
    started, release, all_queued = threading.Event(), threading.Event(), threading.Event()
    real_run, real_submit = coalescer._run, coalescer.submit
    callers = [texts[i : i + 5] for i in range(0, len(texts), 5)]

    def gated_run(token_ids: list[Sequence[int]]) -> npt.NDArray[np.float32]:
        runs.append(len(token_ids))
        if len(runs) == 1:  # the busy pool: everything else queues meanwhile
            started.set()
            assert release.wait(timeout=300)
        return real_run(token_ids)

    def counted_submit(token_ids: Sequence[Sequence[int]]) -> Any:
        queued = real_submit(token_ids)
        with lock:
            submitted.append(len(token_ids))
            if len(submitted) == 1 + len(callers):
                all_queued.set()
        return queued

    lock, submitted = threading.Lock(), list[int]()
    coalescer._run = gated_run
    coalescer.submit = counted_submit  # type: ignore[method-assign]
    busy = shared.embed_soon("the pool is busy")
    assert started.wait(timeout=300)
    results: dict[int, list[list[float]]] = {}
    threads = [
        threading.Thread(target=lambda i=i: results.update({i: shared.embed_batch(callers[i])}))
        for i in range(len(callers))
    ]
    for thread in threads:
        thread.start()
    assert all_queued.wait(timeout=300)
    release.set()
    for thread in threads:
        thread.join()
    busy()
    vectors = [v for i in range(len(callers)) for v in results[i]]
    for text, vector, expected in zip(texts, vectors, alone, strict=True):
        assert np.asarray(vector, dtype=np.float32).tobytes() == expected, text
    assert max(runs) >= 5 and len(runs) < 1 + len(texts) // 2  # callers' texts shared runs


def test_batches_larger_than_the_batch_size_keep_order() -> None:
    small = MiniLMEmbedder(batch_size=2, max_batch_tokens=24, quantize=False)  # batched path
    # lengths out of order: the embedder sorts by length internally
    texts = [
        "a fairly long sentence about gardening in the spring",
        "hi",
        "the dog barked",
        "an even longer sentence about the history of jazz music in new orleans",
        "ok then",
    ]
    batch = small.embed_batch(texts)
    assert len(batch) == 5
    for text, vector in zip(texts, batch, strict=True):
        assert vector == pytest.approx(small.embed(text), abs=1e-5)


def test_empty_batch_returns_nothing(embedder: MiniLMEmbedder) -> None:
    assert embedder.embed_batch([]) == []


def test_long_text_is_truncated_not_rejected(embedder: MiniLMEmbedder) -> None:
    vector = embedder.embed("word " * 2000)
    assert len(vector) == 384


def test_concurrent_first_use_loads_once_and_agrees(monkeypatch: pytest.MonkeyPatch) -> None:
    loads: list[int] = []
    real_load = minilm._load

    def counting_load(threads: int, cache_dir: Path | None) -> minilm._Loaded:
        loads.append(threads)
        return real_load(threads, cache_dir)

    monkeypatch.setattr(minilm, "_load", counting_load)
    fresh = MiniLMEmbedder()
    with ThreadPoolExecutor(max_workers=4) as pool:
        vectors = list(pool.map(fresh.embed, ["same text"] * 8))
    for vector in vectors[1:]:
        assert vector == pytest.approx(vectors[0], abs=1e-6)
    assert loads == [2]


def test_quantized_model_is_built_once_and_agrees_with_the_float_model(tmp_path: Path) -> None:
    texts = ["Melanie painted a sunrise over the lake last summer.", "I prefer dark mode."]
    quantized = MiniLMEmbedder(cache_dir=tmp_path)
    vectors = quantized.embed_batch(texts)
    (built,) = list(tmp_path.glob("minilm-l6-v2-qint8-*.onnx"))  # no temporary left behind
    stamp = built.stat().st_mtime_ns
    assert MiniLMEmbedder(cache_dir=tmp_path).embed_batch(texts) == vectors  # reused, same
    assert built.stat().st_mtime_ns == stamp
    ops = Counter(node.op_type for node in onnx.load(str(built)).graph.node)
    assert ops["DynamicQuantizeLinear"] == 0 and ops["QuantizeLinear"] == 24  # fixed scales
    assert ops["MatMulIntegerToFloat"] == 36 and ops["MatMulInteger"] == 0  # fused
    assert ops["Gelu"] == 6 and ops["Erf"] == 0 and ops["IsNaN"] == 0
    assert ops["Where"] == 0 and ops["GatherND"] == 0  # no attention mask: never padded
    reference = MiniLMEmbedder(quantize=False).embed_batch(texts)
    for q, f in zip(vectors, reference, strict=True):
        assert q != f  # really a different model ...
        assert _cosine(q, f) > 0.98  # ... that agrees with the float one


def test_the_mask_left_out_keeps_every_vector_bit_identical(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cached model adds no attention mask (runs are never padded, so it would add 0.0
    to every score); the vectors stay those of the model with the mask, byte for byte."""
    texts = [f"Caroline: I went to the {w} group on Friday and it was great." for w in _WORDS]
    texts += ["hi", "Melanie painted a sunrise over the lake last summer.", "word " * 400]
    unmasked = MiniLMEmbedder(cache_dir=tmp_path / "unmasked")
    vectors = [np.asarray(v, dtype=np.float32).tobytes() for v in unmasked.embed_batch(texts)]
    (built,) = list((tmp_path / "unmasked").glob("minilm-l6-v2-qint8-*.onnx"))
    ops = Counter(node.op_type for node in onnx.load(str(built)).graph.node)
    assert ops["Where"] == 0 and ops["Softmax"] == 6
    monkeypatch.setattr(minilm, "_without_zero_masks", lambda nodes, initializers, outputs: nodes)
    masked = MiniLMEmbedder(cache_dir=tmp_path / "masked")
    masked.load()
    (built,) = list((tmp_path / "masked").glob("minilm-l6-v2-qint8-*.onnx"))
    assert Counter(n.op_type for n in onnx.load(str(built)).graph.node)["Where"] == 1
    expected = [np.asarray(v, dtype=np.float32).tobytes() for v in masked.embed_batch(texts)]
    for text, vector, wanted in zip(texts, vectors, expected, strict=True):
        assert vector == wanted, text


def test_the_direct_key_transposes_keep_every_vector_bit_identical(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each attention's keys reach their MatMul through one Transpose, not the exported
    transpose-reshape-transpose-reshape with its shape nodes; the vectors stay byte for byte
    those of the graph as exported, alone and in runs."""
    texts = [f"Caroline: I went to the {w} group on Friday and it was great." for w in _WORDS]
    texts += ["hi", "Melanie painted a sunrise over the lake last summer.", "word " * 400]
    direct = MiniLMEmbedder(cache_dir=tmp_path / "direct")
    vectors = [np.asarray(v, dtype=np.float32).tobytes() for v in direct.embed_batch(texts)]
    alone = [np.asarray(direct.embed(t), dtype=np.float32).tobytes() for t in texts]
    (built,) = list((tmp_path / "direct").glob("minilm-l6-v2-qint8-*.onnx"))
    ops = Counter(node.op_type for node in onnx.load(str(built)).graph.node)
    assert ops["Transpose"] == 24 and ops["Shape"] == 2 and ops["Slice"] == 1
    monkeypatch.setattr(minilm, "_direct_key_transposes", lambda nodes: nodes)
    exported = MiniLMEmbedder(cache_dir=tmp_path / "exported")
    exported.load()
    (built,) = list((tmp_path / "exported").glob("minilm-l6-v2-qint8-*.onnx"))
    assert Counter(n.op_type for n in onnx.load(str(built)).graph.node)["Transpose"] == 30
    expected = [np.asarray(v, dtype=np.float32).tobytes() for v in exported.embed_batch(texts)]
    for text, vector, single, wanted in zip(texts, vectors, alone, expected, strict=True):
        assert vector == single == wanted, text
