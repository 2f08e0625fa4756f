"""Export / import as OKF files, on every store: export -> import into an empty scope ->
export is byte-identical, the same queries answer the same, and an import is all or nothing."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from jennah.domain import okf
from jennah.domain.models import (
    Authority,
    CommitPlan,
    Direction,
    Durability,
    Evidence,
    FilterOperator,
    GraphEdge,
    GraphNode,
    MemoryRecord,
    MemoryType,
    MetadataFilter,
    ScopeRef,
    Sensitivity,
    Status,
    Strength,
)
from jennah.domain.retrieval import RetrievalMode
from jennah.domain.suppression import Suppression
from jennah.errors import FailedPrecondition, InvalidFields
from jennah.ports.store import MemoryStore
from jennah.services import okf as okf_service
from jennah.services.commands import (
    ChunkInput,
    EdgeInput,
    GraphQuery,
    NodeInput,
    SupersessionInput,
    Traversal,
)
from tests.contract import conftest
from tests.contract.conftest import (
    EMBEDDER,
    at,
    chunk_id,
    commit_items,
    edge_id,
    graph,
    new_scope,
    search,
)

FORMED = datetime(2026, 8, 14, 19, 2, tzinfo=UTC)


@pytest.fixture(params=["fake", "sqlite", pytest.param("spanner", marks=pytest.mark.spanner)])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[MemoryStore]:
    """Both stores, and the unit tests' FakeStore (the reference semantics) beside them."""
    if request.param == "fake":
        from tests.unit.fakes import FakeStore

        yield FakeStore()
    elif request.param == "sqlite":
        yield from conftest._sqlite_store(tmp_path)
    else:
        yield from conftest._spanner_store()


def claim(scope: ScopeRef, **changes: Any) -> MemoryRecord:
    values: dict[str, Any] = dict(
        id="clm_soccer",
        scope=scope,
        revision=2,
        text="Always show the draft of a soccer chat message and wait for a yes.",
        summary="Ask before posting to the soccer chat.",
        about="Soccer team group chat",
        when_to_use="Any request to message the soccer group chat",
        type=MemoryType.DIRECTIVE,
        metadata={"source": "chat"},
        strength=Strength.HARD,
        pin=True,
        authority=Authority.USER_EXPLICIT,
        confidence=0.9,
        sensitivity=Sensitivity.NORMAL,
        valid_until=datetime(2031, 1, 1, tzinfo=UTC),
        durability=Durability.SEASONAL,
        reinforcement_count=2,
        last_reinforced_at=datetime(2026, 10, 2, 23, 40, 0, 250000, tzinfo=UTC),
        applies_to=["alice"],
        related=["clm_dormant"],
        needs_enrichment=True,
        extensions={"team_color": '"blue"', "games": "[1,2]"},
    )
    values.update(changes)
    return MemoryRecord.model_validate(values)


def populate(store: MemoryStore, scope: ScopeRef) -> None:
    """A scope with commits, a chunk supersession, an edge supersession, claims of
    several statuses, unknown front-matter keys and evidence lines."""
    commit_items(
        store,
        scope,
        chunks=[
            ChunkInput(text="Alice works at Acme", metadata={"topic": "work"}),
            ChunkInput(text="Bob likes pizza on Fridays", valid_at=at(2024)),
        ],
        nodes=[
            NodeInput(node_id="alice", label="Alice", node_type="Person", properties={"a": "1"}),
            NodeInput(node_id="acme", label="Acme", node_type="Company"),
            NodeInput(node_id="globex", label="Globex", node_type="Company"),
        ],
        edges=[EdgeInput(source="alice", relation="WORKS_AT", target="acme", valid_at=at(2020))],
    )
    commit_items(
        store,
        scope,
        supersessions=[
            SupersessionInput(
                chunk_id=chunk_id("Alice works at Acme"),
                replacement_chunk=ChunkInput(text="Alice works at Globex", valid_at=at(2025)),
            ),
            SupersessionInput(
                edge_id=edge_id("alice", "WORKS_AT", "acme", at(2020)),
                replacement_edge=EdgeInput(
                    source="alice", relation="WORKS_AT", target="globex", valid_at=at(2025)
                ),
            ),
        ],
    )
    dormant = claim(
        scope,
        id="clm_dormant",
        text="Bob may prefer tea in the morning",
        type=MemoryType.PREFERENCE,
        status=Status.DORMANT,
        authority=Authority.INFERRED,
        related=[],
        extensions={},
    )
    plan = CommitPlan(
        scope=scope,
        chunks=[claim(scope), dormant],
        evidence=[
            Evidence(
                memory_id="clm_soccer",
                ref=f"conv://{scope.scope_id}/step1#turn=12-14",
                quote="Please check with me before anything goes to the team chat",
                recorded_at=FORMED,
            ),
            Evidence(
                memory_id="clm_soccer",
                ref=f"conv://{scope.scope_id}/step2#turn=3",
                quote="Again: ask me first.",
                recorded_at=datetime(2026, 10, 2, 23, 40, tzinfo=UTC),
            ),
        ],
    )
    for record in plan.chunks:
        record.embedding = EMBEDDER.embed(record.text)
    store.apply(plan)


def answers(store: MemoryStore, scope: ScopeRef) -> list[Any]:
    """Semantic, word and hybrid answers, now and as of a past time, and graph answers."""
    out: list[Any] = []
    for mode in RetrievalMode:
        for as_of in (None, at(2024, 6)):
            out.append(search(store, scope, "where does Alice work", mode=mode, as_of=as_of))
            out.append(search(store, scope, "soccer chat draft", mode=mode, as_of=as_of))
    topic = MetadataFilter(key="topic", operator=FilterOperator.EQUALS, values=["work"])
    out.append(search(store, scope, "Alice", filters=[topic], as_of=at(2024, 6)))
    for as_of in (None, at(2022)):
        result = graph(
            store,
            scope,
            GraphQuery(
                start_filters=[MetadataFilter(key="NodeId", values=["alice"])],
                traversal=Traversal(relations=["WORKS_AT"], direction=Direction.OUTBOUND),
                as_of_valid=as_of,
            ),
        )
        assert result.graph is not None
        out.append(
            (
                [
                    (n.node.node_id, n.node.label, n.node.node_type, n.depth)
                    for n in result.graph.nodes
                ],
                [e.model_dump(exclude={"created_at"}) for e in result.graph.edges],
            )
        )
    return out


def test_export_import_export_is_byte_identical_and_answers_the_same(
    store: MemoryStore, scope: ScopeRef
) -> None:
    populate(store, scope)
    first = okf_service.export_files(store, scope)
    assert sorted(first) == [
        "claims/" + chunk_id("Alice works at Acme") + ".md",
        "claims/" + chunk_id("Alice works at Globex", at(2025)) + ".md",
        "claims/" + chunk_id("Bob likes pizza on Fridays", at(2024)) + ".md",
        "claims/clm_dormant.md",
        "claims/clm_soccer.md",
        "evidence/clm_soccer.jsonl",
        "graph/edges.jsonl",
        "graph/nodes.jsonl",
        "index.md",
    ]
    copy = new_scope(scope.enterprise_id)
    result = okf_service.import_files(first, copy, store, EMBEDDER)
    assert (result.claims, result.evidence_lines, result.nodes, result.edges) == (5, 2, 3, 2)
    assert okf_service.export_files(store, copy) == first
    assert answers(store, copy) == answers(store, scope)


def test_the_export_holds_every_status_and_the_claim_fields(
    store: MemoryStore, scope: ScopeRef
) -> None:
    populate(store, scope)
    files = okf_service.export_files(store, scope)
    soccer = files["claims/clm_soccer.md"].decode()
    for line in (
        "type: directive", "strength: hard", "pin: true", "authority: user_explicit",
        "confidence: 0.9", "durability: seasonal", "reinforcement_count: 2",
        "last_reinforced_at: 2026-10-02T23:40:00.250000Z", "valid_until: 2031-01-01T00:00:00Z",
        "revision: 2", "needs_enrichment: true", "team_color: blue",
    ):  # fmt: skip
        assert f"\n{line}\n" in soccer, line
    assert "\nstatus: dormant\n" in files["claims/clm_dormant.md"].decode()
    old = files["claims/" + chunk_id("Alice works at Acme") + ".md"].decode()
    assert "\nstatus: superseded\n" in old
    assert "\njennah_invalid_at: 2025-01-01T00:00:00Z\n" in old
    assert files["evidence/clm_soccer.jsonl"].decode().count("\n") == 2


def test_an_import_needs_an_empty_scope(store: MemoryStore, scope: ScopeRef) -> None:
    populate(store, scope)
    files = okf_service.export_files(store, scope)
    with pytest.raises(FailedPrecondition) as refused:
        okf_service.import_files(files, scope, store, EMBEDDER)
    assert refused.value.reason == okf_service.SCOPE_NOT_EMPTY


def test_one_bad_file_writes_nothing(store: MemoryStore, scope: ScopeRef) -> None:
    populate(store, scope)
    files = okf_service.export_files(store, scope)
    bad = files["claims/clm_soccer.md"].replace(b"confidence: 0.9", b"confidence: 9")
    files["claims/clm_soccer.md"] = bad
    files["evidence/clm_dormant.jsonl"] = b'{"ref":"r","quote":"q","recordedAt":"soon"}\n'
    copy = new_scope(scope.enterprise_id)
    with pytest.raises(InvalidFields) as refused:
        okf_service.import_files(files, copy, store, EMBEDDER)
    assert [field for field, _ in refused.value.violations] == [
        "claims/clm_soccer.md: confidence",
        "evidence/clm_dormant.jsonl: line 1: recordedAt",
    ]
    assert store.list_claims(copy, None, None, 10) == []
    assert store.find_nodes(copy, [], 10) == []
    assert okf_service.export_files(store, copy) == {okf.INDEX_FILE: okf.render_index([], 0, 0, 0)}


def largest_import() -> dict[str, bytes]:
    """An export at every import bound: claims with every field, 3 evidence lines each,
    the most nodes and edges, and a suppression rule for each claim."""
    scope = new_scope()
    files: dict[str, bytes] = {}
    lines_each = okf.MAX_IMPORT_EVIDENCE_LINES // okf.MAX_IMPORT_CLAIMS
    for i in range(okf.MAX_IMPORT_CLAIMS):
        record = claim(scope, id=f"clm_{i:05d}", text=f"Claim number {i} about topic {i % 37}")
        record.created_at = FORMED
        files[okf.claim_path(record.id)] = okf.render_claim(record)
        files[okf.evidence_path(record.id)] = okf.render_evidence(
            [
                Evidence(
                    memory_id=record.id,
                    ref=f"conv://s/step{j}#turn={j}",
                    quote="q",
                    recorded_at=FORMED,
                )
                for j in range(lines_each)
            ]
        )
    nodes = [GraphNode(node_id=f"n{i:04d}", label=f"N{i}", node_type="Thing",
                       properties={"k": "v"}) for i in range(okf.MAX_IMPORT_NODES)]  # fmt: skip
    edges = [
        GraphEdge(edge_id=f"e{i:04d}", source=f"n{i:04d}", relation="NEXT",
                  target=f"n{(i + 1) % okf.MAX_IMPORT_NODES:04d}", valid_at=FORMED,
                  properties={"k": "v"})
        for i in range(okf.MAX_IMPORT_EDGES)
    ]  # fmt: skip
    files[okf.NODES_FILE] = okf.render_nodes(nodes)
    files[okf.EDGES_FILE] = okf.render_edges(edges)
    files[okf.SUPPRESSIONS_FILE] = okf.render_suppressions(
        [
            Suppression(id=f"sup_{i:05d}", memory_id=f"clm_{i:05d}", about="topic",
                        summary="a claim", text=f"Claim number {i}", created_at=FORMED,
                        created_by="user:ana")
            for i in range(okf.MAX_IMPORT_SUPPRESSIONS)
        ]
    )  # fmt: skip
    return files


@pytest.mark.slow
def test_the_largest_import_is_one_transaction(store: MemoryStore, scope: ScopeRef) -> None:
    files = largest_import()
    result = okf_service.import_files(files, scope, store, EMBEDDER)
    assert result.claims == okf.MAX_IMPORT_CLAIMS
    assert result.evidence_lines == okf.MAX_IMPORT_EVIDENCE_LINES
    assert result.suppressions == okf.MAX_IMPORT_SUPPRESSIONS
    exported = okf_service.export_files(store, scope)
    del exported[okf.INDEX_FILE]
    assert exported == files
