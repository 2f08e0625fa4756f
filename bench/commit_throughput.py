"""Batched commit throughput on the SQLite store, and the MiniLM embedder's rate.

Three figures, each in records (or texts) per second:
1. `store.apply` with CommitPlans of 500 chunks, embeddings precomputed
   (plan building excluded), against a raw-SQLite baseline in the same
   process: the same rows inserted with executemany into one plain table,
   one transaction per 500.
2. The memory:commit service (validation, ids, embedding, apply) with the
   HashingEmbedder, commands of 500 chunks.
3. MiniLMEmbedder.embed_batch on short texts (8-16 words): the shipped path (the
   int8 model with fixed activation scales, texts of equal token length run together on
   --threads workers), against the
   float model in batches of --embed-batch as a same-process baseline.

Targets (issue 2): >= 1,000 records/s for 1, >= 400 texts/s for 3 on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import statistics
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from _common import (
    SCOPE,
    machine_line,
    open_sqlite_store,
    plans,
    short_texts,
    table,
    unit_vectors,
    valid_at_for,
)
from jennah.adapters.embedding.hashing import HashingEmbedder
from jennah.domain.models import CommitPlan
from jennah.services.commands import ChunkInput, CommitCommand
from jennah.services.commit import commit

TARGET_STORE = 1_000.0
TARGET_EMBEDDER = 400.0
STORE = "store.apply, embeddings precomputed"
RAW = "raw sqlite executemany (baseline)"
SERVICE = "commit service + HashingEmbedder"
EMBED = "MiniLM embed_batch, short texts"
EMBED_FLOAT = "MiniLM float model (baseline)"


def main() -> None:
    args = _parse_args()
    print(f"commit throughput, SQLite store ({machine_line()})")
    print(f"{args.rounds} rounds, each kind once per round; median and best of the rounds\n")
    vectors = unit_vectors(np.random.default_rng(args.seed), args.records)
    built = list(plans(vectors, args.batch))
    embedder = None if args.skip_embedding else _minilm(args, quantize=True)
    float_embedder = None if args.skip_embedding else _minilm(args, quantize=False)
    texts = short_texts(args.texts, seed=3)
    rates: dict[str, list[float]] = {STORE: [], RAW: [], SERVICE: [], EMBED: [], EMBED_FLOAT: []}
    for _ in range(args.rounds):
        rates[STORE].append(_store_apply(built))
        rates[RAW].append(_raw_sqlite(built))
        rates[SERVICE].append(_commit_service(args.records, args.batch))
        if embedder is not None and float_embedder is not None:
            rates[EMBED].append(_embedder_rate(embedder, texts))
            rates[EMBED_FLOAT].append(_embedder_rate(float_embedder, texts))
    raw = statistics.median(rates[RAW])
    float_rate = statistics.median(rates[EMBED_FLOAT]) if rates[EMBED_FLOAT] else 0.0
    rows: list[list[object]] = []
    for name, items, target in (
        (STORE, args.records, f">= {TARGET_STORE:,.0f}"),
        (RAW, args.records, ""),
        (SERVICE, args.records, ""),
        (EMBED, args.texts, f">= {TARGET_EMBEDDER:,.0f}"),
        (EMBED_FLOAT, args.texts, ""),
    ):
        if not rates[name]:
            continue
        median = statistics.median(rates[name])
        base = float_rate if name in (EMBED, EMBED_FLOAT) else raw
        labels = {
            EMBED: f"{EMBED} (int8, equal-length runs, {args.threads} workers)",
            EMBED_FLOAT: f"{EMBED_FLOAT} (batch {args.embed_batch}, {args.threads} thr)",
        }
        rows.append(
            [
                labels.get(name, name),
                items,
                median,
                max(rates[name]),
                target,
                f"{median / base:.2f}x",
            ]
        )
    print(table(["what", "items", "median /s", "best /s", "target", "vs baseline"], rows))
    print("baseline: raw sqlite for the store rows, the float model for the embedder rows")


def _parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=20_000, help="records committed per run")
    parser.add_argument("--batch", type=int, default=500, help="chunks per CommitPlan/command")
    parser.add_argument("--texts", type=int, default=2_000, help="short texts embedded")
    parser.add_argument("--embed-batch", type=int, default=64, help="MiniLM batch size")
    parser.add_argument("--threads", type=int, default=2, help="onnxruntime intra-op threads")
    parser.add_argument("--rounds", type=int, default=3, help="repeat every measurement")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--skip-embedding", action="store_true", help="skip the MiniLM rate")
    return parser.parse_args()


def _store_apply(built: list[CommitPlan]) -> float:
    with tempfile.TemporaryDirectory(prefix="jennah-bench-") as tmp:
        store = open_sqlite_store(Path(tmp))
        started = time.perf_counter()
        for plan in built:
            store.apply(plan)
        elapsed = time.perf_counter() - started
        _close(store)
    return sum(len(p.chunks) for p in built) / elapsed


def _raw_sqlite(built: list[CommitPlan]) -> float:
    """The floor: the same rows into one plain table, no index, no vector table."""
    with tempfile.TemporaryDirectory(prefix="jennah-bench-") as tmp:
        db = sqlite3.connect(Path(tmp) / "raw.sqlite3", isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute(
            "CREATE TABLE chunks (enterprise_id TEXT, scope_id TEXT, id TEXT, text TEXT, "
            "metadata TEXT, valid_at TEXT, created_at TEXT, embedding BLOB, "
            "PRIMARY KEY (enterprise_id, scope_id, id))"
        )
        started = time.perf_counter()
        for plan in built:
            now = datetime.now(UTC).isoformat()
            rows = [_raw_row(plan, record, now) for record in plan.chunks]
            db.execute("BEGIN")
            db.executemany("INSERT OR REPLACE INTO chunks VALUES (?,?,?,?,?,?,?,?)", rows)
            db.execute("COMMIT")
        elapsed = time.perf_counter() - started
        db.close()
    return sum(len(p.chunks) for p in built) / elapsed


def _raw_row(plan: CommitPlan, record: Any, now: str) -> tuple[object, ...]:
    return (
        plan.scope.enterprise_id,
        plan.scope.scope_id,
        record.id,
        record.text,
        json.dumps(record.metadata),
        record.valid_at.isoformat() if record.valid_at else None,
        now,
        np.asarray(record.embedding, dtype=np.float32).tobytes(),
    )


def _commit_service(count: int, batch: int) -> float:
    embedder = HashingEmbedder()
    commands = [
        CommitCommand(
            scope=SCOPE,
            chunks=[
                ChunkInput(
                    text=f"service record {i}: {text}",
                    metadata={"speaker": f"speaker-{i % 10}", "session": str(i % 50)},
                    valid_at=valid_at_for(i),
                )
                for i, text in zip(
                    range(start, min(start + batch, count)),
                    short_texts(min(batch, count - start), seed=start),
                    strict=True,
                )
            ],
        )
        for start in range(0, count, batch)
    ]
    with tempfile.TemporaryDirectory(prefix="jennah-bench-") as tmp:
        store = open_sqlite_store(Path(tmp))
        started = time.perf_counter()
        for command in commands:
            commit(command, store, embedder, lambda: datetime.now(UTC))
        elapsed = time.perf_counter() - started
        _close(store)
    return count / elapsed


def _minilm(args: argparse.Namespace, *, quantize: bool) -> Any:
    from jennah.adapters.embedding.minilm import MiniLMEmbedder

    embedder = MiniLMEmbedder(threads=args.threads, batch_size=args.embed_batch, quantize=quantize)
    embedder.embed_batch(short_texts(args.embed_batch, seed=99))  # load and warm up
    return embedder


def _embedder_rate(embedder: Any, texts: list[str]) -> float:
    started = time.perf_counter()
    embedder.embed_batch(texts)
    return len(texts) / (time.perf_counter() - started)


def _close(store: Any) -> None:
    close = getattr(store, "close", None)
    if callable(close):
        close()


if __name__ == "__main__":
    main()
