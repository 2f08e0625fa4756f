"""LoCoMo evidence recall through memory:commit and memory:query, beside BM25.

For each conversation of locomo10.json, in a fresh scope of one SQLite store:
every dialogue turn is committed as a chunk through the commit service (text
"Speaker: text", metadata dia_id / speaker / session, validAt = its session's
date), with the MiniLM embedder. Every question of categories 1-4 is then
asked through the query service (topK 10) in each mode (HYBRID, the
default, SEMANTIC, LEXICAL). A question's evidence recall@k is the
fraction of its evidence dia_ids among the top k; "all@k" counts the questions
whose evidence is all there. Two BM25 baselines rank the same turns for the
same questions in the same run: bm25s with English stopwords, without and with
a stemmer (PyStemmer, English).

The merges compared (reciprocal-rank fusion at several weights, the seed
design's interleave at several leads) are computed from the same three ranked
lists the store returns for the hybrid search (semantic, word, typo-tolerant
word; 50 each), so they differ only in the merge. They leave out the named-value
rule (results whose metadata the query names, here the speaker, first) and the
named-period rule (a query naming a month or a year puts the results valid then
first), so "interleave, 3 lead, words >= 0.5 x best" is the shipped HYBRID without
them.

Honest evaluation: the merge and its weights were chosen on the first five
conversations (file order) only; the report prints that tuned half, the last
five as held out, and all ten, each per category.

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
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from _common import machine_line, open_sqlite_store, percentile, table
from jennah.domain import retrieval
from jennah.domain.models import ScopeRef
from jennah.domain.retrieval import RetrievalMode
from jennah.ports.embedder import Embedder
from jennah.services.commands import ChunkInput, CommitCommand, QueryCommand, SemanticQuery
from jennah.services.commit import MAX_COMMIT_ITEMS, commit
from jennah.services.query import query, typo_words

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo10.json"
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
TOP_K = 10
CUTOFFS = (5, 10)
TUNED_CONVERSATIONS = 5  # the first five in file order; the rest are held out
MODES = {
    "memory:query HYBRID (shipped)": RetrievalMode.HYBRID,
    "memory:query SEMANTIC": RetrievalMode.SEMANTIC,
    "memory:query LEXICAL": RetrievalMode.LEXICAL,
}
BM25_SYSTEMS = ("BM25 (bm25s)", "BM25 + stemming (bm25s, PyStemmer)")
# Merges of the three parts: (semantic, word, typo-tolerant weights, rrf k) or interleave lead.
MERGE_DEPTH = 50  # each part's list for the merges compared (the service asks topK)
RRF_VARIANTS: dict[str, tuple[float, float, float, int]] = {
    "rrf sem 1 / word 1 / typo 0.3, k 60": (1.0, 1.0, 0.3, 60),
    "rrf sem 1 / word 1 / typo 0, k 60": (1.0, 1.0, 0.0, 60),
    "rrf sem 1 / word 1.5 / typo 0.3, k 60": (1.0, 1.5, 0.3, 60),
    "rrf sem 1 / word 1 / typo 0.3, k 20": (1.0, 1.0, 0.3, 20),
    "rrf sem 1 / word 2 / typo 0.3, k 10": (1.0, 2.0, 0.3, 10),
}
INTERLEAVE_LEADS = (1, 2, 3, 4, 5)
KEYWORD_SHARES = (0.2, 0.35, 0.5, 0.65)  # the keyword block keeps word matches >= share x best
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

    def merge(self, other: Scores) -> None:
        for key, values in other.recall.items():
            self.recall[key].extend(values)
        for key, flags in other.complete.items():
            self.complete[key].extend(flags)

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
    mode_total_ms: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
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

    def embed_soon(self, text: str) -> Callable[[], list[float]]:
        """A query's embedding, started at once (the service times it)."""
        return self.inner.embed_soon(text)

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
    halves: dict[str, dict[str, Scores]] = {
        "tuned": defaultdict(Scores),
        "held-out": defaultdict(Scores),
    }
    timings = Timings()
    with tempfile.TemporaryDirectory(prefix="jennah-locomo-") as tmp:
        store = open_sqlite_store(Path(tmp))
        for n, conv in enumerate(conversations):
            scores = halves["tuned" if n < TUNED_CONVERSATIONS else "held-out"]
            questions = conv.questions[: args.questions]
            _run_memory(conv, questions, store, embedder, scores, timings)
            _run_bm25(conv, questions, scores, timings)
        close = getattr(store, "close", None)
        if callable(close):
            close()
    _report(args, conversations, halves, timings, embedder.model_name)
    if args.http:
        _http_run(conversations, args)


def _parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="path to locomo10.json")
    parser.add_argument("--conversations", type=int, default=10, help="use the first N")
    parser.add_argument("--questions", type=int, default=10_000, help="at most N per conversation")
    parser.add_argument("--embedder", choices=["minilm", "hashing"], default="minilm")
    parser.add_argument("--threads", type=int, default=2, help="onnxruntime intra-op threads")
    parser.add_argument(
        "--http",
        action="store_true",
        help="also commit every turn and ask every question over HTTP (a jnh serve): "
        "recall@10 and latency per mode, embedding included",
    )
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
    scores: dict[str, Scores],
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
        for name, mode in MODES.items():
            started = time.perf_counter()
            semantic = SemanticQuery(query_text=question.text, top_k=TOP_K, mode=mode)
            result = query(QueryCommand(scope=scope, semantic=semantic), store, embedder, _now)
            timings.mode_total_ms[name].append((time.perf_counter() - started) * 1000)
            if mode is RetrievalMode.HYBRID:
                timings.query_total_ms.append((time.perf_counter() - started) * 1000)
                timings.query_embedding_ms.append(result.embedding_ms)
                timings.query_search_ms.append(result.search_ms)
            hits = result.semantic or []
            scores[name].add(question.category, question.evidence, [_dia(h) for h in hits])
        for name, ranked in _merges(store, scope, embedder, question.text).items():
            scores[name].add(question.category, question.evidence, ranked)


def _dia(hit: Any) -> str:
    return str(hit.record.metadata.get("dia_id", ""))


def _merges(store: Any, scope: ScopeRef, embedder: Embedder, text: str) -> dict[str, list[str]]:
    """Each merge variant's top 10 (dia_ids), from the three parts of one hybrid search."""
    depth, as_of = MERGE_DEPTH, _now()
    words = retrieval.query_words(text)
    semantic = store.search_chunks(scope, embedder.embed(text), depth, [], as_of)
    exact = store.search_words(scope, words, depth, [], as_of) if words else []
    texts = [hit.record.text for hit in exact[:TOP_K]]  # as the service decides
    unmatched = retrieval.fuzzy_words(retrieval.unmatched_words(words, texts))
    typos = typo_words(store, scope, unmatched, [], as_of)
    typo = store.search_words(scope, typos, depth, [], as_of, fuzzy=True) if typos else []
    dia = {hit.record.id: _dia(hit) for hit in [*semantic, *exact, *typo]}
    ids = [[hit.record.id for hit in part] for part in (semantic, exact, typo)]
    out: dict[str, list[str]] = {}
    for name, (ws, ww, wt, k) in RRF_VARIANTS.items():
        fused = retrieval.reciprocal_rank_fusion(list(zip(ids, (ws, ww, wt), strict=True)), k)
        out[name] = [dia[i] for i, _ in fused[:TOP_K]]
    for lead in INTERLEAVE_LEADS:
        merged = retrieval.interleave(ids[0], retrieval.lexical_order(ids[1], ids[2]), lead)
        out[f"interleave, {lead} by meaning lead"] = [dia[i] for i in merged[:TOP_K]]
    top = [(hit.record.id, hit.score) for hit in exact[:TOP_K]]  # what the service gets
    for share in KEYWORD_SHARES:  # with the best typo-tolerant match per typo word
        strong = retrieval.strong_matches(top, share)
        keyword = retrieval.lexical_order(strong, ids[2][: len(unmatched)])
        merged = retrieval.interleave(ids[0], keyword, retrieval.MERGE_LEAD)
        name = f"interleave, 3 lead, words >= {share} x best"
        out[name] = [dia[i] for i in merged[:TOP_K]]
    return out


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
    conv: Conversation, questions: list[Question], scores: dict[str, Scores], timings: Timings
) -> None:
    import bm25s
    import Stemmer

    corpus = [t.chunk_text for t in conv.turns]
    for name, stemmer in zip(BM25_SYSTEMS, (None, Stemmer.Stemmer("english")), strict=True):
        started = time.perf_counter()
        retriever = bm25s.BM25()
        tokens = bm25s.tokenize(corpus, stopwords="en", stemmer=stemmer, show_progress=False)
        retriever.index(tokens, show_progress=False)
        timings.bm25_index_s += time.perf_counter() - started
        k = min(TOP_K, len(corpus))
        for question in questions:
            started = time.perf_counter()
            ranked = _bm25_top(retriever, stemmer, question.text, k)
            timings.bm25_query_ms.append((time.perf_counter() - started) * 1000)
            dia_ids = [conv.turns[i].dia_id for i in ranked]
            scores[name].add(question.category, question.evidence, dia_ids)


def _bm25_top(retriever: Any, stemmer: Any, text: str, k: int) -> list[int]:
    """Indices of the top k turns that share at least one term with the question."""
    import bm25s

    tokens = bm25s.tokenize(
        [text], stopwords="en", stemmer=stemmer, return_ids=False, show_progress=False
    )[0]
    known = [t for t in tokens if t in retriever.vocab_dict]
    if not known:
        return []
    docs, found = retriever.retrieve([known], k=k, show_progress=False)
    return [int(d) for d, s in zip(docs[0], found[0], strict=True) if s > 0]


# --- over HTTP ----------------------------------------------------------------


def _http_run(conversations: list[Conversation], args: argparse.Namespace) -> None:
    """Every turn through memory:commit and every question through memory:query of a
    `jnh serve` (waitress, the chosen embedder): R@10 and client-side latency per mode."""
    import httpx

    from _serve import jnh_serve

    modes = {"HYBRID": "hybrid", "SEMANTIC": "semantic", "LEXICAL": "lexical"}
    scores: dict[str, Scores] = defaultdict(Scores)
    latency: dict[str, list[float]] = defaultdict(list)
    commit_s, turns = 0.0, 0
    with jnh_serve("waitress", args.embedder) as served:
        headers = {"Authorization": f"Bearer {served.token}"}
        with httpx.Client(base_url=served.base, headers=headers, timeout=120) as http:
            for conv in conversations:
                path = f"/v1/scopes/locomo-{conv.sample_id}/memory:"
                started = time.perf_counter()
                for command in _commands(ScopeRef(enterprise_id="-", scope_id="-"), conv.turns):
                    body = command.model_dump(mode="json", include={"chunks"})
                    chunks = [_wire_chunk(c) for c in body["chunks"]]
                    http.post(path + "commit", json={"chunks": chunks}).raise_for_status()
                commit_s += time.perf_counter() - started
                turns += len(conv.turns)
                for question in conv.questions[: args.questions]:
                    for mode, name in modes.items():
                        semantic = {"queryText": question.text, "topK": TOP_K, "mode": mode}
                        started = time.perf_counter()
                        reply = http.post(path + "query", json={"semantic": semantic})
                        latency[name].append((time.perf_counter() - started) * 1000)
                        reply.raise_for_status()
                        results = reply.json()["semantic"]["results"]
                        ranked = [r["metadata"].get("dia_id", "") for r in results]
                        scores[name].add(question.category, question.evidence, ranked)
    cats = list(CATEGORIES)
    rows: list[list[object]] = []
    for name in modes.values():
        s = scores[name]
        recall = [s.mean_recall([c], 10) for c in cats]
        times = [_p(latency[name], pct) for pct in (50, 95, 99)]
        rows.append([name, *recall, s.mean_recall(cats, 10), *times])
    headers_ = ["over HTTP", *[CATEGORIES[c] for c in cats], "R@10"]
    headers_ += ["p50 ms", "p95 ms", "p99 ms"]
    print(f"\nover HTTP (jnh serve, waitress, {args.embedder}): {turns:,} turns committed in")
    print(f"{commit_s:.1f} s ({turns / commit_s:,.0f} turns/s); latency measured by the client")
    print(table(headers_, rows))


def _wire_chunk(chunk: dict[str, Any]) -> dict[str, Any]:
    out = {"text": chunk["text"], "metadata": chunk["metadata"]}
    if chunk.get("valid_at"):
        out["validAt"] = chunk["valid_at"].replace("+00:00", "Z")
    return out


# --- the report -------------------------------------------------------------


def _report(
    args: argparse.Namespace,
    conversations: list[Conversation],
    halves: dict[str, dict[str, Scores]],
    timings: Timings,
    model_name: str,
) -> None:
    asked = sum(len(c.questions[: args.questions]) for c in conversations)
    skipped = sum(c.skipped for c in conversations)
    print(f"LoCoMo evidence recall ({machine_line()})")
    print(
        f"{len(conversations)} conversations, {timings.turns:,} turns committed, "
        f"{asked:,} questions of categories 1-4 asked ({skipped} skipped: no usable evidence)"
    )
    print(f"memory:query on SQLite with {model_name}, topK {TOP_K}; R@10 per category\n")
    combined: dict[str, Scores] = defaultdict(Scores)
    for half in halves.values():
        for name, scores in half.items():
            combined[name].merge(scores)
    first = [c.sample_id for c in conversations[:TUNED_CONVERSATIONS]]
    rest = [c.sample_id for c in conversations[TUNED_CONVERSATIONS:]]
    for title, scores in (
        (f"tuned half: conversations 1-{len(first)} ({', '.join(first)})", halves["tuned"]),
        (f"held-out half: conversations 6-10 ({', '.join(rest)})", halves["held-out"]),
        ("all conversations", combined),
    ):
        if not any(s.recall for s in scores.values()):
            continue
        print(title)
        print(_recall_table(scores))
        print()
    _report_timings(timings)


def _recall_table(scores: dict[str, Scores]) -> str:
    names = [*MODES, *BM25_SYSTEMS]
    names += [n for n in scores if n not in names]
    headers = ["system", "questions"]
    headers += [f"{c} {name}" for c, name in CATEGORIES.items()]
    headers += ["overall R@10", "overall R@5", "all@10"]
    cats = list(CATEGORIES)
    rows: list[list[object]] = []
    for name in names:
        s = scores[name]
        row: list[object] = [name, len([x for c in cats for x in s.recall[(c, 10)]])]
        row += [s.mean_recall([c], 10) if s.recall[(c, 10)] else "-" for c in cats]
        row += [s.mean_recall(cats, 10), s.mean_recall(cats, 5), s.all_found(cats, 10)]
        rows.append(row)
    return table(headers, rows)


def _report_timings(timings: Timings) -> None:
    commit_rate = timings.turns / timings.commit_s if timings.commit_s else 0.0
    rows: list[list[object]] = [
        ["commit all turns (s)", timings.commit_s, f"{commit_rate:,.0f} turns/s"],
        ["  of which embedding (s)", timings.embed_s, "turn texts"],
        [
            "hybrid query total p50 / p95 (ms)",
            _p(timings.query_total_ms, 50),
            f"p95 {_p(timings.query_total_ms, 95):.2f}, p99 {_p(timings.query_total_ms, 99):.2f}",
        ],
        *[
            [f"  {name} p50 (ms)", _p(ms, 50), f"p95 {_p(ms, 95):.2f}"]
            for name, ms in timings.mode_total_ms.items()
        ],
        [
            "  query embedding p50, the part waited for (ms)",
            _p(timings.query_embedding_ms, 50),
            f"p99 {_p(timings.query_embedding_ms, 99):.2f}",
        ],
        [
            "  store search p50, words during the embedding (ms)",
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
