"""Claims on the wire: memory:commit takes every claim field on a chunk, validated, and
memory:query and memory:inspect return every claim field (FakeStore)."""

from __future__ import annotations

import typing
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from jennah.api import dto
from jennah.domain import claims, rules
from jennah.domain.models import (
    Authority,
    ClaimUpdate,
    CommitPlan,
    Durability,
    MemoryRecord,
    MemoryType,
    ScopeRef,
    Sensitivity,
    Status,
    Strength,
)
from jennah.errors import InvalidArgument
from jennah.services import commit as commit_service
from jennah.services.commands import ChunkInput, CommitCommand
from tests.unit.fakes import ENTERPRISE, Api

COMMIT = "/v1/scopes/bot/memory:commit"
INSPECT = "/v1/scopes/bot/memory:inspect"
JAN = "2024-01-01T00:00:00Z"
FULL = {
    "text": "Always show the draft before anything goes to the soccer team chat.",
    "metadata": {"source": "card"},
    "validAt": JAN,
    "type": "directive",
    "about": "Soccer team group chat",
    "summary": "Ask before sending anything to the soccer team group chat.",
    "whenToUse": "Any request to message the soccer group chat",
    "appliesTo": ["ent.soccer", "ent:ana"],
    "strength": "hard",
    "pin": True,
    "authority": "user_explicit",
    "confidence": 0.75,
    "durability": "seasonal",
    "validUntil": "2099-06-30T22:00:00Z",
    "status": "active",
    "sensitivity": "minors",
    "related": ["chk_0123"],
    "needsEnrichment": True,
    "extensions": {"color": '"blue"', "tags": '["a", 1]'},
}
# what inspect answers for FULL: every field as given, and the ones the store keeps
GIVEN_BACK = {k: v for k, v in FULL.items() if k not in {"validAt", "validUntil"}}


@pytest.fixture
def api(tmp_path: Path) -> Api:
    return Api.create(tmp_path)


def ok(response: Any) -> dict[str, Any]:
    assert response.status_code == 200, response.get_data(as_text=True)
    body: dict[str, Any] = response.get_json()
    return body


def chunks(api: Api, **params: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = ok(api.get(INSPECT, **params))["chunks"]
    return found


def test_every_claim_field_goes_in_by_commit_and_comes_out_of_inspect(api: Api) -> None:
    ok(api.post(COMMIT, {"chunks": [FULL]}))
    (chunk,) = chunks(api, asOfValid="2024-02-01T00:00:00Z")
    assert {k: chunk[k] for k in GIVEN_BACK} == GIVEN_BACK
    assert chunk["validAt"] == JAN
    assert chunk["validUntil"] == "2099-06-30T22:00:00Z"
    assert chunk["formedAt"] == chunk["createdAt"]
    assert (chunk["revision"], chunk["reinforcementCount"]) == (1, 0)
    assert "lastReinforcedAt" not in chunk  # absent until the claim is reinforced


def test_query_results_carry_every_claim_field(api: Api) -> None:
    ok(api.post(COMMIT, {"chunks": [FULL]}))
    for mode in ("HYBRID", "SEMANTIC", "LEXICAL"):
        body = {"semantic": {"queryText": "soccer chat draft", "mode": mode,
                             "asOfValid": "2024-02-01T00:00:00Z"}}  # fmt: skip
        (result,) = ok(api.post("/v1/scopes/bot/memory:query", body))["semantic"]["results"]
        assert {k: result[k] for k in GIVEN_BACK} == GIVEN_BACK, mode
        assert result["formedAt"] == result["createdAt"]
        assert result["score"] > 0


def test_the_record_view_lists_every_claim_field() -> None:
    claim_fields = {
        "type", "about", "summary", "whenToUse", "appliesTo", "strength", "pin", "authority",
        "confidence", "durability", "formedAt", "lastReinforcedAt", "reinforcementCount",
        "validUntil", "status", "supersedes", "supersededBy", "related", "sensitivity",
        "revision", "needsEnrichment", "extensions",
    }  # fmt: skip
    existing = {"id", "text", "validAt", "invalidAt", "createdAt", "metadata", "score"}
    wire = {info.alias or name for name, info in dto.Chunk.model_fields.items()}
    assert wire == claim_fields | existing


def test_absent_claim_fields_take_the_memory_record_defaults(api: Api) -> None:
    ok(api.post(COMMIT, {"chunks": [{"text": "Bob likes tea"}]}))
    (chunk,) = chunks(api)
    record = MemoryRecord(id="x", scope=ScopeRef(enterprise_id="e", scope_id="s"), text="t")
    assert chunk == chunk | {
        "type": record.type.value, "about": record.about, "summary": record.summary,
        "whenToUse": record.when_to_use, "appliesTo": record.applies_to,
        "strength": record.strength.value, "pin": record.pin,
        "authority": record.authority.value, "confidence": record.confidence,
        "durability": record.durability.value, "status": record.status.value,
        "sensitivity": record.sensitivity.value, "related": record.related,
        "revision": record.revision, "needsEnrichment": record.needs_enrichment,
        "extensions": record.extensions, "reinforcementCount": record.reinforcement_count,
    }  # fmt: skip
    assert (chunk["type"], chunk["authority"], chunk["status"]) == ("fact", "system", "active")
    assert "validUntil" not in chunk and "lastReinforcedAt" not in chunk
    (stored,) = next(plan for plan in api.store.plans if plan.chunks).chunks
    assert stored.model_dump(exclude={"id", "scope", "content_hash", "text", "embedding"}) == (
        record.model_dump(exclude={"id", "scope", "content_hash", "text", "embedding"})
    )


def test_the_id_still_derives_from_text_and_valid_at_alone(api: Api) -> None:
    first = ok(api.post(COMMIT, {"chunks": [FULL]}))["chunkIds"]
    jan = datetime(2024, 1, 1, tzinfo=UTC)
    assert first == [rules.chunk_id(FULL["text"], jan)]
    other = FULL | {"type": "fact", "summary": "another summary", "pin": False}
    assert ok(api.post(COMMIT, {"chunks": [other]}))["chunkIds"] == first


def test_a_replace_takes_the_new_claim_fields_and_keeps_the_stored_status(api: Api) -> None:
    ok(api.post(COMMIT, {"chunks": [{"text": "Ana is vegetarian", "summary": "old"}]}))
    again = {"text": "Ana is vegetarian", "summary": "new", "type": "preference",
             "status": "retracted"}  # fmt: skip
    ok(api.post(COMMIT, {"chunks": [again]}))
    (chunk,) = chunks(api, allHistory="true")
    assert (chunk["summary"], chunk["type"]) == ("new", "preference")
    assert chunk["status"] == "active"  # a commit never changes a claim's state


def test_claim_fields_ride_on_a_supersession_replacement(api: Api) -> None:
    (old,) = ok(api.post(COMMIT, {"chunks": [{"text": "Ana lives in Porto"}]}))["chunkIds"]
    replacement = {"text": "Ana lives in Lisbon", "type": "identity", "authority": "user_stated"}
    body = {"supersessions": [{"chunkId": old, "replacementChunk": replacement}]}
    (new,) = ok(api.post(COMMIT, body))["chunkIds"]
    (chunk,) = [c for c in chunks(api) if c["id"] == new]
    assert (chunk["type"], chunk["authority"], chunk["supersedes"]) == (
        "identity", "user_stated", old,
    )  # fmt: skip


# default reads leave out dormant and retracted claims


def test_default_reads_leave_out_dormant_and_retracted_claims(api: Api) -> None:
    body = {"chunks": [
        {"text": "tea active"}, {"text": "tea dormant", "status": "dormant"},
        {"text": "tea retracted", "status": "retracted"},
    ]}  # fmt: skip
    ok(api.post(COMMIT, body))
    for mode in ("HYBRID", "SEMANTIC", "LEXICAL"):
        query = {"semantic": {"queryText": "tea", "mode": mode}}
        results = ok(api.post("/v1/scopes/bot/memory:query", query))["semantic"]["results"]
        assert [r["text"] for r in results] == ["tea active"], mode
    assert [c["text"] for c in chunks(api)] == ["tea active"]
    history = {c["text"]: c["status"] for c in chunks(api, allHistory="true")}
    assert history == {"tea active": "active", "tea dormant": "dormant",
                       "tea retracted": "retracted"}  # fmt: skip


# validation: a clear 400 naming the field and the bound, and nothing written

LONG = "x" * 2000
BAD: list[tuple[dict[str, Any], str, str]] = [
    ({"type": "opinion"}, "chunks[0].type", "'identity', 'directive', 'preference', 'fact', "
     "'constraint' or 'relationship'"),
    ({"strength": "medium"}, "chunks[0].strength", "'hard' or 'soft'"),
    ({"authority": "boss"}, "chunks[0].authority",
     "'user_explicit', 'user_stated', 'inferred' or 'system'"),
    ({"durability": "forever"}, "chunks[0].durability", "'durable', 'seasonal' or 'passing'"),
    ({"sensitivity": "secret"}, "chunks[0].sensitivity",
     "'normal', 'health', 'finances' or 'minors'"),
    ({"status": "expired"}, "chunks[0].status", "'active', 'dormant' or 'retracted'"),
    ({"status": "superseded"}, "chunks[0].status", "'active', 'dormant' or 'retracted'"),
    ({"confidence": 1.5}, "chunks[0].confidence", "from 0 to 1"),
    ({"confidence": -0.01}, "chunks[0].confidence", "from 0 to 1"),
    ({"confidence": "NaN"}, "chunks[0].confidence", "from 0 to 1"),
    ({"confidence": "high"}, "chunks[0].confidence", "number"),
    ({"about": "a" * 257}, "chunks[0].about", "at most 256"),
    ({"summary": LONG}, "chunks[0].summary", "at most 1024"),
    ({"whenToUse": LONG}, "chunks[0].whenToUse", "at most 1024"),
    ({"appliesTo": [f"n{i}" for i in range(33)]}, "chunks[0].appliesTo", "at most 32"),
    ({"appliesTo": ["ok", "not an id"]}, "chunks[0].appliesTo[1]", "1-128 characters"),
    ({"appliesTo": ["n1", "n1"]}, "chunks[0].appliesTo[1]", "listed twice"),
    ({"appliesTo": "n1"}, "chunks[0].appliesTo", "list"),
    ({"related": [f"chk_{i}" for i in range(33)]}, "chunks[0].related", "at most 32"),
    ({"related": ["chk/1"]}, "chunks[0].related[0]", "1-128 characters"),
    ({"related": ["chk_1", "chk_1"]}, "chunks[0].related[1]", "listed twice"),
    ({"validUntil": "next week"}, "chunks[0].validUntil", "RFC 3339"),
    ({"validUntil": "2024-01-01T00:00:00"}, "chunks[0].validUntil", "time zone"),
    ({"validAt": JAN, "validUntil": JAN}, "chunks[0].validUntil", "must be after validAt"),
    ({"pin": "true"}, "chunks[0].pin", "boolean"),
    ({"needsEnrichment": 1}, "chunks[0].needsEnrichment", "boolean"),
    ({"extensions": {f"k{i}": "1" for i in range(17)}}, "chunks[0].extensions", "at most 16"),
    ({"extensions": {"bad key": "1"}}, "chunks[0].extensions.bad key", "letters, digits"),
    ({"extensions": {"mood": "not json"}}, "chunks[0].extensions.mood", "JSON text"),
    ({"extensions": {"mood": '"' + "x" * 1030 + '"'}}, "chunks[0].extensions.mood",
     "at most 1024"),
    ({"extensions": {"summary": '"x"'}}, "chunks[0].extensions.summary",
     "own front-matter key"),
    ({"extensions": {"n": 1}}, "chunks[0].extensions.n", "string"),
    ({"extensions": {"jennah_formed_at": '"2020-01-01T00:00:00Z"'}},
     "chunks[0].extensions.jennah_formed_at", "reserved"),
    ({"formedAt": JAN}, "chunks[0].formedAt", "unknown field"),
    ({"revision": 3}, "chunks[0].revision", "unknown field"),
    ({"reinforcementCount": 3}, "chunks[0].reinforcementCount", "unknown field"),
    ({"when_to_use": "x"}, "chunks[0].when_to_use", "unknown field"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("fields", "field", "bound"), BAD, ids=[b[1] + str(b[0])[:30] for b in BAD]
)
def test_a_bad_claim_field_is_a_400_naming_it_and_nothing_is_written(
    api: Api, fields: dict[str, Any], field: str, bound: str
) -> None:
    body = {"chunks": [{"text": "Ana likes tea"} | fields]}
    before = api.store.snapshot()
    response = api.post(COMMIT, body)
    assert response.status_code == 400, response.get_data(as_text=True)
    error = response.get_json()["error"]
    assert error["status"] == "INVALID_ARGUMENT"
    assert field in error["message"] and bound in error["message"], error["message"]
    violations = [d for d in error["details"] if d["@type"].endswith("BadRequest")]
    assert violations[0]["fieldViolations"][0]["field"] == field
    assert api.store.plans == []
    assert api.store.snapshot() == before


def test_a_bad_claim_field_of_a_replacement_is_named_by_its_path(api: Api) -> None:
    (old,) = ok(api.post(COMMIT, {"chunks": [{"text": "Ana lives in Porto"}]}))["chunkIds"]
    body = {"supersessions": [{"chunkId": old, "replacementChunk": {
        "text": "Ana lives in Lisbon", "confidence": 7}}]}  # fmt: skip
    error = api.post(COMMIT, body).get_json()["error"]
    assert error["message"].startswith("supersessions[0].replacementChunk.confidence is 7")


def test_a_second_chunk_is_named_by_its_index(api: Api) -> None:
    body = {"chunks": [{"text": "fine"}, {"text": "bad", "appliesTo": ["a", "b c"]}]}
    error = api.post(COMMIT, body).get_json()["error"]
    assert error["details"][0]["metadata"]["field"] == "chunks[1].appliesTo[1]"
    assert api.store.plans == []


def test_the_service_refuses_a_state_only_the_lifecycle_or_a_supersession_reaches() -> None:
    scope = ScopeRef(enterprise_id=ENTERPRISE, scope_id="bot")
    for status in (Status.EXPIRED, Status.SUPERSEDED):
        command = CommitCommand(scope=scope, chunks=[ChunkInput(text="x", status=status)])
        with pytest.raises(InvalidArgument, match=r"chunks\[0\]\.status"):
            commit_service.commit(command, None, None, lambda: datetime.now(UTC))  # type: ignore[arg-type]


def test_the_wire_enums_are_the_domain_enums() -> None:
    pairs = [
        (dto.MemoryTypeName, MemoryType), (dto.StrengthName, Strength),
        (dto.AuthorityName, Authority), (dto.DurabilityName, Durability),
        (dto.StatusName, Status), (dto.SensitivityName, Sensitivity),
    ]  # fmt: skip
    for literal, enum in pairs:
        assert list(typing.get_args(literal)) == [member.value for member in enum]
    writable = [s.value for s in claims.WRITABLE_STATUSES]
    assert list(typing.get_args(dto.WritableStatusName)) == writable


def test_valid_time_zones_and_refusals() -> None:
    assert str(claims.check_time_zone("Europe/Lisbon")) == "Europe/Lisbon"
    for name in ("Mars/Base", "", "../etc/passwd", "Europe/"):
        with pytest.raises(InvalidArgument, match="timeZone"):
            claims.check_time_zone(name)


def test_a_replace_is_the_next_revision_and_keeps_the_reinforcement(api: Api) -> None:
    (memory_id,) = ok(api.post(COMMIT, {"chunks": [{"text": "Ana likes tea"}]}))["chunkIds"]
    scope = ScopeRef(enterprise_id=ENTERPRISE, scope_id="bot")
    reinforced = datetime(2024, 5, 1, tzinfo=UTC)
    update = ClaimUpdate(
        memory_id=memory_id, expected_revision=1, reinforcement_count=2,
        last_reinforced_at=reinforced,
    )  # fmt: skip
    api.store.apply(CommitPlan(scope=scope, claim_updates=[update]))
    ok(api.post(COMMIT, {"chunks": [{"text": "Ana likes tea", "summary": "tea"}]}))
    (chunk,) = chunks(api)
    assert (chunk["revision"], chunk["reinforcementCount"]) == (3, 2)
    assert (chunk["lastReinforcedAt"], chunk["summary"]) == ("2024-05-01T00:00:00Z", "tea")
