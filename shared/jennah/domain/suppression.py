"""Suppression rules: what a forgotten claim leaves behind so formation never learns it back
(design §10, "Forgetting a claim for good").

Forgetting a claim retracts it (status retracted, its validity window closed; the row
stays) and records one suppression in the same transaction. A suppression holds the
forgotten claim's words (about, summary, body) and the embedding of its body. A
candidate fact matches a suppression when

- its words are the same: its body, compared after `normalized` (case, spacing and
  closing punctuation ignored), equals the suppression's body or summary; or
- it is a paraphrase: the cosine similarity of the embeddings of the two bodies is at
  least SUPPRESSION_SIMILARITY, AND the two bodies do not differ in the words that carry
  a fact (`domain.distinguishing`, the kinds in SUPPRESSION_GUARD): numbers, dates,
  weekdays, times of day and the people a fact is about ("Ana" / "Ana's brother"), and
  names ("Tokyo" / "Osaka"). Such a candidate is a different fact, however close its
  embedding: wrongly suppressing a new fact would lose it silently.

The rule and SUPPRESSION_SIMILARITY are chosen by bench/suppression.py over the default
embedder of `jnh serve` (all-MiniLM-L6-v2) on the tune half of its labelled set (forgotten
facts each with paraphrases that must be suppressed and near-but-different statements
that must not), and reported on the held-out half too. Cosine alone does not separate
them (a weekday or a number changed scores up to 0.985, a paraphrase as low as 0.73).
With the guard at 0.725: tune precision 0.754 recall 1.000, held-out precision 0.833
recall 0.962 (cosine alone at 0.80: 0.585 / 0.923 and 0.623 / 0.923). A thing swapped
("peanuts" / "shellfish"), a verb or a direction changed can still be suppressed wrongly:
the person deletes the rule to have such a fact learned.

Deleting a suppression is how a person "says otherwise": afterwards the fact can be
formed again (the retracted claim itself stays retracted).
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from pydantic import BaseModel

from jennah.domain.distinguishing import Difference, differences

# Cosine similarity of two bodies' embeddings from which a candidate is a paraphrase of
# a forgotten claim, and the kinds of fact-carrying word in which the two must not differ
# (bench/suppression.py chooses both on its tune half).
SUPPRESSION_SIMILARITY = 0.725
# For each kind of fact-carrying word (domain.distinguishing), the similarity a candidate
# that differs from the forgotten body in it needs to be suppressed all the same
# (NEVER: a different fact whatever the similarity).
NEVER = math.inf
Guard = Mapping[Difference, float]
SUPPRESSION_GUARD: Guard = {
    Difference.ANCHORS: NEVER,
    Difference.NAMES: NEVER,
}  # a changed thing is not guarded: it cost more paraphrases than it saved new facts
# The most claims one forgetGroup retracts (one transaction: a claim update and a
# suppression row each).
MAX_GROUP_CLAIMS = 200
# Reasons of the refusals (FAILED_PRECONDITION) of forget and forgetGroup.
ALREADY_RETRACTED = "ALREADY_RETRACTED"
MEMORY_SUPERSEDED = "MEMORY_SUPERSEDED"
GROUP_CHANGED = "GROUP_CHANGED"
GROUP_TOO_LARGE = "GROUP_TOO_LARGE"

_SPACES = re.compile(r"\s+")
_CLOSING = ".!?;:,\"' "


class Suppression(BaseModel):
    """One suppression rule of a scope: the forgotten claim `memory_id` and what it matches.

    `id` is "sup_" and 16 hex digits derived from the forgotten claim's id
    (`suppression_id`); `created_by` is the principal who forgot it."""

    id: str
    memory_id: str
    about: str = ""
    summary: str = ""
    text: str
    embedding: list[float] | None = None
    created_at: datetime | None = None
    created_by: str = ""


@dataclass(frozen=True)
class SuppressionMatch:
    """Why a candidate is suppressed: the rule, and the similarity (1.0: same words)."""

    suppression: Suppression
    similarity: float
    same_words: bool

    @property
    def reason(self) -> str:
        """A REJECTED candidate's reason naming the suppression."""
        rule = self.suppression
        how = (
            "the same words"
            if self.same_words
            else f"similarity {self.similarity:.2f} >= {SUPPRESSION_SIMILARITY:.2f}"
            ", no fact-carrying word changed"
        )
        return f"suppressed by {rule.id} (forgotten memory {rule.memory_id}): {how}"


def suppression_id(memory_id: str) -> str:
    """The id of the suppression that forgetting claim `memory_id` records."""
    return "sup_" + hashlib.sha256(f"suppression\x1f{memory_id}".encode()).hexdigest()[:16]


def normalized(words: str) -> str:
    """Words compared for sameness: case folded, spacing collapsed, closing punctuation
    dropped."""
    return _SPACES.sub(" ", words.casefold()).strip().rstrip(_CLOSING)


def match(
    text: str,
    embedding: Sequence[float] | None,
    suppressions: Iterable[Suppression],
    threshold: float = SUPPRESSION_SIMILARITY,
    guard: Guard = SUPPRESSION_GUARD,
) -> SuppressionMatch | None:
    """The suppression a candidate body (and its embedding) matches, or None: same words
    first, else the most similar rule at or above `threshold` and at or above the `guard`
    similarity of each kind of fact-carrying word the two bodies differ in (ties: lowest
    id)."""
    rules = sorted(suppressions, key=lambda rule: rule.id)
    words = normalized(text)
    for rule in rules:
        if words and words in {normalized(rule.text), normalized(rule.summary)}:
            return SuppressionMatch(rule, 1.0, same_words=True)
    if embedding is None:
        return None
    best: SuppressionMatch | None = None
    for rule in rules:
        if rule.embedding is None:
            continue
        similarity = cosine(embedding, rule.embedding)
        if similarity < threshold or (best is not None and similarity <= best.similarity):
            continue
        needed = [guard.get(kind, 0.0) for kind in differences(text, rule.text)]
        if similarity >= max(needed, default=0.0):
            best = SuppressionMatch(rule, similarity, same_words=False)
    return best


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    norms = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norms if norms else 0.0
