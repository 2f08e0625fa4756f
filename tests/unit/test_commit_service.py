"""memory:commit's service layer: validation and the plan it hands the store."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

import pytest

from jennah.adapters.embedding.hashing import HashingEmbedder
from jennah.domain import rules
from jennah.domain.models import CommitPlan, CommitResult, GraphNode, MemoryRecord, ScopeRef
from jennah.errors import InvalidArgument, NotFound
from jennah.services.commands import (
    ChunkInput,
    CommitCommand,
    EdgeInput,
    NodeInput,
    SupersessionInput,
)
from jennah.services.commit import MAX_COMMIT_ITEMS, commit

SCOPE = ScopeRef(enterprise_id="ent", scope_id="bot")
NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


class CapturingStore:
    """Records the plan it is asked to apply; knows the nodes it is given."""

    def __init__(self, nodes: Sequence[str] = ()) -> None:
        self.plans: list[CommitPlan] = []
        self.nodes = set(nodes)

    def apply(self, plan: CommitPlan) -> CommitResult:
        self.plans.append(plan)
        return CommitResult(commit_timestamp=NOW, chunks_written=len(plan.chunks))

    def get_nodes(self, scope: ScopeRef, node_ids: Sequence[str]) -> list[GraphNode]:
        return [GraphNode(node_id=n) for n in node_ids if n in self.nodes]

    def get_chunks(self, scope: ScopeRef, ids: Sequence[str]) -> list[MemoryRecord]:
        return []  # every chunk is new

    def get_scope(self, scope: ScopeRef) -> None:
        return None  # so the lifecycle pass after a commit finds no scope and writes nothing


def run(command: CommitCommand, store: CapturingStore | None = None) -> CommitPlan:
    store = store or CapturingStore()
    commit(command, store, HashingEmbedder(), lambda: NOW)  # type: ignore[arg-type]
    return store.plans[-1]


def test_chunks_get_content_derived_ids_and_unit_embeddings() -> None:
    plan = run(CommitCommand(scope=SCOPE, chunks=[ChunkInput(text="Ana lives in Lisbon.")]))
    (chunk,) = plan.chunks
    assert chunk.id == rules.chunk_id("Ana lives in Lisbon.", None)
    assert chunk.content_hash == rules.content_hash("Ana lives in Lisbon.")
    assert chunk.scope == SCOPE
    assert chunk.embedding is not None and len(chunk.embedding) == 384
    assert abs(sum(v * v for v in chunk.embedding) - 1.0) < 1e-9


def test_identical_chunks_in_one_commit_are_written_once() -> None:
    same = ChunkInput(text="x", metadata={"a": "1"})
    plan = run(CommitCommand(scope=SCOPE, chunks=[same, same]))
    assert len(plan.chunks) == 1


def test_empty_commit_is_refused() -> None:
    store = CapturingStore()
    with pytest.raises(InvalidArgument, match="empty"):
        run(CommitCommand(scope=SCOPE), store)
    assert store.plans == []


def test_item_bound() -> None:
    chunks = [ChunkInput(text=f"t{i}") for i in range(MAX_COMMIT_ITEMS + 1)]
    with pytest.raises(InvalidArgument, match=f"at most {MAX_COMMIT_ITEMS}"):
        run(CommitCommand(scope=SCOPE, chunks=chunks))
    run(CommitCommand(scope=SCOPE, chunks=chunks[:MAX_COMMIT_ITEMS]))


@pytest.mark.parametrize(
    ("chunk", "field"),
    [
        (ChunkInput(text="  "), "chunks[1].text"),
        (ChunkInput(text="x" * (rules.MAX_TEXT_LENGTH + 1)), "chunks[1].text"),
        (ChunkInput(text="x", metadata={"bad key": "v"}), "chunks[1].metadata.bad key"),
    ],
)
def test_bad_chunk_names_its_field_and_writes_nothing(chunk: ChunkInput, field: str) -> None:
    store = CapturingStore()
    with pytest.raises(InvalidArgument) as err:
        run(CommitCommand(scope=SCOPE, chunks=[ChunkInput(text="fine"), chunk]), store)
    assert err.value.metadata["field"] == field
    assert store.plans == []


def test_bad_node_class_and_relation_are_refused() -> None:
    with pytest.raises(InvalidArgument, match=r"nodes\[0\]\.nodeType"):
        run(CommitCommand(scope=SCOPE, nodes=[NodeInput(node_id="a", node_type="Per son")]))
    with pytest.raises(InvalidArgument, match=r"edges\[0\]\.relation"):
        run(
            CommitCommand(
                scope=SCOPE,
                nodes=[NodeInput(node_id="a"), NodeInput(node_id="b")],
                edges=[EdgeInput(source="a", relation="knows well", target="b")],
            )
        )


def test_empty_node_class_is_stored_as_no_class() -> None:
    plan = run(CommitCommand(scope=SCOPE, nodes=[NodeInput(node_id="a", node_type="")]))
    assert plan.nodes[0].node_type is None


def test_edge_endpoints_must_exist_in_commit_or_scope() -> None:
    edge = EdgeInput(source="a", relation="knows", target="b")
    with pytest.raises(NotFound, match="'b'"):
        run(CommitCommand(scope=SCOPE, nodes=[NodeInput(node_id="a")], edges=[edge]))
    plan = run(
        CommitCommand(scope=SCOPE, nodes=[NodeInput(node_id="a")], edges=[edge]),
        CapturingStore(nodes=["b"]),
    )
    assert plan.edges[0].edge_id == rules.edge_id("a", "knows", "b", None)


def test_supersession_without_valid_at_closes_at_receipt_time() -> None:
    sup = SupersessionInput(chunk_id="chk_old", replacement_chunk=ChunkInput(text="new"))
    plan = run(CommitCommand(scope=SCOPE, supersessions=[sup]))
    (supersession,) = plan.chunk_supersessions
    (replacement,) = plan.chunks
    assert supersession.target_id == "chk_old"
    assert supersession.invalid_at == NOW
    assert replacement.valid_at == NOW
    assert supersession.superseded_by == replacement.id == rules.chunk_id("new", NOW)
    assert replacement.supersedes == "chk_old"


def test_supersession_uses_replacement_valid_at_as_boundary() -> None:
    when = datetime(2025, 5, 1, tzinfo=UTC)
    sup = SupersessionInput(
        edge_id="edg_old",
        replacement_edge=EdgeInput(source="a", relation="owns", target="t", valid_at=when),
    )
    plan = run(CommitCommand(scope=SCOPE, supersessions=[sup]), CapturingStore(nodes=["a", "t"]))
    (supersession,) = plan.edge_supersessions
    assert supersession.invalid_at == when
    assert plan.edges[0].supersedes == "edg_old"


@pytest.mark.parametrize(
    "sup",
    [
        SupersessionInput(replacement_chunk=ChunkInput(text="x")),
        SupersessionInput(chunk_id="c", edge_id="e", replacement_chunk=ChunkInput(text="x")),
        SupersessionInput(chunk_id="c"),
        SupersessionInput(edge_id="e"),
    ],
)
def test_malformed_supersession_is_refused(sup: SupersessionInput) -> None:
    with pytest.raises(InvalidArgument, match=r"supersessions\[0\]"):
        run(CommitCommand(scope=SCOPE, supersessions=[sup]))


def test_two_supersessions_of_one_target_in_one_commit_are_refused() -> None:
    sups = [
        SupersessionInput(chunk_id="c", replacement_chunk=ChunkInput(text="x")),
        SupersessionInput(chunk_id="c", replacement_chunk=ChunkInput(text="y")),
    ]
    with pytest.raises(InvalidArgument, match=r"supersessions\[1\]"):
        run(CommitCommand(scope=SCOPE, supersessions=sups))
