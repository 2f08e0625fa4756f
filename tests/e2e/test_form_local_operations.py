"""The embedded default behaves like production: `jnh serve`'s server (waitress, and
werkzeug's threaded server it replaced) with its in-process worker pool cancels a formation
whose client disconnects, and answers the asynchronous mode. Served for real on a socket,
as `jnh serve` serves."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from jennah.adapters.models.scripted import ScriptedModel, Slow
from jennah.api.app import create_app
from jennah.api.server import make_server
from jennah.domain.operations import OperationState
from tests.integration.test_api_form import FORM, TOKYO, _extraction, rows, sqlite_api
from tests.unit.fakes import TOKEN

ANSWER = _extraction(("The user lives in Tokyo.", "I live in Tokyo"))


@pytest.fixture(params=["waitress", "werkzeug"])
def served(
    tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[tuple[str, object, ScriptedModel]]:
    model = ScriptedModel()
    with sqlite_api(tmp_path, model) as api:
        server = make_server(create_app(api.container), "127.0.0.1", 0, kind=request.param)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            yield f"http://127.0.0.1:{server.port}", api, model
        finally:
            server.shutdown()
            thread.join(timeout=10)
            server.server_close()
            api.container.tasks.close()


def test_a_client_that_disconnects_cancels_and_nothing_is_written(
    served: tuple[str, object, ScriptedModel],
) -> None:
    url, api, model = served
    model.add(Slow(1.5, ANSWER))
    port = int(url.rsplit(":", 1)[1])
    body = json.dumps({**TOKYO, "formationKey": "gone-once"}).encode()
    client = socket.create_connection(("127.0.0.1", port), timeout=10)
    client.sendall(
        f"POST {FORM} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {TOKEN}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n".encode()
        + body
    )
    _wait(lambda: len(model.calls) == 1, "the model call")
    client.close()
    operations = api.container.operations  # type: ignore[attr-defined]
    table = lambda: rows(api)["formation_operations"]  # noqa: E731
    _wait(lambda: len(table()) == 1 and _state(table()[0]) == "CANCELLED", "the cancel")
    (operation_id,) = [v for v in table()[0] if isinstance(v, str) and v.startswith("op_")]
    operation = operations.get("local", operation_id)
    assert operation.state is OperationState.CANCELLED and operation.cancel_requested
    written = rows(api)
    assert written["memory_records"] == [] and written["formation_keys"] == []
    assert len(written["usage_records"]) == 1  # it reached the model: its units count

    model.add(ANSWER)  # the same request again forms normally
    again = httpx.post(f"{url}{FORM}", json={**TOKYO, "formationKey": "gone-once"},
                       headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30)  # fmt: skip
    assert again.status_code == 200, again.text
    assert again.json()["replay"] is False and len(rows(api)["memory_records"]) == 1


def test_the_async_mode_round_trips(served: tuple[str, object, ScriptedModel]) -> None:
    url, _, model = served
    model.add(Slow(0.5, ANSWER))
    headers = {"Authorization": f"Bearer {TOKEN}"}
    started = time.monotonic()
    submitted = httpx.post(f"{url}{FORM}", json={**TOKYO, "async": True}, headers=headers)
    assert submitted.status_code == 200 and time.monotonic() - started < 0.5
    operation = submitted.json()
    assert operation["name"].startswith("operations/op_") and operation["done"] is False
    for _ in range(300):
        operation = httpx.get(f"{url}/v1/{operation['name']}", headers=headers).json()
        if operation["done"]:
            break
        time.sleep(0.02)
    assert operation["done"] and operation["metadata"]["state"] == "SUCCEEDED"
    assert [c["text"] for c in operation["response"]["candidates"]] == ["The user lives in Tokyo."]


def _state(row: tuple[object, ...]) -> str:
    return next(v for v in row if v in {"QUEUED", "RUNNING", "SUCCEEDED", "FAILED",
                                         "CANCELLED"})  # type: ignore[return-value]  # fmt: skip


def _wait(check: object, what: str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():  # type: ignore[operator]
            return
        time.sleep(0.01)
    raise AssertionError(f"timed out waiting for {what}")
