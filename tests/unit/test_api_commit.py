"""POST …/memory:commit on the wire: proto3 JSON in and out, ids callers can supersede."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from jennah.domain import rules
from jennah.domain.models import CommitPlan, ScopeRef
from tests.unit.fakes import ENTERPRISE, Api

RFC3339_Z = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{3}|\.\d{6})?Z$")
JAN = "2024-01-01T00:00:00Z"
BODY = {
    "chunks": [
        {"text": "Alice works at Acme", "metadata": {"source": "hr"}, "validAt": JAN},
        {"text": "Bob likes tea"},
    ],
    "nodes": [
        {"nodeId": "alice", "label": "Alice", "nodeType": "Person"},
        {"nodeId": "acme", "label": "Acme"},
    ],
    "edges": [{"source": "alice", "relation": "WORKS_AT", "target": "acme", "validAt": JAN}],
}


@pytest.fixture
def api(tmp_path: Path) -> Api:
    return Api.create(tmp_path)


def last_commit(api: Api) -> CommitPlan:
    """The last commit's plan (the lifecycle pass that follows it writes one of its own)."""
    return next(plan for plan in reversed(api.store.plans) if plan.chunks)


def ok(response: Any) -> dict[str, Any]:
    assert response.status_code == 200, response.get_data(as_text=True)
    body: dict[str, Any] = response.get_json()
    return body


def test_the_response_carries_int64_counts_as_strings(api: Api) -> None:
    body = ok(api.post("/v1/scopes/bot/memory:commit", BODY))
    assert RFC3339_Z.match(body["commitTimestamp"])
    assert body["chunksWritten"] == "2"
    assert body["nodesWritten"] == "2"
    assert body["edgesWritten"] == "1"
    assert body["chunkSupersessions"] == "0"
    assert body["edgeSupersessions"] == "0"


def test_the_response_names_the_content_derived_ids(api: Api) -> None:
    body = ok(api.post("/v1/scopes/bot/memory:commit", BODY))
    jan = datetime(2024, 1, 1, tzinfo=UTC)
    assert body["chunkIds"] == [
        rules.chunk_id("Alice works at Acme", jan),
        rules.chunk_id("Bob likes tea", None),
    ]
    assert body["edgeIds"] == [rules.edge_id("alice", "WORKS_AT", "acme", jan)]
    stored = {c.id for c in last_commit(api).chunks}
    assert stored == set(body["chunkIds"])


def test_an_offset_timestamp_is_normalized_to_utc_before_ids_are_derived(api: Api) -> None:
    tokyo = {"chunks": [{"text": "x", "validAt": "2024-01-01T09:00:00+09:00"}]}
    utc = {"chunks": [{"text": "x", "validAt": JAN}]}
    first = ok(api.post("/v1/scopes/bot/memory:commit", tokyo))["chunkIds"]
    second = ok(api.post("/v1/scopes/bot/memory:commit", utc))["chunkIds"]
    assert first == second


def test_a_supersession_reports_the_replacement_ids_and_counts(api: Api) -> None:
    first = ok(api.post("/v1/scopes/bot/memory:commit", BODY))
    old_chunk, old_edge = first["chunkIds"][0], first["edgeIds"][0]
    body = ok(
        api.post(
            "/v1/scopes/bot/memory:commit",
            {
                "nodes": [{"nodeId": "initech", "label": "Initech"}],
                "supersessions": [
                    {"chunkId": old_chunk,
                     "replacementChunk": {"text": "Alice works at Initech"}},
                    {"edgeId": old_edge,
                     "replacementEdge": {"source": "alice", "relation": "WORKS_AT",
                                         "target": "initech",
                                         "validAt": "2025-01-01T00:00:00Z"}},
                ],
            },
        )
    )  # fmt: skip
    assert body["chunkSupersessions"] == "1"
    assert body["edgeSupersessions"] == "1"
    plan = last_commit(api)
    assert body["chunkIds"] == [c.id for c in plan.chunks]  # replacement valid at receipt time
    assert body["edgeIds"] == [e.edge_id for e in plan.edges]
    supersession = plan.chunk_supersessions[0]
    assert supersession.target_id == old_chunk and supersession.superseded_by == body["chunkIds"][0]


def test_agents_and_scopes_routes_write_the_same_scope_of_the_callers_enterprise(
    api: Api,
) -> None:
    ok(api.post("/v1/agents/support-bot/memory:commit", {"chunks": [{"text": "a"}]}))
    ok(api.post("/v1/scopes/support-bot/memory:commit", {"chunks": [{"text": "b"}]}))
    scopes = {plan.scope for plan in api.store.plans}
    assert scopes == {ScopeRef(enterprise_id=ENTERPRISE, scope_id="support-bot")}


def test_a_repeated_identical_commit_is_idempotent(api: Api) -> None:
    first = ok(api.post("/v1/scopes/bot/memory:commit", BODY))
    second = ok(api.post("/v1/scopes/bot/memory:commit", BODY))
    assert first["chunkIds"] == second["chunkIds"]
    listed = ok(api.get("/v1/scopes/bot/memory:inspect", allHistory="true"))
    assert len(listed["chunks"]) == 2


def test_an_empty_commit_is_refused(api: Api) -> None:
    response = api.post("/v1/scopes/bot/memory:commit", {})
    assert response.status_code == 400
    assert "empty" in response.get_json()["error"]["message"]


def test_a_missing_edge_endpoint_is_not_found(api: Api) -> None:
    body = {"edges": [{"source": "alice", "relation": "KNOWS", "target": "bob"}]}
    response = api.post("/v1/scopes/bot/memory:commit", body)
    assert response.status_code == 404
    assert response.get_json()["error"]["details"][0]["metadata"] == {"nodeId": "alice"}


def test_superseding_an_unknown_chunk_is_not_found_and_writes_nothing(api: Api) -> None:
    body = {
        "chunks": [{"text": "unrelated"}],
        "supersessions": [{"chunkId": "chk_missing", "replacementChunk": {"text": "new"}}],
    }
    response = api.post("/v1/scopes/bot/memory:commit", body)
    assert response.status_code == 404
    assert "chk_missing" in response.get_json()["error"]["message"]
    # nothing written: not even the scope, which a first commit that fails does not create
    assert api.get("/v1/scopes/bot/memory:inspect", allHistory="true").status_code == 404
    assert api.store.snapshot()["chunks"] == {} and api.store.list_scopes("local") == []
    ok(api.post("/v1/scopes/bot/memory:commit", {"chunks": [{"text": "first"}]}))
    response = api.post("/v1/scopes/bot/memory:commit", body)
    assert response.status_code == 404
    listed = ok(api.get("/v1/scopes/bot/memory:inspect", allHistory="true"))
    assert [c["text"] for c in listed["chunks"]] == ["first"]
