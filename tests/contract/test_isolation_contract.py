"""Contract: no method reads or writes across enterprises or scopes."""

from __future__ import annotations

import uuid

import pytest

from jennah.domain.models import (
    Closure,
    CommitPlan,
    Direction,
    ExecutionLogStep,
    MetadataFilter,
    ScopeRef,
)
from jennah.errors import NotFound
from jennah.ports.store import MemoryStore
from jennah.services.commands import ChunkInput, EdgeInput, NodeInput
from tests.contract.conftest import EMBEDDER, NOW, chunk_id, commit_items, edge_id, search

SHARED_TEXT = "the same words in every scope"


@pytest.fixture
def scopes(store: MemoryStore) -> dict[str, ScopeRef]:
    """Three scopes: two in one enterprise, and one in another enterprise that
    reuses the first scope's id. Each holds the same chunk, node, edge and step ids."""
    enterprise, scope_id = f"ent-{uuid.uuid4().hex}", f"scope-{uuid.uuid4().hex}"
    named = {
        "a": ScopeRef(enterprise_id=enterprise, scope_id=scope_id),
        "b": ScopeRef(enterprise_id=enterprise, scope_id=f"scope-{uuid.uuid4().hex}"),
        "c": ScopeRef(enterprise_id=f"ent-{uuid.uuid4().hex}", scope_id=scope_id),
    }
    for name, scope in named.items():
        commit_items(
            store,
            scope,
            chunks=[
                ChunkInput(text=SHARED_TEXT, metadata={"owner": name}),
                ChunkInput(text=f"only in scope {name}", metadata={"owner": name}),
            ],
            nodes=[
                NodeInput(node_id="n", label=f"N {name}", node_type=f"type_{name}"),
                NodeInput(node_id="m", label=f"M {name}"),
            ],
            edges=[EdgeInput(source="n", relation="rel", target="m", properties={"owner": name})],
        )
        store.apply(CommitPlan(scope=scope, steps=[ExecutionLogStep(step_id="s", tool_input=name)]))
    return named


NAMES = ["a", "b", "c"]


@pytest.mark.parametrize("name", NAMES)
def test_chunks_are_confined(store: MemoryStore, scopes: dict[str, ScopeRef], name: str) -> None:
    scope = scopes[name]
    rows = store.list_chunks(scope, None, 100, 0)
    assert {r.text for r in rows} == {SHARED_TEXT, f"only in scope {name}"}
    assert {r.metadata["owner"] for r in rows} == {name}
    assert {r.scope for r in rows} == {scope}
    others = [chunk_id(f"only in scope {other}") for other in NAMES if other != name]
    assert store.get_chunks(scope, others) == []
    (shared,) = store.get_chunks(scope, [chunk_id(SHARED_TEXT)])
    assert shared.metadata == {"owner": name}


@pytest.mark.parametrize("name", NAMES)
def test_search_is_confined(store: MemoryStore, scopes: dict[str, ScopeRef], name: str) -> None:
    scope = scopes[name]
    hits = search(store, scope, "words scope only", top_k=100)
    assert {record_id for record_id, _ in hits} == {
        chunk_id(SHARED_TEXT),
        chunk_id(f"only in scope {name}"),
    }
    filtered = store.search_chunks(
        scope, EMBEDDER.embed(SHARED_TEXT), 100, [MetadataFilter(key="owner", values=NAMES)], NOW
    )
    assert {h.record.metadata["owner"] for h in filtered} == {name}


@pytest.mark.parametrize("name", NAMES)
def test_graph_is_confined(store: MemoryStore, scopes: dict[str, ScopeRef], name: str) -> None:
    scope = scopes[name]
    assert [(n.node_id, n.label) for n in store.find_nodes(scope, [], 100)] == [
        ("m", f"M {name}"),
        ("n", f"N {name}"),
    ]
    assert [n.node_type for n in store.get_nodes(scope, ["n"])] == [f"type_{name}"]
    typed = [MetadataFilter(key="NodeType", values=[f"type_{other}" for other in NAMES])]
    assert [n.node_id for n in store.find_nodes(scope, typed, 100)] == ["n"]
    for direction in Direction:
        edges = store.edges_touching(scope, ["n", "m"], [], direction, None)
        assert [e.properties for e in edges] == [{"owner": name}]
    (edge,) = store.get_edges(scope, [edge_id("n", "rel", "m")])
    assert edge.properties == {"owner": name}


@pytest.mark.parametrize("name", NAMES)
def test_steps_are_confined(store: MemoryStore, scopes: dict[str, ScopeRef], name: str) -> None:
    step = store.get_step(scopes[name], "s")
    assert step is not None and step.tool_input == name


def test_closures_cannot_reach_another_scope(
    store: MemoryStore, scopes: dict[str, ScopeRef]
) -> None:
    target = chunk_id("only in scope a")
    for name in ("b", "c"):
        with pytest.raises(NotFound):
            store.apply(
                CommitPlan(
                    scope=scopes[name],
                    chunk_closures=[Closure(target_id=target, invalid_at=NOW, superseded_by="x")],
                )
            )
    (row,) = store.get_chunks(scopes["a"], [target])
    assert row.invalid_at is None


def test_unknown_scope_sees_nothing(store: MemoryStore, scopes: dict[str, ScopeRef]) -> None:
    stranger = ScopeRef(enterprise_id=scopes["a"].enterprise_id, scope_id="scope-nobody")
    assert store.list_chunks(stranger, None, 100, 0) == []
    assert store.get_chunks(stranger, [chunk_id(SHARED_TEXT)]) == []
    assert store.search_chunks(stranger, EMBEDDER.embed(SHARED_TEXT), 10, [], NOW) == []
    assert store.find_nodes(stranger, [], 100) == []
    assert store.get_nodes(stranger, ["n", "m"]) == []
    assert store.edges_touching(stranger, ["n", "m"], [], Direction.ANY, None) == []
    assert store.get_edges(stranger, [edge_id("n", "rel", "m")]) == []
    assert store.get_step(stranger, "s") is None
