"""The suppression check (design §4 and §10): before reconciliation, and so before anything
is written, each undecided fact is held against the scope's suppression rules.

A fact matching a rule (`domain.suppression.match`: the same words as the forgotten
claim, or a paraphrase: an embedding at least SUPPRESSION_SIMILARITY from it and no
number, date, person or name changed, `domain.distinguishing`) is
REJECTED with a reason naming the rule and the forgotten claim; planning writes nothing
for a rejected candidate (no claim, no evidence line, no reinforcement). Relationships
are not claims and are not checked. A scope without rules costs one read and no embedding.
The embeddings computed here are kept on the candidates for retrieval.
"""

from __future__ import annotations

from collections.abc import Sequence

from jennah.domain import suppression
from jennah.domain.models import ScopeRef
from jennah.domain.suppression import Suppression
from jennah.ports.embedder import Embedder
from jennah.ports.store import MemoryStore
from jennah.services.formation.candidates import Candidate


def suppress(
    candidates: Sequence[Candidate],
    store: MemoryStore,
    embedder: Embedder,
    scope: ScopeRef,
    threshold: float = suppression.SUPPRESSION_SIMILARITY,
) -> None:
    """Reject every undecided fact that a suppression rule of the scope matches."""
    facts = [c for c in candidates if c.undecided and c.is_fact]
    if not facts:
        return
    rules = all_suppressions(store, scope)
    if not rules:
        return
    for candidate, vector in zip(facts, embedder.embed_batch([c.text for c in facts]), strict=True):
        candidate.embedding = vector
        found = suppression.match(candidate.text, vector, rules, threshold)
        if found is not None:
            candidate.reject(found.reason)


_READ_PAGE = 1000


def all_suppressions(store: MemoryStore, scope: ScopeRef) -> list[Suppression]:
    """Every suppression rule of the scope, read a page at a time."""
    rules: list[Suppression] = []
    while True:
        batch = store.list_suppressions(scope, rules[-1].id if rules else None, _READ_PAGE)
        rules.extend(batch)
        if len(batch) < _READ_PAGE:
            return rules
