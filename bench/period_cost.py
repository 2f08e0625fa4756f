"""What the named-period rule of memory:query's hybrid search costs in process.

One LoCoMo conversation committed to a SQLite store (MiniLM); every question asked
in HYBRID mode with the rule on and off (named_period answering None), alternating;
the service's search time (the embedding excluded) compared on the questions that
name a month or a year, and the time to read the period from every question.

    .venv/bin/python bench/period_cost.py --data ../shared/data/locomo10.json
"""

from __future__ import annotations

import argparse
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import jennah.services.query as query_service
from _common import open_sqlite_store, percentile
from jennah.domain.models import ScopeRef
from jennah.domain.retrieval import named_period
from jennah.services.commands import QueryCommand, SemanticQuery
from jennah.services.commit import commit
from locomo import DEFAULT_DATA, TimedEmbedder, _commands, _make_embedder, load

ROUNDS = 5
PARSE_ROUNDS = 200


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--conversation", type=int, default=0, help="index in file order")
    args = parser.parse_args()
    conv = load(args.data)[args.conversation]
    embedder = TimedEmbedder(_make_embedder("minilm", 2))
    scope = ScopeRef(enterprise_id="locomo", scope_id=conv.sample_id)
    texts = [q.text for q in conv.questions]
    dated = [t for t in texts if named_period(t) is not None]
    started = time.perf_counter()
    for _ in range(PARSE_ROUNDS):
        for text in texts:
            named_period(text)
    parse_us = (time.perf_counter() - started) / (PARSE_ROUNDS * len(texts)) * 1e6
    with tempfile.TemporaryDirectory(prefix="jennah-period-") as tmp:
        store = open_sqlite_store(Path(tmp))
        for command in _commands(scope, conv.turns):
            commit(command, store, embedder, lambda: datetime.now(UTC))
        on: list[float] = []
        off: list[float] = []
        rule = query_service.named_period
        for _ in range(ROUNDS):
            for text in dated:
                for samples, reader in ((on, rule), (off, _no_period)):
                    query_service.named_period = reader  # type: ignore[assignment]
                    semantic = SemanticQuery(query_text=text, top_k=10)
                    result = query_service.query(
                        QueryCommand(scope=scope, semantic=semantic),
                        store,
                        embedder,
                        lambda: datetime.now(UTC),
                    )
                    samples.append(result.search_ms)
        query_service.named_period = rule
    print(f"{conv.sample_id}: {len(conv.turns)} turns, {len(dated)} of {len(texts)} questions")
    print(f"name a period; reading the period: {parse_us:.1f} us per question")
    for name, samples in (("rule on", on), ("rule off", off)):
        p50, p95 = percentile(samples, 50), percentile(samples, 95)
        print(f"  hybrid search (no embedding), {name}: p50 {p50:.2f} ms, p95 {p95:.2f} ms")


def _no_period(text: str) -> None:
    return None


if __name__ == "__main__":
    main()
