"""GET /v1/{agents|scopes}/{id}/memory/brief on the fakes: the answer, its ETag, 304s,
the shared variant, serve-time expiry, and refusals."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from jennah.api.brief import none_match
from jennah.domain.brief import count_tokens
from jennah.domain.formation import SOURCE_STEP
from jennah.domain.models import (
    CommitPlan,
    Evidence,
    MemoryRecord,
    MemoryType,
    ScopeRef,
    Sensitivity,
    Strength,
)
from jennah.services.brief import active_claims, compile_briefs
from tests.unit.fakes import TOKEN, Api

SCOPE = ScopeRef(enterprise_id="local", scope_id="bot")
BRIEF = "/v1/agents/bot/memory/brief"
NOW = datetime(2026, 12, 1, 12, tzinfo=UTC)


class Clock:
    def __init__(self) -> None:
        self.at = NOW

    def __call__(self) -> datetime:
        return self.at


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def api(tmp_path: Path, clock: Clock) -> Api:
    api = Api.create(tmp_path)
    api.container.now = clock
    created = api.post("/v1/scopes", {"scopeId": "bot", "kind": "AGENT"})
    assert created.status_code == 200, created.get_data(as_text=True)
    return api


def claim(memory_id: str, summary: str, **fields: object) -> MemoryRecord:
    return MemoryRecord(id=memory_id, scope=SCOPE, text=summary, summary=summary, **fields)


def write(api: Api, *claims: MemoryRecord, step: str | None = None) -> None:
    if step:
        claims = tuple(c.model_copy(update={"metadata": {SOURCE_STEP: step}}) for c in claims)
    lines = [
        Evidence(memory_id=c.id, ref=f"conv://bot/{step}#turn=1-1", quote="q", recorded_at=NOW)
        for c in claims
        if step
    ]
    api.store.apply(CommitPlan(scope=SCOPE, chunks=list(claims), evidence=lines))


def store_briefs(api: Api) -> None:
    """What the dream pass does after a change: compile both variants and store them."""
    briefs = compile_briefs(api.store, SCOPE, active_claims(api.store, SCOPE), NOW)
    api.store.apply(CommitPlan(scope=SCOPE, briefs=briefs))


def get(api: Api, path: str = BRIEF, if_none_match: str | None = None, **params: str) -> Any:
    headers = {"Authorization": f"Bearer {TOKEN}"}
    if if_none_match is not None:
        headers["If-None-Match"] = if_none_match
    return api.app.test_client().get(path, query_string=params, headers=headers)


def test_the_brief_answers_its_text_token_count_and_a_strong_etag(api: Api) -> None:
    write(api, claim("d1", "Always call before booking", type=MemoryType.DIRECTIVE,
                     strength=Strength.HARD))  # fmt: skip
    response = get(api)
    assert response.status_code == 200, response.get_data(as_text=True)
    body = response.get_json()
    assert set(body) == {"brief", "tokenCount"}
    assert '- (hard) "Always call before booking" memory://bot/d1' in body["brief"]
    assert body["tokenCount"] == count_tokens(body["brief"]) <= 2000
    etag = response.headers["ETag"]
    assert etag.startswith('"') and etag.endswith('"') and not etag.startswith("W/")
    assert response.headers["Cache-Control"] == "private, no-cache"
    assert get(api, "/v1/scopes/bot/memory/brief").get_json() == body


def test_if_none_match_with_the_current_tag_answers_304_with_no_body(api: Api) -> None:
    write(api, claim("d1", "Call first", type=MemoryType.DIRECTIVE))
    etag = get(api).headers["ETag"]
    for header in (etag, f'"x", {etag}', f"W/{etag}", f'W/"nope" , W/{etag}', "*"):
        response = get(api, if_none_match=header)
        assert response.status_code == 304, header
        assert response.get_data() == b""
        assert response.headers["ETag"] == etag
    for header in ('"other"', 'W/"other"', "", etag[:-2] + '"'):
        assert get(api, if_none_match=header).status_code == 200, header


def test_head_answers_the_etag(api: Api) -> None:
    etag = get(api).headers["ETag"]
    head = api.app.test_client().head(BRIEF, headers={"Authorization": f"Bearer {TOKEN}"})
    assert head.status_code == 200 and head.headers["ETag"] == etag and head.get_data() == b""


def test_a_changed_claim_changes_the_brief_and_its_etag(api: Api) -> None:
    write(api, claim("d1", "Call first", type=MemoryType.DIRECTIVE))
    first = get(api)
    write(api, claim("d2", "Text the coach", type=MemoryType.DIRECTIVE))
    second = get(api, if_none_match=first.headers["ETag"])
    assert second.status_code == 200
    assert "Text the coach" in second.get_json()["brief"]
    assert second.headers["ETag"] != first.headers["ETag"]


def test_identical_memory_answers_identical_bytes(api: Api, clock: Clock) -> None:
    write(api, claim("a", "one", about="x"), claim("b", "two", about="y"), step="frm_1")
    first = get(api).get_data()
    clock.at = NOW + timedelta(days=30)  # time passing alone changes nothing
    assert get(api).get_data() == first


def test_the_shared_variant_leaves_out_the_last_conversation(api: Api) -> None:
    write(api, claim("a", "We talked about the party"), step="frm_1")
    full = get(api).get_json()["brief"]
    shared_response = get(api, variant="shared")
    shared = shared_response.get_json()["brief"]
    assert "## Last conversation conv://bot/frm_1" in full and "party" in full
    assert "Last conversation" not in shared and "conv://" not in shared
    assert shared_response.headers["ETag"] != get(api).headers["ETag"]


def test_sensitive_claims_are_never_served(api: Api) -> None:
    write(api, claim("h", "Takes insulin", type=MemoryType.DIRECTIVE, pin=True,
                     sensitivity=Sensitivity.HEALTH), step="frm_1")  # fmt: skip
    store_briefs(api)
    for variant in ("full", "shared"):
        assert "insulin" not in get(api, variant=variant).get_json()["brief"]


def test_a_line_whose_expiry_passed_is_filtered_when_served(api: Api, clock: Clock) -> None:
    until = NOW + timedelta(hours=6)
    write(api, claim("pizza", "Pizza night is tonight", type=MemoryType.DIRECTIVE,
                     valid_until=until),
          claim("call", "Call before booking", type=MemoryType.DIRECTIVE))  # fmt: skip
    store_briefs(api)
    before = get(api)
    assert "Pizza night" in before.get_json()["brief"]
    clock.at = until
    after = get(api, if_none_match=before.headers["ETag"])
    assert after.status_code == 200
    assert "Pizza night" not in after.get_json()["brief"]
    assert "Call before booking" in after.get_json()["brief"]
    assert after.headers["ETag"] != before.headers["ETag"]
    assert after.get_json()["tokenCount"] == count_tokens(after.get_json()["brief"])
    assert get(api, if_none_match=after.headers["ETag"]).status_code == 304


def test_a_get_writes_nothing(api: Api) -> None:
    write(api, claim("a", "one"))
    plans = len(api.store.plans)
    assert get(api).status_code == 200
    assert len(api.store.plans) == plans


def test_a_bad_variant_is_a_400_naming_it(api: Api) -> None:
    response = get(api, variant="private")
    assert response.status_code == 400
    assert "variant" in response.get_data(as_text=True)


def test_an_unknown_scope_is_404_and_a_subject_scope_is_not_an_agent(api: Api) -> None:
    assert get(api, "/v1/agents/nobody/memory/brief").status_code == 404
    api.post("/v1/scopes", {"scopeId": "team", "kind": "SUBJECT"})
    assert get(api, "/v1/agents/team/memory/brief").status_code == 404
    assert get(api, "/v1/scopes/team/memory/brief").status_code == 200


def test_if_none_match_is_read_as_rfc_9110_lists() -> None:
    assert not none_match(None, '"a"') and not none_match("  ", '"a"')
    assert none_match('"a"', '"a"') and none_match("a", '"a"') and none_match('W/"a"', '"a"')
    assert not none_match('"ab"', '"a"') and none_match('"b",W/"a"', '"a"')


def test_post_is_not_allowed(api: Api) -> None:
    response = api.post(BRIEF, {})
    assert response.status_code in (404, 405)
    assert "GET" in response.headers["Allow"]
