"""memory:form as an operation, end to end on the production wiring: the `form`,
`form-worker`, `operations` and `query` functions as real functions-framework processes,
on Spanner (memory and usage), Firestore (identities and operations) and a Cloud Tasks
queue, each on its local emulator, with the Vertex AI model on the local stand-in
(answering from the rules model; slow on demand).

    client --HTTP--> form --task--> Cloud Tasks emulator --POST--> tap --> form-worker
                      |  waits on the operation (Firestore)              |  claims, forms
                      '------------------ receipt <----------------------'  commits (Spanner)

The tap (tests/support/functions_process.py) records each delivery and what the worker
answered (200 ACK, 503 RETRY, 502 when the worker was down). The emulator delivers one
task of a queue at a time and retries every failure every ~0.1 s, forever; it delivers a
task created twice under one name twice (production refuses the second).

Every test has an enterprise of its own (Free plan), so "nothing written" and "one usage
record" read that enterprise's rows only. The workers hold an operation for a lease of
LEASE_SECONDS (production: 31 minutes), so a crashed worker's operation is taken over
within the test.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest

from jennah.domain.operations import FormationOperation, OperationState
from jennah.ports.tasks import FormationTask
from tests.support.emulator_process import free_port
from tests.support.functions_process import DeliveryTap, FunctionProcess, TapDelivery, stop_all

pytestmark = [
    pytest.mark.spanner,
    pytest.mark.firestore,
    pytest.mark.cloud_tasks,
    pytest.mark.slow,
]

AGENT = "bot.e2e"
FORM_PATH = f"/v1/agents/{AGENT}/memory:form"
LEASE_SECONDS = 5  # the form-worker's claim on an operation (JENNAH_OPERATION_LEASE_SECONDS)
SHORT_CALL_SECONDS = 1  # the per-call model bound of the `form_short` function
TOKYO = {
    "turns": [
        {"role": "TURN_ROLE_USER", "content": "I live in Tokyo and I work at Alphaus."},
        {"role": "TURN_ROLE_ASSISTANT", "content": "Noted. Anything else about your setup?"},
        {"role": "TURN_ROLE_USER", "content": "I prefer dark mode in every tool."},
    ]
}
FORMED = {
    "The user lives in Tokyo.",
    "The user works at Alphaus.",
    "The user prefers dark mode in every tool.",
}
# The tables a formation writes, keyed by (enterprise_id, scope_id): "nothing written" is
# none of them holding a row of the enterprise. (The scope row is written by the commit.)
MEMORY_TABLES = (
    "memory_records",
    "evidence",
    "memory_links",
    "graph_nodes",
    "graph_edges",
    "execution_log_steps",
    "formation_keys",
    "scopes",
)
QUIET_SECONDS = 1.0  # watch this long for deliveries or model calls that must not come
CLOCK_SLACK_SECONDS = 0.05  # the wall clock against time.monotonic(), read apart

_T = TypeVar("_T")


@dataclass
class Deployment:
    """The functions, the stand-ins and handles on the emulators' data."""

    form: FunctionProcess
    form_short: FunctionProcess  # the same function with a SHORT_CALL_SECONDS model-call bound
    worker: FunctionProcess
    operations: FunctionProcess
    query: FunctionProcess
    tap: DeliveryTap
    standin: Any  # tests.support.vertex_standin.VertexStandIn
    database: Any  # google.cloud.spanner Database
    firestore: Any  # google.cloud.firestore Client
    tasks_client: Any
    queue_path: str

    def model_calls(self) -> int:
        return sum(1 for r in self.standin.requests if r.method == "generateContent")


@dataclass(frozen=True)
class Tenant:
    enterprise_id: str
    principal: str
    token: str

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}


@pytest.fixture(scope="module")
def deployment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    from tests.support import cloud_tasks_emulator, firestore_emulator, spanner_emulator
    from tests.support.vertex_standin import LOCATION, PROJECT, VertexStandIn

    spanner_host = spanner_emulator.session_emulator().host
    database = spanner_emulator.create_database(spanner_host)
    firestore = firestore_emulator.firestore_test_client()
    tasks_client = cloud_tasks_emulator.cloud_tasks_test_client()
    workdir = tmp_path_factory.mktemp("form-operations")
    with contextlib.ExitStack() as stack:
        queue_path = stack.enter_context(cloud_tasks_emulator.new_queue(tasks_client))
        standin = stack.enter_context(VertexStandIn())
        worker_port = free_port()
        tap = DeliveryTap(f"http://127.0.0.1:{worker_port}")
        stack.callback(tap.close)
        env = _function_env(
            workdir,
            spanner_host=spanner_host,
            database_id=database.name.rsplit("/", 1)[-1],
            firestore_host=firestore_emulator.session_emulator().host,
            tasks_host=cloud_tasks_emulator.session_emulator().host,
            queue_path=queue_path,
            worker_url=tap.url,
            vertex_url=standin.base_url,
            vertex_project=PROJECT,
            vertex_location=LOCATION,
        )
        short = env | {"JENNAH_MODEL_CALL_TIMEOUT_SECONDS": str(SHORT_CALL_SECONDS)}
        processes = Deployment(
            form=FunctionProcess("form", "form", env, workdir),
            form_short=FunctionProcess("form", "form", short, workdir),
            worker=FunctionProcess("form-worker", "form_worker", env, workdir, port=worker_port),
            operations=FunctionProcess("operations", "operations", env, workdir),
            query=FunctionProcess("query", "query", env, workdir),
            tap=tap,
            standin=standin,
            database=database,
            firestore=firestore,
            tasks_client=tasks_client,
            queue_path=queue_path,
        )
        functions = (
            processes.form,
            processes.form_short,
            processes.worker,
            processes.operations,
            processes.query,
        )
        stack.callback(stop_all, functions)
        for function in functions:
            function.start()
        for function in functions:
            function.wait_ready()
        warm_up(processes)
        yield processes


def warm_up(deployment: Deployment) -> None:
    """One request to each function, at once, that builds its clients, so no test times a
    cold start: an empty formation (authenticated, scope opened, then refused), an unknown
    operation, a query, and a task of an operation that does not exist (acknowledged)."""
    tenant = new_tenant(deployment)
    missing = f"op_{'0' * 32}"
    task = FormationTask(enterprise_id=tenant.enterprise_id, operation_id=missing)
    calls: list[tuple[Callable[[], httpx.Response], tuple[int, ...]]] = [
        (lambda: form(deployment, tenant, {"turns": []}), (400,)),
        (lambda: form(deployment, tenant, {"turns": []}, function=deployment.form_short), (400,)),
        (
            lambda: httpx.get(
                f"{deployment.operations.url}/v1/operations/{missing}",
                headers=tenant.headers,
                timeout=60,
            ),
            (404,),
        ),
        (
            lambda: httpx.post(
                f"{deployment.query.url}/v1/agents/{AGENT}/memory:query",
                json={"semantic": {"queryText": "anything"}},
                headers=tenant.headers,
                timeout=60,
            ),
            (200, 404),
        ),
        (
            lambda: httpx.post(
                deployment.worker.url, content=task.model_dump_json(by_alias=True), timeout=60
            ),
            (200,),
        ),
    ]
    answers = [(in_background(call), expected) for call, expected in calls]
    for answer, expected in answers:
        got = answer(60)
        assert got.status_code in expected, got.text


def _function_env(
    workdir: Path,
    *,
    spanner_host: str,
    database_id: str,
    firestore_host: str,
    tasks_host: str,
    queue_path: str,
    worker_url: str,
    vertex_url: str,
    vertex_project: str,
    vertex_location: str,
) -> dict[str, str]:
    """What every function process runs with: the production adapters on the emulators."""
    from tests.support import firestore_emulator, spanner_emulator

    # google-genai asks Application Default Credentials for a token on every Vertex AI
    # call: an authorized-user file whose token is valid until 2099 is never refreshed.
    credentials = workdir / "adc.json"
    credentials.write_text(
        json.dumps(
            {
                "type": "authorized_user",
                "client_id": "standin",
                "client_secret": "standin",
                "refresh_token": "standin",
                "token": "standin-token",
                "expiry": "2099-01-01T00:00:00Z",
            }
        )
    )
    _, project, _, location, _, queue = queue_path.split("/")
    inherited = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("JENNAH_", "GOOGLE_", "CLOUDSDK_"))
        and k.lower() not in ("http_proxy", "https_proxy", "all_proxy")
        and not k.endswith("_EMULATOR_HOST")
    }
    return inherited | {
        "SPANNER_EMULATOR_HOST": spanner_host,
        "GOOGLE_CLOUD_SPANNER_MULTIPLEXED_SESSIONS_FOR_RW": "false",
        "FIRESTORE_EMULATOR_HOST": firestore_host,
        "CLOUD_TASKS_EMULATOR_HOST": tasks_host,
        "GOOGLE_APPLICATION_CREDENTIALS": str(credentials),
        "JENNAH_STORE": "spanner",
        "JENNAH_CONTROL": "firestore",
        "JENNAH_SPANNER_PROJECT": spanner_emulator.PROJECT,
        "JENNAH_SPANNER_INSTANCE": spanner_emulator.INSTANCE,
        "JENNAH_SPANNER_DATABASE": database_id,
        "JENNAH_FIRESTORE_PROJECT": firestore_emulator.PROJECT,
        "JENNAH_FORMATION_QUEUE": "cloud_tasks",
        "JENNAH_TASKS_PROJECT": project,
        "JENNAH_TASKS_LOCATION": location,
        "JENNAH_TASKS_QUEUE": queue,
        "JENNAH_FORM_WORKER_URL": worker_url,
        "JENNAH_OPERATION_LEASE_SECONDS": str(LEASE_SECONDS),
        "JENNAH_EMBEDDER": "hashing",
        "JENNAH_FORMATION_MODEL": "vertex",
        "JENNAH_VERTEX_PROJECT": vertex_project,
        "JENNAH_VERTEX_LOCATION": vertex_location,
        "JENNAH_VERTEX_BASE_URL": vertex_url,
        "JENNAH_DATA_DIR": str(workdir / "data"),
    }


@pytest.fixture
def tenant(deployment: Deployment) -> Tenant:
    return new_tenant(deployment)


def new_tenant(deployment: Deployment) -> Tenant:
    """A new enterprise (Free plan: no billing settings stored) and its root credential."""
    from jennah.adapters.firestore.identity import FirestoreIdentityStore
    from jennah.services.access import create_enterprise

    deployment.standin.reset()
    tag = uuid.uuid4().hex[:10]
    enterprise_id, principal = f"ops-e2e-{tag}", f"user:root-{tag}"  # principals are global
    identity = FirestoreIdentityStore(deployment.firestore)
    token = create_enterprise(identity, enterprise_id, principal, datetime.now(UTC))
    return Tenant(enterprise_id, principal, token)


# Driving the functions.


def form(
    deployment: Deployment,
    tenant: Tenant,
    body: dict[str, Any],
    *,
    function: FunctionProcess | None = None,
    timeout: float = 60.0,
) -> httpx.Response:
    function = function or deployment.form
    return httpx.post(function.url + FORM_PATH, json=body, headers=tenant.headers, timeout=timeout)


def in_background(call: Callable[[], _T]) -> Callable[[float], _T]:
    """Run `call` in a thread; the returned function waits for its result."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["result"] = call()
        except BaseException as exc:  # re-raised in the waiting thread
            box["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()

    def result(timeout: float) -> _T:
        thread.join(timeout)
        assert not thread.is_alive(), f"no answer within {timeout:g} s"
        if "error" in box:
            raise box["error"]
        return box["result"]  # type: ignore[no-any-return]

    return result


def wait_until(check: Callable[[], _T | None], what: str, timeout: float = 30.0) -> _T:
    deadline = time.monotonic() + timeout
    while True:
        found = check()
        if found:
            return found
        if time.monotonic() >= deadline:
            raise AssertionError(f"{what}: not within {timeout:g} s")
        time.sleep(0.05)


def model_call_started(deployment: Deployment, before: int, timeout: float = 30.0) -> None:
    """Wait until the stand-in has received a model call beyond the first `before`."""
    wait_until(lambda: deployment.model_calls() > before, "a model call", timeout)


# Reading what was written.


def operations_of(deployment: Deployment, tenant: Tenant) -> list[FormationOperation]:
    from jennah.adapters.firestore.operations import FirestoreOperationStore

    store = FirestoreOperationStore(deployment.firestore)
    documents = (
        deployment.firestore.collection("enterprises")
        .document(tenant.enterprise_id)
        .collection("operations")
        .list_documents()
    )
    found = [store.get(tenant.enterprise_id, d.id) for d in documents]
    return [op for op in found if op is not None]


def the_operation(deployment: Deployment, tenant: Tenant) -> FormationOperation:
    [operation] = wait_until(lambda: operations_of(deployment, tenant), "an operation")
    return operation


def done_operation(
    deployment: Deployment, tenant: Tenant, timeout: float = 30.0
) -> FormationOperation:
    def done() -> FormationOperation | None:
        operation = the_operation(deployment, tenant)
        return operation if operation.done else None

    return wait_until(done, "the operation done", timeout)


def rows(deployment: Deployment, sql: str, tenant: Tenant) -> list[list[Any]]:
    with deployment.database.snapshot() as snapshot:
        return [
            list(row)
            for row in snapshot.execute_sql(
                sql,
                params={"e": tenant.enterprise_id},
                param_types={"e": _string_type()},
                timeout=30,
            )
        ]


def _string_type() -> Any:
    from google.cloud import spanner

    return spanner.param_types.STRING


def memory_counts(deployment: Deployment, tenant: Tenant) -> dict[str, int]:
    """How many rows of the enterprise each table a formation writes holds."""
    union = " UNION ALL ".join(
        f"SELECT '{table}', COUNT(*) FROM {table} WHERE enterprise_id = @e"
        for table in MEMORY_TABLES
    )
    return {table: count for table, count in rows(deployment, union, tenant)}


NOTHING = dict.fromkeys(MEMORY_TABLES, 0)


def formation_keys(deployment: Deployment, tenant: Tenant) -> list[str]:
    found = rows(
        deployment, "SELECT formation_key FROM formation_keys WHERE enterprise_id = @e", tenant
    )
    return sorted(row[0] for row in found)


def chunk_texts(deployment: Deployment, tenant: Tenant) -> list[str]:
    found = rows(deployment, "SELECT text FROM memory_records WHERE enterprise_id = @e", tenant)
    return sorted(row[0] for row in found)


@dataclass(frozen=True)
class Usage:
    formation_id: str
    units: int
    input_tokens: int
    output_tokens: int
    formation_key: str | None


def usage_records(deployment: Deployment, tenant: Tenant) -> list[Usage]:
    found = rows(
        deployment,
        "SELECT formation_id, units, input_tokens, output_tokens, formation_key "
        "FROM usage_records WHERE enterprise_id = @e ORDER BY formation_id",
        tenant,
    )
    return [Usage(*row) for row in found]


def reservations(deployment: Deployment, tenant: Tenant) -> list[str]:
    found = rows(
        deployment,
        "SELECT formation_id FROM formation_reservations WHERE enterprise_id = @e",
        tenant,
    )
    return sorted(row[0] for row in found)


def statuses(deliveries: list[TapDelivery]) -> list[int]:
    return [d.status for d in deliveries]


def acked(deliveries: list[TapDelivery]) -> bool:
    return bool(deliveries) and deliveries[-1].status == 200


def acknowledged_once(deliveries: list[TapDelivery]) -> bool:
    """Delivered until acknowledged, once: the last answer is the only 200, and any
    before it a 503 (a transient failure the worker handed back to the queue)."""
    codes = statuses(deliveries)
    return bool(codes) and codes[-1] == 200 and set(codes[:-1]) <= {503}


def decisions(receipt: dict[str, Any]) -> dict[str, str]:
    return {c["text"]: c["decision"] for c in receipt["candidates"]}


def assert_all_new(receipt: dict[str, Any]) -> None:
    """The Tokyo conversation formed into a fresh workspace: its facts (and the graph
    relations they carry), every one new."""
    decided = decisions(receipt)
    assert decided.keys() >= FORMED
    assert set(decided.values()) == {"MEMORY_DECISION_NEW"}


def assert_formed_once(deployment: Deployment, tenant: Tenant, key: str) -> None:
    """The Tokyo conversation committed exactly once, under `key`."""
    assert formation_keys(deployment, tenant) == [key]
    assert chunk_texts(deployment, tenant) == sorted(FORMED)
    assert memory_counts(deployment, tenant)["execution_log_steps"] == 1


@contextlib.contextmanager
def second_queue(deployment: Deployment) -> Iterator[Any]:
    """Another queue delivering to the same form-worker: its deliveries run concurrently
    with the first queue's (the emulator runs one task at a time per queue)."""
    from jennah.adapters.cloud_tasks.queue import CloudTasksQueue
    from tests.support.cloud_tasks_emulator import new_queue

    with new_queue(deployment.tasks_client) as path:
        yield CloudTasksQueue(
            deployment.tasks_client, path, deployment.tap.url, service_account_email=None
        )


# 1. The round trip.


def test_a_formation_goes_through_the_queue_and_the_worker_and_answers_its_receipt(
    deployment: Deployment, tenant: Tenant
) -> None:
    answer = form(deployment, tenant, TOKYO | {"formationKey": "round-trip"})

    assert answer.status_code == 200, answer.text
    receipt = answer.json()
    assert_all_new(receipt)
    assert int(receipt["formationUnits"]) >= 1 and receipt["replay"] is False
    assert receipt["commitTimestamp"].endswith("Z")
    # it ran as an operation, delivered once by the emulator and acknowledged
    operation = the_operation(deployment, tenant)
    assert (operation.state, operation.attempts) == (OperationState.SUCCEEDED, 1)
    assert operation.formation_key == "round-trip"
    deliveries = deployment.tap.wait_for(acked, operation.operation_id)
    assert acknowledged_once(deliveries), statuses(deliveries)
    assert {d.queue for d in deliveries} == {deployment.queue_path}
    assert_formed_once(deployment, tenant, "round-trip")
    # the query function finds what the worker committed
    query = httpx.post(
        deployment.query.url + f"/v1/agents/{AGENT}/memory:query",
        json={"semantic": {"queryText": "where does the user live", "topK": 10}},
        headers=tenant.headers,
        timeout=60,
    )
    assert query.status_code == 200, query.text
    assert {r["text"] for r in query.json()["semantic"]["results"]} >= FORMED
    # one usage record, under the admitted formation, with the receipt's units
    [usage] = usage_records(deployment, tenant)
    assert usage.formation_id == operation.formation_id
    assert (usage.units, usage.input_tokens, usage.output_tokens, usage.formation_key) == (
        int(receipt["formationUnits"]),
        int(receipt["inputTokens"]),
        int(receipt["outputTokens"]),
        "round-trip",
    )
    assert reservations(deployment, tenant) == []
    # the same request again replays: no operation, no delivery, nothing spent
    calls = deployment.model_calls()
    again = form(deployment, tenant, TOKYO | {"formationKey": "round-trip"})
    assert again.status_code == 200, again.text
    assert again.json()["replay"] is True
    assert {k: v for k, v in again.json().items() if k != "replay"} == {
        k: v for k, v in receipt.items() if k != "replay"
    }
    assert len(operations_of(deployment, tenant)) == 1
    assert deployment.model_calls() == calls
    assert len(usage_records(deployment, tenant)) == 1


# 2. async: the operation at once, then GET /v1/operations/{id}.


def test_an_async_formation_answers_its_operation_at_once_and_the_operation_its_receipt(
    deployment: Deployment, tenant: Tenant
) -> None:
    deployment.standin.slow_next(1.5)  # the formation is still running when the answer comes
    started = time.monotonic()
    answer = form(deployment, tenant, TOKYO | {"async": True})
    elapsed = time.monotonic() - started

    assert answer.status_code == 200, answer.text
    queued = answer.json()
    assert elapsed < 1.5
    assert queued["name"].startswith("operations/op_") and queued["done"] is False
    assert queued["metadata"]["state"] == "QUEUED"
    assert queued["metadata"]["agentInstanceId"] == AGENT
    assert queued["metadata"]["caller"] == tenant.principal
    assert "response" not in queued and "error" not in queued
    operation_id = queued["name"].removeprefix("operations/")
    url = f"{deployment.operations.url}/v1/operations/{operation_id}"

    seen: list[str] = []

    def finished() -> dict[str, Any] | None:
        got = httpx.get(url, headers=tenant.headers, timeout=30)
        assert got.status_code == 200, got.text
        seen.append(got.json()["metadata"]["state"])
        return got.json() if got.json()["done"] else None

    done = wait_until(finished, "the operation done")

    assert "RUNNING" in seen  # polled while the worker ran it
    assert done["name"] == queued["name"] and "error" not in done
    assert done["metadata"]["state"] == "SUCCEEDED" and done["metadata"]["attempts"] == 1
    receipt = done["response"]
    assert_all_new(receipt)
    assert int(receipt["formationUnits"]) >= 1 and receipt["replay"] is False
    assert "formationKey" not in receipt  # the operation's own key is not the caller's
    # committed under the operation's own key, so a retried worker would replay it
    assert_formed_once(deployment, tenant, f"jennah.operation/{operation_id}")
    assert len(usage_records(deployment, tenant)) == 1
    # another enterprise's caller is answered as though the operation did not exist
    outsider = new_tenant(deployment)
    hidden = httpx.get(url, headers=outsider.headers, timeout=30)
    assert hidden.status_code == 404 and hidden.json()["error"]["status"] == "NOT_FOUND"


# 3. A client that disconnects cancels the formation: nothing written, its units counted.


def test_a_client_that_disconnects_cancels_the_formation_and_nothing_is_written(
    deployment: Deployment, tenant: Tenant
) -> None:
    body = TOKYO | {"formationKey": "cancelled-once"}
    deployment.standin.slow_next(2.5)
    calls = deployment.model_calls()
    client = _send_raw(deployment.form.port, tenant, body)
    model_call_started(deployment, calls)  # the worker is in the model call
    client.close()  # the client goes away

    operation = done_operation(deployment, tenant)

    assert operation.state is OperationState.CANCELLED
    assert operation.error is not None and operation.error.code == "CANCELLED"
    assert operation.cancel_requested
    # the worker acknowledged its delivery: the emulator does not run it again
    deliveries = deployment.tap.wait_for(acked, operation.operation_id)
    assert acknowledged_once(deliveries), statuses(deliveries)
    assert memory_counts(deployment, tenant) == NOTHING
    # the formation reached the model: its units count
    [usage] = usage_records(deployment, tenant)
    assert usage.formation_id == operation.formation_id
    assert usage.units >= 1 and usage.formation_key == "cancelled-once"
    assert reservations(deployment, tenant) == []

    # the same request under the same key then forms normally
    again = form(deployment, tenant, body)
    assert again.status_code == 200, again.text
    assert again.json()["replay"] is False
    assert_all_new(again.json())
    assert_formed_once(deployment, tenant, "cancelled-once")
    assert len(usage_records(deployment, tenant)) == 2


def _send_raw(port: int, tenant: Tenant, body: dict[str, Any]) -> socket.socket:
    """Send a memory:form request on a plain socket, without reading the answer."""
    payload = json.dumps(body).encode()
    head = (
        f"POST {FORM_PATH} HTTP/1.1\r\n"
        f"Host: 127.0.0.1:{port}\r\n"
        f"Authorization: Bearer {tenant.token}\r\n"
        "Content-Type: application/json\r\n"
        f"Content-Length: {len(payload)}\r\n"
        "\r\n"
    ).encode()
    client = socket.create_connection(("127.0.0.1", port), timeout=10)
    client.sendall(head + payload)
    return client


# 4. A task delivered twice commits once.


def test_a_task_delivered_twice_commits_once_and_the_second_delivery_is_acknowledged(
    deployment: Deployment, tenant: Tenant
) -> None:
    from jennah.adapters.cloud_tasks.queue import CloudTasksQueue

    answer = form(deployment, tenant, TOKYO | {"async": True, "formationKey": "twice"})
    assert answer.status_code == 200, answer.text
    operation_id = answer.json()["name"].removeprefix("operations/")
    task = FormationTask(enterprise_id=tenant.enterprise_id, operation_id=operation_id)
    # the same task (same name) again on the same queue: the emulator delivers it too,
    # after the first (production would refuse it as ALREADY_EXISTS)
    queue = CloudTasksQueue(
        deployment.tasks_client, deployment.queue_path, deployment.tap.url,
        service_account_email=None,
    )  # fmt: skip
    queue.enqueue(task)

    formed = deployment.tap.wait_for(acked, operation_id)  # the delivery that formed it
    calls = deployment.model_calls()  # what the formation called
    attempts = the_operation(deployment, tenant).attempts
    deliveries = deployment.tap.wait_for(lambda d: statuses(d).count(200) == 2, operation_id)
    time.sleep(QUIET_SECONDS)

    assert acknowledged_once(formed), statuses(formed)
    assert statuses(deliveries) == [*statuses(formed), 200]  # the other is acknowledged at once
    assert deployment.tap.deliveries(operation_id) == deliveries  # ... and not delivered again
    assert deployment.model_calls() == calls >= 1  # ... without a model call
    operation = done_operation(deployment, tenant)
    assert operation.state is OperationState.SUCCEEDED
    assert operation.attempts == attempts  # ... nor a claim
    assert_formed_once(deployment, tenant, "twice")
    assert [u.formation_id for u in usage_records(deployment, tenant)] == [operation.formation_id]


def test_a_duplicate_delivered_while_the_first_runs_is_retried_until_it_finishes(
    deployment: Deployment, tenant: Tenant
) -> None:
    deployment.standin.slow_next(1.5)  # well within the lease
    calls = deployment.model_calls()
    answer = form(deployment, tenant, TOKYO | {"async": True, "formationKey": "concurrent"})
    assert answer.status_code == 200, answer.text
    operation_id = answer.json()["name"].removeprefix("operations/")
    model_call_started(deployment, calls)  # the first delivery holds the operation

    with second_queue(deployment) as duplicate:
        duplicate.enqueue(
            FormationTask(enterprise_id=tenant.enterprise_id, operation_id=operation_id)
        )

        def both_acked(found: list[TapDelivery]) -> bool:
            return acked([d for d in found if d.queue == deployment.queue_path]) and acked(
                [d for d in found if d.queue == duplicate.queue_path]
            )

        deliveries = deployment.tap.wait_for(both_acked, operation_id)
        after = deployment.model_calls()
        time.sleep(QUIET_SECONDS)

    first = [d for d in deliveries if d.queue == deployment.queue_path]
    second = [d for d in deliveries if d.queue == duplicate.queue_path]
    assert acknowledged_once(first), statuses(first)
    # the duplicate found the operation held (503: retry later), then finished: 200
    assert set(statuses(second[:-1])) == {503} and statuses(second)[-1] == 200
    assert second[0].started < first[0].ended  # it did arrive while the first ran
    assert deployment.model_calls() == after
    operation = done_operation(deployment, tenant)
    assert (operation.state, operation.attempts) == (OperationState.SUCCEEDED, 1)
    assert_formed_once(deployment, tenant, "concurrent")
    assert len(usage_records(deployment, tenant)) == 1


# 5. A worker that crashes mid-formation: the retry commits once.


def test_a_worker_killed_in_the_model_call_is_retried_after_its_lease_and_commits_once(
    deployment: Deployment, tenant: Tenant
) -> None:
    body = TOKYO | {"formationKey": "survives-a-crash"}
    deployment.standin.slow_next(15)  # the first attempt never gets its answer
    calls = deployment.model_calls()
    answer = in_background(lambda: form(deployment, tenant, body, timeout=90))
    model_call_started(deployment, calls)
    claimed = the_operation(deployment, tenant)
    assert (claimed.state, claimed.attempts) == (OperationState.RUNNING, 1)

    deployment.worker.kill()  # mid-formation: nothing committed, nothing settled
    deployment.tap.wait_for(lambda d: 502 in statuses(d), claimed.operation_id)
    deployment.worker.start().wait_ready()  # the emulator keeps retrying meanwhile
    received = answer(60)

    assert received.status_code == 200, received.text
    receipt = received.json()
    assert receipt["replay"] is False
    assert_all_new(receipt)
    operation = the_operation(deployment, tenant)
    assert (operation.state, operation.attempts) == (OperationState.SUCCEEDED, 2)
    deliveries = deployment.tap.deliveries(operation.operation_id)
    # down (502), then held by the dead worker's lease (503), then run again (200) once the
    # lease ran out; on a busy machine the worker may come back only after the lease did
    assert statuses(deliveries)[0] == 502 and statuses(deliveries)[-1] == 200
    assert set(statuses(deliveries)[:-1]) <= {502, 503}
    assert claimed.lease_expires_at is not None
    lease_end = claimed.lease_expires_at.timestamp() - (time.time() - time.monotonic())
    assert deliveries[-1].ended >= lease_end - CLOCK_SLACK_SECONDS  # it claimed after it
    assert all(d.status == 503 for d in deliveries if d.status != 502 and d.ended < lease_end)
    assert_formed_once(deployment, tenant, "survives-a-crash")
    # the second attempt's units; the first was killed before it could settle
    assert [u.formation_id for u in usage_records(deployment, tenant)] == [
        f"{operation.formation_id}.2"
    ]
    # the crashed attempt's reservation is released with the formation, not left to expire
    assert reservations(deployment, tenant) == []


def test_a_live_worker_overtaken_after_its_lease_writes_nothing_and_the_new_one_commits(
    deployment: Deployment, tenant: Tenant
) -> None:
    # The first attempt outlives its lease (production: a formation past 31 minutes whose
    # task Cloud Tasks redelivered at its 30-minute dispatch deadline); a duplicate
    # delivery takes the operation over while the first is still in its model call.
    deployment.standin.slow_next(LEASE_SECONDS + 2)  # the first attempt's model call
    deployment.standin.slow_next(4)  # the second's: it is still running when the first ends
    calls = deployment.model_calls()
    answer = in_background(lambda: form(deployment, tenant, TOKYO | {"formationKey": "overtaken"}))
    model_call_started(deployment, calls)
    operation_id = the_operation(deployment, tenant).operation_id

    with second_queue(deployment) as duplicate:
        duplicate.enqueue(
            FormationTask(enterprise_id=tenant.enterprise_id, operation_id=operation_id)
        )
        received = answer(60)
        deliveries = deployment.tap.wait_for(
            lambda found: len([d for d in found if d.status == 200]) == 2, operation_id
        )

    assert received.status_code == 200, received.text
    assert_all_new(received.json())
    operation = the_operation(deployment, tenant)
    assert (operation.state, operation.attempts) == (OperationState.SUCCEEDED, 2)
    first = [d for d in deliveries if d.queue == deployment.queue_path]
    second = [d for d in deliveries if d.queue != deployment.queue_path]
    # overtaken: acknowledged, for the worker that holds it now to finish it
    assert acknowledged_once(first), statuses(first)
    assert 503 in statuses(second) and statuses(second)[-1] == 200
    assert_formed_once(deployment, tenant, "overtaken")
    # both attempts reached the model: both count
    assert sorted(u.formation_id for u in usage_records(deployment, tenant)) == sorted(
        [operation.formation_id or "", f"{operation.formation_id}.2"]
    )
    assert reservations(deployment, tenant) == []


# 6. The per-call model bound.


def test_a_model_call_past_its_bound_is_deadline_exceeded_naming_it_and_writes_nothing(
    deployment: Deployment, tenant: Tenant
) -> None:
    deployment.standin.slow_next(SHORT_CALL_SECONDS + 9)
    started = time.monotonic()
    answer = form(
        deployment, tenant, TOKYO | {"formationKey": "too-slow"}, function=deployment.form_short
    )
    elapsed = time.monotonic() - started

    assert answer.status_code == 504, answer.text
    error = answer.json()["error"]
    assert error["status"] == "DEADLINE_EXCEEDED"
    assert f"exceeded its {SHORT_CALL_SECONDS} s bound" in error["message"]
    assert elapsed < SHORT_CALL_SECONDS + 4  # the bound ended it, not the slow answer
    operation = the_operation(deployment, tenant)
    assert operation.state is OperationState.FAILED
    assert operation.error is not None and operation.error.code == "DEADLINE_EXCEEDED"
    deliveries = deployment.tap.wait_for(acked, operation.operation_id)
    assert acknowledged_once(deliveries), statuses(deliveries)
    assert memory_counts(deployment, tenant) == NOTHING
    [usage] = usage_records(deployment, tenant)  # the call was made: its units count
    assert usage.units >= 1 and usage.formation_key == "too-slow"
    assert reservations(deployment, tenant) == []
