"""A claim's evidence view: GET /v1/{agents|scopes}/{id}/memories/{memoryId}/evidence
(FakeStore), and `jnh … memory evidence`."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from jennah.domain.access import Role, RoleBinding, User
from jennah.domain.models import CommitPlan, Evidence, ScopeRef
from jennah.services.access import hash_secret, user_token
from tests.unit.fakes import ENTERPRISE, Api
from tests.unit.test_cli_memory import Jnh, jnh  # noqa: F401  (the fixture)

FORM = {
    "turns": [{"role": "TURN_ROLE_USER", "content": "I live in Lisbon."}],
    "observedAt": "2024-01-01T00:00:00Z",
}
BOT = ScopeRef(enterprise_id=ENTERPRISE, scope_id="bot")


@pytest.fixture
def api(tmp_path: Path) -> Api:
    return Api.create(tmp_path)


def ok(response: Any) -> dict[str, Any]:
    assert response.status_code == 200, response.get_data(as_text=True)
    body: dict[str, Any] = response.get_json()
    return body


def commit(api: Api, path: str, text: str, **fields: Any) -> str:
    body = {"chunks": [{"text": text, **fields}]}
    (memory_id,) = ok(api.post(f"{path}/memory:commit", body))["chunkIds"]
    return str(memory_id)


def add_evidence(api: Api, scope: ScopeRef, *lines: Evidence) -> None:
    api.store.apply(CommitPlan(scope=scope, evidence=list(lines)))


def test_a_formed_claim_shows_the_turn_it_came_from(api: Api) -> None:
    ok(api.post("/v1/agents/bot/memory:form", FORM))
    (chunk,) = ok(api.get("/v1/agents/bot/memory:inspect", allHistory="true"))["chunks"]
    for collection in ("agents", "scopes"):
        answer = ok(api.get(f"/v1/{collection}/bot/memories/{chunk['id']}/evidence"))
        (line,) = answer["evidence"]
        assert set(line) == {"ref", "quote", "recordedAt"}
        assert line["ref"].startswith("conv://bot/frm_") and line["ref"].endswith("#turn=0-0")
        assert line["quote"] and line["quote"] in "I live in Lisbon."
        assert line["recordedAt"].endswith("Z")


def test_lines_come_oldest_first_then_by_ref(api: Api) -> None:
    memory_id = commit(api, "/v1/scopes/bot", "Ana likes tea")
    day = datetime(2024, 3, 1, tzinfo=UTC)
    add_evidence(
        api, BOT,
        Evidence(memory_id=memory_id, ref="conv://bot/s2#turn=1-1", quote="b", recorded_at=day),
        Evidence(memory_id=memory_id, ref="conv://bot/s1#turn=4-5", quote="c", recorded_at=day),
        Evidence(memory_id=memory_id, ref="conv://bot/s9#turn=0-0", quote="a",
                 recorded_at=day - timedelta(days=30)),
        Evidence(memory_id="chk_other", ref="conv://bot/s3#turn=0-0", quote="z", recorded_at=day),
    )  # fmt: skip
    answer = ok(api.get(f"/v1/scopes/bot/memories/{memory_id}/evidence"))
    assert answer == {"evidence": [
        {"ref": "conv://bot/s9#turn=0-0", "quote": "a", "recordedAt": "2024-01-31T00:00:00Z"},
        {"ref": "conv://bot/s1#turn=4-5", "quote": "c", "recordedAt": "2024-03-01T00:00:00Z"},
        {"ref": "conv://bot/s2#turn=1-1", "quote": "b", "recordedAt": "2024-03-01T00:00:00Z"},
    ]}  # fmt: skip


def test_a_claim_without_evidence_answers_an_empty_list(api: Api) -> None:
    memory_id = commit(api, "/v1/scopes/bot", "Ana likes tea")
    assert ok(api.get(f"/v1/scopes/bot/memories/{memory_id}/evidence")) == {"evidence": []}


def test_hidden_claims_keep_their_evidence_readable(api: Api) -> None:
    for status in ("dormant", "retracted"):
        memory_id = commit(api, "/v1/scopes/bot", f"a {status} claim", status=status)
        add_evidence(api, BOT, Evidence(memory_id=memory_id, ref=f"conv://bot/{status}",
                                        quote=status, recorded_at=datetime.now(UTC)))  # fmt: skip
        (line,) = ok(api.get(f"/v1/scopes/bot/memories/{memory_id}/evidence"))["evidence"]
        assert line["quote"] == status


def test_a_memory_the_scope_does_not_hold_is_not_found_by_name(api: Api) -> None:
    commit(api, "/v1/scopes/bot", "Ana likes tea")
    elsewhere = commit(api, "/v1/scopes/other", "Bea likes coffee")
    for memory_id in ("chk_missing", elsewhere):
        response = api.get(f"/v1/scopes/bot/memories/{memory_id}/evidence")
        assert response.status_code == 404
        error = response.get_json()["error"]
        assert error["message"] == f"memory {memory_id!r} was not found in scope 'bot'"
        assert error["details"][0]["metadata"] == {"memoryId": memory_id}


def test_a_scope_that_does_not_exist_or_is_another_kind_is_not_found(api: Api) -> None:
    memory_id = commit(api, "/v1/scopes/team", "Ana likes tea")  # a subject scope
    missing = api.get(f"/v1/scopes/ghost/memories/{memory_id}/evidence")
    assert missing.get_json()["error"]["message"] == "scope 'ghost' was not found"
    wrong_kind = api.get(f"/v1/agents/team/memories/{memory_id}/evidence")
    assert wrong_kind.get_json()["error"]["message"] == "agent workspace 'team' was not found"


def test_a_bad_memory_id_is_a_400_naming_it(api: Api) -> None:
    commit(api, "/v1/scopes/bot", "Ana likes tea")
    response = api.get("/v1/scopes/bot/memories/not%20an%20id/evidence")
    assert response.status_code == 400
    assert response.get_json()["error"]["details"][0]["metadata"]["field"] == "memoryId"


def test_reading_needs_reach_like_memory_query(api: Api) -> None:
    memory_id = commit(api, "/v1/scopes/bot", "Ana likes tea")
    eve = "user:eve"
    api.identity.put_user(
        User(enterprise_id=ENTERPRISE, principal=eve, token_hash=hash_secret("s" * 64))
    )
    api.identity.put_binding(
        RoleBinding(
            enterprise_id=ENTERPRISE, principal=eve, role=Role.MEMBER, subject_selectors=["o.*"]
        )
    )
    token = user_token(ENTERPRISE, "user:eve", "s" * 64)
    unreached = api.get(f"/v1/scopes/bot/memories/{memory_id}/evidence", token=token)
    assert unreached.status_code == 404
    assert unreached.get_json()["error"]["message"] == "scope 'bot' was not found"


# the CLI


def test_jnh_prints_the_evidence_as_json_table_and_names(jnh: Jnh) -> None:  # noqa: F811
    api = jnh.api
    ok(api.post("/v1/agents/bot/memory:form", FORM))
    (chunk,) = ok(api.get("/v1/agents/bot/memory:inspect", allHistory="true"))["chunks"]
    answer = jnh.json("agents", "memory", "evidence", "bot", chunk["id"])
    (line,) = answer["evidence"]
    table = jnh.ok("agents", "memory", "evidence", "bot", chunk["id"])
    header, row = table.splitlines()
    assert header.split() == ["RECORDED_AT", "REF", "QUOTE"]
    assert row.startswith(line["recordedAt"]) and line["ref"] in row
    assert jnh.ok("scopes", "memory", "evidence", "bot", chunk["id"], "-o", "name").split() == [
        line["ref"]
    ]


def test_jnh_says_when_there_is_no_evidence_and_exits_4_for_a_missing_memory(
    jnh: Jnh,  # noqa: F811
) -> None:
    memory_id = commit(jnh.api, "/v1/scopes/team", "Ana likes tea")
    assert jnh.ok("scopes", "memory", "evidence", "team", memory_id).strip() == "No evidence."
    result = jnh("scopes", "memory", "evidence", "team", "chk_missing")
    assert result.exit_code == 4
    assert "memory 'chk_missing' was not found" in result.stderr
    assert json.loads(jnh.ok("scopes", "memory", "evidence", "team", memory_id, "-o", "json")) == {
        "evidence": []
    }
