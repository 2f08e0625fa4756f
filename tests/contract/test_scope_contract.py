"""Contract: the scope registry, and destroying a scope.

A scope is registered by the first commit whose plan carries a registration
(or by a plan carrying nothing else); a later registration leaves the first
one as it is. Destroying a scope erases its registration and every row of it
in every table, counted straight from the database, and nothing of any other
scope: not of a neighbour in the same enterprise, not of a scope with the same
id in another enterprise.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from jennah.domain.models import (
    BriefVariant,
    CommitPlan,
    CommitResult,
    Direction,
    MemoryRecord,
    ScopeRecord,
    ScopeRef,
    Supersession,
)
from jennah.domain.suppression import Suppression
from jennah.errors import InvalidArgument, NotFound
from jennah.ports.store import MemoryStore
from jennah.services import keyed
from jennah.services.commands import ChunkInput, EdgeInput, NodeInput, SupersessionInput
from tests.contract.conftest import (
    BOOKKEEPING_TABLES,
    EMBEDDER,
    NOW,
    at,
    chunk_id,
    commit_items,
    edge_id,
    keyword_index_orphans,
    keyword_index_size,
    new_scope,
    row_counts,
    search_ids,
)
from tests.contract.test_claims_contract import claims_plan, full_claim
from tests.contract.test_ledger_contract import STEP, formation_plan


def registration(scope: ScopeRef, kind: str = "agent", by: str = "user:ana") -> ScopeRecord:
    return ScopeRecord(scope=scope, kind=kind, created_by=by)


def register(
    store: MemoryStore, scope: ScopeRef, kind: str = "agent", by: str = "user:ana"
) -> CommitResult:
    """A plan that carries only a registration."""
    return store.apply(CommitPlan(scope=scope, registration=registration(scope, kind, by)))


def _text_chunk(scope: ScopeRef, text: str) -> MemoryRecord:
    return MemoryRecord(id=chunk_id(text), scope=scope, text=text, embedding=EMBEDDER.embed(text))


# -- registration ----------------------------------------------------------------


def test_an_unknown_scope_is_not_registered(store: MemoryStore) -> None:
    scope = new_scope()
    assert store.get_scope(scope) is None
    assert store.list_scopes(scope.enterprise_id) == []


def test_a_plan_without_registration_registers_nothing(store: MemoryStore, scope: ScopeRef) -> None:
    commit_items(store, scope, chunks=[ChunkInput(text="unregistered")])
    assert store.get_scope(scope) is None
    assert store.list_scopes(scope.enterprise_id) == []


def test_the_first_write_registers_kind_creator_and_commit_time(
    store: MemoryStore, scope: ScopeRef
) -> None:
    plan = CommitPlan(
        scope=scope,
        registration=registration(scope, "subject", "api_key:k1"),
        chunks=[_text_chunk(scope, "first words")],
    )
    result = store.apply(plan)
    assert store.get_scope(scope) == ScopeRecord(
        scope=scope, kind="subject", created_at=result.commit_timestamp, created_by="api_key:k1"
    )
    assert [r.id for r in store.list_chunks(scope, None, 10, 0)] == [chunk_id("first words")]


def test_a_plan_with_only_a_registration_registers_and_writes_nothing_else(
    store: MemoryStore, scope: ScopeRef
) -> None:
    result = register(store, scope, "agent", "user:bo")
    assert store.get_scope(scope) == ScopeRecord(
        scope=scope, kind="agent", created_at=result.commit_timestamp, created_by="user:bo"
    )
    assert store.list_chunks(scope, None, 10, 0) == []
    assert store.find_nodes(scope, [], 10) == []


def test_a_later_registration_leaves_the_first_as_it_is(
    store: MemoryStore, scope: ScopeRef
) -> None:
    first = register(store, scope, "agent", "user:ana")
    store.apply(
        CommitPlan(
            scope=scope,
            registration=registration(scope, "subject", "user:bo"),
            chunks=[_text_chunk(scope, "later words")],
        )
    )
    register(store, scope, "subject", "api_key:k2")
    assert store.get_scope(scope) == ScopeRecord(
        scope=scope, kind="agent", created_at=first.commit_timestamp, created_by="user:ana"
    )
    assert [r.id for r in store.list_chunks(scope, None, 10, 0)] == [chunk_id("later words")]


def test_the_registration_commits_with_the_write_or_not_at_all(
    store: MemoryStore, scope: ScopeRef
) -> None:
    plan = CommitPlan(
        scope=scope,
        registration=registration(scope),
        chunks=[_text_chunk(scope, "never written")],
        chunk_supersessions=[
            Supersession(target_id="chk_missing", invalid_at=NOW, superseded_by="x")
        ],
    )
    with pytest.raises(NotFound):
        store.apply(plan)
    assert store.get_scope(scope) is None
    assert store.list_chunks(scope, None, 10, 0) == []


@pytest.mark.parametrize(
    ("record", "field"),
    [
        (lambda scope: registration(new_scope(scope.enterprise_id)), "registration.scope"),
        (lambda scope: registration(new_scope()), "registration.scope"),
        (lambda scope: registration(scope, kind="workspace"), "registration.kind"),
    ],
)
def test_a_registration_must_name_the_plan_scope_and_a_kind(
    store: MemoryStore, scope: ScopeRef, record: Any, field: str
) -> None:
    bad: ScopeRecord = record(scope)
    plan = CommitPlan(scope=scope, registration=bad, chunks=[_text_chunk(scope, "nope")])
    with pytest.raises(InvalidArgument) as raised:
        store.apply(plan)
    assert raised.value.metadata["field"] == field
    assert store.get_scope(scope) is None
    assert store.get_scope(bad.scope) is None
    assert store.list_chunks(scope, None, 10, 0) == []


def test_list_scopes_is_ordered_by_scope_id_and_confined_to_the_enterprise(
    store: MemoryStore,
) -> None:
    enterprise, other = f"ent-{uuid.uuid4().hex}", f"ent-{uuid.uuid4().hex}"
    scopes = {name: ScopeRef(enterprise_id=enterprise, scope_id=name) for name in ("c", "a", "b")}
    kinds = {"a": "agent", "b": "subject", "c": "agent"}
    stamps = {
        name: register(store, scope, kinds[name]).commit_timestamp for name, scope in scopes.items()
    }
    elsewhere = ScopeRef(enterprise_id=other, scope_id="a")
    register(store, elsewhere, "subject", "user:zed")
    commit_items(
        store,
        ScopeRef(enterprise_id=enterprise, scope_id="unregistered"),
        chunks=[ChunkInput(text="rows but no registration")],
    )
    assert store.list_scopes(enterprise) == [
        ScopeRecord(
            scope=scopes[name], kind=kinds[name], created_at=stamps[name], created_by="user:ana"
        )
        for name in ("a", "b", "c")
    ]
    assert [r.scope for r in store.list_scopes(other)] == [elsewhere]
    assert store.list_scopes(f"ent-{uuid.uuid4().hex}") == []


def test_scopes_are_listed_page_by_page_after_a_key(store: MemoryStore) -> None:
    enterprise = f"ent-{uuid.uuid4().hex}"
    names = ["a", "a.b", "a:b", "a_b", "b", "b-1", "c"]
    for name in reversed(names):
        register(store, ScopeRef(enterprise_id=enterprise, scope_id=name))
    register(store, ScopeRef(enterprise_id=f"ent-{uuid.uuid4().hex}", scope_id="a.c"))

    def ids(after: str | None = None, limit: int | None = None) -> list[str]:
        return [r.scope.scope_id for r in store.list_scopes(enterprise, after, limit)]

    assert ids() == sorted(names) == names  # byte order
    assert ids(limit=3) == names[:3]
    assert ids(after="a.b") == names[2:]
    assert ids(after="a.b", limit=2) == ["a:b", "a_b"]
    assert ids(after="a.c") == names[2:]  # a key that is not there
    assert ids(after="c") == [] and ids(after="", limit=1) == ["a"]
    pages, after = [], None
    while page := ids(after, 2):
        pages.append(page)
        after = page[-1]
    assert pages == [names[0:2], names[2:4], names[4:6], names[6:]]


# -- destroy -------------------------------------------------------------------------

WORKS_AT_ACME = ChunkInput(text="Ana works at Acme", valid_at=at(2024))
WORKS_AT_INITECH = ChunkInput(text="Ana works at Initech", valid_at=at(2025))
EMPLOYED = EdgeInput(source="ana", relation="works_at", target="acme", valid_at=at(2024))
MOVED = EdgeInput(source="ana", relation="works_at", target="initech", valid_at=at(2025))


def fill(store: MemoryStore, scope: ScopeRef, kind: str = "agent") -> None:
    """A scope holding a row in every table: registration, chunks with evidence and
    a supersession, links, nodes, edges with a supersession, a step, a formation key."""
    register(store, scope, kind)
    commit_items(
        store,
        scope,
        chunks=[
            ChunkInput(text="Ana likes green tea", metadata={"topic": "drinks"}),
            WORKS_AT_ACME,
        ],
        nodes=[
            NodeInput(node_id="ana", label="Ana", node_type="person"),
            NodeInput(node_id="acme", label="Acme", node_type="org"),
        ],
        edges=[EMPLOYED],
    )
    commit_items(
        store,
        scope,
        nodes=[NodeInput(node_id="initech", label="Initech", node_type="org")],
        supersessions=[
            SupersessionInput(
                chunk_id=chunk_id(WORKS_AT_ACME.text, WORKS_AT_ACME.valid_at),
                replacement_chunk=WORKS_AT_INITECH,
            ),
            SupersessionInput(
                edge_id=edge_id("ana", "works_at", "acme", at(2024)), replacement_edge=MOVED
            ),
        ],
    )
    store.apply(formation_plan(scope))
    store.apply(claims_plan(scope))
    store.apply(CommitPlan(scope=scope, chunks=[full_claim(scope)]))  # a claim of two nodes
    rule = Suppression(id="sup_0123456789abcdef", memory_id="c-1", text="Ana likes coffee")
    store.apply(CommitPlan(scope=scope, suppressions=[rule]))
    keyed.remember(store, scope, "project", "Harbor Studio website", 0)  # keyed memory
    keyed.remember(store, scope, "conventions", "British spelling", 0)
    keyed.link(store, scope, "project", "conventions")


def observe(store: MemoryStore, scope: ScopeRef) -> dict[str, Any]:
    """Everything the port shows of a scope."""
    nodes = store.find_nodes(scope, [], 1000)
    node_ids = ["ana", "acme", "initech", *(n.node_id for n in nodes)]
    edges = store.edges_touching(scope, node_ids, [], Direction.ANY, None)
    chunks = store.list_chunks(scope, None, 1000, 0)
    return {
        "registration": store.get_scope(scope),
        "chunks": chunks,
        "chunks by id": store.get_chunks(scope, [c.id for c in chunks] + [chunk_id("Ana")]),
        "search": search_ids(store, scope, "Ana works tea Lisbon", top_k=100),
        "nodes": nodes,
        "nodes by id": store.get_nodes(scope, node_ids),
        "edges": edges,
        "edges by id": store.get_edges(scope, [e.edge_id for e in edges]),
        "step": store.get_step(scope, STEP.step_id),
        "evidence": store.list_evidence(scope, [c.id for c in chunks]),
        "brief": store.get_brief(scope, BriefVariant.FULL),
        "change log": store.list_change_log(scope, 1000),
        "suppressions": store.list_suppressions(scope, None, 1000),
        "keyed memories": store.list_keyed(scope, 0, 1000),
    }


EMPTY: dict[str, Any] = {
    "registration": None,
    "chunks": [],
    "chunks by id": [],
    "search": [],
    "nodes": [],
    "nodes by id": [],
    "edges": [],
    "edges by id": [],
    "step": None,
    "evidence": [],
    "brief": None,
    "change log": [],
    "suppressions": [],
    "keyed memories": [],
}


@pytest.fixture
def three(store: MemoryStore) -> dict[str, ScopeRef]:
    """The scope to destroy, a neighbour in its enterprise, and a scope with the same
    id in another enterprise; all three full."""
    enterprise, scope_id = f"ent-{uuid.uuid4().hex}", f"scope-{uuid.uuid4().hex}"
    named = {
        "target": ScopeRef(enterprise_id=enterprise, scope_id=scope_id),
        "neighbour": ScopeRef(enterprise_id=enterprise, scope_id=f"scope-{uuid.uuid4().hex}"),
        "twin": ScopeRef(enterprise_id=f"ent-{uuid.uuid4().hex}", scope_id=scope_id),
    }
    for scope in named.values():
        fill(store, scope)
    return named


def test_destroy_leaves_no_row_of_the_scope_in_any_table(
    store: MemoryStore, three: dict[str, ScopeRef]
) -> None:
    target = three["target"]
    before = {name: row_counts(store, scope) for name, scope in three.items()}
    seen = {name: observe(store, scope) for name, scope in three.items()}
    # the fill reaches every table, so an empty count after the destroy means something
    assert all(count > 0 for count in before["target"].values()), before["target"]
    index_size = keyword_index_size(store)

    erased = store.destroy_scope(target)

    after = row_counts(store, target)
    assert after == dict.fromkeys(before["target"], 0)
    assert erased == sum(
        count for table, count in before["target"].items() if table not in BOOKKEEPING_TABLES
    )
    for name in ("neighbour", "twin"):
        assert row_counts(store, three[name]) == before[name]
        assert observe(store, three[name]) == seen[name]
    if index_size is not None:  # SQLite's FTS5 index lost exactly the scope's entries
        assert keyword_index_size(store) == index_size - before["target"]["memory_records"]
    assert keyword_index_orphans(store) == 0
    assert observe(store, target) == EMPTY
    assert [r.scope for r in store.list_scopes(target.enterprise_id)] == [three["neighbour"]]
    assert [r.scope for r in store.list_scopes(three["twin"].enterprise_id)] == [three["twin"]]


def test_destroying_again_or_an_unknown_scope_erases_nothing(
    store: MemoryStore, three: dict[str, ScopeRef]
) -> None:
    assert store.destroy_scope(three["target"]) > 0
    assert store.destroy_scope(three["target"]) == 0
    assert store.destroy_scope(new_scope(three["target"].enterprise_id)) == 0
    assert observe(store, three["neighbour"])["registration"] is not None


def test_a_destroyed_scope_id_can_be_written_again_as_a_fresh_scope(
    store: MemoryStore, three: dict[str, ScopeRef]
) -> None:
    target = three["target"]
    assert search_ids(store, target, "Ana tea")  # a warm in-process index, where there is one
    store.destroy_scope(target)
    result = store.apply(
        CommitPlan(
            scope=target,
            registration=registration(target, "subject", "user:bo"),
            chunks=[_text_chunk(target, "a fresh start")],
        )
    )
    assert store.get_scope(target) == ScopeRecord(
        scope=target, kind="subject", created_at=result.commit_timestamp, created_by="user:bo"
    )
    assert [r.id for r in store.list_chunks(target, None, 100, 0)] == [chunk_id("a fresh start")]
    assert search_ids(store, target, "Ana tea fresh start", top_k=100) == [
        chunk_id("a fresh start")
    ]
    assert store.find_nodes(target, [], 100) == []
    # the old formation key is free again
    store.apply(formation_plan(target))
    step = store.get_step(target, STEP.step_id)
    assert step is not None and step.tool_input == STEP.tool_input


# -- adapter-specific ----------------------------------------------------------------


@pytest.mark.spanner
def test_spanner_destroys_a_large_scope_in_batches_then_in_one_final_transaction() -> None:
    """With a 2-row bound every table is thinned over several transactions; the
    outcome is the same as one transaction's."""
    from jennah.adapters.spanner.store import SpannerStore
    from tests.support.spanner_emulator import spanner_test_database

    store = SpannerStore(spanner_test_database(), destroy_rows_per_transaction=2)
    target = new_scope()
    neighbour = new_scope(target.enterprise_id)
    for scope in (target, neighbour):
        fill(store, scope)
    before, seen = row_counts(store, target), observe(store, neighbour)
    erased = store.destroy_scope(target)
    assert erased == sum(before.values())
    assert row_counts(store, target) == dict.fromkeys(before, 0)
    assert observe(store, target) == EMPTY
    assert observe(store, neighbour) == seen


def test_sqlite_a_recreated_scope_never_reuses_an_index_generation(tmp_path: Path) -> None:
    """Another process's vector index of the destroyed scope must not pass for the new
    scope's: generations restart above every generation the old scope reached."""
    from jennah.adapters.sqlite.store import SqliteStore

    searcher = SqliteStore(tmp_path / "memory.db")
    writer = SqliteStore(tmp_path / "memory.db")
    scope = new_scope()
    old = ["alpha words", "beta words", "gamma words"]
    new = ["delta words", "epsilon words", "zeta words"]
    commit_items(writer, scope, chunks=[ChunkInput(text=t) for t in old])
    assert sorted(search_ids(searcher, scope, "words")) == sorted(chunk_id(t) for t in old)
    writer.destroy_scope(scope)
    commit_items(writer, scope, chunks=[ChunkInput(text=t) for t in new])  # as many writes
    assert sorted(search_ids(searcher, scope, "words")) == sorted(chunk_id(t) for t in new)
    searcher.close()
    writer.close()


def test_sqlite_a_version_1_file_registers_its_scopes_as_agent_workspaces(
    tmp_path: Path,
) -> None:
    from pysqlite3 import dbapi2

    from jennah.adapters.sqlite import schema
    from jennah.adapters.sqlite.store import SqliteStore

    path = tmp_path / "memory.db"
    store = SqliteStore(path)
    with_chunks, with_nodes = new_scope(), new_scope()
    first = commit_items(store, with_chunks, chunks=[ChunkInput(text="old words")])
    commit_items(store, with_chunks, chunks=[ChunkInput(text="newer words")])
    only_nodes = commit_items(store, with_nodes, nodes=[NodeInput(node_id="n", label="N")])
    store.close()
    conn = dbapi2.connect(str(path))  # back to version 1: no registry
    conn.executescript("DROP TABLE scopes; DROP TABLE generation_floor; PRAGMA user_version = 1;")
    conn.close()

    store = SqliteStore(path)
    assert store.list_scopes(with_chunks.enterprise_id) == [
        ScopeRecord(scope=with_chunks, kind="agent", created_at=first.commit_timestamp)
    ]
    assert store.get_scope(with_nodes) == ScopeRecord(
        scope=with_nodes, kind="agent", created_at=only_nodes.commit_timestamp
    )
    commit_items(store, with_chunks, chunks=[ChunkInput(text="after the upgrade")])
    assert len(store.list_chunks(with_chunks, None, 10, 0)) == 3
    # three chunks, the registration, and the two briefs of the pass after the last commit
    assert store.destroy_scope(with_chunks) == 6
    store.close()
    conn = dbapi2.connect(str(path))
    assert conn.execute("PRAGMA user_version").fetchone()[0] == schema.SCHEMA_VERSION
    conn.close()
