"""memory:commit: validate a direct write and apply it in one transaction.

A chunk is a claim: besides its words (`text`, the body) and metadata it may carry the
claim fields (type, about, summary, whenToUse, appliesTo, strength, pin, authority,
confidence, durability, validUntil, status, sensitivity, related, needsEnrichment,
extensions); one left out takes MemoryRecord's default (a `fact` with `system`
authority, soft, unpinned, confidence 1, durable, active, normal sensitivity).

Its id still derives from its text and validAt alone (`rules.chunk_id`), so the claim
fields are part of a create-or-replace: committing the same text and validAt again
replaces them, and a replace keeps what the store keeps on every replace
(adapters/sqlite/writer.py): the stored status, validity window (validAt, invalidAt),
formedAt (created_at) and supersededBy. A commit never changes a claim's state, then;
status is taken on a claim's first write only. A replace is the claim's next revision
(stored revision + 1) and keeps its reinforcementCount and lastReinforcedAt (read before
the transaction: a claim update landing in between may see its revision number reused).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from jennah.domain import claims, rules
from jennah.domain.models import (
    CommitPlan,
    CommitResult,
    GraphEdge,
    GraphNode,
    MemoryRecord,
    ScopeRecord,
    Supersession,
)
from jennah.domain.rules import MAX_COMMIT_ITEMS, MAX_LABEL_LENGTH
from jennah.errors import InvalidArgument, NotFound
from jennah.ports.embedder import Embedder
from jennah.ports.store import MemoryStore
from jennah.services import lifecycle
from jennah.services.commands import ChunkInput, CommitCommand, EdgeInput, NodeInput

NAME_PATTERN = rules.METADATA_KEY_PATTERN  # node classes and relation names


def commit(
    command: CommitCommand,
    store: MemoryStore,
    embedder: Embedder,
    now: Callable[[], datetime],
    registration: ScopeRecord | None = None,
    passes: lifecycle.Passes = lifecycle.INLINE,
) -> CommitResult:
    """Write chunks, nodes, edges and supersessions atomically; all or nothing.

    A supersession whose replacement carries no validAt closes the old window
    at the request's receipt time. `registration`, when given, registers the
    scope in the same transaction (its first write). A commit that wrote or closed
    chunks is followed by the scope's lifecycle pass (`passes`: in this call, or deferred;
    it never fails the commit).
    """
    received_at = now()
    _check_bounds(command)
    plan = CommitPlan(scope=command.scope, registration=registration)
    chunk_texts: list[str] = []
    for i, chunk in enumerate(command.chunks):
        plan.chunks.append(_chunk(command, chunk, f"chunks[{i}]"))
        chunk_texts.append(chunk.text)
    plan.nodes = [_node(node, f"nodes[{i}]") for i, node in enumerate(command.nodes)]
    plan.edges = [_edge(edge, f"edges[{i}]") for i, edge in enumerate(command.edges)]
    _add_supersessions(command, plan, received_at)
    _check_edge_endpoints(command, plan, store)
    vectors = embedder.embed_batch([c.text for c in plan.chunks])
    for record, vector in zip(plan.chunks, vectors, strict=True):
        record.embedding = vector
    plan.chunks = list({c.id: c for c in plan.chunks}.values())
    plan.edges = list({e.edge_id: e for e in plan.edges}.values())
    plan.nodes = list({n.node_id: n for n in plan.nodes}.values())
    result = store.apply(plan)
    if lifecycle.changes_claims(plan):
        passes(store, command.scope, received_at)
    return result.model_copy(
        update={
            "chunk_ids": [c.id for c in plan.chunks],
            "edge_ids": [e.edge_id for e in plan.edges],
        }
    )


def _check_bounds(command: CommitCommand) -> None:
    items = (
        len(command.chunks) + len(command.nodes) + len(command.edges) + len(command.supersessions)
    )
    if items == 0:
        raise InvalidArgument(
            "the commit is empty: give at least one of chunks, nodes, edges or supersessions"
        )
    if items > MAX_COMMIT_ITEMS:
        raise InvalidArgument(
            f"the commit has {items} items (chunks + nodes + edges + supersessions); "
            f"at most {MAX_COMMIT_ITEMS} are allowed in one commit"
        )


def _chunk(command: CommitCommand, chunk: ChunkInput, field: str) -> MemoryRecord:
    if not chunk.text.strip():
        raise InvalidArgument(f"{field}.text must not be empty", field=f"{field}.text")
    if len(chunk.text) > rules.MAX_TEXT_LENGTH:
        raise InvalidArgument(
            f"{field}.text is {len(chunk.text)} characters; at most "
            f"{rules.MAX_TEXT_LENGTH} are allowed",
            field=f"{field}.text",
        )
    rules.validate_metadata(chunk.metadata, f"{field}.metadata")
    _check_claim(chunk, field)
    given = chunk.model_dump(include=set(CLAIM_FIELDS), exclude_none=True)
    return MemoryRecord(
        id=rules.chunk_id(chunk.text, chunk.valid_at),
        scope=command.scope,
        content_hash=rules.content_hash(chunk.text),
        text=chunk.text,
        metadata=dict(chunk.metadata),
        valid_at=chunk.valid_at,
        **given,
    )


# The ChunkInput fields that are claim fields of the same name on MemoryRecord.
CLAIM_FIELDS = frozenset(
    {
        "type", "about", "summary", "when_to_use", "applies_to", "strength", "pin",
        "authority", "confidence", "durability", "valid_until", "status", "sensitivity",
        "related", "needs_enrichment", "extensions",
    }
)  # fmt: skip


def _check_claim(chunk: ChunkInput, field: str) -> None:
    """The bounds of the claim fields given (jennah.domain.claims), each named on the wire."""
    for value, bound, name in (
        (chunk.about, claims.MAX_ABOUT_LENGTH, "about"),
        (chunk.summary, claims.MAX_SUMMARY_LENGTH, "summary"),
        (chunk.when_to_use, claims.MAX_WHEN_TO_USE_LENGTH, "whenToUse"),
    ):
        if value is not None:
            claims.check_length(value, bound, f"{field}.{name}")
    if chunk.applies_to is not None:
        claims.check_identifiers(
            chunk.applies_to, claims.MAX_APPLIES_TO, f"{field}.appliesTo", "node ids"
        )
    if chunk.related is not None:
        claims.check_identifiers(
            chunk.related, claims.MAX_RELATED, f"{field}.related", "memory ids"
        )
    if chunk.confidence is not None:
        claims.check_confidence(chunk.confidence, f"{field}.confidence")
    if chunk.status is not None:
        claims.check_status(chunk.status, f"{field}.status")
    if chunk.valid_until is not None:
        claims.check_valid_until(chunk.valid_until, chunk.valid_at, f"{field}.validUntil")
    if chunk.extensions is not None:
        claims.check_extensions(chunk.extensions, f"{field}.extensions")


def _node(node: NodeInput, field: str) -> GraphNode:
    rules.validate_identifier(node.node_id, f"{field}.nodeId")
    if len(node.label) > MAX_LABEL_LENGTH:
        raise InvalidArgument(
            f"{field}.label is {len(node.label)} characters; at most {MAX_LABEL_LENGTH} "
            "are allowed",
            field=f"{field}.label",
        )
    if node.node_type and not NAME_PATTERN.match(node.node_type):
        raise InvalidArgument(
            f"{field}.nodeType {node.node_type[:80]!r} must be 1-64 characters of letters, "
            "digits, '_', '.' and '-'",
            field=f"{field}.nodeType",
        )
    rules.validate_metadata(node.properties, f"{field}.properties")
    return GraphNode(
        node_id=node.node_id,
        label=node.label,
        node_type=node.node_type or None,
        properties=dict(node.properties),
    )


def _edge(edge: EdgeInput, field: str) -> GraphEdge:
    rules.validate_identifier(edge.source, f"{field}.source")
    rules.validate_identifier(edge.target, f"{field}.target")
    if not NAME_PATTERN.match(edge.relation):
        raise InvalidArgument(
            f"{field}.relation {edge.relation[:80]!r} must be 1-64 characters of letters, "
            "digits, '_', '.' and '-'",
            field=f"{field}.relation",
        )
    rules.validate_metadata(edge.properties, f"{field}.properties")
    return GraphEdge(
        edge_id=rules.edge_id(edge.source, edge.relation, edge.target, edge.valid_at),
        source=edge.source,
        relation=edge.relation,
        target=edge.target,
        valid_at=edge.valid_at,
        properties=dict(edge.properties),
    )


def _add_supersessions(command: CommitCommand, plan: CommitPlan, received_at: datetime) -> None:
    closed: set[str] = set()
    for i, sup in enumerate(command.supersessions):
        field = f"supersessions[{i}]"
        if (sup.chunk_id is None) == (sup.edge_id is None):
            raise InvalidArgument(
                f"{field} must name exactly one of chunkId or edgeId", field=field
            )
        target = sup.chunk_id or sup.edge_id or ""
        if target in closed:
            raise InvalidArgument(
                f"{field} supersedes {target}, which another supersession in this commit "
                "already supersedes",
                field=field,
            )
        closed.add(target)
        if sup.chunk_id is not None:
            _add_chunk_supersession(
                command, plan, sup.chunk_id, sup.replacement_chunk, field, received_at
            )
        else:
            _add_edge_supersession(plan, target, sup.replacement_edge, field, received_at)


def _add_chunk_supersession(
    command: CommitCommand,
    plan: CommitPlan,
    target: str,
    replacement: ChunkInput | None,
    field: str,
    received_at: datetime,
) -> None:
    if replacement is None:
        raise InvalidArgument(
            f"{field} names chunkId, so it needs a replacementChunk",
            field=f"{field}.replacementChunk",
        )
    boundary = replacement.valid_at or received_at
    record = _chunk(
        command, replacement.model_copy(update={"valid_at": boundary}), f"{field}.replacementChunk"
    )
    record.supersedes = target
    plan.chunks.append(record)
    plan.chunk_supersessions.append(
        Supersession(target_id=target, invalid_at=boundary, superseded_by=record.id)
    )


def _add_edge_supersession(
    plan: CommitPlan,
    target: str,
    replacement: EdgeInput | None,
    field: str,
    received_at: datetime,
) -> None:
    if replacement is None:
        raise InvalidArgument(
            f"{field} names edgeId, so it needs a replacementEdge",
            field=f"{field}.replacementEdge",
        )
    boundary = replacement.valid_at or received_at
    edge = _edge(replacement.model_copy(update={"valid_at": boundary}), f"{field}.replacementEdge")
    edge.supersedes = target
    plan.edges.append(edge)
    plan.edge_supersessions.append(
        Supersession(target_id=target, invalid_at=boundary, superseded_by=edge.edge_id)
    )


def _check_edge_endpoints(command: CommitCommand, plan: CommitPlan, store: MemoryStore) -> None:
    """Every edge must join nodes that exist, in this commit or in the scope."""
    in_commit = {n.node_id for n in plan.nodes}
    wanted = {e.source for e in plan.edges} | {e.target for e in plan.edges}
    missing = wanted - in_commit
    if missing:
        found = {n.node_id for n in store.get_nodes(command.scope, sorted(missing))}
        missing -= found
    if missing:
        first = sorted(missing)[0]
        raise NotFound(
            f"edge endpoint node {first!r} does not exist in this scope or this commit; "
            "write the node first or in the same commit",
            metadata={"nodeId": first},
        )
