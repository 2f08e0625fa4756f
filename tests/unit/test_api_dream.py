"""The lifecycle pass over HTTP on the fakes: POST …/memory:dream, the passes that follow a
memory:commit and a formation that changed memory, and the private `lifecycle` job."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import flask
import pytest

from jennah.api import jobs
from jennah.bootstrap import Container
from jennah.domain.models import (
    BriefVariant,
    CommitPlan,
    Durability,
    MemoryRecord,
    ScopeRecord,
    ScopeRef,
    Status,
)
from jennah.services import lifecycle
from tests.unit.fakes import Api, FakeCursorStore

SCOPE = ScopeRef(enterprise_id="local", scope_id="bot")
DREAM = "/v1/agents/bot/memory:dream"


@pytest.fixture
def api(tmp_path: Path) -> Api:
    return Api.create(tmp_path)


def claim(memory_id: str, scope: ScopeRef = SCOPE, **fields: Any) -> MemoryRecord:
    base = {"id": memory_id, "scope": scope, "text": f"the words of {memory_id}",
            "type": "identity", "authority": "user_stated"}  # fmt: skip
    return MemoryRecord.model_validate({**base, **fields})


def seed(api: Api, *claims: MemoryRecord, scope: ScopeRef = SCOPE) -> None:
    registration = ScopeRecord(scope=scope, kind="agent")
    api.store.apply(CommitPlan(scope=scope, registration=registration, chunks=list(claims)))


def test_dream_answers_what_the_pass_changed_and_a_replay_changes_nothing(api: Api) -> None:
    past = datetime.now(UTC) - timedelta(hours=1)
    seed(api, claim("chk_gone", valid_until=past),
         claim("chk_kept", durability=Durability.PASSING, reinforcement_count=3))  # fmt: skip
    first = api.post(DREAM)
    assert first.status_code == 200, first.get_json()
    assert first.get_json() == {"expired": 1, "promoted": 1, "decayed": 0, "briefChanged": True}
    (gone,) = api.store.get_chunks(SCOPE, ["chk_gone"])
    assert gone.status is Status.EXPIRED
    again = api.post("/v1/scopes/bot/memory:dream")
    assert again.get_json() == {"expired": 0, "promoted": 0, "decayed": 0, "briefChanged": False}


def test_dream_never_creates_a_scope(api: Api) -> None:
    missing = api.post("/v1/agents/nobody/memory:dream")
    assert missing.status_code == 404
    assert api.store.get_scope(ScopeRef(enterprise_id="local", scope_id="nobody")) is None


def test_dream_needs_the_commit_permission(api: Api) -> None:
    seed(api, claim("chk_a"))
    assert api.post(DREAM, token=None).status_code == 401


def test_a_commit_that_wrote_is_followed_by_the_pass(api: Api) -> None:
    answer = api.post("/v1/agents/bot/memory:commit", {"chunks": [{"text": "Ana likes tea"}]})
    assert answer.status_code == 200
    assert api.store.get_brief(SCOPE, BriefVariant.FULL) is not None
    assert api.store.plans[-1].briefs and not api.store.plans[-1].chunks


def test_a_formation_that_wrote_is_followed_by_the_pass_and_one_that_did_not_is_not(
    api: Api,
) -> None:
    turns = {"turns": [{"role": "TURN_ROLE_USER", "content": "I live in Lisbon."}],
             "formationKey": "first"}  # fmt: skip
    formed = api.post("/v1/agents/bot/memory:form", turns)
    assert formed.status_code == 200, formed.get_json()
    assert api.store.get_brief(SCOPE, BriefVariant.FULL) is not None
    written = len(api.store.plans)
    replayed = api.post("/v1/agents/bot/memory:form", turns)
    assert replayed.status_code == 200 and replayed.get_json()["replay"] is True
    assert len(api.store.plans) == written


def test_a_formation_that_changed_no_claim_causes_no_pass(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    turns = [{"role": "TURN_ROLE_USER", "content": "I live in Lisbon."}]
    assert api.post("/v1/agents/bot/memory:form", {"turns": turns}).status_code == 200
    passes: list[ScopeRef] = []
    monkeypatch.setattr(
        lifecycle, "dream_after_change", lambda store, scope, now: passes.append(scope)
    )
    written = len(api.store.plans)
    again = api.post("/v1/agents/bot/memory:form", {"turns": turns, "formationKey": "again"})
    assert again.status_code == 200
    assert not any(lifecycle.changes_claims(p) for p in api.store.plans[written:])
    assert passes == []


# the private `lifecycle` function


def serve(container: Container, budget: float | None = None) -> Any:
    app = flask.Flask("job")

    def run() -> flask.Response:
        if budget is None:
            return jobs.lifecycle(flask.request, container)
        return jobs.lifecycle(flask.request, container, budget_seconds=budget)

    app.add_url_rule("/", "job", run, methods=["GET", "POST"])
    return app.test_client()


def test_the_job_walks_every_scope_and_answers_what_it_did(api: Api) -> None:
    past = datetime.now(UTC) - timedelta(hours=1)
    for name in ("a", "b", "c"):
        seed(api, claim("chk_gone", valid_until=past), scope=ScopeRef(enterprise_id=f"e{name}",
                                                                       scope_id="bot"))  # fmt: skip
    answer = serve(api.container).post("/", json={})
    assert answer.status_code == 200, answer.get_json()
    body = answer.get_json()
    assert (body["finished"], body["scopes"], body["expired"], body["failedScopes"]) == (
        True, 3, 3, 0)  # fmt: skip
    cursors = api.container.cursors
    assert isinstance(cursors, FakeCursorStore)
    saved = cursors.saved[lifecycle.CURSOR]
    assert saved.finished_at is not None and saved.after is None


def test_a_job_out_of_time_answers_503_and_the_retry_resumes(api: Api) -> None:
    for name in ("a", "b"):
        seed(api, claim("chk_x"), scope=ScopeRef(enterprise_id=f"e{name}", scope_id="bot"))
    stopped = serve(api.container, budget=0.0).post("/", json={})
    assert stopped.status_code == 503 and stopped.headers["Retry-After"] == "60"
    assert stopped.get_json()["finished"] is False and stopped.get_json()["scopes"] == 0
    cursors = api.container.cursors
    assert isinstance(cursors, FakeCursorStore)
    walk = cursors.saved[lifecycle.CURSOR]
    assert walk.after is None and walk.finished_at is None
    resumed = serve(api.container).post("/", json={})
    assert resumed.status_code == 200 and resumed.get_json()["scopes"] == 2
    assert resumed.get_json()["walkStartedAt"] == stopped.get_json()["walkStartedAt"]


def test_the_job_is_run_by_post_only(api: Api) -> None:
    answer = serve(api.container).get("/")
    assert answer.status_code == 400
    assert answer.get_json()["error"]["status"] == "INVALID_ARGUMENT"
