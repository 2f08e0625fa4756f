"""The exact in-process vector index over one scope's memory records.

Why not a sqlite-vec `vec0` scan: on this 2-core machine a `vec0` float[384]
brute-force top-10 over 100k rows takes ~37 ms p50 (int8 ~68 ms), over the
25 ms target, and binary quantization (~10.5 ms for a top-100) is not exact.
So the SQLite file stays the system of record (embeddings are sqlite-vec
float32 BLOBs) and each searched scope gets a numpy float32 matrix, built
from the table on first search (~70 ms at 10k rows, ~1 s at 100k), or before
it: `jnh serve` builds the indexes of the scopes that fit the budget at start
(`SqliteStore.warm_indexes`), so no query after a restart pays the build.

The scan is `np.vecdot` (a float32 dot product per row, on the calling
thread), not the BLAS `X @ q`: OpenBLAS's two threads sleep between calls and
wake slowly (a 10k-row search took 4.5 ms with BLAS, 0.7 ms with einsum), and
with both cores busy BLAS took 7-24 ms over 100k rows against einsum's steady
6.5-8 ms. `np.vecdot` is single-threaded too and takes ~25% less CPU than
`np.einsum("ij,j->i")` over 100k rows (14.5 against 19.6 ms, interleaved, in
`bench/query_latency.py`'s process); it sums in another order, which the
rescoring below makes harmless. Measured end to end (`search_chunks`, top 10,
validity mask and metadata filters on, the machine shared with other work):
p50 ~1.4 ms at 10k rows, ~9.5 ms at 100k (with einsum).

Exactness: the float32 scan only selects candidates. Every row whose float32
score is within RESCORE_MARGIN of the k-th best is rescored in float64 as
cos(q, x) = q.x / (|q| |x|) from the stored float32 values, then ordered by
score descending and id ascending. The float32 error of one 384-term dot
product of unit vectors is below 2.5e-5 whatever the order of the sum
(384 x 2^-24 x |q| |x|), so no row of the exact top k can be
left out by the cut (it would need an error above RESCORE_MARGIN / 2).

Coherence: `scope_generations.generation` is bumped by a trigger on every
write to memory_records. An index remembers the generation it reflects; a
search first reads the scope's generation (one primary-key lookup) and
rebuilds a stale index. The store's own commits update the index in place
(from the committed rows, read back inside the transaction) instead.

Metadata filters: a key's values become an int32 code column, built with one
SQL query the first time that key is filtered on and then kept in step with
writes, so EQUALS / IN / NOT_EQUALS (absent or different) are array compares.

Not thread-safe: the store serializes access with one lock.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from jennah.domain.models import (
    EMBEDDING_DIMENSIONS,
    FilterOperator,
    MetadataFilter,
    ScopeRef,
)

RESCORE_MARGIN = 1e-4
_NEVER = np.iinfo(np.int64).min  # valid_at NULL: valid since the unbounded past
_FOREVER = np.iinfo(np.int64).max  # invalid_at NULL: still valid
_ABSENT = -1
_MIN_CAPACITY = 256
_GATHER_BELOW = 16  # gather the allowed rows first when fewer than 1/16 of all are allowed

_ZERO_VECTOR = bytes(EMBEDDING_DIMENSIONS * 4)

BoolArray = npt.NDArray[np.bool_]
# (id, float32 embedding BLOB or None, valid_at, invalid_at, retired), times in microseconds;
# `retired` is also True for a hidden claim (domain HIDDEN_STATUSES): never searched
IndexRow = tuple[str, bytes | None, int | None, int | None, bool]


@dataclass(frozen=True)
class IndexEntry:
    """What the index keeps of one memory record (times in epoch microseconds)."""

    id: str
    embedding: bytes | None
    valid_at: int | None
    invalid_at: int | None
    retired: bool  # or hidden (domain HIDDEN_STATUSES): never searched
    metadata: dict[str, str]


class _MetadataColumn:
    """The values of one metadata key as int32 codes (-1 = key absent)."""

    def __init__(self, capacity: int) -> None:
        self.codes = np.full(capacity, _ABSENT, dtype=np.int32)
        self._code_of: dict[str, int] = {}

    def set(self, position: int, value: str | None) -> None:
        if value is None:
            self.codes[position] = _ABSENT
            return
        code = self._code_of.setdefault(value, len(self._code_of))
        self.codes[position] = code

    def grow(self, capacity: int) -> None:
        grown = np.full(capacity, _ABSENT, dtype=np.int32)
        grown[: self.codes.size] = self.codes
        self.codes = grown

    def matches(self, flt: MetadataFilter, size: int) -> BoolArray:
        wanted = [self._code_of[v] for v in set(flt.values) if v in self._code_of]
        present_with_value = np.isin(self.codes[:size], wanted)
        if flt.operator is FilterOperator.NOT_EQUALS:
            return ~present_with_value
        return present_with_value


class ScopeIndex:
    """Embeddings and validity windows of one scope's records, as numpy arrays."""

    def __init__(self, generation: int, capacity: int = _MIN_CAPACITY) -> None:
        self.generation = generation
        self.size = 0
        self.ids: list[str] = []
        self._position: dict[str, int] = {}
        # rows at and beyond `size` are never read before `_set` writes them
        self._vectors = np.empty((capacity, EMBEDDING_DIMENSIONS), dtype=np.float32)
        self._inverse_norms = np.zeros(capacity, dtype=np.float32)
        self._valid_at = np.full(capacity, _NEVER, dtype=np.int64)
        self._invalid_at = np.full(capacity, _FOREVER, dtype=np.int64)
        self._searchable = np.zeros(capacity, dtype=np.bool_)
        self._columns: dict[str, _MetadataColumn] = {}

    @classmethod
    def build(cls, generation: int, rows: Sequence[IndexRow]) -> ScopeIndex:
        """An index of `rows` (id, embedding, valid_at, invalid_at, retired), vectorized."""
        n = len(rows)
        index = cls(generation, max(_MIN_CAPACITY, n + n // 4))
        if n == 0:
            return index
        index.size = n
        index.ids = [row[0] for row in rows]
        index._position = {record_id: i for i, record_id in enumerate(index.ids)}
        blob = b"".join(_ZERO_VECTOR if row[1] is None else row[1] for row in rows)
        index._vectors[:n] = np.frombuffer(blob, dtype=np.float32).reshape(n, -1)
        vectors = index._vectors[:n]
        norms = np.sqrt(np.einsum("ij,ij->i", vectors, vectors))
        np.divide(1.0, norms, out=index._inverse_norms[:n], where=norms > 0)
        index._valid_at[:n] = [_NEVER if row[2] is None else row[2] for row in rows]
        index._invalid_at[:n] = [_FOREVER if row[3] is None else row[3] for row in rows]
        index._searchable[:n] = [row[1] is not None and not row[4] for row in rows]
        return index

    def apply(self, entries: Iterable[IndexEntry], generation: int) -> None:
        """Insert or overwrite entries (by id); the index then reflects `generation`."""
        for entry in entries:
            position = self._position.get(entry.id)
            if position is None:
                position = self._append(entry.id)
            self._set(position, entry)
        self.generation = generation

    def has_column(self, key: str) -> bool:
        return key in self._columns

    def add_column(self, key: str, values: Iterable[tuple[str, str]]) -> None:
        """Materialize metadata `key` from (record id, value) pairs."""
        column = _MetadataColumn(self._vectors.shape[0])
        for record_id, value in values:
            position = self._position.get(record_id)
            if position is not None:
                column.set(position, value)
        self._columns[key] = column

    def valid_mask(self, as_of: int) -> BoolArray:
        """Rows with an embedding, not retired, and valid at `as_of`."""
        n = self.size
        mask: BoolArray = self._searchable[:n] & (self._valid_at[:n] <= as_of)
        mask &= self._invalid_at[:n] > as_of
        return mask

    def filter_mask(self, flt: MetadataFilter) -> BoolArray:
        return self._columns[flt.key].matches(flt, self.size)

    def top_k(self, query: Sequence[float], k: int, allowed: BoolArray) -> list[tuple[str, float]]:
        """The k allowed rows nearest `query` by cosine similarity: (id, score),
        best first, ties by id ascending."""
        positions = np.flatnonzero(allowed)
        if positions.size == 0 or k <= 0:
            return []
        exact_query = np.asarray(query, dtype=np.float64)
        positions = self._candidates(positions, exact_query, k)
        scores = self._exact_scores(positions, exact_query)
        ranked = sorted(
            zip(positions.tolist(), scores.tolist(), strict=True),
            key=lambda hit: (-hit[1], self.ids[hit[0]]),
        )
        return [(self.ids[position], score) for position, score in ranked[:k]]

    def _candidates(
        self, positions: npt.NDArray[np.intp], query: npt.NDArray[np.float64], k: int
    ) -> npt.NDArray[np.intp]:
        """Positions whose float32 score may place them in the exact top k."""
        if positions.size <= k:
            return positions
        norm = float(np.linalg.norm(query))
        unit = (query / norm if norm > 0 else query).astype(np.float32)
        if positions.size * _GATHER_BELOW < self.size:  # very selective: gather, then scan
            scores = np.vecdot(self._vectors[positions], unit)
        else:
            scores = np.vecdot(self._vectors[: self.size], unit)[positions]
        scores *= self._inverse_norms[positions]
        cut = positions.size - k
        kth = np.partition(scores, cut)[cut]
        kept: npt.NDArray[np.intp] = positions[scores >= kth - RESCORE_MARGIN]
        return kept

    def _exact_scores(
        self, positions: npt.NDArray[np.intp], query: npt.NDArray[np.float64]
    ) -> npt.NDArray[np.float64]:
        vectors = self._vectors[positions].astype(np.float64)
        norms = np.linalg.norm(vectors, axis=1) * np.linalg.norm(query)
        dots = vectors @ query
        scores: npt.NDArray[np.float64] = np.divide(
            dots, norms, out=np.zeros_like(dots), where=norms > 0
        )
        return scores

    def _append(self, record_id: str) -> int:
        if self.size == self._vectors.shape[0]:
            self._grow(self.size + self.size // 2 + _MIN_CAPACITY)
        position = self.size
        self.size += 1
        self.ids.append(record_id)
        self._position[record_id] = position
        return position

    def _set(self, position: int, entry: IndexEntry) -> None:
        if entry.embedding is None:
            self._vectors[position] = 0.0
        else:
            self._vectors[position] = np.frombuffer(entry.embedding, dtype=np.float32)
        norm = float(np.linalg.norm(self._vectors[position]))
        self._inverse_norms[position] = 1.0 / norm if norm > 0 else 0.0
        self._valid_at[position] = _NEVER if entry.valid_at is None else entry.valid_at
        self._invalid_at[position] = _FOREVER if entry.invalid_at is None else entry.invalid_at
        self._searchable[position] = entry.embedding is not None and not entry.retired
        for key, column in self._columns.items():
            column.set(position, entry.metadata.get(key))

    def _grow(self, capacity: int) -> None:
        def grown(array: npt.NDArray[np.generic], fill: object) -> npt.NDArray[np.generic]:
            bigger = np.full((capacity, *array.shape[1:]), fill, dtype=array.dtype)
            bigger[: array.shape[0]] = array
            return bigger

        vectors = np.empty((capacity, EMBEDDING_DIMENSIONS), dtype=np.float32)
        vectors[: self.size] = self._vectors[: self.size]
        self._vectors = vectors
        self._inverse_norms = grown(self._inverse_norms, 0.0)  # type: ignore[assignment]
        self._valid_at = grown(self._valid_at, _NEVER)  # type: ignore[assignment]
        self._invalid_at = grown(self._invalid_at, _FOREVER)  # type: ignore[assignment]
        self._searchable = grown(self._searchable, False)  # type: ignore[assignment]
        for column in self._columns.values():
            column.grow(capacity)


class IndexCache:
    """Scope indexes, least recently used evicted beyond `budget_rows` rows in all."""

    def __init__(self, budget_rows: int) -> None:
        self.budget_rows = budget_rows
        self._indexes: OrderedDict[ScopeRef, ScopeIndex] = OrderedDict()

    def current(self, scope: ScopeRef, generation: int) -> ScopeIndex | None:
        """The scope's index if it reflects `generation`; a stale one is dropped."""
        index = self._indexes.get(scope)
        if index is None:
            return None
        if index.generation != generation:
            del self._indexes[scope]
            return None
        self._indexes.move_to_end(scope)
        return index

    def put(self, scope: ScopeRef, index: ScopeIndex) -> None:
        self._indexes[scope] = index
        self._indexes.move_to_end(scope)
        self._evict()

    def drop(self, scope: ScopeRef) -> None:
        self._indexes.pop(scope, None)

    def get(self, scope: ScopeRef) -> ScopeIndex | None:
        return self._indexes.get(scope)

    def after_commit(
        self, scope: ScopeRef, before: int, after: int, entries: Sequence[IndexEntry] | None
    ) -> None:
        """Apply a commit that moved the scope from generation `before` to `after`.

        `entries` are the commit's rows as committed; None when they were not read
        back (no index then), in which case an index built meanwhile is dropped.
        """
        index = self._indexes.get(scope)
        if index is None or after == before:
            return
        if index.generation != before or entries is None:
            del self._indexes[scope]
            return
        index.apply(entries, after)
        self._evict()

    def _evict(self) -> None:
        total = sum(index.size for index in self._indexes.values())
        while total > self.budget_rows and len(self._indexes) > 1:
            _, evicted = self._indexes.popitem(last=False)
            total -= evicted.size
