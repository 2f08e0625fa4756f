"""Contract: a commit is one transaction, all or nothing, and idempotent on content ids."""

from __future__ import annotations

import pytest

from jennah.domain.models import (
    Closure,
    CommitPlan,
    Direction,
    GraphEdge,
    GraphNode,
    MemoryRecord,
    ScopeRef,
    Status,
)
from jennah.errors import FailedPrecondition, NotFound
from jennah.ports.store import MemoryStore
from jennah.services.commands import ChunkInput, EdgeInput, NodeInput, SupersessionInput
from tests.contract.conftest import (
    EMBEDDER,
    NOW,
    at,
    chunk_id,
    commit_items,
    edge_id,
    one_chunk,
    search_ids,
)


def _nothing_visible(store: MemoryStore, scope: ScopeRef, chunk_ids: list[str]) -> None:
    assert store.get_chunks(scope, chunk_ids) == []
    assert store.list_chunks(scope, None, 100, 0) == []
    assert store.find_nodes(scope, [], 100) == []
    assert store.get_nodes(scope, ["ana", "bob"]) == []
    assert store.edges_touching(scope, ["ana", "bob"], [], Direction.ANY, None) == []


def test_commit_writes_chunks_nodes_edges_and_counts(store: MemoryStore, scope: ScopeRef) -> None:
    result = commit_items(
        store,
        scope,
        chunks=[ChunkInput(text="Ana lives in Lisbon", metadata={"topic": "home"})],
        nodes=[NodeInput(node_id="ana", label="Ana", node_type="person"), NodeInput(node_id="bob")],
        edges=[EdgeInput(source="ana", relation="knows", target="bob")],
    )
    assert (result.chunks_written, result.nodes_written, result.edges_written) == (1, 2, 1)
    assert (result.chunk_supersessions, result.edge_supersessions) == (0, 0)
    record = one_chunk(store, scope, chunk_id("Ana lives in Lisbon"))
    assert record.text == "Ana lives in Lisbon"
    assert record.metadata == {"topic": "home"}
    assert record.scope == scope
    assert record.status is Status.ACTIVE
    assert record.valid_at is None and record.invalid_at is None
    assert [n.node_id for n in store.get_nodes(scope, ["bob", "ana"])] == ["ana", "bob"]
    (edge,) = store.get_edges(scope, [edge_id("ana", "knows", "bob")])
    assert (edge.source, edge.relation, edge.target) == ("ana", "knows", "bob")


def test_commit_timestamp_is_created_at_of_inserted_rows(
    store: MemoryStore, scope: ScopeRef
) -> None:
    result = commit_items(
        store,
        scope,
        chunks=[ChunkInput(text="first words")],
        nodes=[NodeInput(node_id="ana"), NodeInput(node_id="bob")],
        edges=[EdgeInput(source="ana", relation="knows", target="bob")],
    )
    stamp = result.commit_timestamp
    assert stamp.tzinfo is not None and stamp.utcoffset() is not None
    assert one_chunk(store, scope, chunk_id("first words")).created_at == stamp
    assert {n.created_at for n in store.get_nodes(scope, ["ana", "bob"])} == {stamp}
    (edge,) = store.get_edges(scope, [edge_id("ana", "knows", "bob")])
    assert edge.created_at == stamp


def test_commit_timestamps_increase(store: MemoryStore, scope: ScopeRef) -> None:
    first = commit_items(store, scope, chunks=[ChunkInput(text="one")])
    second = commit_items(store, scope, chunks=[ChunkInput(text="two")])
    assert second.commit_timestamp > first.commit_timestamp


def test_embedding_round_trips(store: MemoryStore, scope: ScopeRef) -> None:
    commit_items(store, scope, chunks=[ChunkInput(text="vectors are stored")])
    record = one_chunk(store, scope, chunk_id("vectors are stored"))
    assert record.embedding is not None
    assert record.embedding == pytest.approx(EMBEDDER.embed("vectors are stored"), abs=1e-6)


def test_every_record_field_round_trips(store: MemoryStore, scope: ScopeRef) -> None:
    record = MemoryRecord(
        id="mem_full",
        scope=scope,
        key="favourite-drink",
        revision=3,
        content_hash="h",
        text="Ana prefers green tea",
        summary="tea",
        about="ana",
        when_to_use="drinks",
        type="preference",
        metadata={"a": "1", "jennah.source_step": "step-1"},
        strength="hard",
        pin=True,
        authority="user_explicit",
        confidence=0.75,
        sensitivity="health",
        valid_at=at(2024, 5, 6),
        valid_until=at(2031),
        durability="seasonal",
        reinforcement_count=4,
        last_reinforced_at=at(2025, 2, 3),
        supersedes="mem_old",
        embedding=EMBEDDER.embed("Ana prefers green tea"),
    )
    result = store.apply(CommitPlan(scope=scope, chunks=[record]))
    stored = one_chunk(store, scope, "mem_full")
    expected = record.model_copy(
        update={"created_at": result.commit_timestamp, "updated_at": result.commit_timestamp}
    )
    assert stored.model_dump(exclude={"embedding"}) == expected.model_dump(exclude={"embedding"})


def test_plan_failing_on_its_last_closure_writes_nothing(
    store: MemoryStore, scope: ScopeRef
) -> None:
    commit_items(store, scope, chunks=[ChunkInput(text="old fact", valid_at=at(2024))])
    old = chunk_id("old fact", at(2024))
    with pytest.raises(NotFound) as raised:
        commit_items(
            store,
            scope,
            chunks=[ChunkInput(text="brand new chunk")],
            nodes=[NodeInput(node_id="ana"), NodeInput(node_id="bob")],
            edges=[EdgeInput(source="ana", relation="knows", target="bob")],
            supersessions=[
                SupersessionInput(
                    chunk_id=old, replacement_chunk=ChunkInput(text="new fact", valid_at=at(2025))
                ),
                SupersessionInput(
                    chunk_id="chk_missing", replacement_chunk=ChunkInput(text="never written")
                ),
            ],
        )
    assert "chk_missing" in str(raised.value)
    assert (
        store.get_chunks(scope, [chunk_id("brand new chunk"), chunk_id("new fact", at(2025))]) == []
    )
    still_open = one_chunk(store, scope, old)
    assert still_open.invalid_at is None and still_open.superseded_by is None
    assert still_open.status is Status.ACTIVE
    assert store.find_nodes(scope, [], 100) == []
    assert store.edges_touching(scope, ["ana", "bob"], [], Direction.ANY, None) == []
    assert search_ids(store, scope, "fact") == [old]


def test_store_plan_with_missing_closure_target_writes_nothing(
    store: MemoryStore, scope: ScopeRef
) -> None:
    plan = CommitPlan(
        scope=scope,
        chunks=[
            MemoryRecord(
                id=chunk_id("alpha"), scope=scope, text="alpha", embedding=EMBEDDER.embed("alpha")
            )
        ],
        nodes=[GraphNode(node_id="ana"), GraphNode(node_id="bob")],
        edges=[
            GraphEdge(
                edge_id=edge_id("ana", "knows", "bob"), source="ana", relation="knows", target="bob"
            )
        ],
        edge_closures=[Closure(target_id="edg_missing", invalid_at=NOW, superseded_by="x")],
    )
    with pytest.raises(NotFound, match="edg_missing"):
        store.apply(plan)
    _nothing_visible(store, scope, [chunk_id("alpha")])


def test_plan_failing_a_precondition_writes_nothing(store: MemoryStore, scope: ScopeRef) -> None:
    commit_items(store, scope, chunks=[ChunkInput(text="valid from 2025", valid_at=at(2025))])
    target = chunk_id("valid from 2025", at(2025))
    with pytest.raises(FailedPrecondition):
        commit_items(
            store,
            scope,
            chunks=[ChunkInput(text="side chunk")],
            nodes=[NodeInput(node_id="ana")],
            supersessions=[
                SupersessionInput(
                    chunk_id=target,
                    replacement_chunk=ChunkInput(text="too early", valid_at=at(2024)),
                )
            ],
        )
    assert store.get_chunks(scope, [chunk_id("side chunk"), chunk_id("too early", at(2024))]) == []
    assert store.get_nodes(scope, ["ana"]) == []


def test_identical_commit_twice_keeps_one_row(store: MemoryStore, scope: ScopeRef) -> None:
    text = "Ana lives in Lisbon"
    first = commit_items(store, scope, chunks=[ChunkInput(text=text, metadata={"v": "1"})])
    second = commit_items(
        store, scope, chunks=[ChunkInput(text=text, metadata={"w": "2", "x": "3"})]
    )
    rows = store.list_chunks(scope, None, 100, 0)
    assert [r.id for r in rows] == [chunk_id(text)]
    (row,) = rows
    assert row.created_at == first.commit_timestamp
    assert row.updated_at == second.commit_timestamp
    assert row.metadata == {"w": "2", "x": "3"}
    assert search_ids(store, scope, "Lisbon") == [chunk_id(text)]


def test_rewriting_a_closed_chunk_keeps_its_window(store: MemoryStore, scope: ScopeRef) -> None:
    old = ChunkInput(text="works at Acme", valid_at=at(2023), metadata={"v": "1"})
    commit_items(store, scope, chunks=[old])
    commit_items(
        store,
        scope,
        supersessions=[
            SupersessionInput(
                chunk_id=chunk_id(old.text, old.valid_at),
                replacement_chunk=ChunkInput(text="works at Initech", valid_at=at(2024)),
            )
        ],
    )
    commit_items(store, scope, chunks=[old.model_copy(update={"metadata": {"v": "2"}})])
    row = one_chunk(store, scope, chunk_id(old.text, old.valid_at))
    assert row.metadata == {"v": "2"}
    assert row.invalid_at == at(2024)
    assert row.superseded_by == chunk_id("works at Initech", at(2024))
    assert row.status is Status.SUPERSEDED
    assert row.valid_at == at(2023)


def test_node_rewrite_is_idempotent(store: MemoryStore, scope: ScopeRef) -> None:
    node = NodeInput(node_id="ana", label="Ana", node_type="person", properties={"k": "v"})
    first = commit_items(store, scope, nodes=[node])
    commit_items(store, scope, nodes=[node])
    (stored,) = store.find_nodes(scope, [], 100)
    assert (stored.label, stored.node_type, stored.properties) == ("Ana", "person", {"k": "v"})
    assert stored.created_at == first.commit_timestamp
