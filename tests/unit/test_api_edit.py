"""POST …/memories/{memoryId}:edit on the wire (FakeStore): the answer's two claim views,
lineage both ways, the brief replacing the line at once, and every refusal named
(missing or blank text, a summary too long, unknown fields, a missing claim, a claim
that is not active, a concurrent change) with nothing written."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from jennah.domain import edit as edit_rules
from jennah.domain import rules
from jennah.errors import Aborted
from tests.unit.fakes import Api

OLD = "Ask before posting to the soccer chat"
NEW = "Ask Sam before posting anything to the soccer chat"


@pytest.fixture
def api(tmp_path: Path) -> Api:
    return Api.create(tmp_path)


def seed(api: Api, collection: str = "scopes", scope: str = "bot") -> str:
    body = {"chunks": [{"text": OLD, "type": "directive", "strength": "hard", "about": "Soccer"}]}
    answer = api.post(f"/v1/{collection}/{scope}/memory:commit", body)
    assert answer.status_code == 200, answer.get_data(as_text=True)
    return rules.chunk_id(OLD, None)


def edit_path(memory_id: str, collection: str = "scopes", scope: str = "bot") -> str:
    return f"/v1/{collection}/{scope}/memories/{memory_id}:edit"


def error(response: Any, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.get_data(as_text=True)
    found: dict[str, Any] = response.get_json()["error"]
    return found


@pytest.mark.parametrize("collection", ["agents", "scopes"])
def test_an_edit_answers_the_new_claim_and_the_superseded_one(api: Api, collection: str) -> None:
    old_id = seed(api, collection)
    answer = api.post(edit_path(old_id, collection), {"text": NEW, "summary": "Ask Sam first"})
    assert answer.status_code == 200, answer.get_data(as_text=True)
    body = answer.get_json()
    new, old = body["memory"], body["superseded"]
    assert set(body) == {"memory", "superseded"}
    assert (new["text"], new["summary"], new["authority"], new["confidence"]) == (
        NEW, "Ask Sam first", "user_explicit", 1.0,
    )  # fmt: skip
    assert (new["type"], new["strength"], new["about"]) == ("directive", "hard", "Soccer")
    assert (new["supersedes"], old["supersededBy"]) == (old_id, new["id"])
    assert (new["status"], old["status"], old["revision"]) == ("active", "superseded", 2)
    assert old["invalidAt"] == new["validAt"] and old["text"] == OLD
    evidence = api.get(f"/v1/{collection}/bot/memories/{new['id']}/evidence").get_json()
    assert evidence["evidence"][0]["ref"] == f"memory://bot/{new['id']}"
    brief = api.get(f"/v1/{collection}/bot/memory/brief").get_json()["brief"]
    assert f'"Ask Sam first" memory://bot/{new["id"]}' in brief and old_id not in brief


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "text"),
        ({"text": "   "}, "text"),
        ({"text": "x" * (rules.MAX_TEXT_LENGTH + 1)}, "text"),
        ({"text": "ok", "summary": "s" * 1025}, "summary"),
        ({"text": "ok", "pin": True}, "pin"),
    ],
)
def test_bad_words_are_named_and_change_nothing(api: Api, body: dict[str, Any], field: str) -> None:
    old_id = seed(api)
    before = api.store.snapshot(None)
    found = error(api.post(edit_path(old_id), body), 400)
    assert found["status"] == "INVALID_ARGUMENT"
    assert field in found["message"]
    assert api.store.snapshot(None) == before


def test_a_missing_claim_is_not_found(api: Api) -> None:
    seed(api)
    found = error(api.post(edit_path("chk_missing"), {"text": NEW}), 404)
    assert found["details"][0]["metadata"] == {"memoryId": "chk_missing"}


def test_a_superseded_claim_names_its_successor(api: Api) -> None:
    old_id = seed(api)
    new_id = api.post(edit_path(old_id), {"text": NEW}).get_json()["memory"]["id"]
    before = api.store.snapshot(None)
    found = error(api.post(edit_path(old_id), {"text": "Never post"}), 400)
    assert (found["status"], found["details"][0]["reason"]) == (
        "FAILED_PRECONDITION", edit_rules.CLAIM_NOT_ACTIVE,
    )  # fmt: skip
    assert found["details"][0]["metadata"] == {
        "memoryId": old_id, "status": "superseded", "supersededBy": new_id,
    }  # fmt: skip
    assert api.store.snapshot(None) == before


def test_a_retracted_claim_cannot_be_edited(api: Api) -> None:
    api.post("/v1/scopes/bot/memory:commit", {"chunks": [{"text": OLD, "status": "retracted"}]})
    found = error(api.post(edit_path(rules.chunk_id(OLD, None)), {"text": NEW}), 400)
    assert found["details"][0]["metadata"]["status"] == "retracted"


def test_a_concurrent_change_is_409_revision_changed(api: Api) -> None:
    old_id = seed(api)
    api.store.fail_next = Aborted("changed under this writer", reason=rules.REVISION_CHANGED)
    found = error(api.post(edit_path(old_id), {"text": NEW}), 409)
    assert (found["status"], found["details"][0]["reason"]) == ("ABORTED", "REVISION_CHANGED")
