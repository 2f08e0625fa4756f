"""GET …/memory:inspect and the inspect service: listings, validity, graph, pages."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from jennah.domain.models import ScopeRef
from jennah.errors import InvalidArgument
from jennah.services.inspect import InspectCommand, inspect
from tests.unit.fakes import TOKEN, Api

INSPECT = "/v1/scopes/bot/memory:inspect"
JAN = "2024-01-01T00:00:00Z"


@pytest.fixture
def api(tmp_path: Path) -> Api:
    api = Api.create(tmp_path)
    created = api.post("/v1/scopes", {"scopeId": "bot", "kind": "AGENT"})
    assert created.status_code == 200, created.get_data(as_text=True)
    return api


def commit(api: Api, body: dict[str, Any]) -> dict[str, Any]:
    response = api.post("/v1/scopes/bot/memory:commit", body)
    assert response.status_code == 200, response.get_data(as_text=True)
    result: dict[str, Any] = response.get_json()
    return result


def listing(api: Api, **params: str) -> dict[str, Any]:
    response = api.get(INSPECT, **params)
    assert response.status_code == 200, response.get_data(as_text=True)
    body: dict[str, Any] = response.get_json()
    return body


def test_lists_chunks_valid_now_by_default(api: Api) -> None:
    old = commit(api, {"chunks": [{"text": "old fact", "validAt": JAN}]})["chunkIds"][0]
    commit(api, {"supersessions": [{"chunkId": old, "replacementChunk": {
        "text": "new fact", "validAt": "2025-01-01T00:00:00Z"}}]})  # fmt: skip
    now = listing(api)
    assert [c["text"] for c in now["chunks"]] == ["new fact"]
    assert now["asOfValid"].endswith("Z")
    assert "nodes" not in now and "edges" not in now and "nextPageToken" not in now
    then = listing(api, asOfValid="2024-06-01T00:00:00Z")
    assert [c["text"] for c in then["chunks"]] == ["old fact"]
    everything = listing(api, allHistory="true")
    assert sorted(c["text"] for c in everything["chunks"]) == ["new fact", "old fact"]
    assert "asOfValid" not in everything


def test_graph_lists_nodes_with_their_class_and_the_edges_among_them(api: Api) -> None:
    commit(api, {
        "nodes": [{"nodeId": "alice", "label": "Alice", "nodeType": "Person"},
                  {"nodeId": "acme", "label": "Acme"}],
        "edges": [{"source": "alice", "relation": "WORKS_AT", "target": "acme"}],
    })  # fmt: skip
    body = listing(api, graph="true")
    assert body["chunks"] == []
    assert body["nodes"] == [
        {"nodeId": "acme", "label": "Acme", "properties": {}},
        {"nodeId": "alice", "label": "Alice", "nodeType": "Person", "properties": {}},
    ]
    (edge,) = body["edges"]
    assert (edge["source"], edge["target"]) == ("alice", "acme")


def test_pages_cover_every_chunk_node_and_edge_exactly_once(api: Api) -> None:
    nodes = [{"nodeId": f"n{i}", "label": f"N{i}"} for i in range(5)]
    edges = [{"source": f"n{i}", "relation": "NEXT", "target": f"n{(i + 1) % 5}"}
             for i in range(5)]  # fmt: skip
    commit(api, {"chunks": [{"text": f"fact {i}"} for i in range(7)], "nodes": nodes,
                 "edges": edges})  # fmt: skip
    chunks: list[str] = []
    seen_nodes: list[str] = []
    seen_edges: list[str] = []
    token = ""
    pages = 0
    while True:
        params = {"graph": "true", "pageSize": "2"} | ({"pageToken": token} if token else {})
        page = listing(api, **params)
        pages += 1
        chunks += [c["id"] for c in page["chunks"]]
        seen_nodes += [n["nodeId"] for n in page["nodes"]]
        seen_edges += [e["edgeId"] for e in page["edges"]]
        token = page.get("nextPageToken", "")
        if not token:
            break
    assert pages == 4
    assert len(chunks) == len(set(chunks)) == 7
    assert seen_nodes == [f"n{i}" for i in range(5)]
    assert len(seen_edges) == len(set(seen_edges)) == 5


def test_a_page_token_must_come_with_the_same_parameters(api: Api) -> None:
    commit(api, {"chunks": [{"text": f"fact {i}"} for i in range(3)]})
    token = listing(api, pageSize="1")["nextPageToken"]
    response = api.get(INSPECT, pageSize="1", pageToken=token, graph="true")
    assert response.status_code == 400
    assert response.get_json()["error"]["details"][0]["metadata"]["field"] == "pageToken"


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"pageToken": "garbage!"}, "pageToken"),
        ({"pageSize": "-1"}, "pageSize"),
        ({"pageSize": "many"}, "pageSize"),
        ({"asOfValid": "2024-01-01"}, "asOfValid"),
        ({"graph": "maybe"}, "graph"),
        ({"color": "red"}, "color"),
        ({"allHistory": "true", "asOfValid": JAN}, "allHistory"),
    ],
)
def test_bad_parameters_are_named(api: Api, params: dict[str, str], field: str) -> None:
    response = api.get(INSPECT, **params)
    assert response.status_code == 400, response.get_data(as_text=True)
    assert response.get_json()["error"]["details"][0]["metadata"]["field"] == field


def test_a_repeated_parameter_is_refused(api: Api) -> None:
    response = api.app.test_client().get(
        INSPECT + "?pageSize=1&pageSize=2",
        headers={"Authorization": f"Bearer {TOKEN}"},
    )
    assert response.status_code == 400


def test_the_agents_form_lists_the_same_agent_workspace(api: Api) -> None:
    commit(api, {"chunks": [{"text": "shared"}]})
    response = api.get("/v1/agents/bot/memory:inspect")
    assert [c["text"] for c in response.get_json()["chunks"]] == ["shared"]


def test_a_scope_never_written_is_not_found(api: Api) -> None:
    response = api.get("/v1/scopes/never/memory:inspect")
    assert response.status_code == 404
    assert response.get_json()["error"]["message"] == "scope 'never' was not found"


def test_the_page_size_is_capped_and_defaulted(api: Api) -> None:
    store = api.store
    scope = ScopeRef(enterprise_id="local", scope_id="bot")
    commit(api, {"chunks": [{"text": f"fact {i}"} for i in range(60)]})
    now = datetime.now(UTC)
    default = inspect(InspectCommand(scope=scope), store, lambda: now)
    assert len(default.chunks) == 50 and default.next_page_token
    capped = inspect(InspectCommand(scope=scope, page_size=10**6), store, lambda: now)
    assert len(capped.chunks) == 60 and capped.next_page_token is None


def test_the_service_refuses_as_of_with_all_history() -> None:
    scope = ScopeRef(enterprise_id="e", scope_id="s")
    command = InspectCommand(scope=scope, all_history=True, as_of_valid=datetime.now(UTC))
    with pytest.raises(InvalidArgument):
        inspect(command, None, lambda: datetime.now(UTC))  # type: ignore[arg-type]
