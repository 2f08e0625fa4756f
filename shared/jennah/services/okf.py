"""memory:export and memory:import: a scope's memory as OKF files and back (`jennah.domain.okf`).

Export writes ALL claims, whatever their status or validity (history included), their
evidence, the scope's graph (every node and every edge, closed ones included), so a scope
imported from an export answers the same semantic, word and graph queries as the original,
and its suppression rules (`suppressions.jsonl`: a forgotten fact must not come back after
export -> import; their embeddings are recomputed from their text like the claims').
Not exported: embeddings (an import recomputes them with the service's embedder, from the
same text memory:commit and formation embed), execution-log steps (the conversations evidence
refs point at), keyed-memory links, the stored brief and the change log (derived; the next
lifecycle pass recompiles them), and commit times other than formed_at.

Import is all or nothing: every file is validated first and every fault is reported at once
(400 INVALID_ARGUMENT, one field violation a fault, 'claims/abc.md: confidence'); then ONE
commit plan writes the claims, evidence, nodes and edges. It imports into an EMPTY scope only
(FAILED_PRECONDITION otherwise: merging by id would leave validity windows and statuses as
the scope had them, not as the files say), so export -> import -> export gives the same bytes.
Two imports racing into one empty scope both pass the check; their rows are create-or-replace
on the files' ids, so the later commit's rows win.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from jennah.domain import okf
from jennah.domain.models import (
    CommitPlan,
    Direction,
    Evidence,
    GraphEdge,
    GraphNode,
    MemoryRecord,
    ScopeRecord,
    ScopeRef,
)
from jennah.domain.suppression import Suppression
from jennah.errors import FailedPrecondition, InvalidArgument, InvalidFields
from jennah.ports.embedder import Embedder
from jennah.ports.store import MemoryStore
from jennah.services.formation.suppression import all_suppressions

PAGE = 500  # claims, evidence ids and node ids read per store call
EMBED_BATCH = 64
MAX_EXPORT_NODES = 100_000
INVALID_OKF = "INVALID_OKF"  # ErrorInfo reasons
SCOPE_NOT_EMPTY = "SCOPE_NOT_EMPTY"
IMPORT_TOO_LARGE = "IMPORT_TOO_LARGE"


@dataclass(frozen=True)
class ImportResult:
    claims: int
    evidence_lines: int
    nodes: int
    edges: int
    suppressions: int = 0


# export


def export_files(store: MemoryStore, scope: ScopeRef) -> dict[str, bytes]:
    """Every file of the scope's export by relative path; deterministic bytes."""
    claims = _all_claims(store, scope)
    evidence = _all_evidence(store, scope, [c.id for c in claims])
    nodes = store.find_nodes(scope, [], MAX_EXPORT_NODES)
    edges = _all_edges(store, scope, [n.node_id for n in nodes])
    files = {okf.claim_path(c.id): okf.render_claim(c) for c in claims}
    for memory_id, lines in evidence.items():
        files[okf.evidence_path(memory_id)] = okf.render_evidence(lines)
    if nodes:
        files[okf.NODES_FILE] = okf.render_nodes(nodes)
    if edges:
        files[okf.EDGES_FILE] = okf.render_edges(edges)
    line_count = sum(len(lines) for lines in evidence.values())
    files[okf.INDEX_FILE] = okf.render_index(claims, line_count, len(nodes), len(edges))
    suppressions = all_suppressions(store, scope)
    if suppressions:
        files[okf.SUPPRESSIONS_FILE] = okf.render_suppressions(suppressions)
    return files


def _all_claims(store: MemoryStore, scope: ScopeRef) -> list[MemoryRecord]:
    claims: list[MemoryRecord] = []
    after: str | None = None
    while page := store.list_claims(scope, None, after, PAGE):
        claims.extend(page)
        after = page[-1].id
        if len(page) < PAGE:
            break
    return claims


def _all_evidence(
    store: MemoryStore, scope: ScopeRef, memory_ids: Sequence[str]
) -> dict[str, list[Evidence]]:
    by_claim: dict[str, list[Evidence]] = {}
    for start in range(0, len(memory_ids), PAGE):
        for line in store.list_evidence(scope, memory_ids[start : start + PAGE]):
            by_claim.setdefault(line.memory_id, []).append(line)
    return by_claim


def _all_edges(store: MemoryStore, scope: ScopeRef, node_ids: Sequence[str]) -> list[GraphEdge]:
    edges: dict[str, GraphEdge] = {}
    for start in range(0, len(node_ids), PAGE):
        batch = node_ids[start : start + PAGE]
        for edge in store.edges_touching(scope, batch, [], Direction.ANY, None):
            edges[edge.edge_id] = edge
    return [edges[edge_id] for edge_id in sorted(edges)]


# import


def import_files(
    files: Mapping[str, bytes],
    scope: ScopeRef,
    store: MemoryStore,
    embedder: Embedder,
    registration: ScopeRecord | None = None,
) -> ImportResult:
    """Validate every file, then write them all in one transaction into the empty scope."""
    contents = _read(files, scope)
    _check_bounds(contents)
    _require_empty(store, scope)
    _embed(contents.claims, embedder)
    _embed(contents.suppressions, embedder)
    store.apply(
        CommitPlan(
            scope=scope,
            registration=registration,
            chunks=contents.claims,
            nodes=contents.nodes,
            edges=contents.edges,
            evidence=contents.evidence,
            suppressions=contents.suppressions,
        )
    )
    return ImportResult(
        claims=len(contents.claims),
        evidence_lines=len(contents.evidence),
        nodes=len(contents.nodes),
        edges=len(contents.edges),
        suppressions=len(contents.suppressions),
    )


@dataclass
class _Contents:
    claims: list[MemoryRecord]
    evidence: list[Evidence]
    nodes: list[GraphNode]
    edges: list[GraphEdge]
    suppressions: list[Suppression]


def _read(files: Mapping[str, bytes], scope: ScopeRef) -> _Contents:
    problems = okf.Problems()
    contents = _Contents([], [], [], [], [])
    ledgers: dict[str, str] = {}
    for path in sorted(files):
        _read_one(path, files[path], scope, problems, contents, ledgers)
    claim_ids = {c.id for c in contents.claims}
    for memory_id, path in sorted(ledgers.items()):
        if memory_id not in claim_ids and okf.claim_path(memory_id) not in files:
            problems.add(path, f"has no claim file {okf.claim_path(memory_id)}")
    _check_endpoints(contents, problems)
    if problems.found:
        first = problems.found[0]
        raise InvalidFields(
            f"the import has {len(problems.found)} fault(s) and nothing was written; the first: "
            f"{first.where}: {first.description}",
            [(p.where, p.description) for p in problems.found],
            reason=INVALID_OKF,
        )
    return contents


def _read_one(
    path: str,
    content: bytes,
    scope: ScopeRef,
    problems: okf.Problems,
    contents: _Contents,
    ledgers: dict[str, str],
) -> None:
    folder, _, name = path.rpartition("/")
    if path == okf.INDEX_FILE:
        return  # derived from the claims: rewritten by the next export
    if folder == okf.CLAIMS_DIR and name.endswith(".md"):
        parsed = okf.parse_claim(path, content, scope, problems)
        if parsed is not None:
            contents.claims.append(parsed.record)
    elif folder == okf.EVIDENCE_DIR and name.endswith(".jsonl"):
        memory_id = name.removesuffix(".jsonl")
        ledgers[memory_id] = path
        contents.evidence.extend(okf.parse_evidence(path, content, memory_id, problems))
    elif path == okf.NODES_FILE:
        contents.nodes = okf.parse_nodes(path, content, problems)
    elif path == okf.EDGES_FILE:
        contents.edges = okf.parse_edges(path, content, problems)
    elif path == okf.SUPPRESSIONS_FILE:
        contents.suppressions = okf.parse_suppressions(path, content, problems)
    else:
        problems.add(
            path,
            "is not a file of an OKF export (index.md, claims/{id}.md, evidence/{id}.jsonl, "
            "graph/nodes.jsonl, graph/edges.jsonl, suppressions.jsonl)",
        )


def _check_endpoints(contents: _Contents, problems: okf.Problems) -> None:
    """Every edge joins nodes of the import (the scope it goes into is empty)."""
    node_ids = {n.node_id for n in contents.nodes}
    for edge in contents.edges:
        for end, node_id in (("source", edge.source), ("target", edge.target)):
            if node_id not in node_ids:
                problems.add(
                    f"{okf.EDGES_FILE}: {edge.edge_id}: {end}",
                    f"node {node_id!r} is not in {okf.NODES_FILE}",
                )


def _check_bounds(contents: _Contents) -> None:
    for what, count, bound in (
        ("claims", len(contents.claims), okf.MAX_IMPORT_CLAIMS),
        ("evidence lines", len(contents.evidence), okf.MAX_IMPORT_EVIDENCE_LINES),
        ("graph nodes", len(contents.nodes), okf.MAX_IMPORT_NODES),
        ("graph edges", len(contents.edges), okf.MAX_IMPORT_EDGES),
        ("suppression rules", len(contents.suppressions), okf.MAX_IMPORT_SUPPRESSIONS),
    ):
        if count > bound:
            raise InvalidArgument(
                f"the import has {count} {what}; one import (one transaction) takes at most "
                f"{bound}",
                reason=IMPORT_TOO_LARGE,
                metadata={"limit": str(bound), "count": str(count), "what": what},
            )


def _require_empty(store: MemoryStore, scope: ScopeRef) -> None:
    if (
        store.list_claims(scope, None, None, 1)
        or store.find_nodes(scope, [], 1)
        or store.list_suppressions(scope, None, 1)
    ):
        raise FailedPrecondition(
            f"scope {scope.scope_id} already holds memory; import into an empty scope "
            "(create a new one, or destroy this one first)",
            reason=SCOPE_NOT_EMPTY,
            metadata={"scopeId": scope.scope_id},
        )


def _embed(items: Sequence[MemoryRecord | Suppression], embedder: Embedder) -> None:
    """The same text memory:commit, formation and forgetting embed (the claim's body)."""
    for start in range(0, len(items), EMBED_BATCH):
        batch = items[start : start + EMBED_BATCH]
        for item, vector in zip(batch, embedder.embed_batch([i.text for i in batch]), strict=True):
            item.embedding = vector
