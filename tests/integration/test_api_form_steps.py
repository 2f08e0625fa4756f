"""GET /v1/agents/{agentInstanceId}/memory/steps/{stepId}, the `form` Cloud Function,
the formation model the container builds, and the OpenAPI document's new operations."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import flask
import functions_framework
import pytest

from jennah import bootstrap
from jennah.adapters.models.rules import RulesModel
from jennah.api import openapi
from jennah.bootstrap import Container
from jennah.domain.formation import SOURCE_STEP, SOURCE_TURNS, TURN_OFFSETS
from jennah.errors import Internal
from jennah.settings import Settings
from tests.integration.test_api_form import FORM, TOKYO, ok, reason, refused, sqlite_api
from tests.unit.fakes import TOKEN, Api, make_container
from tests.unit.test_api_form_fakes import FormingFakeStore

ROOT = Path(__file__).resolve().parents[2]
AUTH = {"Authorization": f"Bearer {TOKEN}"}
STEPS = "/v1/agents/support-bot/memory/steps"


@pytest.fixture
def api(tmp_path: Path) -> Iterator[Api]:
    with sqlite_api(tmp_path) as app:
        yield app


def formed_step(api: Api) -> str:
    """Form the Tokyo conversation; the step id its facts name."""
    ok(api.post(FORM, TOKYO))
    chunks = ok(api.get("/v1/agents/support-bot/memory:inspect"))["chunks"]
    (step_id,) = {c["metadata"][SOURCE_STEP] for c in chunks}
    return str(step_id)


def test_a_step_holds_the_rendered_turns_and_their_offsets(api: Api) -> None:
    step_id = formed_step(api)
    step = ok(api.get(f"{STEPS}/{step_id}"))
    assert set(step) == {"name", "stepId", "toolInput", "metadata", "createTime"}
    assert step["name"] == f"agents/support-bot/memory/steps/{step_id}"
    assert step["stepId"] == step_id and step["createTime"].endswith("Z")
    offsets = [int(o) for o in step["metadata"][TURN_OFFSETS].split(",")]
    assert len(offsets) == 3
    data = step["toolInput"].encode("utf-8")
    turns = [data[a:b].decode() for a, b in zip(offsets, [*offsets[1:], len(data)], strict=True)]
    for turn, sent in zip(turns, TOKYO["turns"], strict=True):
        assert sent["content"] in turn


def test_formed_facts_name_their_turns_in_the_step(api: Api) -> None:
    step_id = formed_step(api)
    chunks = ok(api.get("/v1/agents/support-bot/memory:inspect"))["chunks"]
    dark = next(c for c in chunks if "dark mode" in c["text"])
    assert dark["metadata"][SOURCE_TURNS] == "2"
    step = ok(api.get(f"{STEPS}/{step_id}"))
    offsets = [int(o) for o in step["metadata"][TURN_OFFSETS].split(",")]
    last = step["toolInput"].encode("utf-8")[offsets[2] :].decode()
    assert "I prefer dark mode in every tool." in last


def test_a_missing_step_is_not_found(api: Api) -> None:
    formed_step(api)
    error = refused(api.get(f"{STEPS}/frm_{'0' * 32}"), 404, "NOT_FOUND")
    assert reason(error) == "STEP_NOT_FOUND"
    assert error["message"] == (
        f"execution-log step 'frm_{'0' * 32}' was not found in agent workspace 'support-bot'"
    )


def test_a_step_is_read_in_its_own_workspace_only(api: Api) -> None:
    step_id = formed_step(api)
    ok(api.post("/v1/agents/other-bot/memory:commit", {"chunks": [{"text": "x"}]}))
    error = refused(api.get(f"/v1/agents/other-bot/memory/steps/{step_id}"), 404, "NOT_FOUND")
    assert reason(error) == "STEP_NOT_FOUND"
    missing = refused(api.get(f"/v1/agents/ghost/memory/steps/{step_id}"), 404, "NOT_FOUND")
    assert missing["message"] == "agent workspace 'ghost' was not found"


def test_a_step_id_is_validated_like_any_path_id(api: Api) -> None:
    error = refused(api.get(f"{STEPS}/bad%20id"), 400, "INVALID_ARGUMENT")
    assert "stepId" in error["message"]


def test_a_formation_that_writes_nothing_stores_no_step(api: Api) -> None:
    formed_step(api)
    again = ok(api.post(FORM, TOKYO | {"formationKey": "again"}))
    assert {c["decision"] for c in again["candidates"]} == {"MEMORY_DECISION_KNOWN"}
    assert again["executionLogRows"] == "0"


# the Cloud Functions


@pytest.fixture
def process_container(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Container:
    container = make_container(tmp_path, store=FormingFakeStore())
    monkeypatch.setattr(bootstrap, "container", lambda: container)
    return container


def function(name: str) -> Any:
    app: flask.Flask = functions_framework.create_app(  # type: ignore[no-untyped-call]
        name, str(ROOT / "functions" / name / "main.py")
    )
    return app.test_client()


def test_the_form_function_forms_and_serves_nothing_else(process_container: Container) -> None:
    form = function("form")
    answer = form.post(FORM, json=TOKYO, headers=AUTH)
    assert answer.status_code == 200, answer.get_data(as_text=True)
    assert answer.get_json()["executionLogRows"] == "1"
    for method, path in (("POST", "/v1/agents/support-bot/memory:commit"),
                         ("POST", "/v1/scopes/support-bot/memory:form"),
                         ("GET", f"{STEPS}/frm_x")):  # fmt: skip
        assert form.open(path, method=method, json={}, headers=AUTH).status_code == 404


def test_the_inspect_function_serves_steps(process_container: Container) -> None:
    function("form").post(FORM, json=TOKYO, headers=AUTH)
    chunks = function("inspect").get("/v1/agents/support-bot/memory:inspect", headers=AUTH)
    step_id = chunks.get_json()["chunks"][0]["metadata"][SOURCE_STEP]
    step = function("inspect").get(f"{STEPS}/{step_id}", headers=AUTH)
    assert step.status_code == 200 and step.get_json()["stepId"] == step_id
    assert function("query").get(f"{STEPS}/{step_id}", headers=AUTH).status_code == 404


# the formation model


def test_the_model_is_built_lazily_from_settings(tmp_path: Path) -> None:
    container = Container(Settings(data_dir=tmp_path / "lazy", embedder="hashing"))
    assert isinstance(container.model, RulesModel) and container.model is container.model
    assert not (tmp_path / "lazy").exists()


def test_the_vertex_model_needs_a_project(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, formation_model="vertex", vertex_project=None)
    with pytest.raises(Internal, match="JENNAH_VERTEX_PROJECT"):
        bootstrap.build_model(settings)
    model = bootstrap.build_model(
        settings.model_copy(update={"vertex_project": "p", "vertex_base_url": "http://x"})
    )
    assert (type(model).__name__, model.name, model.region) == (
        "VertexModel", settings.vertex_model, settings.vertex_location,
    )  # fmt: skip


# the OpenAPI document


def test_the_document_describes_form_and_steps() -> None:
    document = openapi.build_document()
    form = document["paths"]["/v1/agents/{agentInstanceId}/memory:form"]["post"]
    assert form["x-jennah-permission"] == "agent.memory:form"
    step = document["paths"]["/v1/agents/{agentInstanceId}/memory/steps/{stepId}"]["get"]
    assert step["x-jennah-permission"] == "agent.memory:query"
    assert [p["name"] for p in step["parameters"]] == ["agentInstanceId", "stepId"]
    assert "/v1/scopes/{scopeId}/memory:form" not in document["paths"]
    schemas = document["components"]["schemas"]
    assert schemas["FormRequest"]["additionalProperties"] is False
    assert schemas["FormTurn"]["properties"]["role"]["enum"] == [
        "TURN_ROLE_USER", "TURN_ROLE_ASSISTANT", "TURN_ROLE_TOOL_CALL", "TURN_ROLE_TOOL_RESULT",
    ]  # fmt: skip
    receipt = schemas["FormResponse"]["properties"]
    assert receipt["formationUnits"]["type"] == "string"
    assert receipt["candidateCap"]["type"] == "integer"
