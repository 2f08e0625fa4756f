"""LoCoMo evidence recall through memory:commit and memory:query, beside BM25.

For each conversation of locomo10.json, in a fresh scope of one SQLite store:
every dialogue turn is committed as a chunk through the commit service (text
"Speaker: text", metadata dia_id / speaker / session, validAt = its session's
date), with the MiniLM embedder. Every question of categories 1-4 is then
asked through the query service (topK 10). A question's evidence recall@k is
the fraction of its evidence dia_ids among the top k; "all@k" counts the
questions whose evidence is all there. A BM25 baseline (bm25s, English
stopwords, no stemmer) ranks the same turns for the same questions in the
same run.

Evidence ids are normalized ("D8:6; D9:17" -> two ids, "D:11:26" -> "D11:26",
"D30:05" -> "D30:5"); ids naming no turn of the conversation are dropped, and
a question left without evidence is skipped (counted in the output).
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import tempfile
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from _common import machine_line, open_sqlite_store, percentile, table
from jennah.domain.models import ScopeRef
from jennah.ports.embedder import Embedder
from jennah.services.commands import ChunkInput, CommitCommand, QueryCommand, SemanticQuery
from jennah.services.commit import MAX_COMMIT_ITEMS, commit
from jennah.services.query import query

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo10.json"
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
TOP_K = 10
CUTOFFS = (5, 10)
_SESSION_KEY = re.compile(r"^session_(\d+)$")
_DIA_ID = re.compile(r"D:?(\d+):0*(\d+)")


@dataclass
class Turn:
    dia_id: str
    speaker: str
    session: int
    text: str
    valid_at: datetime

    @property
    def chunk_text(self) -> str:
        return f"{self.speaker}: {self.text}"


@dataclass
class Question:
    text: str
    category: int
    evidence: set[str]


@dataclass
class Conversation:
    sample_id: str
    turns: list[Turn]
    questions: list[Question]
    skipped: int


@dataclass
class Scores:
    """Per-question recall@k and all-found flags, by category."""

    recall: dict[tuple[int, int], list[float]] = field(default_factory=lambda: defaultdict(list))
    complete: dict[tuple[int, int], list[bool]] = field(default_factory=lambda: defaultdict(list))

    def add(self, category: int, evidence: set[str], ranked: Sequence[str]) -> None:
        for k in CUTOFFS:
            found = evidence & set(ranked[:k])
            self.recall[(category, k)].append(len(found) / len(evidence))
            self.complete[(category, k)].append(found == evidence)

    def mean_recall(self, categories: Sequence[int], k: int) -> float:
        return _mean([x for c in categories for x in self.recall[(c, k)]])

    def all_found(self, categories: Sequence[int], k: int) -> float:
        return _mean([float(x) for c in categories for x in self.complete[(c, k)]])


@dataclass
class Timings:
    commit_s: float = 0.0
    embed_s: float = 0.0
    turns: int = 0
    query_embedding_ms: list[float] = field(default_factory=list)
    query_search_ms: list[float] = field(default_factory=list)
    query_total_ms: list[float] = field(default_factory=list)
    bm25_index_s: float = 0.0
    bm25_query_ms: list[float] = field(default_factory=list)


class TimedEmbedder:
    """Wraps an embedder to add up the time spent embedding."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.dimensions = inner.dimensions
        self.model_name = inner.model_name
        self.seconds = 0.0

    def embed(self, text: str) -> list[float]:
        return self.embed_batch([text])[0]

    def embed_batch(self, texts: Sequence[str]) -> list[list[float]]:
        started = time.perf_counter()
        vectors = self.inner.embed_batch(texts)
        self.seconds += time.perf_counter() - started
        return vectors


def main() -> None:
    args = _parse_args()
    if not args.data.is_file():
        raise SystemExit(f"no LoCoMo data at {args.data}; pass --data PATH to locomo10.json")
    conversations = load(args.data)[: args.conversations]
    embedder = TimedEmbedder(_make_embedder(args.embedder, args.threads))
    memory, bm25, timings = Scores(), Scores(), Timings()
    with tempfile.TemporaryDirectory(prefix="jennah-locomo-") as tmp:
        store = open_sqlite_store(Path(tmp))
        for conv in conversations:
            questions = conv.questions[: args.questions]
            _run_memory(conv, questions, store, embedder, memory, timings)
            _run_bm25(conv, questions, bm25, timings)
        close = getattr(store, "close", None)
        if callable(close):
            close()
    _report(args, conversations, memory, bm25, timings, embedder.model_name)


def _parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="path to locomo10.json")
    parser.add_argument("--conversations", type=int, default=10, help="use the first N")
    parser.add_argument("--questions", type=int, default=10_000, help="at most N per conversation")
    parser.add_argument("--embedder", choices=["minilm", "hashing"], default="minilm")
    parser.add_argument("--threads", type=int, default=2, help="onnxruntime intra-op threads")
    return parser.parse_args()


def _make_embedder(name: str, threads: int) -> Embedder:
    if name == "hashing":
        from jennah.adapters.embedding.hashing import HashingEmbedder

        return HashingEmbedder()
    from jennah.adapters.embedding.minilm import MiniLMEmbedder

    return MiniLMEmbedder(threads=threads)


# --- the data ---------------------------------------------------------------


def load(path: Path) -> list[Conversation]:
    raw = json.loads(path.read_text(encoding="utf-8"))
    return [_conversation(item) for item in raw]


def parse_session_date(value: str) -> datetime:
    """'1:56 pm on 8 May, 2023' -> 2023-05-08T13:56:00Z (the data names no zone)."""
    parsed = datetime.strptime(value.strip(), "%I:%M %p on %d %B, %Y")
    return parsed.replace(tzinfo=UTC)


def normalize_evidence(values: Sequence[str]) -> set[str]:
    """Split and repair the dataset's evidence ids ("D8:6; D9:17", "D:11:26", "D30:05")."""
    return {f"D{m.group(1)}:{m.group(2)}" for v in values for m in _DIA_ID.finditer(v)}


def _conversation(item: dict[str, Any]) -> Conversation:
    conv = item["conversation"]
    turns: list[Turn] = []
    for key, value in conv.items():
        match = _SESSION_KEY.match(key)
        if match is None or not isinstance(value, list):
            continue
        session = int(match.group(1))
        when = parse_session_date(conv[f"{key}_date_time"])
        turns.extend(Turn(t["dia_id"], t["speaker"], session, t["text"], when) for t in value)
    known = {t.dia_id for t in turns}
    questions: list[Question] = []
    skipped = 0
    for qa in item["qa"]:
        if qa.get("category") not in CATEGORIES:
            continue
        evidence = normalize_evidence(qa.get("evidence", [])) & known
        if not evidence:
            skipped += 1
            continue
        questions.append(Question(str(qa["question"]), int(qa["category"]), evidence))
    return Conversation(str(item["sample_id"]), turns, questions, skipped)


# --- the two retrievers -----------------------------------------------------


def _run_memory(
    conv: Conversation,
    questions: list[Question],
    store: Any,
    embedder: TimedEmbedder,
    scores: Scores,
    timings: Timings,
) -> None:
    scope = ScopeRef(enterprise_id="locomo", scope_id=conv.sample_id)
    started, embedding_before = time.perf_counter(), embedder.seconds
    for command in _commands(scope, conv.turns):
        commit(command, store, embedder, _now)
    timings.commit_s += time.perf_counter() - started
    timings.embed_s += embedder.seconds - embedding_before
    timings.turns += len(conv.turns)
    for question in questions:
        started = time.perf_counter()
        semantic = SemanticQuery(query_text=question.text, top_k=TOP_K)
        result = query(QueryCommand(scope=scope, semantic=semantic), store, embedder, _now)
        timings.query_total_ms.append((time.perf_counter() - started) * 1000)
        timings.query_embedding_ms.append(result.embedding_ms)
        timings.query_search_ms.append(result.search_ms)
        ranked = [hit.record.metadata.get("dia_id", "") for hit in result.semantic or []]
        scores.add(question.category, question.evidence, ranked)


def _now() -> datetime:
    return datetime.now(UTC)


def _commands(scope: ScopeRef, turns: list[Turn]) -> list[CommitCommand]:
    """One commit per session (split at the commit bound)."""
    by_session: dict[int, list[Turn]] = defaultdict(list)
    for turn in turns:
        by_session[turn.session].append(turn)
    commands = []
    for session in sorted(by_session):
        items = by_session[session]
        for start in range(0, len(items), MAX_COMMIT_ITEMS):
            chunks = [
                ChunkInput(
                    text=t.chunk_text,
                    metadata={"dia_id": t.dia_id, "speaker": t.speaker, "session": str(session)},
                    valid_at=t.valid_at,
                )
                for t in items[start : start + MAX_COMMIT_ITEMS]
            ]
            commands.append(CommitCommand(scope=scope, chunks=chunks))
    return commands


def _run_bm25(
    conv: Conversation, questions: list[Question], scores: Scores, timings: Timings
) -> None:
    import bm25s

    started = time.perf_counter()
    corpus = [t.chunk_text for t in conv.turns]
    retriever = bm25s.BM25()
    tokens = bm25s.tokenize(corpus, stopwords="en", show_progress=False)
    retriever.index(tokens, show_progress=False)
    timings.bm25_index_s += time.perf_counter() - started
    k = min(TOP_K, len(corpus))
    for question in questions:
        started = time.perf_counter()
        ranked = _bm25_top(retriever, question.text, k)
        timings.bm25_query_ms.append((time.perf_counter() - started) * 1000)
        scores.add(question.category, question.evidence, [conv.turns[i].dia_id for i in ranked])


def _bm25_top(retriever: Any, text: str, k: int) -> list[int]:
    """Indices of the top k turns that share at least one term with the question."""
    import bm25s

    tokens = bm25s.tokenize([text], stopwords="en", return_ids=False, show_progress=False)[0]
    known = [t for t in tokens if t in retriever.vocab_dict]
    if not known:
        return []
    docs, found = retriever.retrieve([known], k=k, show_progress=False)
    return [int(d) for d, s in zip(docs[0], found[0], strict=True) if s > 0]


# --- the report -------------------------------------------------------------


def _report(
    args: argparse.Namespace,
    conversations: list[Conversation],
    memory: Scores,
    bm25: Scores,
    timings: Timings,
    model_name: str,
) -> None:
    asked = sum(len(c.questions[: args.questions]) for c in conversations)
    skipped = sum(c.skipped for c in conversations)
    print(f"LoCoMo evidence recall ({machine_line()})")
    print(
        f"{len(conversations)} conversations, {timings.turns:,} turns committed, "
        f"{asked:,} questions of categories 1-4 asked ({skipped} skipped: no usable evidence)\n"
    )
    rows: list[list[object]] = []
    groups: list[tuple[str, list[int]]] = [(f"{c} {name}", [c]) for c, name in CATEGORIES.items()]
    groups.append(("overall 1-4", list(CATEGORIES)))
    for label, cats in groups:
        count = len(memory.recall[(cats[0], 5)]) if len(cats) == 1 else asked
        row: list[object] = [label, count]
        if count == 0:
            rows.append(row + ["-"] * 8)
            continue
        for scores in (memory, bm25):
            row.extend(
                [
                    scores.mean_recall(cats, 5),
                    scores.mean_recall(cats, 10),
                    scores.all_found(cats, 5),
                    scores.all_found(cats, 10),
                ]
            )
        rows.append(row)
    headers = [
        "category",
        "questions",
        "memory R@5",
        "memory R@10",
        "memory all@5",
        "memory all@10",
        "BM25 R@5",
        "BM25 R@10",
        "BM25 all@5",
        "BM25 all@10",
    ]
    print(f"memory = memory:commit + memory:query on SQLite with {model_name}; BM25 = bm25s")
    print(table(headers, rows))
    print()
    _report_timings(timings)


def _report_timings(timings: Timings) -> None:
    commit_rate = timings.turns / timings.commit_s if timings.commit_s else 0.0
    rows: list[list[object]] = [
        ["commit all turns (s)", timings.commit_s, f"{commit_rate:,.0f} turns/s"],
        ["  of which embedding (s)", timings.embed_s, "turn texts"],
        [
            "query total p50 / p99 (ms)",
            _p(timings.query_total_ms, 50),
            f"p99 {_p(timings.query_total_ms, 99):.2f}",
        ],
        [
            "  query embedding p50 (ms)",
            _p(timings.query_embedding_ms, 50),
            f"p99 {_p(timings.query_embedding_ms, 99):.2f}",
        ],
        [
            "  store search p50 (ms)",
            _p(timings.query_search_ms, 50),
            f"p99 {_p(timings.query_search_ms, 99):.2f}",
        ],
        ["BM25 index all turns (s)", timings.bm25_index_s, ""],
        [
            "BM25 query p50 (ms)",
            _p(timings.bm25_query_ms, 50),
            f"p99 {_p(timings.bm25_query_ms, 99):.2f}",
        ],
    ]
    print(table(["timing", "value", "note"], rows))


def _p(samples: list[float], pct: float) -> float:
    return percentile(samples, pct) if samples else 0.0


def _mean(values: list[float]) -> float:
    return statistics.fmean(values) if values else 0.0


if __name__ == "__main__":
    main()
