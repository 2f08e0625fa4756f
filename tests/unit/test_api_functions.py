"""Each Cloud Function entrypoint serves its own routes only, through the shared routing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import flask
import functions_framework
import pytest

from jennah import bootstrap
from jennah.bootstrap import Container
from jennah.domain import rules
from tests.unit.fakes import TOKEN, make_container

ROOT = Path(__file__).resolve().parents[2]
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture
def container(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Container:
    container = make_container(tmp_path)
    monkeypatch.setattr(bootstrap, "container", lambda: container)
    return container


def client(name: str) -> Any:
    app: flask.Flask = functions_framework.create_app(  # type: ignore[no-untyped-call]
        name, str(ROOT / "functions" / name / "main.py")
    )
    return app.test_client()


def test_the_commit_function_commits_for_agents_and_scopes(container: Container) -> None:
    commit = client("commit")
    for path in ("/v1/agents/bot/memory:commit", "/v1/scopes/bot/memory:commit"):
        response = commit.post(path, json={"chunks": [{"text": "x"}]}, headers=AUTH)
        assert response.status_code == 200, response.get_data(as_text=True)
        assert response.get_json()["chunksWritten"] == "1"


def test_the_commit_function_edits_a_claim(container: Container) -> None:
    commit = client("commit")
    commit.post("/v1/agents/bot/memory:commit", json={"chunks": [{"text": "tea"}]}, headers=AUTH)
    path = f"/v1/agents/bot/memories/{rules.chunk_id('tea', None)}:edit"
    response = commit.post(path, json={"text": "green tea"}, headers=AUTH)
    assert response.status_code == 200, response.get_data(as_text=True)
    assert response.get_json()["superseded"]["supersededBy"] == response.get_json()["memory"]["id"]
    assert client("query").post(path, json={"text": "x"}, headers=AUTH).status_code == 404


def test_the_query_function_queries(container: Container) -> None:
    client("commit").post("/v1/agents/bot/memory:commit", json={"chunks": [{"text": "tea"}]},
                          headers=AUTH)  # fmt: skip
    response = client("query").post(
        "/v1/agents/bot/memory:query", json={"semantic": {"queryText": "tea"}}, headers=AUTH
    )
    assert response.status_code == 200
    assert [r["text"] for r in response.get_json()["semantic"]["results"]] == ["tea"]


def test_the_query_function_searches(container: Container) -> None:
    client("commit").post("/v1/agents/bot/memory:commit", json={"chunks": [{"text": "tea"}]},
                          headers=AUTH)  # fmt: skip
    response = client("query").post(
        "/v1/agents/bot/memory:search", json={"query": "tea"}, headers=AUTH
    )
    assert response.status_code == 200
    assert [c["summary"] for c in response.get_json()["candidates"]] == ["tea"]


def test_the_inspect_function_lists(container: Container) -> None:
    assert client("inspect").get("/v1/scopes/bot/memory:inspect", headers=AUTH).status_code == 404
    client("scopes").post("/v1/scopes", json={"scopeId": "bot", "kind": "SUBJECT"}, headers=AUTH)
    response = client("inspect").get("/v1/scopes/bot/memory:inspect?graph=true", headers=AUTH)
    assert response.status_code == 200
    assert response.get_json()["chunks"] == []


def test_the_inspect_function_serves_the_brief(container: Container) -> None:
    client("scopes").post("/v1/scopes", json={"scopeId": "bot", "kind": "AGENT"}, headers=AUTH)
    response = client("inspect").get("/v1/agents/bot/memory/brief", headers=AUTH)
    assert response.status_code == 200
    assert response.get_json()["brief"].startswith('<memory-brief scope="bot" variant="full">')
    etag = {"If-None-Match": response.headers["ETag"]}
    again = client("inspect").get("/v1/agents/bot/memory/brief", headers=AUTH | etag)
    assert again.status_code == 304


def test_the_scopes_function_lists_creates_and_destroys(container: Container) -> None:
    scopes = client("scopes")
    created = scopes.post("/v1/scopes", json={"scopeId": "bot", "kind": "AGENT"}, headers=AUTH)
    assert created.get_json()["kind"] == "AGENT"
    assert scopes.get("/v1/agents", headers=AUTH).get_json()["agents"][0]["scopeId"] == "bot"
    assert scopes.get("/v1/scopes", headers=AUTH).get_json()["scopes"][0]["name"] == "scopes/bot"
    assert scopes.delete("/v1/scopes/bot", headers=AUTH).status_code == 200
    assert scopes.get("/v1/scopes", headers=AUTH).get_json() == {"scopes": []}


def test_the_admin_function_manages_keys_and_roles(container: Container) -> None:
    admin = client("admin")
    assert admin.get("/v1/caller", headers=AUTH).get_json()["principal"] == "user:root"
    key = admin.post("/v1/apiKeys", json={"role": "member"}, headers=AUTH).get_json()
    assert key["keyString"].startswith("jk_")
    listed = admin.get("/v1/roleBindings", headers=AUTH).get_json()["roleBindings"]
    assert {b["principal"] for b in listed} == {"user:root", f"api_key:{key['keyId']}"}
    assert admin.post(f"/v1/apiKeys/{key['keyId']}:revoke", headers=AUTH).status_code == 200


def test_the_vocabulary_function_declares_reads_and_removes(container: Container) -> None:
    vocabulary = client("vocabulary")
    body = {"scopeId": "bot", "vocabulary": {"entityClasses": [{"name": "Person"}]}}
    assert vocabulary.put("/v1/memory/vocabulary", json=body, headers=AUTH).status_code == 200
    read = vocabulary.get("/v1/memory/vocabulary?scopeId=bot", headers=AUTH).get_json()
    assert read["resolved"] == {"entityClasses": [{"name": "Person", "description": ""}],
                                "relationTypes": []}  # fmt: skip
    removed = vocabulary.delete("/v1/memory/vocabulary?scopeId=bot", headers=AUTH)
    assert removed.status_code == 200 and removed.get_json() == {}


@pytest.mark.parametrize(
    ("name", "method", "path"),
    [
        ("vocabulary", "GET", "/v1/scopes"),
        ("admin", "PUT", "/v1/memory/vocabulary"),
        ("commit", "POST", "/v1/scopes/bot/memory:query"),
        ("inspect", "POST", "/v1/scopes/bot/memory:search"),
        ("query", "POST", "/v1/scopes/bot/memory:commit"),
        ("inspect", "POST", "/v1/scopes/bot/memory:commit"),
        ("commit", "GET", "/v1/scopes/bot/memory:inspect"),
        ("query", "POST", "/v1/agents/bot/memory:form"),
        ("admin", "GET", "/v1/scopes"),
        ("scopes", "GET", "/v1/apiKeys"),
        ("commit", "GET", "/v1/caller"),
    ],
)
def test_a_function_does_not_serve_another_functions_routes(
    container: Container, name: str, method: str, path: str
) -> None:
    response = client(name).open(path, method=method, json={}, headers=AUTH)
    assert response.status_code == 404
    assert response.get_json()["error"]["status"] == "NOT_FOUND"


def test_a_function_refuses_a_wrong_method_and_a_missing_token(container: Container) -> None:
    commit = client("commit")
    assert commit.get("/v1/scopes/bot/memory:commit", headers=AUTH).status_code == 404
    refused = commit.post("/v1/scopes/bot/memory:commit", json={"chunks": [{"text": "x"}]})
    assert refused.status_code == 401
    assert refused.get_json()["error"]["status"] == "UNAUTHENTICATED"


def test_the_trace_header_reaches_the_log(
    container: Container, capsys: pytest.CaptureFixture[str]
) -> None:
    client("inspect").get(
        "/v1/scopes/bot/memory:inspect",
        headers=AUTH | {"X-Cloud-Trace-Context": "0123456789abcdef/42;o=1"},
    )
    logged = capsys.readouterr().err
    project = container.settings.spanner_project
    assert f'"logging.googleapis.com/trace": "projects/{project}/traces/0123456789abcdef"' in logged
    assert '"severity": "INFO"' in logged


def test_the_inspect_function_reads_a_claims_evidence(container: Container) -> None:
    written = client("commit").post(
        "/v1/scopes/bot/memory:commit", json={"chunks": [{"text": "tea"}]}, headers=AUTH
    )
    (memory_id,) = written.get_json()["chunkIds"]
    response = client("inspect").get(f"/v1/scopes/bot/memories/{memory_id}/evidence", headers=AUTH)
    assert response.status_code == 200, response.get_data(as_text=True)
    assert response.get_json() == {"evidence": []}


def test_the_scopes_function_sets_a_time_zone(container: Container) -> None:
    scopes = client("scopes")
    scopes.post("/v1/scopes", json={"scopeId": "bot", "kind": "AGENT"}, headers=AUTH)
    response = scopes.patch("/v1/scopes/bot", json={"timeZone": "Asia/Tokyo"}, headers=AUTH)
    assert response.get_json()["timeZone"] == "Asia/Tokyo"


def test_the_commit_function_runs_the_lifecycle_pass_on_demand(container: Container) -> None:
    commit = client("commit")
    commit.post("/v1/agents/bot/memory:commit", json={"chunks": [{"text": "x"}]}, headers=AUTH)
    response = commit.post("/v1/agents/bot/memory:dream", headers=AUTH)
    assert response.status_code == 200, response.get_data(as_text=True)
    assert response.get_json() == {"expired": 0, "promoted": 0, "decayed": 0,
                                   "briefChanged": False}  # fmt: skip


def test_the_lifecycle_function_walks_every_scope(container: Container) -> None:
    client("commit").post("/v1/agents/bot/memory:commit", json={"chunks": [{"text": "x"}]},
                          headers=AUTH)  # fmt: skip
    response = client("lifecycle").post("/", json={})
    assert response.status_code == 200, response.get_data(as_text=True)
    assert response.get_json()["finished"] is True and response.get_json()["scopes"] == 1


def test_the_keyed_function_serves_keyed_memory_only(container: Container) -> None:
    keyed = client("keyed")
    for base in ("/v1/agents/bot/keyedMemories", "/v1/scopes/bot/keyedMemories"):
        body = {"content": "Outcome first", "expectedVersion": 0 if "agents" in base else 1}
        response = keyed.put(f"{base}/harbor", json=body, headers=AUTH)
        assert response.status_code == 200, response.get_data(as_text=True)
    assert (
        keyed.get("/v1/scopes/bot/keyedMemories/harbor", headers=AUTH).get_json()["version"] == "2"
    )
    query = keyed.post("/v1/agents/bot/memory:query", json={}, headers=AUTH)
    assert query.status_code == 404
