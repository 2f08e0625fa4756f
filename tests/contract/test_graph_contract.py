"""Contract: graph nodes (assign-once class), start filters and traversal."""

from __future__ import annotations

import pytest

from jennah.domain.models import Direction, FilterOperator, MetadataFilter, ScopeRef
from jennah.ports.store import MemoryStore
from jennah.services.commands import EdgeInput, GraphQuery, NodeInput, Traversal
from tests.contract.conftest import commit_items, edge_id, graph

EQ, NE, IN = FilterOperator.EQUALS, FilterOperator.NOT_EQUALS, FilterOperator.IN

#   ana -knows-> bob -knows-> carl
#   ana -lives_in-> lisbon
#   bob -works_at-> acme
NODES = [
    NodeInput(node_id="ana", label="Ana", node_type="person"),
    NodeInput(node_id="bob", label="Bob", node_type="person"),
    NodeInput(node_id="carl", label="Carl"),
    NodeInput(node_id="lisbon", label="Lisbon", node_type="city"),
    NodeInput(node_id="acme", label="Acme", node_type="company"),
]
EDGES = [
    EdgeInput(source="ana", relation="knows", target="bob"),
    EdgeInput(source="bob", relation="knows", target="carl"),
    EdgeInput(source="ana", relation="lives_in", target="lisbon"),
    EdgeInput(source="bob", relation="works_at", target="acme"),
]


@pytest.fixture
def people(store: MemoryStore, scope: ScopeRef) -> ScopeRef:
    commit_items(store, scope, nodes=NODES, edges=EDGES)
    return scope


def _reach(
    store: MemoryStore,
    scope: ScopeRef,
    start: str,
    direction: Direction,
    depth: int,
    relations: list[str] | None = None,
) -> dict[str, int]:
    result = graph(
        store,
        scope,
        GraphQuery(
            start_filters=[MetadataFilter(key="NodeId", values=[start])],
            traversal=Traversal(relations=relations or [], direction=direction, depth=depth),
        ),
    )
    assert result.graph is not None
    return {r.node.node_id: r.depth for r in result.graph.nodes}


def _start(store: MemoryStore, scope: ScopeRef, *filters: MetadataFilter) -> list[str]:
    return [n.node_id for n in store.find_nodes(scope, list(filters), 100)]


def test_outbound_depth_one_and_two(store: MemoryStore, people: ScopeRef) -> None:
    assert _reach(store, people, "ana", Direction.OUTBOUND, 1) == {"ana": 0, "bob": 1, "lisbon": 1}
    assert _reach(store, people, "ana", Direction.OUTBOUND, 2) == {
        "ana": 0, "bob": 1, "lisbon": 1, "carl": 2, "acme": 2,
    }  # fmt: skip


def test_inbound_depth_one_and_two(store: MemoryStore, people: ScopeRef) -> None:
    assert _reach(store, people, "carl", Direction.INBOUND, 1) == {"carl": 0, "bob": 1}
    assert _reach(store, people, "carl", Direction.INBOUND, 2) == {"carl": 0, "bob": 1, "ana": 2}
    assert _reach(store, people, "ana", Direction.INBOUND, 2) == {"ana": 0}


def test_any_direction(store: MemoryStore, people: ScopeRef) -> None:
    assert _reach(store, people, "bob", Direction.ANY, 1) == {
        "bob": 0, "ana": 1, "carl": 1, "acme": 1,
    }  # fmt: skip
    assert _reach(store, people, "acme", Direction.ANY, 2) == {
        "acme": 0,
        "bob": 1,
        "ana": 2,
        "carl": 2,
    }


def test_relation_filter(store: MemoryStore, people: ScopeRef) -> None:
    assert _reach(store, people, "ana", Direction.OUTBOUND, 2, ["knows"]) == {
        "ana": 0, "bob": 1, "carl": 2,
    }  # fmt: skip
    assert _reach(store, people, "ana", Direction.OUTBOUND, 2, ["works_at", "lives_in"]) == {
        "ana": 0, "lisbon": 1,
    }  # fmt: skip


def test_traversal_returns_the_edges_between_reached_nodes(
    store: MemoryStore, people: ScopeRef
) -> None:
    result = graph(
        store,
        people,
        GraphQuery(
            start_filters=[MetadataFilter(key="NodeId", values=["ana"])],
            traversal=Traversal(relations=["knows"], depth=2),
        ),
    )
    assert result.graph is not None
    assert {e.edge_id for e in result.graph.edges} == {
        edge_id("ana", "knows", "bob"),
        edge_id("bob", "knows", "carl"),
    }


def test_edges_touching_by_direction(store: MemoryStore, people: ScopeRef) -> None:
    def ids(direction: Direction, relations: list[str]) -> list[tuple[str, str]]:
        found = store.edges_touching(people, ["bob"], relations, direction, None)
        assert [e.edge_id for e in found] == sorted(e.edge_id for e in found)
        return sorted((e.source, e.target) for e in found)

    assert ids(Direction.OUTBOUND, []) == [("bob", "acme"), ("bob", "carl")]
    assert ids(Direction.INBOUND, []) == [("ana", "bob")]
    assert ids(Direction.ANY, []) == [("ana", "bob"), ("bob", "acme"), ("bob", "carl")]
    assert ids(Direction.ANY, ["works_at"]) == [("bob", "acme")]


def test_node_id_filter(store: MemoryStore, people: ScopeRef) -> None:
    assert _start(
        store, people, MetadataFilter(key="NodeId", operator=IN, values=["carl", "ana", "zed"])
    ) == ["ana", "carl"]
    assert _start(store, people, MetadataFilter(key="NodeId", operator=NE, values=["ana"])) == [
        "acme", "bob", "carl", "lisbon",
    ]  # fmt: skip


def test_label_filter(store: MemoryStore, people: ScopeRef) -> None:
    assert _start(store, people, MetadataFilter(key="Label", values=["Lisbon"])) == ["lisbon"]
    assert _start(store, people, MetadataFilter(key="Label", values=["lisbon"])) == []


def test_node_type_filter(store: MemoryStore, people: ScopeRef) -> None:
    assert _start(store, people, MetadataFilter(key="NodeType", values=["person"])) == [
        "ana", "bob",
    ]  # fmt: skip
    assert _start(
        store, people, MetadataFilter(key="NodeType", operator=IN, values=["city", "company"])
    ) == ["acme", "lisbon"]


def test_node_without_class_matches_not_equals_only(store: MemoryStore, people: ScopeRef) -> None:
    not_person = MetadataFilter(key="NodeType", operator=NE, values=["person"])
    assert _start(store, people, not_person) == ["acme", "carl", "lisbon"]
    assert "carl" not in _start(
        store, people, MetadataFilter(key="NodeType", operator=IN, values=["person", "city", ""])
    )


def test_start_filters_are_anded(store: MemoryStore, people: ScopeRef) -> None:
    assert _start(
        store,
        people,
        MetadataFilter(key="NodeType", values=["person"]),
        MetadataFilter(key="Label", operator=NE, values=["Ana"]),
    ) == ["bob"]


def test_find_nodes_limit_and_order(store: MemoryStore, people: ScopeRef) -> None:
    assert [n.node_id for n in store.find_nodes(people, [], 2)] == ["acme", "ana"]


def test_node_without_class_reads_back_as_none(store: MemoryStore, people: ScopeRef) -> None:
    (carl,) = store.get_nodes(people, ["carl"])
    assert carl.node_type is None
    assert carl.label == "Carl"


def test_node_type_is_assign_once(store: MemoryStore, scope: ScopeRef) -> None:
    commit_items(
        store,
        scope,
        nodes=[NodeInput(node_id="x", label="X", node_type="person", properties={"a": "1"})],
    )
    commit_items(
        store,
        scope,
        nodes=[NodeInput(node_id="x", label="X2", node_type="company", properties={"b": "2"})],
    )
    (node,) = store.get_nodes(scope, ["x"])
    assert node.node_type == "person"
    assert node.label == "X2"
    assert node.properties == {"b": "2"}
    commit_items(store, scope, nodes=[NodeInput(node_id="x", label="X3")])
    (node,) = store.get_nodes(scope, ["x"])
    assert (node.node_type, node.label) == ("person", "X3")


def test_null_node_type_can_be_set_later(store: MemoryStore, scope: ScopeRef) -> None:
    commit_items(store, scope, nodes=[NodeInput(node_id="y", label="Y")])
    assert store.get_nodes(scope, ["y"])[0].node_type is None
    commit_items(store, scope, nodes=[NodeInput(node_id="y", label="Y", node_type="city")])
    assert store.get_nodes(scope, ["y"])[0].node_type == "city"
    assert _start(store, scope, MetadataFilter(key="NodeType", values=["city"])) == ["y"]


def test_get_nodes_and_edges_skip_missing(store: MemoryStore, people: ScopeRef) -> None:
    assert [n.node_id for n in store.get_nodes(people, ["zed", "bob", "ana"])] == ["ana", "bob"]
    wanted = [edge_id("ana", "knows", "bob"), "edg_missing"]
    assert [e.edge_id for e in store.get_edges(people, wanted)] == [wanted[0]]
    assert store.get_nodes(people, []) == []
