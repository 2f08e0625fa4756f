"""The private `lifecycle` function's work on the embedded stores: the walk over every
scope on a real SqliteStore, its cursor in the same file (SqliteCursorStore), and a walk
that stopped resumed by the next run, also from a new process's container."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import flask
import pytest

from jennah.api import jobs
from jennah.bootstrap import Container
from jennah.domain.models import CommitPlan, MemoryRecord, ScopeRecord, ScopeRef, Status
from jennah.services import lifecycle
from tests.integration.test_api_form import sqlite_api

PAST = datetime.now(UTC) - timedelta(hours=1)
SCOPES = [ScopeRef(enterprise_id=f"e{i % 2}", scope_id=f"family-{i}") for i in range(5)]


@pytest.fixture
def api(tmp_path: Path) -> Iterator[Any]:
    with sqlite_api(tmp_path) as app:
        for scope in SCOPES:
            gone = MemoryRecord(id="chk_gone", scope=scope, text="pizza night", valid_until=PAST)
            registration = ScopeRecord(scope=scope, kind="agent")
            plan = CommitPlan(scope=scope, registration=registration, chunks=[gone])
            app.container.store.apply(plan)
        yield app


def serve(container: Container, budget: float = jobs.LIFECYCLE_BUDGET_SECONDS) -> Any:
    app = flask.Flask("job")
    app.add_url_rule(
        "/", "job", lambda: jobs.lifecycle(flask.request, container, budget), methods=["POST"]
    )
    return app.test_client()


def test_the_walk_expires_every_scopes_claims_and_a_rerun_changes_nothing(api: Any) -> None:
    first = serve(api.container).post("/", json={})
    assert first.status_code == 200, first.get_json()
    assert (first.get_json()["scopes"], first.get_json()["expired"]) == (5, 5)
    for scope in SCOPES:
        (gone,) = api.container.store.get_chunks(scope, ["chk_gone"])
        assert gone.status is Status.EXPIRED
    again = serve(api.container).post("/", json={}).get_json()
    assert (again["scopes"], again["expired"], again["briefsChanged"]) == (5, 0, 0)


def test_a_stopped_walk_is_resumed_by_a_new_process(api: Any, tmp_path: Path) -> None:
    container = api.container
    asked = iter([False, False, True])
    report = lifecycle.nightly(container.store, container.cursors, container.now(),
                               stop=lambda: next(asked))  # fmt: skip
    assert not report.finished and report.scopes == 2
    reopened = Container(container.settings, store=container.store, identity=container.identity)
    try:
        resumed = serve(reopened).post("/", json={}).get_json()  # its cursors: a new file handle
    finally:
        reopened.cursors.close()  # type: ignore[attr-defined]
    assert resumed["finished"] is True and (resumed["scopes"], resumed["expired"]) == (3, 3)
