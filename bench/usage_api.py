"""The usage API's report (GET /v1/billing/usage/formation-tokens) over a large ledger.

Loads `--rows` formation usage records (default 1,000,000) of one enterprise
into a fresh SQLite ledger, spread evenly over the `--days` before a fixed
"now" (default 90 days) across `--scopes` scopes, `--callers` callers, two
models and two regions, about 3 % of them abandoned (no tokens). It then times
the report service (`jennah.services.usage_report.formation_tokens`, access check
included, as the route calls it) for four queries:

- `30 days / day`: the last 30 days per UTC day (the CLI's default; the target);
- `30 days / day by model, Tokyo`: grouped, in a whole-hour time zone;
- `90 days / week by scope, New York`: ISO weeks across a DST change;
- `30 days / day, Kolkata`: a +5:30 zone, whose day boundaries fall inside an
  hour, so those hours are read from the ledger's rows.

Each query is timed twice: `without rollups` (every row read from the ledger:
the watermark has never moved) and, after one rollup folds everything up to
now - 5 min into per-hour aggregates, `with rollups` (aggregates plus the
unrolled tail). The two answers must be identical; the script checks it.

Target (issue 6): p50 <= 100 ms with rollups over 1,000,000 rows.
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from _common import machine_line, summary, table
from jennah.adapters.sqlite.identity import SqliteIdentityStore
from jennah.adapters.sqlite.ledger import SqliteUsageLedger
from jennah.adapters.sqlite.store import SqliteStore
from jennah.domain.access import Caller
from jennah.domain.billing import UsageDimension, UsageRecord
from jennah.domain.formation import formation_units
from jennah.services.access import Access, create_enterprise
from jennah.services.usage_report import Per, TokenBucket, TokenUsageQuery, formation_tokens, rollup

TARGET_P50_MS = 100.0
NOW = datetime(2026, 11, 29, 16, 20, 30, tzinfo=UTC)
ENTERPRISE = "bench"
ROOT = Caller(enterprise_id=ENTERPRISE, principal="user:root")
MODELS = ("gemini-2.5-flash", "gemini-2.5-pro")
REGIONS = ("us-central1", "europe-west4")
LOAD_BATCH = 50_000

QUERIES: list[tuple[str, TokenUsageQuery]] = [
    ("30 days / day", TokenUsageQuery(start_time=NOW - timedelta(days=30))),
    (
        "30 days / day by model, Tokyo",
        TokenUsageQuery(
            start_time=NOW - timedelta(days=30),
            time_zone="Asia/Tokyo",
            group_by=UsageDimension.MODEL,
        ),
    ),
    (
        "90 days / week by scope, New York",
        TokenUsageQuery(
            start_time=NOW - timedelta(days=90),
            per=Per.WEEK,
            time_zone="America/New_York",
            group_by=UsageDimension.SCOPE,
        ),
    ),
    (
        "30 days / day, Kolkata",
        TokenUsageQuery(start_time=NOW - timedelta(days=30), time_zone="Asia/Kolkata"),
    ),
]


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000, help="ledger rows to load")
    parser.add_argument("--days", type=int, default=90, help="days the rows are spread over")
    parser.add_argument("--scopes", type=int, default=50, help="distinct scopes")
    parser.add_argument("--callers", type=int, default=10, help="distinct callers")
    parser.add_argument("--queries", type=int, default=30, help="timed runs per query, rollups")
    parser.add_argument(
        "--raw-queries", type=int, default=5, help="timed runs per query without rollups"
    )
    parser.add_argument("--seed", type=int, default=7)
    return parser.parse_args()


def records(count: int, days: int, scopes: int, callers: int, seed: int) -> list[UsageRecord]:
    rng = random.Random(seed)
    first = NOW - timedelta(days=days)
    step = timedelta(days=days) / count
    out = []
    for index in range(count):
        abandoned = rng.random() < 0.03
        input_tokens = 0 if abandoned else rng.randrange(500, 20_000)
        output_tokens = 0 if abandoned else rng.randrange(200, 24_000)
        out.append(
            UsageRecord(
                enterprise_id=ENTERPRISE,
                spent_in_scope=f"agent-{rng.randrange(scopes)}",
                caller=f"user:u{rng.randrange(callers)}",
                model=rng.choice(MODELS),
                region=rng.choice(REGIONS),
                input_tokens=input_tokens,
                output_tokens=output_tokens,
                units=formation_units(input_tokens, output_tokens),
                formation_id=f"fu_{index:08d}",
                recorded_at=first + step * index,
            )
        )
    return out


def load(ledger: SqliteUsageLedger, rows: list[UsageRecord]) -> float:
    started = time.perf_counter()
    for start in range(0, len(rows), LOAD_BATCH):
        ledger.record_many(rows[start : start + LOAD_BATCH])
    return time.perf_counter() - started


def timed(call: Callable[[], list[TokenBucket]], repeats: int) -> tuple[list[float], Any]:
    answer = call()  # warm-up, and the answer compared across modes
    samples = []
    for _ in range(repeats):
        started = time.perf_counter()
        call()
        samples.append((time.perf_counter() - started) * 1000)
    return samples, answer


def main() -> None:
    args = parse_args()
    with tempfile.TemporaryDirectory(prefix="jennah-usage-bench-") as directory:
        path = Path(directory) / "memory.sqlite3"
        identity, store, ledger = (
            SqliteIdentityStore(path),
            SqliteStore(path),
            SqliteUsageLedger(path),
        )
        create_enterprise(identity, ENTERPRISE, ROOT.principal, NOW)
        access = Access(identity, store, lambda: NOW)

        started = time.perf_counter()
        rows = records(args.rows, args.days, args.scopes, args.callers, args.seed)
        built = time.perf_counter() - started
        loaded = load(ledger, rows)
        print(f"{machine_line()}; {args.rows:,} ledger rows over {args.days} days")
        print(
            f"built in {built:.1f} s, loaded in {loaded:.1f} s ({args.rows / loaded:,.0f} rows/s)"
        )

        def report(query: TokenUsageQuery) -> Callable[[], list[TokenBucket]]:
            return lambda: formation_tokens(ROOT, access, ledger, query, NOW)

        without = {name: timed(report(q), args.raw_queries) for name, q in QUERIES}
        started = time.perf_counter()
        folded = rollup(ledger, NOW)
        rolled_in = time.perf_counter() - started
        print(
            f"rollup: {folded.rows_folded:,} rows folded in {rolled_in:.1f} s, "
            f"watermark {folded.watermark.isoformat()}"
        )
        with_rollups = {name: timed(report(q), args.queries) for name, q in QUERIES}

        table_rows = []
        for name, _ in QUERIES:
            raw_samples, raw_answer = without[name]
            samples, answer = with_rollups[name]
            if answer != raw_answer:
                raise SystemExit(f"{name}: the answers with and without rollups differ")
            fast, slow = summary(samples), summary(raw_samples)
            table_rows.append(
                [
                    name,
                    len(answer),
                    fast["p50"],
                    fast["p99"],
                    slow["p50"],
                    slow["p50"] / fast["p50"],
                    "yes" if fast["p50"] <= TARGET_P50_MS else "NO",
                ]
            )
        print()
        print(
            table(
                [
                    "query",
                    "buckets",
                    "rollups p50 ms",
                    "rollups p99 ms",
                    "no rollups p50 ms",
                    "speed-up",
                    f"p50 <= {TARGET_P50_MS:g} ms",
                ],
                table_rows,
            )
        )
        print("\nanswers identical with and without rollups: yes")
        ledger.close()
        store.close()
        identity.close()


if __name__ == "__main__":
    main()
