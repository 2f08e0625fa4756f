"""FTS5's bm25 as its source computes it (sqlite ext/fts5/fts5_aux.c), for the bound
that lets a word search score only the rows holding a rare word (reader.search_words).

For a query of phrases p, a row of D tokens scores (as -bm25())

    sum over p of idf(p) * f*(k1 + 1) / (f + k1*(1 - b + b*D/avgdl))

in phrase order, f the row's instances of p (a phrase the row lacks adds exactly 0),
k1 = 1.2, b = 0.75, and idf(p) = log((N - n + 0.5) / (n + 0.5)) floored at 1e-6 for a
phrase held by n of the table's N rows (all scopes). The tf-part is below k1 + 1, so a
row holding none but the phrases P scores below (k1 + 1) * (sum of idf(p) over P).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

K1 = 1.2
IDF_FLOOR = 1e-6
# Relative slack on a bound: covers the rounding of a row's sum (a few ulps per phrase)
# and of log here against the C library's, many orders of magnitude over.
BOUND_SLACK = 1e-9


def idf(rows: int, holding: int) -> float:
    """FTS5's idf of a phrase held by `holding` of the table's `rows` rows."""
    value = math.log((rows - holding + 0.5) / (holding + 0.5))
    return value if value > 0.0 else IDF_FLOOR


def bound(rows: int, holdings: Sequence[int]) -> float:
    """Above the score of any row holding no phrase but these (their row counts
    `holdings`): (k1 + 1) * sum of idf, widened by BOUND_SLACK."""
    return (K1 + 1.0) * math.fsum(idf(rows, n) for n in holdings) * (1.0 + BOUND_SLACK)


def total_rows(averages: bytes | None) -> int:
    """N: the table's row count, the first varint of FTS5's averages record (the
    `%_data` row of id 1: row count, then each column's token count)."""
    if not averages:
        return 0
    value = 0
    for i, byte in enumerate(averages[:9]):
        if i == 8:  # SQLite varint: the ninth byte gives all its 8 bits
            return (value << 8) | byte
        value = (value << 7) | (byte & 0x7F)
        if byte < 0x80:
            return value
    return value
