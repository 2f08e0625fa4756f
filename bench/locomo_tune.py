"""Compare merges and expansions of memory:query's hybrid search offline, from the
lists bench/locomo_lists.py collected: evidence recall@10 on the tuned half (the
first five conversations, the only ones choices are made on) and, only reported,
on the held-out half, overall and per category.

    .venv/bin/python bench/locomo_lists.py --out /tmp/locomo-lists.pickle  # ~5 min
    .venv/bin/python bench/locomo_tune.py /tmp/locomo-lists.pickle          # ~1-2 min

A merge sees what the service sees: the semantic, word and typo-tolerant lists with
their store scores (50 deep), every chunk's embedding, session and valid time.
"""

from __future__ import annotations

import argparse
import pickle
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from jennah.domain import retrieval
from locomo import CATEGORIES, DEFAULT_DATA, load

Conv = dict[str, Any]
Question = dict[str, Any]
Merge = Callable[[Conv, Question], list[str]]


# --- the shipped merge and the named-period rule ------------------------------------


def shipped(pool: int = 10) -> Merge:
    """The service's merge (lead 3, strong word matches, best typo match per word),
    its meaning list `pool` deep; the first `pool` merged ids."""

    def merge(conv: Conv, q: Question) -> list[str]:
        semantic = [i for i, _ in q["sem"][:pool]]
        typo = [i for i, _ in q["typo"][: len(q["unmatched"])]]
        keyword = retrieval.lexical_order(retrieval.strong_matches(q["exact"][:10]), typo)
        return retrieval.interleave(semantic, keyword)[:pool]

    return merge


def dated(base: Merge, with_day: bool = False) -> Merge:
    """The named-period rule over `base`: results valid in the period first."""

    def merge(conv: Conv, q: Question) -> list[str]:
        ranked = base(conv, q)
        period = retrieval.named_period(q["text"])
        if period is None:
            return ranked
        at = {i: conv["valid_at"][i] for i in ranked}
        if with_day and (day := _day(q["text"])) is not None:
            inside = [i for i in ranked if period.holds(at[i]) and at[i].day == day]
            return list(dict.fromkeys([*inside, *ranked]))
        return retrieval.promote_within(ranked, at, period)

    return merge


def _day(text: str) -> int | None:
    import re

    match = re.search(r"\b(\d{1,2})(?:st|nd|rd|th)?\s+[A-Z][a-z]+,?\s+\d{4}", text)
    return int(match.group(1)) if match else None


# --- alternatives tried --------------------------------------------------------------


def fused(alpha: float, depth: int, exact_cosine: bool = False) -> Merge:
    """Score-level fusion: alpha x min-max-scaled cosine + (1 - alpha) x word score /
    best word score, over the union of both lists `depth` deep. A word match outside
    the meaning list gets its true cosine with `exact_cosine`, else the list's floor."""

    def merge(conv: Conv, q: Question) -> list[str]:
        words = dict(q["exact"][:depth])
        ids = {i for i, _ in q["sem"][:depth]} | set(words)
        cos = _cosines(conv, q["vector"]) if exact_cosine else dict(q["sem"][:depth])
        floor = min(s for _, s in q["sem"][:depth])
        sims = {i: cos.get(i, floor) for i in ids}
        lo, hi = min(sims.values()), max(sims.values())
        best = max(words.values(), default=1.0) or 1.0
        score = {
            i: alpha * (sims[i] - lo) / (hi - lo or 1.0) + (1 - alpha) * words.get(i, 0.0) / best
            for i in ids
        }
        return sorted(ids, key=lambda i: (-score[i], i))

    return merge


def rocchio(beta: float, feedback: int) -> Merge:
    """Pseudo-relevance feedback by meaning: the query vector plus beta x the mean
    embedding of the shipped merge's top `feedback`, searched again, merged again."""
    base = shipped(50)

    def merge(conv: Conv, q: Question) -> list[str]:
        top = base(conv, q)[:feedback]
        vector = np.asarray(q["vector"], dtype=np.float32)
        vector = vector + beta * np.mean([conv["embedding"][i] for i in top], axis=0)
        vector /= np.linalg.norm(vector)
        sims = _cosines(conv, vector)
        semantic = sorted(sims.items(), key=lambda kv: (-kv[1], kv[0]))[:50]
        return base(conv, {**q, "sem": semantic})

    return merge


def neighbours(seeds: int, keep: int) -> Merge:
    """Neighbour-turn expansion: the shipped top `keep`, then the turns just before and
    after its top `seeds` (by position in the conversation), then the rest."""
    base = shipped(50)

    def merge(conv: Conv, q: Question) -> list[str]:
        ranked = base(conv, q)
        extra = [
            conv["by_position"][p]
            for i in ranked[:seeds]
            for p in (conv["position"][i] - 1, conv["position"][i] + 1)
            if p in conv["by_position"]
        ]
        return list(dict.fromkeys([*ranked[:keep], *extra, *ranked[keep:]]))

    return merge


def same_session(seeds: int, keep: int) -> Merge:
    """Same-session expansion: the shipped top `keep`, then the other candidates of
    the sessions of its top `seeds`, then the rest."""
    base = shipped(50)

    def merge(conv: Conv, q: Question) -> list[str]:
        ranked = base(conv, q)
        sessions = {conv["session"][i] for i in ranked[:seeds]}
        extra = [i for i in ranked[keep:] if conv["session"][i] in sessions]
        return list(dict.fromkeys([*ranked[:keep], *extra, *ranked[keep:]]))

    return merge


def mmr(lam: float, pool: int) -> Merge:
    """Maximal marginal relevance over the shipped merge's top `pool`: relevance from
    the merged rank, redundancy the highest cosine to a result already chosen."""
    base = shipped(pool)

    def merge(conv: Conv, q: Question) -> list[str]:
        ranked = base(conv, q)
        relevance = {i: 1.0 - r / len(ranked) for r, i in enumerate(ranked)}
        chosen: list[str] = []
        rest = list(ranked)
        while rest and len(chosen) < 10:

            def value(i: str) -> float:
                vector = conv["embedding"][i]
                redundancy = max((float(vector @ conv["embedding"][j]) for j in chosen), default=0)
                return lam * relevance[i] - (1 - lam) * redundancy

            best = max(rest, key=value)
            chosen.append(best)
            rest.remove(best)
        return chosen

    return merge


def speaker_first(pool: int) -> Merge:
    """Not generic (it reads the "Name: " prefix the bench writes): when the question
    names exactly one speaker, that speaker's turns among the shipped top `pool` first."""
    base = shipped(pool)

    def merge(conv: Conv, q: Question) -> list[str]:
        ranked = base(conv, q)
        named = [w for w in q["words"] if w in conv["speakers"]]
        if len(named) != 1:
            return ranked
        theirs = [i for i in ranked if conv["text"][i].lower().startswith(named[0] + ":")]
        return list(dict.fromkeys([*theirs, *ranked]))

    return merge


def _cosines(conv: Conv, vector: Sequence[float]) -> dict[str, float]:
    sims = conv["matrix"] @ np.asarray(vector, dtype=np.float32)
    return dict(zip(conv["ids"], sims.tolist(), strict=True))


# --- scoring ---------------------------------------------------------------------------

VARIANTS: dict[str, Merge] = {
    "shipped before (lead 3, words >= 0.5 x best)": shipped(),
    "+ named period, pool 20": dated(shipped(20)),
    "+ named period, pool 30 (shipped now)": dated(shipped(30)),
    "+ named period, pool 50": dated(shipped(50)),
    "+ named period with its day, pool 30": dated(shipped(30), with_day=True),
    "score fusion a 0.5, 10 deep": fused(0.5, 10),
    "score fusion a 0.5, 20 deep": fused(0.5, 20),
    "score fusion a 0.6, 10 deep": fused(0.6, 10),
    "score fusion a 0.5, 20 deep, exact cosines": fused(0.5, 20, exact_cosine=True),
    "score fusion a 0.5, 20 deep + named period": dated(fused(0.5, 20)),
    "rocchio feedback b 0.6, top 3": rocchio(0.6, 3),
    "neighbour turns of top 1 after top 5": neighbours(1, 5),
    "neighbour turns of top 3 after top 7": neighbours(3, 7),
    "same session as top 1 after top 5": same_session(1, 5),
    "same session as top 3 after top 5": same_session(3, 5),
    "mmr lambda 0.7, pool 20": mmr(0.7, 20),
    "mmr lambda 0.85, pool 20": mmr(0.85, 20),
    "speaker's turns first, pool 20 (not generic)": speaker_first(20),
}


def evaluate(convs: list[Conv], merge: Merge) -> list[float]:
    """Mean recall@10 over the questions, then per category."""
    per: dict[int, list[float]] = defaultdict(list)
    for conv in convs:
        for q in conv["questions"]:
            top = {conv["dia"][i] for i in merge(conv, q)[:10]}
            per[q["category"]].append(len(top & q["evidence"]) / len(q["evidence"]))
    every = [x for values in per.values() for x in values]
    return [_mean(every), *[_mean(per[c]) for c in CATEGORIES]]


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def prepare(lists: list[Conv], data: Path) -> list[Conv]:
    """Add what the merges read: dia ids, sessions, positions, valid times, texts,
    speakers, embeddings."""
    for conv, source in zip(lists, load(data), strict=True):
        chunks = conv["chunks"]
        dia = {i: c[0] for i, c in chunks.items()}
        order = {t.dia_id: n for n, t in enumerate(source.turns)}
        when = {t.dia_id: t.valid_at for t in source.turns}
        conv["dia"] = dia
        conv["session"] = {i: c[1] for i, c in chunks.items()}
        conv["text"] = {i: c[2] for i, c in chunks.items()}
        conv["position"] = {i: order[d] for i, d in dia.items()}
        conv["by_position"] = {p: i for i, p in conv["position"].items()}
        conv["valid_at"] = {i: when[d] for i, d in dia.items()}
        conv["speakers"] = {t.speaker.lower() for t in source.turns}
        conv["ids"] = sorted(chunks)
        conv["embedding"] = {i: np.asarray(c[3], dtype=np.float32) for i, c in chunks.items()}
        conv["matrix"] = np.array([conv["embedding"][i] for i in conv["ids"]])
    return lists


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("lists", type=Path)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    args = parser.parse_args()
    convs = prepare(pickle.loads(args.lists.read_bytes()), args.data)
    cats = " ".join(f"{name[:6]:>6s}" for name in CATEGORIES.values())
    print(f"{'R@10':46s} | tuned    all {cats} | held out all {cats}")
    for name, merge in VARIANTS.items():
        tuned, held = evaluate(convs[:5], merge), evaluate(convs[5:], merge)
        cells = " ".join(f"{x:6.3f}" for x in tuned)
        held_cells = " ".join(f"{x:6.3f}" for x in held)
        print(f"{name:46s} | {cells} | {held_cells}", flush=True)


if __name__ == "__main__":
    main()
