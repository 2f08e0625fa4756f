"""Helpers shared by the benchmark scripts: synthetic records, timing, tables."""

from __future__ import annotations

import random
import statistics
import time
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from jennah.domain import rules
from jennah.domain.models import EMBEDDING_DIMENSIONS, CommitPlan, MemoryRecord, ScopeRef

SCOPE = ScopeRef(enterprise_id="bench", scope_id="bench-scope")
SPEAKERS = [f"speaker-{i}" for i in range(10)]
EPOCH = datetime(2024, 1, 1, tzinfo=UTC)
SPAN_DAYS = 365
_WORD_LIST = (
    "the a my our we went to with and after before lake park office school trip dinner "
    "painting running book friend sister brother team meeting project garden concert "
    "yesterday today last week month summer winter really loved started finished tried "
    "new old big small happy tired busy family kids dog cat music class job interview"
)
WORDS = _WORD_LIST.split()

Vectors = npt.NDArray[np.float32]


def unit_vectors(rng: np.random.Generator, count: int, dims: int = EMBEDDING_DIMENSIONS) -> Vectors:
    """Random unit vectors: Gaussian then L2-normalized (uniform on the sphere)."""
    raw = rng.standard_normal((count, dims), dtype=np.float32)
    normed: Vectors = raw / np.linalg.norm(raw, axis=1, keepdims=True)
    return normed


def valid_at_for(index: int) -> datetime:
    """Spread records evenly over one year of valid time (deterministic)."""
    return EPOCH + timedelta(seconds=(index * 7919) % (SPAN_DAYS * 86400))


def record_text(index: int) -> str:
    return f"record {index}: " + " ".join(WORDS[(index * k) % len(WORDS)] for k in (3, 7, 11, 13))


def record_id(index: int, text_of: Callable[[int], str] = record_text) -> str:
    """The chunk id of synthetic record `index`."""
    return rules.chunk_id(text_of(index), valid_at_for(index))


def synthetic_record(
    index: int,
    vector: Sequence[float],
    scope: ScopeRef = SCOPE,
    text_of: Callable[[int], str] = record_text,
) -> MemoryRecord:
    """One chunk with metadata and a validAt, as memory:commit would build it."""
    text = text_of(index)
    valid_at = valid_at_for(index)
    return MemoryRecord(
        id=rules.chunk_id(text, valid_at),
        scope=scope,
        content_hash=rules.content_hash(text),
        text=text,
        metadata={
            "speaker": SPEAKERS[index % len(SPEAKERS)],
            "session": str(index % 50),
            "source": "bench",
        },
        valid_at=valid_at,
        embedding=list(map(float, vector)),
    )


def plans(
    vectors: Vectors,
    batch: int,
    first_index: int = 0,
    scope: ScopeRef = SCOPE,
    text_of: Callable[[int], str] = record_text,
) -> Iterator[CommitPlan]:
    """CommitPlans of `batch` chunks carrying the precomputed `vectors`, record i's text
    `text_of(i)`."""
    for start in range(0, len(vectors), batch):
        chunk = vectors[start : start + batch]
        records = [
            synthetic_record(first_index + start + i, chunk[i], scope, text_of)
            for i in range(len(chunk))
        ]
        yield CommitPlan(scope=scope, chunks=records)


def short_texts(count: int, seed: int = 7) -> list[str]:
    """Short conversational sentences (8-16 words), distinct from one another."""
    rng = random.Random(seed)
    out = []
    for i in range(count):
        words = [rng.choice(WORDS) for _ in range(rng.randint(8, 16))]
        out.append(f"{' '.join(words).capitalize()} ({i}).")
    return out


def time_calls(fn: Callable[[], Any], repeats: int, warmup: int = 3) -> list[float]:
    """Milliseconds per call of `fn`, after `warmup` untimed calls."""
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(repeats):
        started = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - started) * 1000)
    return samples


def percentile(samples: Sequence[float], pct: float) -> float:
    """Nearest-rank percentile (pct in 0..100)."""
    ordered = sorted(samples)
    rank = max(1, min(len(ordered), round(pct / 100 * len(ordered) + 0.5)))
    return ordered[rank - 1]


def summary(samples: Sequence[float]) -> dict[str, float]:
    return {
        "p50": percentile(samples, 50),
        "p99": percentile(samples, 99),
        "mean": statistics.fmean(samples),
    }


def table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A plain-text table, right-aligning numbers."""
    cells = [[_cell(v) for v in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) for i, h in enumerate(headers)]

    def line(values: Sequence[str], numeric: Sequence[bool]) -> str:
        return "  ".join(
            v.rjust(w) if num else v.ljust(w)
            for v, w, num in zip(values, widths, numeric, strict=True)
        ).rstrip()

    numeric = [all(_is_number(r[i]) for r in rows) if rows else False for i in range(len(headers))]
    out = [line(headers, numeric), line(["-" * w for w in widths], numeric)]
    out.extend(line(r, numeric) for r in cells)
    return "\n".join(out)


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _cell(value: object) -> str:
    if isinstance(value, float):
        if value >= 100:
            return f"{value:,.0f}"
        if value >= 10:
            return f"{value:.1f}"
        return f"{value:.3f}" if value < 1 else f"{value:.2f}"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return str(value)


def open_sqlite_store(directory: Path) -> Any:
    """The SQLite adapter on the database file `memory.sqlite3` in `directory`."""
    from jennah.adapters.sqlite.store import SqliteStore

    return SqliteStore(directory / "memory.sqlite3")


def machine_line() -> str:
    import os
    import platform

    return f"python {platform.python_version()}, {os.cpu_count()} CPUs, {platform.machine()}"


def form_now(command: Any, store: Any, embedder: Any, model: Any, *, usage: Any = None) -> Any:
    """Form one conversation synchronously (`prepare` then `run`, received now): the
    formation itself, without an operation, a queue or the ledger."""
    from datetime import UTC, datetime

    from jennah.domain.formation import FormationReceipt
    from jennah.services.formation import FormationUsage, prepare, run

    prepared = prepare(command, store, datetime.now(UTC))
    if isinstance(prepared, FormationReceipt):
        return prepared
    return run(prepared, store, embedder, model, usage=usage or FormationUsage())
