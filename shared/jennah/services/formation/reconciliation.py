"""Reconciliation: each verified candidate against the workspace's current memory.

In code first, no model call: a fact worded identically to a current chunk
(same content hash), or a relationship with the same source, relation and
target as a current edge, is KNOWN, matched to that memory.

Then retrieval: the nearest current chunks of each remaining fact (cosine
similarity at least `similarity_threshold`, at most NEIGHBOURS), and the
current edges touching each remaining relationship's subject or object. A
candidate with nothing similar is NEW without asking the model; when no
candidate has anything similar the reconciliation call is skipped entirely, so
the formation makes one model call. Otherwise ONE call decides the candidates
that have neighbours, and code checks every verdict (`verdicts.check`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import Any

from jennah.domain.formation import Decision
from jennah.domain.models import Direction, GraphEdge, ScopeRef
from jennah.ports.embedder import Embedder
from jennah.ports.model import LanguageModel
from jennah.ports.prompts import (
    RECONCILE_INSTRUCTIONS,
    RECONCILE_SCHEMA,
    ReconcileAnswer,
    ReconcileChoice,
    build_prompt,
)
from jennah.ports.store import MemoryStore
from jennah.services.formation import verdicts
from jennah.services.formation.candidates import Candidate, Memory
from jennah.services.formation.claims import type_family
from jennah.services.formation.model_calls import CallBounds, FormationUsage, call_model

# Cosine similarity from which an existing chunk counts as "similar" to a
# candidate fact. Measured with all-MiniLM-L6-v2 (the local embedder): the
# same subject, contradicted, scores 0.5-0.85 ("lives in Tokyo" / "lives in
# Osaka" 0.85, "prefers dark mode" / "prefers light mode" 0.74, "works at
# Alphaus" / "now works at Google" 0.52); different facts about the same
# person 0.1-0.4 ("lives in Tokyo" / "works at Alphaus" 0.40, / "prefers dark
# mode" 0.10). Below the threshold a candidate is NEW without a model call.
SIMILARITY_THRESHOLD = 0.45
NEIGHBOURS = 5  # nearest memories shown to the model per candidate


def known_in_code(
    candidates: Sequence[Candidate], store: MemoryStore, scope: ScopeRef, instant: datetime
) -> None:
    """Decide KNOWN every candidate identical to a current memory (no model call)."""
    _known_facts([c for c in candidates if c.undecided and c.is_fact], store, scope, instant)
    edges = [c for c in candidates if c.undecided and c.edge is not None]
    _known_edges(edges, store, scope, instant)


def _known_facts(
    candidates: Sequence[Candidate], store: MemoryStore, scope: ScopeRef, instant: datetime
) -> None:
    if not candidates:
        return
    hashes = sorted({c.content_key[1] for c in candidates})
    current: dict[str, Memory] = {}
    for record in store.find_chunks_by_content(scope, hashes, instant):
        current.setdefault(record.content_hash, Memory.of_chunk(record))
    for candidate in candidates:
        match = current.get(candidate.content_key[1])
        if match is not None:
            candidate.decide(Decision.KNOWN, match)


def _known_edges(
    candidates: Sequence[Candidate], store: MemoryStore, scope: ScopeRef, instant: datetime
) -> None:
    if not candidates:
        return
    sources = sorted({c.edge.source.node_id for c in candidates if c.edge is not None})
    relations = sorted({c.edge.relation for c in candidates if c.edge is not None})
    current: dict[tuple[str, ...], Memory] = {}
    for edge in store.edges_touching(scope, sources, relations, Direction.OUTBOUND, instant):
        memory = Memory.of_edge(edge, {})
        current.setdefault(memory.content_key, memory)
    for candidate in candidates:
        match = current.get(candidate.content_key)
        if match is not None:
            candidate.decide(Decision.KNOWN, match)


def gather_neighbours(
    candidates: Sequence[Candidate],
    store: MemoryStore,
    embedder: Embedder,
    scope: ScopeRef,
    instant: datetime,
    similarity_threshold: float,
) -> None:
    """Embed the undecided facts and find every undecided candidate's similar memories."""
    facts = [c for c in candidates if c.undecided and c.is_fact]
    unembedded = [c for c in facts if c.embedding is None]  # the suppression check embeds some
    vectors = embedder.embed_batch([c.text for c in unembedded])
    for candidate, vector in zip(unembedded, vectors, strict=True):
        candidate.embedding = vector
    for candidate in facts:
        embedded = candidate.embedding
        assert embedded is not None
        hits = store.search_chunks(scope, embedded, NEIGHBOURS, [], instant)
        candidate.neighbours = [
            Memory.of_chunk(hit.record) for hit in hits if hit.score >= similarity_threshold
        ]
    for candidate in candidates:
        if candidate.undecided and candidate.edge is not None:
            candidate.neighbours = _edge_neighbours(candidate, store, scope, instant)


def _edge_neighbours(
    candidate: Candidate, store: MemoryStore, scope: ScopeRef, instant: datetime
) -> list[Memory]:
    assert candidate.edge is not None
    ends = sorted({candidate.edge.source.node_id, candidate.edge.target.node_id})
    edges = store.edges_touching(scope, ends, [], Direction.ANY, instant)[: NEIGHBOURS * 2]
    return memories_of_edges(store, scope, edges)


def memories_of_edges(
    store: MemoryStore, scope: ScopeRef, edges: Sequence[GraphEdge]
) -> list[Memory]:
    """Edges as memories, their text written with their nodes' labels."""
    if not edges:
        return []
    ends = sorted({e.source for e in edges} | {e.target for e in edges})
    labels = {node.node_id: node.label for node in store.get_nodes(scope, ends)}
    return [Memory.of_edge(edge, labels) for edge in edges]


def reconcile(
    candidates: Sequence[Candidate],
    store: MemoryStore,
    model: LanguageModel,
    context: verdicts.VerdictContext,
    bounds: CallBounds,
    usage: FormationUsage,
    *,
    checkpoint: Callable[[], None] | None = None,
) -> None:
    """Decide every undecided candidate: NEW when nothing similar exists, else by one
    model call whose verdicts code checks. `checkpoint`, when given, runs just before
    that call: raising there makes no call."""
    asked = [c for c in candidates if c.undecided and c.neighbours]
    for candidate in candidates:
        if candidate.undecided and not candidate.neighbours:
            candidate.decide(Decision.NEW)
    if not asked:
        return
    if checkpoint is not None:
        checkpoint()
    prompt = build_prompt(RECONCILE_INSTRUCTIONS, reconcile_data(asked))
    answer = call_model(
        model, "reconciliation", prompt, RECONCILE_SCHEMA, ReconcileAnswer, bounds, usage
    )
    choices = _first_choice_per_candidate(answer)
    memories = _memories_named(store, context.scope, choices.values())
    for candidate in asked:
        verdicts.check(candidate, choices.get(candidate.index), memories, context)


def reconcile_data(asked: Sequence[Candidate]) -> dict[str, Any]:
    """The reconcile prompt's data object: the candidates, each naming its nearest
    memories (`neighbours`, nearest first), and those memories."""
    existing: dict[str, Memory] = {}
    for candidate in asked:
        for memory in candidate.neighbours:
            existing.setdefault(memory.id, memory)
    return {
        "task": "reconcile",
        "candidates": [
            {
                "candidateIndex": c.index,
                "kind": c.kind.value,
                "text": c.text,
                "memoryType": type_family(c.memory_type) if c.is_fact else "relationship",
                "neighbours": [m.id for m in c.neighbours],
            }
            for c in asked
        ],
        "existing": [
            {
                "id": m.id,
                "kind": m.kind.value,
                "text": m.text,
                "memoryType": type_family(m.memory_type),
                "validAt": m.valid_at.isoformat() if m.valid_at else None,
            }
            for m in existing.values()
        ],
    }


def _first_choice_per_candidate(answer: ReconcileAnswer) -> dict[int, ReconcileChoice]:
    choices: dict[int, ReconcileChoice] = {}
    for choice in answer.decisions:
        choices.setdefault(choice.candidate_index, choice)
    return choices


def _memories_named(
    store: MemoryStore, scope: ScopeRef, choices: Iterable[ReconcileChoice]
) -> dict[str, Memory]:
    """Every memory a verdict names, read from the store as it stands after the call."""
    named = sorted({c.matched_id for c in choices if c.matched_id})
    if not named:
        return {}
    memories = {r.id: Memory.of_chunk(r) for r in store.get_chunks(scope, named)}
    edges = store.get_edges(scope, named)
    memories.update({m.id: m for m in memories_of_edges(store, scope, edges)})
    return memories
