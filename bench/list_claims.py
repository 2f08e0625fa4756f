"""Reading a scope's claims on the SQLite store: 5,000 claims, as states and as records.

The brief compiles from, and the lifecycle pass walks, every claim of a scope through
`MemoryStore.list_claim_states` (the fields they read, as immutable ClaimStates). This
loads two scopes of N claims each (typical claim fields: a metadata key, applies_to on
half of them, related on a fifth, a valid window on a third; random ids, so the id order
is not the insertion order) and times reading one scope's active claims whole: from the
store's claim cache (`claim_cache.py`), after a commit that changed one claim (the cache
updated in place), and cold (a store just opened: the rows read and the cache built);
then as full records through `list_claims` (the table, embeddings left out; what the
export reads) in one call and in pages of 1,000. Wall time and this process's CPU time
(the second is steadier on a shared machine). A calibration loop
(`sum(range(10**7))`, ~0.15 s on an idle modern core) says how busy the machine was.

Target (issue 16): 5,000 claims in < 20 ms.
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

import numpy as np

from _common import machine_line, open_sqlite_store, summary, table, unit_vectors
from jennah.domain.models import (
    ClaimUpdate,
    CommitPlan,
    MemoryRecord,
    ScopeRecord,
    ScopeRef,
    Status,
)

WORDS = [
    "tea",
    "chess",
    "lisbon",
    "flight",
    "window",
    "seat",
    "bike",
    "coffee",
    "porto",
    "tokyo",
    "run",
    "swim",
    "book",
]
PAGE = 1_000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--claims", type=int, default=5_000, help="claims per scope")
    parser.add_argument("--reads", type=int, default=21)
    args = parser.parse_args()
    print(f"list_claim_states and list_claims, SQLite store ({machine_line()})\n")
    with tempfile.TemporaryDirectory() as directory:
        store = open_sqlite_store(Path(directory))
        scopes = [ScopeRef(enterprise_id="bench", scope_id=f"scope-{i}") for i in (1, 2)]
        for scope in scopes:
            _load(store, scope, args.claims)
        first = store.list_claims(scopes[0], None, None, 1)[0]

        def whole(on: Any = store) -> object:
            return on.list_claim_states(scopes[0], [Status.ACTIVE])

        def _paged() -> object:
            return _pages(store, scopes[0])

        def records() -> object:
            return store.list_claims(scopes[0], [Status.ACTIVE], None, args.claims)

        def after_commit() -> object:
            revision = store.get_chunks(scopes[0], [first.id])[0].revision
            update = ClaimUpdate(
                memory_id=first.id, expected_revision=revision, reinforcement_count=revision
            )
            store.apply(CommitPlan(scope=scopes[0], claim_updates=[update]))
            return whole

        opened: list[Any] = []

        def cold() -> object:
            opened.append(open_sqlite_store(Path(directory)))
            return lambda: whole(opened[-1])

        rows = [
            [f"states, cached, {args.claims:,} claims", *_timed(whole, args.reads)],
            ["states, after a commit changing one claim", *_timed(whole, args.reads, after_commit)],
            ["states, cold (store just opened)", *_timed(whole, args.reads, cold)],
            ["list_claims (records), one call", *_timed(records, args.reads)],
            [f"list_claims, pages of {PAGE:,}", *_timed(_paged, args.reads)],
        ]
        for each in [store, *opened]:
            each.close()
    print(table(["read", "p50 ms", "min ms", "CPU p50 ms"], rows))
    started = time.perf_counter()
    sum(range(10**7))
    print(f"\ncalibration: sum(range(10**7)) took {time.perf_counter() - started:.2f} s")


def _load(store: Any, scope: ScopeRef, count: int) -> None:
    rng = random.Random(scope.scope_id)
    vectors = unit_vectors(np.random.default_rng(7), count)
    start = datetime(2025, 1, 1, tzinfo=UTC)
    claims = []
    for n in range(count):
        text = " ".join(rng.choice(WORDS) for _ in range(12))
        claims.append(
            MemoryRecord(
                id=f"c-{rng.getrandbits(64):016x}",
                scope=scope,
                text=text,
                summary=text[:40],
                about="ana",
                when_to_use="when planning",
                metadata={"jennah.source_step": f"step-{n // 5}"},
                applies_to=["person:ana"] if n % 2 else [],
                related=[] if n % 5 else ["c-0"],
                valid_at=start + timedelta(hours=n) if n % 3 == 0 else None,
                valid_until=start + timedelta(days=2000) if n % 10 == 0 else None,
                reinforcement_count=n % 4,
                embedding=vectors[n].tolist(),
            )
        )
    registration = ScopeRecord(scope=scope, kind="agent")
    for first in range(0, count, 500):
        plan = CommitPlan(
            scope=scope, registration=registration, chunks=claims[first : first + 500]
        )
        store.apply(plan)


def _pages(store: Any, scope: ScopeRef) -> int:
    after, read = None, 0
    while True:
        page = store.list_claims(scope, [Status.ACTIVE], after, PAGE)
        read += len(page)
        if len(page) < PAGE:
            return read
        after = page[-1].id


def _timed(
    call: Callable[[], object], reads: int, before: Callable[[], object] | None = None
) -> list[float]:
    """p50 and min wall ms, p50 CPU ms of `call` (what `before`, untimed, returns instead
    when given)."""
    wall, cpu = [], []
    call()
    for _ in range(reads):
        timed: Any = call if before is None else before()
        started, started_cpu = time.perf_counter(), time.process_time()
        timed()
        wall.append((time.perf_counter() - started) * 1000)
        cpu.append((time.process_time() - started_cpu) * 1000)
    return [round(summary(wall)["p50"], 1), round(min(wall), 1), round(summary(cpu)["p50"], 1)]


if __name__ == "__main__":
    main()
