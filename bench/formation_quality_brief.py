"""The brief's quality targets (issue 16, design §13), scored per case (no server, no model).

After a case's formation the runner reads the workspace's brief (GET …/memory/brief),
its active claims (memory:inspect) and, per labelled fact, the top 5 of a hybrid
memory:query; this module holds them against the case's labels:

- reach: a labelled fact (required, decision new, revised or known: the ones the
  workspace should hold) is in the brief when a claim line of the brief references
  (memory://{scope}/{id}) an active claim that mentions all its terms (the recall
  matching of formation_quality_score: `mentions_all`); it is reached when that holds,
  or when such a claim is among the query's top 5. The query is `query_text(fact)`:
  the fact's terms (their first alternative, a date spelled "14 October 2025"), the
  words "user"/"the user" and stop words left out. The set has no question per fact,
  so this is the labelled fact's own key words: a lenient query (see bench/README.md);
- hard constraints: labelled facts of type constraint or directive, or with a term
  starting "allerg": each must be in the brief (by reference, as above);
- duplicate clusters: active claims are linked when their normalized texts are equal
  or their embeddings' cosine is at least DUPLICATE_COSINE, clustered transitively;
  a cluster of two or more claims is a duplicate cluster; the rate is clusters over
  active claims;
- brief tokens: the brief's tokenCount, against BRIEF_TOKEN_LIMIT.

Topic-index lines name a group, not a claim, so their references do not count as the
fact being in the brief; only claim lines (`- (tags) "text" memory://…`) do.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from formation_quality_cases import Case, ExpectedFact, mentions_all, normalize

BRIEF_TOKEN_LIMIT = 2000
TOP_K = 5
DUPLICATE_COSINE = 0.85
COSINE_SWEEP = (0.8, 0.85, 0.9, 0.95)  # reported beside, to show how much hangs on it
REACHABLE = ("new", "revised", "known")
HARD_TYPES = ("constraint", "directive")

_CLAIM_LINE = re.compile(r'^- (?:\([a-z_]+\) )*".*" memory://(?P<scope>[^/\s]+)/(?P<id>\S+)$')
_STOP_WORDS = (
    "a an the and or of to in on at for with by from is are was were be been has have had "
    "do does did it its this that these those as into about any some their his her "
    "my our your they them he she we i you user users"
)
_STOP = frozenset(_STOP_WORDS.split())


def brief_claim_ids(brief: str) -> set[str]:
    """The memory ids referenced by the brief's claim lines (topic lines aside)."""
    return {m["id"] for line in brief.splitlines() if (m := _CLAIM_LINE.match(line.strip()))}


def query_text(fact: ExpectedFact) -> str:
    """A query from a labelled fact's terms: the first alternative of each, dates
    written out, stop words and the subject ("user") dropped, words kept once."""
    words: list[str] = []
    for term in fact.terms:
        first = term if isinstance(term, str) else term[0]
        if first.startswith("date:"):
            day = date.fromisoformat(first.removeprefix("date:"))
            first = f"{day.day} {day.strftime('%B')} {day.year}"
        for word in first.split():
            if word.lower() not in _STOP and word not in words:
                words.append(word)
    return " ".join(words)


def is_hard(fact: ExpectedFact) -> bool:
    """A hard constraint: a constraint or directive (a rule), or an allergy."""
    if fact.type in HARD_TYPES:
        return True
    alternatives = [t for term in fact.terms for t in ([term] if isinstance(term, str) else term)]
    return any(normalize(t).startswith("allerg") for t in alternatives)


def active(chunks: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Chunks whose status is active (absent: active, as memory:inspect defaults)."""
    return [c for c in chunks if c.get("status", "active") == "active"]


@dataclass
class FactReach:
    terms: list[Any]
    query: str
    hard: bool
    held: bool  # some active claim mentions it
    in_brief: bool
    in_top_k: bool

    @property
    def reached(self) -> bool:
        return self.in_brief or self.in_top_k


@dataclass
class BriefScore:
    case_id: str
    split: str
    tokens: int | None = None  # None: no brief could be read
    active_claims: int = 0
    duplicate_clusters: list[list[str]] = field(default_factory=list)
    clusters_at: dict[str, int] = field(default_factory=dict)  # cosine -> cluster count
    facts: list[FactReach] = field(default_factory=list)
    error: str | None = None


def score_brief(
    case: Case,
    brief: str,
    tokens: int,
    chunks: Sequence[dict[str, Any]],
    hits: dict[str, list[str]],
    vectors: Sequence[Sequence[float]] | None,
) -> BriefScore:
    """One case: `chunks` as memory:inspect answers them, `hits` the top-K ids per
    query text, `vectors` one embedding per active chunk (None: text equality only)."""
    claims = active(chunks)
    in_brief_ids = brief_claim_ids(brief)
    score = BriefScore(case.id, case.split, tokens, len(claims))
    for fact in case.facts:
        if fact.optional or fact.decision not in REACHABLE:
            continue
        holders = {c["id"] for c in claims if mentions_all(c["text"], fact.terms)}
        query = query_text(fact)
        score.facts.append(
            FactReach(
                terms=list(fact.terms),
                query=query,
                hard=is_hard(fact),
                held=bool(holders),
                in_brief=bool(holders & in_brief_ids),
                in_top_k=bool(holders & set(hits.get(query, [])[:TOP_K])),
            )
        )
    texts = [c["text"] for c in claims]
    score.duplicate_clusters = duplicate_clusters(texts, vectors)
    if vectors is not None:
        score.clusters_at = {
            f"{t:.2f}": len(duplicate_clusters(texts, vectors, t)) for t in COSINE_SWEEP
        }
    return score


def duplicate_clusters(
    texts: Sequence[str],
    vectors: Sequence[Sequence[float]] | None,
    threshold: float = DUPLICATE_COSINE,
) -> list[list[str]]:
    """Clusters (two or more texts, transitively linked) of texts a person would call the
    same: equal once normalized (case, punctuation, whitespace), or cosine >= threshold."""
    parent = list(range(len(texts)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    keys = [" ".join(re.sub(r"[^\w\s]", " ", normalize(t)).split()) for t in texts]
    for i in range(len(texts)):
        for j in range(i + 1, len(texts)):
            same = keys[i] == keys[j] or (
                vectors is not None and _cosine(vectors[i], vectors[j]) >= threshold
            )
            if same:
                parent[root(j)] = root(i)
    groups: dict[int, list[str]] = {}
    for i, text in enumerate(texts):
        groups.setdefault(root(i), []).append(text)
    return [g for g in groups.values() if len(g) > 1]


def _cosine(a: Sequence[float], b: Sequence[float]) -> float:
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return sum(x * y for x, y in zip(a, b, strict=True)) / norm if norm else 0.0


def brief_report(scores: Sequence[BriefScore]) -> dict[str, Any]:
    """The four targets over a group of cases."""
    read = [s for s in scores if s.error is None]
    facts = [f for s in read for f in s.facts]
    hard = [f for f in facts if f.hard]
    claims = sum(s.active_claims for s in read)
    clusters = sum(len(s.duplicate_clusters) for s in read)
    tokens = [s.tokens for s in read if s.tokens is not None]
    return {
        "cases": len(scores),
        "failed": len(scores) - len(read),
        "factsReached": _rate(sum(f.reached for f in facts), len(facts), 0.8),
        "factsInBrief": _rate(sum(f.in_brief for f in facts), len(facts)),
        "factsInTop5": _rate(sum(f.in_top_k for f in facts), len(facts)),
        "factsHeld": _rate(sum(f.held for f in facts), len(facts)),
        "hardInBrief": _rate(sum(f.in_brief for f in hard), len(hard), 1.0),
        "duplicateClusters": _rate(clusters, claims, 0.05, at_most=True),
        "briefTokensMax": max(tokens) if tokens else None,
        "briefTokensOverLimit": sum(t > BRIEF_TOKEN_LIMIT for t in tokens),
        "duplicateCosine": DUPLICATE_COSINE,
        "duplicateClustersAt": {
            f"{t:.2f}": sum(s.clusters_at.get(f"{t:.2f}", 0) for s in read) for t in COSINE_SWEEP
        },
    }


def _rate(
    part: int, whole: int, target: float | None = None, *, at_most: bool = False
) -> dict[str, Any]:
    rate = part / whole if whole else None
    answer: dict[str, Any] = {"rate": rate, "count": part, "of": whole}
    if target is not None:
        answer["target"] = target
        answer["met"] = None if rate is None else (rate <= target if at_most else rate >= target)
    return answer


def misses(score: BriefScore) -> list[str]:
    """Lines for a verbose report: facts not reached, hard ones not in the brief,
    duplicate clusters."""
    lines = [f"  not reached: {f.terms} (query {f.query!r}, held {f.held})"
             for f in score.facts if not f.reached]  # fmt: skip
    lines += [f"  hard, not in brief: {f.terms}" for f in score.facts if f.hard and not f.in_brief]
    lines += [f"  duplicates: {c}" for c in score.duplicate_clusters]
    return lines
