"""Property: random interleavings of tenants' commits, destroys and queries never
return another tenant's data.

Three tenants per example: A and B share a scope id in two enterprises, A and C
share an enterprise with two scope ids. They write from one small vocabulary,
so they write the same chunk ids, node ids, edge ids and step ids with
different contents. A model of what each tenant wrote predicts every answer
exactly; a row of another tenant in any answer fails the property.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jennah.adapters.sqlite.store import SqliteStore
from jennah.domain import rules
from jennah.domain.models import (
    CommitPlan,
    Direction,
    ExecutionLogStep,
    GraphEdge,
    GraphNode,
    MemoryRecord,
    MetadataFilter,
    ScopeRecord,
    ScopeRef,
)
from jennah.ports.store import MemoryStore
from tests.contract.conftest import EMBEDDER, NOW

TENANTS = ("A", "B", "C")
TEXTS = ("ana likes tea", "ana likes coffee", "bo works at acme", "the sky is blue")
NODE_IDS = ("ana", "bo", "acme")
RELATIONS = ("knows", "works_at")
STEP_IDS = ("step-1", "step-2")
OWNERS = ("x", "y")

_chunks = st.lists(st.tuples(st.sampled_from(TEXTS), st.sampled_from(OWNERS)), max_size=3)
_nodes = st.lists(st.sampled_from(NODE_IDS), max_size=2)
_edges = st.lists(
    st.tuples(st.sampled_from(NODE_IDS), st.sampled_from(RELATIONS), st.sampled_from(NODE_IDS)),
    max_size=2,
)


@dataclass(frozen=True)
class Commit:
    tenant: str
    register: str | None  # the kind to register, or None
    chunks: list[tuple[str, str]]  # (text, owner metadata value)
    nodes: list[str]
    edges: list[tuple[str, str, str]]
    step: str | None


@dataclass(frozen=True)
class Destroy:
    tenant: str


@dataclass(frozen=True)
class Query:
    tenant: str


_commit = st.builds(
    Commit,
    tenant=st.sampled_from(TENANTS),
    register=st.sampled_from([None, "agent", "subject"]),
    chunks=_chunks,
    nodes=_nodes,
    edges=_edges,
    step=st.sampled_from([None, *STEP_IDS]),
)
_operation = st.one_of(
    _commit,
    _commit,
    st.builds(Query, tenant=st.sampled_from(TENANTS)),
    st.builds(Query, tenant=st.sampled_from(TENANTS)),
    st.builds(Destroy, tenant=st.sampled_from(TENANTS)),
)
OPERATIONS = st.lists(_operation, min_size=1, max_size=8)


@dataclass
class Model:
    """What one tenant wrote (and did not destroy since)."""

    scope: ScopeRef
    chunks: dict[str, tuple[str, str]] = field(default_factory=dict)  # id -> (text, owner)
    nodes: dict[str, str] = field(default_factory=dict)  # node id -> label
    edges: dict[str, tuple[str, str, str]] = field(default_factory=dict)
    steps: dict[str, str] = field(default_factory=dict)  # step id -> tool input
    kind: str | None = None


def _world() -> dict[str, Model]:
    enterprise, other = f"ent-{uuid.uuid4().hex}", f"ent-{uuid.uuid4().hex}"
    scope_id = f"scope-{uuid.uuid4().hex}"
    return {
        "A": Model(ScopeRef(enterprise_id=enterprise, scope_id=scope_id)),
        "B": Model(ScopeRef(enterprise_id=other, scope_id=scope_id)),
        "C": Model(ScopeRef(enterprise_id=enterprise, scope_id=f"scope-{uuid.uuid4().hex}")),
    }


def _apply(store: MemoryStore, op: Commit, model: Model) -> None:
    scope, tag = model.scope, op.tenant
    records = {
        rules.chunk_id(text, None): MemoryRecord(
            id=rules.chunk_id(text, None),
            scope=scope,
            text=text,
            metadata={"owner": owner, "tenant": tag},
            embedding=EMBEDDER.embed(text),
        )
        for text, owner in op.chunks
    }
    nodes = {n: GraphNode(node_id=n, label=f"{n} of {tag}") for n in {*op.nodes}}
    for source, _, target in op.edges:  # an edge's ends are written with it
        for n in (source, target):
            nodes.setdefault(n, GraphNode(node_id=n, label=f"{n} of {tag}"))
    edges = {
        rules.edge_id(s, r, t, None): GraphEdge(
            edge_id=rules.edge_id(s, r, t, None),
            source=s,
            relation=r,
            target=t,
            properties={"tenant": tag},
        )
        for s, r, t in op.edges
    }
    steps = [] if op.step is None else [ExecutionLogStep(step_id=op.step, tool_input=tag)]
    registration = None if op.register is None else ScopeRecord(scope=scope, kind=op.register)
    store.apply(
        CommitPlan(
            scope=scope,
            registration=registration,
            chunks=list(records.values()),
            nodes=list(nodes.values()),
            edges=list(edges.values()),
            steps=steps,
        )
    )
    model.chunks |= {i: (r.text, r.metadata["owner"]) for i, r in records.items()}
    model.nodes |= {n: node.label for n, node in nodes.items()}
    model.edges |= {i: (e.source, e.relation, e.target) for i, e in edges.items()}
    model.steps |= {s.step_id: s.tool_input for s in steps}
    model.kind = model.kind or op.register


def _check(store: MemoryStore, world: dict[str, Model], tenant: str) -> None:
    """Every query of the port answers exactly what the model predicts for `tenant`."""
    model = world[tenant]
    scope = model.scope
    all_chunk_ids = sorted({rules.chunk_id(t, None) for t in TEXTS})
    all_edge_ids = sorted(
        rules.edge_id(s, r, t, None) for s in NODE_IDS for r in RELATIONS for t in NODE_IDS
    )
    expected_chunks = {i: (text, owner) for i, (text, owner) in model.chunks.items()}

    listed = store.list_chunks(scope, None, 100, 0)
    assert {r.id: (r.text, r.metadata["owner"]) for r in listed} == expected_chunks
    assert all(r.scope == scope for r in listed)
    fetched = store.get_chunks(scope, all_chunk_ids)
    assert [r.id for r in fetched] == sorted(expected_chunks)
    assert {r.metadata["tenant"] for r in listed + fetched} <= {tenant}
    hits = store.search_chunks(scope, EMBEDDER.embed("ana likes tea"), 100, [], NOW)
    assert {h.record.id for h in hits} == set(expected_chunks)
    owned = [MetadataFilter(key="owner", values=["x"])]
    filtered = store.search_chunks(scope, EMBEDDER.embed("sky"), 100, owned, NOW)
    assert {h.record.id for h in filtered} == {
        i for i, (_, owner) in expected_chunks.items() if owner == "x"
    }

    nodes = store.find_nodes(scope, [], 100)
    assert {n.node_id: n.label for n in nodes} == model.nodes
    assert store.get_nodes(scope, list(NODE_IDS)) == nodes
    touching = store.edges_touching(scope, list(NODE_IDS), [], Direction.ANY, None)
    assert {e.edge_id: (e.source, e.relation, e.target) for e in touching} == model.edges
    assert store.get_edges(scope, all_edge_ids) == touching
    for step_id in STEP_IDS:
        step = store.get_step(scope, step_id)
        assert (None if step is None else step.tool_input) == model.steps.get(step_id)

    registered = store.get_scope(scope)
    assert (None if registered is None else registered.kind) == model.kind
    assert registered is None or registered.scope == scope
    listed_scopes = store.list_scopes(scope.enterprise_id)
    assert [(r.scope, r.kind) for r in listed_scopes] == _listed(world, scope.enterprise_id)


def _listed(world: dict[str, Model], enterprise_id: str) -> list[tuple[ScopeRef, str]]:
    registered = [
        (m.scope, m.kind)
        for m in world.values()
        if m.kind is not None and m.scope.enterprise_id == enterprise_id
    ]
    return sorted(registered, key=lambda entry: entry[0].scope_id)


def _run(store: MemoryStore, operations: list[Any]) -> None:
    world = _world()
    for op in operations:
        model = world[op.tenant]
        if isinstance(op, Commit):
            _apply(store, op, model)
        elif isinstance(op, Destroy):
            store.destroy_scope(model.scope)
            world[op.tenant] = Model(model.scope)
        else:
            _check(store, world, op.tenant)
    for tenant in TENANTS:  # and at the end, every tenant
        _check(store, world, tenant)


def test_tenants_never_see_each_other(store: MemoryStore) -> None:
    examples = 150 if isinstance(store, SqliteStore) else 10

    @settings(
        max_examples=examples,
        derandomize=True,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
    @given(operations=OPERATIONS)
    def interleaving(operations: list[Any]) -> None:
        _run(store, operations)

    interleaving()


@pytest.mark.parametrize("tenant", TENANTS)
def test_the_model_sees_through_a_fixed_interleaving(store: MemoryStore, tenant: str) -> None:
    """A hand-written interleaving, so a broken model cannot pass the property vacuously."""
    world = _world()
    for name in TENANTS:
        _apply(
            store,
            Commit(
                name,
                "agent",
                [("ana likes tea", name.lower())],
                ["ana"],
                [("ana", "knows", "bo")],
                "step-1",
            ),
            world[name],
        )
    model = world[tenant]
    assert len(model.chunks) == 1 and len(model.edges) == 1 and model.kind == "agent"
    _check(store, world, tenant)
    (record,) = store.list_chunks(model.scope, None, 10, 0)
    assert record.metadata == {"owner": tenant.lower(), "tenant": tenant}
