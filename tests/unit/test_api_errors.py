"""Every refusal of the HTTP layer is a Google error body with the canonical code."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from jennah.errors import HTTP_STATUS, Aborted, FailedPrecondition, NotFound, ResourceExhausted
from tests.unit.fakes import Api

COMMIT = "/v1/scopes/bot/memory:commit"
QUERY = "/v1/agents/bot/memory:query"


@pytest.fixture
def api(tmp_path: Path) -> Api:
    api = Api.create(tmp_path)
    created = api.post("/v1/scopes", {"scopeId": "bot", "kind": "AGENT"})
    assert created.status_code == 200, created.get_data(as_text=True)
    return api


def error_of(response: Any, code: int, status: str) -> dict[str, Any]:
    assert response.status_code == code, response.get_data(as_text=True)
    assert response.mimetype == "application/json"
    error: dict[str, Any] = response.get_json()["error"]
    assert error["code"] == code
    assert error["status"] == status
    info = error["details"][0]
    assert info["@type"] == "type.googleapis.com/google.rpc.ErrorInfo"
    assert info["domain"] == "jennah"
    assert info["reason"]
    return error


def field_of(error: dict[str, Any]) -> str:
    (violation,) = [d for d in error["details"] if d["@type"].endswith("BadRequest")]
    field: str = violation["fieldViolations"][0]["field"]
    assert error["details"][0]["metadata"]["field"] == field
    return field


def test_malformed_json_is_invalid_argument(api: Api) -> None:
    error = error_of(api.post(COMMIT, '{"chunks": ['), 400, "INVALID_ARGUMENT")
    assert error["details"][0]["reason"] == "MALFORMED_JSON"
    assert "Invalid JSON payload" in error["message"]


@pytest.mark.parametrize("body", ["[]", '"text"', "NaN", '{"chunks": [{"text": NaN}]}'])
def test_a_body_that_is_not_a_json_object_is_invalid_argument(api: Api, body: str) -> None:
    error_of(api.post(COMMIT, body), 400, "INVALID_ARGUMENT")


def test_an_unknown_field_is_named_by_its_wire_path(api: Api) -> None:
    error = error_of(api.post(COMMIT, {"chunks": [{"txt": "x"}]}), 400, "INVALID_ARGUMENT")
    assert error["details"][0]["reason"] == "UNKNOWN_FIELD"
    assert field_of(error) == "chunks[0].txt"
    assert "chunks[0].txt" in error["message"]


def test_snake_case_names_are_unknown_fields(api: Api) -> None:
    body = {"chunks": [{"text": "x", "valid_at": "2024-01-01T00:00:00Z"}]}
    error = error_of(api.post(COMMIT, body), 400, "INVALID_ARGUMENT")
    assert field_of(error) == "chunks[0].valid_at"


def test_a_nested_unknown_field_in_a_query_is_named(api: Api) -> None:
    body = {"graph": {"traversal": {"depth": 1, "hops": 2}}}
    error = error_of(api.post(QUERY, body), 400, "INVALID_ARGUMENT")
    assert field_of(error) == "graph.traversal.hops"


@pytest.mark.parametrize(
    "stamp", ["2024-01-01", "2024-01-01T00:00:00", "yesterday", "2024-13-01T00:00:00Z", 1700000000]
)
def test_a_bad_timestamp_is_named(api: Api, stamp: object) -> None:
    body = {"chunks": [{"text": "x", "validAt": stamp}]}
    error = error_of(api.post(COMMIT, body), 400, "INVALID_ARGUMENT")
    assert field_of(error) == "chunks[0].validAt"
    assert "RFC 3339" in error["message"]


def test_a_bad_as_of_valid_is_named(api: Api) -> None:
    body = {"semantic": {"queryText": "x", "asOfValid": "2024-01-01 10:00"}}
    error = error_of(api.post(QUERY, body), 400, "INVALID_ARGUMENT")
    assert field_of(error) == "semantic.asOfValid"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"chunks": [{"text": 5}]}, "chunks[0].text"),
        ({"chunks": [{"text": "x", "metadata": {"k": 1}}]}, "chunks[0].metadata.k"),
        ({"chunks": "x"}, "chunks"),
        ({"nodes": [{"nodeId": ["a"]}]}, "nodes[0].nodeId"),
    ],
)
def test_a_wrong_type_is_named(api: Api, body: dict[str, Any], field: str) -> None:
    error = error_of(api.post(COMMIT, body), 400, "INVALID_ARGUMENT")
    assert field_of(error) == field


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"semantic": {"queryText": "x", "topK": "ten"}}, "semantic.topK"),
        ({"semantic": {"queryText": "x", "topK": True}}, "semantic.topK"),
        ({"semantic": {"queryText": "x", "filters": [{"key": "a", "operator": "EQ"}]}},
         "semantic.filters[0].operator"),
        ({"graph": {"traversal": {"direction": "OUT"}}}, "graph.traversal.direction"),
        ({"semantic": {"topK": 3}}, "semantic.queryText"),
    ],
)  # fmt: skip
def test_a_bad_query_value_is_named(api: Api, body: dict[str, Any], field: str) -> None:
    error = error_of(api.post(QUERY, body), 400, "INVALID_ARGUMENT")
    assert field_of(error) == field


def test_service_validation_names_the_wire_field(api: Api) -> None:
    error = error_of(api.post(COMMIT, {"chunks": [{"text": "  "}]}), 400, "INVALID_ARGUMENT")
    assert field_of(error) == "chunks[0].text"


def test_a_filter_with_both_value_and_values_is_refused(api: Api) -> None:
    body = {
        "semantic": {"queryText": "x", "filters": [{"key": "a", "value": "1", "values": ["2"]}]}
    }
    error = error_of(api.post(QUERY, body), 400, "INVALID_ARGUMENT")
    assert field_of(error) == "semantic.filters[0].values"


def test_equals_with_several_values_is_refused(api: Api) -> None:
    body = {"semantic": {"queryText": "x", "filters": [{"key": "a", "values": ["1", "2"]}]}}
    error = error_of(api.post(QUERY, body), 400, "INVALID_ARGUMENT")
    assert "OPERATOR_IN" in error["message"]


def test_missing_token_is_unauthenticated(api: Api) -> None:
    response = api.post(COMMIT, {"chunks": [{"text": "x"}]}, token=None)
    error = error_of(response, 401, "UNAUTHENTICATED")
    assert "Authorization" in error["message"]
    assert response.headers["WWW-Authenticate"].startswith("Bearer")
    assert [plan for plan in api.store.plans if plan.chunks] == []


@pytest.mark.parametrize("header", ["Bearer wrong", "Basic dXNlcjpwYXNz", "Bearer", "token"])
def test_a_bad_credential_is_unauthenticated(api: Api, header: str) -> None:
    response = api.app.test_client().post(
        COMMIT, json={"chunks": [{"text": "x"}]}, headers={"Authorization": header}
    )
    error_of(response, 401, "UNAUTHENTICATED")
    assert [plan for plan in api.store.plans if plan.chunks] == []


def test_an_unknown_path_is_not_found(api: Api) -> None:
    error = error_of(api.get("/v1/nothing/here"), 404, "NOT_FOUND")
    assert "/v1/nothing/here" in error["message"]


def test_there_is_no_scopes_memory_form_route(api: Api) -> None:
    error_of(api.post("/v1/scopes/x/memory:form", {"turns": []}), 404, "NOT_FOUND")


def test_the_root_is_not_found(api: Api) -> None:
    error_of(api.get("/"), 404, "NOT_FOUND")


@pytest.mark.parametrize(
    ("method", "path", "allowed"),
    [
        ("GET", COMMIT, "POST"),
        ("DELETE", QUERY, "POST"),
        ("POST", "/v1/scopes/bot/memory:inspect", "GET"),
        ("POST", "/openapi.json", "GET"),
    ],
)
def test_a_wrong_method_is_not_found_as_google_answers_it(
    api: Api, method: str, path: str, allowed: str
) -> None:
    """Google's APIs answer a method a path does not bind 404 NOT_FOUND ("Method not
    found."); google.rpc has no status for HTTP 405 (UNIMPLEMENTED is 501)."""
    response = api.app.test_client().open(path, method=method, headers={"Authorization": "x"})
    error = error_of(response, 404, "NOT_FOUND")
    assert response.headers["Allow"] == allowed
    assert error["message"].startswith("Method not found")
    assert error["details"][0]["reason"] == "METHOD_NOT_ALLOWED"
    assert error["details"][0]["metadata"] == {"method": method, "allowed": allowed}


@pytest.mark.parametrize("scope_id", ["a b", "a%2Fb", "x" * 129, "é"])
def test_a_bad_path_id_is_named(api: Api, scope_id: str) -> None:
    response = api.post(f"/v1/scopes/{scope_id}/memory:commit", {"chunks": [{"text": "x"}]})
    if response.status_code == 404:  # an encoded slash splits the path: no route at all
        return
    error = error_of(response, 400, "INVALID_ARGUMENT")
    assert field_of(error) == "scopeId"


def test_a_bad_agent_id_names_agent_instance_id(api: Api) -> None:
    error = error_of(api.post("/v1/agents/a!/memory:query", {}), 400, "INVALID_ARGUMENT")
    assert field_of(error) == "agentInstanceId"


@pytest.mark.parametrize(
    "failure", [NotFound("chk_x does not exist", metadata={"id": "chk_x"}),
                FailedPrecondition("closed", reason="ALREADY_SUPERSEDED"),
                Aborted("retry"), ResourceExhausted("too much")],
)  # fmt: skip
def test_service_errors_keep_their_canonical_code_and_reason(api: Api, failure: Any) -> None:
    api.store.fail_next = failure
    error = error_of(api.post(COMMIT, {"chunks": [{"text": "x"}]}), failure.http_status,
                     failure.status)  # fmt: skip
    assert error["message"] == failure.message
    assert error["details"][0]["reason"] == (failure.reason or failure.status)
    assert HTTP_STATUS[failure.status] == failure.http_status


def test_an_unexpected_exception_is_internal_and_leaks_nothing(
    api: Api, capsys: pytest.CaptureFixture[str]
) -> None:
    api.store.fail_next = RuntimeError("secret connection string postgres://u:pw@db")
    response = api.post(COMMIT, {"chunks": [{"text": "x"}]})
    error = error_of(response, 500, "INTERNAL")
    assert "secret" not in response.get_data(as_text=True)
    assert "RuntimeError" not in response.get_data(as_text=True)
    assert error["message"].startswith("internal error")
    logged = capsys.readouterr().err
    assert "secret connection string" in logged  # the operator sees it in the log
    assert '"severity": "ERROR"' in logged
