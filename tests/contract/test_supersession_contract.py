"""Contract: supersession closes a validity window; history stays queryable as of then."""

from __future__ import annotations

from datetime import datetime

import pytest

from jennah.domain.models import (
    Closure,
    CommitPlan,
    Direction,
    FilterOperator,
    MetadataFilter,
    ScopeRef,
    Status,
)
from jennah.errors import FailedPrecondition, NotFound
from jennah.ports.store import MemoryStore
from jennah.services.commands import (
    ChunkInput,
    EdgeInput,
    GraphQuery,
    NodeInput,
    SupersessionInput,
    Traversal,
)
from tests.contract.conftest import (
    NOW,
    at,
    chunk_id,
    commit_items,
    edge_id,
    graph,
    one_chunk,
    search_ids,
)

OLD = ChunkInput(text="Ana works at Acme", valid_at=at(2024))
NEW = ChunkInput(text="Ana works at Initech", valid_at=at(2025))
OLD_ID = chunk_id(OLD.text, OLD.valid_at)
NEW_ID = chunk_id(NEW.text, NEW.valid_at)


def _supersede(target: str, replacement: ChunkInput) -> SupersessionInput:
    return SupersessionInput(chunk_id=target, replacement_chunk=replacement)


@pytest.fixture
def superseded(store: MemoryStore, scope: ScopeRef) -> ScopeRef:
    commit_items(store, scope, chunks=[OLD])
    result = commit_items(store, scope, supersessions=[_supersede(OLD_ID, NEW)])
    assert (result.chunks_written, result.chunk_supersessions) == (1, 1)
    return scope


def test_supersession_closes_the_old_window_at_the_replacement_valid_at(
    store: MemoryStore, superseded: ScopeRef
) -> None:
    old = one_chunk(store, superseded, OLD_ID)
    assert old.invalid_at == at(2025)
    assert old.superseded_by == NEW_ID
    assert old.status is Status.SUPERSEDED
    assert old.valid_at == at(2024)
    new = one_chunk(store, superseded, NEW_ID)
    assert new.supersedes == OLD_ID
    assert new.valid_at == at(2025) and new.invalid_at is None
    assert new.status is Status.ACTIVE


def test_default_query_returns_only_the_replacement(
    store: MemoryStore, superseded: ScopeRef
) -> None:
    assert search_ids(store, superseded, "Ana works") == [NEW_ID]
    assert [r.id for r in store.list_chunks(superseded, NOW, 100, 0)] == [NEW_ID]


def test_query_before_the_boundary_returns_the_old_row(
    store: MemoryStore, superseded: ScopeRef
) -> None:
    assert search_ids(store, superseded, "Ana works", as_of=at(2024, 6)) == [OLD_ID]
    assert [r.id for r in store.list_chunks(superseded, at(2024, 6), 100, 0)] == [OLD_ID]


def test_boundary_instant_belongs_to_the_replacement(
    store: MemoryStore, superseded: ScopeRef
) -> None:
    assert search_ids(store, superseded, "Ana works", as_of=at(2025)) == [NEW_ID]
    assert [r.id for r in store.list_chunks(superseded, at(2025), 100, 0)] == [NEW_ID]


def test_plain_rewrite_of_a_replacement_keeps_its_lineage(
    store: MemoryStore, superseded: ScopeRef
) -> None:
    commit_items(store, superseded, chunks=[NEW])
    assert one_chunk(store, superseded, NEW_ID).supersedes == OLD_ID


def test_an_existing_chunk_can_become_the_replacement(store: MemoryStore, scope: ScopeRef) -> None:
    commit_items(store, scope, chunks=[OLD, NEW])
    assert one_chunk(store, scope, NEW_ID).supersedes is None
    result = commit_items(store, scope, supersessions=[_supersede(OLD_ID, NEW)])
    assert result.chunk_supersessions == 1
    assert one_chunk(store, scope, NEW_ID).supersedes == OLD_ID
    assert one_chunk(store, scope, OLD_ID).superseded_by == NEW_ID
    assert search_ids(store, scope, "Ana works") == [NEW_ID]


def test_nothing_valid_before_the_first_window(store: MemoryStore, superseded: ScopeRef) -> None:
    assert search_ids(store, superseded, "Ana works", as_of=at(2023)) == []
    assert store.list_chunks(superseded, at(2023), 100, 0) == []
    assert {r.id for r in store.list_chunks(superseded, None, 100, 0)} == {OLD_ID, NEW_ID}


def test_second_different_supersession_fails_and_writes_nothing(
    store: MemoryStore, superseded: ScopeRef
) -> None:
    other = ChunkInput(text="Ana works at Globex", valid_at=at(2026))
    with pytest.raises(FailedPrecondition) as raised:
        commit_items(store, superseded, supersessions=[_supersede(OLD_ID, other)])
    assert raised.value.reason == "ALREADY_SUPERSEDED"
    assert store.get_chunks(superseded, [chunk_id(other.text, other.valid_at)]) == []
    old = one_chunk(store, superseded, OLD_ID)
    assert (old.invalid_at, old.superseded_by) == (at(2025), NEW_ID)


def test_identical_retried_supersession_is_a_no_op(
    store: MemoryStore, superseded: ScopeRef
) -> None:
    before = one_chunk(store, superseded, OLD_ID)
    result = commit_items(store, superseded, supersessions=[_supersede(OLD_ID, NEW)])
    assert (result.chunks_written, result.chunk_supersessions) == (1, 0)
    after = one_chunk(store, superseded, OLD_ID)
    assert (after.invalid_at, after.superseded_by, after.status) == (
        before.invalid_at,
        before.superseded_by,
        before.status,
    )
    assert len(store.list_chunks(superseded, None, 100, 0)) == 2


@pytest.mark.parametrize("replacement_valid_at", [at(2023), at(2024)])
def test_closure_at_or_before_the_target_valid_at_fails(
    store: MemoryStore, scope: ScopeRef, replacement_valid_at: datetime
) -> None:
    commit_items(store, scope, chunks=[OLD])
    early = ChunkInput(text="Ana works nowhere", valid_at=replacement_valid_at)
    with pytest.raises(FailedPrecondition) as raised:
        commit_items(store, scope, supersessions=[_supersede(OLD_ID, early)])
    assert raised.value.reason == "SUPERSESSION_BEFORE_VALID_AT"
    assert store.get_chunks(scope, [chunk_id(early.text, early.valid_at)]) == []
    assert one_chunk(store, scope, OLD_ID).invalid_at is None


def test_supersession_without_valid_at_closes_at_receipt_time(
    store: MemoryStore, scope: ScopeRef
) -> None:
    commit_items(store, scope, chunks=[OLD])
    commit_items(store, scope, supersessions=[_supersede(OLD_ID, ChunkInput(text="retired"))])
    assert one_chunk(store, scope, OLD_ID).invalid_at == NOW
    assert search_ids(store, scope, "retired") == [chunk_id("retired", NOW)]


def test_closing_a_missing_chunk_is_not_found(store: MemoryStore, scope: ScopeRef) -> None:
    with pytest.raises(NotFound, match="chk_nope"):
        store.apply(
            CommitPlan(
                scope=scope,
                chunk_closures=[Closure(target_id="chk_nope", invalid_at=NOW, superseded_by="x")],
            )
        )


# -- edges ------------------------------------------------------------------------

WORKED = EdgeInput(source="ana", relation="works_at", target="acme", valid_at=at(2024))
WORKS = EdgeInput(source="ana", relation="works_at", target="initech", valid_at=at(2025))
WORKED_ID = edge_id("ana", "works_at", "acme", at(2024))
WORKS_ID = edge_id("ana", "works_at", "initech", at(2025))


def _supersede_edge(target: str, replacement: EdgeInput) -> SupersessionInput:
    return SupersessionInput(edge_id=target, replacement_edge=replacement)


@pytest.fixture
def moved(store: MemoryStore, scope: ScopeRef) -> ScopeRef:
    commit_items(
        store,
        scope,
        nodes=[NodeInput(node_id=n) for n in ("ana", "acme", "initech", "globex")],
        edges=[WORKED],
    )
    result = commit_items(store, scope, supersessions=[_supersede_edge(WORKED_ID, WORKS)])
    assert (result.edges_written, result.edge_supersessions) == (1, 1)
    return scope


def _employers(store: MemoryStore, scope: ScopeRef, as_of: datetime | None = None) -> list[str]:
    result = graph(
        store,
        scope,
        GraphQuery(
            start_filters=[MetadataFilter(key="NodeId", values=["ana"])],
            traversal=Traversal(relations=["works_at"], depth=1),
            as_of_valid=as_of,
        ),
    )
    assert result.graph is not None
    return [r.node.node_id for r in result.graph.nodes if r.depth == 1]


def test_edge_supersession_closes_the_old_edge(store: MemoryStore, moved: ScopeRef) -> None:
    old, new = store.get_edges(moved, [WORKED_ID, WORKS_ID])  # ordered by edge id
    by_id = {old.edge_id: old, new.edge_id: new}
    assert by_id[WORKED_ID].invalid_at == at(2025)
    assert by_id[WORKED_ID].superseded_by == WORKS_ID
    assert by_id[WORKS_ID].supersedes == WORKED_ID
    assert by_id[WORKS_ID].invalid_at is None


def test_traversal_follows_the_edge_valid_at_the_instant(
    store: MemoryStore, moved: ScopeRef
) -> None:
    assert _employers(store, moved) == ["initech"]
    assert _employers(store, moved, at(2024, 6)) == ["acme"]
    assert _employers(store, moved, at(2025)) == ["initech"]
    assert _employers(store, moved, at(2023)) == []
    every = store.edges_touching(moved, ["ana"], ["works_at"], Direction.OUTBOUND, None)
    assert [e.edge_id for e in every] == sorted([WORKED_ID, WORKS_ID])


def test_second_different_edge_supersession_fails(store: MemoryStore, moved: ScopeRef) -> None:
    other = EdgeInput(source="ana", relation="works_at", target="globex", valid_at=at(2026))
    with pytest.raises(FailedPrecondition):
        commit_items(store, moved, supersessions=[_supersede_edge(WORKED_ID, other)])
    assert store.get_edges(moved, [edge_id("ana", "works_at", "globex", at(2026))]) == []


def test_identical_retried_edge_supersession_is_a_no_op(
    store: MemoryStore, moved: ScopeRef
) -> None:
    result = commit_items(store, moved, supersessions=[_supersede_edge(WORKED_ID, WORKS)])
    assert result.edge_supersessions == 0
    assert _employers(store, moved) == ["initech"]


def test_edge_closure_before_its_valid_at_fails(store: MemoryStore, moved: ScopeRef) -> None:
    early = EdgeInput(source="ana", relation="works_at", target="globex", valid_at=at(2024))
    with pytest.raises(FailedPrecondition):
        commit_items(store, moved, supersessions=[_supersede_edge(WORKS_ID, early)])
    assert store.get_edges(moved, [edge_id("ana", "works_at", "globex", at(2024))]) == []


def test_closing_a_missing_edge_is_not_found(store: MemoryStore, scope: ScopeRef) -> None:
    commit_items(store, scope, nodes=[NodeInput(node_id="ana"), NodeInput(node_id="acme")])
    with pytest.raises(NotFound):
        commit_items(
            store,
            scope,
            supersessions=[SupersessionInput(edge_id="edg_nope", replacement_edge=WORKED)],
        )
    assert store.edges_touching(scope, ["ana"], [], Direction.ANY, None) == []


def test_filters_apply_to_history_too(store: MemoryStore, superseded: ScopeRef) -> None:
    not_new = MetadataFilter(key="x", operator=FilterOperator.NOT_EQUALS, values=["1"])
    assert search_ids(store, superseded, "Ana", filters=[not_new], as_of=at(2024, 2)) == [OLD_ID]
