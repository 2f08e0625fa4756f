"""POST …/memory:query on the wire: sections, filters, graph, validity, omitted fields."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.unit.fakes import Api

JAN = "2024-01-01T00:00:00Z"
SEED = {
    "chunks": [
        {"text": "Alice works at Acme as an engineer", "metadata": {"team": "eng"},
         "validAt": JAN},
        {"text": "Bob works at Acme in sales", "metadata": {"team": "sales"}},
        {"text": "Carol likes green tea"},
    ],
    "nodes": [
        {"nodeId": "alice", "label": "Alice", "nodeType": "Person"},
        {"nodeId": "bob", "label": "Bob", "nodeType": "Person"},
        {"nodeId": "acme", "label": "Acme"},
    ],
    "edges": [
        {"source": "alice", "relation": "WORKS_AT", "target": "acme", "validAt": JAN},
        {"source": "bob", "relation": "WORKS_AT", "target": "acme"},
        {"source": "alice", "relation": "KNOWS", "target": "bob"},
    ],
}  # fmt: skip


@pytest.fixture
def api(tmp_path: Path) -> Api:
    api = Api.create(tmp_path)
    assert api.post("/v1/agents/bot/memory:commit", SEED).status_code == 200
    return api


def query(api: Api, body: dict[str, Any], path: str = "/v1/scopes/bot/memory:query") -> Any:
    response = api.post(path, body)
    assert response.status_code == 200, response.get_data(as_text=True)
    return response.get_json()


def texts(body: dict[str, Any]) -> list[str]:
    return [r["text"] for r in body["semantic"]["results"]]


def test_semantic_results_carry_ids_text_metadata_validity_and_score(api: Api) -> None:
    body = query(api, {"semantic": {"queryText": "Alice engineer", "topK": 1}})
    assert set(body) == {"semantic"}  # only the asked-for section
    (result,) = body["semantic"]["results"]
    assert result["id"].startswith("chk_")
    assert result["text"] == "Alice works at Acme as an engineer"
    assert result["metadata"] == {"team": "eng"}
    assert result["validAt"] == JAN
    assert result["createdAt"].endswith("Z")
    assert isinstance(result["score"], float) and 0 < result["score"] <= 1
    assert "invalidAt" not in result and "supersededBy" not in result


def test_a_chunk_without_valid_at_omits_the_field(api: Api) -> None:
    body = query(api, {"semantic": {"queryText": "Carol green tea", "topK": 1}})
    assert "validAt" not in body["semantic"]["results"][0]


def test_top_k_accepts_a_proto3_string(api: Api) -> None:
    body = query(api, {"semantic": {"queryText": "works", "topK": "2"}})
    assert len(body["semantic"]["results"]) == 2


@pytest.mark.parametrize(
    ("flt", "expected"),
    [
        ({"key": "team", "value": "eng"}, {"Alice works at Acme as an engineer"}),
        ({"key": "team", "value": "eng", "operator": "OPERATOR_NOT_EQUALS"},
         {"Bob works at Acme in sales", "Carol likes green tea"}),
        ({"key": "team", "values": ["eng", "sales"], "operator": "OPERATOR_IN"},
         {"Alice works at Acme as an engineer", "Bob works at Acme in sales"}),
    ],
)  # fmt: skip
def test_metadata_filters(api: Api, flt: dict[str, Any], expected: set[str]) -> None:
    body = query(api, {"semantic": {"queryText": "works", "topK": 10, "filters": [flt]}})
    assert set(texts(body)) == expected


def test_as_of_valid_returns_the_superseded_state(api: Api) -> None:
    alice = query(api, {"semantic": {"queryText": "Alice engineer", "topK": 1}})
    old_id = alice["semantic"]["results"][0]["id"]
    supersede = {
        "supersessions": [{"chunkId": old_id, "replacementChunk": {
            "text": "Alice works at Initech as a manager", "validAt": "2025-01-01T00:00:00Z"}}]
    }  # fmt: skip
    assert api.post("/v1/scopes/bot/memory:commit", supersede).status_code == 200
    now = query(api, {"semantic": {"queryText": "Alice", "topK": 10}})
    assert "Alice works at Acme as an engineer" not in texts(now)
    assert "Alice works at Initech as a manager" in texts(now)
    then = query(
        api, {"semantic": {"queryText": "Alice", "topK": 10, "asOfValid": "2024-06-01T00:00:00Z"}}
    )
    old = next(r for r in then["semantic"]["results"] if r["id"] == old_id)
    assert old["invalidAt"] == "2025-01-01T00:00:00Z"
    assert old["supersededBy"].startswith("chk_")
    assert "Alice works at Initech as a manager" not in texts(then)


def test_graph_start_by_class_and_traversal(api: Api) -> None:
    body = query(
        api,
        {
            "graph": {
                "start": {"filters": [{"key": "NodeId", "value": "alice"}]},
                "traversal": {"relations": ["WORKS_AT"], "direction": "DIRECTION_OUTBOUND",
                              "depth": 1},
                "limit": 50,
            }
        },
    )  # fmt: skip
    assert set(body) == {"graph"}
    nodes = {n["nodeId"]: n for n in body["graph"]["nodes"]}
    assert nodes["alice"]["depth"] == 0 and nodes["acme"]["depth"] == 1
    assert "bob" not in nodes
    (edge,) = body["graph"]["edges"]
    assert edge["edgeId"].startswith("edg_")
    assert (edge["source"], edge["relation"], edge["target"]) == ("alice", "WORKS_AT", "acme")
    assert edge["validAt"] == JAN and "invalidAt" not in edge


def test_node_type_filter_and_no_class_placeholder(api: Api) -> None:
    people = query(api, {"graph": {"start": {"filters": [{"key": "NodeType", "value": "Person"}]}}})
    assert {n["nodeId"] for n in people["graph"]["nodes"]} == {"alice", "bob"}
    assert all(n["nodeType"] == "Person" for n in people["graph"]["nodes"])
    others = query(
        api,
        {"graph": {"start": {"filters": [
            {"key": "NodeType", "value": "Person", "operator": "OPERATOR_NOT_EQUALS"}]}}},
    )  # fmt: skip
    (acme,) = others["graph"]["nodes"]
    assert acme["nodeId"] == "acme"
    assert "nodeType" not in acme  # omitted, never a placeholder


def test_inbound_and_any_directions(api: Api) -> None:
    start = {"filters": [{"key": "NodeId", "value": "bob"}]}
    inbound = query(
        api, {"graph": {"start": start, "traversal": {"direction": "DIRECTION_INBOUND"}}}
    )
    assert {n["nodeId"] for n in inbound["graph"]["nodes"]} == {"bob", "alice"}
    both = query(api, {"graph": {"start": start, "traversal": {"direction": "DIRECTION_ANY"}}})
    assert {n["nodeId"] for n in both["graph"]["nodes"]} == {"bob", "alice", "acme"}


def test_a_non_node_key_in_graph_filters_is_named(api: Api) -> None:
    response = api.post(
        "/v1/scopes/bot/memory:query",
        {"graph": {"start": {"filters": [{"key": "team", "value": "eng"}]}}},
    )
    assert response.status_code == 400
    assert response.get_json()["error"]["details"][0]["metadata"]["field"] == (
        "graph.start.filters[0].key"
    )


def test_agents_and_scopes_share_one_identifier_space(api: Api) -> None:
    via_agents = query(api, {"semantic": {"queryText": "tea"}}, "/v1/agents/bot/memory:query")
    via_scopes = query(api, {"semantic": {"queryText": "tea"}}, "/v1/scopes/bot/memory:query")
    assert via_agents == via_scopes and via_agents["semantic"]["results"]
    # a subject scope is reached under /v1/scopes only; /v1/agents answers as if it were not
    assert api.post("/v1/scopes/ana/memory:commit", {"chunks": [{"text": "x"}]}).status_code == 200
    refused = api.post("/v1/agents/ana/memory:query", {"semantic": {"queryText": "x"}})
    assert refused.status_code == 404
    assert refused.get_json()["error"]["message"] == "agent workspace 'ana' was not found"


def test_another_scope_sees_nothing(api: Api) -> None:
    missing = api.post("/v1/scopes/other/memory:query", {"semantic": {"queryText": "Alice"}})
    assert missing.status_code == 404
    assert api.post("/v1/scopes", {"scopeId": "other", "kind": "SUBJECT"}).status_code == 200
    body = query(api, {"semantic": {"queryText": "Alice"}}, "/v1/scopes/other/memory:query")
    assert body == {"semantic": {"results": []}}


def test_an_empty_query_is_refused(api: Api) -> None:
    assert api.post("/v1/scopes/bot/memory:query", {}).status_code == 400


def test_the_response_reports_server_timing(api: Api) -> None:
    response = api.post("/v1/scopes/bot/memory:query", {"semantic": {"queryText": "tea"}})
    assert response.headers["Server-Timing"].startswith("embed;dur=")


def test_mode_picks_the_search_and_hybrid_is_the_default(api: Api) -> None:
    lexical = query(api, {"semantic": {"queryText": "who sells?", "mode": "LEXICAL"}})
    assert texts(lexical) == []  # "sells" is not "sales": no word in common
    lexical = query(api, {"semantic": {"queryText": "what about sales?", "mode": "LEXICAL"}})
    assert texts(lexical) == ["Bob works at Acme in sales"]
    typo = query(api, {"semantic": {"queryText": "salse", "mode": "LEXICAL"}})
    assert texts(typo) == ["Bob works at Acme in sales"]
    default = query(api, {"semantic": {"queryText": "green tea", "topK": 3}})
    hybrid = query(api, {"semantic": {"queryText": "green tea", "topK": 3, "mode": "HYBRID"}})
    assert default == hybrid and texts(default)[0] == "Carol likes green tea"
    semantic = query(api, {"semantic": {"queryText": "green tea", "mode": "SEMANTIC"}})
    assert len(texts(semantic)) == 3  # by meaning: every valid chunk has a similarity


def test_an_unknown_mode_is_refused_naming_the_field(api: Api) -> None:
    response = api.post(
        "/v1/scopes/bot/memory:query", {"semantic": {"queryText": "tea", "mode": "MODE_HYBRID"}}
    )
    assert response.status_code == 400
    assert response.get_json()["error"]["details"][0]["metadata"]["field"] == "semantic.mode"
