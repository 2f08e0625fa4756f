"""Platform overhead of memory:form on the SQLite store, with a zero-latency model.

Each formation sends 3 turns (user, assistant, user) from which a scripted
model (`ScriptedModel`, answering instantly) extracts 10 fact candidates, and
runs through the formation service (`jennah.services.formation.form`):
bounds, rendering, verification, identical-content lookup, one nearest-memory
search per candidate, reconciliation, planning and ONE store commit. The time
measured is everything but the model: what the platform adds to a formation.

Two cases per scope size, each in a scope preloaded with N memories
(CommitPlans of 500 chunks carrying precomputed random unit vectors, unrelated
to anything formed):
- `fresh topic`: every candidate is new to the scope (nothing similar exists),
  so formation skips the reconciliation call: 1 model call per formation;
- `revisions`: every candidate revises a memory of the scope ("<four made-up
  words> is v(i)" replacing "... is v(i-1)", embedded by the same embedder),
  so formation asks the model once more: 2 model calls, 10 supersessions.

Embeddings come from the dependency-free HashingEmbedder (MiniLM would add its
own ~3 ms per short text, reported by query_latency.py). A fresh-topic run adds
its 10 new memories per formation to the scope, so the scope grows during the
run (both sizes are printed); a revision run keeps the current count and adds
history rows.

Targets (issue 4): p50 <= 30 ms per formation; 1 model call when nothing
similar exists, at most 2.
"""

from __future__ import annotations

import argparse
import random
import statistics
import string
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from _common import (
    form_now,
    machine_line,
    open_sqlite_store,
    plans,
    summary,
    table,
    unit_vectors,
)
from jennah.adapters.embedding.hashing import HashingEmbedder
from jennah.adapters.models.scripted import ScriptedModel
from jennah.domain import rules
from jennah.domain.formation import FormationReceipt, Turn, TurnRole
from jennah.domain.models import CommitPlan, MemoryRecord, ScopeRef
from jennah.ports.prompts import read_data
from jennah.services.formation import FormationCommand, FormationUsage

TARGET_P50_MS = 30.0
TARGET_CALLS = "1 fresh, <= 2"
FRESH = "fresh topic"
REVISIONS = "revisions"


@dataclass
class Script:
    """The conversation of the current formation and the model's answers to it."""

    turns: list[Turn] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)

    def set(self, texts: list[str]) -> None:
        half = (len(texts) + 1) // 2
        self.texts = texts
        self.turns = [
            Turn(role=TurnRole.USER, content=" ".join(texts[:half])),
            Turn(role=TurnRole.ASSISTANT, content="Noted, thanks."),
            Turn(role=TurnRole.USER, content=" ".join(texts[half:]) or "That is all."),
        ]

    def extraction(self, _prompt: str, _schema: dict[str, Any]) -> dict[str, Any]:
        half = (len(self.texts) + 1) // 2
        return {
            "candidates": [
                {
                    "kind": "CANDIDATE_KIND_FACT",
                    "text": text,
                    "memory_type": "fact",
                    "turns": [0 if i < half else 2],
                    "quote": text,
                    "attributes": {},
                }
                for i, text in enumerate(self.texts)
            ]
        }


def reconciliation(prompt: str, _schema: dict[str, Any]) -> dict[str, Any]:
    """Revise, for each candidate, the existing memory about the same setting."""
    data = read_data(prompt)
    by_setting = {_setting(m["text"]): m["id"] for m in data["existing"]}
    return {
        "decisions": [
            {
                "candidate_index": c["candidateIndex"],
                "decision": "revised",
                "matched_id": by_setting[_setting(c["text"])],
            }
            for c in data["candidates"]
        ]
    }


def _setting(text: str) -> str:
    return text.rsplit(" is ", 1)[0].lower()


def main() -> None:
    args = _parse_args()
    print(f"memory:form platform overhead, SQLite store ({machine_line()})")
    print(
        f"{args.formations} formations per case after {args.warmup} untimed, "
        f"{args.candidates} candidates each, zero-latency scripted model, hashing embedder\n"
    )
    rows: list[list[object]] = []
    for size in args.sizes:
        for case in (FRESH, REVISIONS):
            rows.append(_run(size, case, args))
    headers = ["memories", "case", "p50 ms", "p99 ms", "mean ms", "target p50",
               "model calls", "decisions", "supersessions"]  # fmt: skip
    print(table(headers, rows))
    print(
        f"\nmodel calls: mean (max) per formation; target {TARGET_CALLS}. memories: the "
        "scope's current memories before -> after the run."
    )


def _parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="Smoke run: --sizes 500 --formations 10 --warmup 2",
    )
    parser.add_argument(
        "--sizes", type=lambda s: [int(x) for x in s.split(",")], default=[1_000, 10_000],
        help="scope sizes, comma-separated [default: 1000,10000]",
    )  # fmt: skip
    parser.add_argument("--formations", type=int, default=100, help="timed formations per case")
    parser.add_argument("--warmup", type=int, default=5, help="untimed formations first")
    parser.add_argument("--candidates", type=int, default=10, help="candidates per formation")
    parser.add_argument("--seed", type=int, default=42)
    return parser.parse_args()


@dataclass
class Measured:
    """What the timed formations of one case did."""

    samples: list[float] = field(default_factory=list)
    calls: list[int] = field(default_factory=list)
    decisions: Counter[str] = field(default_factory=Counter)
    supersessions: int = 0

    def add(self, milliseconds: float, usage: FormationUsage, receipt: FormationReceipt) -> None:
        self.samples.append(milliseconds)
        self.calls.append(usage.model_calls)
        self.decisions.update(c.decision.value.removeprefix("MEMORY_DECISION_").lower()
                              for c in receipt.candidates)  # fmt: skip
        self.supersessions += receipt.chunk_supersessions


def _run(size: int, case: str, args: argparse.Namespace) -> list[object]:
    """One case in a fresh scope of `size` memories: its table row."""
    scope = ScopeRef(enterprise_id="bench", scope_id=f"form-{case.split()[0]}-{size}")
    rng = random.Random(args.seed)
    settings = [" ".join(_word(rng) for _ in range(4)) for _ in range(args.candidates)]
    embedder = HashingEmbedder()
    with tempfile.TemporaryDirectory(prefix="jennah-bench-") as tmp:
        store = open_sqlite_store(Path(tmp))
        revised = [] if case == FRESH else _texts(case, rng, settings, -1)
        _preload(store, scope, size, args.seed, _records(scope, revised, embedder))
        before = _current(store, scope)
        measured = _measure(store, scope, case, rng, settings, args)
        after = _current(store, scope)
        _close(store)
    stats = summary(measured.samples)
    return [
        f"{before:,} -> {after:,}", case, stats["p50"], stats["p99"], stats["mean"],
        f"<= {TARGET_P50_MS:.0f}",
        f"{statistics.fmean(measured.calls):.2f} ({max(measured.calls)})",
        ", ".join(f"{n} {d}" for d, n in sorted(measured.decisions.items())),
        measured.supersessions,
    ]  # fmt: skip


def _measure(
    store: Any,
    scope: ScopeRef,
    case: str,
    rng: random.Random,
    settings: list[str],
    args: argparse.Namespace,
) -> Measured:
    """Form `--warmup` untimed, then `--formations` timed conversations."""
    script = Script()
    answers = [script.extraction] if case == FRESH else [script.extraction, reconciliation]
    model, embedder, measured = ScriptedModel(answers, repeat=True), HashingEmbedder(), Measured()
    for i in range(args.warmup + args.formations):
        script.set(_texts(case, rng, settings, i))
        command = FormationCommand(scope=scope, turns=script.turns)
        usage = FormationUsage()
        started = time.perf_counter()
        receipt = form_now(command, store, embedder, model, usage=usage)
        elapsed = (time.perf_counter() - started) * 1000
        if i >= args.warmup:
            measured.add(elapsed, usage, receipt)
    return measured


def _preload(
    store: Any, scope: ScopeRef, size: int, seed: int, records: list[MemoryRecord]
) -> None:
    """`size` memories: `records`, and unrelated chunks with random vectors for the rest."""
    filler = unit_vectors(np.random.default_rng(seed), size - len(records))
    for plan in plans(filler, 500, scope=scope):
        store.apply(plan)
    if records:
        store.apply(CommitPlan(scope=scope, chunks=records))


def _records(scope: ScopeRef, texts: list[str], embedder: HashingEmbedder) -> list[MemoryRecord]:
    return [
        MemoryRecord(
            id=rules.chunk_id(text, None),
            scope=scope,
            content_hash=rules.content_hash(text),
            text=text,
            embedding=vector,
        )
        for text, vector in zip(texts, embedder.embed_batch(texts), strict=True)
    ]


def _texts(case: str, rng: random.Random, settings: list[str], formation: int) -> list[str]:
    """The candidates of formation `formation` (-1: the memories they revise)."""
    if case == FRESH:
        return _fresh_texts(rng, len(settings))
    return [_revision_text(s, formation + 1) for s in settings]


def _fresh_texts(rng: random.Random, count: int) -> list[str]:
    """Sentences of 14 random made-up words: nothing like them exists in the scope (with
    the hashing embedder, two such sentences score about 0 +- 0.07)."""
    return [" ".join(_word(rng) for _ in range(14)).capitalize() + "." for _ in range(count)]


def _revision_text(setting: str, version: int) -> str:
    return f"{setting.capitalize()} is v{version}."


def _word(rng: random.Random) -> str:
    return "".join(rng.choice(string.ascii_lowercase) for _ in range(7))


def _current(store: Any, scope: ScopeRef) -> int:
    """The scope's memories valid now."""
    now = datetime.now(UTC)
    count, offset = 0, 0
    while page := store.list_chunks(scope, now, 1000, offset):
        count += len(page)
        offset += len(page)
    return count


def _close(store: Any) -> None:
    close = getattr(store, "close", None)
    if close is not None:
        close()


if __name__ == "__main__":
    main()
