"""The private functions' HTTP handlers: the usage rollup (Cloud Scheduler's target) and
the form-worker (Cloud Tasks' target): what they answer, and what that tells the caller."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import flask
import pytest

from jennah.adapters.models.scripted import ScriptedModel
from jennah.api import jobs
from jennah.bootstrap import Container
from jennah.domain.billing import UsageRecord
from jennah.domain.operations import OperationState, error_from
from jennah.ports.tasks import FormationTask, task_body
from tests.integration.test_api_form import FORM, TOKYO, _extraction, sqlite_api

ONE_FACT = _extraction(("The user lives in Tokyo.", "I live in Tokyo"))


def serve(container: Container, handler: Any) -> flask.testing.FlaskClient:
    app = flask.Flask("job")
    app.add_url_rule("/", "job", lambda: handler(flask.request, container), methods=["GET", "POST"])
    return app.test_client()


@pytest.fixture
def api(tmp_path: Path) -> Iterator[Any]:
    with sqlite_api(tmp_path, ScriptedModel()) as app:
        yield app


# usage-rollup


def test_the_rollup_folds_the_ledger_once(api: Any) -> None:
    container = api.container
    old = container.now() - timedelta(hours=3)
    container.ledger.record_many([
        UsageRecord(enterprise_id="local", spent_in_scope="bot", caller="user:root",
                    model="m", region="r", input_tokens=10, output_tokens=5, units=1,
                    formation_id=f"fu_{i}", recorded_at=old)
        for i in range(3)
    ])  # fmt: skip
    client = serve(container, jobs.usage_rollup)
    first = client.post("/", json={})
    assert first.status_code == 200 and first.get_json()["rowsFolded"] == 3
    again = client.post("/", json={})
    assert again.status_code == 200 and again.get_json()["rowsFolded"] == 0


def test_the_rollup_is_run_by_post_only(api: Any) -> None:
    answer = serve(api.container, jobs.usage_rollup).get("/")
    assert answer.status_code == 400
    assert answer.get_json()["error"]["status"] == "INVALID_ARGUMENT"


# form-worker


def submitted(api: Any) -> str:
    """An operation queued through the API, its delivery held back (a recording queue)."""
    held: list[FormationTask] = []
    api.container._tasks = type("Held", (), {"enqueue": lambda self, t: held.append(t)})()
    answer = api.post(FORM, {**TOKYO, "async": True})
    assert answer.status_code == 200, answer.get_json()
    (task,) = held
    return task.operation_id


def test_a_delivery_forms_and_is_acknowledged_then_a_redelivery_too(api: Any) -> None:
    operation_id = submitted(api)
    api.container.model.add(ONE_FACT)
    client = serve(api.container, jobs.form_worker)
    body = task_body(FormationTask(enterprise_id="local", operation_id=operation_id))
    first = client.post("/", data=body, content_type="application/json")
    assert first.status_code == 200 and first.get_json()["outcome"] == "ACK"
    operation = api.container.operations.get("local", operation_id)
    assert operation.state is OperationState.SUCCEEDED
    again = client.post("/", data=body, content_type="application/json")
    assert again.status_code == 200  # acknowledged: no second model call
    assert len(api.container.model.calls) == 1


def test_a_delivery_while_another_worker_holds_it_asks_for_a_retry(api: Any) -> None:
    operation_id = submitted(api)
    container = api.container
    container.operations.claim(
        "local", operation_id, "elsewhere", container.now(), timedelta(minutes=5)
    )
    body = task_body(FormationTask(enterprise_id="local", operation_id=operation_id))
    answer = serve(container, jobs.form_worker).post("/", data=body)
    assert answer.status_code == 503 and answer.headers["Retry-After"]
    assert container.model.calls == []


def test_a_task_for_no_operation_is_acknowledged(api: Any) -> None:
    body = task_body(FormationTask(enterprise_id="local", operation_id="op_" + "0" * 32))
    answer = serve(api.container, jobs.form_worker).post("/", data=body)
    assert answer.status_code == 200


def test_a_body_that_is_not_a_task_is_refused(api: Any) -> None:
    answer = serve(api.container, jobs.form_worker).post("/", data=b"{not json")
    assert answer.status_code == 400
    assert answer.get_json()["error"]["status"] == "INVALID_ARGUMENT"


def test_a_permanent_failure_is_acknowledged_and_recorded(api: Any) -> None:
    operation_id = submitted(api)
    api.container.model.add("this is not JSON")  # off the schema: INTERNAL
    body = task_body(FormationTask(enterprise_id="local", operation_id=operation_id))
    answer = serve(api.container, jobs.form_worker).post("/", data=body)
    assert answer.status_code == 200
    operation = api.container.operations.get("local", operation_id)
    assert operation.state is OperationState.FAILED and operation.error.code == "INTERNAL"
    assert error_from(operation.error).status == "INTERNAL"
