"""POST /v1/agents/{agentInstanceId}/memory:form on the wire: the receipt in proto3 JSON,
replays, key reuse, bounds and the pipeline's errors mapped to Google error bodies.

Most tests run the real formation service on a real SqliteStore with the rules model
(the embedded default) or a scripted model; the error mapping of concurrent losses
uses the in-memory fake store.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from jennah.adapters.embedding.hashing import HashingEmbedder
from jennah.adapters.models.scripted import ScriptedModel, Slow
from jennah.adapters.sqlite.connection import open_connection
from jennah.adapters.sqlite.store import SqliteStore
from jennah.api.app import create_app
from jennah.bootstrap import Container
from jennah.domain import rules
from jennah.domain.billing import EnterpriseBilling, Plan
from jennah.domain.formation import SOURCE_STEP
from jennah.domain.models import Direction, ScopeRef
from jennah.errors import Aborted, FailedPrecondition
from jennah.ports.model import LanguageModel, ModelResult
from jennah.services.formation import KEY_CLAIMED, SUPERSEDED_FIRST
from jennah.settings import Settings
from tests.unit.fakes import ENTERPRISE, ROOT, ROOT_SECRET, Api, FakeIdentityStore, add_enterprise
from tests.unit.test_api_form_fakes import FormingFakeStore, forming_api

RFC3339_Z = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{3}|\.\d{6})?Z$")
FORM = "/v1/agents/support-bot/memory:form"
AGENT = ScopeRef(enterprise_id=ENTERPRISE, scope_id="support-bot")
TOKYO = {
    "turns": [
        {"role": "TURN_ROLE_USER", "content": "I live in Tokyo and I work at Alphaus."},
        {"role": "TURN_ROLE_ASSISTANT", "content": "Noted. Anything else about your setup?"},
        {"role": "TURN_ROLE_USER", "content": "I prefer dark mode in every tool."},
    ]
}
RECEIPT_FIELDS = {
    "commitTimestamp", "candidates", "chunkSupersessions", "edgeSupersessions",
    "summarizedStructures", "candidatesDropped", "candidateCap", "executionLogRows",
    "formationUnits", "inputTokens", "outputTokens", "replay",
}  # fmt: skip


def user(content: str) -> dict[str, str]:
    return {"role": "TURN_ROLE_USER", "content": content}


@contextlib.contextmanager
def sqlite_api(
    tmp_path: Path, model: LanguageModel | None = None, **settings: Any
) -> Iterator[Api]:
    """The app on a real SqliteStore, the hashing embedder and `model` (default: rules)."""
    identity = FakeIdentityStore()
    add_enterprise(identity, ENTERPRISE, ROOT, ROOT_SECRET)
    store = SqliteStore(tmp_path / "memory.db")
    container = Container(
        Settings(data_dir=tmp_path, embedder="hashing", **settings),
        store=store,
        identity=identity,
        embedder=HashingEmbedder(),
        model=model,
    )
    yield Api(container, create_app(container))
    container.close()  # the store, and the vocabulary store built on the same file


@pytest.fixture
def api(tmp_path: Path) -> Iterator[Api]:
    with sqlite_api(tmp_path) as app:
        yield app


def ok(response: Any) -> dict[str, Any]:
    assert response.status_code == 200, response.get_data(as_text=True)
    body: dict[str, Any] = response.get_json()
    return body


def refused(response: Any, code: int, status: str) -> dict[str, Any]:
    assert response.status_code == code, response.get_data(as_text=True)
    error: dict[str, Any] = response.get_json()["error"]
    assert (error["code"], error["status"]) == (code, status)
    return error


def reason(error: dict[str, Any]) -> str:
    info = next(d for d in error["details"] if d["@type"].endswith("ErrorInfo"))
    return str(info["reason"])


def rows(api: Api) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of the memory tables of the SQLite file (scope registry included)."""
    conn = open_connection(api.container.settings.data_dir / "memory.db")
    try:
        names = [r[0] for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' "
            "AND name NOT LIKE '%fts%' AND name NOT LIKE '%vec%' ORDER BY name")]  # fmt: skip
        return {n: sorted(map(tuple, conn.execute(f"SELECT * FROM {n}")), key=repr) for n in names}
    finally:
        conn.close()


# the receipt on the wire


def test_the_receipt_is_proto3_json(api: Api) -> None:
    body = ok(api.post(FORM, TOKYO))
    assert set(body) == RECEIPT_FIELDS
    assert RFC3339_Z.match(body["commitTimestamp"])
    for field in ("chunkSupersessions", "edgeSupersessions", "candidatesDropped",
                  "executionLogRows", "formationUnits", "inputTokens", "outputTokens"):  # fmt: skip
        assert isinstance(body[field], str) and body[field].isdigit(), field
    assert (body["chunkSupersessions"], body["edgeSupersessions"]) == ("0", "0")
    assert (body["candidatesDropped"], body["candidateCap"]) == ("0", 64)
    assert (body["executionLogRows"], body["formationUnits"], body["replay"]) == ("1", "1", False)
    assert int(body["inputTokens"]) > 0 and int(body["outputTokens"]) > 0
    assert body["summarizedStructures"] == []
    texts = {(c["kind"], c["text"], c["decision"]) for c in body["candidates"]}
    assert ("CANDIDATE_KIND_FACT", "The user lives in Tokyo.", "MEMORY_DECISION_NEW") in texts
    assert ("CANDIDATE_KIND_FACT", "The user works at Alphaus.", "MEMORY_DECISION_NEW") in texts
    for candidate in body["candidates"]:
        # absent optional fields are omitted; preservesStructure appears only when true
        assert set(candidate) == {"candidateId", "kind", "text", "decision"}
        assert re.match(r"^(fct|rel)_[0-9a-f]{32}$", candidate["candidateId"])


def test_a_revision_reports_the_superseded_memory(tmp_path: Path) -> None:
    """The spec's example revision, with a scripted model: one chunk and one edge retired."""
    model = ScriptedModel()
    with sqlite_api(tmp_path, model) as api:
        model.add(_extraction(("The user lives in Tokyo.", "I live in Tokyo"),
                              edge=("the user", "LIVES_IN", "Tokyo")))  # fmt: skip
        ok(api.post(FORM, {"turns": [user("I live in Tokyo.")]}))
        tokyo = rules.chunk_id("The user lives in Tokyo.", None)
        (edge,) = [e for e in _all_edges(api) if e.invalid_at is None]

        model.add(
            _extraction(("The user lives in Osaka.", "I moved to Osaka"),
                        edge=("the user", "LIVES_IN", "Osaka")),
            {"decisions": [
                {"candidate_index": 0, "decision": "revised", "matched_id": tokyo},
                {"candidate_index": 1, "decision": "revised", "matched_id": edge.edge_id},
            ]},
        )  # fmt: skip
        body = ok(api.post(FORM, {"turns": [user("I moved to Osaka.")]}))
        assert (body["chunkSupersessions"], body["edgeSupersessions"]) == ("1", "1")
        fact, relationship = body["candidates"]
        assert fact == {
            "candidateId": fact["candidateId"],
            "kind": "CANDIDATE_KIND_FACT",
            "text": "The user lives in Osaka.",
            "decision": "MEMORY_DECISION_REVISED",
            "matchedId": tokyo,
        }
        assert relationship["decision"] == "MEMORY_DECISION_REVISED"
        assert relationship["matchedId"] == edge.edge_id


def test_a_rejection_carries_its_reason_and_no_matched_id(tmp_path: Path) -> None:
    model = ScriptedModel()
    with sqlite_api(tmp_path, model) as api:
        model.add(_extraction(("The user lives in Tokyo.", "I live in Tokyo")))
        ok(api.post(FORM, {"turns": [user("I live in Tokyo.")],
                           "observedAt": "2026-01-01T00:00:00Z"}))  # fmt: skip
        tokyo = rules.chunk_id("The user lives in Tokyo.", datetime(2026, 1, 1, tzinfo=UTC))
        model.add(
            _extraction(("The user lived in Osaka.", "I used to live in Osaka")),
            {"decisions": [{"candidate_index": 0, "decision": "revised", "matched_id": tokyo}]},
        )
        body = ok(api.post(FORM, {"turns": [user("I used to live in Osaka.")],
                                  "observedAt": "2023-05-20T12:17:00Z"}))  # fmt: skip
        (candidate,) = body["candidates"]
        assert candidate["decision"] == "MEMORY_DECISION_REJECTED"
        assert "matchedId" not in candidate and tokyo in candidate["rejectionReason"]
        assert body["executionLogRows"] == "0"


def test_structures_preserved_and_summarized(api: Api) -> None:
    table = "| agent | shift |\n|---|---|\n| Admon | early |"
    turns = [
        user(f"Shift rotation:\n\n{table}"),
        {"role": "TURN_ROLE_ASSISTANT", "content": "Thanks."},
        user("I live in Tokyo."),
        {
            "role": "TURN_ROLE_ASSISTANT",
            "content": "Rooms:\n\n| room | floor |\n|---|---|\n| A | 2 |",
        },
    ]
    body = ok(api.post(FORM, {"turns": turns}))
    kept = [c for c in body["candidates"] if c.get("preservesStructure")]
    assert [c["text"] for c in kept] == [f"Shift rotation:\n\n{table}"]
    assert kept[0]["preservesStructure"] is True
    assert all("preservesStructure" not in c for c in body["candidates"] if c not in kept)
    assert body["summarizedStructures"] == [
        {"turnIndex": 3, "description": "1 table", "summarizedCount": 1}
    ]


def test_an_empty_formation_is_a_successful_receipt(api: Api) -> None:
    before = rows(api)
    body = ok(api.post(FORM, {"turns": [user("Hello there!")]}))
    assert body["candidates"] == [] and body["executionLogRows"] == "0"
    assert body["formationUnits"] == "1" and RFC3339_Z.match(body["commitTimestamp"])
    assert not [r for r in rows(api)["execution_log_steps"] if r not in before.get(
        "execution_log_steps", [])]  # fmt: skip


def test_a_turn_without_content_is_accepted_beside_others(api: Api) -> None:
    tool_only = {"role": "TURN_ROLE_ASSISTANT"}  # proto3 JSON leaves an empty content out
    turns = [TOKYO["turns"][0], tool_only, {"role": "TURN_ROLE_TOOL_RESULT", "content": ""}]
    body = ok(api.post(FORM, {"turns": turns}))
    assert body["candidates"] and body["executionLogRows"] == "1"
    (step,) = rows(api)["execution_log_steps"]
    assert "\n[turn 1] assistant:\n\n[turn 2] tool result:\n\n" in step[3]  # tool_input


def test_the_first_formation_creates_the_agent_workspace(api: Api) -> None:
    ok(api.post(FORM, TOKYO))
    (agent,) = ok(api.get("/v1/agents"))["agents"]
    assert (agent["scopeId"], agent["kind"], agent["createdBy"]) == (
        "support-bot", "AGENT", "user:root",
    )  # fmt: skip


def test_formed_memory_is_queried_back(api: Api) -> None:
    ok(api.post(FORM, TOKYO))
    question = {"semantic": {"queryText": "where does the user live", "topK": 10}}
    body = ok(api.post("/v1/agents/support-bot/memory:query", question))
    texts = [r["text"] for r in body["semantic"]["results"]]
    assert "The user lives in Tokyo." in texts
    chunk = next(r for r in body["semantic"]["results"] if r["text"] == "The user lives in Tokyo.")
    assert chunk["metadata"][SOURCE_STEP].startswith("frm_")


# replays and keys


def test_a_retry_under_the_same_key_replays_the_receipt(api: Api) -> None:
    first = ok(api.post(FORM, TOKYO | {"formationKey": "conversation-8817-turn-42"}))
    before = rows(api)
    again = ok(api.post(FORM, TOKYO | {"formationKey": "conversation-8817-turn-42"}))
    assert again["replay"] is True and first["replay"] is False
    assert {k: v for k, v in again.items() if k != "replay"} == {
        k: v for k, v in first.items() if k != "replay"
    }
    assert rows(api) == before


def test_reusing_a_key_for_other_turns_is_invalid(api: Api) -> None:
    ok(api.post(FORM, TOKYO | {"formationKey": "k-1"}))
    before = rows(api)
    error = refused(
        api.post(FORM, {"turns": [user("I live in Kyoto.")], "formationKey": "k-1"}),
        400, "INVALID_ARGUMENT",
    )  # fmt: skip
    assert reason(error) == "FORMATION_KEY_REUSED" and "formationKey" in error["message"]
    other_time = TOKYO | {"formationKey": "k-1", "observedAt": "2024-01-01T00:00:00Z"}
    refused(api.post(FORM, other_time), 400, "INVALID_ARGUMENT")
    assert rows(api) == before


def test_forming_again_without_a_key_references_the_first_step(api: Api) -> None:
    first = ok(
        api.post(FORM, {"turns": [user("I live in Tokyo.")], "observedAt": "2024-01-01T00:00:00Z"})
    )
    assert first["executionLogRows"] == "1"
    again = ok(
        api.post(FORM, {"turns": [user("I live in Tokyo.")], "observedAt": "2024-01-01T00:00:00Z"})
    )
    assert again["replay"] is False and again["executionLogRows"] == "0"


# bounds and strict parsing: refused before any model call, nothing written


@pytest.fixture
def silent(tmp_path: Path) -> Iterator[tuple[Api, ScriptedModel]]:
    """An app whose model has no answers: any model call would fail the test."""
    model = ScriptedModel()
    with sqlite_api(tmp_path, model) as api:
        yield api, model


@pytest.mark.parametrize(
    ("body", "field", "words"),
    [
        ({"turns": [user("x")] * 201}, "turns", "200 turns"),
        ({"turns": []}, "turns", "1 to 200"),
        ({"turns": [user("x")], "formationKey": "k" * 257}, "formationKey", "256"),
        ({"turns": [user("x")], "formationKey": ""}, "formationKey", "empty"),
        ({"turns": [user("   "), {"role": "TURN_ROLE_ASSISTANT"}]}, "turns", "every turn is blank"),
        ({"turns": [user("x" * 70_000)]}, "turns", "8,192 tokens"),  # Free, the default plan
        ({"turns": [user("x")], "observedAt": "2099-01-01T00:00:00Z"}, "observedAt", "future"),
        ({"turns": [user("x")], "observedAt": "yesterday"}, "observedAt", "RFC 3339"),
        ({"turns": [user("x")], "turnz": []}, "turnz", "unknown field"),
        ({"turns": [{"role": "TURN_ROLE_USER", "content": "x", "speaker": "me"}]},
         "turns[0].speaker", "unknown field"),
        ({"turns": [{"role": "USER", "content": "x"}]}, "turns[0].role", "TURN_ROLE_USER"),
        ({"turns": [{"content": "x"}]}, "turns[0].role", "required"),
    ],
)  # fmt: skip
def test_a_request_out_of_bounds_is_refused_naming_the_bound(
    silent: tuple[Api, ScriptedModel], body: dict[str, Any], field: str, words: str
) -> None:
    api, model = silent
    error = refused(api.post(FORM, body), 400, "INVALID_ARGUMENT")
    assert words in error["message"], error["message"]
    violation = next(d for d in error["details"] if d["@type"].endswith("BadRequest"))
    assert violation["fieldViolations"][0]["field"] == field
    assert model.calls == [] and rows(api)["memory_records"] == []
    assert rows(api)["scopes"] == []


@pytest.mark.parametrize(
    ("plan", "cap", "words"),
    [
        (None, 8_192, "8,192 tokens"),  # no settings stored: Free
        (Plan.FREE, 8_192, "8,192 tokens"),
        (Plan.PRO, 16_384, "16,384 tokens"),
        (Plan.TEAM, 16_384, "16,384 tokens"),
        (Plan.ENTERPRISE, 100_000, "100,000 tokens"),
    ],
)
def test_the_input_cap_names_the_plan_cap(
    tmp_path: Path, plan: Plan | None, cap: int, words: str
) -> None:
    model = ScriptedModel([{"candidates": []}])
    with sqlite_api(tmp_path, model) as api:
        if plan is not None:
            billing = EnterpriseBilling(enterprise_id=ENTERPRISE, plan=plan)
            api.container.ledger.put_billing(billing)
        under = {"turns": [user("x" * (cap * 4 - 200))]}  # just under the cap: formed
        assert api.post(FORM, under).status_code == 200
        assert len(model.calls) == 1
        over = {"turns": [user("x" * (cap * 4 + 4))]}
        error = refused(api.post(FORM, over), 400, "INVALID_ARGUMENT")
        assert reason(error) == "FORMATION_INPUT_CAP" and words in error["message"]
        info = next(d for d in error["details"] if d["@type"].endswith("ErrorInfo"))
        assert info["metadata"]["inputTokenCap"] == str(cap)
        assert len(model.calls) == 1


# the pipeline's errors, mapped once


def test_a_model_call_past_its_time_bound_is_deadline_exceeded(tmp_path: Path) -> None:
    model = ScriptedModel([Slow(5.0, {"candidates": []})])
    with sqlite_api(tmp_path, model, model_call_timeout_seconds=0.05) as api:
        error = refused(api.post(FORM, TOKYO), 504, "DEADLINE_EXCEEDED")
        assert "0.05" in error["message"]
        assert rows(api)["memory_records"] == [] and rows(api)["scopes"] == []
        assert model.calls[0].deadline_seconds == 0.05


def test_a_model_answer_past_its_output_bound_is_aborted(tmp_path: Path) -> None:
    model = ScriptedModel([ModelResult(text='{"candidates": []}', output_tokens=40_000)])
    with sqlite_api(tmp_path, model) as api:
        error = refused(api.post(FORM, TOKYO), 409, "ABORTED")
        assert "32768" in error["message"].replace(",", "")
        assert rows(api)["memory_records"] == []


@pytest.mark.parametrize(
    ("failure", "expected"),
    [
        (Aborted("claimed", reason=KEY_CLAIMED), KEY_CLAIMED),
        (FailedPrecondition("closed", reason="ALREADY_SUPERSEDED", metadata={"id": "fct_x"}),
         SUPERSEDED_FIRST),
        (Aborted("contention"), "FORMATION_WRITE_CONFLICT"),
    ],
)  # fmt: skip
def test_a_lost_conflict_is_aborted_with_its_reason(
    tmp_path: Path, failure: Exception, expected: str
) -> None:
    api = forming_api(tmp_path)
    store = api.store
    assert isinstance(store, FormingFakeStore)
    before = store.snapshot()
    store.fail_next = failure
    error = refused(api.post(FORM, TOKYO | {"formationKey": "k"}), 409, "ABORTED")
    assert reason(error) == expected
    assert store.snapshot() == before


# the scopes route does not exist


@pytest.mark.parametrize("token", ["root", None])
def test_there_is_no_scopes_form_route(api: Api, token: str | None) -> None:
    kwargs = {} if token else {"token": None}
    before = rows(api)
    response = api.post("/v1/scopes/support-bot/memory:form", TOKYO, **kwargs)
    error = refused(response, 404, "NOT_FOUND")
    assert reason(error) == "ROUTE_NOT_FOUND"
    assert error["message"] == "no such resource: /v1/scopes/support-bot/memory:form"
    assert rows(api) == before
    assert api.get("/v1/scopes/support-bot/memory:form").status_code == 404


def test_an_agent_route_on_a_subject_scope_forms_nothing(api: Api) -> None:
    ok(api.post("/v1/scopes", {"scopeId": "team", "kind": "SUBJECT"}))
    error = refused(api.post("/v1/agents/team/memory:form", TOKYO), 404, "NOT_FOUND")
    assert error["message"] == "agent workspace 'team' was not found"


# helpers


def _extraction(fact: tuple[str, str], edge: tuple[str, str, str] | None = None) -> dict[str, Any]:
    text, quote = fact
    candidates: list[dict[str, Any]] = [{
        "kind": "CANDIDATE_KIND_FACT", "text": text, "memory_type": "fact", "turns": [0],
        "quote": quote, "attributes": {},
    }]  # fmt: skip
    if edge is not None:
        subject, relation, obj = edge
        candidates.append({
            "kind": "CANDIDATE_KIND_RELATIONSHIP", "text": f"{subject} {relation} {obj}",
            "turns": [0], "quote": quote, "attributes": {},
            "subject": {"name": subject}, "relation": relation, "object": {"name": obj},
        })  # fmt: skip
    return {"candidates": candidates}


def _all_edges(api: Api) -> list[Any]:
    store = api.container.store
    nodes = store.find_nodes(AGENT, [], 100)
    return store.edges_touching(AGENT, [n.node_id for n in nodes], [], Direction.ANY, None)
